package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/recached/recached/server/keyspace"
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

// copyFiles copies the regular files of dir into a new directory, as a
// SIGKILL at this instant leaves them (every write reached the kernel).
func copyFiles(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || e.Name() == "recached.lock" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestConfigSetAppendOnly turns the log on at run time with a pause in the
// middle of the base snapshot, where INFO must say the log is on and its
// rewrite in progress, and writes meanwhile. Killed after the OK, a
// restart has everything; killed before the base is complete, the log has
// no base and a restart discards it, loading the last snapshot.
func TestConfigSetAppendOnly(t *testing.T) {
	for _, killDuringBase := range []bool{false, true} {
		t.Run(fmt.Sprintf("killed during the base %v", killDuringBase), func(t *testing.T) {
			dir := t.TempDir()
			srv := openPersist(t, dir, func(c *Config) { c.AppendOnly = false })
			s := newSession(srv, nil, false)
			for i := 0; i < 1000; i++ {
				pexec(s, "SET", "saved"+strconv.Itoa(i), "v")
			}
			if rep := pexec(s, "SAVE"); rep != "+OK\r\n" {
				t.Fatalf("SAVE: %q", rep)
			}
			saved := describeServer(srv)
			for i := 0; i < 1000; i++ {
				pexec(s, "SET", "k"+strconv.Itoa(i), "old")
				pexec(s, "HSET", "h"+strconv.Itoa(i%50), "f"+strconv.Itoa(i), "old")
			}
			paused, resume := make(chan struct{}), make(chan struct{})
			var once sync.Once
			srv.persist.dumpHook = func(db, shard int) {
				if db == 0 && shard == keyspace.NumShards/2 {
					once.Do(func() {
						close(paused)
						<-resume
					})
				}
			}
			reply := make(chan string, 1)
			go func() { reply <- pexec(s, "CONFIG", "SET", "appendonly", "yes") }()
			<-paused
			s2 := newSession(srv, nil, false)
			info := pexec(s2, "INFO", "persistence")
			for _, f := range []string{"aof_enabled:1", "aof_rewrite_in_progress:1"} {
				if !strings.Contains(info, f+"\r\n") {
					t.Errorf("INFO while the base is written has no %s:\n%s", f, info)
				}
			}
			for i := 0; i < 1000; i += 3 {
				pexec(s2, "SET", "k"+strconv.Itoa(i), "during")
				pexec(s2, "HDEL", "h"+strconv.Itoa(i%50), "f"+strconv.Itoa(i))
				pexec(s2, "SET", "new"+strconv.Itoa(i), "during")
			}
			if killDuringBase {
				killed := copyFiles(t, dir)
				close(resume)
				<-reply
				srv2 := openPersist(t, killed, func(c *Config) { c.AppendOnly = false })
				if got := describeServer(srv2); got != saved {
					t.Errorf("a start after a kill during the base is not the last snapshot:\n%s", diffLines(got, saved))
				}
				if _, err := os.Stat(filepath.Join(killed, switchName)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the switch file is still there after the start: %v", err)
				}
				return
			}
			close(resume)
			if rep := <-reply; rep != "+OK\r\n" {
				t.Fatalf("CONFIG SET appendonly yes: %q", rep)
			}
			for i := 1; i < 1000; i += 3 {
				pexec(s2, "SET", "k"+strconv.Itoa(i), "after")
				pexec(s2, "DEL", "h"+strconv.Itoa(i%50))
			}
			info = pexec(s2, "INFO", "persistence")
			for _, f := range []string{"aof_enabled:1", "aof_rewrite_in_progress:0", "aof_rewrites:1"} {
				if !strings.Contains(info, f+"\r\n") {
					t.Errorf("INFO after the switch has no %s:\n%s", f, info)
				}
			}
			want := describeServer(srv)
			crash(srv)
			srv2 := openPersist(t, dir, func(c *Config) { c.AppendOnly = false })
			if got := describeServer(srv2); got != want {
				t.Errorf("the restart lost writes:\n%s", diffLines(got, want))
			}
		})
	}
}
