package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recached/recached/server/keyspace"
	"github.com/recached/recached/snapshot"
)

// openPersist starts an engine with persistence in dir (no network).
func openPersist(t *testing.T, dir string, mod func(*Config)) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Dir = dir
	cfg.Save = ""
	cfg.AppendFsync = "always"
	if mod != nil {
		mod(&cfg)
	}
	srv := New(cfg)
	if err := srv.OpenPersistence(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { crash(srv) })
	return srv
}

// crash abandons a server as kill -9 would, keeping only what reached the
// files: it stops the background work and releases the directory lock.
func crash(srv *Server) {
	p := srv.persist
	if !p.open {
		return
	}
	p.open = false
	close(p.stop)
	p.wg.Wait()
	p.unlock()
}

// pexec runs one command on s, commits the log like a transport does, and
// returns the reply.
func pexec(s *Session, args ...string) string {
	s.Exec(toArgs(args...))
	s.srv.Commit()
	out := string(s.W.B)
	s.W.B = s.W.B[:0]
	return out
}

// describeServer renders every database canonically, one line per key.
func describeServer(srv *Server) string {
	var lines []string
	for dbi, db := range srv.ks.DBs {
		for i := 0; i < keyspace.NumShards; i++ {
			db.Range(i, func(k string, e *keyspace.Entry) bool {
				exp, _ := db.Expiry([]byte(k))
				lines = append(lines, fmt.Sprintf("db%d %q %s exp=%d %s", dbi, k, e.Type(), exp, describeEntry(e)))
				return true
			})
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func describeEntry(e *keyspace.Entry) string {
	var parts []string
	switch o := e.Obj.(type) {
	case nil:
		return fmt.Sprintf("%q", e.Str)
	case interface {
		Range(func(m []byte, score float64) bool)
	}:
		o.Range(func(m []byte, s float64) bool { parts = append(parts, fmt.Sprintf("%q:%v", m, s)); return true })
		return fmt.Sprint(parts)
	case interface{ Range(func(f, v []byte) bool) }:
		o.Range(func(f, v []byte) bool { parts = append(parts, fmt.Sprintf("%q=%q", f, v)); return true })
	case interface{ Range(func(v []byte) bool) }:
		o.Range(func(v []byte) bool { parts = append(parts, fmt.Sprintf("%q", v)); return true })
		if e.Type() == keyspace.TypeList {
			return fmt.Sprint(parts)
		}
	}
	sort.Strings(parts)
	return fmt.Sprint(parts)
}

// describeMarks renders the DEDUP marks without their times.
func describeMarks(srv *Server) string {
	var out []string
	for _, m := range srv.dedup.Marks() {
		out = append(out, fmt.Sprintf("%s=%d", m.ClientID, m.High))
	}
	return strings.Join(out, " ")
}

// workload is a mix of writes over every type, databases and expiry.
var workload = [][]string{
	{"SET", "str", "v1"}, {"APPEND", "str", "+more"}, {"INCR", "counter"}, {"INCRBY", "counter", "41"},
	{"SET", "ttl", "x", "PX", "1000000"}, {"EXPIRE", "str", "5000"}, {"PERSIST", "str"},
	{"HSET", "h", "a", "1", "b", "2", "c", "3"}, {"HDEL", "h", "b"}, {"HINCRBY", "h", "a", "10"},
	{"SADD", "s", "x", "y", "z", "1", "2"}, {"SREM", "s", "y"}, {"SPOP", "s"},
	{"ZADD", "z", "1", "one", "2", "two", "3.5", "three"}, {"ZINCRBY", "z", "10", "one"}, {"ZREM", "z", "two"},
	{"RPUSH", "l", "a", "b", "c", "d"}, {"LPUSH", "l", "z"}, {"LPOP", "l"}, {"RPOP", "l"}, {"LSET", "l", "0", "A"},
	{"LINSERT", "l", "BEFORE", "c", "bb"}, {"RPUSH", "l2", "x", "y"}, {"LMOVE", "l2", "l", "LEFT", "RIGHT"}, {"LTRIM", "l", "0", "2"},
	{"SELECT", "3"}, {"SET", "in3", "three"}, {"HSET", "h3", "f", "v"}, {"SELECT", "0"},
	{"MULTI"}, {"SET", "tx1", "a"}, {"SET", "tx2", "b"}, {"DEL", "tx1"}, {"EXEC"},
	{"RENAME", "tx2", "renamed"}, {"COPY", "h", "hcopy", "DB", "5"}, {"MOVE", "renamed", "6"},
	{"SET", "gone", "1"}, {"DEL", "gone"},
	{"SELECT", "7"}, {"SET", "a7", "1"}, {"FLUSHDB"}, {"SET", "b7", "2"}, {"SELECT", "0"},
	{"SWAPDB", "3", "4"},
	{"DEDUP", "client-a", "5", "SET", "dd", "1"}, {"DEDUP", "client-a", "6", "GET", "dd"},
	{"DEDUP", "client-b", "1", "HSET", "h", "dd", "1"},
}

func runWorkload(t *testing.T, s *Session, from, to int) {
	t.Helper()
	for _, cmd := range workload[from:to] {
		if rep := pexec(s, cmd...); strings.HasPrefix(rep, "-") {
			t.Fatalf("%q: %s", cmd, rep)
		}
	}
}

func TestPersistReplayAndSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name   string
		saveAt int // run SAVE after this many workload commands; -1 never
		fsync  string
	}{
		{"log only", -1, "always"},
		{"snapshot only", len(workload), "everysec"},
		{"snapshot then log", 12, "no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			srv := openPersist(t, dir, func(c *Config) { c.AppendFsync = tc.fsync })
			s := newSession(srv, nil, false)
			if tc.saveAt < 0 {
				runWorkload(t, s, 0, len(workload))
			} else {
				runWorkload(t, s, 0, tc.saveAt)
				if rep := pexec(s, "SAVE"); rep != "+OK\r\n" {
					t.Fatalf("SAVE: %q", rep)
				}
				runWorkload(t, s, tc.saveAt, len(workload))
			}
			pexec(s, "SET", "last", "1")
			want, wantMarks := describeServer(srv), describeMarks(srv)
			_ = srv.persist.log.Load().SyncNow()
			crash(srv)
			srv2 := openPersist(t, dir, nil)
			if got := describeServer(srv2); got != want {
				t.Errorf("after restart:\n%s\nwant\n%s", got, want)
			}
			if got := describeMarks(srv2); got != wantMarks || got == "" {
				t.Errorf("marks %q, want %q", got, wantMarks)
			}
			// A replayed DEDUP write is refused: the mark came back.
			s2 := newSession(srv2, nil, false)
			if rep := pexec(s2, "DEDUP", "client-a", "5", "SET", "dd", "again"); rep != "+DUP\r\n" {
				t.Errorf("replayed DEDUP: %q", rep)
			}
		})
	}
}

