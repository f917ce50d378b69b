package server

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/recached/recached/server/keyspace"
)

// describeStream renders a stream's whole state canonically: counters,
// entries, groups, consumers (without their seen times) and pending
// entries.
func describeStream(e *keyspace.Entry) string {
	if e == nil {
		return "absent"
	}
	st, ok := e.Obj.(*keyspace.Stream)
	if !ok {
		return "type " + e.Type().String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "len=%d last=%s first=%s maxdel=%s added=%d\n", st.Len(), st.LastID, st.FirstID, st.MaxDeletedID, st.EntriesAdded)
	st.Range(keyspace.StreamID{}, keyspace.MaxStreamID, false, func(id keyspace.StreamID, fv [][]byte) bool {
		fmt.Fprintf(&b, " %s %q\n", id, fv)
		return true
	})
	for _, g := range st.Groups() {
		fmt.Fprintf(&b, "group %q last=%s read=%d\n", g.Name, g.LastID, g.EntriesRead)
		for _, c := range g.Consumers() {
			fmt.Fprintf(&b, " consumer %q pending=%d\n", c.Name, len(c.Pending()))
		}
		for _, n := range g.Pending() {
			fmt.Fprintf(&b, " nack %s %q count=%d at=%d\n", n.ID, n.Consumer.Name, n.DeliveryCount, n.DeliveryTime)
		}
	}
	return b.String()
}

// streamRecorder is a server with a session and the effects it reports,
// whatever their key's position.
type streamRecorder struct {
	srv     *Server
	s       *Session
	effects [][]string
}

func newStreamRecorder(t *testing.T) *streamRecorder {
	t.Helper()
	r := &streamRecorder{srv: New(DefaultConfig())}
	r.srv.AddHook(func(e *Effect) { r.effects = append(r.effects, effectStrings(e)) })
	r.s = newSession(r.srv, nil, false)
	return r
}

func (r *streamRecorder) run(args ...string) (string, [][]string) {
	before := len(r.effects)
	return run(r.s, args...), r.effects[before:]
}

// randomStreamCommand draws a stream command over two keys, two groups
// and three consumers, with ids small enough to collide.
func randomStreamCommand(rng *rand.Rand, seq *int) []string {
	key := []string{"s1", "s2"}[rng.IntN(2)]
	group := []string{"g1", "g2"}[rng.IntN(2)]
	consumer := []string{"alice", "bob", "carol"}[rng.IntN(3)]
	id := func() string { return strconv.Itoa(rng.IntN(*seq+2)) + "-" + strconv.Itoa(rng.IntN(3)) }
	switch rng.IntN(16) {
	case 0, 1, 2:
		*seq++
		args := []string{"XADD", key}
		switch rng.IntN(5) {
		case 0:
			args = append(args, "MAXLEN", "~", strconv.Itoa(rng.IntN(6)))
		case 1:
			args = append(args, "MAXLEN", strconv.Itoa(rng.IntN(8)))
		case 2:
			args = append(args, "MINID", "~", id())
		}
		return append(args, strconv.Itoa(*seq)+"-*", "f", strconv.Itoa(*seq), []string{"g", "f"}[rng.IntN(2)], "v")
	case 3:
		return []string{"XADD", key, "*", "f", "auto"}
	case 4:
		return []string{"XDEL", key, id(), id()}
	case 5:
		return []string{"XTRIM", key, "MAXLEN", []string{"=", "~"}[rng.IntN(2)], strconv.Itoa(rng.IntN(5))}
	case 6:
		return []string{"XGROUP", "CREATE", key, group, []string{"0", "$", id()}[rng.IntN(3)], "MKSTREAM"}
	case 7:
		return []string{"XGROUP", "SETID", key, group, []string{"0", "$", id()}[rng.IntN(3)]}
	case 8, 9:
		args := []string{"XREADGROUP", "GROUP", group, consumer, "COUNT", strconv.Itoa(1 + rng.IntN(3))}
		if rng.IntN(3) == 0 {
			args = append(args, "NOACK")
		}
		return append(args, "STREAMS", key, []string{">", ">", "0"}[rng.IntN(3)])
	case 10:
		return []string{"XACK", key, group, id(), id()}
	case 11:
		return []string{"XCLAIM", key, group, consumer, "0", id(), id(), []string{"JUSTID", "FORCE", "RETRYCOUNT"}[rng.IntN(3)], "5"}
	case 12:
		return []string{"XAUTOCLAIM", key, group, consumer, "0", "0", "COUNT", strconv.Itoa(1 + rng.IntN(3))}
	case 13:
		return []string{"XGROUP", []string{"CREATECONSUMER", "DELCONSUMER"}[rng.IntN(2)], key, group, consumer}
	case 14:
		if rng.IntN(4) == 0 {
			return []string{"XGROUP", "DESTROY", key, group}
		}
		return []string{"XSETID", key, strconv.Itoa(*seq+5) + "-0", "ENTRIESADDED", strconv.Itoa(100 + *seq), "MAXDELETEDID", "1-0"}
	default:
		if rng.IntN(3) == 0 {
			return []string{"DEL", key}
		}
		return []string{"COPY", key, "s3", "REPLACE"}
	}
}

