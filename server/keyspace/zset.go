package keyspace

import (
	"sync/atomic"
	"unsafe"
)

// ZLimits are the sizes up to which a sorted set is kept packed (Redis's
// "listpack" encoding): zset-max-listpack-entries members, none longer
// than zset-max-listpack-value bytes. A set that outgrows them becomes a
// skip list for good, as in Redis 7.0.
type ZLimits struct {
	Entries, Value int
}

// DefaultZLimits returns Redis 7.0's defaults, 128 members of 64 bytes.
func DefaultZLimits() ZLimits { return ZLimits{Entries: 128, Value: 64} }

// zsetLimits holds a keyspace's ZLimits; nil means the defaults.
type zsetLimits struct{ p atomic.Pointer[ZLimits] }

// ZSetLimits returns the thresholds sorted sets are encoded by.
func (ks *Keyspace) ZSetLimits() ZLimits {
	if p := ks.zsetLimits.p.Load(); p != nil {
		return *p
	}
	return DefaultZLimits()
}

// SetZSetLimits changes the thresholds (CONFIG SET): sets written from then
// on, and those loaded, are encoded by them, as in Redis.
func (ks *Keyspace) SetZSetLimits(l ZLimits) { ks.zsetLimits.p.Store(&l) }

// ZSet is a sorted set. A small one is packed in one byte array ordered by
// (score, member) (zset_pack.go): no per-member object and nothing for the
// collector to scan. A large one is a map from member to score for O(1)
// lookups plus a skip list for ranks and ranges, as Redis keeps it.
// Members are compared as bytes. Scores are never NaN.
type ZSet struct {
	// The packed form, while big is nil: ln bytes at lp holding n
	// entries. Kept as a pointer and two lengths so that a ZSet is 24
	// bytes. While big is set, lp points to it as well: a ZSet kept in
	// its entry's Str field (entry.go) has big where the collector does
	// not look, and lp keeps it alive.
	lp  *byte
	ln  uint32
	n   uint32
	big *zbig
}

// zbig is the large form of a sorted set. The map leads from a member to
// its node, so that an update of a member's score looks the member up once.
type zbig struct {
	dict  map[string]*znode
	sl    skipList
	bytes int // total length of the members
}

// NewZSet returns an empty sorted set, packed.
func NewZSet() *ZSet { return &ZSet{} }

// NewZSetSized returns an empty sorted set meant to receive n members of at
// most maxLen bytes, encoded as Redis encodes a set it builds whole (the
// result of ZUNIONSTORE, a loaded set): packed when that fits lim.
func NewZSetSized(n, maxLen int, lim ZLimits) *ZSet {
	z := &ZSet{}
	if n > lim.Entries || maxLen > lim.Value {
		z.big = newZBig(n)
	}
	return z
}

func newZBig(n int) *zbig {
	b := &zbig{dict: make(map[string]*znode, min(n, 1<<16))}
	b.sl.init()
	return b
}

// Type returns TypeZSet.
func (z *ZSet) Type() Type { return TypeZSet }

// Encoding returns the encoding Redis 7.0 reports for the set.
func (z *ZSet) Encoding() string {
	if z.big == nil {
		return "listpack"
	}
	return "skiplist"
}

// Len returns the number of members.
func (z *ZSet) Len() int {
	if z.big == nil {
		return int(z.n)
	}
	return len(z.big.dict)
}

// packed returns the packed entries.
func (z *ZSet) packed() []byte { return unsafe.Slice(z.lp, z.ln) }

// setPacked makes b, holding n entries, the packed entries; an empty b
// leaves lp pointing to big (nil while there is none).
func (z *ZSet) setPacked(b []byte, n int) {
	z.lp, z.ln, z.n = unsafe.SliceData(b), uint32(len(b)), uint32(n)
	if len(b) == 0 {
		z.lp = (*byte)(unsafe.Pointer(z.big))
	}
}

