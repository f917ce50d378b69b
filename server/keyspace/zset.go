package keyspace

import (
	"strings"
	"unsafe"
)

// Redis 7.0's defaults for zset-max-listpack-entries and
// zset-max-listpack-value: a sorted set within both limits is reported as
// "listpack", a larger one as "skiplist", and the switch is one-way.
const (
	ZSetListpackEntries = 128
	ZSetListpackValue   = 64
)

// ZSet is a sorted set: a map from member to score for O(1) lookups plus a
// skip list ordered by (score, member) for ranks and ranges, as Redis keeps
// it. Members are compared as bytes. Scores are never NaN.
type ZSet struct {
	dict     map[string]float64
	sl       skipList
	listpack bool // Redis would still keep it as a listpack
	bytes    int  // total length of the members
}

// NewZSet returns an empty sorted set.
func NewZSet() *ZSet {
	z := &ZSet{dict: make(map[string]float64), listpack: true}
	z.sl.init()
	return z
}

// NewZSetSized returns an empty sorted set meant to receive n members of at
// most maxLen bytes, encoded as Redis encodes a set it builds whole (the
// result of ZUNIONSTORE, for instance).
func NewZSetSized(n, maxLen int) *ZSet {
	z := &ZSet{
		dict:     make(map[string]float64, min(n, 1<<16)),
		listpack: n <= ZSetListpackEntries && maxLen <= ZSetListpackValue,
	}
	z.sl.init()
	return z
}

// Type returns TypeZSet.
func (z *ZSet) Type() Type { return TypeZSet }

// Encoding returns the encoding Redis 7.0 would report for the set.
func (z *ZSet) Encoding() string {
	if z.listpack {
		return "listpack"
	}
	return "skiplist"
}

// Len returns the number of members.
func (z *ZSet) Len() int { return len(z.dict) }

// view returns b as a string without copying, for lookups and comparisons
// that do not keep it.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// Score returns member's score and whether it is in the set.
func (z *ZSet) Score(member []byte) (float64, bool) {
	s, ok := z.dict[view(member)]
	return s, ok
}

// ScoreString is Score for a member held in a string.
func (z *ZSet) ScoreString(member string) (float64, bool) {
	s, ok := z.dict[member]
	return s, ok
}

// Add sets member's score, adding the member (copied) if it is new, and
// reports whether it was new.
func (z *ZSet) Add(member []byte, score float64) bool {
	added, _ := z.put(view(member), false, score)
	return added
}

// Store is Add that also returns the score as stored: a set Redis keeps as
// a listpack turns -0 into 0.
func (z *ZSet) Store(member []byte, score float64) (added bool, stored float64) {
	return z.put(view(member), false, score)
}

// AddString is Add for a member held in a string, which the set shares
// instead of copying.
func (z *ZSet) AddString(member string, score float64) bool {
	added, _ := z.put(member, true, score)
	return added
}

// put adds or updates member; owned says member may be kept as is.
func (z *ZSet) put(member string, owned bool, score float64) (bool, float64) {
	if cur, ok := z.dict[member]; ok {
		if score == cur {
			return false, cur
		}
		if z.listpack && score == 0 {
			score = 0
		}
		x := z.sl.updateScore(cur, member, score)
		z.dict[x.member] = score
		return false, score
	}
	if z.listpack && (len(z.dict)+1 > ZSetListpackEntries || len(member) > ZSetListpackValue) {
		z.listpack = false
	}
	if z.listpack && score == 0 {
		score = 0 // a listpack stores -0 as the integer 0
	}
	if !owned {
		member = strings.Clone(member)
	}
	z.sl.insert(score, member)
	z.dict[member] = score
	z.bytes += len(member)
	return true, score
}

// Remove deletes member and reports whether it was there.
func (z *ZSet) Remove(member []byte) bool {
	score, ok := z.dict[view(member)]
	if !ok {
		return false
	}
	x := z.sl.delete(score, view(member))
	z.forget(x)
	return true
}

// forget drops the unlinked node x from the map.
func (z *ZSet) forget(x *ZNode) {
	delete(z.dict, x.member)
	z.bytes -= len(x.member)
}

// Range calls fn for every member in ascending (score, member) order until
// fn returns false. member is only valid during the call and must not be
// modified; fn must not modify the set.
func (z *ZSet) Range(fn func(member []byte, score float64) bool) {
	for x := z.sl.head.level(0).next; x != nil; x = x.level(0).next {
		if !fn(unsafe.Slice(unsafe.StringData(x.member), len(x.member)), x.score) {
			return
		}
	}
}

