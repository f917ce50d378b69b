package server

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/snapshot"
)

// historyOf returns channel's history as a rewind of n sees it.
func historyOf(srv *Server, channel string, n int) []*BusMessage {
	var out []*BusMessage
	sub := srv.BusSubscribe(BusSubOptions{Channel: channel, Rewind: n, Start: func(h []*BusMessage) { out = h }, Deliver: func(*BusMessage) {}})
	srv.BusUnsubscribe(sub)
	return out
}

// reopen closes srv's persistence and starts another engine from what it
// left in its directory (openPersist), with mod applied to its
// configuration.
func reopen(t *testing.T, srv *Server, mod func(*Config)) *Server {
	t.Helper()
	if err := srv.ClosePersistence(); err != nil {
		t.Fatal(err)
	}
	return openPersist(t, srv.Config().Dir, mod)
}

// TestHistoryRing: a channel keeps its last HistoryLimit messages, oldest
// first; a rewind returns the last min(n, HistoryLimit); shard channels
// and a disabled history record nothing.
func TestHistoryRing(t *testing.T) {
	_, ss := newPubSubSessions(1, false)
	s := ss[0]
	for i := 0; i < 250; i++ {
		run(s, "PUBLISH", "ring", fmt.Sprint(i))
	}
	run(s, "SPUBLISH", "shard", "x")
	for _, tt := range []struct{ n, want, first int }{{1000, 100, 150}, {100, 100, 150}, {5, 5, 245}, {0, 0, 0}} {
		h := historyOf(s.srv, "ring", tt.n)
		if len(h) != tt.want {
			t.Fatalf("rewind %d: %d messages, want %d", tt.n, len(h), tt.want)
		}
		for i, m := range h {
			if string(m.Payload) != fmt.Sprint(tt.first+i) || string(m.Channel) != "ring" {
				t.Fatalf("rewind %d: message %d is %q", tt.n, i, m.Payload)
			}
		}
	}
	if h := historyOf(s.srv, "shard", 100); len(h) != 0 {
		t.Fatalf("SPUBLISH was recorded: %d", len(h))
	}
	cfg := DefaultConfig()
	cfg.RealtimeHistoryTTL = 0
	off := New(cfg)
	off.BusPublish([]byte("c"), RealtimeMeta{ConnectionID: "x"})
	if h := historyOf(off, "c", 100); len(h) != 0 {
		t.Fatalf("a disabled history recorded %d messages", len(h))
	}
}

// TestHistoryPrune: the periodic prune drops channels whose last message
// is older than the TTL, at most historyPruneBudget per call, and keeps
// the others.
func TestHistoryPrune(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RealtimeHistoryTTL = time.Hour
	srv := New(cfg)
	h := &srv.pubsub.hist
	base := time.Now()
	n := historyPruneBudget + 10
	for i := 0; i < n; i++ {
		h.restore(timedMessage(fmt.Sprintf("old:%d", i), base.Add(-2*time.Hour)))
	}
	h.restore(timedMessage("fresh", base))
	// A channel published to again is fresh whatever its older messages.
	h.restore(timedMessage("old:0", base))
	if got := h.prune(base); got != historyPruneBudget {
		t.Fatalf("first prune dropped %d, want %d", got, historyPruneBudget)
	}
	if got := h.prune(base); got != n-1-historyPruneBudget {
		t.Fatalf("second prune dropped %d, want %d", got, n-1-historyPruneBudget)
	}
	if got := h.channels(); got != 2 {
		t.Fatalf("%d channels left, want 2", got)
	}
	if got := historyOf(srv, "old:0", 100); len(got) != 2 {
		t.Fatalf("old:0 has %d messages, want 2", len(got))
	}
	if got := h.prune(base.Add(2 * time.Hour)); got != 2 {
		t.Fatalf("late prune dropped %d, want 2", got)
	}
}

