package snapshot

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recached/recached/server/keyspace"
)

var updateFixture = flag.Bool("update-fixture", false, "rewrite testdata/v1.rcd (only ever for a new format version's own fixture)")

// fixturePath is a snapshot written by format version 1. It is committed
// and must load, with exactly the contents below, forever.
const fixturePath = "testdata/v1.rcd"

// fixtureKeyspace is what testdata/v1.rcd was written from.
func fixtureKeyspace() *keyspace.Keyspace {
	ks := keyspace.New(3, nil)
	db := ks.DBs[0]
	db.SetString([]byte("string"), []byte("hello, world"), false)
	db.SetString([]byte("empty"), nil, false)
	db.SetString([]byte("bin\x00key"), []byte{0, 1, 2, 0xfe, 0xff}, false)
	db.SetString([]byte("expiring"), []byte("until 2100"), false)
	db.SetExpiry([]byte("expiring"), 4102444800000)
	l := keyspace.NewList(keyspace.ListMaxListpackSize)
	for _, v := range []string{"a", "b", "", "a"} {
		l.PushBack([]byte(v))
	}
	db.Set([]byte("list"), &keyspace.Entry{Obj: l})
	s := keyspace.NewSet()
	for _, m := range []string{"x", "y", "42"} {
		s.Add([]byte(m), keyspace.SetMaxIntsetEntries)
	}
	db.Set([]byte("set"), &keyspace.Entry{Obj: s})
	z := keyspace.NewZSet()
	z.Add([]byte("low"), math.Inf(-1), keyspace.DefaultZLimits())
	z.Add([]byte("mid"), 2.5, keyspace.DefaultZLimits())
	z.Add([]byte("high"), 1e300, keyspace.DefaultZLimits())
	db.Set([]byte("zset"), &keyspace.Entry{Obj: z})
	db.SetExpiry([]byte("zset"), 4102444800001)
	h := keyspace.NewHash()
	h.Set([]byte("name"), []byte("recached"))
	h.Set([]byte("version"), []byte("1"))
	db.Set([]byte("hash"), &keyspace.Entry{Obj: h})
	ks.DBs[2].SetString([]byte("string"), []byte("db two"), false)
	return ks
}

func fixtureMarks() []Marks {
	return []Marks{{ClientID: "browser-1", High: 17, LastSeen: 1795990000000}, {ClientID: "backend", High: 1 << 40, LastSeen: 1795990000001}}
}

// fixtureContents is testdata/v1.rcd's exact contents, as describe renders
// them. It must never change.
const fixtureContents = `db0 "bin\x00key" string exp=0 "\x00\x01\x02\xfe\xff"
db0 "empty" string exp=0 ""
db0 "expiring" string exp=4102444800000 "until 2100"
db0 "hash" hash exp=0 ["name"="recached" "version"="1"]
db0 "list" list exp=0 ["a" "b" "" "a"]
db0 "set" set exp=0 ["42" "x" "y"]
db0 "string" string exp=0 "hello, world"
db0 "zset" zset exp=4102444800001 ["low":-Inf "mid":2.5 "high":1e+300]
db2 "string" string exp=0 "db two"`

func TestFixture(t *testing.T) {
	if *updateFixture {
		dir := t.TempDir()
		writeKeyspace(t, dir, fixtureKeyspace(), fixtureMarks(), Header{Generation: 1, Created: 1795990000000})
		b, err := os.ReadFile(filepath.Join(dir, SnapshotName))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(fixturePath, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ks := keyspace.New(3, nil)
	var marks []Marks
	h, loaded, expired, err := Load(fixturePath, ks, func(m Marks) { marks = append(marks, m) }, 1795990000000, false)
	if err != nil {
		t.Fatal(err)
	}
	if h.Version != 1 || h.Generation != 1 || h.Created != 1795990000000 || h.Keys != nil || loaded != 9 || expired != 0 {
		t.Errorf("header %+v, %d keys loaded, %d expired", h, loaded, expired)
	}
	if got := describe(ks); got != fixtureContents {
		t.Errorf("the version 1 fixture loads as\n%s\nwant\n%s", got, fixtureContents)
	}
	if got := fmt.Sprint(marks); got != "[{browser-1 17 1795990000000} {backend 1099511627776 1795990000001}]" {
		t.Errorf("marks %s", got)
	}
	var out strings.Builder
	if res, err := Check(fixturePath, false, &out); err != nil || res.Keys != 9 || res.Marks != 2 {
		t.Errorf("check: %v %+v", err, res)
	}
}
