package keyspace

// List is a Redis list: a double-ended queue of byte strings. It is a ring
// buffer whose capacity is a power of two, so that pushes and pops at both
// ends are O(1) and indexing (LINDEX, LRANGE) is one mask away.
//
// The list owns its elements: the pushing methods copy their argument,
// except the Owned variants, which take the slice they are given.
type List struct {
	buf  [][]byte // ring storage; len(buf) is 0 or a power of two
	head int      // index in buf of the first element
	n    int      // number of elements
	size int      // total bytes of the elements
}

// minListCap is the smallest ring a non-empty list allocates.
const minListCap = 4

// NewList returns an empty list.
func NewList() *List { return &List{} }

// Type reports TypeList.
func (l *List) Type() Type { return TypeList }

// Encoding returns the name OBJECT ENCODING reports. Redis 7.0 stores every
// list as a quicklist, whatever its size.
func (l *List) Encoding() string { return "quicklist" }

// Len returns the number of elements.
func (l *List) Len() int { return l.n }

// Bytes returns the total size of the elements in bytes.
func (l *List) Bytes() int { return l.size }

// MemoryUsage estimates the bytes the value takes, in the spirit of Redis's
// MEMORY USAGE for a quicklist: the list header, one node per 8 KB of
// listpack, and each element with its listpack overhead.
func (l *List) MemoryUsage() int64 {
	const quicklistHeader, nodeHeader, nodeSize = 40, 32, 8 << 10
	data := int64(l.size) + 2*int64(l.n)
	nodes := data/nodeSize + 1
	return quicklistHeader + nodes*(nodeHeader+7) + data
}

// At returns element i (0 is the head). i must be in [0, Len()). The slice
// belongs to the list.
func (l *List) At(i int) []byte { return l.buf[(l.head+i)&(len(l.buf)-1)] }

// Set replaces element i with a copy of v.
func (l *List) Set(i int, v []byte) {
	p := &l.buf[(l.head+i)&(len(l.buf)-1)]
	l.size += len(v) - len(*p)
	*p = clone(v)
}

// PushBack appends a copy of v at the tail.
func (l *List) PushBack(v []byte) { l.PushBackOwned(clone(v)) }

// PushFront inserts a copy of v at the head.
func (l *List) PushFront(v []byte) { l.PushFrontOwned(clone(v)) }

// PushBackOwned appends v at the tail; the list keeps v itself.
func (l *List) PushBackOwned(v []byte) {
	l.grow()
	l.buf[(l.head+l.n)&(len(l.buf)-1)] = v
	l.n++
	l.size += len(v)
}

// PushFrontOwned inserts v at the head; the list keeps v itself.
func (l *List) PushFrontOwned(v []byte) {
	l.grow()
	l.head = (l.head - 1) & (len(l.buf) - 1)
	l.buf[l.head] = v
	l.n++
	l.size += len(v)
}

// PopFront removes and returns the head element, nil when the list is
// empty. The caller owns the returned slice.
func (l *List) PopFront() []byte {
	if l.n == 0 {
		return nil
	}
	v := l.buf[l.head]
	l.buf[l.head] = nil
	l.head = (l.head + 1) & (len(l.buf) - 1)
	l.n--
	l.size -= len(v)
	l.shrink()
	return v
}

// PopBack removes and returns the tail element, nil when the list is empty.
// The caller owns the returned slice.
func (l *List) PopBack() []byte {
	if l.n == 0 {
		return nil
	}
	i := (l.head + l.n - 1) & (len(l.buf) - 1)
	v := l.buf[i]
	l.buf[i] = nil
	l.n--
	l.size -= len(v)
	l.shrink()
	return v
}

// Insert puts a copy of v at position i, 0 <= i <= Len(), shifting the
// shorter side of the list by one.
func (l *List) Insert(i int, v []byte) {
	if i >= l.n {
		l.PushBack(v)
		return
	}
	if i == 0 {
		l.PushFront(v)
		return
	}
	c := clone(v)
	l.grow()
	mask := len(l.buf) - 1
	if i < l.n/2 {
		// Move the head and elements before i one slot to the left.
		l.head = (l.head - 1) & mask
		for j := 0; j < i; j++ {
			l.buf[(l.head+j)&mask] = l.buf[(l.head+j+1)&mask]
		}
	} else {
		for j := l.n; j > i; j-- {
			l.buf[(l.head+j)&mask] = l.buf[(l.head+j-1)&mask]
		}
	}
	l.buf[(l.head+i)&mask] = c
	l.n++
	l.size += len(c)
}

