package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/recached/recached/server/keyspace"
)

// farFuture is an expiry no test outlives (2100-01-01).
const farFuture = 4102444800000

// sampleKeyspace fills a keyspace with every type, binary and empty values,
// big and small collections, expiries and several databases.
func sampleKeyspace() *keyspace.Keyspace {
	ks := keyspace.New(4, nil)
	db := ks.DBs[0]
	db.SetString([]byte("str"), []byte("hello"), false)
	db.SetString([]byte("empty"), []byte{}, false)
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	db.SetString(all, all, false)
	db.SetString([]byte("big"), bytes.Repeat([]byte("x"), 70000), false)
	db.SetString([]byte("ttl"), []byte("v"), false)
	db.SetExpiry([]byte("ttl"), farFuture)

	h := keyspace.NewHash()
	h.Set([]byte("f1"), []byte("v1"))
	h.Set([]byte("f2"), []byte{})
	db.Set([]byte("hash"), &keyspace.Entry{Obj: h})
	bigh := keyspace.NewHash()
	for i := 0; i < 300; i++ {
		bigh.Set([]byte(fmt.Sprintf("field:%d", i)), []byte(strings.Repeat("v", i)))
	}
	db.Set([]byte("bighash"), &keyspace.Entry{Obj: bigh})
	db.SetExpiry([]byte("bighash"), farFuture+1)

	s := keyspace.NewSet()
	for _, m := range []string{"a", "b", "1", "2", "-3"} {
		s.Add([]byte(m), keyspace.SetMaxIntsetEntries)
	}
	db.Set([]byte("set"), &keyspace.Entry{Obj: s})
	ints := keyspace.NewSet()
	for i := 0; i < 1000; i++ {
		ints.Add([]byte(fmt.Sprint(i)), keyspace.SetMaxIntsetEntries)
	}
	db.Set([]byte("intset"), &keyspace.Entry{Obj: ints})

	z := keyspace.NewZSet()
	z.Add([]byte("neg"), -1.5, keyspace.DefaultZLimits())
	z.Add([]byte("zero"), 0, keyspace.DefaultZLimits())
	z.Add([]byte("inf"), math.Inf(1), keyspace.DefaultZLimits())
	z.Add([]byte("-inf"), math.Inf(-1), keyspace.DefaultZLimits())
	z.Add([]byte("pi"), math.Pi, keyspace.DefaultZLimits())
	db.Set([]byte("zset"), &keyspace.Entry{Obj: z})
	addSampleLists(db)

	ks.DBs[2].SetString([]byte("str"), []byte("in db 2"), false)
	ks.DBs[3].SetString([]byte("other"), []byte("in db 3"), false)
	return ks
}

func sampleMarks() []Marks {
	return []Marks{
		{ClientID: "client-a", High: 42, LastSeen: 1700000000000},
		{ClientID: strings.Repeat("z", 64), High: math.MaxUint64, LastSeen: 1},
	}
}