// TestHistoryRestart: the history, realtime fields and times included,
// survives a clean restart (the shutdown snapshot) and one from the log
// alone; channels past the TTL are dropped at load.
func TestHistoryRestart(t *testing.T) {
	for _, mode := range []string{"snapshot", "log"} {
		t.Run(mode, func(t *testing.T) {
			srv := openPersist(t, t.TempDir(), nil)
			s, err := srv.NewSession(nil, false)
			if err != nil {
				t.Fatal(err)
			}
			run(s, "PUBLISH", "c", "resp")
			srv.BusPublish([]byte("c"), RealtimeMeta{Name: "n", HasName: true, Data: []byte(`[1,2]`), ConnectionID: "conn"})
			srv.BusPublish([]byte("c"), RealtimeMeta{HasName: true, ConnectionID: "c2"})
			srv.BusPublish([]byte("other"), RealtimeMeta{ConnectionID: "c3"})
			want := historyOf(srv, "c", 100)
			if mode == "log" {
				// As a crash would: the log is written, no final snapshot.
				srv.Commit()
				srv.persist.shutdown.Store(shutdownNoSave)
			}
			again := reopen(t, srv, nil)
			got := historyOf(again, "c", 100)
			if len(got) != 3 {
				t.Fatalf("%d messages after the restart, want 3", len(got))
			}
			for i := range want {
				w, g := *want[i], *got[i]
				if !w.Time.Equal(g.Time) || !reflect.DeepEqual(w.Realtime, g.Realtime) || string(w.Payload) != string(g.Payload) || string(w.Channel) != string(g.Channel) {
					t.Fatalf("message %d: got %+v %+v, want %+v %+v", i, g, g.Realtime, w, w.Realtime)
				}
			}
			if len(historyOf(again, "other", 100)) != 1 {
				t.Fatal("the other channel's history is lost")
			}
		})
	}
	// A shorter TTL at the next start drops what is older.
	srv := openPersist(t, t.TempDir(), nil)
	srv.BusPublish([]byte("c"), RealtimeMeta{ConnectionID: "x"})
	again := reopen(t, srv, func(c *Config) { c.RealtimeHistoryTTL = time.Nanosecond })
	if got := historyOf(again, "c", 100); len(got) != 0 {
		t.Fatalf("%d messages past the TTL loaded", len(got))
	}
}

// TestHistoryMaxPayload: a payload, or a channel name, over
// HistoryMaxPayload is delivered but not recorded.
func TestHistoryMaxPayload(t *testing.T) {
	_, ss := newPubSubSessions(2, false)
	sub, pub := ss[0], ss[1]
	run(sub, "SUBSCRIBE", "big")
	for _, n := range []int{HistoryMaxPayload, HistoryMaxPayload + 1} {
		if got := run(pub, "PUBLISH", "big", string(make([]byte, n))); got != ":1\r\n" {
			t.Fatalf("PUBLISH of %d bytes: %q", n, got)
		}
	}
	h := historyOf(pub.srv, "big", 100)
	if len(h) != 1 || len(h[0].Payload) != HistoryMaxPayload {
		t.Fatalf("history holds %d messages", len(h))
	}
	for _, n := range []int{HistoryMaxPayload, HistoryMaxPayload + 1} {
		ch := strings.Repeat("c", n)
		run(sub, "SUBSCRIBE", ch)
		if got := run(pub, "PUBLISH", ch, "m"); got != ":1\r\n" {
			t.Fatalf("PUBLISH on a channel of %d bytes: %q", n, got)
		}
		want := 0
		if n <= HistoryMaxPayload {
			want = 1
		}
		if h := historyOf(pub.srv, ch, 100); len(h) != want {
			t.Fatalf("channel of %d bytes: history holds %d messages, want %d", n, len(h), want)
		}
	}
}

// TestOldDataDirLoads: a data directory holding a snapshot written before
// history existed (the committed fixture) opens, with keys and no history,
// and the history works from there.
func TestOldDataDirLoads(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "snapshot", "testdata", "v1.rcd"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, snapshot.SnapshotName), b, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Dir, cfg.Save = dir, ""
	srv := New(cfg)
	if err := srv.OpenPersistence(); err != nil {
		t.Fatal(err)
	}
	defer srv.ClosePersistence()
	s, err := srv.NewSession(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := run(s, "GET", "string"); got != bulk("hello, world") {
		t.Fatalf("GET string: %q", got)
	}
	if srv.pubsub.hist.channels() != 0 {
		t.Fatal("history out of an old snapshot")
	}
	run(s, "PUBLISH", "c", "m")
	if len(historyOf(srv, "c", 1)) != 1 {
		t.Fatal("no history after loading an old snapshot")
	}
}

// timedMessage is a message on channel accepted at t.
func timedMessage(channel string, t time.Time) *snapshot.History {
	return &snapshot.History{Channel: []byte(channel), Payload: []byte("x"), Time: t.UnixNano()}
}

