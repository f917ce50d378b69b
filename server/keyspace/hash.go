package keyspace

import "maps"

// Redis 7.0's default thresholds for the compact hash encoding
// (hash-max-listpack-entries, hash-max-listpack-value).
const (
	hashMaxListpackEntries = 512
	hashMaxListpackValue   = 64
)

// indexThreshold is the size above which a hash or set keeps a map from
// member to position; smaller ones are searched linearly, which is faster
// and saves the map.
const indexThreshold = 16

// Hash is a hash value: fields mapped to values.
//
// The entries live in a dense slice, so that a random entry is one index
// away (HRANDFIELD) and a cursor is a position (HSCAN); a map from field to
// position is added once the hash outgrows a linear search. While the hash
// is in the listpack encoding, removing an entry shifts the ones after it,
// which keeps insertion order, the order Redis replies in; a hashtable-
// encoded hash moves its last entry into the hole instead.
type Hash struct {
	entries []hashEntry
	index   map[string]int // nil while len(entries) <= indexThreshold
	size    int64          // total bytes of fields and values
	large   bool           // converted to the hashtable encoding, as Redis never converts back
}

type hashEntry struct {
	field string
	value []byte
}

// NewHash returns an empty hash.
func NewHash() *Hash { return &Hash{} }

// Type reports TypeHash.
func (h *Hash) Type() Type { return TypeHash }

// Len returns the number of fields.
func (h *Hash) Len() int { return len(h.entries) }

// find returns the position of field, or -1.
func (h *Hash) find(field []byte) int {
	if h.index != nil {
		if i, ok := h.index[string(field)]; ok {
			return i
		}
		return -1
	}
	for i := range h.entries {
		if h.entries[i].field == string(field) {
			return i
		}
	}
	return -1
}

// Get returns the value of field and whether it exists. The slice belongs to
// the hash: it is valid until the hash is next modified and must not be
// changed.
func (h *Hash) Get(field []byte) ([]byte, bool) {
	i := h.find(field)
	if i < 0 {
		return nil, false
	}
	return h.entries[i].value, true
}

// Has reports whether field exists.
func (h *Hash) Has(field []byte) bool { return h.find(field) >= 0 }

// Set sets field to value, copying both, and reports whether the field is
// new.
func (h *Hash) Set(field, value []byte) bool {
	if len(field) > hashMaxListpackValue || len(value) > hashMaxListpackValue {
		h.large = true
	}
	if i := h.find(field); i >= 0 {
		e := &h.entries[i]
		h.size += int64(len(value) - len(e.value))
		if cap(e.value) >= len(value) && cap(e.value) <= 2*len(value)+16 {
			e.value = append(e.value[:0], value...)
		} else {
			e.value = append(make([]byte, 0, len(value)), value...)
		}
		return false
	}
	f := string(field)
	h.entries = append(h.entries, hashEntry{field: f, value: append(make([]byte, 0, len(value)), value...)})
	h.size += int64(len(field) + len(value))
	n := len(h.entries)
	switch {
	case h.index != nil:
		h.index[f] = n - 1
	case n > indexThreshold:
		h.buildIndex()
	}
	if n > hashMaxListpackEntries {
		h.large = true
	}
	return true
}

func (h *Hash) buildIndex() {
	h.index = make(map[string]int, len(h.entries))
	for i := range h.entries {
		h.index[h.entries[i].field] = i
	}
}

// Delete removes field and reports whether it existed.
func (h *Hash) Delete(field []byte) bool {
	i := h.find(field)
	if i < 0 {
		return false
	}
	h.removeAt(i)
	return true
}

func (h *Hash) removeAt(i int) {
	e := h.entries[i]
	h.size -= int64(len(e.field) + len(e.value))
	last := len(h.entries) - 1
	if h.index != nil {
		delete(h.index, e.field)
	}
	if !h.large {
		copy(h.entries[i:], h.entries[i+1:])
		if h.index != nil {
			for j := i; j < last; j++ {
				h.index[h.entries[j].field] = j
			}
		}
	} else if i != last {
		h.entries[i] = h.entries[last]
		if h.index != nil {
			h.index[h.entries[i].field] = i
		}
	}
	h.entries[last] = hashEntry{}
	h.entries = h.entries[:last]
	if cap(h.entries) >= 64 && 4*len(h.entries) <= cap(h.entries) {
		h.compact()
	}
}

// compact gives back the memory of a hash that shrank to a quarter of its
// capacity: a smaller slice and a fresh index (Go maps never shrink).
func (h *Hash) compact() {
	h.entries = append(make([]hashEntry, 0, 2*len(h.entries)), h.entries...)
	if len(h.entries) <= indexThreshold {
		h.index = nil
	} else {
		h.buildIndex()
	}
}

// At returns the entry at position i, 0 <= i < Len(). Positions are stable
// only while the hash is not modified; they serve random picks. The value
// must not be changed.
func (h *Hash) At(i int) (field string, value []byte) {
	e := &h.entries[i]
	return e.field, e.value
}

// Range calls fn for every entry until fn returns false. The slices are
// valid only during the call, and fn must not modify the hash.
func (h *Hash) Range(fn func(field, value []byte) bool) {
	var buf []byte
	for i := range h.entries {
		e := &h.entries[i]
		buf = append(buf[:0], e.field...)
		if !fn(buf, e.value) {
			return
		}
	}
}

// Scan calls fn for up to count entries, starting from cursor (0 to begin),
// and returns the cursor to continue from, 0 when the iteration is over.
// A hash in the listpack encoding is returned whole in one call, whatever
// the count, as Redis does. Otherwise every entry present for the whole
// iteration is visited at least once: positions are visited from the
// highest down, and a removal only ever moves an entry from a visited
// position to a lower one. The value passed to fn must not be changed.
func (h *Hash) Scan(cursor uint64, count int, fn func(field string, value []byte)) uint64 {
	if !h.large {
		for i := range h.entries {
			fn(h.entries[i].field, h.entries[i].value)
		}
		return 0
	}
	p := uint64(len(h.entries))
	if cursor != 0 && cursor < p {
		p = cursor
	}
	for ; p > 0 && count > 0; count-- {
		p--
		e := &h.entries[p]
		fn(e.field, e.value)
	}
	return p
}

// Copy returns a deep copy of the hash (COPY).
func (h *Hash) Copy() Object {
	c := &Hash{
		entries: make([]hashEntry, len(h.entries)),
		size:    h.size,
		large:   h.large,
	}
	for i, e := range h.entries {
		c.entries[i] = hashEntry{field: e.field, value: append(make([]byte, 0, len(e.value)), e.value...)}
	}
	if h.index != nil {
		c.index = maps.Clone(h.index)
	}
	return c
}

// Encoding names the encoding Redis 7.0 would use with its default
// thresholds: "listpack" until the hash has held more than 512 entries or a
// field or value longer than 64 bytes, "hashtable" from then on.
func (h *Hash) Encoding() string {
	if h.large {
		return "hashtable"
	}
	return "listpack"
}

// MemoryUsage estimates the bytes the hash takes.
func (h *Hash) MemoryUsage() int64 {
	n := int64(64) + int64(cap(h.entries))*40 + h.size
	if h.index != nil {
		n += int64(len(h.index)) * 48
	}
	return n
}
