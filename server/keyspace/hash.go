package keyspace

import (
	"bytes"
	"math"
	"sync/atomic"
	"unsafe"
)

// Redis 7.0's default thresholds for the compact hash encoding
// (hash-max-listpack-entries, hash-max-listpack-value).
const (
	hashMaxListpackEntries = 512
	hashMaxListpackValue   = 64
)

// HashLimits are the thresholds of the listpack encoding of hashes: a hash
// of at most Entries fields, none of whose fields or values is longer than
// Value bytes, is packed (CONFIG hash-max-listpack-entries and
// hash-max-listpack-value).
type HashLimits struct {
	Entries int
	Value   int
}

// DefaultHashLimits returns Redis 7.0's defaults, 512 entries of 64 bytes.
func DefaultHashLimits() HashLimits {
	return HashLimits{Entries: hashMaxListpackEntries, Value: hashMaxListpackValue}
}

// hashLimits holds a keyspace's HashLimits; nil means the defaults.
type hashLimits struct{ p atomic.Pointer[HashLimits] }

// HashLimits returns the thresholds hashes are encoded by.
func (ks *Keyspace) HashLimits() HashLimits {
	if p := ks.hashLimits.p.Load(); p != nil {
		return *p
	}
	return DefaultHashLimits()
}

// SetHashLimits changes the thresholds (CONFIG SET): hashes written from
// then on, and those loaded, are encoded by them, as in Redis; a hash
// already packed stays so until it is next written.
func (ks *Keyspace) SetHashLimits(l HashLimits) { ks.hashLimits.p.Store(&l) }

// Hash is a hash value: fields mapped to values.
//
// A small hash is kept in the listpack encoding, as Redis keeps it: its
// fields and values packed into one byte slice in insertion order, the
// order Redis replies in, searched linearly. Once it grows past
// HashLimits it is converted to the hashtable encoding (hashTable), for
// good as in Redis; only loading it again (DEBUG RELOAD, a restart,
// RESTORE) packs it again when it fits (Fit).
type Hash struct {
	// p is the listpack encoding's bytes (hash_listpack.go), n of them in
	// a capacity of c (pack), or, once c is tableMark, the *hashTable of
	// the hashtable encoding (table). One pointer and two lengths, so
	// that a Hash is 16 bytes, beside the listpack it points to.
	p    unsafe.Pointer
	n, c uint32
}

// tableMark is the capacity that marks a Hash or a Set holding its
// hashtable encoding: no listpack or intset comes near it (hashPackMax,
// maxIntsetLen).
const tableMark = math.MaxUint32

// hashPackMax bounds a listpack, as Redis's lpSafeToAdd bounds one (1
// GB): a hash that would grow past it is converted.
const hashPackMax = 1 << 30

// pack returns the listpack, nil for a hashtable.
func (h *Hash) pack() []byte {
	if h.c == tableMark {
		return nil
	}
	return unsafe.Slice((*byte)(h.p), h.c)[:h.n]
}

// setPack makes lp the listpack.
func (h *Hash) setPack(lp []byte) {
	h.p, h.n, h.c = unsafe.Pointer(unsafe.SliceData(lp)), uint32(len(lp)), uint32(cap(lp))
}

// table returns the hashtable, nil while the hash is packed.
func (h *Hash) table() *hashTable {
	if h.c != tableMark {
		return nil
	}
	return (*hashTable)(h.p)
}

// setTable makes t the hash's contents, in the hashtable encoding.
func (h *Hash) setTable(t *hashTable) { h.p, h.n, h.c = unsafe.Pointer(t), 0, tableMark }

// NewHash returns an empty hash.
func NewHash() *Hash { return &Hash{} }

// Type reports TypeHash.
func (h *Hash) Type() Type { return TypeHash }

// Len returns the number of fields.
func (h *Hash) Len() int {
	if t := h.table(); t != nil {
		return len(t.entries)
	}
	return lpLen(h.pack())
}

