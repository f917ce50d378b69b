package server

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recached/recached/server/keyspace"
	"github.com/recached/recached/snapshot/rdb"
)

// TestPointInTimeRDB: with --snapshot-format rdb, the RDB file a BGSAVE
// writes is the state at the start of the save, whatever the writes that
// run while it dumps (pre-images kept as RDB records too).
func TestPointInTimeRDB(t *testing.T) {
	dir := t.TempDir()
	srv := openPersist(t, dir, func(c *Config) { c.SnapshotFormat = "rdb" })
	s := newSession(srv, nil, false)
	for i := 0; i < 2000; i++ {
		pexec(s, "SET", "k"+strconv.Itoa(i), "old"+strconv.Itoa(i))
	}
	for i := 0; i < 50; i++ {
		pexec(s, "HSET", "h"+strconv.Itoa(i), "f", "old")
		pexec(s, "ZADD", "z"+strconv.Itoa(i), "1", "a")
	}
	pexec(s, "SELECT", "1")
	pexec(s, "SET", "db1key", "old")
	pexec(s, "SELECT", "0")
	before := describeServer(srv)

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
	if rep := pexec(s, "BGSAVE"); rep != "+Background saving started\r\n" {
		t.Fatalf("BGSAVE: %q", rep)
	}
	<-paused
	for i := 0; i < 2000; i += 3 {
		pexec(s, "SET", "k"+strconv.Itoa(i), "new")
	}
	for i := 1; i < 2000; i += 7 {
		pexec(s, "DEL", "k"+strconv.Itoa(i))
	}
	for i := 0; i < 50; i++ {
		pexec(s, "HSET", "h"+strconv.Itoa(i), "g", "added")
		pexec(s, "ZADD", "z"+strconv.Itoa(i), "2", "b")
		pexec(s, "SET", "created"+strconv.Itoa(i), "new")
	}
	pexec(s, "SELECT", "1")
	pexec(s, "FLUSHDB")
	pexec(s, "SELECT", "0")
	close(resume)
	waitSaved(t, srv)

	image := keyspace.New(len(srv.ks.DBs), nil)
	if _, err := rdb.Load(filepath.Join(dir, "dump.rdb"), image, 0, true); err != nil {
		t.Fatal(err)
	}
	if got := describeServer(&Server{ks: image}); got != before {
		t.Errorf("the RDB file is not the state at the start of the save:\n%s", diffLines(got, before))
	}
}

