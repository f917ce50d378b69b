package server

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/recached/recached/snapshot"
)

// TestDedupEffectsCarryMark checks that every effect of a DEDUP-wrapped
// command carries its mark, that the hooks hear of changes only, and that
// a mark raised without a change reaches the log on its own.
func TestDedupEffectsCarryMark(t *testing.T) {
	dir := t.TempDir()
	srv := openPersist(t, dir, nil)
	var got []Effect
	srv.AddHook(func(e *Effect) {
		c := *e
		c.Args = append([][]byte(nil), e.Args...)
		c.ClientID = append([]byte(nil), e.ClientID...)
		got = append(got, c)
	})
	s, err := srv.NewSession(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if r := run(s, "DEDUP", "cid", "3", "MSET", "a", "1", "b", "2"); r != "+OK\r\n" {
		t.Fatalf("MSET: %q", r)
	}
	if r := run(s, "DEDUP", "cid", "4", "GET", "a"); r != "$1\r\n1\r\n" {
		t.Fatalf("GET: %q", r)
	}
	if r := run(s, "SET", "c", "3"); r != "+OK\r\n" {
		t.Fatalf("SET: %q", r)
	}
	srv.Commit()
	type rec struct {
		cmd, key, cid string
		wid           uint64
	}
	wantHooks := []rec{{"SET", "a", "cid", 3}, {"SET", "b", "cid", 3}, {"SET", "c", "", 0}}
	if len(got) != len(wantHooks) {
		t.Fatalf("%d effects, want %d", len(got), len(wantHooks))
	}
	for i, w := range wantHooks {
		e := got[i]
		if e.Kind != EffectKey || string(e.Args[0]) != w.cmd || string(e.Key) != w.key || string(e.ClientID) != w.cid || e.WireID != w.wid {
			t.Errorf("effect %d: kind %d %q cid=%q wid=%d key=%q", i, e.Kind, e.Args, e.ClientID, e.WireID, e.Key)
		}
	}
	// In the log: each mark once, before the changes made under it, which
	// are one transaction (persist_unit.go); the mark of the GET alone.
	wantLog := []rec{{"", "", "cid", 3}, {"SET", "a", "", 0}, {"SET", "b", "", 0}, {"EXEC", "", "", 0}, {"", "", "cid", 4}, {"SET", "c", "", 0}}
	r, f, err := snapshot.OpenLog(filepath.Join(dir, snapshot.LogName(0)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := 0; ; i++ {
		lr, err := r.Next()
		if err == io.EOF {
			if i != len(wantLog) {
				t.Errorf("%d log records, want %d", i, len(wantLog))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i >= len(wantLog) {
			t.Fatalf("extra log record %d", i)
		}
		w := wantLog[i]
		var g rec
		if lr.IsMark {
			g = rec{cid: lr.Mark.ClientID, wid: lr.Mark.High}
		} else if lr.IsUnitEnd {
			g = rec{cmd: "EXEC"}
		} else {
			g = rec{cmd: string(lr.Args[0]), key: string(lr.Args[1])}
		}
		if g != w {
			t.Errorf("log record %d: %+v, want %+v", i, g, w)
		}
	}
}

// TestEffectReachesLogBeforeHooks: the publisher hands an effect to the
// append-only log before any hook, so that when the syncer queues a push
// the log already holds the record the transport's Commit will write.
func TestEffectReachesLogBeforeHooks(t *testing.T) {
	// The hook is added before persistence opens, as the syncer's is.
	cfg := DefaultConfig()
	cfg.Dir, cfg.Save, cfg.AppendFsync = t.TempDir(), "", "everysec"
	srv := New(cfg)
	var seen []int64
	srv.AddHook(func(e *Effect) { seen = append(seen, srv.persist.log.Load().Size()) })
	if err := srv.OpenPersistence(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { crash(srv) })
	l := srv.persist.log.Load()
	s, err := srv.NewSession(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	before := l.Size()
	for _, args := range [][]string{{"SET", "k", "v"}, {"DEL", "k"}, {"FLUSHALL"}, {"SET", "e", "v", "PX", "1"}} {
		run(s, args...)
	}
	for i, n := range seen {
		if n <= before {
			t.Errorf("hook %d ran with the log at %d bytes, before the effect was appended", i, n)
		}
		before = n
	}
	if len(seen) != 4 {
		t.Errorf("%d hook calls, want 4", len(seen))
	}
}
