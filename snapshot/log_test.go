package snapshot

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// sampleLog is a sequence of records covering the encodings' edge cases.
func sampleLog() []LogRecord { return sampleLogN(70000) }

// sampleLogN is sampleLog with a long argument of n bytes.
func sampleLogN(n int) []LogRecord {
	long := bytes.Repeat([]byte("L"), n)
	many := [][]byte{[]byte("MSET")}
	for i := 0; i < 20; i++ {
		many = append(many, []byte(fmt.Sprint("k", i)), []byte(fmt.Sprint(i)))
	}
	return []LogRecord{
		{DB: 0, Args: [][]byte{[]byte("SET"), []byte("k"), []byte("v")}},
		{DB: 3, Args: [][]byte{[]byte("SET"), []byte("k"), {}}},
		{IsMark: true, Mark: Marks{ClientID: "c1", High: 7, LastSeen: 1700000000000}},
		{DB: 200, Args: [][]byte{[]byte("HSET"), []byte("h"), bytes.Repeat([]byte("f"), 300), long}},
		{DB: 0, Args: many},
		{IsMark: true, Mark: Marks{ClientID: "", High: math.MaxUint64, LastSeen: -5}},
		{DB: 0, Args: [][]byte{[]byte("FLUSHALL")}},
		{IsHistory: true, History: History{Channel: []byte("chat:1"), Time: 1700000000123456789, Payload: []byte("hello")}},
		{IsHistory: true, History: History{Channel: []byte("c"), Time: 1, Payload: long, Realtime: true, ConnectionID: "conn-1", Name: "n", HasName: true, Data: []byte(`{"a":1}`)}},
		{IsHistory: true, History: History{Channel: []byte{}, Time: 2, Payload: []byte{}, Realtime: true, ConnectionID: "c2", HasName: true, Data: []byte{}}},
		{IsHistory: true, History: History{Channel: []byte("x"), Time: 3, Payload: []byte("{}"), Realtime: true, ConnectionID: "c3"}},
		{Unit: 9, DB: 2, Args: [][]byte{[]byte("INCR"), []byte("a")}},
		{DB: 0, Args: [][]byte{[]byte("DEL"), []byte("z")}},
		{Unit: 9, DB: 15, Args: many},
		{IsUnitEnd: true, Unit: 9},
		{Unit: math.MaxUint64, DB: 0, Args: [][]byte{[]byte("SET"), long, []byte("v")}},
	}
}

func appendRecord(b []byte, r LogRecord) []byte {
	if r.IsMark {
		return AppendMark(b, r.Mark)
	}
	if r.IsHistory {
		return AppendHistory(b, &r.History)
	}
	if r.IsUnitEnd {
		return AppendUnitEnd(b, r.Unit)
	}
	if r.Unit != 0 {
		return AppendUnitCommand(b, r.Unit, r.DB, r.Args)
	}
	return AppendCommand(b, r.DB, r.Args)
}

// sampleLogBytes returns a whole log file and the offset where each record
// starts (the last entry is the file's length).
func sampleLogBytes(n int) ([]byte, []int) {
	b := appendLogHeader(nil, Header{Generation: 5, Created: 99})
	var offs []int
	for _, r := range sampleLogN(n) {
		offs = append(offs, len(b))
		b = appendRecord(b, r)
	}
	return b, append(offs, len(b))
}

// readLog reads every record of a log held in memory.
func readLog(b []byte) ([]LogRecord, *LogReader, error) {
	r, err := NewLogReader("test.aof", bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, nil, err
	}
	var out []LogRecord
	for i := 0; i < 1<<20; i++ {
		rec, err := r.Next()
		if err == io.EOF {
			return out, r, nil
		}
		if err != nil {
			return out, r, err
		}
		c := LogRecord{IsMark: rec.IsMark, IsHistory: rec.IsHistory, Unit: rec.Unit, IsUnitEnd: rec.IsUnitEnd, DB: rec.DB, Mark: rec.Mark, History: cloneHistory(rec.History)}
		for _, a := range rec.Args {
			c.Args = append(c.Args, append([]byte{}, a...))
		}
		out = append(out, c)
	}
	return out, r, fmt.Errorf("too many records")
}

