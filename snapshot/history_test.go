package snapshot

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/recached/recached/server/keyspace"
)

// cloneHistory copies a history message out of a reader's buffer.
func cloneHistory(h History) History {
	clone := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		return append([]byte{}, b...)
	}
	h.Channel, h.Payload, h.Data = clone(h.Channel), clone(h.Payload), clone(h.Data)
	return h
}

// sampleHistory is a channel history covering both shapes of the record.
func sampleHistory() []History {
	var out []History
	for _, r := range sampleLogN(300) {
		if r.IsHistory {
			out = append(out, r.History)
		}
	}
	return out
}

// writeHistorySnapshot saves a keyspace with one key, one mark and hist.
func writeHistorySnapshot(t testing.TB, dir string, hist []History) {
	t.Helper()
	w, err := Create(dir, Header{Generation: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Key(0, []byte("k"), &keyspace.Entry{Str: []byte("v")}, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Mark(sampleMarks()[0]); err != nil {
		t.Fatal(err)
	}
	for i := range hist {
		if err := w.History(&hist[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestHistorySnapshotRoundTrip: history messages written to a snapshot come
// back in order from LoadWith, and check counts them; Load skips them.
func TestHistorySnapshotRoundTrip(t *testing.T) {
	dir := t.TempDir()
	want := sampleHistory()
	writeHistorySnapshot(t, dir, want)
	path := filepath.Join(dir, SnapshotName)
	var got []History
	var marks int
	ks := keyspace.New(1, nil)
	_, loaded, _, err := LoadWith(path, ks, Hooks{Mark: func(Marks) { marks++ }, History: func(h History) { got = append(got, cloneHistory(h)) }}, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if loaded != 1 || marks != 1 || !reflect.DeepEqual(got, want) {
		t.Fatalf("loaded %d keys, %d marks, history %+v; want 1, 1, %+v", loaded, marks, got, want)
	}
	if _, loaded, _, err := Load(path, keyspace.New(1, nil), nil, 0, false); err != nil || loaded != 1 {
		t.Fatalf("Load: %d keys, %v", loaded, err)
	}
	var out bytes.Buffer
	res, err := Check(path, false, &out)
	if err != nil || res.History != int64(len(want)) || !strings.Contains(out.String(), "4 channel history messages") {
		t.Fatalf("check: %+v %v %q", res, err, out.String())
	}
}

// TestSnapshotWithoutHistoryUnchanged: a snapshot with no history ends with
// the three-element end record older readers expect.
func TestSnapshotWithoutHistoryUnchanged(t *testing.T) {
	dir := t.TempDir()
	writeHistorySnapshot(t, dir, nil)
	b, err := os.ReadFile(filepath.Join(dir, SnapshotName))
	if err != nil {
		t.Fatal(err)
	}
	// ... [0x93, 0, 1, 1] then the 4-byte checksum.
	if end := b[len(b)-8 : len(b)-4]; !bytes.Equal(end, []byte{0x93, 0, 1, 1}) {
		t.Fatalf("end record % x", end)
	}
}

// TestCorruptHistoryRecords: malformed history records and a wrong count
// are corruption, reported with a CorruptError.
func TestCorruptHistoryRecords(t *testing.T) {
	tests := []struct {
		name string
		body func(enc *msgpack.Encoder)
		want string
	}{
		{"five elements", func(enc *msgpack.Encoder) {
			_ = enc.EncodeArrayLen(5)
			_ = enc.EncodeUint(recHistory)
			for i := 0; i < 4; i++ {
				_ = enc.EncodeBytes([]byte("x"))
			}
			endRecord(enc, 0, 0)
		}, "bad history record"},
		{"time not an integer", func(enc *msgpack.Encoder) {
			_ = enc.EncodeArrayLen(4)
			_ = enc.EncodeUint(recHistory)
			_ = enc.EncodeBytes([]byte("c"))
			_ = enc.EncodeBytes([]byte("t"))
			_ = enc.EncodeBytes([]byte("p"))
			endRecord(enc, 0, 0)
		}, "bad history time"},
		{"name neither bin nor nil", func(enc *msgpack.Encoder) {
			_ = enc.EncodeArrayLen(7)
			_ = enc.EncodeUint(recHistory)
			_ = enc.EncodeBytes([]byte("c"))
			_ = enc.EncodeInt(1)
			_ = enc.EncodeBytes([]byte("p"))
			_ = enc.EncodeBytes([]byte("id"))
			_ = enc.EncodeInt(5)
			_ = enc.EncodeNil()
			endRecord(enc, 0, 0)
		}, "bad history name"},
		{"uncounted history", func(enc *msgpack.Encoder) {
			_ = enc.EncodeArrayLen(4)
			_ = enc.EncodeUint(recHistory)
			_ = enc.EncodeBytes([]byte("c"))
			_ = enc.EncodeInt(1)
			_ = enc.EncodeBytes([]byte("p"))
			endRecord(enc, 0, 0)
		}, "end record counts 0 history messages, the file holds 1"},
		{"counted but absent", func(enc *msgpack.Encoder) {
			_ = enc.EncodeArrayLen(4)
			_ = enc.EncodeUint(recEnd)
			_ = enc.EncodeUint(0)
			_ = enc.EncodeUint(0)
			_ = enc.EncodeUint(2)
		}, "end record counts 2 history messages, the file holds 0"},
	}
	for _, tt := range tests {
		err := readAll(craft(Version, tt.body))
		if err == nil || !IsCorrupt(err) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want a corruption error containing %q", tt.name, err, tt.want)
		}
	}
}

// historySnapshot is a fuzz seed: a small snapshot holding history.
func historySnapshot(f *testing.F) []byte {
	dir := f.TempDir()
	writeHistorySnapshot(f, dir, sampleHistory())
	b, err := os.ReadFile(filepath.Join(dir, SnapshotName))
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// TestFixtureHasNoHistory: the committed version 1 fixture, written before
// history existed, loads through LoadWith with no history message.
func TestFixtureHasNoHistory(t *testing.T) {
	n := 0
	if _, _, _, err := LoadWith(fixturePath, keyspace.New(3, nil), Hooks{History: func(History) { n++ }}, 0, true); err != nil || n != 0 {
		t.Fatalf("LoadWith(%s): %d history messages, %v", fixturePath, n, err)
	}
}
