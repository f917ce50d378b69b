package keyspace

import (
	"math/bits"
	"math/rand/v2"
	"strings"
	"unsafe"
)

// skipMaxLevel bounds a node's height; with p = 1/4 it is enough for 2^64
// elements.
const skipMaxLevel = 32

// zlevel is one forward link of a node. score is the score of next, so
// that a search decides whether to step along the link without loading
// the next node: in a large set every node it does not step to is a cache
// miss saved. span counts the elements the link jumps over, the target
// included, which is what makes rank queries O(log n). The score and span
// of a link whose next is nil are never read.
type zlevel struct {
	next  *znode
	score float64
	span  int
}

// znode is one element of a skip list, in (score, member) order. Its
// height links follow it in the same allocation (the zNodeN types), so a
// search hop touches one object, and a node of height 1 is 64 bytes, one
// cache line. Nodes are owned by their ZSet: read them only while the set
// is not modified.
type znode struct {
	score  float64
	member string
	prev   *znode
	height int
}

// The allocations of nodes by height: 1 to 4 levels (99.6% of nodes) are
// exact, taller nodes round up to 8 or to skipMaxLevel. Every one is a
// znode followed by its links, which level finds at zlinksOffset.
type (
	zNode1 struct {
		node znode
		lv   [1]zlevel
	}
	zNode2 struct {
		node znode
		lv   [2]zlevel
	}
	zNode3 struct {
		node znode
		lv   [3]zlevel
	}
	zNode4 struct {
		node znode
		lv   [4]zlevel
	}
	zNode8 struct {
		node znode
		lv   [8]zlevel
	}
	zNodeMax struct {
		node znode
		lv   [skipMaxLevel]zlevel
	}
)

// zlinksOffset is where a node's links start in its allocation, the same
// in every zNodeN type (TestZNodeLayout checks it).
const zlinksOffset = unsafe.Offsetof(zNode1{}.lv)

// level returns the node's link at level i < height.
func (n *znode) level(i int) *zlevel {
	return (*zlevel)(unsafe.Add(unsafe.Pointer(n), zlinksOffset+uintptr(i)*unsafe.Sizeof(zlevel{})))
}

func newZNode(height int, score float64, member string) *znode {
	var n *znode
	switch {
	case height == 1:
		n = &(&zNode1{}).node
	case height == 2:
		n = &(&zNode2{}).node
	case height == 3:
		n = &(&zNode3{}).node
	case height == 4:
		n = &(&zNode4{}).node
	case height <= 8:
		n = &(&zNode8{}).node
	default:
		n = &(&zNodeMax{}).node
	}
	n.score, n.member, n.height = score, member, height
	return n
}

// zNodeWith is a node of links L followed by the bytes M of its member, so
// that a new member costs one allocation (newZNodeCopy).
type zNodeWith[L, M any] struct {
	node znode
	lv   L
	mb   M
}

// allocZNodeWith allocates a zNodeWith and returns its node and member
// bytes.
func allocZNodeWith[L, M any]() (*znode, []byte) {
	a := new(zNodeWith[L, M])
	return &a.node, unsafe.Slice((*byte)(unsafe.Pointer(&a.mb)), unsafe.Sizeof(a.mb))
}

// newZNodeCopy is newZNode for a member it copies: into the node's own
// allocation when the node is up to four levels high and the member up to
// 32 bytes, as most are.
func newZNodeCopy(height int, score float64, member string) *znode {
	if height > 4 || len(member) > 32 || len(member) == 0 {
		return newZNode(height, score, strings.Clone(member))
	}
	var n *znode
	var mb []byte
	small := len(member) <= 16
	switch {
	case height == 1 && small:
		n, mb = allocZNodeWith[[1]zlevel, [16]byte]()
	case height == 1:
		n, mb = allocZNodeWith[[1]zlevel, [32]byte]()
	case height == 2 && small:
		n, mb = allocZNodeWith[[2]zlevel, [16]byte]()
	case height == 2:
		n, mb = allocZNodeWith[[2]zlevel, [32]byte]()
	case height == 3 && small:
		n, mb = allocZNodeWith[[3]zlevel, [16]byte]()
	case height == 3:
		n, mb = allocZNodeWith[[3]zlevel, [32]byte]()
	case small:
		n, mb = allocZNodeWith[[4]zlevel, [16]byte]()
	default:
		n, mb = allocZNodeWith[[4]zlevel, [32]byte]()
	}
	copy(mb, member)
	n.score, n.member, n.height = score, unsafe.String(&mb[0], len(member)), height
	return n
}

// setNext makes n's link at level i point to next, noting next's score.
func (l *zlevel) setNext(next *znode) {
	l.next = next
	if next != nil {
		l.score = next.score
	}
}

