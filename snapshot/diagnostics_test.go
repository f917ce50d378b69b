package snapshot

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckReportsHeaderDamage: a file damaged before its first record
// (empty, bad magic, cut inside the header) gets a report naming the file
// and what is wrong, not an empty one.
func TestCheckReportsHeaderDamage(t *testing.T) {
	dir := t.TempDir()
	writeKeyspace(t, dir, sampleKeyspace(), sampleMarks(), Header{Generation: 1})
	snap, err := os.ReadFile(filepath.Join(dir, SnapshotName))
	if err != nil {
		t.Fatal(err)
	}
	logBytes, _ := sampleLogBytes(10)
	for _, tc := range []struct {
		name string
		file string
		data []byte
		want string
	}{
		{"empty snapshot", SnapshotName, nil, "empty file"},
		{"empty log", LogName(1), nil, "empty file"},
		{"bad magic", SnapshotName, []byte("REDIS0011 not ours at all"), "bad magic"},
		{"snapshot cut at byte 20", SnapshotName, snap[:20], "corrupt at byte offset"},
		{"log cut at byte 20", LogName(1), logBytes[:20], "corrupt at byte offset"},
		{"log magic damaged", LogName(1), append([]byte("X"), logBytes[1:]...), "bad magic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.file)
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			_, err := Check(path, false, &out)
			if !IsCorrupt(err) {
				t.Fatalf("Check: %v", err)
			}
			for _, w := range []string{path, tc.want, "header is damaged"} {
				if !strings.Contains(out.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

// TestCheckFixMissingLog: check --fix on a missing appendonly.<g>.aof
// creates it holding only its header.
func TestCheckFixMissingLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, LogName(3))
	var out bytes.Buffer
	if _, err := Check(path, false, &out); !IsCorrupt(err) || !strings.Contains(out.String(), "--fix") {
		t.Fatalf("without --fix: %v\n%s", err, out.String())
	}
	out.Reset()
	res, err := Check(path, true, &out)
	if err != nil || !res.Fixed {
		t.Fatalf("--fix: %v %+v\n%s", err, res, out.String())
	}
	r, f, err := OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if r.Header().Generation != 3 {
		t.Errorf("generation %d", r.Header().Generation)
	}
}

// TestCreateLogFinalName: the log CreateLog returns is open by its final
// name, so that a later write error does not name the .tmp file that was
// renamed away.
func TestCreateLogFinalName(t *testing.T) {
	dir := t.TempDir()
	f, _, err := CreateLog(dir, Header{Generation: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if want := filepath.Join(dir, LogName(4)); f.Name() != want {
		t.Errorf("file named %s, want %s", f.Name(), want)
	}
}

// TestHeaderWithLog: the flag that ties a snapshot to its generation's log
// survives the round trip, with and without key counts.
func TestHeaderWithLog(t *testing.T) {
	for _, h := range []Header{
		{Generation: 2, WithLog: true},
		{Generation: 2, WithLog: true, Keys: []int64{1, 2}},
		{Generation: 2, Keys: []int64{3}},
		{Generation: 2},
	} {
		dir := t.TempDir()
		writeKeyspace(t, dir, sampleKeyspace(), nil, h)
		r, f, err := Open(filepath.Join(dir, SnapshotName))
		if err != nil {
			t.Fatal(err)
		}
		got := r.Header()
		f.Close()
		if got.WithLog != h.WithLog || got.Generation != h.Generation || len(got.Keys) != len(h.Keys) {
			t.Errorf("wrote %+v, read %+v", h, got)
		}
	}
}