// writeTestRDB writes an RDB file of n string keys k0…k(n-1) and one
// function library.
func writeTestRDB(t *testing.T, path string, n int) {
	t.Helper()
	var buf bytes.Buffer
	w := rdb.NewWriter(&buf, time.Now().Unix())
	w.Function("#!lua name=baselib\nredis.register_function('basef', function() return 3 end)")
	w.SelectDB(0, uint64(n), 0)
	for i := 0; i < n; i++ {
		if err := w.Key([]byte("k"+strconv.Itoa(i)), &keyspace.Entry{Str: []byte("v" + strconv.Itoa(i))}, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRDBBaseCrash: a crash after a start on dump.rdb but before the
// first snapshot commits restarts on the RDB file plus the logged writes;
// once a snapshot commits, the directory needs the RDB file no more. The
// crash is a copy of the directory taken while the first save is held.
func TestRDBBaseCrash(t *testing.T) {
	dir := t.TempDir()
	writeTestRDB(t, filepath.Join(dir, "dump.rdb"), 100)
	cfg := DefaultConfig()
	cfg.Dir, cfg.Save, cfg.AppendFsync = dir, "", "always"
	srv := New(cfg)
	held, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	srv.persist.dumpHook = func(db, shard int) {
		once.Do(func() {
			close(held)
			<-resume
		})
	}
	if err := srv.OpenPersistence(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { crash(srv) })
	<-held
	s := newSession(srv, nil, false)
	pexec(s, "SET", "k1", "changed")
	pexec(s, "DEL", "k2")
	pexec(s, "SET", "new", "x")
	want := describeServer(srv)
	image := copyFiles(t, dir)
	if _, err := os.Stat(filepath.Join(image, rdbBaseName)); err != nil {
		t.Fatalf("no %s while the first save runs: %v", rdbBaseName, err)
	}
	close(resume)
	waitSaved(t, srv)
	crash(srv)

	srv = openPersist(t, image, nil)
	if got := describeServer(srv); got != want {
		t.Fatalf("after the crash:\n%s", diffLines(got, want))
	}
	s = newSession(srv, nil, false)
	if r := pexec(s, "FCALL", "basef", "0"); r != ":3\r\n" {
		t.Errorf("FCALL basef: %q", r)
	}
	waitSaved(t, srv)
	if _, err := os.Stat(filepath.Join(image, rdbBaseName)); !os.IsNotExist(err) {
		t.Fatalf("%s after the snapshot: %v", rdbBaseName, err)
	}
	crash(srv)
	os.Remove(filepath.Join(image, "dump.rdb"))
	srv = openPersist(t, image, nil)
	if got := describeServer(srv); got != want {
		t.Fatalf("from the snapshot:\n%s", diffLines(got, want))
	}
}

// restoredText renders a key for TestRestoreReplay: describeEntry, and
// for streams every counter, entry, group, consumer and pending entry
// (consumers' seen times and pending entries' delivery times aside: a
// replay sets the first anew, and the log's replay runs with the clock at
// 1 ms, to which XCLAIM ... TIME clamps the second).
func restoredText(e *keyspace.Entry) string {
	st, ok := e.Obj.(*keyspace.Stream)
	if !ok {
		return describeEntry(e)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "len=%d last=%s first=%s maxdel=%s added=%d", st.Len(), st.LastID, st.FirstID, st.MaxDeletedID, st.EntriesAdded)
	st.Range(keyspace.StreamID{}, keyspace.MaxStreamID, false, func(id keyspace.StreamID, fv [][]byte) bool {
		fmt.Fprintf(&b, " %s%q", id, fv)
		return true
	})
	for _, g := range st.Groups() {
		fmt.Fprintf(&b, " group %q %s %d", g.Name, g.LastID, g.EntriesRead)
		for _, c := range g.Consumers() {
			fmt.Fprintf(&b, " consumer %q", c.Name)
		}
		for _, n := range g.Pending() {
			fmt.Fprintf(&b, " pending %s %q %d", n.ID, n.Consumer.Name, n.DeliveryCount)
		}
	}
	return b.String()
}

// TestRestoreReplay: the effects of RESTORE re-create every type from the
// log after a crash, expiry included.
func TestRestoreReplay(t *testing.T) {
	l := keyspace.NewList(keyspace.ListMaxListpackSize)
	set := keyspace.NewSet()
	h := keyspace.NewHash()
	z := keyspace.NewZSet()
	for i := 0; i < 300; i++ {
		v := []byte(strconv.Itoa(i))
		l.PushBack(v)
		set.Add(v, keyspace.SetMaxIntsetEntries)
		h.Set(append([]byte("f"), v...), v)
		z.Add(v, float64(i)/3-7, keyspace.DefaultZLimits())
	}
	z.Add([]byte("inf"), math.Inf(1), keyspace.DefaultZLimits())
	st := keyspace.NewStream()
	for i := uint64(1); i <= 20; i++ {
		st.Append(keyspace.StreamID{Ms: i, Seq: 1}, [][]byte{[]byte("f"), []byte("v")}, 4096, 100)
	}
	st.Delete(keyspace.StreamID{Ms: 3, Seq: 1})
	st.MaxDeletedID = keyspace.StreamID{Ms: 3, Seq: 1}
	g := st.CreateGroup([]byte("g"), keyspace.StreamID{Ms: 5, Seq: 1}, 4)
	c := g.CreateConsumer([]byte("alice"), 1000)
	g.CreateConsumer([]byte("idle"), 1000)
	n := g.Claim(keyspace.StreamID{Ms: 2, Seq: 1}, nil, c)
	n.DeliveryTime, n.DeliveryCount = 12345, 3
	empty := keyspace.NewStream()
	empty.Append(keyspace.StreamID{Ms: 9, Seq: 9}, [][]byte{[]byte("a"), []byte("b")}, 4096, 100)
	empty.Delete(keyspace.StreamID{Ms: 9, Seq: 9})
	empty.MaxDeletedID = keyspace.StreamID{Ms: 9, Seq: 9}
	empty.FirstID = keyspace.StreamID{} // as XDEL of the last entry leaves it
	empty.CreateGroup([]byte("eg"), keyspace.StreamID{Ms: 9, Seq: 9}, 1)

	dir := t.TempDir()
	srv := openPersist(t, dir, nil)
	s := newSession(srv, nil, false)
	values := map[string]*keyspace.Entry{
		"s": {Str: []byte("hello")}, "l": {Obj: l}, "set": {Obj: set}, "h": {Obj: h}, "z": {Obj: z},
		"st": {Obj: st}, "empty": {Obj: empty},
	}
	for k, e := range values {
		p, err := rdb.Dump(e)
		if err != nil {
			t.Fatal(err)
		}
		if r := pexec(s, "RESTORE", k, "0", string(p), "REPLACE"); r != "+OK\r\n" {
			t.Fatalf("RESTORE %s: %q", k, r)
		}
	}
	p, _ := rdb.Dump(&keyspace.Entry{Str: []byte("ttl")})
	pexec(s, "RESTORE", "ttl", "100000", string(p))
	want := map[string]string{}
	for k := range values {
		want[k] = restoredText(srv.ks.DBs[0].Peek([]byte(k)))
	}
	wantExp, _ := srv.ks.DBs[0].Expiry([]byte("ttl"))
	crash(srv)
	srv = openPersist(t, dir, nil)
	for k, w := range want {
		e := srv.ks.DBs[0].Peek([]byte(k))
		if e == nil {
			t.Errorf("%s: missing after the replay", k)
			continue
		}
		if got := restoredText(e); got != w {
			t.Errorf("%s after the replay:\n got %s\nwant %s", k, got, w)
		}
	}
	if got, _ := srv.ks.DBs[0].Expiry([]byte("ttl")); got != wantExp || got == 0 {
		t.Errorf("ttl expires at %d after the replay, want %d", got, wantExp)
	}
}

// TestSaveLetsAllKeyCommandsThrough: a command that locks every shard
// (DBSIZE, right after a start on a Redis file whose keys the background
// save is writing) waits for the shard being dumped, not for the rest of
// the save. Walking the shards in lockAll's order, the save would take
// each next shard before DBSIZE got to it and DBSIZE would return only
// when the save was nearly done: most of the shards dumped while it ran.
func TestSaveLetsAllKeyCommandsThrough(t *testing.T) {
	dir := t.TempDir()
	writeTestRDB(t, filepath.Join(dir, "dump.rdb"), 64*3000)
	cfg := DefaultConfig()
	cfg.Dir, cfg.Save, cfg.AppendFsync = dir, "", "always"
	srv := New(cfg)
	var dumped, during atomic.Int64 // shards dumped, and while DBSIZE ran
	var inFlight atomic.Bool
	reply := make(chan string, 1)
	srv.persist.dumpHook = func(db, shard int) {
		if db != 0 {
			return
		}
		if inFlight.Load() {
			during.Add(1)
		}
		if dumped.Add(1) == 4 {
			// DBSIZE comes while the save goes on to the next shards.
			go func() {
				s := newSession(srv, nil, false)
				inFlight.Store(true)
				rep := pexec(s, "DBSIZE")
				inFlight.Store(false)
				reply <- rep
			}()
		}
	}
	if err := srv.OpenPersistence(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { crash(srv) })
	if rep := <-reply; rep != ":192000\r\n" {
		t.Fatalf("DBSIZE: %q", rep)
	}
	waitSaved(t, srv)
	if n := during.Load(); n > keyspace.NumShards/4 {
		t.Errorf("%d of the %d shards were dumped while DBSIZE waited", n, keyspace.NumShards)
	}
}