// Get returns the value of field and whether it exists. The slice belongs to
// the hash: it is valid until the hash is next modified and must not be
// changed.
func (h *Hash) Get(field []byte) ([]byte, bool) {
	if t := h.table(); t != nil {
		i := t.find(field)
		if i < 0 {
			return nil, false
		}
		return t.entries[i].value, true
	}
	at, val, _ := lpFind(h.pack(), field)
	if at < 0 {
		return nil, false
	}
	v, _ := lpRead(h.pack(), val)
	return v, true
}

// Has reports whether field exists.
func (h *Hash) Has(field []byte) bool {
	if t := h.table(); t != nil {
		return t.find(field) >= 0
	}
	at, _, _ := lpFind(h.pack(), field)
	return at >= 0
}

// Set sets field to value under the default limits; see SetWith.
func (h *Hash) Set(field, value []byte) bool {
	return h.SetWith(field, value, DefaultHashLimits())
}

// SetWith sets field to value, copying both, and reports whether the field
// is new. A packed hash converts to a hash table first when field or value
// is longer than lim.Value, and after adding when it has more than
// lim.Entries fields, as Redis's hashTypeSet does.
func (h *Hash) SetWith(field, value []byte, lim HashLimits) bool {
	if h.table() == nil && (len(field) > lim.Value || len(value) > lim.Value ||
		int(h.n)+lpElemSize(field)+lpElemSize(value) > hashPackMax) {
		h.convert()
	}
	if t := h.table(); t != nil {
		return t.set(field, value)
	}
	lp := h.pack()
	at, val, n := lpFind(lp, field)
	if at >= 0 {
		end := lpSkip(lp, val)
		if old, _ := lpRead(lp, val); len(old) == len(value) {
			copy(old, value)
		} else {
			h.setPack(lpSplice(lp, val, end, value))
		}
		return false
	}
	h.setPack(lpSplice(lp, len(lp), len(lp), field, value))
	if n+1 > lim.Entries {
		h.convert()
	}
	return true
}

// SetPairs sets the fields of pairs (field, value, field, value, …) to
// their values as HSET does and returns how many fields are new. As
// Redis's hashTypeTryConversion, a field or value longer than lim.Value
// converts a packed hash before any is set; an empty one gets the room for
// all of them at once.
func (h *Hash) SetPairs(pairs [][]byte, lim HashLimits) int {
	if h.table() == nil {
		size := 0
		for _, a := range pairs {
			if len(a) > lim.Value {
				h.convert()
				break
			}
			size += lpElemSize(a)
		}
		if h.table() == nil && h.n == 0 && len(pairs)/2 <= lim.Entries {
			h.setPack(make([]byte, 0, lpCap(size)))
		}
	}
	created := 0
	for i := 0; i+1 < len(pairs); i += 2 {
		if h.SetWith(pairs[i], pairs[i+1], lim) {
			created++
		}
	}
	return created
}

// convert turns a packed hash into a hash table.
func (h *Hash) convert() {
	lp := h.pack()
	t := &hashTable{entries: make([]hashEntry, 0, lpLen(lp)+1)}
	for off := 0; off < len(lp); {
		f, v := lpRead(lp, off)
		val, next := lpRead(lp, v)
		t.add(string(f), append(make([]byte, 0, len(val)), val...))
		off = next
	}
	h.setTable(t)
}