// view returns b as a string without copying, for lookups and comparisons
// that do not keep it.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// Score returns member's score and whether it is in the set.
func (z *ZSet) Score(member []byte) (float64, bool) { return z.ScoreString(view(member)) }

// ScoreString is Score for a member held in a string.
func (z *ZSet) ScoreString(member string) (float64, bool) {
	if z.big == nil {
		_, _, _, s, ok := zpackFind(z.packed(), member)
		return s, ok
	}
	if x, ok := z.big.dict[member]; ok {
		return x.score, true
	}
	return 0, false
}

// Add sets member's score, adding the member (copied) if it is new, and
// reports whether it was new. A set packed within lim that would outgrow
// it becomes a skip list.
func (z *ZSet) Add(member []byte, score float64, lim ZLimits) bool {
	added, _ := z.put(view(member), false, score, lim)
	return added
}

// Store is Add that also returns the score as stored: a packed set turns
// -0 into 0.
func (z *ZSet) Store(member []byte, score float64, lim ZLimits) (added bool, stored float64) {
	return z.put(view(member), false, score, lim)
}

// AddString is Add for a member held in a string, which a skip list
// shares instead of copying.
func (z *ZSet) AddString(member string, score float64, lim ZLimits) bool {
	added, _ := z.put(member, true, score, lim)
	return added
}

// put adds or updates member; owned says member may be kept as is.
func (z *ZSet) put(member string, owned bool, score float64, lim ZLimits) (bool, float64) {
	if z.big == nil {
		b := z.packed()
		off, next, _, cur, ok := zpackFind(b, member)
		if ok {
			if score == cur {
				return false, cur
			}
			if score == 0 {
				score = 0 // -0 is packed as the integer 0
			}
			var buf [96]byte
			at := zpackInsertAt(b, score, member, off)
			z.setPacked(zrebuild(b, off, next, at, appendZEntry(buf[:0], member, score)), int(z.n))
			return false, score
		}
		if int(z.n)+1 <= lim.Entries && len(member) <= lim.Value && len(b)+zentrySize(member, score) <= zpackMax {
			if score == 0 {
				score = 0
			}
			var buf [96]byte
			at := zpackInsertAt(b, score, member, -1)
			z.setPacked(zrebuild(b, at, at, at, appendZEntry(buf[:0], member, score)), int(z.n)+1)
			return true, score
		}
		z.unpack()
	}
	return z.big.put(member, owned, score)
}

// unpack converts the packed set to a skip list.
func (z *ZSet) unpack() {
	b := z.packed()
	big := newZBig(int(z.n))
	for off := 0; off < len(b); {
		m, s, next := zentry(b, off)
		big.put(m, false, s)
		off = next
	}
	z.big = big
	z.setPacked(nil, 0)
}

// Fit encodes the set as loading it under lim does in Redis: packed when it
// has at most lim.Entries members, none longer than lim.Value, a skip list
// otherwise. The loaders call it on every set they insert.
func (z *ZSet) Fit(lim ZLimits) {
	n := z.Len()
	fits := n <= lim.Entries
	if fits {
		z.Range(func(m []byte, _ float64) bool {
			fits = len(m) <= lim.Value
			return fits
		})
	}
	switch {
	case fits && z.big != nil:
		size := 0
		for x := z.big.sl.head.level(0).next; x != nil; x = x.level(0).next {
			size += zentrySize(x.member, x.score)
		}
		if size > zpackMax {
			return
		}
		b := make([]byte, 0, size)
		for x := z.big.sl.head.level(0).next; x != nil; x = x.level(0).next {
			score := x.score
			if score == 0 {
				score = 0 // -0 is packed as the integer 0
			}
			b = appendZEntry(b, x.member, score)
		}
		z.big = nil
		z.setPacked(b, n)
	case !fits && z.big == nil:
		z.unpack()
	}
}

