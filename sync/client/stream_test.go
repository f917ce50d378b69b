package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server"
)

// describeStream renders a stream canonically: counters, entries, groups
// with their consumers and pending entries.
func describeStream(s *Stream) string {
	if s == nil {
		return "none"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "len=%d last=%s maxdel=%s added=%d\n", s.Len(), s.LastID, s.MaxDeletedID, s.EntriesAdded)
	for _, e := range s.Entries {
		fmt.Fprintf(&b, " %s %q\n", e.ID, e.Fields)
	}
	for _, g := range s.Groups {
		fmt.Fprintf(&b, "group %q last=%s read=%d consumers=%q\n", g.Name, g.LastID, g.EntriesRead, g.Consumers)
		for _, p := range g.Pending {
			fmt.Fprintf(&b, " nack %s %q count=%d at=%d\n", p.ID, p.Consumer, p.DeliveryCount, p.DeliveryTime)
		}
	}
	return b.String()
}

// mapOf indexes a RESP3 map (or a RESP2 flat array) by its keys.
func mapOf(v resp.Value) map[string]resp.Value {
	m := map[string]resp.Value{}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		m[v.Elems[i].Text()] = v.Elems[i+1]
	}
	return m
}

func mustID(t *testing.T, v resp.Value) StreamID {
	t.Helper()
	id, err := ParseStreamID(v.Text())
	if err != nil {
		t.Fatalf("id %q: %v", v.Text(), err)
	}
	return id
}

// serverStream reads key's stream through XINFO STREAM key FULL COUNT 0
// in the local store's shape; nil when the key holds none.
func serverStream(t *testing.T, ctx context.Context, backend *Client, key string) *Stream {
	t.Helper()
	v, err := backend.Do(ctx, "XINFO", "STREAM", key, "FULL", "COUNT", "0")
	if err != nil {
		if strings.Contains(err.Error(), "no such key") {
			return nil
		}
		t.Fatalf("XINFO STREAM %s FULL: %v", key, err)
	}
	m := mapOf(v)
	s := &Stream{LastID: mustID(t, m["last-generated-id"]), MaxDeletedID: mustID(t, m["max-deleted-entry-id"]),
		EntriesAdded: uint64(m["entries-added"].Int)}
	for _, e := range m["entries"].Elems {
		var fv [][]byte
		for _, f := range e.Elems[1].Elems {
			fv = append(fv, f.Str)
		}
		s.Entries = append(s.Entries, StreamEntry{ID: mustID(t, e.Elems[0]), Fields: fv})
	}
	for _, gv := range m["groups"].Elems {
		gm := mapOf(gv)
		g := &StreamGroup{Name: gm["name"].Text(), LastID: mustID(t, gm["last-delivered-id"]), EntriesRead: -1}
		if r := gm["entries-read"]; !r.Null {
			g.EntriesRead = r.Int
		}
		for _, p := range gm["pending"].Elems {
			g.Pending = append(g.Pending, StreamPending{ID: mustID(t, p.Elems[0]), Consumer: p.Elems[1].Text(),
				DeliveryTime: p.Elems[2].Int, DeliveryCount: uint64(p.Elems[3].Int)})
		}
		for _, cv := range gm["consumers"].Elems {
			g.Consumers = append(g.Consumers, mapOf(cv)["name"].Text())
		}
		s.Groups = append(s.Groups, g)
	}
	return s
}

