package server

import (
	"fmt"
	"testing"
)

// TestConfigSetAppendFsync checks that CONFIG SET appendfsync acts on the
// open log at once: under always every committed write is fsynced before
// Commit returns, under no nothing is (the everysec ticker only writes).
func TestConfigSetAppendFsync(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Dir, cfg.Save, cfg.AppendFsync = t.TempDir(), "", "no"
	srv := New(cfg)
	if err := srv.OpenPersistence(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { crash(srv) })
	s, err := srv.NewSession(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	writes := func(n int) int64 {
		before := srv.persist.fsyncs.total.Load()
		for i := 0; i < n; i++ {
			run(s, "SET", fmt.Sprint("k", i), "v")
			srv.Commit()
		}
		return srv.persist.fsyncs.total.Load() - before
	}
	cases := []struct {
		policy   string
		min, max int64 // fsyncs for 10 committed writes
	}{
		{"always", 10, 10},
		{"no", 0, 0},
		{"always", 10, 10},
	}
	for _, c := range cases {
		if got := run(s, "CONFIG", "SET", "appendfsync", c.policy); got != "+OK\r\n" {
			t.Fatalf("CONFIG SET appendfsync %s: %q", c.policy, got)
		}
		if got := run(s, "CONFIG", "GET", "appendfsync"); got != "*2\r\n"+bulk("appendfsync")+bulk(c.policy) {
			t.Fatalf("CONFIG GET appendfsync after setting %s: %q", c.policy, got)
		}
		if n := writes(10); n < c.min || n > c.max {
			t.Errorf("appendfsync %s: %d fsyncs for 10 committed writes, want %d to %d", c.policy, n, c.min, c.max)
		}
	}
	if got := run(s, "CONFIG", "SET", "appendfsync", "sometimes"); got[0] != '-' {
		t.Fatalf("CONFIG SET appendfsync sometimes: %q", got)
	}
}
