package server

import (
	"strconv"
	"testing"
)

func benchExec(b *testing.B, setup []string, args ...string) {
	s := plainSession(b)
	if setup != nil {
		s.Exec(toArgs(setup...))
	}
	in := toArgs(args...)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.W.B = s.W.B[:0]
		s.Exec(in)
	}
}

// The GET/SET hot path must not allocate.
func BenchmarkExecGet(b *testing.B) {
	benchExec(b, []string{"SET", "key:000000000001", "value:0000000001"}, "GET", "key:000000000001")
}

func BenchmarkExecSetExisting(b *testing.B) {
	benchExec(b, []string{"SET", "key:000000000001", "value:0000000001"}, "SET", "key:000000000001", "value:0000000002")
}

func BenchmarkExecIncr(b *testing.B) { benchExec(b, nil, "INCR", "counter") }

func BenchmarkExecDedupSet(b *testing.B) {
	s := plainSession(b)
	k, v := []byte("key:000000000001"), []byte("value:0000000001")
	cid := []byte("5f0c8a3e-0d5c-4a53-8d1e-9b1c2f6e7a10")
	args := [][]byte{[]byte("DEDUP"), cid, nil, []byte("SET"), k, v}
	var num [20]byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.W.B = s.W.B[:0]
		args[2] = strconv.AppendInt(num[:0], int64(i), 10)
		s.Exec(args)
	}
}

func TestHotPathAllocs(t *testing.T) {
	srv := New(DefaultConfig())
	s, err := srv.NewSession(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	set := [][]byte{[]byte("SET"), []byte("k"), []byte("value")}
	get := [][]byte{[]byte("GET"), []byte("k")}
	incr := [][]byte{[]byte("INCR"), []byte("n")}
	s.Exec(set)
	for _, args := range [][][]byte{set, get, incr} {
		n := testing.AllocsPerRun(1000, func() {
			s.W.B = s.W.B[:0]
			s.Exec(args)
		})
		if n != 0 {
			t.Errorf("%s allocates %.1f times per command", args[0], n)
		}
	}
}

// TestRepeatedWritesDoNotAllocate runs the commands redis-benchmark's
// default tests repeat on one key from many connections, each on a second
// session after a first one made the key, as the connections of a run
// take turns: a write that finds the work done (SADD of a member already
// there, ZADD of the same score, …) must not allocate on a session that
// has emitted no effect of its own.
func TestRepeatedWritesDoNotAllocate(t *testing.T) {
	srv := New(DefaultConfig())
	for _, args := range [][]string{
		{"SET", "key:__rand_int__", "xxx"},
		{"GET", "key:__rand_int__"},
		{"INCR", "counter:__rand_int__"},
		{"SADD", "myset", "element:__rand_int__"},
		{"HSET", "myhash", "element:__rand_int__", "xxx"},
		{"ZADD", "myzset", "0", "element:__rand_int__"},
		{"SREM", "myset", "absent"},
		{"HDEL", "myhash", "absent"},
		{"ZREM", "myzset", "absent"},
	} {
		first, err := srv.NewSession(nil, false)
		if err != nil {
			t.Fatal(err)
		}
		second, err := srv.NewSession(nil, false)
		if err != nil {
			t.Fatal(err)
		}
		in := toArgs(args...)
		first.Exec(in)
		n := testing.AllocsPerRun(1000, func() {
			second.W.B = second.W.B[:0]
			second.Exec(in)
		})
		if n != 0 {
			t.Errorf("%q on a second session allocates %.1f times per command", args, n)
		}
	}
}

// The rows redis-benchmark's -t lpush,hset,sadd run: one key each, as
// redis-benchmark without -r names them (ZADD's is in cmd_zset_test.go).
func BenchmarkExecLPush(b *testing.B) { benchExec(b, nil, "LPUSH", "mylist", "xxx") }

func BenchmarkExecHSet(b *testing.B) {
	benchExec(b, nil, "HSET", "myhash", "element:__rand_int__", "xxx")
}

func BenchmarkExecSAdd(b *testing.B) { benchExec(b, nil, "SADD", "myset", "element:__rand_int__") }

func BenchmarkExecIncrByFloat(b *testing.B) { benchExec(b, nil, "INCRBYFLOAT", "f", "1.5") }

func BenchmarkExecHIncrByFloat(b *testing.B) { benchExec(b, nil, "HINCRBYFLOAT", "h", "f", "0.1") }