// TestStreamEffectsReplay applies the effects random stream traffic
// reports to a second server and checks after every command that both
// hold the same streams: entries, counters, groups, consumers and pending
// entries with their delivery counts and times.
func TestStreamEffectsReplay(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 15))
		src, dst := newStreamRecorder(t), newStreamRecorder(t)
		for _, r := range []*streamRecorder{src, dst} {
			run(r.s, "CONFIG", "SET", "stream-node-max-entries", "4")
		}
		seq := 0
		for i := 0; i < 400; i++ {
			args := randomStreamCommand(rng, &seq)
			_, effects := src.run(args...)
			for _, eff := range effects {
				if rep, _ := dst.run(eff...); strings.HasPrefix(rep, "-") {
					t.Fatalf("seed %d: replaying %q (from %q): %s", seed, eff, args, rep)
				}
			}
			for _, k := range []string{"s1", "s2", "s3"} {
				a, b := describeStream(src.s.db.Lookup([]byte(k))), describeStream(dst.s.db.Lookup([]byte(k)))
				if a != b {
					t.Fatalf("seed %d: after %q (effects %q), key %s:\nserver\n%s\nreplica\n%s", seed, args, effects, k, a, b)
				}
			}
		}
	}
}

// TestStreamEffects checks the exact effects of the commands whose
// propagation Redis defines.
func TestStreamEffects(t *testing.T) {
	r := newStreamRecorder(t)
	steps := []struct {
		args    []string
		effects [][]string
	}{
		{[]string{"XADD", "s", "NOMKSTREAM", "1-1", "f", "v"}, nil},
		{[]string{"XADD", "s", "1-*", "f", "v"}, [][]string{{"XADD", "s", "1-0", "f", "v"}}},
		{[]string{"XADD", "s", "MAXLEN", "~", "0", "LIMIT", "1", "2", "f", "v"}, [][]string{{"XADD", "s", "MAXLEN", "=", "2", "2-0", "f", "v"}}},
		{[]string{"XADD", "s", "MINID", "2", "3-0", "f", "v"}, [][]string{{"XADD", "s", "MINID", "=", "2-0", "3-0", "f", "v"}}},
		{[]string{"XTRIM", "s", "MAXLEN", "5"}, nil},
		{[]string{"XTRIM", "s", "MAXLEN", "1"}, [][]string{{"XTRIM", "s", "MAXLEN", "=", "1"}}},
		{[]string{"XADD", "s", "4", "f", "v"}, [][]string{{"XADD", "s", "4-0", "f", "v"}}},
		{[]string{"XDEL", "s", "3", "9-9"}, [][]string{{"XDEL", "s", "3-0"}}},
		{[]string{"XGROUP", "CREATE", "s", "g", "$"}, [][]string{{"XGROUP", "CREATE", "s", "g", "4-0", "ENTRIESREAD", "-1"}}},
		{[]string{"XGROUP", "CREATE", "n", "g", "$", "MKSTREAM"}, [][]string{{"XGROUP", "CREATE", "n", "g", "0-0", "MKSTREAM", "ENTRIESREAD", "-1"}}},
		{[]string{"XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", "0"}, [][]string{{"XGROUP", "SETID", "s", "g", "0-0", "ENTRIESREAD", "0"}}},
		{[]string{"XREADGROUP", "GROUP", "g", "c", "NOACK", "STREAMS", "s", ">"}, [][]string{
			{"XGROUP", "CREATECONSUMER", "s", "g", "c"},
			{"XGROUP", "SETID", "s", "g", "4-0", "ENTRIESREAD", "1"},
		}},
		{[]string{"XACK", "s", "g", "4-0"}, nil},
		{[]string{"XGROUP", "DELCONSUMER", "s", "g", "c"}, [][]string{{"XGROUP", "DELCONSUMER", "s", "g", "c"}}},
		{[]string{"XGROUP", "DESTROY", "s", "g"}, [][]string{{"XGROUP", "DESTROY", "s", "g"}}},
		{[]string{"XSETID", "s", "9-9", "ENTRIESADDED", "9"}, [][]string{{"XSETID", "s", "9-9", "ENTRIESADDED", "9"}}},
	}
	for _, tc := range steps {
		_, got := r.run(tc.args...)
		if fmt.Sprint(got) != fmt.Sprint(tc.effects) {
			t.Errorf("%q: effects %q, want %q", tc.args, got, tc.effects)
		}
	}
	// A delivery: the consumer's creation, one XCLAIM per entry with its
	// delivery time and count, then the group's new last id.
	r.run("XGROUP", "CREATE", "s", "g2", "0")
	_, got := r.run("XREADGROUP", "GROUP", "g2", "d", "STREAMS", "s", ">")
	if len(got) != 3 || got[0][1] != "CREATECONSUMER" || got[1][0] != "XCLAIM" || got[2][1] != "SETID" {
		t.Fatalf("XREADGROUP effects %q", got)
	}
	at := strconv.FormatInt(r.s.db.Lookup([]byte("s")).Obj.(*keyspace.Stream).Group([]byte("g2")).NACK(keyspace.StreamID{Ms: 4}).DeliveryTime, 10)
	want := []string{"XCLAIM", "s", "g2", "d", "0", "4-0", "TIME", at, "RETRYCOUNT", "1", "FORCE", "JUSTID", "LASTID", "4-0"}
	if fmt.Sprint(got[1]) != fmt.Sprint(want) {
		t.Errorf("XCLAIM effect %q, want %q", got[1], want)
	}
}