func sameRecords(a, b []LogRecord) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].IsMark != b[i].IsMark || a[i].Mark != b[i].Mark || !a[i].IsMark && (a[i].DB != b[i].DB || !reflect.DeepEqual(a[i].Args, b[i].Args)) {
			return false
		}
		if a[i].Unit != b[i].Unit || a[i].IsUnitEnd != b[i].IsUnitEnd {
			return false
		}
		if a[i].IsHistory != b[i].IsHistory || !reflect.DeepEqual(a[i].History, b[i].History) {
			return false
		}
	}
	return true
}

func TestLogRoundTrip(t *testing.T) {
	b, _ := sampleLogBytes(70000)
	got, r, err := readLog(b)
	if err != nil {
		t.Fatal(err)
	}
	if h := r.Header(); h.Generation != 5 || h.Created != 99 || h.Version != Version {
		t.Errorf("header %+v", h)
	}
	if !sameRecords(got, sampleLog()) || r.Truncated || r.ValidEnd() != int64(len(b)) {
		t.Errorf("%d records differ; truncated %v end %d", len(got), r.Truncated, r.ValidEnd())
	}
}

// TestLogPayloadIsMsgpack decodes every payload with the msgpack library:
// the hand-written encoder must produce standard msgpack.
func TestLogPayloadIsMsgpack(t *testing.T) {
	for _, rec := range sampleLog() {
		frame := appendRecord(nil, rec)
		var v []any
		if err := msgpack.Unmarshal(frame[frameHead:], &v); err != nil {
			t.Fatalf("%s: %v", rec.Args, err)
		}
		var want []any
		if rec.IsMark {
			want = []any{int8(logMark), []byte(rec.Mark.ClientID), rec.Mark.High, rec.Mark.LastSeen}
		} else if h := rec.History; rec.IsHistory {
			want = []any{int8(logHistory), h.Channel, h.Time, h.Payload}
			if h.Realtime {
				name, data := any(nil), any(nil)
				if h.HasName {
					name = []byte(h.Name)
				}
				if h.Data != nil {
					data = h.Data
				}
				want = append(want, []byte(h.ConnectionID), name, data)
			}
		} else if rec.IsUnitEnd {
			want = []any{int8(logUnitEnd), rec.Unit}
		} else {
			want = []any{int8(logCommand), rec.DB}
			if rec.Unit != 0 {
				want = []any{int8(logUnitCommand), rec.Unit, rec.DB}
			}
			for _, a := range rec.Args {
				want = append(want, a)
			}
		}
		if fmt.Sprint(v) != fmt.Sprint(want) {
			t.Errorf("decoding %.100q differs", fmt.Sprint(want))
		}
	}
}

// TestLogTruncatedTail cuts the log at every length after the header: the
// records before the cut load, the cut one is dropped, nothing fails.
func TestLogTruncatedTail(t *testing.T) {
	b, offs := sampleLogBytes(300)
	all := sampleLogN(300)
	for n := offs[0]; n <= len(b); n++ {
		got, r, err := readLog(b[:n])
		if err != nil {
			t.Fatalf("cut at %d: %v", n, err)
		}
		whole := 0
		for whole < len(all) && offs[whole+1] <= n {
			whole++
		}
		if !sameRecords(got, all[:whole]) || r.ValidEnd() != int64(offs[whole]) || r.Truncated != (n != offs[whole]) {
			t.Fatalf("cut at %d: %d records, end %d, truncated %v", n, len(got), r.ValidEnd(), r.Truncated)
		}
	}
	// A torn write that left zeros at the end is a truncation too.
	got, r, err := readLog(append(append([]byte{}, b...), make([]byte, 100)...))
	if err != nil || !r.Truncated || len(got) != len(all) {
		t.Errorf("zero tail: %v %v %d", err, r.Truncated, len(got))
	}
}

