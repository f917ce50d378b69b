package keyspace

import (
	"maps"
	"slices"

	"github.com/recached/recached/resp"
)

// setMaxIntsetEntries is Redis 7.0's default set-max-intset-entries.
const setMaxIntsetEntries = 512

// Set is a set value: distinct byte strings.
//
// A set of at most 512 integers mirrors Redis's intset: its members are kept
// in ascending numeric order (the order Redis replies in) and found by
// binary search. Any other set keeps its members in a dense slice, so that
// a random member is one index away (SPOP, SRANDMEMBER) and a cursor is a
// position (SSCAN), with a map from member to position once it outgrows a
// linear search; removing a member moves the last one into its place.
type Set struct {
	members []string
	ints    []int64        // intset only: the members' values, ascending
	index   map[string]int // hashtable only; nil while len(members) <= indexThreshold
	size    int64          // total bytes of the members
	large   bool           // converted to the hashtable encoding, as Redis never converts back
}

// NewSet returns an empty set.
func NewSet() *Set { return &Set{} }

// Type reports TypeSet.
func (s *Set) Type() Type { return TypeSet }

// Len returns the number of members.
func (s *Set) Len() int { return len(s.members) }

// find returns the position of member, or -1.
func (s *Set) find(member []byte) int {
	if !s.large {
		return findInt(s, member)
	}
	if s.index != nil {
		if i, ok := s.index[string(member)]; ok {
			return i
		}
		return -1
	}
	for i, m := range s.members {
		if m == string(member) {
			return i
		}
	}
	return -1
}

// findString is find for a string member.
func (s *Set) findString(member string) int {
	if !s.large {
		return findInt(s, member)
	}
	if s.index != nil {
		if i, ok := s.index[member]; ok {
			return i
		}
		return -1
	}
	for i, m := range s.members {
		if m == member {
			return i
		}
	}
	return -1
}

// findInt finds member in an intset: only a canonical integer can be in it.
func findInt[T string | []byte](s *Set, member T) int {
	v, ok := resp.ParseInt(member)
	if !ok {
		return -1
	}
	if i, found := slices.BinarySearch(s.ints, v); found {
		return i
	}
	return -1
}

// Has reports whether member is in the set.
func (s *Set) Has(member []byte) bool { return s.find(member) >= 0 }

// HasString reports whether member is in the set.
func (s *Set) HasString(member string) bool { return s.findString(member) >= 0 }

// Add adds a copy of member and reports whether it was new.
func (s *Set) Add(member []byte) bool {
	if s.find(member) >= 0 {
		return false
	}
	s.insert(string(member))
	return true
}

// AddString adds member, which the set keeps without copying (strings are
// immutable), and reports whether it was new. Set algebra builds its
// results with it from other sets' members.
func (s *Set) AddString(member string) bool {
	if s.findString(member) >= 0 {
		return false
	}
	s.insert(member)
	return true
}

// insert adds a member known to be absent.
func (s *Set) insert(m string) {
	s.size += int64(len(m))
	if !s.large {
		if v, ok := resp.ParseInt(m); ok && len(s.members) < setMaxIntsetEntries {
			i, _ := slices.BinarySearch(s.ints, v)
			s.ints = slices.Insert(s.ints, i, v)
			s.members = slices.Insert(s.members, i, m)
			return
		}
		s.convert()
	}
	s.members = append(s.members, m)
	n := len(s.members)
	switch {
	case s.index != nil:
		s.index[m] = n - 1
	case n > indexThreshold:
		s.buildIndex()
	}
}

// convert turns an intset into a hashtable set, for good.
func (s *Set) convert() {
	s.large = true
	s.ints = nil
	if len(s.members) > indexThreshold {
		s.buildIndex()
	}
}

func (s *Set) buildIndex() {
	s.index = make(map[string]int, len(s.members))
	for i, m := range s.members {
		s.index[m] = i
	}
}

// Remove removes member and reports whether it was in the set.
func (s *Set) Remove(member []byte) bool {
	i := s.find(member)
	if i < 0 {
		return false
	}
	s.RemoveAt(i)
	return true
}

// RemoveAt removes and returns the member at position i, 0 <= i < Len().
// An intset closes the gap, keeping its order; any other set moves its last
// member into position i.
func (s *Set) RemoveAt(i int) string {
	m := s.members[i]
	s.size -= int64(len(m))
	if !s.large {
		s.members = slices.Delete(s.members, i, i+1)
		s.ints = slices.Delete(s.ints, i, i+1)
	} else {
		last := len(s.members) - 1
		if s.index != nil {
			delete(s.index, m)
		}
		if i != last {
			s.members[i] = s.members[last]
			if s.index != nil {
				s.index[s.members[i]] = i
			}
		}
		s.members[last] = ""
		s.members = s.members[:last]
	}
	if cap(s.members) >= 64 && 4*len(s.members) <= cap(s.members) {
		s.compact()
	}
	return m
}

// compact gives back the memory of a set that shrank to a quarter of its
// capacity: smaller slices and a fresh index (Go maps never shrink).
func (s *Set) compact() {
	s.members = append(make([]string, 0, 2*len(s.members)), s.members...)
	if !s.large {
		s.ints = append(make([]int64, 0, 2*len(s.ints)), s.ints...)
		return
	}
	if len(s.members) <= indexThreshold {
		s.index = nil
	} else {
		s.buildIndex()
	}
}

// At returns the member at position i, 0 <= i < Len(). Positions are stable
// only while the set is not modified; they serve random picks.
func (s *Set) At(i int) string { return s.members[i] }

// Range calls fn for every member until fn returns false, an intset in
// ascending order. The slice is valid only during the call, and fn must not
// modify the set.
func (s *Set) Range(fn func(member []byte) bool) {
	var buf []byte
	for _, m := range s.members {
		buf = append(buf[:0], m...)
		if !fn(buf) {
			return
		}
	}
}

// Scan calls fn for up to count members, starting from cursor (0 to begin),
// and returns the cursor to continue from, 0 when the iteration is over.
// An intset is returned whole in one call, whatever the count, as Redis
// does. Otherwise every member present for the whole iteration is visited
// at least once: positions are visited from the highest down, and a removal
// only ever moves a member from a visited position to a lower one.
func (s *Set) Scan(cursor uint64, count int, fn func(member string)) uint64 {
	if !s.large {
		for _, m := range s.members {
			fn(m)
		}
		return 0
	}
	p := uint64(len(s.members))
	if cursor != 0 && cursor < p {
		p = cursor
	}
	for ; p > 0 && count > 0; count-- {
		p--
		fn(s.members[p])
	}
	return p
}

// Copy returns a copy of the set (COPY). Members are immutable strings, so
// the copy shares their bytes.
func (s *Set) Copy() Object {
	c := &Set{
		members: slices.Clone(s.members),
		ints:    slices.Clone(s.ints),
		size:    s.size,
		large:   s.large,
	}
	if s.index != nil {
		c.index = maps.Clone(s.index)
	}
	return c
}

// Encoding names the encoding Redis 7.0 would use with its default
// thresholds: "intset" while every member ever added was an integer and the
// set never held more than 512 members, "hashtable" from then on. (Redis
// 7.0 has no listpack encoding for sets; 7.2 added it.)
func (s *Set) Encoding() string {
	if s.large {
		return "hashtable"
	}
	return "intset"
}

// MemoryUsage estimates the bytes the set takes.
func (s *Set) MemoryUsage() int64 {
	n := int64(64) + int64(cap(s.members))*16 + int64(cap(s.ints))*8 + s.size
	if s.index != nil {
		n += int64(len(s.index)) * 40
	}
	return n
}