// writeKeyspace saves ks and marks as the snapshot of dir.
func writeKeyspace(t testing.TB, dir string, ks *keyspace.Keyspace, marks []Marks, h Header) {
	t.Helper()
	w, err := Create(dir, h)
	if err != nil {
		t.Fatal(err)
	}
	for dbi, db := range ks.DBs {
		for i := 0; i < keyspace.NumShards; i++ {
			db.Range(i, func(k string, e *keyspace.Entry) bool {
				exp, _ := db.Expiry([]byte(k))
				if err := w.Key(dbi, []byte(k), e, exp); err != nil {
					t.Fatal(err)
				}
				return true
			})
		}
	}
	for _, m := range marks {
		if err := w.Mark(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

// describe renders a keyspace canonically: one line per key, sorted, with
// the type, expiry and value (unordered collections sorted).
func describe(ks *keyspace.Keyspace) string {
	var lines []string
	for dbi, db := range ks.DBs {
		for i := 0; i < keyspace.NumShards; i++ {
			db.Range(i, func(k string, e *keyspace.Entry) bool {
				exp, _ := db.Expiry([]byte(k))
				lines = append(lines, fmt.Sprintf("db%d %q %s exp=%d %s", dbi, k, e.Type(), exp, describeValue(e)))
				return true
			})
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func describeValue(e *keyspace.Entry) string {
	var parts []string
	sorted := true
	switch o := e.Obj.(type) {
	case nil:
		return fmt.Sprintf("%q", e.Str)
	case *keyspace.Hash:
		o.Range(func(f, v []byte) bool { parts = append(parts, fmt.Sprintf("%q=%q", f, v)); return true })
	case *keyspace.Set:
		o.Range(func(m []byte) bool { parts = append(parts, fmt.Sprintf("%q", m)); return true })
	case *keyspace.ZSet:
		sorted = false
		o.Range(func(m []byte, s float64) bool { parts = append(parts, fmt.Sprintf("%q:%v", m, s)); return true })
	default:
		sorted = false
		parts = describeOther(e)
	}
	if sorted {
		sort.Strings(parts)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ks := sampleKeyspace()
	writeKeyspace(t, dir, ks, sampleMarks(), Header{Generation: 7, Created: 1234})
	got := keyspace.New(4, nil)
	var marks []Marks
	h, loaded, expired, err := Load(filepath.Join(dir, SnapshotName), got, func(m Marks) { marks = append(marks, m) }, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	if h.Generation != 7 || h.Created != 1234 || h.Version != Version {
		t.Errorf("header %+v", h)
	}
	if want, have := describe(ks), describe(got); want != have {
		t.Errorf("contents differ:\nwant\n%s\nhave\n%s", want, have)
	}
	if loaded != int64(strings.Count(describe(ks), "\n")+1) || expired != 0 {
		t.Errorf("loaded %d expired %d", loaded, expired)
	}
	if fmt.Sprint(marks) != fmt.Sprint(sampleMarks()) {
		t.Errorf("marks %v", marks)
	}
	if _, err := os.Stat(filepath.Join(dir, TempName(os.Getpid()))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary file left behind: %v", err)
	}
}

func TestExpiredKeysAreNotResurrected(t *testing.T) {
	dir := t.TempDir()
	ks := keyspace.New(1, nil)
	db := ks.DBs[0]
	for _, k := range []string{"past", "future", "none"} {
		db.SetString([]byte(k), []byte(k), false)
	}
	db.SetExpiry([]byte("past"), 1000)
	db.SetExpiry([]byte("future"), 3000)
	ks.Now = func() int64 { return 0 } // the writer sees every key live
	writeKeyspace(t, dir, ks, nil, Header{})

	got := keyspace.New(1, nil)
	got.Now = func() int64 { return 2000 }
	_, loaded, expired, err := Load(filepath.Join(dir, SnapshotName), got, nil, 2000, false)
	if err != nil || loaded != 2 || expired != 1 {
		t.Fatalf("loaded %d expired %d err %v", loaded, expired, err)
	}
	if got.DBs[0].Peek([]byte("past")) != nil || got.DBs[0].Peek([]byte("future")) == nil {
		t.Errorf("wrong keys: %s", describe(got))
	}
	if at, ok := got.DBs[0].Expiry([]byte("future")); !ok || at != 3000 {
		t.Errorf("expiry %d %v", at, ok)
	}
}

// craft builds a snapshot file by hand: the header array then whatever
// body writes, then the checksum.
func craft(version uint64, body func(enc *msgpack.Encoder)) []byte {
	var buf bytes.Buffer
	buf.WriteString(SnapshotMagic)
	enc := msgpack.NewEncoder(&buf)
	_ = enc.EncodeArrayLen(3)
	_ = enc.EncodeUint(version)
	_ = enc.EncodeUint(1)
	_ = enc.EncodeInt(0)
	body(enc)
	return binary.BigEndian.AppendUint32(buf.Bytes(), crc32.Checksum(buf.Bytes(), castagnoli))
}

func endRecord(enc *msgpack.Encoder, keys, marks uint64) {
	_ = enc.EncodeArrayLen(3)
	_ = enc.EncodeUint(recEnd)
	_ = enc.EncodeUint(keys)
	_ = enc.EncodeUint(marks)
}

func keyRecord(enc *msgpack.Encoder, tag uint64, value func()) {
	_ = enc.EncodeArrayLen(2)
	_ = enc.EncodeUint(recDB)
	_ = enc.EncodeUint(0)
	_ = enc.EncodeArrayLen(5)
	_ = enc.EncodeUint(recKey)
	_ = enc.EncodeUint(tag)
	_ = enc.EncodeBytes([]byte("k"))
	_ = enc.EncodeNil()
	value()
}

// readAll reads a whole snapshot from memory, returning the first error.
func readAll(b []byte) error {
	r, err := NewReader("test.rcd", bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return err
	}
	for i := 0; i < 1<<20; i++ {
		if _, err := r.Next(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
	return errors.New("too many records")
}

func TestCorruptSnapshots(t *testing.T) {
	good := craft(Version, func(enc *msgpack.Encoder) {
		keyRecord(enc, uint64(TagString), func() { _ = enc.EncodeBytes([]byte("v")) })
		endRecord(enc, 1, 0)
	})
	if err := readAll(good); err != nil {
		t.Fatalf("the crafted good file fails: %v", err)
	}
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)-9] ^= 0x01 // the value, just before the end record
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "empty file"},
		{"magic", []byte("REDIS0009\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), "bad magic"},
		{"version", craft(99, func(enc *msgpack.Encoder) { endRecord(enc, 0, 0) }), "unsupported format version 99"},
		{"version zero", craft(0, func(enc *msgpack.Encoder) { endRecord(enc, 0, 0) }), "unsupported format version 0"},
		{"unknown tag", craft(Version, func(enc *msgpack.Encoder) {
			keyRecord(enc, 200, func() { _ = enc.EncodeBytes([]byte("v")) })
			endRecord(enc, 1, 0)
		}), "unknown type tag 200"},
		{"invalid json", craft(Version, func(enc *msgpack.Encoder) {
			keyRecord(enc, uint64(TagJSON), func() { _ = enc.EncodeBytes([]byte("{")) })
			endRecord(enc, 1, 0)
		}), "json document: invalid JSON"},
		{"unknown record", craft(Version, func(enc *msgpack.Encoder) {
			_ = enc.EncodeArrayLen(1)
			_ = enc.EncodeUint(77)
		}), "unknown record kind 77"},
		{"counts", craft(Version, func(enc *msgpack.Encoder) { endRecord(enc, 5, 0) }), "end record counts 5 keys"},
		{"no end", craft(Version, func(enc *msgpack.Encoder) {}), "truncated"},
		{"huge length", craft(Version, func(enc *msgpack.Encoder) {
			keyRecord(enc, uint64(TagString), func() { _ = enc.EncodeBytesLen(1 << 30) })
		}), "runs past the end of the file"},
		{"huge array", craft(Version, func(enc *msgpack.Encoder) {
			keyRecord(enc, uint64(TagSet), func() { _ = enc.EncodeArrayLen(1 << 30) })
		}), "runs past the end of the file"},
		{"nan score", craft(Version, func(enc *msgpack.Encoder) {
			keyRecord(enc, uint64(TagZSet), func() {
				_ = enc.EncodeArrayLen(2)
				_ = enc.EncodeBytes([]byte("m"))
				_ = enc.EncodeFloat64(math.NaN())
			})
		}), "NaN"},
		{"checksum", flipped, "checksum mismatch"},
		{"trailing data", append(good[:len(good)-4:len(good)-4], 0xc0, 0, 0, 0, 0), "after the end record"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := readAll(tt.data)
			var ce *CorruptError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "test.rcd") {
				t.Fatalf("error %v, want a CorruptError containing %q", err, tt.want)
			}
		})
	}
}

func TestDuplicateKey(t *testing.T) {
	b := craft(Version, func(enc *msgpack.Encoder) {
		keyRecord(enc, uint64(TagString), func() { _ = enc.EncodeBytes([]byte("one")) })
		keyRecord(enc, uint64(TagString), func() { _ = enc.EncodeBytes([]byte("two")) })
		endRecord(enc, 2, 0)
	})
	path := filepath.Join(t.TempDir(), SnapshotName)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := Load(path, keyspace.New(1, nil), nil, 0, false); !IsCorrupt(err) || !strings.Contains(err.Error(), "duplicated key") {
		t.Errorf("duplicate key: %v", err)
	}
}

// TestEveryDamageIsDetected truncates a real snapshot at every length and
// flips every byte of it: every variant must fail cleanly.
func TestEveryDamageIsDetected(t *testing.T) {
	dir := t.TempDir()
	ks := keyspace.New(2, nil)
	ks.DBs[0].SetString([]byte("a"), []byte("1"), false)
	h := keyspace.NewHash()
	h.Set([]byte("f"), []byte("v"))
	ks.DBs[1].Set([]byte("h"), &keyspace.Entry{Obj: h})
	ks.DBs[1].SetExpiry([]byte("h"), farFuture)
	writeKeyspace(t, dir, ks, sampleMarks()[:1], Header{Generation: 3})
	good, err := os.ReadFile(filepath.Join(dir, SnapshotName))
	if err != nil {
		t.Fatal(err)
	}
	if err := readAll(good); err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(good); n++ {
		if err := readAll(good[:n]); !IsCorrupt(err) {
			t.Errorf("truncated to %d bytes: %v", n, err)
		}
	}
	for i := range good {
		for _, bit := range []byte{0x01, 0x80} {
			b := append([]byte(nil), good...)
			b[i] ^= bit
			if err := readAll(b); !IsCorrupt(err) {
				t.Errorf("byte %d ^ %#x: %v", i, bit, err)
			}
		}
	}
}

func TestTagsNeverChange(t *testing.T) {
	// The numbers are the format: changing one breaks every saved file.
	want := map[Tag]string{0: "string", 1: "list", 2: "set", 3: "zset", 4: "hash", 5: "json", 6: "ratelimit"}
	for tag, name := range want {
		if tag.String() != name {
			t.Errorf("tag %d is %s, must stay %s", tag, tag, name)
		}
	}
	kinds := []int{recEnd, recDB, recKey, recMark, logHeader, logCommand, logMark}
	if fmt.Sprint(kinds) != "[0 1 2 3 0 1 2]" {
		t.Errorf("record kinds changed: %v", kinds)
	}
}

func TestLogNames(t *testing.T) {
	for _, g := range []uint64{0, 1, 42, math.MaxUint64} {
		if got, ok := ParseLogName(LogName(g)); !ok || got != g {
			t.Errorf("%d: %d %v", g, got, ok)
		}
	}
	for _, bad := range []string{"appendonly.aof", "appendonly..aof", "appendonly.01.aof", "appendonly.1.aof.tmp", "appendonly.x.aof", "dump.rcd", "appendonly.99999999999999999999.aof"} {
		if _, ok := ParseLogName(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestRemoveStaleTemp(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{TempName(1), TempName(99999), SnapshotName, "other"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := RemoveStaleTemp(dir); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if fmt.Sprint(names) != "[dump.rcd other]" {
		t.Errorf("left %v", names)
	}
}

// TestHeaderKeyCounts checks that a snapshot's per-database key counts
// survive a round trip, and that loading with them fills the keyspace the
// same.
func TestHeaderKeyCounts(t *testing.T) {
	dir := t.TempDir()
	ks := fixtureKeyspace()
	writeKeyspace(t, dir, ks, nil, Header{Generation: 2, Created: 5, Keys: []int64{7, 0, 2}})
	loaded := keyspace.New(len(ks.DBs), nil)
	h, n, _, err := Load(filepath.Join(dir, SnapshotName), loaded, nil, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Keys) != 3 || h.Keys[0] != 7 || h.Keys[1] != 0 || h.Keys[2] != 2 {
		t.Fatalf("key counts %v", h.Keys)
	}
	if n != 9 || describe(loaded) != describe(ks) {
		t.Fatalf("loaded %d keys:\n%s\nwant\n%s", n, describe(loaded), describe(ks))
	}
}
