package keyspace

import (
	"fmt"
	"testing"
)

func TestExpiry(t *testing.T) {
	now := int64(1000)
	var expired []string
	ks := New(2, func(db int, key string) { expired = append(expired, fmt.Sprintf("%d:%s", db, key)) })
	ks.Now = func() int64 { return now }
	db := ks.DBs[1]
	db.SetString([]byte("a"), []byte("1"), false)
	db.SetString([]byte("b"), []byte("2"), false)
	db.SetExpiry([]byte("a"), 1500)
	if at, ok := db.Expiry([]byte("a")); !ok || at != 1500 {
		t.Fatalf("Expiry = %d %v", at, ok)
	}
	if db.Lookup([]byte("a")) == nil {
		t.Fatal("a expired early")
	}
	now = 1500
	if db.Peek([]byte("a")) != nil {
		t.Fatal("Peek shows an expired key")
	}
	if len(expired) != 0 {
		t.Fatal("Peek deleted a key")
	}
	if db.Lookup([]byte("a")) != nil {
		t.Fatal("Lookup returned an expired key")
	}
	if len(expired) != 1 || expired[0] != "1:a" {
		t.Fatalf("expired = %v", expired)
	}
	// SET without KEEPTTL clears the expiry; with it keeps it.
	db.SetExpiry([]byte("b"), 9000)
	db.SetString([]byte("b"), []byte("3"), true)
	if _, ok := db.Expiry([]byte("b")); !ok {
		t.Fatal("KEEPTTL lost the expiry")
	}
	db.SetString([]byte("b"), []byte("4"), false)
	if _, ok := db.Expiry([]byte("b")); ok {
		t.Fatal("SET kept the expiry")
	}
}

func TestActiveExpirySample(t *testing.T) {
	now := int64(0)
	n := 0
	ks := New(1, func(int, string) { n++ })
	ks.Now = func() int64 { return now }
	db := ks.DBs[0]
	for i := 0; i < 1000; i++ {
		k := []byte(fmt.Sprintf("k%d", i))
		db.SetString(k, []byte("v"), false)
		if i%2 == 0 {
			db.SetExpiry(k, 10)
		}
	}
	now = 100
	for i := 0; i < NumShards; i++ {
		for {
			seen, deleted := db.ExpireSample(i, 20)
			if seen == 0 || deleted == 0 {
				break
			}
		}
	}
	if n != 500 {
		t.Fatalf("expired %d keys, want 500", n)
	}
	total := 0
	for i := 0; i < NumShards; i++ {
		total += db.Len(i)
	}
	if total != 500 {
		t.Fatalf("%d keys left, want 500", total)
	}
}

func BenchmarkLookup(b *testing.B) {
	ks := New(1, nil)
	db := ks.DBs[0]
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key:%012d", i))
		db.SetString(keys[i], []byte("value"), false)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if db.Lookup(keys[i&1023]) == nil {
			b.Fatal("missing")
		}
	}
}

func BenchmarkSetStringExisting(b *testing.B) {
	ks := New(1, nil)
	db := ks.DBs[0]
	k, v := []byte("key:000000000001"), []byte("value:0000000001")
	db.SetString(k, v, false)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		db.SetString(k, v, false)
	}
}

// TestHoldExpiry: while expiry is held a passed key reads as absent and
// stays; a write replacing it leaves no stale expiry or memory behind;
// once released the next lookup expires what is left.
func TestHoldExpiry(t *testing.T) {
	now := int64(1000)
	var expired []string
	ks := New(1, func(db int, key string) { expired = append(expired, key) })
	ks.Now = func() int64 { return now }
	db := ks.DBs[0]
	for _, k := range []string{"a", "b"} {
		db.SetString([]byte(k), []byte("1"), false)
		db.SetExpiry([]byte(k), 1500)
	}
	ks.HoldExpiry(true)
	now = 2000
	if db.Lookup([]byte("a")) != nil || db.Lookup([]byte("b")) != nil {
		t.Fatal("Lookup returned an expired key")
	}
	if len(expired) != 0 {
		t.Fatalf("held keys expired: %v", expired)
	}
	e := db.ReplaceString([]byte("b"), nil, []byte("2"), false)
	if got := db.Lookup([]byte("b")); got != e || e.HasExpiry() {
		t.Fatalf("replaced b: %v", got)
	}
	if _, ok := db.Expiry([]byte("b")); ok {
		t.Fatal("replaced b kept its old expiry")
	}
	ks.HoldExpiry(false)
	if db.Lookup([]byte("a")) != nil || len(expired) != 1 || expired[0] != "a" {
		t.Fatalf("after the hold: expired %v", expired)
	}
	db.Delete([]byte("b"))
	if db.UsedAll() != 0 || db.Expires(db.ks.ShardOf([]byte("b"))) != 0 {
		t.Fatalf("used %d after deleting every key, want 0", db.UsedAll())
	}
}

// TestLookupNoTouch: LookupNoTouch finds a key without making it recently
// used, Lookup with; both expire a key whose time has passed.
func TestLookupNoTouch(t *testing.T) {
	now := int64(1000)
	ks := New(1, nil)
	ks.Now = func() int64 { return now }
	db := ks.DBs[0]
	e := db.SetString([]byte("k"), []byte("v"), false)
	ks.clock.Store(500)
	if db.LookupNoTouch([]byte("k")) != e || ks.Idle(e) != 500 {
		t.Fatalf("LookupNoTouch: idle %d, want 500", ks.Idle(e))
	}
	if db.Lookup([]byte("k")) != e || ks.Idle(e) != 0 {
		t.Fatalf("Lookup: idle %d, want 0", ks.Idle(e))
	}
	db.SetExpiry([]byte("k"), 1500)
	now = 1500
	if db.LookupNoTouch([]byte("k")) != nil || db.Peek([]byte("k")) != nil || db.Len(ks.ShardOf([]byte("k"))) != 0 {
		t.Fatal("LookupNoTouch kept an expired key")
	}
}

// LookupHashed finds what Lookup finds, in every database, and expires a
// key past its time to live the same way.
func TestLookupHashed(t *testing.T) {
	now := int64(1000)
	var expired []string
	ks := New(2, func(db int, key string) { expired = append(expired, fmt.Sprintf("%d:%s", db, key)) })
	ks.Now = func() int64 { return now }
	for _, db := range ks.DBs {
		db.SetString([]byte("live"), []byte(fmt.Sprint(db.Index)), false)
		db.SetString([]byte("old"), []byte("x"), false)
		db.SetExpiry([]byte("old"), 1500)
	}
	now = 2000
	for _, db := range ks.DBs {
		for _, tc := range []struct {
			key  string
			want string // "" absent
		}{{"live", fmt.Sprint(db.Index)}, {"old", ""}, {"none", ""}} {
			key := []byte(tc.key)
			e := db.LookupHashed(key, ks.Hash(key))
			got := ""
			if e != nil {
				got = string(e.Str)
			}
			if got != tc.want {
				t.Errorf("db %d: LookupHashed(%q) = %q, want %q", db.Index, tc.key, got, tc.want)
			}
			if ShardOfHash(ks.Hash(key)) != ks.ShardOf(key) {
				t.Errorf("ShardOfHash(Hash(%q)) is not ShardOf", tc.key)
			}
		}
	}
	if want := []string{"0:old", "1:old"}; fmt.Sprint(expired) != fmt.Sprint(want) {
		t.Errorf("expired %q, want %q", expired, want)
	}
}
