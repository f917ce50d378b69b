package keyspace

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestTableModel drives a shard table and a Go map with the same random
// inserts and deletions (growing, shrinking, reusing deleted slots) and
// checks after every step that both hold the same keys and that lookups
// of absent keys fail.
func TestTableModel(t *testing.T) {
	for _, c := range []struct {
		name   string
		keys   int // distinct keys drawn from
		steps  int
		delPct int // share of steps that delete
	}{
		{"small churn", 20, 2000, 50},
		{"grow", 5000, 5000, 10},
		{"grow then shrink", 3000, 12000, 70},
		{"tombstone heavy", 200, 20000, 49},
	} {
		t.Run(c.name, func(t *testing.T) {
			ks := New(1, nil)
			db := ks.DBs[0]
			r := rand.New(rand.NewPCG(1, uint64(c.keys)))
			model := map[string]string{}
			for step := 0; step < c.steps; step++ {
				k := fmt.Sprint("key:", r.IntN(c.keys))
				if r.IntN(100) < c.delPct {
					_, had := model[k]
					if got := db.Delete([]byte(k)); got != had {
						t.Fatalf("step %d: Delete(%s) %v, model %v", step, k, got, had)
					}
					delete(model, k)
				} else {
					v := fmt.Sprint("v", step)
					db.SetString([]byte(k), []byte(v), false)
					model[k] = v
				}
				if step%97 == 0 || step == c.steps-1 {
					checkModel(t, db, model)
				}
			}
		})
	}
}

func checkModel(t *testing.T, db *DB, model map[string]string) {
	t.Helper()
	n := 0
	for i := 0; i < NumShards; i++ {
		n += db.Len(i)
		parts := 0
		for p := range db.shards[i].t.parts {
			tb := &db.shards[i].t.parts[p]
			if tb.used >= len(tb.tags) && len(tb.tags) > 0 {
				t.Fatalf("shard %d part %d: %d of %d slots used, none empty", i, p, tb.used, len(tb.tags))
			}
			parts += tb.n
		}
		if parts != db.Len(i) {
			t.Fatalf("shard %d: parts hold %d entries, the table counts %d", i, parts, db.Len(i))
		}
		db.Range(i, func(k string, e *Entry) bool {
			if v, ok := model[k]; !ok || v != string(e.Str) {
				t.Fatalf("table holds %s=%q, model %q (%v)", k, e.Str, v, ok)
			}
			return true
		})
	}
	if n != len(model) {
		t.Fatalf("table holds %d keys, model %d", n, len(model))
	}
	for k, v := range model {
		if e := db.Lookup([]byte(k)); e == nil || string(e.Str) != v {
			t.Fatalf("Lookup(%s) = %v, want %q", k, e, v)
		}
		if e := db.Lookup([]byte(k + "#absent")); e != nil {
			t.Fatalf("Lookup of an absent key found %q", e.key())
		}
	}
}

// TestRangeDeleting checks that deleting keys while ranging over a shard
// (as FLUSH-like callers may) visits every key that was there and leaves
// the table consistent, shrinking included.
func TestRangeDeleting(t *testing.T) {
	ks := New(1, nil)
	db := ks.DBs[0]
	for i := 0; i < 5000; i++ {
		db.SetString([]byte(fmt.Sprint("k", i)), []byte("v"), false)
	}
	seen := map[string]bool{}
	for i := 0; i < NumShards; i++ {
		db.Range(i, func(k string, _ *Entry) bool {
			seen[k] = true
			db.Delete([]byte(k))
			return true
		})
	}
	if len(seen) != 5000 {
		t.Fatalf("visited %d keys, want 5000", len(seen))
	}
	checkModel(t, db, map[string]string{})
	if ks.Used() != 0 {
		t.Fatalf("used %d with no keys", ks.Used())
	}
}

// TestTableSizesFillSizeClasses checks that every table size resize can
// choose makes a slot array that fills its allocation: append rounds a
// slice's capacity up to what its allocation holds, so a size that
// wastes part of its size class (192 slots with their allocation header
// take the 1792-byte class, room for 223) grows when appended to.
func TestTableSizesFillSizeClasses(t *testing.T) {
	var p part
	last := 0
	for n := 1; n < 1<<21; n += 1 + n/8 {
		p.resize(n, maphash.MakeSeed())
		if size := len(p.slots); size != last {
			last = size
			if c := cap(slices.Grow(p.slots[:0:0], size)); c != size {
				t.Errorf("a table of %d slots allocates room for %d", size, c)
			}
		}
	}
}

