package keyspace

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"

	"github.com/recached/recached/resp"
)

// intset is Redis's intset: values of one width (2, 4 or 8 bytes),
// little-endian two's complement, in ascending order, in one byte slice.
// The width is the smallest that holds every value ever added: it grows
// when a wider value comes and, as in Redis, never shrinks. It is kept
// beside the bytes (in the Set's header, set.go) rather than in them, so
// that a small intset and its key fill their entry's allocation to the
// byte (entry.go). The zero intset is empty, and so is one of width 0.
type intset struct {
	b []byte
	w int // bytes per value, 0 while no value was ever added
}

// lacks returns how many of members (a duplicate counts twice) the
// intset does not hold, and the width it needs to hold them too; ok is
// false when one is not an integer, which would convert the set.
func (is intset) lacks(members [][]byte) (add, w int, ok bool) {
	w = is.w
	for _, m := range members {
		v, ok := resp.ParseInt(m)
		if !ok {
			return 0, 0, false
		}
		if _, found := is.search(v); !found {
			add++
			w = max(w, intWidth(v))
		}
	}
	return add, w, true
}

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

// len returns the number of values.
func (is intset) len() int {
	if is.w == 0 {
		return 0
	}
	return len(is.b) / is.w
}

// at returns value i, 0 <= i < len().
func (is intset) at(i int) int64 {
	p := is.b[i*is.w:]
	switch is.w {
	case 2:
		return int64(int16(binary.LittleEndian.Uint16(p)))
	case 4:
		return int64(int32(binary.LittleEndian.Uint32(p)))
	}
	return int64(binary.LittleEndian.Uint64(p))
}

// put writes v as value i.
func (is intset) put(i int, v int64) {
	p := is.b[i*is.w:]
	switch is.w {
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
// intset in the wider width first (an empty one takes the width as it
// is). Capacity grows by an eighth, keeping a small intset close to its
// size.
func (is intset) insert(i int, v int64) intset {
	w := max(is.w, intWidth(v))
	n := is.len()
	if w != is.w {
		is = is.widen(w)
	}
	need := (n + 1) * w
	if need > cap(is.b) {
		grown := make([]byte, len(is.b), need+(n/8)*w)
		copy(grown, is.b)
		is.b = grown
	}
	is.b = is.b[:need]
	copy(is.b[(i+1)*w:], is.b[i*w:n*w])
	is.put(i, v)
	return is
}

// widen returns the intset with values of width w: an empty one in place,
// else a copy with room for one more value.
func (is intset) widen(w int) intset {
	n := is.len()
	if n == 0 {
		return intset{b: is.b[:0], w: w}
	}
	out := intset{b: make([]byte, n*w, (n+1)*w+(n/8)*w), w: w}
	for j := range n {
		out.put(j, is.at(j))
	}
	return out
}

// remove returns the intset without value i, empty when it was the last.
// The slice is reallocated once it is less than half used.
func (is intset) remove(i int) intset {
	n, w := is.len(), is.w
	if n == 1 {
		return intset{}
	}
	copy(is.b[i*w:], is.b[(i+1)*w:])
	is.b = is.b[:len(is.b)-w]
	if cap(is.b) >= 32 && 2*len(is.b) < cap(is.b) {
		is.b = slices.Clone(is.b)
	}
	return is
}

// newIntset returns the intset of vs, ascending and distinct.
func newIntset(vs []int64) intset {
	if len(vs) == 0 {
		return intset{}
	}
	w := 2
	for _, v := range vs {
		w = max(w, intWidth(v))
	}
	is := intset{b: make([]byte, len(vs)*w), w: w}
	for i, v := range vs {
		is.put(i, v)
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
	is := intset{b: slices.Clone(data), w: width}
	for i := 1; i < is.len(); i++ {
		if is.at(i-1) >= is.at(i) {
			return nil, errIntsetOrder
		}
	}
	s := &Set{}
	if is.len() > min(maxIntset, maxIntsetLen) {
		s.setTable(newSetTable(is))
	} else {
		s.setInts(is)
	}
	return s, nil
}

// The errors of ParseIntset.
var (
	errIntsetWidth  = errors.New("intset width is not 2, 4 or 8")
	errIntsetLength = errors.New("intset length is not a multiple of its width")
	errIntsetOrder  = errors.New("intset values are not strictly ascending")
)