// Copy returns a deep copy of the set (members are shared: strings are
// immutable).
func (z *ZSet) Copy() Object {
	c := &ZSet{dict: make(map[string]float64, len(z.dict)), listpack: z.listpack, bytes: z.bytes}
	c.sl.init()
	c.sl.cloneFrom(&z.sl)
	for x := c.sl.head.level(0).next; x != nil; x = x.level(0).next {
		c.dict[x.member] = x.score
	}
	return c
}

// MemoryUsage estimates the bytes the set occupies: nodes, their extra
// levels, map entries and members.
func (z *ZSet) MemoryUsage() int64 {
	const perElement = int64(unsafe.Sizeof(zNode1{})) + 10 + 40
	return 64 + int64(unsafe.Sizeof(zNode1{})) + skipMaxLevel*16 + int64(len(z.dict))*perElement + int64(z.bytes)
}

// First returns the lowest element, nil when the set is empty.
func (z *ZSet) First() *ZNode { return z.sl.head.level(0).next }

// Last returns the highest element, nil when the set is empty.
func (z *ZSet) Last() *ZNode { return z.sl.tail }

// ByRank returns the element of 0-based ascending rank i, nil when out of
// range.
func (z *ZSet) ByRank(i int) *ZNode { return z.sl.byRank(i + 1) }

// Rank returns member's 0-based ascending rank and score.
func (z *ZSet) Rank(member []byte) (rank int, score float64, ok bool) {
	score, ok = z.dict[view(member)]
	if !ok {
		return 0, 0, false
	}
	return z.sl.rank(score, view(member)) - 1, score, true
}

// RankOf returns the 0-based ascending rank of the set's element n.
func (z *ZSet) RankOf(n *ZNode) int { return z.sl.rank(n.score, n.member) - 1 }

// ScoreRange is a score interval; MinEx and MaxEx make an end exclusive.
type ScoreRange struct {
	Min, Max     float64
	MinEx, MaxEx bool
}

// Empty reports whether no score can lie in the interval.
func (r *ScoreRange) Empty() bool {
	return r.Min > r.Max || (r.Min == r.Max && (r.MinEx || r.MaxEx))
}

// AboveMin reports whether v is at or past the interval's lower end.
func (r *ScoreRange) AboveMin(v float64) bool {
	if r.MinEx {
		return v > r.Min
	}
	return v >= r.Min
}

// BelowMax reports whether v is at or before the interval's upper end.
func (r *ScoreRange) BelowMax(v float64) bool {
	if r.MaxEx {
		return v < r.Max
	}
	return v <= r.Max
}

// LexBound is one end of a lexicographic interval: Inf -1 is "-" (below
// every member), +1 is "+" (above every member), 0 a member value, with Ex
// making it exclusive.
type LexBound struct {
	Value string
	Inf   int
	Ex    bool
}

// LexRange is a lexicographic interval of members.
type LexRange struct {
	Min, Max LexBound
}

func cmpLexBounds(a, b *LexBound) int {
	if a.Inf != 0 || b.Inf != 0 {
		return a.Inf - b.Inf
	}
	switch {
	case a.Value < b.Value:
		return -1
	case a.Value > b.Value:
		return 1
	}
	return 0
}

// Empty reports whether no member can lie in the interval.
func (r *LexRange) Empty() bool {
	c := cmpLexBounds(&r.Min, &r.Max)
	return c > 0 || (c == 0 && (r.Min.Ex || r.Max.Ex))
}

// AboveMin reports whether m is at or past the interval's lower end.
func (r *LexRange) AboveMin(m string) bool {
	switch r.Min.Inf {
	case -1:
		return true
	case 1:
		return false
	}
	if r.Min.Ex {
		return m > r.Min.Value
	}
	return m >= r.Min.Value
}

// BelowMax reports whether m is at or before the interval's upper end.
func (r *LexRange) BelowMax(m string) bool {
	switch r.Max.Inf {
	case -1:
		return false
	case 1:
		return true
	}
	if r.Max.Ex {
		return m < r.Max.Value
	}
	return m <= r.Max.Value
}

// FirstInScore returns the lowest element whose score is in r, or nil.
func (z *ZSet) FirstInScore(r *ScoreRange) *ZNode {
	if r.Empty() || z.Len() == 0 || !r.AboveMin(z.sl.tail.score) || !r.BelowMax(z.First().score) {
		return nil
	}
	x := z.sl.firstWhere(func(n *ZNode) bool { return !r.AboveMin(n.score) }, nil)
	if x == nil || !r.BelowMax(x.score) {
		return nil
	}
	return x
}

// LastInScore returns the highest element whose score is in r, or nil.
func (z *ZSet) LastInScore(r *ScoreRange) *ZNode {
	if r.Empty() || z.Len() == 0 || !r.AboveMin(z.sl.tail.score) || !r.BelowMax(z.First().score) {
		return nil
	}
	x := z.sl.lastWhere(func(n *ZNode) bool { return r.BelowMax(n.score) })
	if x == nil || !r.AboveMin(x.score) {
		return nil
	}
	return x
}