// put adds or updates member in the skip list.
func (z *zbig) put(member string, owned bool, score float64) (bool, float64) {
	if x, ok := z.dict[member]; ok {
		if score != x.score {
			z.sl.updateScore(x, member, score)
		}
		return false, x.score // an equal score keeps the stored one (-0)
	}
	z.insert(member, owned, score)
	return true, score
}

// insert adds member, which is not in the set; owned says member may be
// kept as is, else it is copied.
func (z *zbig) insert(member string, owned bool, score float64) {
	x := z.sl.insert(score, member, owned)
	z.dict[x.member] = x
	z.bytes += len(member)
}

// Find returns member's element and whether it is in the set, for
// Update: a sorted set write that reads the score first looks the member
// up once.
func (z *ZSet) Find(member []byte) (ZPos, bool) {
	if z.big == nil {
		off, next, rank, _, ok := zpackFind(z.packed(), view(member))
		if !ok {
			return ZPos{}, false
		}
		return ZPos{z: z, off: int32(off), next: int32(next), rank: int32(rank)}, true
	}
	x, ok := z.big.dict[view(member)]
	return ZPos{node: x}, ok
}

// Update sets the score of the element p, which Find returned for member
// with no change to the set since, and returns the score as stored (a
// packed set turns -0 into 0).
func (z *ZSet) Update(p ZPos, member []byte, score float64, lim ZLimits) float64 {
	if p.node == nil {
		_, stored := z.put(view(member), false, score, lim)
		return stored
	}
	if score != p.node.score {
		z.big.sl.updateScore(p.node, view(member), score)
	}
	return p.node.score
}

// Insert adds member, which Find found absent with no change to the set
// since, and returns the score as stored. A set packed within lim that
// would outgrow it becomes a skip list.
func (z *ZSet) Insert(member []byte, score float64, lim ZLimits) float64 {
	if z.big == nil {
		_, stored := z.put(view(member), false, score, lim)
		return stored
	}
	z.big.insert(view(member), false, score)
	return score
}

// Remove deletes member and reports whether it was there.
func (z *ZSet) Remove(member []byte) bool {
	if z.big == nil {
		b := z.packed()
		off, next, _, _, ok := zpackFind(b, view(member))
		if ok {
			z.setPacked(zrebuild(b, off, next, off, nil), int(z.n)-1)
		}
		return ok
	}
	x, ok := z.big.dict[view(member)]
	if !ok {
		return false
	}
	z.big.sl.delete(x.score, x.member)
	z.big.forget(x)
	return true
}

// forget drops the unlinked node x from the map.
func (z *zbig) forget(x *znode) {
	delete(z.dict, x.member)
	z.bytes -= len(x.member)
}

// Range calls fn for every member in ascending (score, member) order until
// fn returns false. member is only valid during the call and must not be
// modified; fn must not modify the set.
func (z *ZSet) Range(fn func(member []byte, score float64) bool) {
	for x := z.First(); x.Valid(); x = x.Next() {
		m := x.Member()
		if !fn(unsafe.Slice(unsafe.StringData(m), len(m)), x.Score()) {
			return
		}
	}
}

// Copy returns a deep copy of the set. Members are shared: strings and
// packed arrays are never modified.
func (z *ZSet) Copy() Object {
	if z.big == nil {
		c := *z
		return &c
	}
	b := &zbig{dict: make(map[string]*znode, len(z.big.dict)), bytes: z.big.bytes}
	b.sl.init()
	b.sl.cloneFrom(&z.big.sl)
	for x := b.sl.head.level(0).next; x != nil; x = x.level(0).next {
		b.dict[x.member] = x
	}
	return &ZSet{big: b}
}

