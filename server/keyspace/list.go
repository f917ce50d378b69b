package keyspace

import "slices"

// ListMaxListpackSize is Redis 7.0's default list-max-listpack-size (-2:
// nodes of up to 8 KB): the fill loaders give the lists they build, as the
// server's CONFIG value is not theirs to read.
const ListMaxListpackSize = -2

// List is a Redis list: a double-ended queue of byte strings, kept as
// Redis 7.0 keeps every list, a quicklist: a sequence of nodes, each of
// them one byte slice holding its elements packed one after the other
// (list_node.go), no Go object per element and nothing for the collector
// to scan but the nodes. fill, list-max-listpack-size when the list was
// created (as in Redis), bounds a node: a positive fill is a number of
// elements, -1 to -5 a size of 4 to 64 KB.
//
// Pushes and pops at both ends touch one node; indexing (LINDEX, LSET)
// walks the nodes' counts, then one node's elements from its nearer end.
type List struct {
	nodes []listNode // head first; none is empty
	n     int        // number of elements
	size  int        // bytes of the nodes' packed data
	fill  int32
}

// NewList returns an empty list whose nodes fill (list-max-listpack-size)
// bounds.
func NewList(fill int) *List {
	return &List{fill: int32(max(min(fill, 1<<30), -5))}
}

// Type reports TypeList.
func (l *List) Type() Type { return TypeList }

// Encoding returns the name OBJECT ENCODING reports. Redis 7.0 stores every
// list as a quicklist, whatever its size.
func (l *List) Encoding() string { return "quicklist" }

// Len returns the number of elements.
func (l *List) Len() int { return l.n }

// MemoryUsage estimates the bytes the value takes, in the spirit of Redis's
// MEMORY USAGE for a quicklist: the list header, its nodes and their
// packed elements.
func (l *List) MemoryUsage() int64 {
	return 48 + int64(cap(l.nodes))*32 + int64(l.size)
}

// fits reports whether nd may take one more element of sz packed bytes, as
// Redis's _quicklistNodeAllowInsert decides: an empty node takes anything;
// with a positive fill a node holds at most fill elements and 8 KB, with a
// negative one at most 4 KB << (-fill-1).
func (l *List) fits(nd *listNode, sz int) bool { return l.fitsAfter(int(nd.n), len(nd.b), sz) }

// fitsAfter is fits for a node of n elements in size bytes.
func (l *List) fitsAfter(n, size, sz int) bool {
	if n == 0 {
		return true
	}
	total := size + sz
	if l.fill >= 0 {
		return n+1 <= int(l.fill) && total <= 8192
	}
	return total <= l.nodeLimit()
}

// locate returns the node holding element i, 0 <= i < Len(), the offset of
// the element in it and the element's index in the node.
func (l *List) locate(i int) (ni, off, j int) {
	if i < l.n/2 {
		for ni = 0; i >= int(l.nodes[ni].n); ni++ {
			i -= int(l.nodes[ni].n)
		}
	} else {
		back := l.n - 1 - i // elements after i
		for ni = len(l.nodes) - 1; back >= int(l.nodes[ni].n); ni-- {
			back -= int(l.nodes[ni].n)
		}
		i = int(l.nodes[ni].n) - 1 - back
	}
	return ni, l.nodes[ni].offset(i), i
}

// At returns element i (0 is the head). i must be in [0, Len()). The slice
// belongs to the list and is valid until the list changes.
func (l *List) At(i int) []byte {
	ni, off, _ := l.locate(i)
	v, _ := entryAt(l.nodes[ni].b, off)
	return v
}

// Set replaces element i with a copy of v.
func (l *List) Set(i int, v []byte) {
	ni, off, _ := l.locate(i)
	nd := &l.nodes[ni]
	_, end := entryAt(nd.b, off)
	before := len(nd.b)
	nd.splice(off, end, v)
	l.size += len(nd.b) - before
}

