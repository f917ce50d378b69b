package server

import (
	"path/filepath"
	"strconv"
	"sync"
	"testing"

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
