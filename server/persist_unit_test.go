package server

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/recached/recached/snapshot"
)

// logRecord is a log record as TestLogUnits compares it.
type logRecord struct {
	unit uint64
	end  bool
	mark string
	cmd  string
	at   int64 // byte offset where the record ends
}

// readLogRecords reads the records of a log file.
func readLogRecords(t *testing.T, path string) []logRecord {
	t.Helper()
	r, f, err := snapshot.OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []logRecord
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		x := logRecord{unit: rec.Unit, end: rec.IsUnitEnd, at: r.ValidEnd()}
		switch {
		case rec.IsMark:
			x.mark = rec.Mark.ClientID
		case !rec.IsUnitEnd && !rec.IsHistory:
			x.cmd = string(rec.Args[0]) + " " + string(rec.Args[1])
		}
		out = append(out, x)
	}
}

// TestLogUnits: the effects of an EXEC, a script and a DEDUP write are
// logged as one transaction each, and a start applies a transaction only
// when the log holds its end, so a crash in the middle of one leaves none
// of it while the writes of other clients logged around it stay.
func TestLogUnits(t *testing.T) {
	dir := t.TempDir()
	srv := openPersist(t, dir, nil)
	s := newSession(srv, nil, false)
	for _, c := range [][]string{
		{"SET", "a", "1"},
		{"MULTI"}, {"INCR", "x"}, {"INCR", "y"}, {"EXEC"},
		{"EVAL", "redis.call('SET', KEYS[1], 'v'); redis.call('SET', KEYS[2], 'v')", "2", "s1", "s2"},
		{"DEDUP", "c1", "1", "SET", "d", "1"},
		{"SET", "b", "1"},
	} {
		if out := pexec(s, c...); out[0] == '-' {
			t.Fatalf("%v: %s", c, out)
		}
	}
	crash(srv)
	path := filepath.Join(dir, snapshot.LogName(0))
	recs := readLogRecords(t, path)
	want := []logRecord{
		{cmd: "SET a"},
		{unit: 1, cmd: "SET x"}, {unit: 1, cmd: "SET y"}, {unit: 1, end: true},
		{unit: 2, cmd: "SET s1"}, {unit: 2, cmd: "SET s2"}, {unit: 2, end: true},
		{mark: "c1"}, {unit: 3, cmd: "SET d"}, {unit: 3, end: true},
		{cmd: "SET b"},
	}
	if len(recs) != len(want) {
		t.Fatalf("log records %+v, want %+v", recs, want)
	}
	for i := range want {
		if g := recs[i]; g.unit != want[i].unit || g.end != want[i].end || g.mark != want[i].mark || g.cmd != want[i].cmd {
			t.Errorf("record %d: %+v, want %+v", i, g, want[i])
		}
	}

	// A crash after the EXEC's first effect reached the file: the
	// transaction is dropped whole; a later write of another client, in
	// the file after it, is kept.
	good, _ := os.ReadFile(path)
	first := recs
	cut := append([]byte(nil), good[:first[1].at]...)
	cut = snapshot.AppendCommand(cut, 0, toArgs("SET", "other", "1"))
	if err := os.WriteFile(path, cut, 0o644); err != nil {
		t.Fatal(err)
	}
	srv2 := openPersist(t, dir, nil)
	if got, want := describeServer(srv2), "db0 \"a\" string exp=0 \"1\"\ndb0 \"other\" string exp=0 \"1\""; got != want {
		t.Errorf("after a crash inside the EXEC:\n%s\nwant\n%s", got, want)
	}
	// New transactions are numbered past the one left open, so that its
	// records are never taken for theirs.
	s2 := newSession(srv2, nil, false)
	for _, c := range [][]string{{"MULTI"}, {"INCR", "x"}, {"EXEC"}} {
		pexec(s2, c...)
	}
	crash(srv2)
	recs = readLogRecords(t, path)
	if last := recs[len(recs)-1]; !last.end || last.unit <= 1 {
		t.Errorf("the new transaction's end is %+v, want a number above 1", last)
	}
	srv3 := openPersist(t, dir, nil)
	if got, want := describeServer(srv3), "db0 \"a\" string exp=0 \"1\"\ndb0 \"other\" string exp=0 \"1\"\ndb0 \"x\" string exp=0 \"1\""; got != want {
		t.Errorf("after a later EXEC:\n%s\nwant\n%s", got, want)
	}
	crash(srv3)

	// A DEDUP mark whose write was cut with its transaction is not
	// raised: the client's replay of the write must apply it.
	if err := os.WriteFile(path, good[:first[8].at], 0o644); err != nil {
		t.Fatal(err)
	}
	srv4 := openPersist(t, dir, nil)
	if out := pexec(newSession(srv4, nil, false), "DEDUP", "c1", "1", "SET", "d", "1"); out != "+OK\r\n" {
		t.Errorf("DEDUP replayed after its transaction was cut: %q, want +OK", out)
	}
}
