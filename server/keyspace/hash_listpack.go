package keyspace

import (
	"bytes"
	"encoding/binary"
)

// A listpack here is a hash's fields and values packed into one byte
// slice, field, value, field, value, …, each element a uvarint length
// followed by its bytes: one allocation per small hash, nothing for the
// garbage collector to scan. Every function below takes a listpack this
// file built; none validates its input.

// lpRead returns the element starting at off and the offset after it. The
// element's capacity ends with it, so an append to it cannot spill into
// the listpack.
func lpRead(lp []byte, off int) (elem []byte, next int) {
	n := int(lp[off])
	off++
	if n >= 0x80 {
		v, k := binary.Uvarint(lp[off-1:])
		n = int(v)
		off += k - 1
	}
	return lp[off : off+n : off+n], off + n
}

// lpSkip returns the offset after the element starting at off.
func lpSkip(lp []byte, off int) int {
	_, next := lpRead(lp, off)
	return next
}

// lpFind returns the offsets of field's entry and of its value, or at -1
// when field is absent; n is the number of entries before field's, all of
// them when it is absent.
func lpFind(lp, field []byte) (at, val, n int) {
	for off := 0; off < len(lp); n++ {
		f, v := lpRead(lp, off)
		if bytes.Equal(f, field) {
			return off, v, n
		}
		off = lpSkip(lp, v)
	}
	return -1, 0, n
}

// lpLen returns the number of entries (field-value pairs).
func lpLen(lp []byte) int {
	n := 0
	for off := 0; off < len(lp); n++ {
		off = lpSkip(lp, lpSkip(lp, off))
	}
	return n
}

// lpEntryAt returns the offset of entry i, 0 <= i < lpLen(lp).
func lpEntryAt(lp []byte, i int) int {
	off := 0
	for ; i > 0; i-- {
		off = lpSkip(lp, lpSkip(lp, off))
	}
	return off
}

// lpElemSize is the bytes element e takes in a listpack.
func lpElemSize(e []byte) int {
	n := 1
	for x := uint(len(e)); x >= 0x80; x >>= 7 {
		n++
	}
	return n + len(e)
}

// lpSplice replaces lp[from:to] with the elements elems (none to only
// cut) and returns the listpack, which may have moved; elems must not
// point into lp. It reuses lp's
// memory when it fits and gives memory back when lp shrinks to under half
// its capacity.
func lpSplice(lp []byte, from, to int, elems ...[]byte) []byte {
	add := 0
	for _, e := range elems {
		add += lpElemSize(e)
	}
	n := len(lp) - (to - from) + add
	switch {
	case n <= cap(lp) && (n >= len(lp) || n >= cap(lp)/2 || cap(lp) <= 64):
		old := len(lp)
		if n > old {
			lp = lp[:n]
		}
		copy(lp[from+add:], lp[to:old])
		lp = lp[:n]
	default:
		nb := make([]byte, n, lpCap(n))
		copy(nb, lp[:from])
		copy(nb[from+add:], lp[to:])
		lp = nb
	}
	off := from
	for _, e := range elems {
		off += binary.PutUvarint(lp[off:], uint64(len(e)))
		off += copy(lp[off:], e)
	}
	return lp
}

// lpCap is the capacity to allocate for a listpack of n bytes: n rounded
// up to the Go allocator's size classes for small sizes (which it would
// round to anyway), and an eighth more for large ones, so that growing a
// listpack by one entry at a time does not copy it every time.
func lpCap(n int) int {
	switch {
	case n <= 256:
		return (n + 15) &^ 15
	case n <= 512:
		return (n + 31) &^ 31
	case n <= 1024:
		return (n + 127) &^ 127
	default:
		return n + n/8
	}
}