// PushBack appends a copy of v at the tail.
func (l *List) PushBack(v []byte) {
	k := len(l.nodes)
	if k == 0 || !l.fits(&l.nodes[k-1], packedSize(len(v))) {
		l.nodes = append(l.nodes, listNode{})
		k++
	}
	nd := &l.nodes[k-1]
	before := len(nd.b)
	nd.splice(len(nd.b), len(nd.b), v)
	l.size += len(nd.b) - before
	l.n++
}

// PushFront inserts a copy of v at the head.
func (l *List) PushFront(v []byte) {
	least := 0
	if len(l.nodes) == 0 || !l.fits(&l.nodes[0], packedSize(len(v))) {
		if len(l.nodes) > 0 {
			// Pushes at the head filled that node: the new one starts
			// with an eighth of its size, not with a few bytes.
			least = len(l.nodes[0].b) / 8
		}
		l.nodes = slices.Insert(l.nodes, 0, listNode{})
	}
	nd := &l.nodes[0]
	before := len(nd.b)
	nd.prepend(v, least, l.headLimit(nd))
	l.size += len(nd.b) - before
	l.n++
}

// headLimit returns the bytes the head node nd may grow to with the
// element about to be pushed and the ones after it: none past it when it
// takes no element after the next one.
func (l *List) headLimit(nd *listNode) int {
	if l.fill >= 0 && int(nd.n)+1 >= int(l.fill) {
		return 0
	}
	return l.nodeLimit()
}

// nodeLimit returns the most bytes a node of more than one element may
// hold (fits).
func (l *List) nodeLimit() int {
	if l.fill >= 0 {
		return 8192
	}
	return 4096 << (-l.fill - 1)
}

// PushAll pushes copies of vs one after the other at the head (front) or
// the tail, as LPUSH and RPUSH do. An end node about to grow is first
// given room for all of vs it will take, so that a list built by one push
// holds no slack and leaves none of the garbage of a node grown element
// by element. At the head the room is made before the elements, unless
// the head was popped since the node's array was made (prepend).
func (l *List) PushAll(front bool, vs [][]byte) {
	for i, v := range vs {
		k := len(l.nodes) - 1
		if front {
			k = 0
		}
		if len(l.nodes) > 0 {
			sz := packedSize(len(v))
			if nd := &l.nodes[k]; l.fits(nd, sz) && cap(nd.b)-len(nd.b) < sz && (!front || nd.room() < sz) {
				l.reserve(nd, vs[i:], front && nd.gone <= 0)
			}
		}
		if front {
			l.PushFront(v)
		} else {
			l.PushBack(v)
		}
	}
}

// reserve grows nd's array to hold as many of vs as it may take: the
// room is before the elements with atHead, after them without.
func (l *List) reserve(nd *listNode, vs [][]byte, atHead bool) {
	n, size := int(nd.n), len(nd.b)
	for _, v := range vs {
		sz := packedSize(len(v))
		if !l.fitsAfter(n, size, sz) {
			break
		}
		n++
		size += sz
	}
	if atHead {
		c := lpCap(size)
		if len(vs) == 1 {
			// One push of a run at the head: room for the next ones.
			c = headCap(size, l.headLimit(nd))
		}
		nd.growFront(c, 0)
		return
	}
	nb := make([]byte, len(nd.b), lpCap(size))
	copy(nb, nd.b)
	nd.b, nd.gone = nb, 0
}

// PopFront removes and returns the head element, nil when the list is
// empty. The caller owns the returned slice: the node gives up the bytes
// before its new head and never writes them again.
func (l *List) PopFront() []byte {
	if l.n == 0 {
		return nil
	}
	nd := &l.nodes[0]
	v, next := entryAt(nd.b, 0)
	nd.giveAway(next)
	nd.n--
	l.size -= next
	l.n--
	if nd.n == 0 {
		l.dropNode(0)
	} else {
		nd.shrink()
	}
	return v
}