// TestStreamPersistRoundTrip saves streams with consumer groups, logs more
// changes, restarts and checks every stream came back whole.
func TestStreamPersistRoundTrip(t *testing.T) {
	dir := t.TempDir()
	srv := openPersist(t, dir, nil)
	s := newSession(srv, nil, false)
	rng := rand.New(rand.NewPCG(7, 7))
	seq := 0
	for i := 0; i < 300; i++ {
		if i == 150 {
			if rep := pexec(s, "SAVE"); rep != "+OK\r\n" {
				t.Fatalf("SAVE: %q", rep)
			}
		}
		pexec(s, randomStreamCommand(rng, &seq)...)
	}
	pexec(s, "XADD", "empty", "1-1", "f", "v")
	pexec(s, "XDEL", "empty", "1-1")
	pexec(s, "XGROUP", "CREATE", "empty", "g", "$")
	want := map[string]string{}
	for _, k := range []string{"s1", "s2", "s3", "empty"} {
		want[k] = describeStream(s.db.Lookup([]byte(k)))
	}
	_ = srv.persist.log.Load().SyncNow()
	crash(srv)
	for _, step := range []string{"log", "snapshot"} {
		srv2 := openPersist(t, dir, nil)
		s2 := newSession(srv2, nil, false)
		for k, w := range want {
			if got := describeStream(s2.db.Lookup([]byte(k))); got != w {
				t.Errorf("after restart (%s), %s:\n%s\nwant\n%s", step, k, got, w)
			}
		}
		if step == "log" {
			if rep := pexec(s2, "SAVE"); rep != "+OK\r\n" {
				t.Fatalf("SAVE: %q", rep)
			}
		}
		crash(srv2)
	}
}