// Fit encodes the hash as Redis encodes it when it loads it under lim,
// saved in its encoding: a packed hash (a listpack in Redis's file) is
// converted when it has more than lim.Entries fields, whatever the
// lengths; a hash table (a plain hash in the file) is packed when it has
// at most lim.Entries fields and none of its fields and values is longer
// than lim.Value. The loaders call it on every hash they insert, and
// RESTORE on the one it stores.
func (h *Hash) Fit(lim HashLimits) {
	t := h.table()
	if t == nil {
		if lpLen(h.pack()) > lim.Entries {
			h.convert()
		}
		return
	}
	fits := len(t.entries) <= lim.Entries
	size := 0
	for i := 0; fits && i < len(t.entries); i++ {
		e := &t.entries[i]
		fits = len(e.field) <= lim.Value && len(e.value) <= lim.Value
		size += lpElemSize(fieldBytes(e.field)) + lpElemSize(e.value)
	}
	if !fits {
		return
	}
	lp := make([]byte, 0, size)
	for _, e := range t.entries {
		lp = lpSplice(lp, len(lp), len(lp), fieldBytes(e.field), e.value)
	}
	if len(lp) == 0 {
		lp = nil
	}
	h.setPack(lp)
}

// Delete removes field and reports whether it existed. A packed hash
// closes the gap, keeping its order.
func (h *Hash) Delete(field []byte) bool {
	if t := h.table(); t != nil {
		return t.delete(field)
	}
	lp := h.pack()
	at, val, _ := lpFind(lp, field)
	if at < 0 {
		return false
	}
	h.setPack(lpSplice(lp, at, lpSkip(lp, val)))
	if h.n == 0 {
		h.setPack(nil)
	}
	return true
}

// At returns the entry at position i, 0 <= i < Len(). Positions are stable
// only while the hash is not modified; they serve random picks, in O(1)
// for a hash table and O(i) for a packed hash. The slices are valid until
// the hash is next modified and must not be changed.
func (h *Hash) At(i int) (field, value []byte) {
	if t := h.table(); t != nil {
		e := &t.entries[i]
		return fieldBytes(e.field), e.value
	}
	lp := h.pack()
	f, v := lpRead(lp, lpEntryAt(lp, i))
	value, _ = lpRead(lp, v)
	return f, value
}

// Range calls fn for every entry until fn returns false, a packed hash in
// insertion order. The slices are valid until the hash is next modified
// and must not be changed; fn must not modify the hash.
func (h *Hash) Range(fn func(field, value []byte) bool) {
	if t := h.table(); t != nil {
		for i := range t.entries {
			e := &t.entries[i]
			if !fn(fieldBytes(e.field), e.value) {
				return
			}
		}
		return
	}
	lp := h.pack()
	for off := 0; off < len(lp); {
		f, v := lpRead(lp, off)
		val, next := lpRead(lp, v)
		if !fn(f, val) {
			return
		}
		off = next
	}
}

// Scan calls fn for up to count entries, starting from cursor (0 to begin),
// and returns the cursor to continue from, 0 when the iteration is over.
// A packed hash is returned whole in one call, whatever the count, as
// Redis returns a listpack. A hash table guarantees that every entry
// present for the whole iteration is visited at least once. The slices
// passed to fn are as Range's.
func (h *Hash) Scan(cursor uint64, count int, fn func(field, value []byte)) uint64 {
	if t := h.table(); t != nil {
		return t.scan(cursor, count, fn)
	}
	h.Range(func(f, v []byte) bool { fn(f, v); return true })
	return 0
}

// Copy returns a deep copy of the hash (COPY), in the same encoding.
func (h *Hash) Copy() Object {
	if t := h.table(); t != nil {
		c := &Hash{}
		c.setTable(t.copy())
		return c
	}
	c := &Hash{}
	c.setPack(bytes.Clone(h.pack()))
	return c
}

// Encoding names the encoding as OBJECT ENCODING reports it: "listpack"
// while packed, "hashtable" once converted.
func (h *Hash) Encoding() string {
	if h.c == tableMark {
		return "hashtable"
	}
	return "listpack"
}

// MemoryUsage estimates the bytes the hash takes.
func (h *Hash) MemoryUsage() int64 {
	if t := h.table(); t != nil {
		return 16 + t.memoryUsage()
	}
	return 16 + int64(h.c)
}
