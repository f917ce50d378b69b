package snapshot

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/recached/recached/server/keyspace"
)

// The fuzz targets feed arbitrary bytes to the readers: they must return
// an error or records, never panic, hang or allocate beyond the input's
// size. Seed corpora live in testdata/fuzz, so plain "go test" runs them.

// smallSnapshot is a seed: the fuzzing engine slows to a crawl on inputs of
// hundreds of kilobytes, so seeds stay small.
func smallSnapshot(f *testing.F) []byte {
	ks := keyspace.New(2, nil)
	ks.DBs[0].SetString([]byte("s"), []byte("v"), false)
	ks.DBs[0].SetExpiry([]byte("s"), farFuture)
	h := keyspace.NewHash()
	h.Set([]byte("f"), []byte("v"))
	ks.DBs[0].Set([]byte("h"), &keyspace.Entry{Obj: h})
	set := keyspace.NewSet()
	set.Add([]byte("1"), keyspace.SetMaxIntsetEntries)
	set.Add([]byte("m"), keyspace.SetMaxIntsetEntries)
	ks.DBs[1].Set([]byte("set"), &keyspace.Entry{Obj: set})
	z := keyspace.NewZSet()
	z.Add([]byte("m"), 1.5, keyspace.DefaultZLimits())
	ks.DBs[1].Set([]byte("z"), &keyspace.Entry{Obj: z})
	dir := f.TempDir()
	writeKeyspace(f, dir, ks, sampleMarks()[:1], Header{Generation: 1})
	b, err := os.ReadFile(filepath.Join(dir, SnapshotName))
	if err != nil {
		f.Fatal(err)
	}
	return b
}

func FuzzSnapshotReader(f *testing.F) {
	f.Add(smallSnapshot(f))
	f.Add(historySnapshot(f))
	f.Add(functionSnapshot(f))
	f.Add([]byte(SnapshotMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := NewReader("fuzz.rcd", bytes.NewReader(b), int64(len(b)))
		checkReads(t, b, err, func() error {
			_, err := r.Next()
			return err
		})
	})
}

// checkReads checks a reader of the fuzzed bytes b, whose opening returned
// err: an error must be a CorruptError; otherwise next, which reads one
// record, must end with io.EOF or a CorruptError before it has read more
// records than b has bytes.
func checkReads(t *testing.T, b []byte, err error, next func() error) {
	t.Helper()
	if err != nil {
		if !IsCorrupt(err) {
			t.Fatalf("header error is not a CorruptError: %v", err)
		}
		return
	}
	for i := 0; ; i++ {
		if i > len(b) {
			t.Fatal("more records than bytes")
		}
		if err := next(); err != nil {
			if err != io.EOF && !IsCorrupt(err) {
				t.Fatalf("error is not a CorruptError: %v", err)
			}
			return
		}
	}
}

func FuzzLogReader(f *testing.F) {
	b, _ := sampleLogBytes(300)
	f.Add(b)
	f.Add(appendLogHeader(nil, Header{Generation: 1}))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := NewLogReader("fuzz.aof", bytes.NewReader(b), int64(len(b)))
		checkReads(t, b, err, func() error {
			_, err := r.Next()
			return err
		})
	})
}

// FuzzLoad loads arbitrary snapshots into a keyspace.
func FuzzLoad(f *testing.F) {
	f.Add(smallSnapshot(f))
	f.Add(historySnapshot(f))
	f.Add(functionSnapshot(f))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), SnapshotName)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, _, _ = Load(path, keyspace.New(2, nil), nil, 0, false)
	})
}
