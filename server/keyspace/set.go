package keyspace

import (
	"maps"
	"math/bits"
	"slices"
	"strconv"
	"unsafe"

	"github.com/recached/recached/resp"
)

// SetMaxIntsetEntries is Redis 7.0's default set-max-intset-entries: the
// limit loaders use, as the server's CONFIG value is not theirs to read.
const SetMaxIntsetEntries = 512

// Set is a set value: distinct byte strings, in one of Redis 7.0's two
// encodings.
//
// An intset holds integers only, at most set-max-intset-entries of them,
// packed in one byte slice in ascending order (the order Redis replies in)
// and found by binary search: no Go object per member and nothing for the
// collector to scan (set_intset.go). Adding a member that is not a
// canonical integer, or one past the limit, converts the set for good to
// the hashtable encoding, a setTable.
type Set struct {
	// p is the intset encoding's values, n of them in a capacity of c
	// (ints), or, once c is tableMark, the *setTable of the hashtable
	// encoding (table). n's top two bits are the intset's width (0 for
	// none yet, 1, 2 or 3 for 2, 4 or 8 bytes). One pointer and two
	// lengths, so that a Set is 16 bytes, beside the intset it points to
	// or, for a set kept in its entry, inside the same allocation
	// (entry.go).
	p    unsafe.Pointer
	n, c uint32
}

// maxIntsetLen bounds an intset's values, so that its bytes, at 8 a
// value, fit the 30 low bits of a Set's n: a set that would grow past it
// is converted.
const maxIntsetLen = 1 << 26

// intsetLenBits is how many low bits of a Set's n are the intset's length.
const intsetLenBits = 30

// ints returns the intset, empty for a hashtable.
func (s *Set) ints() intset {
	if s.c == tableMark {
		return intset{}
	}
	w := 0
	if code := s.n >> intsetLenBits; code != 0 {
		w = 1 << code
	}
	return intset{b: unsafe.Slice((*byte)(s.p), s.c)[:s.n&(1<<intsetLenBits-1)], w: w}
}

// setInts makes is the intset.
func (s *Set) setInts(is intset) {
	code := uint32(bits.TrailingZeros(uint(is.w))) // 1, 2 or 3; 0 for width 0
	if is.w == 0 {
		code = 0
	}
	s.p, s.n, s.c = unsafe.Pointer(unsafe.SliceData(is.b)), uint32(len(is.b))|code<<intsetLenBits, uint32(cap(is.b))
}

// table returns the hashtable, nil while the set is an intset.
func (s *Set) table() *setTable {
	if s.c != tableMark {
		return nil
	}
	return (*setTable)(s.p)
}

// setTable makes t the set's contents, in the hashtable encoding.
func (s *Set) setTable(t *setTable) { s.p, s.n, s.c = unsafe.Pointer(t), 0, tableMark }

// setTable is the hashtable encoding. Its members are kept in a dense
// slice, so that a random member is one index away (SPOP, SRANDMEMBER)
// and a cursor is a position (SSCAN), with a map from member to position
// once it outgrows a linear search; removing a member moves the last one
// into its place.
type setTable struct {
	members []string
	index   map[string]int // nil while len(members) <= indexThreshold
	size    int64          // total bytes of the members
}

// NewSet returns an empty set, an intset.
func NewSet() *Set { return &Set{} }

// Type reports TypeSet.
func (s *Set) Type() Type { return TypeSet }

// Len returns the number of members.
func (s *Set) Len() int {
	if t := s.table(); t != nil {
		return len(t.members)
	}
	return s.ints().len()
}

// find returns the position of member, or -1.
func find[T string | []byte](s *Set, member T) int {
	if s.table() == nil {
		v, ok := resp.ParseInt(member)
		if !ok {
			return -1
		}
		if i, found := s.ints().search(v); found {
			return i
		}
		return -1
	}
	t := s.table()
	if t.index != nil {
		if i, ok := t.index[string(member)]; ok {
			return i
		}
		return -1
	}
	for i, m := range t.members {
		if m == string(member) {
			return i
		}
	}
	return -1
}

// Has reports whether member is in the set.
func (s *Set) Has(member []byte) bool { return find(s, member) >= 0 }

// HasString reports whether member is in the set.
func (s *Set) HasString(member string) bool { return find(s, member) >= 0 }

// Add adds a copy of member and reports whether it was new. maxIntset is
// set-max-intset-entries: the set converts to a hashtable when it would
// hold more integers than that, or a member that is not one.
func (s *Set) Add(member []byte, maxIntset int) bool {
	if s.table() == nil {
		if v, ok := resp.ParseInt(member); ok {
			return s.addInt(v, maxIntset)
		}
		s.convert()
	}
	if find(s, member) >= 0 {
		return false
	}
	s.table().insert(string(member))
	return true
}

