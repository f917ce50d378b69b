package server

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/snapshot"
)

// ringContents decodes a ring's live messages, oldest first, as a save
// or a rewind reads them.
func ringContents(name, recs []byte) []snapshot.History {
	var out []snapshot.History
	eachRecord(name, recs, func(r *snapshot.History) {
		c := *r
		c.Channel = bytes.Clone(r.Channel)
		c.Payload = bytes.Clone(r.Payload)
		c.Data = bytes.Clone(r.Data)
		out = append(out, c)
	})
	return out
}

// randomRecord is a RESP or realtime message on ch with fields of random
// sizes, now and then big enough to make the ring move.
func randomRecord(rng *rand.Rand, ch []byte, t int64) snapshot.History {
	size := rng.IntN(40)
	if rng.IntN(50) == 0 {
		size = rng.IntN(20000)
	}
	r := snapshot.History{Channel: ch, Time: t}
	if rng.IntN(2) == 0 {
		r.Payload = bytes.Repeat([]byte{byte('a' + rng.IntN(26))}, size)
		return r
	}
	r.Realtime = true
	r.ConnectionID = fmt.Sprintf("conn-%d", rng.IntN(1000))
	if rng.IntN(2) == 0 {
		r.Name, r.HasName = strings.Repeat("n", rng.IntN(5)), true
	}
	switch rng.IntN(3) {
	case 0:
		r.Data = []byte(fmt.Sprintf(`{"v":"%s"}`, strings.Repeat("d", size)))
	case 1:
		r.Data = []byte{} // data that is there but empty differs from none
	}
	m := RealtimeMeta{Name: r.Name, HasName: r.HasName, Data: r.Data, ConnectionID: r.ConnectionID}
	r.Payload = appendRealtimeJSON(nil, &m, time.Unix(0, t).UnixMilli())
	return r
}

// sameRecords compares decoded messages with what was added, a realtime
// message's data nil or not as it was given.
func sameRecords(t *testing.T, what string, got, want []snapshot.History) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d messages, want %d", what, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Time != w.Time || g.Realtime != w.Realtime || g.ConnectionID != w.ConnectionID || g.Name != w.Name || g.HasName != w.HasName ||
			!bytes.Equal(g.Channel, w.Channel) || !bytes.Equal(g.Payload, w.Payload) ||
			(g.Data == nil) != (w.Data == nil) || !bytes.Equal(g.Data, w.Data) {
			t.Fatalf("%s: message %d is %+v, want %+v", what, i, g, w)
		}
	}
}

// TestChanRing: a ring keeps the last HistoryLimit messages of any mix of
// RESP and realtime messages, small and large, in order, whether it may
// move in place or not; and a view taken while in-place moves are off
// reads the same after any number of later messages.
func TestChanRing(t *testing.T) {
	for _, inPlace := range []bool{true, false} {
		t.Run(fmt.Sprint("inPlace=", inPlace), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			ch := []byte("chat:room:1")
			c := chanRing{nameLen: int32(len(ch)), start: int32(len(ch))}
			var model []snapshot.History
			type view struct {
				name, recs []byte
				want       []snapshot.History
			}
			var views []view
			for i := 0; i < 1500; i++ {
				r := randomRecord(rng, ch, int64(i)*1e6)
				c.add(&r, inPlace)
				model = append(model, r)
				if len(model) > HistoryLimit {
					model = model[1:]
				}
				if int(c.n) != len(model) || c.last != r.Time {
					t.Fatalf("after %d: n %d last %d", i, c.n, c.last)
				}
				sameRecords(t, fmt.Sprint("after ", i), ringContents(c.name(), c.records()), model)
				if !inPlace && i%97 == 0 {
					views = append(views, view{c.name(), c.records(), append([]snapshot.History(nil), model...)})
				}
			}
			for i, v := range views {
				sameRecords(t, fmt.Sprint("view ", i), ringContents(v.name, v.recs), v.want)
			}
			// The ring shrinks again once its messages do.
			big := cap(c.ring)
			for i := 0; i < 300; i++ {
				r := snapshot.History{Channel: ch, Time: int64(i), Payload: []byte("x")}
				c.add(&r, inPlace)
			}
			if cap(c.ring) >= big || cap(c.ring) > 8192 {
				t.Fatalf("ring of 100 tiny messages holds %d bytes (was %d)", cap(c.ring), big)
			}
		})
	}
}

