package server

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/recached/recached/resp"
)

// splitPushes splits concatenated push frames into their arguments.
func splitPushes(t *testing.T, b []byte) [][]string {
	t.Helper()
	b = append([]byte(nil), b...)
	var p resp.Parser
	var out [][]string
	for len(b) > 0 {
		if b[0] != '>' {
			t.Fatalf("not a push frame: %q", b)
		}
		b[0] = '*'
		n, err := p.Parse(b)
		if err != nil || n == 0 {
			t.Fatalf("parse push %q: n=%d err=%v", b, n, err)
		}
		args := make([]string, len(p.Args))
		for i, a := range p.Args {
			args[i] = string(a)
		}
		out = append(out, args)
		b = b[n:]
	}
	return out
}

// checkRecreate re-creates key of src on a new server from its hydration
// pushes and compares the two streams.
func checkRecreate(t *testing.T, src *streamRecorder, key, context string) {
	t.Helper()
	e := src.s.db.Lookup([]byte(key))
	if e == nil {
		return
	}
	k := []byte(key)
	pushes := splitPushes(t, appendContent(resp.AppendPush(nil, bDEL, k), k, e))
	dst := newStreamRecorder(t)
	for _, p := range pushes {
		if rep, _ := dst.run(p...); strings.HasPrefix(rep, "-") {
			t.Fatalf("%s: hydration push %q: %s (pushes %q)", context, p, rep, pushes)
		}
	}
	if a, b := describeStream(e), describeStream(dst.s.db.Lookup(k)); a != b {
		t.Fatalf("%s: key %s re-created from %q:\nserver\n%s\nreplica\n%s", context, key, pushes, a, b)
	}
}

// TestStreamRecreate checks that the pushes hydrating a stream (QSUB, and
// the re-creation of COPY, MOVE, RENAME and SWAPDB targets) rebuild it
// exactly on a server that replays them: entries, last id, entries added,
// largest deleted id, groups with their read counters, consumers and
// pending entries with their delivery times and counts, pending entries
// whose stream entry was deleted or trimmed included.
func TestStreamRecreate(t *testing.T) {
	cases := []struct {
		name string
		cmds [][]string
	}{
		{"empty from MKSTREAM", [][]string{{"XGROUP", "CREATE", "s1", "g", "$", "MKSTREAM"}}},
		{"emptied by XDEL", [][]string{{"XADD", "s1", "5-1", "f", "v"}, {"XDEL", "s1", "5-1"}}},
		{"emptied by XTRIM", [][]string{{"XADD", "s1", "5-1", "f", "v"}, {"XTRIM", "s1", "MAXLEN", "0"}}},
		{"pending entry trimmed", [][]string{
			{"XADD", "s1", "1-1", "f", "v"}, {"XADD", "s1", "2-1", "f", "v"},
			{"XGROUP", "CREATE", "s1", "g", "0"},
			{"XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s1", ">"},
			{"XTRIM", "s1", "MAXLEN", "1"},
		}},
		{"pending entries deleted and trimmed, all gone", [][]string{
			{"XADD", "s1", "1-1", "f", "v"}, {"XADD", "s1", "2-1", "f", "v"}, {"XADD", "s1", "3-1", "a", "b", "c", "d"},
			{"XGROUP", "CREATE", "s1", "g", "0", "ENTRIESREAD", "0"},
			{"XGROUP", "CREATE", "s1", "h", "0"},
			{"XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s1", ">"},
			{"XREADGROUP", "GROUP", "h", "bob", "COUNT", "2", "STREAMS", "s1", ">"},
			{"XCLAIM", "s1", "g", "carol", "0", "2-1", "RETRYCOUNT", "7"},
			{"XGROUP", "CREATECONSUMER", "s1", "h", "dave"},
			{"XDEL", "s1", "2-1"},
			{"XTRIM", "s1", "MAXLEN", "0"},
		}},
		{"pending entry deleted among live ones", [][]string{
			{"XADD", "s1", "1-1", "f", "v"}, {"XADD", "s1", "2-1", "f", "v"}, {"XADD", "s1", "3-1", "f", "v"},
			{"XGROUP", "CREATE", "s1", "g", "0"},
			{"XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s1", ">"},
			{"XDEL", "s1", "1-1", "2-1"},
			{"XSETID", "s1", "9-9", "ENTRIESADDED", "40", "MAXDELETEDID", "1-1"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := newStreamRecorder(t)
			for _, c := range tc.cmds {
				if rep, _ := src.run(c...); strings.HasPrefix(rep, "-") {
					t.Fatalf("%q: %s", c, rep)
				}
			}
			checkRecreate(t, src, "s1", tc.name)
		})
	}
	for seed := uint64(1); seed <= 6; seed++ {
		rng := rand.New(rand.NewPCG(seed, 16))
		src := newStreamRecorder(t)
		run(src.s, "CONFIG", "SET", "stream-node-max-entries", "4")
		seq := 0
		for i := 0; i < 400; i++ {
			args := randomStreamCommand(rng, &seq)
			src.run(args...)
			if i%7 == 0 {
				for _, k := range []string{"s1", "s2", "s3"} {
					checkRecreate(t, src, k, "seed "+string(rune('0'+seed))+" after "+strings.Join(args, " "))
				}
			}
		}
	}
}
