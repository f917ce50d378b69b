package keyspace

import (
	"sync"
	"unsafe"
)

// Entries hold their keys.
//
// Every entry in a shard's table is one allocation that holds the Entry,
// then the key, then, when it fits, a string value: for a million keys of
// 11 bytes with 16-byte values that is one 80-byte object per key instead
// of an Entry, a key and a value allocated apart, and the table (table.go)
// needs nothing but a pointer per slot. The bytes after the Entry are a
// byte array, which the collector does not scan.
//
// The layout after the Entry's own fields, for a key of up to maxInlineKey
// bytes (flagInline): one byte of key length, the key, the room left, in
// which Str starts when the value fits (its capacity then reaches the end
// of the allocation, so a value rewritten in place stays there while it
// fits). A longer key is kept in a string after the Entry (flagExtKey).
// The allocation's size is not recorded: once a value that was inline has
// moved out (APPEND past the room), allocBytes counts the allocation as if
// it held the key alone, up to 192 bytes short.
//
// An Entry the keyspace did not allocate (a caller's &Entry{...}) has
// neither flag; storing it (Set, Load) copies it into one that holds the
// key, and Set returns that copy. The key's bytes change only when an
// evicted entry is recycled for another key (entryPools below), so key
// returns a string that shares them; an Entry is never copied by value (a
// copy would claim the bytes after it).

// keyedEntry is the Entry of an allocation that holds key bytes after it:
// the blank field only sizes the allocation, whose bytes inlineKey reaches
// through their offset after the Entry.
type keyedEntry[T any] struct {
	Entry
	_ T
}

// entryExt is the allocation of an entry whose key is longer than
// maxInlineKey.
type entryExt struct {
	Entry
	key string
}

// maxInline is the most bytes kept after an Entry: the key's length byte,
// the key and the inline value.
const maxInline = 208

// maxInlineKey is the longest key kept inline.
const maxInlineKey = 128

// inlineSize is the bytes after the Entry of an allocation that keeps n
// of them inline: n rounded up as the size classes from 64 to 256 bytes
// round the whole (every 16 bytes).
func inlineSize(n int) int { return (n + 15) &^ 15 }

// allocEntry returns a new entry holding key, with room for vlen bytes of
// value after it when they fit (and then val is that room, of capacity up
// to the end of the allocation; otherwise val is nil).
func allocEntry(key []byte, vlen int) (e *Entry, val []byte) {
	if len(key) > maxInlineKey {
		x := &entryExt{key: string(key)}
		x.flags = flagExtKey
		return &x.Entry, nil
	}
	need := 1 + len(key) + vlen
	if need > maxInline {
		need = 1 + len(key)
	}
	size := inlineSize(need)
	e = newKeyed(size)
	return e, inlineKey(e, size, key, vlen)
}

// newKeyed allocates an Entry followed by size bytes, a multiple of 16 up
// to maxInline.
func newKeyed(size int) *Entry {
	switch size {
	case 16:
		return &new(keyedEntry[[16]byte]).Entry
	case 32:
		return &new(keyedEntry[[32]byte]).Entry
	case 48:
		return &new(keyedEntry[[48]byte]).Entry
	case 64:
		return &new(keyedEntry[[64]byte]).Entry
	case 80:
		return &new(keyedEntry[[80]byte]).Entry
	case 96:
		return &new(keyedEntry[[96]byte]).Entry
	case 112:
		return &new(keyedEntry[[112]byte]).Entry
	case 128:
		return &new(keyedEntry[[128]byte]).Entry
	case 144:
		return &new(keyedEntry[[144]byte]).Entry
	case 160:
		return &new(keyedEntry[[160]byte]).Entry
	case 176:
		return &new(keyedEntry[[176]byte]).Entry
	case 192:
		return &new(keyedEntry[[192]byte]).Entry
	}
	return &new(keyedEntry[[208]byte]).Entry
}

// inlineKey writes key into the size bytes after e, an Entry allocated
// with them, marks it flagInline and returns the room for a vlen-byte
// value after the key when it fits (of capacity up to the end of the
// allocation; otherwise nil).
func inlineKey(e *Entry, size int, key []byte, vlen int) (val []byte) {
	b := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(e), unsafe.Sizeof(Entry{}))), size)
	b[0] = byte(len(key))
	copy(b[1:], key)
	e.flags = flagInline
	if 1+len(key)+vlen <= len(b) && 1+len(key) < len(b) {
		val = b[1+len(key) : 1+len(key) : len(b)]
	}
	return val
}

