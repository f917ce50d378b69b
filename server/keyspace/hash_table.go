package keyspace

import (
	"maps"
	"unsafe"
)

// indexThreshold is the size above which a hash table or set keeps a map
// from member to position; smaller ones are searched linearly, which is
// faster and saves the map.
const indexThreshold = 16

// hashTable is a hash in the hashtable encoding. The entries live in a
// dense slice, so that a random entry is one index away (HRANDFIELD) and a
// cursor is a position (HSCAN); a map from field to position is added once
// the table outgrows a linear search. Removing an entry moves the last one
// into its place.
type hashTable struct {
	entries []hashEntry
	index   map[string]int // nil while len(entries) <= indexThreshold
	size    int64          // total bytes of fields and values
}

type hashEntry struct {
	field string
	value []byte
}

// fieldBytes returns the bytes of s without copying them: they must not be
// changed.
func fieldBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// find returns the position of field, or -1.
func (t *hashTable) find(field []byte) int {
	if t.index != nil {
		if i, ok := t.index[string(field)]; ok {
			return i
		}
		return -1
	}
	for i := range t.entries {
		if t.entries[i].field == string(field) {
			return i
		}
	}
	return -1
}

// set sets field to value, copying both, and reports whether the field is
// new.
func (t *hashTable) set(field, value []byte) bool {
	if i := t.find(field); i >= 0 {
		e := &t.entries[i]
		t.size += int64(len(value) - len(e.value))
		if cap(e.value) >= len(value) && cap(e.value) <= 2*len(value)+16 {
			e.value = append(e.value[:0], value...)
		} else {
			e.value = append(make([]byte, 0, len(value)), value...)
		}
		return false
	}
	t.add(string(field), append(make([]byte, 0, len(value)), value...))
	return true
}

// add appends an entry for a field known to be absent, keeping value.
func (t *hashTable) add(field string, value []byte) {
	t.entries = append(t.entries, hashEntry{field: field, value: value})
	t.size += int64(len(field) + len(value))
	n := len(t.entries)
	switch {
	case t.index != nil:
		t.index[field] = n - 1
	case n > indexThreshold:
		t.buildIndex()
	}
}

func (t *hashTable) buildIndex() {
	t.index = make(map[string]int, len(t.entries))
	for i := range t.entries {
		t.index[t.entries[i].field] = i
	}
}

// delete removes field and reports whether it existed.
func (t *hashTable) delete(field []byte) bool {
	i := t.find(field)
	if i < 0 {
		return false
	}
	e := t.entries[i]
	t.size -= int64(len(e.field) + len(e.value))
	last := len(t.entries) - 1
	if t.index != nil {
		delete(t.index, e.field)
	}
	if i != last {
		t.entries[i] = t.entries[last]
		if t.index != nil {
			t.index[t.entries[i].field] = i
		}
	}
	t.entries[last] = hashEntry{}
	t.entries = t.entries[:last]
	if cap(t.entries) >= 64 && 4*len(t.entries) <= cap(t.entries) {
		t.compact()
	}
	return true
}

// compact gives back the memory of a table that shrank to a quarter of its
// capacity: a smaller slice and a fresh index (Go maps never shrink).
func (t *hashTable) compact() {
	t.entries = append(make([]hashEntry, 0, 2*len(t.entries)), t.entries...)
	if len(t.entries) <= indexThreshold {
		t.index = nil
	} else {
		t.buildIndex()
	}
}

// scan visits up to count entries from cursor, from the highest position
// down: a removal only ever moves an entry from a visited position to a
// lower one, so every entry present for the whole iteration is visited.
func (t *hashTable) scan(cursor uint64, count int, fn func(field, value []byte)) uint64 {
	p := uint64(len(t.entries))
	if cursor != 0 && cursor < p {
		p = cursor
	}
	for ; p > 0 && count > 0; count-- {
		p--
		e := &t.entries[p]
		fn(fieldBytes(e.field), e.value)
	}
	return p
}

func (t *hashTable) copy() *hashTable {
	c := &hashTable{entries: make([]hashEntry, len(t.entries)), size: t.size}
	for i, e := range t.entries {
		c.entries[i] = hashEntry{field: e.field, value: append(make([]byte, 0, len(e.value)), e.value...)}
	}
	if t.index != nil {
		c.index = maps.Clone(t.index)
	}
	return c
}

func (t *hashTable) memoryUsage() int64 {
	n := int64(64) + int64(cap(t.entries))*40 + t.size
	if t.index != nil {
		n += int64(len(t.index)) * 48
	}
	return n
}
