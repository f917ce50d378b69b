package server_test

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// pair is one connection to redis-server and one to recached, which the
// HyperLogLog tests drive with the same commands.
type pair struct {
	t        *testing.T
	rc, oc   *servertest.Client
	requests int
}

func newPair(t *testing.T) *pair {
	t.Helper()
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	redisAddr := servertest.StartRedis(t)
	ourAddr, _ := servertest.StartRecached(t, server.DefaultConfig())
	return &pair{t: t, rc: servertest.Dial(t, redisAddr), oc: servertest.Dial(t, ourAddr)}
}

// pipeline sends every command to both servers and returns their replies.
func (p *pair) pipeline(cmds [][]string) (want, got [][]byte) {
	p.t.Helper()
	var buf bytes.Buffer
	for _, c := range cmds {
		buf.Write(servertest.Encode(c...))
	}
	for _, side := range []struct {
		c   *servertest.Client
		out *[][]byte
	}{{p.rc, &want}, {p.oc, &got}} {
		if err := side.c.Send(buf.Bytes()); err != nil {
			p.t.Fatal(err)
		}
		for range cmds {
			rep, err := side.c.Read()
			if err != nil {
				p.t.Fatal(err)
			}
			*side.out = append(*side.out, rep)
		}
	}
	p.requests += len(cmds)
	return want, got
}

// same runs cmds on both servers and fails on the first reply that
// differs.
func (p *pair) same(cmds ...[]string) {
	p.t.Helper()
	want, got := p.pipeline(cmds)
	for i := range cmds {
		if !bytes.Equal(want[i], got[i]) {
			p.t.Fatalf("%.200q:\n redis:    %.300q\n recached: %.300q", cmds[i], want[i], got[i])
		}
	}
}

// pfadds adds elems to key, batch elements per PFADD.
func pfadds(key string, elems []string, batch int) [][]string {
	var cmds [][]string
	for i := 0; i < len(elems); i += batch {
		cmd := []string{"PFADD", key}
		cmds = append(cmds, append(cmd, elems[i:min(i+batch, len(elems))]...))
	}
	return cmds
}

func randomElems(r *rand.Rand, n int) []string {
	out := make([]string, n)
	for i := range out {
		switch r.IntN(3) {
		case 0:
			out[i] = strconv.Itoa(r.IntN(n*2 + 1))
		case 1:
			out[i] = "e:" + strconv.FormatUint(r.Uint64(), 36)
		default:
			b := make([]byte, r.IntN(20))
			for j := range b {
				b[j] = byte(r.Uint32())
			}
			out[i] = string(b)
		}
	}
	return out
}

// TestHLLMatchesRedis adds random sets of up to 100 000 elements to both
// servers and compares every reply: PFADD, the exact bytes GET returns
// (sparse, promoted, dense; before and after PFCOUNT caches the estimate),
// PFCOUNT of one and of several keys, and PFMERGE.
func TestHLLMatchesRedis(t *testing.T) {
	p := newPair(t)
	r := rand.New(rand.NewPCG(15, 3))
	tests := []struct {
		n, batch  int
		sparseMax string
	}{
		{0, 1, "3000"}, {1, 1, "3000"}, {3, 1, "3000"}, {40, 1, "3000"},
		{200, 7, "3000"}, {900, 1, "3000"}, {1500, 50, "3000"},
		{3000, 100, "3000"}, {20000, 500, "3000"}, {100000, 1000, "3000"},
		{600, 3, "200"}, {2000, 20, "12000"}, {5000, 100, "0"},
	}
	for _, tc := range tests {
		p.same([]string{"CONFIG", "SET", "hll-sparse-max-bytes", tc.sparseMax})
		elems := randomElems(r, tc.n)
		key := "hll:" + strconv.Itoa(tc.n)
		p.same([]string{"DEL", key})
		if tc.n == 0 {
			p.same([]string{"PFADD", key})
		}
		cmds := pfadds(key, elems, tc.batch)
		// Interleave reads so the cache is filled and invalidated.
		var mixed [][]string
		for i, c := range cmds {
			mixed = append(mixed, c)
			if i%5 == 0 {
				mixed = append(mixed, []string{"PFCOUNT", key}, []string{"GET", key})
			}
		}
		p.same(mixed...)
		p.same([]string{"GET", key}, []string{"PFCOUNT", key}, []string{"GET", key}, []string{"PFDEBUG", "ENCODING", key})
	}
	p.same([]string{"CONFIG", "SET", "hll-sparse-max-bytes", "3000"})

	// Several keys: the union's estimate, and PFMERGE into a new, a sparse
	// and a dense destination.
	keys := []string{"hll:0", "hll:40", "hll:900", "hll:3000", "hll:100000", "missing"}
	p.same([]string{"PFCOUNT", keys[1], keys[2]}, []string{"PFCOUNT", keys[0], keys[1], keys[2], keys[3], keys[4], keys[5]})
	p.same([]string{"PFMERGE", "m1", keys[1], keys[2]}, []string{"GET", "m1"}, []string{"PFCOUNT", "m1"})
	p.same([]string{"PFMERGE", "hll:3", keys[1]}, []string{"GET", "hll:3"}, []string{"PFCOUNT", "hll:3"})
	p.same([]string{"PFMERGE", "m2", keys[2], keys[4]}, []string{"GET", "m2"}, []string{"PFCOUNT", "m2"})
	p.same([]string{"PFMERGE", "hll:20000", keys[3], "missing"}, []string{"GET", "hll:20000"}, []string{"PFCOUNT", "hll:20000"})
	p.same([]string{"PFMERGE", "m3"}, []string{"GET", "m3"})
	t.Logf("%d requests compared", p.requests)
}

