package keyspace

import (
	"fmt"
	"testing"
)

func TestSizeEncoding(t *testing.T) {
	prev := int64(-1)
	for _, n := range []int64{0, 1, 100, 2047, 2048, 2049, 4095, 4096, 1e5, 123456789, 1 << 40, 1<<41 + 12345} {
		d := decodeSize(encodeSize(n))
		if d < n || float64(d-n) > float64(n)/1000+1 {
			t.Errorf("size %d encodes to %d", n, d)
		}
		if d < prev {
			t.Errorf("size %d decodes below a smaller size's %d", d, prev)
		}
		prev = d
	}
}

// usedInvariant checks that every shard's used bytes are the sum of its
// entries' counted sizes, and the database's the sum of its shards'.
func usedInvariant(t *testing.T, ks *Keyspace) {
	t.Helper()
	for _, db := range ks.DBs {
		var total int64
		for i := range db.shards {
			var sum int64
			db.shards[i].t.each(false, func(e *Entry) bool {
				sum += SizeOfEntry(e)
				return true
			})
			if sum != db.shards[i].used {
				t.Fatalf("db %d shard %d counts %d, entries sum %d", db.Index, i, db.shards[i].used, sum)
			}
			total += sum
		}
		if total != db.UsedAll() {
			t.Fatalf("db %d counts %d, shards sum %d", db.Index, db.UsedAll(), total)
		}
	}
}

func TestUsedFollowsEntries(t *testing.T) {
	ks := New(2, nil)
	db := ks.DBs[0]
	steps := []struct {
		name string
		do   func()
	}{
		{"new strings", func() {
			for i := 0; i < 500; i++ {
				db.SetString([]byte(fmt.Sprint("k", i)), make([]byte, i), false)
			}
		}},
		{"replace strings", func() {
			for i := 0; i < 500; i += 3 {
				db.SetString([]byte(fmt.Sprint("k", i)), make([]byte, 2*i+100), false)
			}
		}},
		{"expiry", func() {
			for i := 0; i < 500; i += 5 {
				db.SetExpiry([]byte(fmt.Sprint("k", i)), ks.Now()+100000)
			}
			for i := 0; i < 500; i += 10 {
				db.Persist([]byte(fmt.Sprint("k", i)))
			}
		}},
		{"objects grow in place", func() {
			for i := 0; i < 50; i++ {
				k := []byte(fmt.Sprint("h", i))
				e := &Entry{Obj: NewHash()}
				db.Set(k, e)
				for j := 0; j < i; j++ {
					e.Obj.(*Hash).Set([]byte(fmt.Sprint("f", j)), []byte("value"))
				}
				db.Account(k)
			}
		}},
		{"delete and evict", func() {
			for i := 0; i < 500; i += 7 {
				db.Delete([]byte(fmt.Sprint("k", i)))
			}
			for i := 1; i < 500; i += 7 {
				k := []byte(fmt.Sprint("k", i))
				db.Evict(ks.ShardOf(k), k, nil)
			}
		}},
		{"swap", func() { Swap(ks.DBs[0], ks.DBs[1]); Swap(ks.DBs[0], ks.DBs[1]) }},
		{"clear", func() {
			for i := 0; i < NumShards; i += 2 {
				db.Clear(i)
			}
		}},
	}
	for _, st := range steps {
		st.do()
		usedInvariant(t, ks)
		if ks.Used() != db.UsedAll() {
			t.Fatalf("after %s: keyspace counts %d, database %d", st.name, ks.Used(), db.UsedAll())
		}
	}
	if ks.Used() <= 0 {
		t.Fatalf("used %d with keys left", ks.Used())
	}
	for i := 0; i < NumShards; i++ {
		db.Clear(i)
	}
	if ks.Used() != 0 {
		t.Fatalf("used %d after clearing everything", ks.Used())
	}
}

func TestLFUCounter(t *testing.T) {
	ks := New(1, nil)
	ks.SetLFU(true, 10, 1)
	e := ks.DBs[0].Set([]byte("k"), &Entry{})
	if got := ks.Freq(e); got != lfuInitVal {
		t.Fatalf("new key's counter %d, want %d", got, lfuInitVal)
	}
	for i := 0; i < 100000; i++ {
		ks.DBs[0].Lookup([]byte("k"))
	}
	// Redis's table for lfu-log-factor 10: 100K hits reach about 255...
	// 1M hits 255; 100K hits are past 100 (redis.conf's figures).
	if got := ks.Freq(e); got < 100 {
		t.Fatalf("counter %d after 100K accesses", got)
	}
	// Ten minutes idle with decay 1: ten less.
	before := ks.Freq(e)
	e.Atime -= 60000
	if got := ks.Freq(e); got != before-10 {
		t.Fatalf("counter %d after 10 idle minutes, want %d", got, before-10)
	}
}

// BenchmarkSampleChurn samples a shard the way eviction does while keys
// come and go, so that a map grown by churn shows in the figure.
func BenchmarkSampleChurn(b *testing.B) {
	ks := New(1, nil)
	db := ks.DBs[0]
	val := make([]byte, 100)
	for i := 0; i < 20000; i++ {
		db.SetString([]byte(fmt.Sprint("key:", i)), val, false)
	}
	b.ResetTimer()
	next := 20000
	var victim []byte
	for i := 0; i < b.N; i++ {
		sh := i % NumShards
		victim = victim[:0]
		db.Sample(sh, false, 5, func(k string, _ *Entry, _ int64) { victim = append(victim[:0], k...) })
		if len(victim) > 0 {
			db.Evict(sh, victim, nil)
		}
		db.SetString([]byte(fmt.Sprint("key:", next)), val, false)
		next++
	}
}
