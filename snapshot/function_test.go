package snapshot

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/recached/recached/server/keyspace"
)

var sampleLibs = []string{
	"#!lua name=a\nredis.register_function('fa', function() return 1 end)",
	"#!lua name=b\nredis.register_function('fb', function() return 2 end)",
}

// writeFunctionSnapshot saves one key, the libraries libs and, when hist
// is set, one history message.
func writeFunctionSnapshot(t testing.TB, dir string, libs []string, hist bool) {
	t.Helper()
	w, err := Create(dir, Header{Generation: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Key(0, []byte("k"), &keyspace.Entry{Str: []byte("v")}, 0); err != nil {
		t.Fatal(err)
	}
	if hist {
		if err := w.History(&History{Channel: []byte("c"), Time: 1, Payload: []byte("p")}); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range libs {
		if err := w.Function(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestFunctionSnapshotRoundTrip: function libraries written to a snapshot
// come back in order through LoadWith's Function hook, with or without
// history beside them; check counts them; a file without them has the end
// record of before they existed.
func TestFunctionSnapshotRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		name string
		libs []string
		hist bool
	}{
		{"libraries", sampleLibs, false},
		{"libraries and history", sampleLibs, true},
		{"none", nil, false},
		{"history only", nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFunctionSnapshot(t, dir, tt.libs, tt.hist)
			path := filepath.Join(dir, SnapshotName)
			var got []string
			_, loaded, _, err := LoadWith(path, keyspace.New(1, nil), Hooks{Function: func(code string) error { got = append(got, code); return nil }}, 0, false)
			if err != nil || loaded != 1 || !reflect.DeepEqual(got, tt.libs) {
				t.Fatalf("LoadWith: %d keys, libraries %q, %v; want 1, %q", loaded, got, err, tt.libs)
			}
			res, err := Check(path, false, &strings.Builder{})
			if err != nil || res.Functions != int64(len(tt.libs)) {
				t.Fatalf("Check: %d function libraries, %v", res.Functions, err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// The end record: 0x93 (three elements) without history or
			// libraries, 0x94 with history only, 0x95 with libraries.
			end := map[bool]byte{false: 0x93, true: 0x94}[tt.hist]
			if len(tt.libs) > 0 {
				end = 0x95
			}
			if !strings.Contains(string(b), string([]byte{end, 0x00})) {
				t.Fatalf("no end record 0x%x 0x00 in the file", end)
			}
		})
	}
}

// TestFunctionSnapshotHookError: a library the hook refuses stops the load
// with the file's name.
func TestFunctionSnapshotHookError(t *testing.T) {
	dir := t.TempDir()
	writeFunctionSnapshot(t, dir, sampleLibs, false)
	path := filepath.Join(dir, SnapshotName)
	refused := errors.New("refused")
	_, _, _, err := LoadWith(path, keyspace.New(1, nil), Hooks{Function: func(string) error { return refused }}, 0, false)
	if !errors.Is(err, refused) || !strings.Contains(err.Error(), path) {
		t.Fatalf("LoadWith: %v", err)
	}
}

// TestFunctionSnapshotDamage: any byte flipped in a snapshot with function
// libraries (a function record of the wrong shape, an end record whose
// function count does not match, a changed library) is corruption.
func TestFunctionSnapshotDamage(t *testing.T) {
	dir := t.TempDir()
	writeFunctionSnapshot(t, dir, sampleLibs, false)
	path := filepath.Join(dir, SnapshotName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b[len(SnapshotMagic) : len(b)-4] {
		c := append([]byte(nil), b...)
		c[len(SnapshotMagic)+i] ^= 0x01
		p := filepath.Join(t.TempDir(), SnapshotName)
		if err := os.WriteFile(p, c, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Check(p, false, &strings.Builder{})
		if err == nil || !IsCorrupt(err) {
			t.Fatalf("byte %d flipped: %v, want a CorruptError", len(SnapshotMagic)+i, err)
		}
	}
}

// functionSnapshot is a fuzz seed holding function libraries.
func functionSnapshot(f *testing.F) []byte {
	dir := f.TempDir()
	writeFunctionSnapshot(f, dir, sampleLibs, true)
	b, err := os.ReadFile(filepath.Join(dir, SnapshotName))
	if err != nil {
		f.Fatal(err)
	}
	return b
}
