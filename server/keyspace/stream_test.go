package keyspace

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestStreamParseID(t *testing.T) {
	for _, tc := range []struct {
		in              string
		missing         uint64
		strict, seqStar bool
		want            StreamID
		seqGiven, ok    bool
	}{
		{"1-2", 0, false, false, StreamID{1, 2}, true, true},
		{"5", 7, false, false, StreamID{5, 7}, true, true},
		{"-", 0, false, false, StreamID{}, true, true},
		{"+", 0, false, false, MaxStreamID, true, true},
		{"-", 0, true, false, StreamID{}, false, false},
		{"+", 0, true, false, StreamID{}, false, false},
		{"3-*", 0, true, true, StreamID{3, 0}, false, true},
		{"3-*", 0, true, false, StreamID{}, false, false},
		{"18446744073709551615-18446744073709551615", 0, true, false, MaxStreamID, true, true},
		{"18446744073709551616-0", 0, true, false, StreamID{}, false, false},
		{"+5-1", 0, true, false, StreamID{5, 1}, true, true}, // strtoull's sign
		{"007-1", 0, true, false, StreamID{7, 1}, true, true},
		{"1-", 0, true, false, StreamID{}, false, false},
		{"a-1", 0, true, false, StreamID{}, false, false},
		{"-1", 0, true, false, StreamID{}, false, false},
		{"", 0, false, false, StreamID{}, false, false},
	} {
		id, seqGiven, ok := ParseStreamID([]byte(tc.in), tc.missing, tc.strict, tc.seqStar)
		if ok != tc.ok || (ok && (id != tc.want || seqGiven != tc.seqGiven)) {
			t.Errorf("%q: %v %v %v, want %v %v %v", tc.in, id, seqGiven, ok, tc.want, tc.seqGiven, tc.ok)
		}
	}
}

func TestStreamIDSteps(t *testing.T) {
	if n, ok := (StreamID{1, math.MaxUint64}).Next(); !ok || n != (StreamID{2, 0}) {
		t.Errorf("Next over a sequence: %v %v", n, ok)
	}
	if _, ok := MaxStreamID.Next(); ok {
		t.Error("Next of the largest id")
	}
	if p, ok := (StreamID{2, 0}).Prev(); !ok || p != (StreamID{1, math.MaxUint64}) {
		t.Errorf("Prev over a sequence: %v %v", p, ok)
	}
	if _, ok := (StreamID{}).Prev(); ok {
		t.Error("Prev of 0-0")
	}
}

// TestStreamRadixNodes checks the radix tree node counts against what
// redis-server 7.0.15's XINFO STREAM reports for one entry per node.
func TestStreamRadixNodes(t *testing.T) {
	s := NewStream()
	for i, tc := range []struct {
		id    StreamID
		nodes int
	}{
		{StreamID{1, 0}, 2}, {StreamID{2, 0}, 6}, {StreamID{3, 0}, 8}, {StreamID{256, 0}, 11},
		{StreamID{257, 0}, 14}, {StreamID{65536, 1}, 17}, {StreamID{65536, 2}, 19}, {StreamID{1700000000000, 0}, 23},
	} {
		s.Append(tc.id, [][]byte{[]byte("f"), []byte("v")}, 4096, 1)
		if got := s.RadixNodes(); got != tc.nodes || s.Nodes() != i+1 {
			t.Errorf("after %v: %d nodes in %d keys, want %d in %d", tc.id, got, s.Nodes(), tc.nodes, i+1)
		}
	}
	s.DeleteIDs([]StreamID{{2, 0}, {256, 0}})
	if got := s.RadixNodes(); got != 18 {
		t.Errorf("after XDEL: %d nodes, want 18", got)
	}
	if got := NewStream().RadixNodes(); got != 1 {
		t.Errorf("empty: %d nodes, want 1", got)
	}
}

// TestStreamNodeSplit checks that nodes end at stream-node-max-entries and
// when the listpack would reach stream-node-max-bytes.
func TestStreamNodeSplit(t *testing.T) {
	s := NewStream()
	for i := 1; i <= 25; i++ {
		s.Append(StreamID{uint64(i), 0}, [][]byte{[]byte("f"), []byte("v")}, 4096, 10)
	}
	if s.Nodes() != 3 {
		t.Errorf("25 entries, 10 per node: %d nodes", s.Nodes())
	}
	big := make([]byte, 1000)
	s = NewStream()
	for i := 1; i <= 8; i++ {
		s.Append(StreamID{uint64(i), 0}, [][]byte{[]byte("f"), big}, 4096, 100)
	}
	// As in redis-server: a listpack of four 1000-byte values stays below
	// 4096 bytes, the fifth would not and starts a new node.
	if s.Nodes() != 2 {
		t.Errorf("8 entries of 1000 bytes: %d nodes, want 2", s.Nodes())
	}
}