// key returns the key the entry is stored under ("" for an entry not
// stored). The string shares the entry's bytes, which an eviction may
// recycle (entryPools): a caller that hands it out of the keyspace marks
// the entry flagKeyShared.
func (e *Entry) key() string {
	switch e.flags & (flagInline | flagExtKey | flagPacked) {
	case flagInline:
		p := unsafe.Add(unsafe.Pointer(e), unsafe.Sizeof(Entry{}))
		n := *(*byte)(p)
		return unsafe.String((*byte)(unsafe.Add(p, 1)), int(n))
	case flagExtKey:
		return (*entryExt)(unsafe.Pointer(e)).key
	case flagPacked:
		n := *(*byte)(unsafe.Add(unsafe.Pointer(e), keyLenOffset))
		return unsafe.String((*byte)(unsafe.Add(unsafe.Pointer(e), unsafe.Sizeof(Entry{}))), int(n))
	}
	return ""
}

// allocBytes is the size of the entry's own allocation (the Entry, its key
// and whatever value bytes are inline), as the allocator rounds it.
func (e *Entry) allocBytes() int64 {
	switch e.flags & (flagInline | flagExtKey | flagPacked) {
	case flagInline:
		p := unsafe.Add(unsafe.Pointer(e), unsafe.Sizeof(Entry{}))
		n := int(*(*byte)(p))
		if e.inlineStr() {
			return int64(unsafe.Sizeof(Entry{})) + int64(uintptr(unsafe.Pointer(unsafe.SliceData(e.Str)))-uintptr(p)) + int64(cap(e.Str))
		}
		return int64(unsafe.Sizeof(Entry{})) + int64(inlineSize(1+n))
	case flagExtKey:
		return int64(unsafe.Sizeof(entryExt{})) + allocSize(len(e.key()))
	case flagPacked:
		// The rest is the intset's room, which the Set counts.
		return int64(unsafe.Sizeof(Entry{})) + int64(len(e.key()))
	}
	return int64(unsafe.Sizeof(Entry{}))
}

// inlineStr reports whether the string value is kept in the entry's own
// allocation: it starts right after the key, strictly inside the
// allocation (allocEntry gives room only then), where no other
// allocation can start.
func (e *Entry) inlineStr() bool {
	if e.flags&flagInline == 0 || cap(e.Str) == 0 {
		return false
	}
	p := unsafe.Add(unsafe.Pointer(e), unsafe.Sizeof(Entry{}))
	n := uintptr(*(*byte)(p))
	return uintptr(unsafe.Pointer(unsafe.SliceData(e.Str))) == uintptr(p)+1+n
}

// keyed returns an entry stored under key with e's contents: e itself
// when it already holds key, else a new allocation holding key into which
// e's fields are copied (a string value that fits is copied inline). An
// intset moves along whole into the new entry (packSet) when it is e's
// own, or when owned says the value is the new entry's alone (a
// loader's).
func keyed(key string, e *Entry, owned bool) *Entry {
	if e.flags&(flagInline|flagExtKey|flagPacked) != 0 && e.key() == key {
		return e
	}
	kb := unsafe.Slice(unsafe.StringData(key), len(key))
	var ne *Entry
	if e.Obj == nil {
		var val []byte
		ne, val = allocEntry(kb, len(e.Str))
		if val != nil {
			ne.Str = append(val, e.Str...)
		} else {
			ne.Str = e.Str
		}
	} else {
		if s, ok := e.Obj.(*Set); ok && (owned || e.objInside()) {
			ne = packSet(kb, s)
		}
		if ne == nil {
			ne, _ = allocEntry(kb, 0)
			ne.Obj = e.Obj
			if e.objInside() {
				if e.flags&flagPacked != 0 {
					// Its intset may be in e's allocation: the new
					// entry takes a copy.
					e.Obj.(*Set).ownInts()
				}
				ne.embed()
			}
		}
	}
	ne.Atime, ne.freq = e.Atime, e.freq
	ne.flags |= e.flags &^ (flagInline | flagExtKey | flagKeyShared | flagPacked)
	return ne
}

