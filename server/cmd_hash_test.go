package server

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func TestHashEffects(t *testing.T) {
	runSteps(t, newEffectRecorder(t), []effectStep{
		{[]string{"HSET", "h", "a", "1", "b", "2"}, ":2\r\n", [][]string{{"HSET", "h", "a", "1", "b", "2"}}},
		{[]string{"HSET", "h", "a", "1"}, ":0\r\n", [][]string{{"HSET", "h", "a", "1"}}},
		{[]string{"hmset", "h", "c", "3"}, "+OK\r\n", [][]string{{"HSET", "h", "c", "3"}}},
		{[]string{"HSETNX", "h", "a", "x"}, ":0\r\n", nil},
		{[]string{"HSETNX", "h", "d", "4"}, ":1\r\n", [][]string{{"HSET", "h", "d", "4"}}},
		{[]string{"HDEL", "h", "a", "zz", "b"}, ":2\r\n", [][]string{{"HDEL", "h", "a", "b"}}},
		{[]string{"HDEL", "h", "zz"}, ":0\r\n", nil},
		{[]string{"HDEL", "nokey", "zz"}, ":0\r\n", nil},
		{[]string{"HINCRBY", "h", "n", "5"}, ":5\r\n", [][]string{{"HSET", "h", "n", "5"}}},
		{[]string{"HINCRBY", "h", "n", "-7"}, ":-2\r\n", [][]string{{"HSET", "h", "n", "-2"}}},
		{[]string{"HINCRBY", "h", "c", "x"}, "-ERR value is not an integer or out of range\r\n", nil},
		{[]string{"HINCRBYFLOAT", "h", "f", "1.5"}, "$3\r\n1.5\r\n", [][]string{{"HSET", "h", "f", "1.5"}}},
		{[]string{"HINCRBYFLOAT", "h", "f", "0.1"}, "$3\r\n1.6\r\n", [][]string{{"HSET", "h", "f", "1.6"}}},
		{[]string{"HINCRBYFLOAT", "h", "f", "inf"}, "-ERR value is NaN or Infinity\r\n", nil},
		{[]string{"HINCRBYFLOAT", "new", "f", "1"}, "$1\r\n1\r\n", [][]string{{"HSET", "new", "f", "1"}}},
		{[]string{"HGET", "h", "c"}, "$1\r\n3\r\n", nil},
		{[]string{"HGETALL", "nokey"}, "*0\r\n", nil},
		{[]string{"HRANDFIELD", "h", "-3"}, "", nil},
		{[]string{"HSCAN", "h", "0"}, "", nil},
		{[]string{"HDEL", "new", "f"}, ":1\r\n", [][]string{{"HDEL", "new", "f"}}},
		{[]string{"EXISTS", "new"}, ":0\r\n", nil},
	})
}

func TestHashEffectsReplay(t *testing.T) {
	keys := []string{"h1", "h2"}
	replayCheck(t, rand.New(rand.NewPCG(11, 12)), 3000, keys, dumpKey, func(r *rand.Rand) []string {
		k := keys[r.IntN(len(keys))]
		f := func() string { return "f" + strconv.Itoa(r.IntN(25)) }
		v := func() string { return strings.Repeat("v", r.IntN(70)) }
		switch r.IntN(9) {
		case 0:
			args := []string{"HSET", k}
			for n := 1 + r.IntN(3); n > 0; n-- {
				args = append(args, f(), v())
			}
			return args
		case 1:
			return []string{"HMSET", k, f(), v()}
		case 2:
			return []string{"HSETNX", k, f(), v()}
		case 3, 4:
			args := []string{"HDEL", k}
			for n := 1 + r.IntN(4); n > 0; n-- {
				args = append(args, f())
			}
			return args
		case 5:
			return []string{"HINCRBY", k, "n" + strconv.Itoa(r.IntN(3)), strconv.Itoa(r.IntN(100) - 50)}
		case 6:
			return []string{"HINCRBYFLOAT", k, "x" + strconv.Itoa(r.IntN(3)), strconv.FormatFloat(r.Float64()*10-5, 'f', 3, 64)}
		case 7:
			return []string{"EXPIRE", k, "100"}
		default:
			return []string{"HGETALL", k}
		}
	})
}

func TestHRandFieldShapes(t *testing.T) {
	r := newEffectRecorder(t)
	r.run("HSET", "h", "a", "1", "b", "2", "c", "3")
	fields := map[string]string{"a": "1", "b": "2", "c": "3"}
	for _, count := range []int{1, 2, 3, 10, -1, -7} {
		for _, proto := range []int{2, 3} {
			r.s.setProto(proto)
			reply, _ := r.run("HRANDFIELD", "h", strconv.Itoa(count), "WITHVALUES")
			n := count
			if n < 0 {
				n = -n
			}
			if n > 3 && count > 0 {
				n = 3
			}
			var want string
			if proto == 2 {
				want = "*" + strconv.Itoa(2*n) + "\r\n"
			} else {
				want = "*" + strconv.Itoa(n) + "\r\n"
			}
			if !strings.HasPrefix(reply, want) {
				t.Fatalf("RESP%d count %d: reply %q, want header %q", proto, count, reply, want)
			}
			// Every pick is a real field with its value, and positive
			// counts never repeat a field.
			parts := strings.Split(reply, "\r\n")
			var picked []string
			for i := 1; i < len(parts)-1; i++ {
				if proto == 3 && parts[i] == "*2" {
					continue
				}
				if strings.HasPrefix(parts[i], "$") {
					continue
				}
				picked = append(picked, parts[i])
			}
			if len(picked) != 2*n {
				t.Fatalf("RESP%d count %d: %d strings in %q", proto, count, len(picked), reply)
			}
			seen := map[string]bool{}
			for i := 0; i < len(picked); i += 2 {
				if fields[picked[i]] != picked[i+1] {
					t.Fatalf("RESP%d count %d: pair %s=%s is not in the hash", proto, count, picked[i], picked[i+1])
				}
				if count > 0 && seen[picked[i]] {
					t.Fatalf("RESP%d count %d: %s repeated", proto, count, picked[i])
				}
				seen[picked[i]] = true
			}
		}
	}
}