// TestEntryLayout stores keys and values of lengths around every
// boundary of the inline layout (key length byte, inline keys, the inline
// room, the largest allocation) and rewrites the values to move them in
// and out of the entry, checking contents, Key and used memory.
func TestEntryLayout(t *testing.T) {
	keyLens := []int{0, 1, 14, 15, 16, 47, 127, maxInlineKey, maxInlineKey + 1, 300}
	valLens := []int{0, 1, 15, 16, 31, 32, 100, 190, 206, 207, 208, 209, 1000}
	for _, kl := range keyLens {
		for _, vl := range valLens {
			t.Run(fmt.Sprintf("key %d value %d", kl, vl), func(t *testing.T) {
				ks := New(1, nil)
				db := ks.DBs[0]
				key := []byte(strings.Repeat("k", kl))
				if kl > 0 {
					key[kl-1] = 'z'
				}
				val := bytes.Repeat([]byte("v"), vl)
				e := db.SetString(key, val, false)
				check := func(what string, want []byte) {
					t.Helper()
					got := db.Lookup(key)
					if got != e || got.key() != string(key) || !bytes.Equal(got.Str, want) {
						t.Fatalf("%s: entry %p (want %p) key %q value %q, want %q", what, got, e, got.key(), got.Str, want)
					}
					usedInvariant(t, ks)
					if SizeOfEntry(e) < int64(len(want)) {
						t.Fatalf("%s: counted %d bytes for a %d-byte value", what, SizeOfEntry(e), len(want))
					}
				}
				check("new", val)
				for _, nl := range []int{vl + 1, 2*vl + 40, 3, vl, 0, 250} {
					nv := bytes.Repeat([]byte{'a' + byte(nl%26)}, nl)
					e = db.SetString(key, nv, false)
					check(fmt.Sprintf("rewritten to %d bytes", nl), nv)
				}
				// Appended in place as APPEND does.
				e.Str = append(e.Str, "tail"...)
				db.Account(key)
				check("appended", append(bytes.Repeat([]byte{'a' + byte(250%26)}, 250), "tail"...))
			})
		}
	}
}

// TestSetKeysForeignEntries checks that Set and Load store an entry built
// by a caller (or held under another key, as RENAME moves it) as one that
// holds its key, and return or store that one.
func TestSetKeysForeignEntries(t *testing.T) {
	ks := New(1, nil)
	db := ks.DBs[0]
	e := db.Set([]byte("a"), &Entry{Str: []byte("hello"), flags: flagRaw})
	if e.key() != "a" || string(e.Str) != "hello" || e.StrEncoding(func([]byte) bool { return false }) != "raw" {
		t.Fatalf("stored %q=%q raw=%v", e.key(), e.Str, e.flags&flagRaw != 0)
	}
	if again := db.Set([]byte("a"), e); again != e {
		t.Fatal("an entry holding its key was copied")
	}
	db.Delete([]byte("a"))
	moved := db.Set([]byte("b"), e)
	if moved == e || moved.key() != "b" || string(moved.Str) != "hello" || moved.flags&flagRaw == 0 {
		t.Fatalf("moved entry %q=%q", moved.key(), moved.Str)
	}
	h := NewHash()
	h.Set([]byte("f"), []byte("v"))
	if !db.Load("c", &Entry{Obj: h}, ks.Now()+10000) {
		t.Fatal("Load of a new key failed")
	}
	got := db.Lookup([]byte("c"))
	if got == nil || got.key() != "c" || !got.HasExpiry() || !got.objInside() {
		t.Fatalf("loaded %v", got)
	}
	if v, ok := got.Obj.(*Hash).Get([]byte("f")); !ok || string(v) != "v" {
		t.Fatalf("loaded hash holds f=%q (%v)", v, ok)
	}
	usedInvariant(t, ks)
}