// Trim keeps elements [start, stop] (inclusive, 0 <= start <= stop < Len())
// and drops the rest.
func (l *List) Trim(start, stop int) {
	for l.n > stop+1 {
		l.PopBack()
	}
	for k := 0; k < start; k++ {
		l.PopFront()
	}
}

// Clear removes every element.
func (l *List) Clear() {
	l.buf, l.head, l.n, l.size = nil, 0, 0, 0
}

// Remove deletes elements equal to v and returns how many it deleted, as
// LREM does: count > 0 deletes up to count matches from the head, count < 0
// up to -count from the tail, count == 0 every match.
func (l *List) Remove(count int64, v []byte) int64 {
	if l.n == 0 {
		return 0
	}
	mask := len(l.buf) - 1
	limit := count
	if limit < 0 {
		limit = -limit
	}
	if limit < 0 { // count was the minimum int64
		limit = 1<<63 - 1
	}
	var removed int64
	if count >= 0 {
		// Compact towards the head, walking forwards.
		w := 0
		for r := 0; r < l.n; r++ {
			e := l.buf[(l.head+r)&mask]
			if (count == 0 || removed < limit) && string(e) == string(v) {
				removed++
				l.size -= len(e)
				continue
			}
			l.buf[(l.head+w)&mask] = e
			w++
		}
		for j := w; j < l.n; j++ {
			l.buf[(l.head+j)&mask] = nil
		}
		l.n = w
	} else {
		// Compact towards the tail, walking backwards.
		w := l.n - 1
		for r := l.n - 1; r >= 0; r-- {
			e := l.buf[(l.head+r)&mask]
			if removed < limit && string(e) == string(v) {
				removed++
				l.size -= len(e)
				continue
			}
			l.buf[(l.head+w)&mask] = e
			w--
		}
		gap := w + 1
		for j := 0; j < gap; j++ {
			l.buf[(l.head+j)&mask] = nil
		}
		l.head = (l.head + gap) & mask
		l.n -= gap
	}
	l.shrink()
	return removed
}

// Range calls fn for each element from head to tail until fn returns false.
// The slices belong to the list.
func (l *List) Range(fn func(v []byte) bool) {
	mask := len(l.buf) - 1
	for i := 0; i < l.n; i++ {
		if !fn(l.buf[(l.head+i)&mask]) {
			return
		}
	}
}

// Copy returns a deep copy of the list.
func (l *List) Copy() Object {
	c := &List{size: l.size, n: l.n}
	if l.n == 0 {
		return c
	}
	c.buf = make([][]byte, ringSize(l.n))
	mask := len(l.buf) - 1
	for i := 0; i < l.n; i++ {
		c.buf[i] = clone(l.buf[(l.head+i)&mask])
	}
	return c
}

// grow makes room for one more element.
func (l *List) grow() {
	if l.n < len(l.buf) {
		return
	}
	l.resize(max(minListCap, 2*len(l.buf)))
}

// shrink halves the ring while it is less than a quarter full.
func (l *List) shrink() {
	if l.n == 0 {
		l.buf, l.head = nil, 0
		return
	}
	if len(l.buf) > 64 && l.n < len(l.buf)/4 {
		l.resize(len(l.buf) / 2)
	}
}

// resize moves the elements into a ring of size c, head first.
func (l *List) resize(c int) {
	nb := make([][]byte, c)
	if l.n > 0 {
		mask := len(l.buf) - 1
		first := copy(nb, l.buf[l.head:min(len(l.buf), l.head+l.n)])
		if first < l.n {
			copy(nb[first:], l.buf[:(l.head+l.n)&mask])
		}
	}
	l.buf, l.head = nb, 0
}

// ringSize returns the smallest power of two, at least minListCap, that
// holds n elements.
func ringSize(n int) int {
	c := minListCap
	for c < n {
		c *= 2
	}
	return c
}

// clone copies v into a new slice that is never nil.
func clone(v []byte) []byte {
	c := make([]byte, len(v))
	copy(c, v)
	return c
}
