package keyspace

import "unsafe"

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
// key, and Set returns that copy. The key's bytes never change while the
// allocation lives, so Key returns a string that shares them; an Entry is
// never copied by value (a copy would claim the bytes after it).

// keyedEntry is the Entry of an allocation that holds key bytes after it.
type keyedEntry[T any] struct {
	Entry
	b T
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
	var p unsafe.Pointer
	switch inlineSize(need) {
	case 16:
		x := new(keyedEntry[[16]byte])
		e, p = &x.Entry, unsafe.Pointer(&x.b)
	case 32:
		x := new(keyedEntry[[32]byte])
		e, p = &x.Entry, unsafe.Pointer(&x.b)
	case 48:
		x := new(keyedEntry[[48]byte])
		e, p = &x.Entry, unsafe.Pointer(&x.b)
	case 64:
		x := new(keyedEntry[[64]byte])
		e, p = &x.Entry, unsafe.Pointer(&x.b)
	case 80:
		x := new(keyedEntry[[80]byte])
		e, p = &x.Entry, unsafe.Pointer(&x.b)
	case 96:
		x := new(keyedEntry[[96]byte])
		e, p = &x.Entry, unsafe.Pointer(&x.b)
	case 112:
		x := new(keyedEntry[[112]byte])
		e, p = &x.Entry, unsafe.Pointer(&x.b)
	case 128:
		x := new(keyedEntry[[128]byte])
		e, p = &x.Entry, unsafe.Pointer(&x.b)
	case 144:
		x := new(keyedEntry[[144]byte])
		e, p = &x.Entry, unsafe.Pointer(&x.b)
	case 160:
		x := new(keyedEntry[[160]byte])
		e, p = &x.Entry, unsafe.Pointer(&x.b)
	case 176:
		x := new(keyedEntry[[176]byte])
		e, p = &x.Entry, unsafe.Pointer(&x.b)
	case 192:
		x := new(keyedEntry[[192]byte])
		e, p = &x.Entry, unsafe.Pointer(&x.b)
	default:
		x := new(keyedEntry[[208]byte])
		e, p = &x.Entry, unsafe.Pointer(&x.b)
	}
	b := unsafe.Slice((*byte)(p), inlineSize(need))
	b[0] = byte(len(key))
	copy(b[1:], key)
	e.flags = flagInline
	if 1+len(key)+vlen <= len(b) && 1+len(key) < len(b) {
		val = b[1+len(key) : 1+len(key) : len(b)]
	}
	return e, val
}

// Key returns the key the entry is stored under ("" for an entry not
// stored). The string shares the entry's bytes: it stays valid as long as
// it is held, whatever happens to the key.
func (e *Entry) Key() string {
	switch e.flags & (flagInline | flagExtKey) {
	case flagInline:
		p := unsafe.Add(unsafe.Pointer(e), unsafe.Sizeof(Entry{}))
		n := *(*byte)(p)
		return unsafe.String((*byte)(unsafe.Add(p, 1)), int(n))
	case flagExtKey:
		return (*entryExt)(unsafe.Pointer(e)).key
	}
	return ""
}

// allocBytes is the size of the entry's own allocation (the Entry, its key
// and whatever value bytes are inline), as the allocator rounds it.
func (e *Entry) allocBytes() int64 {
	switch e.flags & (flagInline | flagExtKey) {
	case flagInline:
		p := unsafe.Add(unsafe.Pointer(e), unsafe.Sizeof(Entry{}))
		n := int(*(*byte)(p))
		if e.inlineStr() {
			return int64(unsafe.Sizeof(Entry{})) + int64(uintptr(unsafe.Pointer(unsafe.SliceData(e.Str)))-uintptr(p)) + int64(cap(e.Str))
		}
		return int64(unsafe.Sizeof(Entry{})) + int64(inlineSize(1+n))
	case flagExtKey:
		return int64(unsafe.Sizeof(entryExt{})) + allocSize(len(e.Key()))
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
// e's fields are copied (a string value that fits is copied inline).
func keyed(key string, e *Entry) *Entry {
	if e.flags&(flagInline|flagExtKey) != 0 && e.Key() == key {
		return e
	}
	var ne *Entry
	if e.Obj == nil {
		var val []byte
		ne, val = allocEntry(unsafe.Slice(unsafe.StringData(key), len(key)), len(e.Str))
		if val != nil {
			ne.Str = append(val, e.Str...)
		} else {
			ne.Str = e.Str
		}
	} else {
		ne, _ = allocEntry(unsafe.Slice(unsafe.StringData(key), len(key)), 0)
		ne.Obj = e.Obj
	}
	ne.Atime, ne.freq = e.Atime, e.freq
	ne.flags |= e.flags &^ (flagInline | flagExtKey)
	return ne
}

// newStringEntry returns a new entry holding key and a copy of val.
func newStringEntry(key []byte, val []byte) *Entry {
	e, room := allocEntry(key, len(val))
	if room != nil {
		e.Str = append(room, val...)
	} else {
		e.Str = append(make([]byte, 0, len(val)), val...)
	}
	return e
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