// TestCollectionInEntry checks the sets and hashes kept in their entry
// (entry.go): AddSet and AddHash keep them there, a move to another key
// takes the header along, and a caller's own set stored with SetObject
// stays the caller's.
func TestCollectionInEntry(t *testing.T) {
	ks := New(1, nil)
	db := ks.DBs[0]
	lim := HashLimits{Entries: 128, Value: 64}
	s := db.AddSet([]byte("s"), nil, 0)
	h := db.AddHash([]byte("h"))
	for i := range 600 { // past the intset and listpack limits
		m := []byte(fmt.Sprint(i))
		s.Add(m, SetMaxIntsetEntries)
		h.SetWith(m, m, lim)
		e := db.Lookup([]byte("s"))
		if e.Obj != s || !e.objInside() || !db.Lookup([]byte("h")).objInside() {
			t.Fatalf("after %d members the set or hash left its entry", i+1)
		}
		db.Account([]byte("s"))
		db.Account([]byte("h"))
	}
	if s.Encoding() != "hashtable" || h.Encoding() != "hashtable" || s.Len() != 600 || h.Len() != 600 {
		t.Fatalf("set %s of %d, hash %s of %d", s.Encoding(), s.Len(), h.Encoding(), h.Len())
	}
	usedInvariant(t, ks)

	// RENAME: the entry moves to an allocation holding the new key.
	old := db.Lookup([]byte("s"))
	db.Delete([]byte("s"))
	moved := db.Set([]byte("t"), old)
	ms := moved.Obj.(*Set)
	if moved == old || !moved.objInside() || ms == s || ms.Len() != 600 || !ms.Has([]byte("599")) {
		t.Fatalf("moved set: inside %v, len %d", moved.objInside(), ms.Len())
	}
	if ms.Add([]byte("new"), SetMaxIntsetEntries); !db.Lookup([]byte("t")).Obj.(*Set).Has([]byte("new")) {
		t.Fatal("the moved set lost a member")
	}

	// A caller's set stays the caller's.
	own := NewSet()
	own.Add([]byte("1"), SetMaxIntsetEntries)
	e := db.SetObject([]byte("u"), own)
	if e.Obj != own || e.objInside() || e.key() != "u" {
		t.Fatalf("SetObject stored %v", e.Obj)
	}
	// A sorted set's skip list, kept alive by the header's first pointer
	// alone, survives collections, and a move.
	z := db.AddZSet([]byte("z"))
	for i := range 300 {
		z.AddString(fmt.Sprint("m", i), float64(i), DefaultZLimits())
		if i%50 == 0 {
			runtime.GC()
		}
	}
	ze := db.Lookup([]byte("z"))
	db.Delete([]byte("z"))
	z = db.Set([]byte("z2"), ze).Obj.(*ZSet)
	ze = nil
	runtime.GC()
	runtime.GC()
	junk := make([][]byte, 0, 1000)
	for range 1000 {
		junk = append(junk, make([]byte, 64))
	}
	if z.Encoding() != "skiplist" || z.Len() != 300 || !db.Lookup([]byte("z2")).objInside() {
		t.Fatalf("sorted set %s of %d", z.Encoding(), z.Len())
	}
	for i := range 300 {
		if sc, ok := z.ScoreString(fmt.Sprint("m", i)); !ok || sc != float64(i) {
			t.Fatalf("m%d scored %v (%v)", i, sc, ok)
		}
	}
	_ = junk

	// A set kept in its entry turns into a string as any value does.
	db.AddSet([]byte("v"), nil, 0).Add([]byte("7"), SetMaxIntsetEntries)
	if e := db.SetString([]byte("v"), []byte("str"), false); e.Obj != nil || string(e.Str) != "str" {
		t.Fatalf("SET over a set left %v %q", e.Obj, e.Str)
	}
	usedInvariant(t, ks)
}

// TestStringKeyBytes reports the live heap a string key of the memory
// table's row takes (11-byte key, 16-byte value) and keeps it from
// growing back to what a map and three allocations a key took (136
// bytes): one allocation a key, and the table's slots.
func TestStringKeyBytes(t *testing.T) {
	const n = 200000
	per, objs := heapPerKey(n, func(db *DB, i int) {
		db.SetString(fmt.Appendf(nil, "k:%09d", i), fmt.Appendf(nil, "value:%010d", i), false)
	})
	t.Logf("%.1f live bytes and %.2f objects a key", per, objs)
	if objs > 1.05 || per > 110 {
		t.Fatalf("%.1f bytes and %.2f objects a key", per, objs)
	}
}