// skipList is a skip list with spans ordered by (score, member), as Redis
// keeps its large sorted sets. Its head is a sentinel with every level.
type skipList struct {
	head   *znode
	tail   *znode
	length int
	level  int
}

func (sl *skipList) init() {
	sl.head = newZNode(skipMaxLevel, 0, "")
	sl.tail = nil
	sl.length = 0
	sl.level = 1
}

// randomHeight draws a node height: 1 with probability 3/4, 2 with 3/16, ….
func randomHeight() int {
	h := 1 + bits.TrailingZeros64(rand.Uint64()|1<<62)/2
	return min(h, skipMaxLevel)
}

// search fills update[i] with the last node at level i that sorts before
// (score, member), and rank[i] with that node's rank (head = 0).
func (sl *skipList) search(score float64, member string, update *[skipMaxLevel]*znode, rank *[skipMaxLevel]int) {
	x := sl.head
	r := 0
	for i := sl.level - 1; i >= 0; i-- {
		for l := x.level(i); l.next != nil && (l.score < score || (l.score == score && l.next.member < member)); l = x.level(i) {
			r += l.span
			x = l.next
		}
		update[i] = x
		if rank != nil {
			rank[i] = r
		}
	}
}

// insert adds (score, member), which must not be present, and returns its
// node. owned says member may be kept as is; otherwise it is copied.
func (sl *skipList) insert(score float64, member string, owned bool) *znode {
	var n *znode
	if owned {
		n = newZNode(randomHeight(), score, member)
	} else {
		n = newZNodeCopy(randomHeight(), score, member)
	}
	sl.link(n)
	return n
}

// link puts the unlinked node n at its place in the list.
func (sl *skipList) link(n *znode) {
	var update [skipMaxLevel]*znode
	var rank [skipMaxLevel]int
	sl.search(n.score, n.member, &update, &rank)
	sl.linkAt(n, &update, &rank)
}

// linkAt puts the unlinked node n after the nodes update, of ranks rank,
// that search found for it.
func (sl *skipList) linkAt(n *znode, update *[skipMaxLevel]*znode, rank *[skipMaxLevel]int) {
	h := n.height
	if h > sl.level {
		for i := sl.level; i < h; i++ {
			rank[i] = 0
			update[i] = sl.head
			sl.head.level(i).span = sl.length
		}
		sl.level = h
	}
	for i := 0; i < h; i++ {
		l, ul := n.level(i), update[i].level(i)
		l.next, l.score = ul.next, ul.score
		ul.setNext(n)
		l.span = ul.span - (rank[0] - rank[i])
		ul.span = rank[0] - rank[i] + 1
	}
	for i := h; i < sl.level; i++ {
		update[i].level(i).span++
	}
	if update[0] == sl.head {
		n.prev = nil
	} else {
		n.prev = update[0]
	}
	if next := n.level(0).next; next != nil {
		next.prev = n
	} else {
		sl.tail = n
	}
	sl.length++
}

// unlink removes node x given the update vector search built for it.
func (sl *skipList) unlink(x *znode, update *[skipMaxLevel]*znode) {
	for i := 0; i < sl.level; i++ {
		if ul := update[i].level(i); ul.next == x {
			l := x.level(i)
			ul.span += l.span - 1
			ul.next, ul.score = l.next, l.score
		} else {
			update[i].level(i).span--
		}
	}
	if next := x.level(0).next; next != nil {
		next.prev = x.prev
	} else {
		sl.tail = x.prev
	}
	for sl.level > 1 && sl.head.level(sl.level-1).next == nil {
		sl.level--
	}
	sl.length--
}

// find returns the node of (score, member) and fills update for unlink.
func (sl *skipList) find(score float64, member string, update *[skipMaxLevel]*znode) *znode {
	sl.search(score, member, update, nil)
	x := update[0].level(0).next
	if x != nil && x.score == score && x.member == member {
		return x
	}
	return nil
}

// delete removes (score, member) and returns its node, nil if absent.
func (sl *skipList) delete(score float64, member string) *znode {
	var update [skipMaxLevel]*znode
	x := sl.find(score, member, &update)
	if x != nil {
		sl.unlink(x, &update)
	}
	return x
}

