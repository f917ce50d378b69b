package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/keyspace"
	"github.com/recached/recached/snapshot"
	"github.com/recached/recached/snapshot/rdb"
)

// runImport is "recached import [--dir DIR] FILE.rdb": it loads a Redis
// RDB file into an empty data directory, as a start with --dbfilename
// does, and saves it as recached's snapshot there.
func runImport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("recached import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", ".", "data directory to create the snapshot in (must hold no recached snapshot or log)")
	dbs := fs.Int("databases", 16, "number of databases")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: recached import [--dir DIR] FILE.rdb\n\nConverts a Redis RDB file into a recached snapshot in DIR.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	file, ok := oneFile(fs, args)
	if !ok {
		return 2
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if _, err := os.Stat(abs); err != nil {
		fmt.Fprintf(stderr, "recached import: %v\n", err)
		return 1
	}
	srv := server.New(server.Config{Dir: *dir, DBFilename: abs, Databases: *dbs, AppendOnly: true, AppendFsync: "everysec", Save: ""})
	if err := srv.OpenPersistence(); err != nil {
		fmt.Fprintf(stderr, "recached import: %v\n", err)
		return 1
	}
	n := keys(srv.Keyspace())
	imported := srv.LoadedRDB() != ""
	if err := srv.ClosePersistence(); err != nil {
		fmt.Fprintf(stderr, "recached import: %v\n", err)
		return 1
	}
	if !imported {
		fmt.Fprintf(stderr, "recached import: %s holds a recached snapshot or log already; nothing imported\n", *dir)
		return 1
	}
	fmt.Fprintf(stdout, "imported %d keys from %s into %s\n", n, file, *dir)
	return 0
}

// runExport is "recached export [--dir DIR] FILE": it loads the data
// directory (snapshot and logs) and writes every key and function library
// as a Redis RDB file (version 10), which redis-server 7.0 starts on.
// Values RDB has no type for (JSON documents, rate limiters) are AUX
// fields, which redis-server ignores and recached import loads.
func runExport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("recached export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", ".", "data directory to read")
	dbs := fs.Int("databases", 16, "number of databases")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: recached export [--dir DIR] FILE\n\nWrites the data of DIR as a Redis RDB file.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	file, ok := oneFile(fs, args)
	if !ok {
		return 2
	}
	if !hasRecachedData(*dir) {
		// Opening it would start the directory on a Redis dump.rdb there.
		fmt.Fprintf(stderr, "recached export: %s holds no recached snapshot or log\n", *dir)
		return 1
	}
	srv := server.New(server.Config{Dir: *dir, Databases: *dbs, AppendOnly: false, Save: ""})
	if err := srv.OpenPersistence(); err != nil {
		fmt.Fprintf(stderr, "recached export: %v\n", err)
		return 1
	}
	defer srv.ClosePersistence()
	written, err := writeRDB(file, srv.Keyspace(), srv.LibraryCodes())
	if err != nil {
		fmt.Fprintf(stderr, "recached export: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "exported %d keys to %s\n", written, file)
	return 0
}

// writeRDB writes ks and the libraries to path through a temporary file
// renamed into place.
func writeRDB(path string, ks *keyspace.Keyspace, libs []string) (written int64, err error) {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp)
	w := rdb.NewWriter(f, time.Now().Unix())
	for _, code := range libs {
		w.Function(code)
	}
	for i, db := range ks.DBs {
		var n, exp uint64
		for s := 0; s < keyspace.NumShards; s++ {
			n += uint64(db.Len(s))
			exp += uint64(db.Expires(s))
		}
		if n == 0 {
			continue
		}
		if err := w.SelectDB(i, n, exp); err != nil {
			break
		}
		for s := 0; s < keyspace.NumShards && err == nil; s++ {
			db.Range(s, func(k string, e *keyspace.Entry) bool {
				at, _ := db.Expiry([]byte(k))
				if err = w.Key([]byte(k), e, at); err != nil {
					return false
				}
				written++
				return true
			})
		}
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	return written, err
}

// keys counts the keys of every database.
func keys(ks *keyspace.Keyspace) int64 {
	var n int64
	for _, db := range ks.DBs {
		for s := 0; s < keyspace.NumShards; s++ {
			n += int64(db.Len(s))
		}
	}
	return n
}

// oneFile parses flags around exactly one file argument.
func oneFile(fs *flag.FlagSet, args []string) (string, bool) {
	var files []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return "", false
		}
		args = fs.Args()
		if len(args) > 0 {
			files = append(files, args[0])
			args = args[1:]
		}
	}
	if len(files) != 1 {
		fs.Usage()
		return "", false
	}
	return files[0], true
}

// hasRecachedData reports whether dir holds a recached snapshot or log.
func hasRecachedData(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if _, ok := snapshot.ParseLogName(e.Name()); ok || e.Name() == snapshot.SnapshotName {
			return true
		}
	}
	return false
}