// TestPointInTime pauses a save half way through its shards, changes keys
// on both sides of the pause with every kind of write, and checks that the
// snapshot holds the state of the instant the save started while the log
// holds everything after it.
func TestPointInTime(t *testing.T) {
	dir := t.TempDir()
	srv := openPersist(t, dir, nil)
	s := newSession(srv, nil, false)
	for i := 0; i < 2000; i++ {
		pexec(s, "SET", "k"+strconv.Itoa(i), "old"+strconv.Itoa(i))
	}
	for i := 0; i < 50; i++ {
		pexec(s, "HSET", "h"+strconv.Itoa(i), "f", "old")
	}
	pexec(s, "SELECT", "1")
	pexec(s, "SET", "db1key", "old")
	pexec(s, "SELECT", "2")
	pexec(s, "SET", "db2key", "old")
	pexec(s, "SELECT", "0")
	before := describeServer(srv)

	// The save pauses half way. The rewrite scheduled during the pause
	// starts once the save has finished, and its own snapshot replaces the
	// save's: as the rewrite starts its first shard, the save's file is
	// copied for the check below.
	paused, resume := make(chan struct{}), make(chan struct{})
	var pauseOnce sync.Once // the rewrite dumps the same shard again
	var starts atomic.Int32
	saved := make(chan []byte, 1)
	srv.persist.dumpHook = func(db, shard int) {
		if db == 0 && shard == keyspace.NumShards-1 && starts.Add(1) == 2 {
			b, err := os.ReadFile(filepath.Join(dir, snapshot.SnapshotName))
			if err != nil {
				t.Error(err)
			}
			saved <- b
		}
		if db == 0 && shard == keyspace.NumShards/2 {
			pauseOnce.Do(func() {
				close(paused)
				<-resume
			})
		}
	}
	if rep := pexec(s, "BGSAVE"); rep != "+Background saving started\r\n" {
		t.Fatalf("BGSAVE: %q", rep)
	}
	<-paused
	for _, cmd := range [][]string{
		{"BGSAVE"}, {"SAVE"}, {"BGREWRITEAOF"},
	} {
		want := map[string]string{
			"BGSAVE":       "-ERR Background save already in progress\r\n",
			"SAVE":         "-ERR Background save already in progress\r\n",
			"BGREWRITEAOF": "+Background append only file rewriting scheduled\r\n",
		}[cmd[0]]
		if rep := pexec(s, cmd...); rep != want {
			t.Errorf("%s during a save: %q, want %q", cmd[0], rep, want)
		}
	}
	if info := pexec(s, "INFO", "persistence"); !strings.Contains(info, "rdb_bgsave_in_progress:1") || !strings.Contains(info, "aof_rewrite_scheduled:1") {
		t.Errorf("INFO during a save:\n%s", info)
	}
	for i := 0; i < 2000; i += 3 {
		pexec(s, "SET", "k"+strconv.Itoa(i), "new")
	}
	for i := 1; i < 2000; i += 7 {
		pexec(s, "DEL", "k"+strconv.Itoa(i))
	}
	for i := 0; i < 50; i++ {
		pexec(s, "HSET", "h"+strconv.Itoa(i), "f", "new", "g", "added")
		pexec(s, "SET", "created"+strconv.Itoa(i), "new")
	}
	pexec(s, "RENAME", "k2", "renamed")
	pexec(s, "COPY", "h1", "copied", "DB", "2")
	pexec(s, "MULTI")
	pexec(s, "SET", "k5", "tx")
	pexec(s, "SELECT", "1")
	pexec(s, "FLUSHDB")
	pexec(s, "EXEC")
	pexec(s, "SELECT", "0")
	pexec(s, "SWAPDB", "0", "3")
	pexec(s, "SWAPDB", "0", "3")
	after := describeServer(srv)
	close(resume)
	var b []byte
	select {
	case b = <-saved:
	case <-time.After(20 * time.Second):
		t.Fatal("the scheduled rewrite did not start")
	}
	waitSaved(t, srv)

	path := filepath.Join(t.TempDir(), "bgsave.rcd")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	image := keyspace.New(len(srv.ks.DBs), nil)
	if _, _, _, err := snapshot.Load(path, image, nil, 0, false); err != nil {
		t.Fatal(err)
	}
	if got := describeServer(&Server{ks: image}); got != before {
		t.Errorf("the snapshot is not the state at the start of the save:\n%s", diffLines(got, before))
	}
	crash(srv)
	srv2 := openPersist(t, dir, nil)
	if got := describeServer(srv2); got != after {
		t.Errorf("snapshot + log is not the state at the crash:\n%s", diffLines(got, after))
	}
}