// MemoryUsage estimates the bytes the set occupies: the packed array, or
// the nodes, their extra levels, map entries and members.
func (z *ZSet) MemoryUsage() int64 {
	base := int64(unsafe.Sizeof(ZSet{}))
	if z.big == nil {
		return base + int64(z.ln)
	}
	const perElement = int64(unsafe.Sizeof(zNode1{})) + 10 + 40
	return base + 64 + int64(unsafe.Sizeof(zNodeMax{})) + int64(len(z.big.dict))*perElement + int64(z.big.bytes)
}

// ZPos is a position in a sorted set: an element, or none (the zero
// value, !Valid). It is only good while the set is not modified; the
// members it returns stay valid after.
type ZPos struct {
	node *znode // in a skip list
	// In a packed set: the set, the entry's offset, the next entry's
	// offset and the entry's rank.
	z               *ZSet
	off, next, rank int32
}

// Valid reports whether p is an element.
func (p ZPos) Valid() bool { return p.node != nil || p.z != nil }

// Member returns the element's member.
func (p ZPos) Member() string {
	if p.node != nil {
		return p.node.member
	}
	m, _ := zmember(p.z.packed(), int(p.off))
	return m
}

// Score returns the element's score.
func (p ZPos) Score() float64 {
	if p.node != nil {
		return p.node.score
	}
	b := p.z.packed()
	_, s := zmember(b, int(p.off))
	f, _ := zscore(b, s)
	return f
}

// Next returns the following element in ascending order, or none.
func (p ZPos) Next() ZPos {
	if p.node != nil {
		return ZPos{node: p.node.level(0).next}
	}
	if int(p.next) >= int(p.z.ln) {
		return ZPos{}
	}
	return p.z.packedPos(int(p.next), int(p.rank)+1)
}

// Toward is one step of a walk from p, whose score is below min, to the
// first element whose score is at least min: it returns that element (or
// none) when it is the next one, else an element on the way, reached
// through p's highest skip list link that stays below min. Repeating it
// skips d elements in O(log d) steps, touching only the elements it lands
// on; a search from the top would start over from the head. In a packed
// set it is Next.
func (p ZPos) Toward(min float64) ZPos {
	if p.node == nil {
		return p.Next()
	}
	for i := p.node.height - 1; i > 0; i-- {
		if l := p.node.level(i); l.next != nil && l.score < min {
			return ZPos{node: l.next}
		}
	}
	return ZPos{node: p.node.level(0).next}
}

// Prev returns the preceding element in ascending order, or none. In a
// packed set it walks from the first entry.
func (p ZPos) Prev() ZPos {
	if p.node != nil {
		return ZPos{node: p.node.prev}
	}
	return p.z.ByRank(int(p.rank) - 1)
}

// packedPos returns the position of the packed entry at off of rank r.
func (z *ZSet) packedPos(off, r int) ZPos {
	return ZPos{z: z, off: int32(off), next: int32(zskip(z.packed(), off)), rank: int32(r)}
}

// nodePos returns the position of node n, none for nil.
func nodePos(n *znode) ZPos { return ZPos{node: n} }

// First returns the lowest element, none when the set is empty.
func (z *ZSet) First() ZPos {
	if z.big == nil {
		if z.n == 0 {
			return ZPos{}
		}
		return z.packedPos(0, 0)
	}
	return nodePos(z.big.sl.head.level(0).next)
}

// Last returns the highest element, none when the set is empty.
func (z *ZSet) Last() ZPos {
	if z.big == nil {
		return z.ByRank(int(z.n) - 1)
	}
	return nodePos(z.big.sl.tail)
}

// ByRank returns the element of 0-based ascending rank i, none when out of
// range.
func (z *ZSet) ByRank(i int) ZPos {
	if z.big == nil {
		if i < 0 || i >= int(z.n) {
			return ZPos{}
		}
		return z.packedPos(zpackAt(z.packed(), i), i)
	}
	return nodePos(z.big.sl.byRank(i + 1))
}

