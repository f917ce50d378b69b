package snapshot

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/recached/recached/server/keyspace"
)

var updateJSONFixture = flag.Bool("update-json-fixture", false, "write testdata/v1-json.rcd (only when it does not exist yet)")

// jsonFixturePath is a version 1 snapshot holding the json and ratelimit
// types (tags 5 and 6), committed when they were added: it must load, with
// exactly jsonFixtureContents, forever.
const jsonFixturePath = "testdata/v1-json.rcd"

// jsonKeyspace holds documents of every shape and rate limiters, with and
// without expiry, in two databases.
func jsonKeyspace(t testing.TB) *keyspace.Keyspace {
	ks := keyspace.New(2, nil)
	docs := map[string]string{
		"doc":    `{"name":"Ada","n":9223372036854775807,"f":1.50,"big":1E+400,"tags":["a","é","😀"],"nested":{"x":[1,{"y":null}],"ok":true},"odd key":"\u0000\n\""}`,
		"scalar": `"just a string"`,
		"null":   `null`,
		"array":  `[]`,
		"empty":  `{}`,
	}
	for k, text := range docs {
		doc, err := keyspace.ParseJSON([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		ks.DBs[0].Set([]byte(k), &keyspace.Entry{Obj: doc})
	}
	ks.DBs[0].SetExpiry([]byte("doc"), farFuture)
	ks.DBs[0].Set([]byte("rl"), &keyspace.Entry{Obj: &keyspace.RateLimit{TAT: 4102444800000123456, Interval: 333333333, Burst: 14}})
	ks.DBs[0].SetExpiry([]byte("rl"), 4102444800001)
	ks.DBs[1].Set([]byte("rl"), &keyspace.Entry{Obj: &keyspace.RateLimit{TAT: 1, Interval: 1, Burst: 0}})
	return ks
}

// describeJSON renders the json and ratelimit keys of a keyspace, one line
// each, sorted.
func describeJSON(ks *keyspace.Keyspace) string {
	var lines []string
	for dbi, db := range ks.DBs {
		for i := 0; i < keyspace.NumShards; i++ {
			db.Range(i, func(k string, e *keyspace.Entry) bool {
				exp, _ := db.Expiry([]byte(k))
				v := fmt.Sprintf("%T", e.Obj)
				switch o := e.Obj.(type) {
				case *keyspace.JSON:
					v = string(o.Text())
				case *keyspace.RateLimit:
					v = fmt.Sprintf("tat=%d interval=%d burst=%d", o.TAT, o.Interval, o.Burst)
				}
				lines = append(lines, fmt.Sprintf("db%d %q %s exp=%d %s", dbi, k, e.Type(), exp, v))
				return true
			})
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

const jsonFixtureContents = `db0 "array" json exp=0 []
db0 "doc" json exp=4102444800000 {"name":"Ada","n":9223372036854775807,"f":1.50,"big":1E+400,"tags":["a","é","😀"],"nested":{"x":[1,{"y":null}],"ok":true},"odd key":"\u0000\n\""}
db0 "empty" json exp=0 {}
db0 "null" json exp=0 null
db0 "rl" ratelimit exp=4102444800001 tat=4102444800000123456 interval=333333333 burst=14
db0 "scalar" json exp=0 "just a string"
db1 "rl" ratelimit exp=0 tat=1 interval=1 burst=0`

func TestJSONRoundTrip(t *testing.T) {
	ks := jsonKeyspace(t)
	if got := describeJSON(ks); got != jsonFixtureContents {
		t.Fatalf("the sample keyspace is\n%s\nwant\n%s", got, jsonFixtureContents)
	}
	dir := t.TempDir()
	writeKeyspace(t, dir, ks, nil, Header{Generation: 3, Created: 99})
	got := keyspace.New(2, nil)
	if _, loaded, _, err := Load(filepath.Join(dir, SnapshotName), got, nil, 1, false); err != nil || loaded != 7 {
		t.Fatalf("load: %d keys, %v", loaded, err)
	}
	if describeJSON(got) != jsonFixtureContents {
		t.Errorf("after a round trip:\n%s\nwant\n%s", describeJSON(got), jsonFixtureContents)
	}
}

func TestJSONFixture(t *testing.T) {
	if *updateJSONFixture {
		if _, err := os.Stat(jsonFixturePath); err == nil {
			t.Fatalf("%s exists: a committed fixture is never rewritten", jsonFixturePath)
		}
		dir := t.TempDir()
		writeKeyspace(t, dir, jsonKeyspace(t), fixtureMarks(), Header{Generation: 1, Created: 1795990000000})
		b, err := os.ReadFile(filepath.Join(dir, SnapshotName))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(jsonFixturePath, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ks := keyspace.New(2, nil)
	h, loaded, expired, err := Load(jsonFixturePath, ks, func(Marks) {}, 1795990000000, false)
	if err != nil {
		t.Fatal(err)
	}
	if h.Version != 1 || loaded != 7 || expired != 0 {
		t.Errorf("header %+v, %d keys loaded, %d expired", h, loaded, expired)
	}
	if got := describeJSON(ks); got != jsonFixtureContents {
		t.Errorf("%s loads as\n%s\nwant\n%s", jsonFixturePath, got, jsonFixtureContents)
	}
}

func TestJSONCorruptValues(t *testing.T) {
	rl := func(enc *msgpack.Encoder, v ...int64) {
		_ = enc.EncodeArrayLen(len(v))
		for _, n := range v {
			_ = enc.EncodeInt(n)
		}
	}
	tests := []struct {
		name  string
		value func(enc *msgpack.Encoder)
		want  string
	}{
		{"json not text", func(enc *msgpack.Encoder) { _ = enc.EncodeArrayLen(0) }, "bad json document"},
		{"json two values", func(enc *msgpack.Encoder) { _ = enc.EncodeBytes([]byte("1 2")) }, "json document: invalid JSON"},
		{"json bad utf-8", func(enc *msgpack.Encoder) { _ = enc.EncodeBytes([]byte("\"\xff\"")) }, "invalid UTF-8"},
		{"json empty", func(enc *msgpack.Encoder) { _ = enc.EncodeBytes([]byte{}) }, "unexpected end of input"},
		{"ratelimit short", func(enc *msgpack.Encoder) { rl(enc, 1, 2) }, "ratelimit with 2 elements"},
		{"ratelimit zero tat", func(enc *msgpack.Encoder) { rl(enc, 0, 2, 3) }, "invalid ratelimit state"},
		{"ratelimit zero interval", func(enc *msgpack.Encoder) { rl(enc, 1, 0, 3) }, "invalid ratelimit state"},
		{"ratelimit negative burst", func(enc *msgpack.Encoder) { rl(enc, 1, 1, -1) }, "invalid ratelimit state"},
		{"ratelimit overflow", func(enc *msgpack.Encoder) { rl(enc, 1, 1<<40, 1<<40) }, "invalid ratelimit state"},
		{"ratelimit not ints", func(enc *msgpack.Encoder) {
			_ = enc.EncodeArrayLen(3)
			_ = enc.EncodeBytes([]byte("x"))
		}, "bad ratelimit state"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tag := TagJSON
			if strings.HasPrefix(tt.name, "ratelimit") {
				tag = TagRateLimit
			}
			data := craft(Version, func(enc *msgpack.Encoder) {
				keyRecord(enc, uint64(tag), func() { tt.value(enc) })
				endRecord(enc, 1, 0)
			})
			err := readAll(data)
			var ce *CorruptError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want a CorruptError containing %q", err, tt.want)
			}
		})
	}
}