// diffLines lists the lines only in a and only in b.
func diffLines(a, b string) string {
	in := map[string]int{}
	for _, l := range strings.Split(a, "\n") {
		in[l]++
	}
	for _, l := range strings.Split(b, "\n") {
		in[l]--
	}
	var out []string
	for l, n := range in {
		if n > 0 {
			out = append(out, "+ "+l)
		} else if n < 0 {
			out = append(out, "- "+l)
		}
	}
	sort.Strings(out)
	if len(out) > 20 {
		out = append(out[:20], fmt.Sprintf("… %d more", len(out)-20))
	}
	return strings.Join(out, "\n")
}

// waitSaved waits until no save runs (a scheduled one may start after).
func waitSaved(t *testing.T, srv *Server) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for srv.persist.kind.Load() != saveNone {
		if time.Now().After(deadline) {
			t.Fatal("save did not finish")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func logFiles(t *testing.T, dir string) []string {
	t.Helper()
	logs, err := listLogs(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range logs {
		names = append(names, filepath.Base(l.path))
	}
	return names
}

func TestGenerations(t *testing.T) {
	dir := t.TempDir()
	srv := openPersist(t, dir, nil)
	s := newSession(srv, nil, false)
	pexec(s, "SET", "a", "1")
	if got := fmt.Sprint(logFiles(t, dir)); got != "[appendonly.0.aof]" {
		t.Fatalf("logs %s", got)
	}
	log0, _ := os.ReadFile(filepath.Join(dir, snapshot.LogName(0)))
	if rep := pexec(s, "BGREWRITEAOF"); rep != "+Background append only file rewriting started\r\n" {
		t.Fatalf("BGREWRITEAOF: %q", rep)
	}
	waitSaved(t, srv)
	pexec(s, "SET", "b", "2")
	if got := fmt.Sprint(logFiles(t, dir)); got != "[appendonly.1.aof]" {
		t.Fatalf("after the rewrite: logs %s", got)
	}
	if info := pexec(s, "INFO", "persistence"); !strings.Contains(info, "aof_rewrites:1") || !strings.Contains(info, "aof_last_bgrewrite_status:ok") {
		t.Errorf("INFO:\n%s", info)
	}
	crash(srv)

	// A crash between the new log's creation and the snapshot's rename
	// leaves the old snapshot (none here) and both logs: both replay.
	if err := os.Remove(filepath.Join(dir, snapshot.SnapshotName)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, snapshot.LogName(0)), log0, 0o644); err != nil {
		t.Fatal(err)
	}
	srv2 := openPersist(t, dir, nil)
	if got := describeServer(srv2); got != `db0 "a" string exp=0 "1"`+"\n"+`db0 "b" string exp=0 "2"` {
		t.Errorf("after replaying two generations:\n%s", got)
	}
	crash(srv2)

	// A missing generation stops the start.
	if err := os.Rename(filepath.Join(dir, snapshot.LogName(1)), filepath.Join(dir, snapshot.LogName(2))); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Dir = dir
	if err := New(cfg).OpenPersistence(); err == nil || !strings.Contains(err.Error(), "generation 1 is missing") {
		t.Errorf("gap: %v", err)
	}
}

func TestDamagedLog(t *testing.T) {
	dir := t.TempDir()
	srv := openPersist(t, dir, nil)
	s := newSession(srv, nil, false)
	for i := 0; i < 10; i++ {
		pexec(s, "SET", "k"+strconv.Itoa(i), strings.Repeat("v", 100))
	}
	crash(srv)
	path := filepath.Join(dir, snapshot.LogName(0))
	good, _ := os.ReadFile(path)

	// A torn last record is cut off: nine keys remain, and new writes
	// append after the cut.
	if err := os.WriteFile(path, good[:len(good)-20], 0o644); err != nil {
		t.Fatal(err)
	}
	srv2 := openPersist(t, dir, nil)
	if n := strings.Count(describeServer(srv2), "\n") + 1; n != 9 {
		t.Errorf("%d keys after a torn tail", n)
	}
	pexec(newSession(srv2, nil, false), "SET", "next", "1")
	crash(srv2)
	srv3 := openPersist(t, dir, nil)
	if n := strings.Count(describeServer(srv3), "\n") + 1; n != 10 {
		t.Errorf("%d keys after writing past the cut", n)
	}
	crash(srv3)

	// Damage in the middle stops the start with the file and offset.
	bad := append([]byte(nil), good...)
	bad[len(bad)/2] ^= 0x55
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Dir = dir
	err := New(cfg).OpenPersistence()
	if !snapshot.IsCorrupt(err) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "byte offset") {
		t.Errorf("damaged log: %v", err)
	}
	// So does a damaged snapshot.
	os.Remove(path)
	if err := os.WriteFile(filepath.Join(dir, snapshot.SnapshotName), []byte("RECACHED-SNAPSHOT\nnope"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := New(cfg).OpenPersistence(); !snapshot.IsCorrupt(err) {
		t.Errorf("damaged snapshot: %v", err)
	}
}

func TestExpiryAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	srv := openPersist(t, dir, nil)
	s := newSession(srv, nil, false)
	soon := strconv.FormatInt(time.Now().UnixMilli()+200, 10)
	pexec(s, "SET", "expires", "v", "PXAT", soon)
	pexec(s, "SET", "persisted", "v", "PXAT", soon)
	pexec(s, "SET", "plain", "v")
	pexec(s, "SAVE")
	// PERSIST after the snapshot, before the expiry: the key must live
	// even though the snapshot's expiry has passed by the restart.
	pexec(s, "PERSIST", "persisted")
	crash(srv)
	time.Sleep(300 * time.Millisecond)
	srv2 := openPersist(t, dir, nil)
	want := `db0 "persisted" string exp=0 "v"` + "\n" + `db0 "plain" string exp=0 "v"`
	if got := describeServer(srv2); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if info := pexec(newSession(srv2, nil, false), "INFO", "persistence"); !strings.Contains(info, "rdb_last_load_keys_expired:1") {
		t.Errorf("INFO:\n%s", info)
	}
}

func TestSaveRulesAndAutoRewrite(t *testing.T) {
	dir := t.TempDir()
	srv := openPersist(t, dir, func(c *Config) { c.Save = "1 3" })
	p := srv.persist
	s := newSession(srv, nil, false)
	pexec(s, "SET", "a", "1")
	pexec(s, "SET", "b", "1")
	now := time.Now().Unix() + 10
	p.cron(now)
	waitSaved(t, srv)
	if _, err := os.Stat(filepath.Join(dir, snapshot.SnapshotName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("saved after 2 changes with the rule 1 3: %v", err)
	}
	pexec(s, "SET", "c", "1")
	p.cron(now)
	waitSaved(t, srv)
	if _, err := os.Stat(filepath.Join(dir, snapshot.SnapshotName)); err != nil {
		t.Fatalf("not saved after 3 changes: %v", err)
	}
	if d := srv.dirty.Load(); d != 0 {
		t.Errorf("dirty %d after the save", d)
	}
	if last := pexec(s, "LASTSAVE"); last == ":0\r\n" || !strings.HasPrefix(last, ":") {
		t.Errorf("LASTSAVE %q", last)
	}

	p.rewriteMin = 4096
	gen := p.gen.Load()
	for i := 0; i < 100; i++ {
		pexec(s, "SET", "k"+strconv.Itoa(i), strings.Repeat("x", 100))
	}
	p.cron(time.Now().Unix())
	waitSaved(t, srv)
	if p.gen.Load() != gen+1 || p.rewrites.Load() != 1 {
		t.Errorf("generation %d → %d, rewrites %d", gen, p.gen.Load(), p.rewrites.Load())
	}
	if got := fmt.Sprint(logFiles(t, dir)); got != fmt.Sprintf("[appendonly.%d.aof]", gen+1) {
		t.Errorf("logs %s", got)
	}
}

func TestPersistCommands(t *testing.T) {
	dir := t.TempDir()
	srv := openPersist(t, dir, func(c *Config) { c.AppendOnly = false })
	s := newSession(srv, nil, false)
	for _, tc := range []struct{ cmd, want string }{
		{"SAVE", "+OK\r\n"},
		{"BGSAVE x", "-ERR syntax error\r\n"},
		{"BGSAVE SCHEDULE extra", "-ERR syntax error\r\n"},
		{"SAVE x", "-ERR wrong number of arguments for 'save' command\r\n"},
		{"MULTI", "+OK\r\n"},
		{"SAVE", "-ERR Command not allowed inside a transaction\r\n"},
		{"SHUTDOWN", "-ERR Command not allowed inside a transaction\r\n"},
		{"EXEC", "-EXECABORT Transaction discarded because of previous errors.\r\n"},
		{"SHUTDOWN NOSAVE SAVE", "-ERR syntax error\r\n"},
		{"SHUTDOWN ABORT NOW", "-ERR syntax error\r\n"},
		{"SHUTDOWN ABORT", "-ERR No shutdown in progress.\r\n"},
		{"SHUTDOWN BOGUS", "-ERR syntax error\r\n"},
	} {
		if rep := pexec(s, strings.Fields(tc.cmd)...); rep != tc.want {
			t.Errorf("%s: %q, want %q", tc.cmd, rep, tc.want)
		}
	}
	info := pexec(s, "INFO", "persistence")
	for _, f := range []string{"rdb_changes_since_last_save:0", "rdb_bgsave_in_progress:0", "rdb_last_bgsave_status:ok", "aof_enabled:0", "aof_rewrite_in_progress:0", "aof_last_write_status:ok", "rdb_saves:1"} {
		if !strings.Contains(info, f+"\r\n") {
			t.Errorf("INFO lacks %s:\n%s", f, info)
		}
	}
	// SHUTDOWN NOSAVE: no final snapshot.
	pexec(s, "SET", "unsaved", "1")
	pexec(s, "SHUTDOWN", "NOSAVE")
	if err := srv.ClosePersistence(); err != nil {
		t.Fatal(err)
	}
	srv2 := openPersist(t, dir, func(c *Config) { c.AppendOnly = false })
	if strings.Contains(describeServer(srv2), "unsaved") {
		t.Error("SHUTDOWN NOSAVE saved")
	}
	s2 := newSession(srv2, nil, false)
	pexec(s2, "SET", "saved", "1")
	pexec(s2, "SHUTDOWN", "SAVE")
	if err := srv2.ClosePersistence(); err != nil {
		t.Fatal(err)
	}
	srv3 := openPersist(t, dir, nil)
	if !strings.Contains(describeServer(srv3), "saved") {
		t.Error("the shutdown snapshot is missing")
	}
}

// TestConcurrentWritesDuringSaves runs writers on several sessions while
// saves and rewrites run back to back, then checks that a restart sees
// exactly the final state.
func TestConcurrentWritesDuringSaves(t *testing.T) {
	dir := t.TempDir()
	srv := openPersist(t, dir, func(c *Config) { c.AppendFsync = "everysec" })
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := newSession(srv, nil, false)
			for i := 0; i < 6000; i++ {
				k := fmt.Sprintf("w%d:%d", w, i%300)
				switch i % 5 {
				case 0:
					pexec(s, "SET", k, strconv.Itoa(i))
				case 1:
					pexec(s, "HSET", "h"+k, "f", strconv.Itoa(i))
				case 2:
					pexec(s, "SADD", "s"+k, strconv.Itoa(i))
				case 3:
					pexec(s, "DEL", k)
				case 4:
					pexec(s, "ZADD", "z"+k, strconv.Itoa(i), "m")
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(done)
	}()
	saver := newSession(srv, nil, false)
	saves := 0
	for running := true; running; saves++ {
		select {
		case <-done:
			running = false
		default:
		}
		if saves%2 == 0 {
			pexec(saver, "BGSAVE")
		} else {
			pexec(saver, "BGREWRITEAOF")
		}
		waitSaved(t, srv)
	}
	t.Logf("%d saves during the writes", saves)
	waitSaved(t, srv)
	want := describeServer(srv)
	if err := srv.persist.log.Load().SyncNow(); err != nil {
		t.Fatal(err)
	}
	crash(srv)
	srv2 := openPersist(t, dir, nil)
	if got := describeServer(srv2); got != want {
		t.Errorf("after restart:\n%s", diffLines(got, want))
	}
}