// TestHScanLargeHash walks a hash past the listpack limit with a small
// count: the cursor must end at 0 with every field returned.
func TestHScanLargeHash(t *testing.T) {
	r := newEffectRecorder(t)
	const n = 1000
	for i := 0; i < n; i++ {
		r.run("HSET", "big", "f"+strconv.Itoa(i), "v")
	}
	seen := map[string]bool{}
	cursor := "0"
	for calls := 0; ; calls++ {
		if calls > n {
			t.Fatal("HSCAN does not end")
		}
		reply, _ := r.run("HSCAN", "big", cursor, "COUNT", "7")
		parts := strings.Split(reply, "\r\n")
		cursor = parts[2]
		for i := 5; i < len(parts); i += 4 {
			seen[parts[i]] = true
		}
		if cursor == "0" {
			break
		}
	}
	if len(seen) != n {
		t.Fatalf("HSCAN returned %d of %d fields", len(seen), n)
	}
}

func TestHRandFieldRefusesHugeNegativeCount(t *testing.T) {
	r := newEffectRecorder(t)
	r.run("HSET", "h", "a", "1")
	reply, _ := r.run("HRANDFIELD", "h", "-9223372036854775807")
	if reply != "-"+errValueRange+"\r\n" {
		t.Fatalf("reply %q", reply)
	}
}

// BenchmarkHashCommands measures the common hash commands through Exec.
func BenchmarkHashCommands(b *testing.B) {
	s := plainSession(b)
	run(s, "HSET", "h", "name", "value", "other", "x")
	for _, cmd := range [][]string{
		{"HSET", "h", "name", "value"},
		{"HGET", "h", "name"},
		{"HINCRBY", "h", "n", "1"},
		{"HGETALL", "h"},
	} {
		args := toArgs(cmd...)
		b.Run(cmd[0], func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				s.W.B = s.W.B[:0]
				s.Exec(args)
			}
		})
	}
}

// TestHashLimitsFromConfig checks that hash-max-listpack-entries and
// hash-max-listpack-value take effect from the configuration the server
// starts with (the value with a unit, as a config file may give it) and
// from CONFIG SET, under either name.
func TestHashLimitsFromConfig(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Params = map[string]string{"hash-max-listpack-entries": "3", "hash-max-listpack-value": "1kb"}
	s, err := New(cfg).NewSession(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("v", 1024)
	steps := []struct {
		args []string
		want string // OBJECT ENCODING of the key after the step
	}{
		{[]string{"HSET", "a", "f1", long, "f2", "x", "f3", "x"}, "listpack"},
		{[]string{"HSET", "a", "f4", "x"}, "hashtable"},
		{[]string{"HSET", "b", "f", long + "v"}, "hashtable"},
		{[]string{"CONFIG", "SET", "hash-max-ziplist-entries", "10"}, ""},
		{[]string{"HSET", "c", "1", "1", "2", "2", "3", "3", "4", "4"}, "listpack"},
		{[]string{"CONFIG", "SET", "hash-max-ziplist-value", "2"}, ""},
		{[]string{"HINCRBY", "c", "1", "98"}, "listpack"}, // 99: two bytes
		{[]string{"HINCRBY", "c", "1", "900"}, "hashtable"},
	}
	for _, st := range steps {
		run(s, st.args...)
		if st.want == "" {
			continue
		}
		if got := run(s, "OBJECT", "ENCODING", st.args[1]); got != "$"+strconv.Itoa(len(st.want))+"\r\n"+st.want+"\r\n" {
			t.Fatalf("after %q: OBJECT ENCODING %s = %q, want %s", st.args, st.args[1], got, st.want)
		}
	}
}

// BenchmarkHSetTable is redis-benchmark's HSET: random fields of one hash
// in the hashtable encoding.
func BenchmarkHSetTable(b *testing.B) {
	s := plainSession(b)
	const fields = 100000
	args := make([][][]byte, 1024)
	for i := range args {
		args[i] = toArgs("HSET", "myhash", "element:"+strconv.Itoa(i*97%fields), "xxx")
	}
	for i := 0; i < fields; i++ {
		run(s, "HSET", "myhash", "element:"+strconv.Itoa(i), "xxx")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.W.B = s.W.B[:0]
		s.Exec(args[i&1023])
	}
}