// TestRingIndex runs random inserts, finds and removes on tables small
// enough to collide and wrap around, against a map.
func TestRingIndex(t *testing.T) {
	for _, tags := range []uint32{4, 64, 1 << 20} {
		rng := rand.New(rand.NewPCG(uint64(tags), 7))
		var x ringIndex
		model := map[int32]uint32{} // entry -> tag
		next := int32(0)
		for step := 0; step < 20000; step++ {
			if len(model) > 0 && rng.IntN(5) < 2 {
				for e, tag := range model {
					x.remove(tag, e)
					delete(model, e)
					break
				}
			} else {
				tag := rng.Uint32N(tags)
				x.insert(tag, next)
				model[next] = tag
				next++
			}
			if x.used != len(model) {
				t.Fatalf("tags %d step %d: used %d, want %d", tags, step, x.used, len(model))
			}
			if step%100 != 0 {
				continue
			}
			for e, tag := range model {
				if got := x.find(tag, func(i int32) bool { return i == e }); got != e {
					t.Fatalf("tags %d step %d: entry %d under %d not found (%d)", tags, step, e, tag, got)
				}
			}
			if got := x.find(rng.Uint32N(tags), func(i int32) bool { return i == next }); got != noChan {
				t.Fatalf("tags %d: found %d, never inserted", tags, got)
			}
		}
	}
}

// TestHistoryStripeSharedHash: channels whose names share a full hash are
// kept apart, and dropping any of them keeps the others.
func TestHistoryStripeSharedHash(t *testing.T) {
	var h history
	h.init(time.Hour, 0)
	st := &h.stripes[0]
	const hc = 42
	names := []string{"a", "b", "c", "d", "e"}
	for i, n := range names {
		for j := 0; j <= i; j++ {
			st.add(hc, &snapshot.History{Channel: []byte(n), Time: int64(i), Payload: []byte(n)})
		}
	}
	check := func(left []string) {
		t.Helper()
		if st.index.used != len(left) {
			t.Fatalf("%d channels, want %d", st.index.used, len(left))
		}
		for _, n := range left {
			i := st.find(hc, []byte(n))
			if i == noChan || string(st.at(i).name()) != n {
				t.Fatalf("%q not found", n)
			}
			idx := strings.Index("abcde", n)
			if got := int(st.at(i).n); got != idx+1 {
				t.Fatalf("%q has %d messages, want %d", n, got, idx+1)
			}
		}
	}
	check(names)
	for _, gone := range []string{"c", "a", "e"} {
		st.drop(st.find(hc, []byte(gone)), hc)
		names = slices.DeleteFunc(names, func(n string) bool { return n == gone })
		check(names)
		if st.find(hc, []byte(gone)) != noChan {
			t.Fatalf("%q still found", gone)
		}
	}
	// A freed entry is used again.
	st.add(hc, &snapshot.History{Channel: []byte("f"), Payload: []byte("f")})
	if n := len(st.pages[0]); n != 5 {
		t.Fatalf("%d entries, want 5 (freed ones reused)", n)
	}
}

// TestPublishSteadyNoAlloc: PUBLISH to a channel with a full history
// allocates nothing: the message goes into the channel's ring.
func TestPublishSteadyNoAlloc(t *testing.T) {
	s := plainSession(t)
	in := toArgs("PUBLISH", "news", "payload:0000000001")
	for i := 0; i < 3*HistoryLimit; i++ {
		s.Exec(in)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		s.W.B = s.W.B[:0]
		s.Exec(in)
	})
	if allocs != 0 {
		t.Fatalf("PUBLISH allocates %.2f times", allocs)
	}
}