func TestStreamCopyIsDeep(t *testing.T) {
	s := plainSession(t)
	for _, c := range [][]string{
		{"XADD", "a", "1-0", "f", "v"}, {"XGROUP", "CREATE", "a", "g", "0"},
		{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", ">"}, {"COPY", "a", "b"},
		{"XADD", "b", "2-0", "f", "v"}, {"XACK", "b", "g", "1-0"}, {"XGROUP", "CREATECONSUMER", "b", "g", "d"},
	} {
		if rep := run(s, c...); strings.HasPrefix(rep, "-") {
			t.Fatalf("%q: %s", c, rep)
		}
	}
	a := describeStream(s.db.Lookup([]byte("a")))
	if !strings.Contains(a, "len=1 ") || !strings.Contains(a, "nack 1-0") || strings.Contains(a, `"d"`) {
		t.Errorf("COPY's target changed the source:\n%s", a)
	}
	for _, c := range [][]string{{"TYPE", "a"}, {"OBJECT", "ENCODING", "a"}} {
		if rep := run(s, c...); !strings.Contains(rep, "stream") {
			t.Errorf("%q: %q", c, rep)
		}
	}
	if rep := run(s, "MEMORY", "USAGE", "a"); !strings.HasPrefix(rep, ":") || rep == ":0\r\n" {
		t.Errorf("MEMORY USAGE: %q", rep)
	}
}

// TestXAddAutoID checks the shape of the ids XADD chooses: the current
// time and sequence 0, then the next sequence within one millisecond, and
// never below the last id.
func TestXAddAutoID(t *testing.T) {
	s := plainSession(t)
	now := int64(1_700_000_000_000)
	s.srv.ks.Now = func() int64 { return now }
	for _, tc := range []struct{ args, want string }{
		{"XADD s * f v", bulk("1700000000000-0")},
		{"XADD s * f v", bulk("1700000000000-1")},
		{"XADD s 1700000000005-* f v", bulk("1700000000005-0")},
		{"XADD s * f v", bulk("1700000000005-1")},
		{"XADD s 1700000000005-* f v", bulk("1700000000005-2")},
	} {
		if got := run(s, strings.Fields(tc.args)...); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.args, got, tc.want)
		}
	}
	now += 10
	if got := run(s, "XADD", "s", "*", "f", "v"); got != bulk("1700000000010-0") {
		t.Errorf("a later millisecond: %q", got)
	}
}

// TestStreamReadAckAllocs bounds the allocations of the consumer-group hot
// path, XREADGROUP … COUNT 1 … > then XACK of the oldest pending id: each
// one brings the next GC cycle sooner, and with a large keyspace a cycle
// is costly.
func TestStreamReadAckAllocs(t *testing.T) {
	s := plainSession(t)
	const entries = 3000
	for i := 0; i < entries; i++ {
		s.Exec(toArgs("XADD", "s", "*", "f", "v"))
	}
	s.Exec(toArgs("XGROUP", "CREATE", "s", "g", "0"))
	read := toArgs("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
	// A window of deliveries in flight, as with 50 pipelining clients.
	for i := 0; i < 100; i++ {
		s.Exec(read)
	}
	g := s.srv.ks.DBs[0].Lookup([]byte("s")).Obj.(*keyspace.Stream).Group([]byte("g"))
	ack := toArgs("XACK", "s", "g", "")
	var id []byte
	n := testing.AllocsPerRun(1000, func() {
		s.W.B = s.W.B[:0]
		s.Exec(read)
		id = g.Pending()[0].ID.Append(id[:0])
		ack[3] = id
		s.W.B = s.W.B[:0]
		s.Exec(ack)
		if string(s.W.B) != ":1\r\n" {
			t.Fatalf("XACK %s: %q", id, s.W.B)
		}
	})
	if n > 1 {
		t.Errorf("XREADGROUP+XACK: %.1f allocations, want at most 1 (the pending entry)", n)
	}
}