// heapPerKey returns the live heap bytes and objects a key takes when n
// keys are added by add to a new keyspace.
func heapPerKey(n int, add func(db *DB, i int)) (bytes, objects float64) {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	ks := New(1, nil)
	for i := 0; i < n; i++ {
		add(ks.DBs[0], i)
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	runtime.KeepAlive(ks)
	return float64(m1.HeapAlloc-m0.HeapAlloc) / float64(n), float64(m1.HeapObjects-m0.HeapObjects) / float64(n)
}

// BenchmarkStringKeyBytes reports the live bytes a key of the memory
// table's strings row takes, as bytes/key.
func BenchmarkStringKeyBytes(b *testing.B) {
	for i := 0; i < b.N; i++ {
		per, _ := heapPerKey(100000, func(db *DB, i int) {
			db.SetString(fmt.Appendf(nil, "k:%09d", i), fmt.Appendf(nil, "value:%010d", i), false)
		})
		b.ReportMetric(per, "bytes/key")
	}
}

// FuzzTable runs a sequence of operations read from the input against a
// shard table and a Go map: each pair of bytes is an operation (set,
// delete or evict, set with a time to live, rename) and a key among 64
// whose length crosses the inline boundaries, and after the sequence both
// must hold the same keys and values with used memory exact. Some deletes
// first range over the key's shard and keep the keys it hands out, which
// must not change when evicted entries are recycled for other keys.
func FuzzTable(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 1, 1, 2, 3, 3, 2})
	f.Add(bytes.Repeat([]byte{0, 7, 1, 7}, 50))
	f.Add([]byte("a longer seed with many different keys and operations 0123456789"))
	f.Fuzz(func(t *testing.T, ops []byte) {
		ks := New(1, nil)
		db := ks.DBs[0]
		model := map[string]string{}
		var kept [][2]string
		name := func(b byte) string {
			k := int(b) % 64
			return fmt.Sprint(strings.Repeat("k", k*5%(maxInlineKey+20)), k)
		}
		for i := 0; i+1 < len(ops) && i < 2000; i += 2 {
			k := name(ops[i+1])
			switch ops[i] % 4 {
			case 0, 2:
				v := strings.Repeat("v", int(ops[i])%230)
				db.SetString([]byte(k), []byte(v), false)
				if ops[i]%4 == 2 {
					db.SetExpiry([]byte(k), ks.Now()+100000)
				}
				model[k] = v
			case 1:
				if ops[i]&8 != 0 {
					db.Range(ks.ShardOf([]byte(k)), func(k string, _ *Entry) bool {
						kept = append(kept, [2]string{k, strings.Clone(k)})
						return true
					})
				}
				if ops[i]&4 != 0 {
					db.Evict(ks.ShardOf([]byte(k)), []byte(k), nil)
				} else {
					db.Delete([]byte(k))
				}
				delete(model, k)
			case 3:
				dst := name(ops[i+1] + 1)
				if e := db.Lookup([]byte(k)); e != nil && dst != k {
					db.Delete([]byte(k))
					db.Delete([]byte(dst))
					db.Set([]byte(dst), e)
					model[dst] = model[k]
					delete(model, k)
				}
			}
		}
		checkModel(t, db, model)
		usedInvariant(t, ks)
		for _, k := range kept {
			if k[0] != k[1] {
				t.Fatalf("a key handed out by Range changed from %q to %q", k[1], k[0])
			}
		}
	})
}

// TestEvictRecycles checks that an evicted string entry is reused for the
// next new key instead of a new allocation, and that keys Range handed
// out keep their bytes while entries are recycled.
func TestEvictRecycles(t *testing.T) {
	ks := New(1, nil)
	db := ks.DBs[0]
	val := bytes.Repeat([]byte("v"), 100)
	keys := make([][]byte, 2000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key:%06d", i)
	}
	for _, k := range keys[:1000] {
		db.SetString(k, val, false)
	}
	var kept [][2]string
	db.Range(ks.ShardOf(keys[0]), func(k string, _ *Entry) bool {
		kept = append(kept, [2]string{k, strings.Clone(k)})
		return true
	})
	next := 1000
	allocs := testing.AllocsPerRun(900, func() {
		old := keys[next-1000]
		if !db.Evict(ks.ShardOf(old), old, nil) {
			t.Fatalf("Evict(%s) found nothing", old)
		}
		db.SetString(keys[next], val, false)
		next++
	})
	// The race detector's sync.Pool drops a quarter of what it is given.
	if allocs > 0.5 {
		t.Errorf("%.2f allocations to evict a key and set a new one", allocs)
	}
	for _, k := range kept {
		if k[0] != k[1] {
			t.Fatalf("a key handed out by Range changed from %q to %q", k[1], k[0])
		}
	}
	model := map[string]string{}
	for _, k := range keys[next-1000 : next] {
		model[string(k)] = string(val)
	}
	checkModel(t, db, model)
	usedInvariant(t, ks)
}