// CountInScore returns the number of elements whose score is in r.
func (z *ZSet) CountInScore(r *ScoreRange) int {
	first := z.FirstInScore(r)
	if first == nil {
		return 0
	}
	return z.RankOf(z.LastInScore(r)) - z.RankOf(first) + 1
}

// Lex ranges are meant for sets whose members all have the same score; on
// other sets the answer follows the list order as Redis's does: a
// listpack-sized set is scanned from its ends, a larger one searched
// through the skip list.

// FirstInLex returns the first element, in list order, whose member is in
// r, or nil.
func (z *ZSet) FirstInLex(r *LexRange) *ZNode {
	if r.Empty() || z.Len() == 0 || !r.AboveMin(z.sl.tail.member) || !r.BelowMax(z.First().member) {
		return nil
	}
	var x *ZNode
	if z.listpack {
		for x = z.First(); x != nil && !r.AboveMin(x.member); x = x.Next() {
		}
	} else {
		x = z.sl.firstWhere(func(n *ZNode) bool { return !r.AboveMin(n.member) }, nil)
	}
	if x == nil || !r.BelowMax(x.member) {
		return nil
	}
	return x
}

// LastInLex returns the last element, in list order, whose member is in r,
// or nil.
func (z *ZSet) LastInLex(r *LexRange) *ZNode {
	if r.Empty() || z.Len() == 0 || !r.AboveMin(z.sl.tail.member) || !r.BelowMax(z.First().member) {
		return nil
	}
	var x *ZNode
	if z.listpack {
		for x = z.sl.tail; x != nil && !r.BelowMax(x.member); x = x.Prev() {
		}
	} else {
		x = z.sl.lastWhere(func(n *ZNode) bool { return r.BelowMax(n.member) })
	}
	if x == nil || !r.AboveMin(x.member) {
		return nil
	}
	return x
}

// CountInLex returns the number of elements whose member is in r: the run
// from FirstInLex that stays within the upper end.
func (z *ZSet) CountInLex(r *LexRange) int {
	first := z.FirstInLex(r)
	if first == nil {
		return 0
	}
	if !z.listpack {
		last := z.LastInLex(r)
		if last == nil {
			return 0
		}
		return z.RankOf(last) - z.RankOf(first) + 1
	}
	n := 0
	for x := first; x != nil && r.BelowMax(x.member); x = x.Next() {
		n++
	}
	return n
}

// RemoveRangeByRank removes the elements of 0-based ascending ranks start
// to stop inclusive (both within the set), calling fn for each, and
// returns how many it removed.
func (z *ZSet) RemoveRangeByRank(start, stop int, fn func(member string, score float64)) int {
	if start < 0 || stop < start || start >= z.Len() {
		return 0
	}
	var update [skipMaxLevel]*ZNode
	x := z.sl.head
	traversed := 0
	for i := z.sl.level - 1; i >= 0; i-- {
		for x.level(i).next != nil && traversed+x.level(i).span <= start {
			traversed += x.level(i).span
			x = x.level(i).next
		}
		update[i] = x
	}
	left := stop - start + 1
	return z.sl.deleteFrom(&update, func(*ZNode) bool {
		left--
		return left < 0
	}, z.removed(fn))
}

// RemoveRangeByScore removes the elements whose score is in r, calling fn
// for each in ascending order, and returns how many it removed.
func (z *ZSet) RemoveRangeByScore(r *ScoreRange, fn func(member string, score float64)) int {
	if r.Empty() {
		return 0
	}
	var update [skipMaxLevel]*ZNode
	z.sl.firstWhere(func(n *ZNode) bool { return !r.AboveMin(n.score) }, &update)
	return z.sl.deleteFrom(&update, func(n *ZNode) bool { return !r.BelowMax(n.score) }, z.removed(fn))
}

// RemoveRangeByLex removes the run of elements from FirstInLex that stays
// within r's upper end, calling fn for each in ascending order, and returns
// how many it removed.
func (z *ZSet) RemoveRangeByLex(r *LexRange, fn func(member string, score float64)) int {
	first := z.FirstInLex(r)
	if first == nil {
		return 0
	}
	var update [skipMaxLevel]*ZNode
	z.sl.search(first.score, first.member, &update, nil)
	return z.sl.deleteFrom(&update, func(n *ZNode) bool { return !r.BelowMax(n.member) }, z.removed(fn))
}

// removed returns the callback that drops an unlinked node from the map
// and reports it to fn.
func (z *ZSet) removed(fn func(member string, score float64)) func(*ZNode) {
	return func(x *ZNode) {
		z.forget(x)
		if fn != nil {
			fn(x.member, x.score)
		}
	}
}