// TestHistorySaveWhilePublishing: saves taken while publishers fill the
// rings (moving them, dropping their oldest messages) write every channel
// as a run of consecutive messages, and a restart from the last save and
// the log loads the last HistoryLimit of them. Under
// -race it also checks that no ring is moved while a save reads it.
func TestHistorySaveWhilePublishing(t *testing.T) {
	srv := openPersist(t, t.TempDir(), nil)
	const publishers, channels, each = 4, 20, 20 * (HistoryLimit + 50)
	done := make(chan struct{})
	for p := 0; p < publishers; p++ {
		go func() {
			defer func() { done <- struct{}{} }()
			s, err := srv.NewSession(nil, false)
			if err != nil {
				t.Error(err)
				return
			}
			for i := 0; i < each; i++ {
				// Payloads of varied size make the rings move.
				ch := fmt.Sprintf("c:%d:%d", p, i%channels)
				run(s, "PUBLISH", ch, fmt.Sprintf("%06d:%s", i, strings.Repeat("x", i%7*300)))
			}
		}()
	}
	saver, err := srv.NewSession(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for finished := 0; finished < publishers; {
		select {
		case <-done:
			finished++
		default:
			if rep := pexec(saver, "SAVE"); rep != "+OK\r\n" {
				t.Fatalf("SAVE: %q", rep)
			}
		}
	}
	if rep := pexec(saver, "SAVE"); rep != "+OK\r\n" {
		t.Fatalf("SAVE: %q", rep)
	}
	srv.persist.shutdown.Store(shutdownNoSave)
	again := reopen(t, srv, nil)
	for p := 0; p < publishers; p++ {
		for c := 0; c < channels; c++ {
			h := historyOf(again, fmt.Sprintf("c:%d:%d", p, c), HistoryLimit)
			if len(h) != HistoryLimit {
				t.Fatalf("c:%d:%d: %d messages, want %d", p, c, len(h), HistoryLimit)
			}
			for i, m := range h {
				n := c + (i+50)*channels
				want := fmt.Sprintf("%06d:", n)
				if !strings.HasPrefix(string(m.Payload), want) || len(m.Payload) != len(want)+n%7*300 {
					t.Fatalf("c:%d:%d message %d: %.20q, want %s…", p, c, i, m.Payload, want)
				}
			}
		}
	}
}

// historyBytes recounts what the history holds, to check its running
// count.
func historyBytes(h *history) (int64, int) {
	var b int64
	n := 0
	for i := range h.stripes {
		st := &h.stripes[i]
		st.mu.Lock()
		for c := st.oldest; c != noChan; c = st.at(c).next {
			b += int64(cap(st.at(c).ring)) + ringOverhead
			n++
		}
		st.mu.Unlock()
	}
	return b, n
}

// TestHistoryMaxMemory: past RealtimeHistoryMaxMemory the channels
// published to least recently lose their history, publication by
// publication and at the periodic prune; the running count of bytes is
// exact; INFO reports both; 0 bounds nothing.
func TestHistoryMaxMemory(t *testing.T) {
	const max = 256 << 10
	for _, bound := range []int64{max, 0} {
		cfg := DefaultConfig()
		cfg.RealtimeHistoryMaxMemory = bound
		srv := New(cfg)
		s, err := srv.NewSession(nil, false)
		if err != nil {
			t.Fatal(err)
		}
		h := &srv.pubsub.hist
		const n = 20000
		payload := strings.Repeat("p", 100)
		for i := 0; i < n; i++ {
			run(s, "PUBLISH", fmt.Sprintf("ch:%d", i), payload)
			if i%997 == 0 {
				if b, _ := historyBytes(h); b != h.bytes.Load() {
					t.Fatalf("after %d: counted %d bytes, hold %d", i, h.bytes.Load(), b)
				}
			}
		}
		// Publications trim their own stripes: the history stays within
		// its bound but for a channel or so per stripe.
		if b := h.bytes.Load(); bound > 0 && b > bound+historyStripes*256 {
			t.Fatalf("before the prune: history holds %d bytes, bound %d", b, bound)
		}
		h.prune(time.Now())
		b, kept := historyBytes(h)
		if b != h.bytes.Load() || kept != h.channels() {
			t.Fatalf("bound %d: counted %d bytes and %d channels, hold %d and %d", bound, h.bytes.Load(), h.channels(), b, kept)
		}
		if bound == 0 {
			if kept != n {
				t.Fatalf("no bound: %d of %d channels kept", kept, n)
			}
			continue
		}
		if b > bound {
			t.Fatalf("history holds %d bytes, bound %d", b, bound)
		}
		if b < bound/2 {
			t.Fatalf("only %d channels kept in %d bytes", kept, b)
		}
		// The newest channels keep their history, the oldest lost it.
		if len(historyOf(srv, fmt.Sprintf("ch:%d", n-1), 1)) != 1 || len(historyOf(srv, "ch:0", 1)) != 0 {
			t.Fatal("the history did not drop the channels published to least recently")
		}
		info := run(s, "INFO", "stats")
		if !strings.Contains(info, fmt.Sprintf("recached_history_channels:%d\r\n", kept)) || !strings.Contains(info, fmt.Sprintf("recached_history_bytes:%d\r\n", b)) {
			t.Fatalf("INFO stats does not report the history: %q", info)
		}
		// Dropping every channel leaves nothing counted.
		h.prune(time.Now().Add(48 * time.Hour))
		for h.prune(time.Now().Add(48*time.Hour)) > 0 {
		}
		if h.bytes.Load() != 0 || h.channels() != 0 {
			t.Fatalf("after dropping all: %d bytes, %d channels", h.bytes.Load(), h.channels())
		}
	}
}
