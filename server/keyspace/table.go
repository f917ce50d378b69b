package keyspace

import (
	"hash/maphash"
	"math/rand/v2"
	"unsafe"
)

// table is a shard's keys: an open-addressing hash table (linear probing)
// of entries, each of which holds its own key (entry.go). A slot is a
// pointer and a tag byte, 9 bytes, where map[string]*Entry spends 25 bytes
// a slot on a string header, a pointer and a control byte; at the load
// the table keeps (from 2/5 to 4/5 full) that is about 15 bytes a key.
//
// The tag of a live slot is seven bits of the key's hash plus 2, so that
// a probe reads an entry (a cache miss) only when the tags match; 0 marks
// an empty slot, which ends a probe, and 1 a deleted one, which does not.
// The hash is the keyspace's: its low bits choose the shard (ShardOf), the
// bits above them the slot.
type table struct {
	tags  []uint8
	slots []*Entry
	n     int // live entries
	used  int // live entries and deleted slots
}

const (
	tagEmpty   = 0
	tagDeleted = 1
	minTable   = 8
)

// shardBits is how many low bits of a key's hash choose its shard.
const shardBits = 6

func tagOf(h uint64) uint8 { return uint8(h>>57) + 2 }

// bytesView returns b's bytes as a string for a lookup that does not keep
// it.
func bytesView(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// find returns the slot of key, whose hash is h, or -1.
func (t *table) find(key string, h uint64) int {
	if t.n == 0 {
		return -1
	}
	mask := len(t.tags) - 1
	tag := tagOf(h)
	for i := int(h>>shardBits) & mask; ; i = (i + 1) & mask {
		switch t.tags[i] {
		case tagEmpty:
			return -1
		case tag:
			if t.slots[i].Key() == key {
				return i
			}
		}
	}
}

// get returns the entry of key, or nil.
func (t *table) get(key string, h uint64) *Entry {
	if i := t.find(key, h); i >= 0 {
		return t.slots[i]
	}
	return nil
}

// insert adds e, whose key (hash h) the table does not hold yet.
func (t *table) insert(e *Entry, h uint64, seed maphash.Seed) {
	if (t.used+1)*5 > len(t.tags)*4 {
		t.resize(t.n+1, seed)
	}
	mask := len(t.tags) - 1
	i := int(h>>shardBits) & mask
	for t.tags[i] >= 2 {
		i = (i + 1) & mask
	}
	if t.tags[i] == tagEmpty {
		t.used++
	}
	t.tags[i] = tagOf(h)
	t.slots[i] = e
	t.n++
}

// remove empties slot i. A run of deleted slots that ends at an empty one
// becomes empty again, so that probes stay short; a table left less than
// a tenth full shrinks, as Redis's does.
func (t *table) remove(i int, seed maphash.Seed) {
	mask := len(t.tags) - 1
	t.slots[i] = nil
	t.n--
	if t.tags[(i+1)&mask] != tagEmpty {
		t.tags[i] = tagDeleted
	} else {
		for t.tags[i] != tagEmpty && t.slots[i] == nil {
			t.tags[i] = tagEmpty
			t.used--
			i = (i - 1) & mask
		}
	}
	if t.n*10 < len(t.tags) && len(t.tags) > minTable {
		t.resize(t.n, seed)
	}
}

// resize rehashes the table into the smallest power of two that holds n
// entries at most 2/5 full (an empty table has no slots).
func (t *table) resize(n int, seed maphash.Seed) {
	size := 0
	if n > 0 {
		size = minTable
		for size*2 < n*5 {
			size *= 2
		}
	}
	old := t.slots
	t.tags, t.slots, t.n, t.used = nil, nil, 0, 0
	if size == 0 {
		return
	}
	t.tags = make([]uint8, size)
	t.slots = make([]*Entry, size)
	mask := size - 1
	for _, e := range old {
		if e == nil {
			continue
		}
		h := maphash.String(seed, e.Key())
		i := int(h>>shardBits) & mask
		for t.tags[i] != tagEmpty {
			i = (i + 1) & mask
		}
		t.tags[i] = tagOf(h)
		t.slots[i] = e
		t.n++
	}
	t.used = t.n
}

// each calls fn for every entry, from a random slot on when random is
// set, until fn returns false. fn may delete entries (then some may be
// passed to it after their deletion, once) but not add any.
func (t *table) each(random bool, fn func(e *Entry) bool) {
	slots := t.slots
	if len(slots) == 0 {
		return
	}
	start := 0
	if random {
		start = rand.IntN(len(slots))
	}
	for j := range slots {
		if e := slots[(start+j)&(len(slots)-1)]; e != nil {
			if !fn(e) {
				return
			}
		}
	}
}