// PopBack removes and returns the tail element, nil when the list is empty.
// The caller owns the returned slice, a copy.
func (l *List) PopBack() []byte {
	if l.n == 0 {
		return nil
	}
	k := len(l.nodes) - 1
	nd := &l.nodes[k]
	v, start := entryBefore(nd.b, len(nd.b))
	v = clone(v)
	l.size -= len(nd.b) - start
	nd.b = nd.b[:start]
	nd.n--
	l.n--
	if nd.n == 0 {
		l.dropNode(k)
	} else {
		nd.shrink()
	}
	return v
}

// dropNode removes node k, which the caller has emptied.
func (l *List) dropNode(k int) {
	switch {
	case len(l.nodes) == 1:
		l.nodes = nil
	case k == 0:
		l.nodes[0] = listNode{}
		l.nodes = l.nodes[1:]
	default:
		l.nodes = slices.Delete(l.nodes, k, k+1)
	}
}

// Insert puts a copy of v at position i, 0 <= i <= Len(). A node too full
// to take it is split at the position.
func (l *List) Insert(i int, v []byte) {
	if i >= l.n {
		l.PushBack(v)
		return
	}
	if i == 0 {
		l.PushFront(v)
		return
	}
	ni, off, j := l.locate(i)
	sz := packedSize(len(v))
	if j == 0 && l.fits(&l.nodes[ni-1], sz) {
		// Append to the previous node instead.
		ni, off = ni-1, len(l.nodes[ni-1].b)
	} else if !l.fits(&l.nodes[ni], sz) {
		nd := &l.nodes[ni]
		right := listNode{b: slices.Clone(nd.b[off:]), n: nd.n - int32(j)}
		nd.b, nd.n = slices.Clip(nd.b[:off]), int32(j)
		if j == 0 {
			// An empty left part takes v alone.
			l.nodes[ni] = right
			l.nodes = slices.Insert(l.nodes, ni, listNode{})
			off = 0
		} else {
			l.nodes = slices.Insert(l.nodes, ni+1, right)
		}
	}
	nd := &l.nodes[ni]
	before := len(nd.b)
	nd.splice(off, off, v)
	l.size += len(nd.b) - before
	l.n++
}

// Trim keeps elements [start, stop] (inclusive, 0 <= start <= stop < Len())
// and drops the rest.
func (l *List) Trim(start, stop int) {
	l.dropBack(l.n - 1 - stop)
	l.dropFront(start)
}

// dropFront removes the first k elements.
func (l *List) dropFront(k int) {
	for k > 0 {
		nd := &l.nodes[0]
		if int(nd.n) <= k {
			k -= int(nd.n)
			l.n -= int(nd.n)
			l.size -= len(nd.b)
			l.dropNode(0)
			continue
		}
		off := nd.offset(k)
		l.size -= off
		nd.b, nd.gone = slices.Clone(nd.b[off:]), 0
		nd.n -= int32(k)
		l.n -= k
		return
	}
}

// dropBack removes the last k elements.
func (l *List) dropBack(k int) {
	for k > 0 {
		last := len(l.nodes) - 1
		nd := &l.nodes[last]
		if int(nd.n) <= k {
			k -= int(nd.n)
			l.n -= int(nd.n)
			l.size -= len(nd.b)
			l.dropNode(last)
			continue
		}
		off := nd.offset(int(nd.n) - k)
		l.size -= len(nd.b) - off
		nd.b = nd.b[:off]
		nd.n -= int32(k)
		l.n -= k
		nd.shrink()
		return
	}
}

// Clear removes every element.
func (l *List) Clear() {
	l.nodes, l.n, l.size = nil, 0, 0
}