// TestStreamModel runs random appends, deletes, trims and ranges against a
// sorted slice.
func TestStreamModel(t *testing.T) {
	type ent struct {
		id StreamID
		fv []string
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 20; round++ {
		s := NewStream()
		var model []ent
		next := uint64(1)
		var cursor StreamID // a consumer group's last id, read one at a time
		for step := 0; step < 400; step++ {
			switch op := rng.IntN(12); {
			case op < 5:
				id := StreamID{next, uint64(rng.IntN(3))}
				next += uint64(1 + rng.IntN(3))
				fv := []string{"a", fmt.Sprint(step)}
				if rng.IntN(3) == 0 {
					fv = []string{"b", "x", "c", ""}
				}
				var args [][]byte
				for _, f := range fv {
					args = append(args, []byte(f))
				}
				s.Append(id, args, 4096, int64(1+rng.IntN(6)))
				model = append(model, ent{id, fv})
			case op < 7:
				id := StreamID{uint64(rng.IntN(int(next) + 1)), uint64(rng.IntN(3))}
				i := slices.IndexFunc(model, func(e ent) bool { return e.id == id })
				if got := s.Delete(id); got != (i >= 0) {
					t.Fatalf("Delete(%v) = %v, in model %v", id, got, i >= 0)
				}
				if i >= 0 {
					model = slices.Delete(model, i, i+1)
				}
			case op < 8:
				maxLen := uint64(rng.IntN(len(model) + 2))
				n := s.Trim(TrimArgs{MaxLen: maxLen})
				want := max(int64(len(model))-int64(maxLen), 0)
				if n != want {
					t.Fatalf("Trim(MAXLEN %d) removed %d, want %d", maxLen, n, want)
				}
				model = model[n:]
			case op < 9:
				minID := StreamID{uint64(rng.IntN(int(next) + 1)), 0}
				approx := rng.IntN(2) == 0
				n := s.Trim(TrimArgs{ByID: true, MinID: minID, Approx: approx})
				model = model[n:]
				if !approx && len(model) > 0 && model[0].id.Compare(minID) < 0 {
					t.Fatalf("Trim(MINID %v) left %v", minID, model[0].id)
				}
			case op < 11:
				// XREADGROUP ... COUNT 1 ... >: resume after the cursor.
				start, _ := cursor.Next()
				var got []string
				s.Range(start, MaxStreamID, false, func(id StreamID, fv [][]byte) bool {
					got = append(got, fmt.Sprintf("%v%q", id, fv))
					cursor = id
					return false
				})
				var want []string
				if i := slices.IndexFunc(model, func(e ent) bool { return e.id.Compare(start) >= 0 }); i >= 0 {
					want = append(want, fmt.Sprintf("%v%q", model[i].id, model[i].fv))
				}
				if !slices.Equal(got, want) {
					t.Fatalf("step %d: read after %v = %v, want %v", step, start, got, want)
				}
			default:
				a := StreamID{uint64(rng.IntN(int(next) + 1)), 0}
				b := StreamID{uint64(rng.IntN(int(next) + 1)), math.MaxUint64}
				rev := rng.IntN(2) == 0
				limit := 1 + rng.IntN(4)
				if rng.IntN(2) == 0 {
					limit = math.MaxInt
				}
				var got []string
				s.Range(a, b, rev, func(id StreamID, fv [][]byte) bool {
					got = append(got, fmt.Sprintf("%v%q", id, fv))
					return len(got) < limit
				})
				var want []string
				for _, e := range model {
					if e.id.Compare(a) >= 0 && e.id.Compare(b) <= 0 {
						want = append(want, fmt.Sprintf("%v%q", e.id, e.fv))
					}
				}
				if rev {
					slices.Reverse(want)
				}
				want = want[:min(len(want), limit)]
				if !slices.Equal(got, want) {
					t.Fatalf("Range(%v, %v, %v) = %v, want %v", a, b, rev, got, want)
				}
			}
			last, ok := s.Edge(false)
			if ok != (len(model) > 0) || ok && last != model[len(model)-1].id {
				t.Fatalf("step %d: Edge(false) = %v %v, model %d entries", step, last, ok, len(model))
			}
			if s.Len() != len(model) {
				t.Fatalf("step %d: Len %d, model %d", step, s.Len(), len(model))
			}
			if len(model) > 0 && s.FirstID != model[0].id && s.FirstID.Compare(model[0].id) > 0 {
				t.Fatalf("FirstID %v after the first entry %v", s.FirstID, model[0].id)
			}
		}
		c := s.Copy().(*Stream)
		if c.Len() != s.Len() || c.RadixNodes() != s.RadixNodes() {
			t.Fatal("Copy differs")
		}
	}
}

// TestStreamPELModel runs random deliveries, acknowledgements, claims and
// consumer deletions against a map, checking both pending lists' order.
func TestStreamPELModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := 0; round < 20; round++ {
		g := NewStream().CreateGroup([]byte("g"), StreamID{}, 0)
		var cons []*StreamConsumer
		for i := 0; i < 3; i++ {
			cons = append(cons, g.CreateConsumer([]byte{'a' + byte(i)}, 0))
		}
		owner := map[StreamID]*StreamConsumer{}
		next := uint64(1)
		for step := 0; step < 500; step++ {
			c := cons[rng.IntN(len(cons))]
			switch op := rng.IntN(10); {
			case op < 4:
				// Mostly new ids, sometimes a redelivery of an old one.
				id := StreamID{next, 0}
				if rng.IntN(4) == 0 && next > 1 {
					id = StreamID{uint64(1 + rng.IntN(int(next-1))), 0}
				} else {
					next++
				}
				g.Deliver(id, c, 0)
				owner[id] = c
			case op < 8:
				// Mostly the oldest pending entry, as consumers acknowledge.
				var id StreamID
				if p := g.Pending(); len(p) > 0 && rng.IntN(3) > 0 {
					id = p[0].ID
				} else {
					id = StreamID{uint64(rng.IntN(int(next) + 1)), 0}
				}
				_, had := owner[id]
				if got := g.Ack(id); got != had {
					t.Fatalf("Ack(%v) = %v, pending %v", id, got, had)
				}
				delete(owner, id)
			case op < 9:
				id := StreamID{uint64(rng.IntN(int(next) + 1)), 0}
				g.Claim(id, g.NACK(id), c)
				owner[id] = c
			default:
				if rng.IntN(5) == 0 {
					g.DeleteConsumer(c)
					for id, o := range owner {
						if o == c {
							delete(owner, id)
						}
					}
					i := slices.Index(cons, c)
					cons[i] = g.CreateConsumer(c.Name, 0)
				}
			}
			var want []StreamID
			for id := range owner {
				want = append(want, id)
			}
			slices.SortFunc(want, StreamID.Compare)
			var got []StreamID
			for _, n := range g.Pending() {
				got = append(got, n.ID)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: group pending %v, want %v", step, got, want)
			}
			for _, c := range cons {
				var cw, cg []StreamID
				for _, id := range want {
					if owner[id] == c {
						cw = append(cw, id)
					}
				}
				for _, n := range c.Pending() {
					if n.Consumer != c {
						t.Fatalf("step %d: %s holds %v owned by %s", step, c.Name, n.ID, n.Consumer.Name)
					}
					cg = append(cg, n.ID)
				}
				if !slices.Equal(cg, cw) {
					t.Fatalf("step %d: %s pending %v, want %v", step, c.Name, cg, cw)
				}
				from := StreamID{uint64(rng.IntN(int(next) + 1)), 0}
				wantFrom, _ := slices.BinarySearchFunc(cw, from, StreamID.Compare)
				if got := c.PendingFrom(from); got != wantFrom {
					t.Fatalf("step %d: PendingFrom(%v) = %d, want %d", step, from, got, wantFrom)
				}
			}
		}
	}
}

// BenchmarkStreamReadAck is the XREADGROUP+XACK benchmark row's work on
// the stream: read the entry after the group's last id, make it pending,
// acknowledge it once a window of 800 deliveries is outstanding.
func BenchmarkStreamReadAck(b *testing.B) {
	const window = 800
	s := NewStream()
	fv := [][]byte{[]byte("f"), []byte("v")}
	for i := 1; i <= b.N+window; i++ {
		s.Append(StreamID{uint64(i), 0}, fv, 4096, 100)
	}
	g := s.CreateGroup([]byte("g"), StreamID{}, 0)
	c := g.CreateConsumer([]byte("c"), 0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start, _ := g.LastID.Next()
		s.Range(start, MaxStreamID, false, func(id StreamID, _ [][]byte) bool {
			g.LastID = id
			return false
		})
		if _, ok := s.Edge(false); !ok {
			b.Fatal("empty stream")
		}
		g.Deliver(g.LastID, c, 0)
		if p := g.Pending(); len(p) > window {
			g.Ack(p[0].ID)
		}
	}
}