// Rank returns member's 0-based ascending rank and score.
func (z *ZSet) Rank(member []byte) (rank int, score float64, ok bool) {
	if z.big == nil {
		_, _, rank, score, ok = zpackFind(z.packed(), view(member))
		return rank, score, ok
	}
	x, ok := z.big.dict[view(member)]
	if !ok {
		return 0, 0, false
	}
	score = x.score
	return z.big.sl.rank(score, view(member)) - 1, score, true
}

// RankOf returns the 0-based ascending rank of the set's element p.
func (z *ZSet) RankOf(p ZPos) int {
	if p.node == nil {
		return int(p.rank)
	}
	return z.big.sl.rank(p.node.score, p.node.member) - 1
}

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

// FirstInScore returns the lowest element whose score is in r, or none.
func (z *ZSet) FirstInScore(r *ScoreRange) ZPos {
	if r.Empty() || z.Len() == 0 || !r.AboveMin(z.Last().Score()) || !r.BelowMax(z.First().Score()) {
		return ZPos{}
	}
	var x ZPos
	if z.big == nil {
		for x = z.First(); x.Valid() && !r.AboveMin(x.Score()); x = x.Next() {
		}
	} else {
		x = nodePos(z.big.sl.firstWhere(func(n *znode) bool { return !r.AboveMin(n.score) }, nil))
	}
	if !x.Valid() || !r.BelowMax(x.Score()) {
		return ZPos{}
	}
	return x
}

// LastInScore returns the highest element whose score is in r, or none.
func (z *ZSet) LastInScore(r *ScoreRange) ZPos {
	if r.Empty() || z.Len() == 0 || !r.AboveMin(z.Last().Score()) || !r.BelowMax(z.First().Score()) {
		return ZPos{}
	}
	var x ZPos
	if z.big == nil {
		for y := z.First(); y.Valid() && r.BelowMax(y.Score()); y = y.Next() {
			x = y
		}
	} else {
		x = nodePos(z.big.sl.lastWhere(func(n *znode) bool { return r.BelowMax(n.score) }))
	}
	if !x.Valid() || !r.AboveMin(x.Score()) {
		return ZPos{}
	}
	return x
}

// CountInScore returns the number of elements whose score is in r.
func (z *ZSet) CountInScore(r *ScoreRange) int {
	first := z.FirstInScore(r)
	if !first.Valid() {
		return 0
	}
	return z.RankOf(z.LastInScore(r)) - z.RankOf(first) + 1
}

// Lex ranges are meant for sets whose members all have the same score; on
// other sets the answer follows the list order as Redis's does: a packed
// set is scanned from its ends, a skip list searched.

// FirstInLex returns the first element, in list order, whose member is in
// r, or none.
func (z *ZSet) FirstInLex(r *LexRange) ZPos {
	if r.Empty() || z.Len() == 0 || !r.AboveMin(z.Last().Member()) || !r.BelowMax(z.First().Member()) {
		return ZPos{}
	}
	var x ZPos
	if z.big == nil {
		for x = z.First(); x.Valid() && !r.AboveMin(x.Member()); x = x.Next() {
		}
	} else {
		x = nodePos(z.big.sl.firstWhere(func(n *znode) bool { return !r.AboveMin(n.member) }, nil))
	}
	if !x.Valid() || !r.BelowMax(x.Member()) {
		return ZPos{}
	}
	return x
}

// LastInLex returns the last element, in list order, whose member is in r,
// or none.
func (z *ZSet) LastInLex(r *LexRange) ZPos {
	if r.Empty() || z.Len() == 0 || !r.AboveMin(z.Last().Member()) || !r.BelowMax(z.First().Member()) {
		return ZPos{}
	}
	var x ZPos
	if z.big == nil {
		// The last entry within the upper end, as a walk from the tail
		// finds it.
		for y := z.First(); y.Valid(); y = y.Next() {
			if r.BelowMax(y.Member()) {
				x = y
			}
		}
	} else {
		x = nodePos(z.big.sl.lastWhere(func(n *znode) bool { return r.BelowMax(n.member) }))
	}
	if !x.Valid() || !r.AboveMin(x.Member()) {
		return ZPos{}
	}
	return x
}