// newStringEntry returns a new entry holding key and a copy of val: an
// evicted one when the pool of its size has one, else a new allocation.
func (ks *Keyspace) newStringEntry(key []byte, val []byte) *Entry {
	var e *Entry
	var room []byte
	if ks.recycling.Load() {
		e, room = ks.spare.get(key, len(val))
	}
	if e == nil {
		e, room = allocEntry(key, len(val))
	}
	if room != nil {
		e.Str = append(room, val...)
	} else {
		e.Str = append(make([]byte, 0, len(val)), val...)
	}
	return e
}

// Recycling evicted entries.
//
// At maxmemory every SET of a new key evicts a key: allocating the new
// entry while the evicted one becomes garbage would make the collector
// run for that churn alone, and under the memory limit that follows
// maxmemory it runs often. So an evicted string entry whose value is
// inline goes to a pool of its allocation's size, and newStringEntry takes
// one from there before it allocates. Two conditions keep the reuse of an
// entry's key bytes safe:
//   - Only eviction recycles (DB.Evict): the server holds no pointer to
//     an entry it evicts (its eviction pool holds copies of the keys),
//     while a command may go on using an entry it deleted (RENAME moves
//     it to its new key).
//   - An entry whose key string was handed out of the keyspace, where it
//     may be kept (Range), is marked flagKeyShared and never recycled.
//     Sample's keys are valid only during its callback, and the expiry
//     map's copy of the key is deleted with it (the map clears a deleted
//     slot, and never reads one).

// entryPools are the evicted entries ready for reuse, by the size of
// their inline bytes: 16, 32, … maxInline.
type entryPools [maxInline / 16]sync.Pool

// put keeps e, just evicted, for reuse when it can be: a string entry
// holding its key and value inline, whose key was not handed out.
func (p *entryPools) put(e *Entry) {
	if e.flags&(flagInline|flagKeyShared) != flagInline || e.Obj != nil || !e.inlineStr() {
		return
	}
	start := uintptr(unsafe.Pointer(e)) + unsafe.Sizeof(Entry{})
	size := int(uintptr(unsafe.Pointer(unsafe.SliceData(e.Str)))-start) + cap(e.Str)
	if size%16 != 0 || size > maxInline {
		return
	}
	p[size/16-1].Put(e)
}

// get returns a recycled entry holding key with inline room for vlen
// bytes of value, as allocEntry does, or nil when there is none of the
// size.
func (p *entryPools) get(key []byte, vlen int) (*Entry, []byte) {
	if len(key) > maxInlineKey || 1+len(key)+vlen > maxInline {
		return nil, nil
	}
	size := inlineSize(1 + len(key) + vlen)
	e, _ := p[size/16-1].Get().(*Entry)
	if e == nil {
		return nil, nil
	}
	*e = Entry{}
	return e, inlineKey(e, size, key, vlen)
}

// room returns the empty inline room after the key of an entry holding
// its key inline: the value's room when the value is inline, else the
// least the allocation has (its size is not recorded), possibly none.
func (e *Entry) room() []byte {
	if e.inlineStr() {
		return e.Str[:0]
	}
	p := unsafe.Add(unsafe.Pointer(e), unsafe.Sizeof(Entry{}))
	n := 1 + int(*(*byte)(p))
	if end := inlineSize(n); n < end {
		return unsafe.Slice((*byte)(unsafe.Add(p, n)), end-n)[:0]
	}
	return nil
}

// Collections kept in their entry.
//
// A Set or a Hash is 16 bytes, a pointer and two lengths, a ZSet 24, and
// an entry holding one has no use for its Str field: 24 bytes whose first
// word is a pointer. So the set, hash or sorted set that a command creates
// for a key (DB.AddSet, DB.AddHash, DB.AddZSet) or a loader stores
// (DB.Load) is kept there, Obj pointing into the entry itself: a small set
// is then its entry and its intset, two allocations, where a header of
// its own would be a third. (A ZSet's second pointer, to its skip list,
// falls where the collector sees none: its first keeps the skip list
// alive, ZSet.lp.)
// Only a string entry's Str is ever read (every reader checks Obj or the
// type first). An entry moved to another allocation (keyed: RENAME, MOVE)
// takes its header along: the value is then the new entry's, and the
// entry left behind must not be used for it any more (a write through
// the old header would not reach the new one). A caller's own Set or Hash
// stored with Set (a computed result, a COPY) stays where it is, as the
// caller may go on using it.