// Remove deletes elements equal to v and returns how many it deleted, as
// LREM does: count > 0 deletes up to count matches from the head, count < 0
// up to -count from the tail, count == 0 every match.
func (l *List) Remove(count int64, v []byte) int64 {
	// The matches to delete are the ones numbered [skip, skip+limit) from
	// the head: from the tail, the last -count of them.
	limit, skip := count, int64(0)
	if count <= 0 {
		var total int64
		l.Iter(0, false, func(_ int, e []byte) bool {
			if string(e) == string(v) {
				total++
			}
			return true
		})
		limit = total
		if count < 0 && -count > 0 && -count < total { // -minimum int64 stays negative: all
			limit = -count
			skip = total - limit
		}
	}
	var seen, removed int64
	kept := l.nodes[:0]
	for _, nd := range l.nodes {
		var out listNode
		changed := false
		for off := 0; off < len(nd.b); {
			e, next := entryAt(nd.b, off)
			match := string(e) == string(v) && removed < limit
			if match {
				seen++
				match = seen > skip
			}
			if match {
				if !changed {
					out.b = append(make([]byte, 0, len(nd.b)), nd.b[:off]...)
					changed = true
				}
				removed++
			} else {
				if changed {
					out.b = append(out.b, nd.b[off:next]...)
				}
				out.n++
			}
			off = next
		}
		if !changed {
			out = nd
		}
		if out.n > 0 {
			out.shrink()
			kept = append(kept, out)
		}
	}
	clear(l.nodes[len(kept):])
	l.nodes = kept
	l.n -= int(removed)
	l.size = 0
	for _, nd := range l.nodes {
		l.size += len(nd.b)
	}
	if l.n == 0 {
		l.nodes = nil
	}
	return removed
}

// Range calls fn for each element from head to tail until fn returns false.
// The slices belong to the list; fn must not modify it.
func (l *List) Range(fn func(v []byte) bool) {
	for _, nd := range l.nodes {
		for off := 0; off < len(nd.b); {
			v, next := entryAt(nd.b, off)
			if !fn(v) {
				return
			}
			off = next
		}
	}
}

// Iter calls fn with the position and value of each element from position
// i, 0 <= i < Len(), towards the tail, or with reverse towards the head,
// until fn returns false. The slices belong to the list; fn must not
// modify it.
func (l *List) Iter(i int, reverse bool, fn func(pos int, v []byte) bool) {
	if i < 0 || i >= l.n {
		return
	}
	ni, off, _ := l.locate(i)
	if !reverse {
		for ; ni < len(l.nodes); ni, off = ni+1, 0 {
			b := l.nodes[ni].b
			for off < len(b) {
				v, next := entryAt(b, off)
				if !fn(i, v) {
					return
				}
				i++
				off = next
			}
		}
		return
	}
	_, end := entryAt(l.nodes[ni].b, off)
	for {
		b := l.nodes[ni].b
		for end > 0 {
			v, start := entryBefore(b, end)
			if !fn(i, v) {
				return
			}
			i--
			end = start
		}
		if ni == 0 {
			return
		}
		ni--
		end = len(l.nodes[ni].b)
	}
}

// ListCursor walks a list from a position towards the tail, without a
// call per element: LRANGE's loop.
type ListCursor struct {
	l   *List
	ni  int
	b   []byte // node ni's elements
	off int
}

// Cursor returns a cursor at element i, 0 <= i < Len().
func (l *List) Cursor(i int) ListCursor {
	ni, off, _ := l.locate(i)
	return ListCursor{l: l, ni: ni, b: l.nodes[ni].b, off: off}
}

// Next returns the element at the cursor and moves past it. The caller
// stops at the tail; the slice belongs to the list and is valid until the
// list changes.
func (c *ListCursor) Next() []byte {
	if c.off == len(c.b) {
		c.ni++
		c.b, c.off = c.l.nodes[c.ni].b, 0
	}
	b, off := c.b, c.off
	if n := int(b[off]); n < 0x80 {
		end := off + 1 + n
		c.off = end + 1
		return b[off+1 : end : end]
	}
	v, next := entryAt(b, off)
	c.off = next
	return v
}

// Copy returns a deep copy of the list.
func (l *List) Copy() Object {
	c := &List{n: l.n, size: l.size, fill: l.fill}
	if l.n > 0 {
		c.nodes = make([]listNode, len(l.nodes))
		for i, nd := range l.nodes {
			c.nodes[i] = listNode{b: slices.Clone(nd.b), n: nd.n}
		}
	}
	return c
}

// clone copies v into a new slice that is never nil.
func clone(v []byte) []byte {
	c := make([]byte, len(v))
	copy(c, v)
	return c
}