// CountInLex returns the number of elements whose member is in r: the run
// from FirstInLex that stays within the upper end.
func (z *ZSet) CountInLex(r *LexRange) int {
	first := z.FirstInLex(r)
	if !first.Valid() {
		return 0
	}
	if z.big != nil {
		last := z.LastInLex(r)
		if !last.Valid() {
			return 0
		}
		return z.RankOf(last) - z.RankOf(first) + 1
	}
	n := 0
	for x := first; x.Valid() && r.BelowMax(x.Member()); x = x.Next() {
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
	if z.big == nil {
		x := z.ByRank(start)
		return z.removePacked(x, func(p ZPos) bool { return int(p.rank) > stop }, fn)
	}
	var update [skipMaxLevel]*znode
	sl := &z.big.sl
	x := sl.head
	traversed := 0
	for i := sl.level - 1; i >= 0; i-- {
		for x.level(i).next != nil && traversed+x.level(i).span <= start {
			traversed += x.level(i).span
			x = x.level(i).next
		}
		update[i] = x
	}
	left := stop - start + 1
	return sl.deleteFrom(&update, func(*znode) bool {
		left--
		return left < 0
	}, z.big.removed(fn))
}

// RemoveRangeByScore removes the elements whose score is in r, calling fn
// for each in ascending order, and returns how many it removed.
func (z *ZSet) RemoveRangeByScore(r *ScoreRange, fn func(member string, score float64)) int {
	if r.Empty() {
		return 0
	}
	if z.big == nil {
		x := z.FirstInScore(r)
		return z.removePacked(x, func(p ZPos) bool { return !r.BelowMax(p.Score()) }, fn)
	}
	var update [skipMaxLevel]*znode
	z.big.sl.firstWhere(func(n *znode) bool { return !r.AboveMin(n.score) }, &update)
	return z.big.sl.deleteFrom(&update, func(n *znode) bool { return !r.BelowMax(n.score) }, z.big.removed(fn))
}

// RemoveRangeByLex removes the run of elements from FirstInLex that stays
// within r's upper end, calling fn for each in ascending order, and returns
// how many it removed.
func (z *ZSet) RemoveRangeByLex(r *LexRange, fn func(member string, score float64)) int {
	first := z.FirstInLex(r)
	if !first.Valid() {
		return 0
	}
	if z.big == nil {
		return z.removePacked(first, func(p ZPos) bool { return !r.BelowMax(p.Member()) }, fn)
	}
	var update [skipMaxLevel]*znode
	z.big.sl.search(first.node.score, first.node.member, &update, nil)
	return z.big.sl.deleteFrom(&update, func(n *znode) bool { return !r.BelowMax(n.member) }, z.big.removed(fn))
}

// removePacked removes the packed entries from first until stop is true
// for one or the set ends, calling fn for each, and returns how many it
// removed.
func (z *ZSet) removePacked(first ZPos, stop func(ZPos) bool, fn func(member string, score float64)) int {
	if !first.Valid() {
		return 0
	}
	n := 0
	end := int(z.ln)
	for x := first; x.Valid(); x = x.Next() {
		if stop(x) {
			end = int(x.off)
			break
		}
		if fn != nil {
			fn(x.Member(), x.Score())
		}
		n++
	}
	b := z.packed()
	z.setPacked(zrebuild(b, int(first.off), end, int(first.off), nil), int(z.n)-n)
	return n
}

// removed returns the callback that drops an unlinked node from the map
// and reports it to fn.
func (z *zbig) removed(fn func(member string, score float64)) func(*znode) {
	return func(x *znode) {
		z.forget(x)
		if fn != nil {
			fn(x.member, x.score)
		}
	}
}
