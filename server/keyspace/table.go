package keyspace

import (
	"hash/maphash"
	"math/rand/v2"
	"unsafe"
)

// part is one of a table's parts: an open-addressing hash table (linear
// probing) of entries, each of which holds its own key (entry.go). A slot is a
// pointer and a tag byte, 9 bytes, where map[string]*Entry spends 25 bytes
// a slot on a string header, a pointer and a control byte. A table grows
// when it is 41/50 full (resize): by half from a size 2^k, then, as every
// rehash reads every entry's key (a cache miss each), by doubling through
// the sizes 3*2^k, between 2/5 and 41/50 full: 11 to 23 bytes a key.
//
// The tag of a live slot is seven bits of the key's hash plus 2, so that
// a probe reads an entry (a cache miss) only when the tags match; 0 marks
// an empty slot, which ends a probe, and 1 a deleted one, which does not.
// The hash is the keyspace's: its low bits choose the shard (ShardOf), the
// seven above them the tag, its high 32 bits the home slot (home).
type part struct {
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

func tagOf(h uint64) uint8 { return uint8(h>>shardBits)&0x7f + 2 }

// home is the slot where the probe for hash h starts in a table of size
// slots: the high 32 bits of h scaled to the size.
func home(h uint64, size int) int { return int((h >> 32) * uint64(size) >> 32) }

// bytesView returns b's bytes as a string for a lookup that does not keep
// it.
func bytesView(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// find returns the slot of key, whose hash is h, or -1.
func (t *part) find(key string, h uint64) int {
	if t.n == 0 {
		return -1
	}
	tag := tagOf(h)
	for i := home(h, len(t.tags)); ; i = t.next(i) {
		switch t.tags[i] {
		case tagEmpty:
			return -1
		case tag:
			if t.slots[i].key() == key {
				return i
			}
		}
	}
}

// next is the slot after i, wrapping around.
func (t *part) next(i int) int {
	if i++; i == len(t.tags) {
		return 0
	}
	return i
}

// get returns the entry of key, or nil.
func (t *part) get(key string, h uint64) *Entry {
	if i := t.find(key, h); i >= 0 {
		return t.slots[i]
	}
	return nil
}

// insert adds e, whose key (hash h) the table does not hold yet.
func (t *part) insert(e *Entry, h uint64, seed maphash.Seed) {
	if (t.used+1)*50 > len(t.tags)*41 {
		t.resize(t.n+1, seed)
	}
	i := home(h, len(t.tags))
	for t.tags[i] >= 2 {
		i = t.next(i)
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
func (t *part) remove(i int, seed maphash.Seed) {
	t.slots[i] = nil
	t.n--
	if t.tags[t.next(i)] != tagEmpty {
		t.tags[i] = tagDeleted
	} else {
		for t.tags[i] != tagEmpty && t.slots[i] == nil {
			t.tags[i] = tagEmpty
			t.used--
			if i--; i < 0 {
				i = len(t.tags) - 1
			}
		}
	}
	if t.n*10 < len(t.tags) && len(t.tags) > minTable {
		t.resize(t.n, seed)
	}
}

// resize rehashes the table into the smallest size of the sequence 8,
// 12, 16, 24, 32, … (fitSize) that holds n entries at most 11/20 full (an
// empty table has no slots): a table of size 2^k grown at 41/50 full is
// then about 8/15 full, one of size 3*2^k 2/5 full. (A bound of 5/8 would step
// through every size, growing by 1.41 on average and keeping 11 to 17
// bytes a key, but moves 2.9 entries per key inserted where this moves
// 1.25: a million new keys took 2.6 times the rehash time.) Growing at
// 41/50 full rather than 4/5 costs next to nothing in probes and lets
// more tables stop a size lower. Simulated for a database of 10 000 to
// 2 000 000 keys, with fitSize, the slots and tags take 15.8 bytes a key
// on average (16.2 growing at 4/5, 17.4 before fitSize), at 100 000 keys
// 13.2 (17.5, 20.1), for as many entries moved.
func (t *part) resize(n int, seed maphash.Seed) {
	size := 0
	if n > 0 {
		size = minTable
		for fitSize(size)*11 < n*20 {
			if size&(size-1) == 0 {
				size += size / 2
			} else {
				size += size / 3
			}
		}
		size = fitSize(size)
	}
	old := t.slots
	t.tags, t.slots, t.n, t.used = nil, nil, 0, 0
	if size == 0 {
		return
	}
	t.tags = make([]uint8, size)
	t.slots = make([]*Entry, size)
	for _, e := range old {
		if e == nil {
			continue
		}
		h := maphash.String(seed, e.key())
		i := home(h, size)
		for t.tags[i] != tagEmpty {
			i = t.next(i)
		}
		t.tags[i] = tagOf(h)
		t.slots[i] = e
		t.n++
	}
	t.used = t.n
}

// fitSize is size, or one slot less where that makes the slots fill the
// allocator's size class: a slot array of 513 bytes to 32 KiB carries an
// 8-byte header that would push a size of the sequence (8, 12, 16, 24,
// …: whole size classes) into the next class, 1792 bytes for 192 slots
// where 191 fill 1536.
func fitSize(size int) int {
	if b := size * 8; b > 512 && b <= 32<<10 {
		return size - 1
	}
	return size
}

// each calls fn for every entry, from a random slot on when random is
// set, until fn returns false, and reports whether fn never did. fn may
// delete entries (then some may be passed to it after their deletion,
// once) but not add any.
func (t *part) each(random bool, fn func(e *Entry) bool) bool {
	slots := t.slots
	if len(slots) == 0 {
		return true
	}
	start := 0
	if random {
		start = rand.IntN(len(slots))
	}
	i := start
	for range slots {
		if e := slots[i]; e != nil && !fn(e) {
			return false
		}
		if i++; i == len(slots) {
			i = 0
		}
	}
	return true
}

// table is a shard's keys, split by hash into tableParts parts that grow
// and shrink on their own: a part rehashes all its entries at once, so
// the split bounds the pause of a growing shard to a sixteenth of it.
// A slot index of the table is the part's index times 1<<partShift plus
// the slot's in the part.
type table struct {
	parts [tableParts]part
	n     int // live entries in all parts
}

const (
	tableParts = 16
	partShift  = 40
)

// partOf is the part of hash h: four bits above the tag's.
func partOf(h uint64) int { return int(h>>(shardBits+7)) & (tableParts - 1) }

// find returns the slot of key, whose hash is h, or -1.
func (t *table) find(key string, h uint64) int {
	p := partOf(h)
	if i := t.parts[p].find(key, h); i >= 0 {
		return p<<partShift | i
	}
	return -1
}

// get returns the entry of key, or nil.
func (t *table) get(key string, h uint64) *Entry { return t.parts[partOf(h)].get(key, h) }

// at returns the entry in slot i, which find returned.
func (t *table) at(i int) *Entry { return t.parts[i>>partShift].slots[i&(1<<partShift-1)] }

// put replaces the entry in slot i, which find returned, by e.
func (t *table) put(i int, e *Entry) { t.parts[i>>partShift].slots[i&(1<<partShift-1)] = e }

// insert adds e, whose key (hash h) the table does not hold yet.
func (t *table) insert(e *Entry, h uint64, seed maphash.Seed) {
	t.parts[partOf(h)].insert(e, h, seed)
	t.n++
}

// remove empties slot i, which find returned.
func (t *table) remove(i int, seed maphash.Seed) {
	t.parts[i>>partShift].remove(i&(1<<partShift-1), seed)
	t.n--
}

// reserve sizes an empty table for n entries.
func (t *table) reserve(n int, seed maphash.Seed) {
	for p := range t.parts {
		t.parts[p].resize(n/tableParts+1, seed)
	}
}

// each calls fn for every entry, from a random place on when random is
// set, until fn returns false; fn may delete entries but not add any
// (part.each).
func (t *table) each(random bool, fn func(e *Entry) bool) {
	start := 0
	if random {
		start = rand.IntN(tableParts)
	}
	for j := range tableParts {
		if !t.parts[(start+j)%tableParts].each(random && j == 0, fn) {
			return
		}
	}
}