// The headers fit the Str field, with their first pointer where its
// pointer is: a compile-time check.
var (
	_ = [1]struct{}{}[unsafe.Sizeof(Set{})-16+unsafe.Offsetof(Set{}.p)]
	_ = [1]struct{}{}[unsafe.Sizeof(Hash{})-16+unsafe.Offsetof(Hash{}.p)]
	_ = [1]struct{}{}[unsafe.Sizeof(ZSet{})-unsafe.Sizeof([]byte{})+unsafe.Offsetof(ZSet{}.lp)]
)

// objInside reports whether e's value is a Set, a Hash or a ZSet kept in
// e.
func (e *Entry) objInside() bool {
	switch o := e.Obj.(type) {
	case *Set:
		return unsafe.Pointer(o) == unsafe.Pointer(&e.Str)
	case *Hash:
		return unsafe.Pointer(o) == unsafe.Pointer(&e.Str)
	case *ZSet:
		return unsafe.Pointer(o) == unsafe.Pointer(&e.Str)
	}
	return false
}

// embed moves e's Set, Hash or ZSet, which nothing else may go on using,
// into e's Str field (entries of other types are left as they are).
func (e *Entry) embed() {
	switch o := e.Obj.(type) {
	case *Set:
		in := (*Set)(unsafe.Pointer(&e.Str))
		*in = *o
		e.Obj = in
	case *Hash:
		in := (*Hash)(unsafe.Pointer(&e.Str))
		*in = *o
		e.Obj = in
	case *ZSet:
		in := (*ZSet)(unsafe.Pointer(&e.Str))
		*in = *o
		if in.big != nil {
			in.lp = (*byte)(unsafe.Pointer(in.big))
		}
		e.Obj = in
	}
}

// Sets kept whole in their entry.
//
// A set that SADD creates from integers (DB.AddSet with room) is one
// allocation: the Entry, whose Str field holds the Set, then the key, then
// the intset's values up to the end of the allocation (flagPacked). Neither
// the key's length nor the intset's width takes a byte there: the width
// is in the Set (set.go), the key's length in the Str field's last word,
// which a Set, 16 bytes, leaves free. Ten values of 4 bytes under an 8-byte
// key are then one 96-byte object, where the entry and an intset of their
// own took 64 and 48 bytes. An intset that outgrows the room moves to an
// allocation of its own (the room is then unused), and an entry moved to
// another key (keyed) takes a copy of it. A packed entry never holds a
// string, as its Str field is taken: ReplaceString replaces the entry.

// keyLenOffset is where a packed entry keeps its key's length: the Str
// field's capacity word.
const keyLenOffset = unsafe.Offsetof(Entry{}.Str) + 2*unsafe.Sizeof(uintptr(0))

// A Set kept in the Str field ends where the key's length starts: a
// compile-time check.
var _ = [1]struct{}{}[keyLenOffset-unsafe.Offsetof(Entry{}.Str)-unsafe.Sizeof(Set{})]

// allocPacked returns a new entry holding key and an empty Set kept in it,
// whose intset has the allocation's bytes after the key as room, room of
// them at least (room > 0); nil for a key longer than maxInlineKey or
// when they would be more than maxInline.
func allocPacked(key []byte, room int) *Entry {
	if len(key) > maxInlineKey || len(key)+room > maxInline || room <= 0 {
		return nil
	}
	size := inlineSize(len(key) + room)
	e := newKeyed(size)
	b := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(e), unsafe.Sizeof(Entry{}))), size)
	copy(b, key)
	*(*byte)(unsafe.Add(unsafe.Pointer(e), keyLenOffset)) = byte(len(key))
	e.flags = flagPacked
	s := (*Set)(unsafe.Pointer(&e.Str))
	s.setInts(intset{b: b[len(key):len(key)]})
	e.Obj = s
	return e
}

// packSet returns a new entry holding key and a copy of s kept whole in
// it (allocPacked), or nil when s is not a non-empty intset or does not
// fit.
func packSet(key []byte, s *Set) *Entry {
	is := s.ints()
	if s.c == tableMark || is.len() == 0 {
		return nil
	}
	e := allocPacked(key, len(is.b))
	if e == nil {
		return nil
	}
	in := e.Obj.(*Set)
	in.setInts(intset{b: append(in.ints().b, is.b...), w: is.w})
	return e
}