// randomStreamWrite draws a stream write over keys p+"s1", p+"s2" (and
// COPY to p+"s3"), two groups and three consumers, with ids small enough
// to collide.
func randomStreamWrite(r *rand.Rand, p string, seq *int) []string {
	key := p + []string{"s1", "s2"}[r.IntN(2)]
	group := []string{"g1", "g2"}[r.IntN(2)]
	consumer := []string{"alice", "bob", "carol"}[r.IntN(3)]
	id := func() string { return strconv.Itoa(r.IntN(*seq+2)) + "-" + strconv.Itoa(r.IntN(3)) }
	switch r.IntN(16) {
	case 0, 1, 2:
		*seq++
		args := []string{"XADD", key}
		switch r.IntN(5) {
		case 0:
			args = append(args, "MAXLEN", "~", strconv.Itoa(r.IntN(6)))
		case 1:
			args = append(args, "MAXLEN", strconv.Itoa(r.IntN(8)))
		case 2:
			args = append(args, "MINID", "~", id())
		}
		return append(args, strconv.Itoa(*seq)+"-*", "f", strconv.Itoa(*seq), []string{"g", "f"}[r.IntN(2)], "v")
	case 3:
		return []string{"XADD", key, "*", "f", "auto"}
	case 4:
		return []string{"XDEL", key, id(), id()}
	case 5:
		return []string{"XTRIM", key, "MAXLEN", []string{"=", "~"}[r.IntN(2)], strconv.Itoa(r.IntN(5))}
	case 6:
		return []string{"XGROUP", "CREATE", key, group, []string{"0", "$", id()}[r.IntN(3)], "MKSTREAM"}
	case 7:
		return []string{"XGROUP", "SETID", key, group, []string{"0", "$", id()}[r.IntN(3)]}
	case 8, 9:
		args := []string{"XREADGROUP", "GROUP", group, consumer, "COUNT", strconv.Itoa(1 + r.IntN(3))}
		if r.IntN(3) == 0 {
			args = append(args, "NOACK")
		}
		return append(args, "STREAMS", key, []string{">", ">", "0"}[r.IntN(3)])
	case 10:
		return []string{"XACK", key, group, id(), id()}
	case 11:
		return []string{"XCLAIM", key, group, consumer, "0", id(), id(), []string{"JUSTID", "FORCE", "RETRYCOUNT"}[r.IntN(3)], "5"}
	case 12:
		return []string{"XAUTOCLAIM", key, group, consumer, "0", "0", "COUNT", strconv.Itoa(1 + r.IntN(3))}
	case 13:
		return []string{"XGROUP", []string{"CREATECONSUMER", "DELCONSUMER"}[r.IntN(2)], key, group, consumer}
	case 14:
		if r.IntN(4) == 0 {
			return []string{"XGROUP", "DESTROY", key, group}
		}
		return []string{"XSETID", key, strconv.Itoa(*seq+5) + "-0", "ENTRIESADDED", strconv.Itoa(100 + *seq), "MAXDELETEDID", "1-0"}
	default:
		if r.IntN(3) == 0 {
			return []string{"DEL", key}
		}
		return []string{"COPY", key, p + "s3", "REPLACE"}
	}
}

// TestSyncStreams is the stream model test: a backend runs random
// XADD/XTRIM/XDEL/XSETID/XGROUP/XREADGROUP/XACK/XCLAIM/XAUTOCLAIM traffic
// while an observer keeps a replica with a live query; every few writes
// the replica's streams (entries, counters, groups, consumers, pending
// entries with delivery times and counts) must equal the server's XINFO
// STREAM FULL. A second observer whose query starts midway is hydrated
// from streams with groups and pending entries.
func TestSyncStreams(t *testing.T) {
	s := startServer(t, server.Config{})
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			ctx := ctx10(t)
			p := "xs" + tr + ":"
			backend := newClient(t, Options{URL: s.url("tcp")})
			if _, err := backend.Do(ctx, "CONFIG", "SET", "stream-node-max-entries", "4"); err != nil {
				t.Fatal(err)
			}
			obs := newClient(t, Options{URL: s.url(tr)})
			q := obs.Query(p+"*", func(string, Value) {})
			defer q.Close()
			var late *Client
			converge := func(c *Client, step string) {
				t.Helper()
				awaitConverged(t, step, func() (string, error) {
					for _, k := range []string{"s1", "s2", "s3"} {
						want := describeStream(serverStream(t, ctx, backend, p+k))
						got, _ := c.Store().Stream(p + k)
						if g := describeStream(got); g != want {
							return fmt.Sprintf("key %s:\nserver\n%s\nreplica\n%s", p+k, want, g), nil
						}
					}
					return "", nil
				})
			}
			r := rand.New(rand.NewPCG(15, 2))
			seq := 0
			for i := 0; i < 600; i++ {
				args := randomStreamWrite(r, p, &seq)
				if _, err := backend.Do(ctx, args...); err != nil {
					var re *resp.ReplyError
					if !errors.As(err, &re) {
						t.Fatalf("%q: %v", args, err)
					}
				}
				if i == 300 {
					late = newClient(t, Options{URL: s.url(tr)})
					lq := late.Query(p+"*", func(string, Value) {})
					defer lq.Close()
				}
				if i%10 == 9 {
					converge(obs, fmt.Sprintf("op %d %q", i, args))
					if late != nil {
						converge(late, fmt.Sprintf("late query, op %d %q", i, args))
					}
				}
			}
			if st := obs.Stats(); st.UnknownEffects != 0 {
				t.Errorf("%d unknown effects", st.UnknownEffects)
			}
			if st := late.Stats(); st.UnknownEffects != 0 {
				t.Errorf("late query: %d unknown effects", st.UnknownEffects)
			}
		})
	}
}