// TestLogCorruption flips every byte: the header and any record before the
// end are never silently cut off.
func TestLogCorruption(t *testing.T) {
	b, offs := sampleLogBytes(300)
	for i := range b {
		d := append([]byte(nil), b...)
		d[i] ^= 0x20
		_, _, err := readLog(d)
		if !IsCorrupt(err) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
		if i >= offs[0] {
			rec := 0
			for offs[rec+1] <= i {
				rec++
			}
			if want := fmt.Sprintf("offset %d:", offs[rec]); !strings.Contains(err.Error(), want) {
				t.Fatalf("byte %d flipped: %v, want %q", i, err, want)
			}
		}
	}
	for name, data := range map[string][]byte{
		"empty":   nil,
		"magic":   []byte("*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n"),
		"version": appendLogHeader(nil, Header{Version: 9})[:0],
	} {
		if _, _, err := readLog(data); !IsCorrupt(err) {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := append([]byte(LogMagic), appendFrame(nil, func(p []byte) []byte {
		p = mpArray(p, 4)
		p = mpUint(p, logHeader)
		p = mpUint(p, 99)
		p = mpUint(p, 1)
		return mpInt(p, 0)
	})...)
	if _, _, err := readLog(bad); !IsCorrupt(err) || !strings.Contains(err.Error(), "unsupported format version 99") {
		t.Errorf("future version: %v", err)
	}
	bad = AppendCommand(appendLogHeader(nil, Header{}), 0, nil)
	if _, _, err := readLog(bad); !IsCorrupt(err) || !strings.Contains(err.Error(), "without a command") {
		t.Errorf("empty command: %v", err)
	}
	for _, tc := range []struct {
		name string
		rec  []byte
		want string
	}{
		{"transaction 0", AppendUnitCommand(nil, 0, 0, [][]byte{[]byte("SET")}), "malformed transaction id"},
		{"end of transaction 0", AppendUnitEnd(nil, 0), "malformed transaction id"},
		{"transaction command without a command", AppendUnitCommand(nil, 3, 0, nil), "without a command"},
		{"end with more", appendFrame(nil, func(p []byte) []byte { return mpUint(mpUint(mpUint(mpArray(p, 3), logUnitEnd), 1), 2) }), "malformed transaction end"},
	} {
		bad = append(appendLogHeader(nil, Header{}), tc.rec...)
		if _, _, err := readLog(bad); !IsCorrupt(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestLogWriterPolicies(t *testing.T) {
	for _, policy := range []Fsync{FsyncAlways, FsyncEverysec, FsyncNo} {
		dir := t.TempDir()
		f, size, err := CreateLog(dir, Header{Generation: 1})
		if err != nil {
			t.Fatal(err)
		}
		l := NewLogWriter(f, size, policy)
		path := filepath.Join(dir, LogName(1))
		for _, rec := range sampleLog() {
			switch {
			case rec.IsMark:
				l.AppendMark(rec.Mark)
			case rec.IsHistory:
				l.AppendHistory(&rec.History)
			case rec.IsUnitEnd:
				l.AppendUnitEnd(rec.Unit)
			case rec.Unit != 0:
				l.AppendUnitCommand(rec.Unit, rec.DB, rec.Args)
			default:
				l.AppendCommand(rec.DB, rec.Args)
			}
			l.Commit()
			// Everything is in the file when Commit returns, under every
			// policy: a reply sent after it survives the process's death.
			if b, _ := os.ReadFile(path); int64(len(b)) != l.Size() || l.Buffered() != 0 {
				t.Fatalf("policy %d: file %d bytes after Commit, writer says %d, buffered %d", policy, len(b), l.Size(), l.Buffered())
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		got, _, err := readLog(b)
		if err != nil || !sameRecords(got, sampleLog()) {
			t.Fatalf("policy %d: %v, %d records", policy, err, len(got))
		}
	}
}

func TestLogWriterSwitch(t *testing.T) {
	dir := t.TempDir()
	f1, size1, err := CreateLog(dir, Header{Generation: 1})
	if err != nil {
		t.Fatal(err)
	}
	l := NewLogWriter(f1, size1, FsyncAlways)
	recs := sampleLog()
	l.AppendCommand(recs[0].DB, recs[0].Args)
	f2, size2, err := CreateLog(dir, Header{Generation: 2})
	if err != nil {
		t.Fatal(err)
	}
	old, err := l.BeginSwitch(f2, size2)
	if err != nil {
		t.Fatal(err)
	}
	// Appends go on while the old file is being synced.
	l.AppendCommand(recs[1].DB, recs[1].Args)
	if err := l.FinishSwitch(old); err != nil {
		t.Fatal(err)
	}
	l.Commit()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for gen, want := range map[uint64][]LogRecord{1: recs[:1], 2: recs[1:2]} {
		b, _ := os.ReadFile(filepath.Join(dir, LogName(gen)))
		got, r, err := readLog(b)
		if err != nil || !sameRecords(got, want) || r.Header().Generation != gen {
			t.Errorf("generation %d: %v, %d records", gen, err, len(got))
		}
	}
}

// TestLogWriterConcurrent appends and commits from many goroutines: every
// record arrives whole, and each goroutine's records keep their order.
func TestLogWriterConcurrent(t *testing.T) {
	dir := t.TempDir()
	f, size, err := CreateLog(dir, Header{Generation: 1})
	if err != nil {
		t.Fatal(err)
	}
	l := NewLogWriter(f, size, FsyncAlways)
	const writers, each = 8, 200
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				l.AppendCommand(w, [][]byte{[]byte("SET"), []byte(fmt.Sprint(i))})
				if i%10 == 0 {
					l.Commit()
				}
			}
			l.Commit()
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 20; i++ {
			_ = l.SyncNow()
		}
	}()
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, LogName(1)))
	got, _, err := readLog(b)
	if err != nil || len(got) != writers*each {
		t.Fatalf("%v: %d records", err, len(got))
	}
	next := make([]int, writers)
	for _, r := range got {
		if string(r.Args[1]) != fmt.Sprint(next[r.DB]) {
			t.Fatalf("writer %d: record %s out of order", r.DB, r.Args[1])
		}
		next[r.DB]++
	}
}

func TestCheckAndFix(t *testing.T) {
	dir := t.TempDir()
	b, offs := sampleLogBytes(300)
	path := filepath.Join(dir, LogName(5))
	// The sample ends with a transaction's effect and no end: a crash.
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var whole bytes.Buffer
	if res, err := Check(path, false, &whole); err != nil || res.OpenUnits != 1 || !strings.Contains(whole.String(), "1 transaction(s) without an end") {
		t.Fatalf("check of a log with an open transaction: %v %+v\n%s", err, res, whole.String())
	}
	cut := offs[len(offs)-1] - 3
	if err := os.WriteFile(path, b[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := Check(path, false, &out)
	if !IsCorrupt(err) || !res.Truncated || res.ValidEnd != int64(offs[len(offs)-2]) {
		t.Fatalf("check: %v %+v\n%s", err, res, out.String())
	}
	if fi, _ := os.Stat(path); fi.Size() != int64(cut) {
		t.Fatal("check without --fix changed the file")
	}
	if res, err = Check(path, true, &out); err != nil || !res.Fixed {
		t.Fatalf("fix: %v %+v", err, res)
	}
	if res, err = Check(path, false, &out); err != nil || res.Records != int64(len(offs)-2) {
		t.Fatalf("after fix: %v %+v\n%s", err, res, out.String())
	}

	// Damage in the middle: --fix keeps the records before it.
	d := append([]byte(nil), b...)
	d[offs[2]+frameHead+1] ^= 0xff
	if err := os.WriteFile(path, d, 0o644); err != nil {
		t.Fatal(err)
	}
	if res, err = Check(path, true, &out); err != nil || res.Records != 2 {
		t.Fatalf("fix mid-file damage: %v %+v", err, res)
	}
	if fi, _ := os.Stat(path); fi.Size() != int64(offs[2]) {
		t.Fatalf("size after fix %d, want %d", fi.Size(), offs[2])
	}

	// Snapshots are checked, never "fixed".
	writeKeyspace(t, dir, sampleKeyspace(), sampleMarks(), Header{Generation: 2})
	snap := filepath.Join(dir, SnapshotName)
	if res, err := Check(snap, false, &out); err != nil || res.Kind != "snapshot" || res.Marks != 2 {
		t.Fatalf("snapshot: %v %+v", err, res)
	}
	sb, _ := os.ReadFile(snap)
	sb[len(sb)/2] ^= 1
	_ = os.WriteFile(snap, sb, 0o644)
	if _, err := Check(snap, true, &out); !IsCorrupt(err) {
		t.Fatalf("damaged snapshot: %v", err)
	}
	_ = os.WriteFile(snap, []byte("hello"), 0o644)
	if _, err := Check(snap, false, &out); !IsCorrupt(err) {
		t.Fatalf("not a snapshot: %v", err)
	}
}