// AddString is Add for a string member, which a hashtable keeps without
// copying (strings are immutable). Set algebra builds its results with it
// from other sets' members.
func (s *Set) AddString(member string, maxIntset int) bool {
	if s.table() == nil {
		if v, ok := resp.ParseInt(member); ok {
			return s.addInt(v, maxIntset)
		}
		s.convert()
	}
	if find(s, member) >= 0 {
		return false
	}
	s.table().insert(member)
	return true
}

// Grow gives an intset the room for those of members it lacks, in the
// width they need, before SADD adds them one by one: a set built by one
// SADD is then allocated once, to its size. It does nothing when the
// members would convert the set (one is not an integer, or there are too
// many for maxIntset).
func (s *Set) Grow(members [][]byte, maxIntset int) {
	if s.table() != nil {
		return
	}
	is := s.ints()
	n := is.len()
	add, w, ok := is.lacks(members)
	switch {
	case !ok || add == 0 || n+add > min(maxIntset, maxIntsetLen):
	case (n+add)*w <= cap(is.b) && w == is.w:
	case (n+add)*w <= cap(is.b) && n == 0:
		// An empty intset with the room (a set kept in its entry has
		// some) takes the width in place.
		s.setInts(intset{b: is.b[:0], w: w})
	default:
		grown := intset{b: make([]byte, n*w, (n+add)*w), w: w}
		for j := range n {
			grown.put(j, is.at(j))
		}
		s.setInts(grown)
	}
}

// intsetRoom is the bytes an intset of members takes: 0 unless they are
// all integers, at most maxIntset of them (a duplicate counts twice).
func intsetRoom(members [][]byte, maxIntset int) int {
	if len(members) > min(maxIntset, maxIntsetLen) {
		return 0
	}
	add, w, ok := intset{}.lacks(members)
	if !ok {
		return 0
	}
	return add * w
}

// ownInts moves an intset to an allocation of its own (keyed, for an
// entry whose allocation holds it).
func (s *Set) ownInts() {
	if s.c != tableMark {
		is := s.ints()
		own := intset{w: is.w}
		if len(is.b) > 0 {
			own.b = slices.Clone(is.b)
		}
		s.setInts(own)
	}
}

// addInt adds v to an intset, converting it when it is full, as Redis
// converts once the intset's length passes the limit.
func (s *Set) addInt(v int64, maxIntset int) bool {
	i, found := s.ints().search(v)
	if found {
		return false
	}
	if s.ints().len() >= min(maxIntset, maxIntsetLen) {
		s.convert()
		s.table().insert(strconv.FormatInt(v, 10))
		return true
	}
	s.setInts(s.ints().insert(i, v))
	return true
}

// insert adds a member known to be absent.
func (t *setTable) insert(m string) {
	t.size += int64(len(m))
	t.members = append(t.members, m)
	n := len(t.members)
	switch {
	case t.index != nil:
		t.index[m] = n - 1
	case n > indexThreshold:
		t.buildIndex()
	}
}

// convert turns an intset into a hashtable set, for good.
func (s *Set) convert() { s.setTable(newSetTable(s.ints())) }

// newSetTable returns the hashtable set of is's values.
func newSetTable(is intset) *setTable {
	n := is.len()
	t := &setTable{members: make([]string, n, max(n+n/4, 4))}
	for i := range n {
		m := strconv.FormatInt(is.at(i), 10)
		t.members[i] = m
		t.size += int64(len(m))
	}
	if n > indexThreshold {
		t.buildIndex()
	}
	return t
}

// ConvertToHashtable converts an intset to the hashtable encoding, as
// Redis's SDIFFSTORE leaves a result it built by removing members from a
// copy that could not be an intset.
func (s *Set) ConvertToHashtable() {
	if s.table() == nil {
		s.convert()
	}
}

// Repack turns a hashtable set back into an intset when every member is a
// canonical integer and there are at most maxIntset: what SPOP does in
// Redis when it rebuilds the set from the members it leaves.
func (s *Set) Repack(maxIntset int) {
	t := s.table()
	if t == nil || len(t.members) > min(maxIntset, maxIntsetLen) {
		return
	}
	vs := make([]int64, len(t.members))
	for i, m := range t.members {
		v, ok := resp.ParseInt(m)
		if !ok {
			return
		}
		vs[i] = v
	}
	slices.Sort(vs)
	s.setInts(newIntset(vs))
}

