package keyspace

import (
	"encoding/binary"
	"unsafe"
)

// listNode is one node of a List: n elements packed in b, each as
//
//	uvarint(len) | the bytes | uvarint(len) with its bytes reversed
//
// so that the node is walked from either end, as a Redis listpack is
// (its backlen). A short element costs two bytes more than its length.
type listNode struct {
	b []byte
	n int32 // elements
	// gone counts the bytes of b's array before b's start: the array is
	// |gone|+cap(b) bytes. Positive, they are bytes PopFront gave away,
	// never written again; negative, they are the node's own room for
	// elements pushed at the head (prepend), so that a run of LPUSHes
	// writes each element once instead of moving the whole node along.
	gone int32
}

// before returns the bytes of the node's array before b's start.
func (nd *listNode) before() int {
	if nd.gone < 0 {
		return -int(nd.gone)
	}
	return int(nd.gone)
}

// room returns the bytes before b's start the node may write.
func (nd *listNode) room() int { return max(-int(nd.gone), 0) }

// giveAway drops the first k bytes of b, which now belong to a caller:
// neither they nor the room before them are written again.
func (nd *listNode) giveAway(k int) {
	nd.gone = int32(nd.before() + k)
	nd.b = nd.b[k:]
}

// growFront moves the elements to the end of a new array of size bytes,
// with b taking the grow bytes before them (zeroed, for an element about
// to be written) and the node's room the rest. The elements and grow are
// not both empty: a slice of nothing would not point into the array.
func (nd *listNode) growFront(size, grow int) {
	nb := make([]byte, size)
	start := size - len(nd.b) - grow
	copy(nb[start+grow:], nd.b)
	nd.b, nd.gone = nb[start:], -int32(start)
}

// headCap returns the size of the array of a head node of n bytes that
// pushes at the head grow: as splice grows a node, an eighth more, or half
// more past 1 KB so that filling a node of kilobytes moves it a few times
// only, but no more than limit, the bytes the node may hold.
func headCap(n, limit int) int {
	c := lpCap(n)
	if n > 1024 {
		c = n + n/2
	}
	return max(min(c, limit), n)
}

// prepend packs v before the node's first element. It writes it into the
// room before b when there is enough. A node whose head was popped since
// its array was made (gone > 0), or that has room at the back, shifts its
// elements along as splice does; any other moves them into a new array
// with room before them (headCap, or least bytes in all when that is
// more) for the pushes at the head that follow.
func (nd *listNode) prepend(v []byte, least, limit int) {
	sz := packedSize(len(v))
	switch {
	case nd.room() >= sz:
		// The room is the node's own, before b in the same array (b is
		// not empty: only a node holding elements has room).
		p := unsafe.Add(unsafe.Pointer(unsafe.SliceData(nd.b)), -sz)
		nd.b = unsafe.Slice((*byte)(p), cap(nd.b)+sz)[:len(nd.b)+sz]
		nd.gone += int32(sz)
	case nd.gone > 0 || len(nd.b)+sz <= cap(nd.b):
		nd.splice(0, 0, v)
		return
	default:
		nd.growFront(max(headCap(len(nd.b)+sz, limit), min(least, limit)), sz)
	}
	putEntry(nd.b, v)
	nd.n++
}

// packedSize returns the packed size of an element of n bytes.
func packedSize(n int) int { return n + 2*uvarintLen(uint64(n)) }

// entryAt decodes the element at off and returns it (capacity clipped, so
// that appending to it copies) and the offset of the next one.
func entryAt(b []byte, off int) (v []byte, next int) {
	if n := int(b[off]); n < 0x80 {
		// A length of one byte, the common case.
		end := off + 1 + n
		return b[off+1 : end : end], end + 1
	}
	n, h := binary.Uvarint(b[off:])
	start := off + h
	end := start + int(n)
	return b[start:end:end], end + h
}

// entryBefore decodes the element that ends at end and returns it and its
// offset.
func entryBefore(b []byte, end int) (v []byte, start int) {
	var n int
	p := end - 1
	for shift := 0; ; shift += 7 {
		c := b[p]
		n |= int(c&0x7f) << shift
		p--
		if c < 0x80 {
			break
		}
	}
	h := end - 1 - p
	vend := p + 1
	vstart := vend - n
	return b[vstart:vend:vend], vstart - h
}

// putEntry writes v packed at the start of dst, which has entrySize bytes.
func putEntry(dst, v []byte) {
	h := binary.PutUvarint(dst, uint64(len(v)))
	copy(dst[h:], v)
	tail := dst[h+len(v):]
	for i := 0; i < h; i++ {
		tail[i] = dst[h-1-i]
	}
}

// offset returns the offset of element j, 0 <= j <= n, walking from the
// nearer end.
func (nd *listNode) offset(j int) int {
	if j <= int(nd.n)/2 {
		off := 0
		for ; j > 0; j-- {
			_, off = entryAt(nd.b, off)
		}
		return off
	}
	end := len(nd.b)
	for k := int(nd.n) - j; k > 0; k-- {
		_, end = entryBefore(nd.b, end)
	}
	return end
}

// splice replaces the packed bytes b[from:to] (whole elements, possibly
// none) with v packed, counting one more element when from == to. The
// array grows by an eighth when it must, so that a small node stays close
// to its size, and by half once it is past 1 KB, so that filling a
// node of kilobytes copies it a few times only; bytes before b's start
// are never written (PopFront gives them away).
func (nd *listNode) splice(from, to int, v []byte) {
	sz := packedSize(len(v))
	need := len(nd.b) - (to - from) + sz
	if need > cap(nd.b) {
		slack := need / 8
		if need > 1024 {
			slack = need / 2
		}
		nb := make([]byte, need, need+slack)
		copy(nb, nd.b[:from])
		copy(nb[from+sz:], nd.b[to:])
		nd.b, nd.gone = nb, 0
	} else {
		old := len(nd.b)
		nd.b = nd.b[:max(need, old)]
		copy(nd.b[from+sz:], nd.b[to:old])
		nd.b = nd.b[:need]
	}
	putEntry(nd.b[from:], v)
	if from == to {
		nd.n++
	}
}

// shrink gives back the array of a node that uses less than a quarter of
// it.
func (nd *listNode) shrink() {
	if total := nd.before() + cap(nd.b); total > 64 && 4*len(nd.b) < total {
		nd.b = append(make([]byte, 0, len(nd.b)+len(nd.b)/8), nd.b...)
		nd.gone = 0
	}
}
