package keyspace

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
)

// intset is Redis's intset in one byte slice: a first byte giving the
// width of every value (2, 4 or 8 bytes), then the values, little-endian
// two's complement, in ascending order. An empty intset is nil. The width
// is the smallest that holds every value ever added: it grows when a wider
// value comes and, as in Redis, never shrinks.
type intset []byte

// intWidth returns the smallest intset width that holds v.
func intWidth(v int64) int {
	switch {
	case v < math.MinInt32 || v > math.MaxInt32:
		return 8
	case v < math.MinInt16 || v > math.MaxInt16:
		return 4
	}
	return 2
}

// width returns the bytes per value, 0 for an empty intset.
func (is intset) width() int {
	if len(is) == 0 {
		return 0
	}
	return int(is[0])
}

// len returns the number of values.
func (is intset) len() int {
	if len(is) == 0 {
		return 0
	}
	return (len(is) - 1) / int(is[0])
}

// at returns value i, 0 <= i < len().
func (is intset) at(i int) int64 {
	w := int(is[0])
	p := is[1+i*w:]
	switch w {
	case 2:
		return int64(int16(binary.LittleEndian.Uint16(p)))
	case 4:
		return int64(int32(binary.LittleEndian.Uint32(p)))
	}
	return int64(binary.LittleEndian.Uint64(p))
}

// put writes v as value i in width w.
func (is intset) put(i, w int, v int64) {
	p := is[1+i*w:]
	switch w {
	case 2:
		binary.LittleEndian.PutUint16(p, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(p, uint32(v))
	default:
		binary.LittleEndian.PutUint64(p, uint64(v))
	}
}

// search returns the position of v, or where it would be inserted, and
// whether it is there.
func (is intset) search(v int64) (int, bool) {
	lo, hi := 0, is.len()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if is.at(m) < v {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < is.len() && is.at(lo) == v
}

// insert returns the intset with v, known to be absent, inserted at
// position i (from search). A value wider than the others rewrites the
// intset in the wider width first. Capacity grows by an eighth, keeping a
// small intset close to its size.
func (is intset) insert(i int, v int64) intset {
	w := max(is.width(), intWidth(v))
	n := is.len()
	if w != is.width() {
		is = is.widen(w)
	}
	need := 1 + (n+1)*w
	if need > cap(is) {
		grown := make(intset, len(is), need+(n/8)*w)
		copy(grown, is)
		is = grown
	}
	is = is[:need]
	copy(is[1+(i+1)*w:], is[1+i*w:1+n*w])
	is.put(i, w, v)
	return is
}

// widen returns a copy of the intset with values of width w, with room
// for one more.
func (is intset) widen(w int) intset {
	n := is.len()
	out := make(intset, 1+n*w, 1+(n+1)*w+(n/8)*w)
	out[0] = byte(w)
	for j := range n {
		out.put(j, w, is.at(j))
	}
	return out
}

// remove returns the intset without value i, nil when it was the last.
// The slice is reallocated once it is less than half used.
func (is intset) remove(i int) intset {
	n, w := is.len(), is.width()
	if n == 1 {
		return nil
	}
	copy(is[1+i*w:], is[1+(i+1)*w:])
	is = is[:len(is)-w]
	if cap(is) >= 32 && 2*len(is) < cap(is) {
		is = slices.Clone(is)
	}
	return is
}

// newIntset returns the intset of vs, ascending and distinct.
func newIntset(vs []int64) intset {
	if len(vs) == 0 {
		return nil
	}
	w := 2
	for _, v := range vs {
		w = max(w, intWidth(v))
	}
	is := make(intset, 1+len(vs)*w)
	is[0] = byte(w)
	for i, v := range vs {
		is.put(i, w, v)
	}
	return is
}

// ParseIntset decodes the contents of an intset of width bytes per value
// (Redis's RDB layout less its header) into a Set. It fails unless the
// width is 2, 4 or 8, data holds whole values, and the values are strictly
// ascending; an intset of more than maxIntset values becomes a hashtable,
// as Redis converts one when loading.
func ParseIntset(width int, data []byte, maxIntset int) (*Set, error) {
	if width != 2 && width != 4 && width != 8 {
		return nil, errIntsetWidth
	}
	if len(data)%width != 0 {
		return nil, errIntsetLength
	}
	if len(data) == 0 {
		return NewSet(), nil
	}
	is := make(intset, 1+len(data))
	is[0] = byte(width)
	copy(is[1:], data)
	for i := 1; i < is.len(); i++ {
		if is.at(i-1) >= is.at(i) {
			return nil, errIntsetOrder
		}
	}
	s := &Set{}
	s.setInts(is)
	if is.len() > min(maxIntset, maxIntsetLen) {
		s.convert()
	}
	return s, nil
}

// The errors of ParseIntset.
var (
	errIntsetWidth  = errors.New("intset width is not 2, 4 or 8")
	errIntsetLength = errors.New("intset length is not a multiple of its width")
	errIntsetOrder  = errors.New("intset values are not strictly ascending")
)