func (t *setTable) buildIndex() {
	t.index = make(map[string]int, len(t.members))
	for i, m := range t.members {
		t.index[m] = i
	}
}

// Remove removes member and reports whether it was in the set.
func (s *Set) Remove(member []byte) bool {
	i := find(s, member)
	if i < 0 {
		return false
	}
	s.RemoveAt(i)
	return true
}

// RemoveAt removes and returns the member at position i, 0 <= i < Len().
// An intset closes the gap, keeping its order; a hashtable moves its last
// member into position i.
func (s *Set) RemoveAt(i int) string {
	if s.table() == nil {
		m := strconv.FormatInt(s.ints().at(i), 10)
		s.setInts(s.ints().remove(i))
		return m
	}
	t := s.table()
	m := t.members[i]
	t.size -= int64(len(m))
	last := len(t.members) - 1
	if t.index != nil {
		delete(t.index, m)
	}
	if i != last {
		t.members[i] = t.members[last]
		if t.index != nil {
			t.index[t.members[i]] = i
		}
	}
	t.members[last] = ""
	t.members = t.members[:last]
	if cap(t.members) >= 64 && 4*len(t.members) <= cap(t.members) {
		t.compact()
	}
	return m
}

// compact gives back the memory of a set that shrank to a quarter of its
// capacity: a smaller slice and a fresh index (Go maps never shrink).
func (t *setTable) compact() {
	t.members = append(make([]string, 0, 2*len(t.members)), t.members...)
	if len(t.members) <= indexThreshold {
		t.index = nil
	} else {
		t.buildIndex()
	}
}

// At returns the member at position i, 0 <= i < Len(). Positions are stable
// only while the set is not modified; they serve random picks.
func (s *Set) At(i int) string {
	if s.table() == nil {
		return strconv.FormatInt(s.ints().at(i), 10)
	}
	return s.table().members[i]
}

// AppendAt appends the member at position i to b, without allocating for
// an intset's member.
func (s *Set) AppendAt(b []byte, i int) []byte {
	if s.table() == nil {
		return strconv.AppendInt(b, s.ints().at(i), 10)
	}
	return append(b, s.table().members[i]...)
}

// Range calls fn for every member until fn returns false, an intset in
// ascending order. The slice is valid only during the call, and fn must not
// modify the set.
func (s *Set) Range(fn func(member []byte) bool) {
	var buf [24]byte
	for i := range s.Len() {
		if !fn(s.AppendAt(buf[:0], i)) {
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
	if s.table() == nil {
		is := s.ints()
		for i := range is.len() {
			fn(strconv.FormatInt(is.at(i), 10))
		}
		return 0
	}
	members := s.table().members
	p := uint64(len(members))
	if cursor != 0 && cursor < p {
		p = cursor
	}
	for ; p > 0 && count > 0; count-- {
		p--
		fn(members[p])
	}
	return p
}

// Copy returns a copy of the set (COPY). Members are immutable strings, so
// a hashtable's copy shares their bytes.
func (s *Set) Copy() Object {
	c := &Set{}
	from := s.table()
	if from == nil {
		is := s.ints()
		c.setInts(intset{b: slices.Clone(is.b), w: is.w})
		return c
	}
	t := &setTable{members: slices.Clone(from.members), size: from.size}
	if from.index != nil {
		t.index = maps.Clone(from.index)
	}
	c.setTable(t)
	return c
}

// Intset returns an intset's integer width in bytes (2, 4 or 8) and its
// values, little-endian and ascending: the contents of Redis's intset
// layout, which the RDB writer emits as they are. ok is false for a
// hashtable or an empty set.
func (s *Set) Intset() (width int, data []byte, ok bool) {
	is := s.ints()
	if is.len() == 0 {
		return 0, nil, false
	}
	return is.w, is.b, true
}

// Encoding names the set's encoding as OBJECT ENCODING reports it:
// "intset" or "hashtable". (Redis 7.0 has no listpack encoding for sets;
// 7.2 added it.)
func (s *Set) Encoding() string {
	if s.c == tableMark {
		return "hashtable"
	}
	return "intset"
}

// MemoryUsage estimates the bytes the set takes: for an intset, the object
// and its packed integers; for a hashtable, the slice, index and members.
func (s *Set) MemoryUsage() int64 {
	t := s.table()
	if t == nil {
		return 16 + int64(s.c)
	}
	n := int64(64) + int64(cap(t.members))*16 + t.size
	if t.index != nil {
		n += int64(len(t.index)) * 40
	}
	return n
}
