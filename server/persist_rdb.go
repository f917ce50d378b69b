package server

import (
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/recached/recached/server/keyspace"
	"github.com/recached/recached/snapshot"
	"github.com/recached/recached/snapshot/rdb"
)

// rdbSink writes a save's point-in-time image a second time, as a Redis
// RDB file (--snapshot-format rdb), so that redis-server can start on a
// file recached wrote. recached's own snapshot and log stay what a restart
// loads. The save's locking (snapState) guards it.
type rdbSink struct {
	path, tmp string
	f         *os.File
	w         *rdb.Writer
	db        int
	// sizes, when set, are each database's key and expiry counts, which
	// RESIZEDB announces so that a loader sizes its tables once.
	sizes [][2]uint64
}

// rdbPath is where a save in RDB format writes: --dbfilename, relative to
// the data directory unless absolute, by default dump.rdb.
func rdbPath(dir string, cfg Config) string {
	name := cfg.DBFilename
	if name == "" {
		name = "dump.rdb"
	}
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(dir, name)
}

// newRDBSink starts the RDB file at path (a temporary name until commit).
func newRDBSink(path string) (*rdbSink, error) {
	tmp := path + ".tmp-" + strconv.Itoa(os.Getpid())
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	r := &rdbSink{path: path, tmp: tmp, f: f, db: -1}
	r.w = rdb.NewWriter(f, time.Now().Unix(), [2]string{"aof-base", "0"})
	return r, nil
}

// functions writes the function libraries; the caller holds every shard
// lock, under which alone they change.
func (r *rdbSink) functions(libs []*luaLibrary) error {
	for _, l := range libs {
		if err := r.w.Function(l.code); err != nil {
			return err
		}
	}
	return nil
}

func (r *rdbSink) selectDB(db int) error {
	if db == r.db {
		return nil
	}
	r.db = db
	if db < len(r.sizes) {
		return r.w.SelectDB(db, r.sizes[db][0], r.sizes[db][1])
	}
	return r.w.SelectDB(db, 0, 0)
}

// key writes one key of database db. JSON documents and rate limiters,
// which RDB has no type for, are AUX fields that redis-server ignores and
// a recached replica loads (snapshot/rdb/extras.go).
func (r *rdbSink) key(db int, key []byte, e *keyspace.Entry, exp int64) error {
	if err := r.selectDB(db); err != nil {
		return err
	}
	return r.w.Key(key, e, exp)
}

// raw writes a record rdbRecord made.
func (r *rdbSink) raw(db int, rec []byte) error {
	if err := r.selectDB(db); err != nil {
		return err
	}
	return r.w.Raw(rec)
}

// rdbRecord encodes a key's pre-image for the RDB file.
func rdbRecord(key []byte, e *keyspace.Entry, exp int64) ([]byte, error) {
	return rdb.AppendRecord(nil, key, e, exp)
}

// commit ends the file, fsyncs it and renames it into place.
func (r *rdbSink) commit() error {
	err := r.w.Close()
	if err == nil {
		err = r.f.Sync()
	}
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	r.f = nil
	if err == nil {
		err = os.Rename(r.tmp, r.path)
	}
	if err != nil {
		r.abort()
		return err
	}
	return snapshot.SyncDir(filepath.Dir(r.path))
}

// abort removes the unfinished file.
func (r *rdbSink) abort() {
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
	os.Remove(r.tmp)
}