// updateScore moves the node x, whose member is member, to score. One pass
// finds both the links to x and the place for the new score, the two walks
// taking their steps in turn: in a large list every step is a cache miss,
// and the misses of one walk overlap the other's (the second walk reads
// the caller's member, so it need not wait for x either). x stays where
// it is when the order allows it.
func (sl *skipList) updateScore(x *znode, member string, score float64) {
	var update, at [skipMaxLevel]*znode
	var rank, to [skipMaxLevel]int
	dest := zwalk{x: sl.head, i: sl.level - 1, score: score, member: member}
	from := zwalk{x: sl.head, i: sl.level - 1, score: x.score, member: x.member}
	for {
		more := dest.step(&at, &to)
		if !from.step(&update, &rank) && !more {
			break
		}
	}
	if at[0] == x || at[0] == update[0] {
		// The new place is next to x: only the scores change.
		x.score = score
		for i := range x.height {
			update[i].level(i).score = score
		}
		return
	}
	// dest searched the list with x in it: where x is the last node
	// before the new place, its predecessor takes its place, and the
	// nodes after x move down a rank.
	xr := rank[0] + 1
	for i := range sl.level {
		switch {
		case at[i] == x:
			at[i], to[i] = update[i], rank[i]
		case to[i] > xr:
			to[i]--
		}
	}
	sl.unlink(x, &update)
	x.score = score
	sl.linkAt(x, &at, &to)
}

// zwalk is a search in progress, as search does it, one step at a time:
// at level i, at node x of rank r, for (score, member).
type zwalk struct {
	x      *znode
	i, r   int
	score  float64
	member string
}

// step moves the walk to its next node, descending levels as needed and
// filling update and rank for the levels it leaves as search does, and
// reports whether it moved; false means the search is complete.
func (w *zwalk) step(update *[skipMaxLevel]*znode, rank *[skipMaxLevel]int) bool {
	for ; w.i >= 0; w.i-- {
		l := w.x.level(w.i)
		if l.next != nil && (l.score < w.score || (l.score == w.score && l.next.member < w.member)) {
			w.r += l.span
			w.x = l.next
			return true
		}
		update[w.i], rank[w.i] = w.x, w.r
	}
	return false
}

// rank returns the 1-based rank of (score, member), 0 if absent.
func (sl *skipList) rank(score float64, member string) int {
	x := sl.head
	r := 0
	for i := sl.level - 1; i >= 0; i-- {
		for l := x.level(i); l.next != nil && (l.score < score || (l.score == score && l.next.member <= member)); l = x.level(i) {
			r += l.span
			x = l.next
		}
		if x != sl.head && x.member == member {
			return r
		}
	}
	return 0
}

// byRank returns the node of 1-based rank r, nil when out of range.
func (sl *skipList) byRank(r int) *znode {
	if r < 1 || r > sl.length {
		return nil
	}
	x := sl.head
	traversed := 0
	for i := sl.level - 1; i >= 0; i-- {
		for x.level(i).next != nil && traversed+x.level(i).span <= r {
			traversed += x.level(i).span
			x = x.level(i).next
		}
		if traversed == r {
			return x
		}
	}
	return nil
}

// firstWhere returns the first node for which past is false, given that
// past is true for a prefix of the list and false after it.
func (sl *skipList) firstWhere(past func(*znode) bool, update *[skipMaxLevel]*znode) *znode {
	x := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		for next := x.level(i).next; next != nil && past(next); next = x.level(i).next {
			x = next
		}
		if update != nil {
			update[i] = x
		}
	}
	return x.level(0).next
}

// lastWhere returns the last node for which within is true, given that
// within is true for a prefix of the list; nil when it holds for none.
func (sl *skipList) lastWhere(within func(*znode) bool) *znode {
	x := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		for next := x.level(i).next; next != nil && within(next); next = x.level(i).next {
			x = next
		}
	}
	if x == sl.head {
		return nil
	}
	return x
}

// deleteFrom unlinks nodes, starting with the one after update[0], until
// stop is true for one or the list ends; it calls fn for each node removed
// and returns how many it removed.
func (sl *skipList) deleteFrom(update *[skipMaxLevel]*znode, stop func(*znode) bool, fn func(*znode)) int {
	n := 0
	x := update[0].level(0).next
	for x != nil && !stop(x) {
		next := x.level(0).next
		sl.unlink(x, update)
		fn(x)
		n++
		x = next
	}
	return n
}

// cloneFrom fills the empty list sl with src's elements and node heights,
// appending in order: O(n).
func (sl *skipList) cloneFrom(src *skipList) {
	var last [skipMaxLevel]*znode
	var lastRank [skipMaxLevel]int
	for i := range last {
		last[i] = sl.head
	}
	r := 0
	var prev *znode
	for x := src.head.level(0).next; x != nil; x = x.level(0).next {
		r++
		n := newZNode(x.height, x.score, x.member)
		for i := range n.height {
			last[i].level(i).setNext(n)
			last[i].level(i).span = r - lastRank[i]
			last[i], lastRank[i] = n, r
		}
		n.prev = prev
		prev = n
	}
	sl.tail = prev
	sl.length = r
	sl.level = src.level
}