// TestStoreStream applies stream effects to a store and reads them back
// through its stream API.
func TestStoreStream(t *testing.T) {
	st := NewStore(func() time.Time { return time.UnixMilli(5000) })
	if !st.SetState("s", resp.Value{Kind: '+', Str: []byte("stream")}) {
		t.Fatal("marker not applied")
	}
	if _, ok := st.XRange("s", MinStreamID, MaxStreamID, 0, false); ok {
		t.Fatal("a marker alone has no content")
	}
	for _, e := range []string{
		"DEL s",
		"XADD s 1-1 f a",
		"XADD s 2-0 f b g c",
		"XADD s MAXLEN = 3 3-0 f c",
		"XADD s 4-0 f d",
		"XGROUP CREATE s g 2-0 ENTRIESREAD 2",
		"XGROUP CREATECONSUMER s g bob",
		"XCLAIM s g alice 0 3-0 TIME 4000 RETRYCOUNT 2 FORCE JUSTID LASTID 3-0",
		"XCLAIM s g bob 0 4-0 TIME 4100 RETRYCOUNT 1 FORCE JUSTID",
		"XGROUP SETID s g 4-0 ENTRIESREAD 4",
		"XADD s MINID = 3-0 5-0 f e",
		"XDEL s 4-0 9-9",
		"XSETID s 7-0 ENTRIESADDED 10",
	} {
		if _, ok := st.Apply(splitArgs(e)); !ok {
			t.Fatalf("%s: not applied", e)
		}
	}
	got, ok := st.XRange("s", MinStreamID, MaxStreamID, 0, true)
	if !ok || fmt.Sprint(got) != `[{5-0 [[102] [101]]} {3-0 [[102] [99]]}]` {
		t.Fatalf("XREVRANGE: %v %v", got, ok)
	}
	if n := st.XLen("s"); n != 2 {
		t.Fatalf("XLEN %d", n)
	}
	want := "len=2 last=7-0 maxdel=4-0 added=10\n 3-0 [\"f\" \"c\"]\n 5-0 [\"f\" \"e\"]\n" +
		"group \"g\" last=4-0 read=4 consumers=[\"alice\" \"bob\"]\n" +
		" nack 3-0 \"alice\" count=2 at=4000\n nack 4-0 \"bob\" count=1 at=4100\n"
	s, _ := st.Stream("s")
	if d := describeStream(s); d != want {
		t.Fatalf("stream:\n%s\nwant\n%s", d, want)
	}
	// An XCLAIM of an entry that is gone drops it from the group; a
	// consumer deleted takes its pending entries along.
	for _, e := range []string{"XCLAIM s g carol 0 4-0 TIME 4200 RETRYCOUNT 3 FORCE JUSTID", "XGROUP DELCONSUMER s g alice",
		"COPY s c", "XACK c g 3-0", "XGROUP DESTROY s g"} {
		if _, ok := st.Apply(splitArgs(e)); !ok {
			t.Fatalf("%s: not applied", e)
		}
	}
	if s, _ := st.Stream("s"); len(s.Groups) != 0 {
		t.Fatalf("groups after DESTROY: %v", s.Groups)
	}
	if v, ok := st.Get("c"); !ok || v.Type != TypeStream || v.Marker != "stream" || len(v.Stream.Groups[0].Pending) != 0 ||
		fmt.Sprint(v.Stream.Groups[0].Consumers) != "[bob]" {
		t.Fatalf("copy: %+v", v)
	}
	// Effects that do not fit the local stream are not understood.
	for _, e := range []string{"XADD s 1-0 f x", "XGROUP SETID s nosuch 0-0", "XSETID nosuch 1-0", "XADD s * f v"} {
		if _, ok := st.Apply(splitArgs(e)); ok {
			t.Errorf("%s: applied", e)
		}
	}
}

// TestOwnStreamWrites checks that a client's own XADD (with the id the
// server chose and an exact trim), XDEL and XACK reach its local store on
// their acknowledgment, since the server pushes a writer none of its own
// effects.
func TestOwnStreamWrites(t *testing.T) {
	s := startServer(t, server.Config{})
	ctx := ctx10(t)
	c := newClient(t, Options{URL: s.url("ws")})
	q := c.Query("own:*", func(string, Value) {})
	defer q.Close()
	for _, w := range [][]string{
		{"XADD", "own:s", "*", "f", "1"}, {"XADD", "own:s", "MAXLEN", "=", "2", "*", "f", "2"},
		{"XADD", "own:s", "NOMKSTREAM", "MAXLEN", "2", "9999999999999-5", "f", "3"},
		{"XDEL", "own:s", "9999999999999-5"},
	} {
		if _, err := c.Write(w...).Wait(ctx); err != nil {
			t.Fatalf("%q: %v", w, err)
		}
	}
	got, ok := c.XRange("own:s", MinStreamID, MaxStreamID, 0, false)
	if !ok || len(got) != 1 || string(got[0].Fields[1]) != "2" {
		t.Fatalf("local stream after own writes: %v %v", got, ok)
	}
	if s, _ := c.Store().Stream("own:s"); s.LastID != (StreamID{9999999999999, 5}) || s.MaxDeletedID != s.LastID || s.EntriesAdded != 3 {
		t.Fatalf("local counters: %s", describeStream(s))
	}
}
