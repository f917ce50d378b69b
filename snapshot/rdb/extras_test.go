package rdb_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/recached/recached/server/keyspace"
	"github.com/recached/recached/snapshot/rdb"
)

// extrasFile writes a JSON document, a rate limiter with an expiry and a
// string into database 3.
func extrasFile(t testing.TB) []byte {
	doc, err := keyspace.ParseJSON([]byte(`{"a":[1,"x",null],"b":{"c":1.5}}`))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := rdb.NewWriter(&buf, 1700000000)
	if err := w.SelectDB(3, 3, 1); err != nil {
		t.Fatal(err)
	}
	for _, k := range []struct {
		key string
		e   *keyspace.Entry
		exp int64
	}{
		{"doc", &keyspace.Entry{Obj: doc}, 0},
		{"rl", &keyspace.Entry{Obj: &keyspace.RateLimit{TAT: 1700000000000000000, Interval: 1e9, Burst: 4}}, 1800000000000},
		{"s", &keyspace.Entry{Str: []byte("v")}, 0},
	} {
		if err := w.Key([]byte(k.key), k.e, k.exp); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestExtrasRoundTrip: JSON documents and rate limiters written as AUX
// fields read back as keys of their database, with their expiry.
func TestExtrasRoundTrip(t *testing.T) {
	r, err := rdb.NewReader("x.rdb", extrasFile(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.DB != 3 {
			t.Errorf("%s in database %d", rec.Key, rec.DB)
		}
		switch o := rec.Entry.Obj.(type) {
		case *keyspace.JSON:
			got = append(got, string(rec.Key)+"="+string(o.Text()))
		case *keyspace.RateLimit:
			got = append(got, string(rec.Key)+"="+string(binary.AppendVarint(nil, o.TAT))+string(binary.AppendVarint(nil, o.Interval))+string(binary.AppendVarint(nil, o.Burst)))
			if rec.Expire != 1800000000000 {
				t.Errorf("rl expires at %d", rec.Expire)
			}
		case nil:
			got = append(got, string(rec.Key)+"="+string(rec.Entry.Str))
		}
	}
	rl := string(binary.AppendVarint(nil, 1700000000000000000)) + string(binary.AppendVarint(nil, 1e9)) + string(binary.AppendVarint(nil, 4))
	want := []string{`doc={"a":[1,"x",null],"b":{"c":1.5}}`, "rl=" + rl, "s=v"}
	if len(got) != len(want) {
		t.Fatalf("read %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("key %d: %q, want %q", i, got[i], want[i])
		}
	}
	if len(r.Aux) != 0 && r.Aux[len(r.Aux)-1][0] == "recached-json" {
		t.Errorf("a key's AUX field listed as the file's: %q", r.Aux)
	}
}

// TestExtrasCorrupt: an AUX field of a key that does not decode is a
// CorruptError, never a key.
func TestExtrasCorrupt(t *testing.T) {
	aux := func(name string, v []byte) []byte {
		b := []byte{0xfa, byte(len(name))}
		b = append(b, name...)
		return append(append(b, byte(len(v))), v...)
	}
	head := func(key string) []byte {
		b := binary.LittleEndian.AppendUint64(nil, 0)
		b = binary.AppendUvarint(b, uint64(len(key)))
		return append(b, key...)
	}
	state := func(tat, interval, burst int64) []byte {
		b := head("rl")
		for _, n := range []int64{tat, interval, burst} {
			b = binary.LittleEndian.AppendUint64(b, uint64(n))
		}
		return b
	}
	for name, rec := range map[string][]byte{
		"short":         aux("recached-json", []byte{1, 2}),
		"key too long":  aux("recached-json", append(binary.LittleEndian.AppendUint64(nil, 0), 40, 'k')),
		"not json":      aux("recached-json", append(head("d"), "{x"...)),
		"bad rl length": aux("recached-ratelimit", append(head("rl"), 1, 2, 3)),
		"bad rl state":  aux("recached-ratelimit", state(0, 1e9, 1)),
		"bad interval":  aux("recached-ratelimit", state(5, 0, 1)),
	} {
		_, err := readAll("bad.rdb", file(10, rec))
		var ce *rdb.CorruptError
		if !errors.As(err, &ce) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