// TestHLLErrorsMatchRedis compares the replies to wrong types, strings
// that are not HyperLogLogs, corrupt HyperLogLogs and PFDEBUG.
func TestHLLErrorsMatchRedis(t *testing.T) {
	p := newPair(t)
	p.same([]string{"SET", "str", "hello"}, []string{"RPUSH", "list", "a"},
		[]string{"PFADD", "str", "a"}, []string{"PFADD", "list", "a"},
		[]string{"PFCOUNT", "str"}, []string{"PFCOUNT", "list"}, []string{"PFCOUNT", "nokey", "str"},
		[]string{"PFMERGE", "str", "nokey"}, []string{"PFMERGE", "dst", "list"}, []string{"EXISTS", "dst"},
		[]string{"PFDEBUG", "ENCODING", "nokey"}, []string{"PFDEBUG", "ENCODING", "str"},
		[]string{"PFDEBUG", "nosuch", "nokey"})
	p.same([]string{"PFADD", "h", "a", "b", "c"},
		[]string{"PFDEBUG", "DECODE", "h"}, []string{"PFDEBUG", "ENCODING", "h"},
		[]string{"PFDEBUG", "nosuch", "h"}, []string{"PFDEBUG", "GETREG", "h"},
		[]string{"PFDEBUG", "ENCODING", "h"}, []string{"PFDEBUG", "DECODE", "h"},
		[]string{"PFDEBUG", "TODENSE", "h"}, []string{"GET", "h"}, []string{"PFCOUNT", "h"})
	// Corruptions: a tail after a sparse value, a bad magic, a bad
	// encoding, a dense header on a sparse length, a VAL past the end.
	for _, c := range [][]string{
		{"APPEND", "c", "hello"},
		{"SETRANGE", "c", "0", "0123"},
		{"SETRANGE", "c", "4", "x"},
		{"SETRANGE", "c", "4", "\x00"},
		{"APPEND", "c", "\x80"},
		{"APPEND", "c", "\x7f"},
		{"SETRANGE", "c", "16", "\x01"},
	} {
		p.same([]string{"DEL", "c"}, []string{"PFADD", "c", "a", "b", "c"}, c,
			[]string{"PFCOUNT", "c"}, []string{"PFADD", "c", "x", "y", "z", "w"}, []string{"GET", "c"},
			[]string{"PFCOUNT", "c", "nokey"}, []string{"PFMERGE", "c2", "c"}, []string{"GET", "c2"},
			[]string{"PFDEBUG", "TODENSE", "c"})
	}
}

// TestHLLCorruptFuzzMatchesRedis corrupts random bytes of sparse and dense
// HyperLogLogs, as Redis's own fuzzing test does, and compares what both
// servers make of them.
func TestHLLCorruptFuzzMatchesRedis(t *testing.T) {
	p := newPair(t)
	r := rand.New(rand.NewPCG(7, 7))
	for round := 0; round < 300; round++ {
		elems := randomElems(r, r.IntN(3000))
		cmds := append([][]string{{"DEL", "f"}, {"PFADD", "f"}}, pfadds("f", elems, 200)...)
		want, _ := p.pipeline(append(cmds, []string{"STRLEN", "f"}))
		n, _ := strconv.Atoi(string(bytes.Trim(want[len(want)-1], ":\r\n")))
		for i := 0; i < 5; i++ {
			cmds = append(cmds, []string{"SETRANGE", "f", strconv.Itoa(r.IntN(n)), string([]byte{byte(r.Uint32())})})
			if r.IntN(2) == 0 {
				break
			}
		}
		p.same(append(cmds, []string{"PFCOUNT", "f"}, []string{"GET", "f"}, []string{"PFCOUNT", "f", "g"},
			[]string{"PFADD", "f", "x1", "x2", "x3"}, []string{"GET", "f"})...)
	}
}
