package keyspace

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// zmodel is the reference a ZSet is checked against: a sorted slice.
type zmodel []zpairT

type zpairT struct {
	member string
	score  float64
}

func zless(a, b zpairT) bool {
	return a.score < b.score || (a.score == b.score && a.member < b.member)
}

func (m zmodel) sorted() zmodel {
	out := slices.Clone(m)
	slices.SortFunc(out, func(a, b zpairT) int {
		switch {
		case zless(a, b):
			return -1
		case zless(b, a):
			return 1
		}
		return 0
	})
	return out
}

// checkZSet verifies every structural invariant of z against want (sorted):
// order, ranks through the spans, back links, tail, map and sizes.
func checkZSet(t *testing.T, z *ZSet, want zmodel) {
	t.Helper()
	if z.Len() != len(want) || z.sl.length != len(want) {
		t.Fatalf("Len %d, list %d, want %d", z.Len(), z.sl.length, len(want))
	}
	i := 0
	var prev *ZNode
	bytes := 0
	for x := z.First(); x != nil; x = x.Next() {
		if i >= len(want) || x.member != want[i].member || x.score != want[i].score {
			t.Fatalf("element %d is (%q, %v), want %v", i, x.member, x.score, want[min(i, len(want)-1)])
		}
		if x.Prev() != prev {
			t.Fatalf("element %d: bad back link", i)
		}
		if s, ok := z.dict[x.member]; !ok || s != x.score {
			t.Fatalf("map has %v %v for %q", s, ok, x.member)
		}
		if r := z.RankOf(x); r != i {
			t.Fatalf("RankOf(%q) = %d, want %d", x.member, r, i)
		}
		if y := z.ByRank(i); y != x {
			t.Fatalf("ByRank(%d) is not %q", i, x.member)
		}
		bytes += len(x.member)
		prev = x
		i++
	}
	if z.Last() != prev {
		t.Fatalf("bad tail")
	}
	if bytes != z.bytes {
		t.Fatalf("member bytes %d, counted %d", z.bytes, bytes)
	}
	// Every level is sorted and its spans add up to the ranks.
	for lvl := 0; lvl < z.sl.level; lvl++ {
		rank := 0
		for x := z.sl.head; x.level(lvl).next != nil; x = x.level(lvl).next {
			rank += x.level(lvl).span
			if got := z.RankOf(x.level(lvl).next) + 1; got != rank {
				t.Fatalf("level %d: span sum %d, rank %d", lvl, rank, got)
			}
		}
	}
	if z.ByRank(-1) != nil || z.ByRank(len(want)) != nil {
		t.Fatalf("ByRank out of range returned a node")
	}
}

func TestZSetRandomOperations(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	z := NewZSet()
	ref := map[string]float64{}
	model := func() zmodel {
		var m zmodel
		for k, v := range ref {
			m = append(m, zpairT{k, v})
		}
		return m.sorted()
	}
	for step := 0; step < 4000; step++ {
		member := "m" + strconv.Itoa(r.IntN(300))
		score := float64(r.IntN(40)) / 4
		switch op := r.IntN(10); {
		case op < 5:
			_, existed := ref[member]
			if added := z.Add([]byte(member), score); added == existed {
				t.Fatalf("Add(%q) reported new=%v, existed=%v", member, added, existed)
			}
			ref[member] = score
		case op < 7:
			_, existed := ref[member]
			if removed := z.Remove([]byte(member)); removed != existed {
				t.Fatalf("Remove(%q) = %v, existed %v", member, removed, existed)
			}
			delete(ref, member)
		case op < 8:
			rg := ScoreRange{Min: float64(r.IntN(40)) / 4, Max: float64(r.IntN(40)) / 4, MinEx: r.IntN(2) == 0, MaxEx: r.IntN(2) == 0}
			var got []string
			n := z.RemoveRangeByScore(&rg, func(m string, _ float64) { got = append(got, m) })
			var want []string
			for _, p := range model() {
				if rg.AboveMin(p.score) && rg.BelowMax(p.score) {
					want = append(want, p.member)
					delete(ref, p.member)
				}
			}
			if n != len(want) || !slices.Equal(got, want) {
				t.Fatalf("RemoveRangeByScore(%+v) removed %q, want %q", rg, got, want)
			}
		case op < 9:
			if z.Len() == 0 {
				continue
			}
			a, b := r.IntN(z.Len()), r.IntN(z.Len())
			a, b = min(a, b), max(a, b)
			m := model()
			var got []string
			z.RemoveRangeByRank(a, b, func(m string, _ float64) { got = append(got, m) })
			var want []string
			for _, p := range m[a : b+1] {
				want = append(want, p.member)
				delete(ref, p.member)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("RemoveRangeByRank(%d, %d) removed %q, want %q", a, b, got, want)
			}
		default:
			rg := ScoreRange{Min: float64(r.IntN(40)) / 4, Max: float64(r.IntN(40)) / 4, MinEx: r.IntN(2) == 0, MaxEx: r.IntN(2) == 0}
			var in zmodel
			for _, p := range model() {
				if rg.AboveMin(p.score) && rg.BelowMax(p.score) {
					in = append(in, p)
				}
			}
			first, last := z.FirstInScore(&rg), z.LastInScore(&rg)
			if len(in) == 0 {
				if first != nil || last != nil || z.CountInScore(&rg) != 0 {
					t.Fatalf("range %+v should be empty", rg)
				}
				continue
			}
			if first == nil || first.member != in[0].member || last == nil || last.member != in[len(in)-1].member {
				t.Fatalf("range %+v: first %v last %v, want %v", rg, first, last, in)
			}
			if c := z.CountInScore(&rg); c != len(in) {
				t.Fatalf("CountInScore(%+v) = %d, want %d", rg, c, len(in))
			}
		}
		if step%50 == 0 {
			checkZSet(t, z, model())
		}
	}
	checkZSet(t, z, model())
}

func TestZSetLexRanges(t *testing.T) {
	for _, size := range []int{20, 500} { // listpack-sized and skip list
		z := NewZSet()
		var members []string
		for i := 0; i < size; i++ {
			m := strconv.Itoa(i * 7 % 1000)
			members = append(members, m)
			z.Add([]byte(m), 0)
		}
		slices.Sort(members)
		bound := func(r *rand.Rand) LexBound {
			switch r.IntN(6) {
			case 0:
				return LexBound{Inf: -1, Ex: true}
			case 1:
				return LexBound{Inf: 1, Ex: true}
			}
			return LexBound{Value: strconv.Itoa(r.IntN(1000)), Ex: r.IntN(2) == 0}
		}
		r := rand.New(rand.NewPCG(3, uint64(size)))
		for i := 0; i < 500; i++ {
			rg := LexRange{Min: bound(r), Max: bound(r)}
			var want []string
			for _, m := range members {
				if rg.AboveMin(m) && rg.BelowMax(m) {
					want = append(want, m)
				}
			}
			if c := z.CountInLex(&rg); c != len(want) {
				t.Fatalf("size %d: CountInLex(%+v) = %d, want %d", size, rg, c, len(want))
			}
			first, last := z.FirstInLex(&rg), z.LastInLex(&rg)
			if len(want) == 0 {
				if first != nil || last != nil {
					t.Fatalf("size %d: range %+v should be empty", size, rg)
				}
				continue
			}
			if first == nil || first.member != want[0] || last == nil || last.member != want[len(want)-1] {
				t.Fatalf("size %d: range %+v: first %v last %v, want %q..%q", size, rg, first, last, want[0], want[len(want)-1])
			}
		}
		c := z.Copy().(*ZSet)
		rg := LexRange{Min: LexBound{Value: "3"}, Max: LexBound{Value: "6", Ex: true}}
		var got []string
		n := c.RemoveRangeByLex(&rg, func(m string, _ float64) { got = append(got, m) })
		var want []string
		for _, m := range members {
			if rg.AboveMin(m) && rg.BelowMax(m) {
				want = append(want, m)
			}
		}
		if n != len(want) || !slices.Equal(got, want) {
			t.Fatalf("size %d: RemoveRangeByLex removed %q, want %q", size, got, want)
		}
		if z.Len() != size || c.Len() != size-n {
			t.Fatalf("size %d: copy not independent: %d, %d", size, z.Len(), c.Len())
		}
	}
}

func TestLexRangeEmpty(t *testing.T) {
	minus, plus := LexBound{Inf: -1, Ex: true}, LexBound{Inf: 1, Ex: true}
	a, aEx, b := LexBound{Value: "a"}, LexBound{Value: "a", Ex: true}, LexBound{Value: "b"}
	tests := []struct {
		r     LexRange
		empty bool
	}{
		{LexRange{minus, plus}, false},
		{LexRange{plus, minus}, true},
		{LexRange{minus, minus}, true},
		{LexRange{plus, plus}, true},
		{LexRange{a, a}, false},
		{LexRange{aEx, a}, true},
		{LexRange{a, b}, false},
		{LexRange{b, a}, true},
		{LexRange{minus, a}, false},
		{LexRange{a, minus}, true},
	}
	for _, tc := range tests {
		if got := tc.r.Empty(); got != tc.empty {
			t.Errorf("%+v: Empty() = %v, want %v", tc.r, got, tc.empty)
		}
	}
}

func TestZSetEncoding(t *testing.T) {
	z := NewZSet()
	for i := 0; i < ZSetListpackEntries; i++ {
		z.Add([]byte(strconv.Itoa(i)), float64(i))
	}
	if z.Encoding() != "listpack" {
		t.Fatalf("%d members: %s", z.Len(), z.Encoding())
	}
	z.Add([]byte("0"), 5) // an update does not convert
	if z.Encoding() != "listpack" {
		t.Fatalf("after update: %s", z.Encoding())
	}
	z.Add([]byte("x"), 1)
	if z.Encoding() != "skiplist" {
		t.Fatalf("%d members: %s", z.Len(), z.Encoding())
	}
	for i := 0; i < 100; i++ {
		z.Remove([]byte(strconv.Itoa(i)))
	}
	if z.Encoding() != "skiplist" {
		t.Fatalf("shrunk: %s, want skiplist (one-way)", z.Encoding())
	}
	if c := z.Copy().(*ZSet); c.Encoding() != "skiplist" {
		t.Fatalf("copy: %s", c.Encoding())
	}

	long := NewZSet()
	long.Add(make([]byte, ZSetListpackValue), 1)
	if long.Encoding() != "listpack" {
		t.Fatalf("64-byte member: %s", long.Encoding())
	}
	long.Add(make([]byte, ZSetListpackValue+1), 1)
	if long.Encoding() != "skiplist" {
		t.Fatalf("65-byte member: %s", long.Encoding())
	}

	if NewZSetSized(128, 64).Encoding() != "listpack" || NewZSetSized(129, 1).Encoding() != "skiplist" || NewZSetSized(1, 65).Encoding() != "skiplist" {
		t.Fatal("NewZSetSized picks the wrong encoding")
	}
}

func TestZSetNegativeZero(t *testing.T) {
	negZero := math.Copysign(0, -1)
	small := NewZSet()
	if _, stored := small.Store([]byte("a"), negZero); math.Signbit(stored) {
		t.Fatal("a listpack-sized set kept -0")
	}
	big := NewZSet()
	big.Add(make([]byte, 100), 1)
	if _, stored := big.Store([]byte("a"), negZero); !math.Signbit(stored) {
		t.Fatal("a skip list set lost -0")
	}
	if _, stored := big.Store([]byte("a"), 0); !math.Signbit(stored) {
		t.Fatal("0 replaced -0, which Redis treats as the same score")
	}
}

func TestZSetRangeAndCopy(t *testing.T) {
	z := NewZSet()
	for i := 0; i < 1000; i++ {
		z.Add([]byte("m"+strconv.Itoa(i)), float64(i%10))
	}
	c := z.Copy().(*ZSet)
	var want zmodel
	z.Range(func(m []byte, s float64) bool {
		want = append(want, zpairT{string(m), s})
		return true
	})
	checkZSet(t, c, want)
	c.Add([]byte("m1"), 100)
	if s, _ := z.Score([]byte("m1")); s != 1 {
		t.Fatal("changing the copy changed the original")
	}
	n := 0
	z.Range(func([]byte, float64) bool { n++; return n < 5 })
	if n != 5 {
		t.Fatalf("Range did not stop: %d calls", n)
	}
	if z.MemoryUsage() <= c.MemoryUsage()/2 || z.MemoryUsage() < int64(z.Len())*10 {
		t.Fatalf("MemoryUsage %d looks wrong", z.MemoryUsage())
	}
	var obj Object = z
	if obj.Type() != TypeZSet {
		t.Fatal("Type is not TypeZSet")
	}
}

// benchZSet builds a set of n members with distinct random scores.
func benchZSet(n int) (*ZSet, [][]byte) {
	r := rand.New(rand.NewPCG(5, 6))
	z := NewZSet()
	members := make([][]byte, n)
	for i := range members {
		members[i] = []byte("member:" + strconv.Itoa(i))
		z.Add(members[i], r.Float64()*1e6)
	}
	return z, members
}

func BenchmarkZSetAdd(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	members := make([][]byte, 1<<16)
	for i := range members {
		members[i] = []byte("member:" + strconv.Itoa(i))
	}
	b.ReportAllocs()
	z := NewZSet()
	for i := 0; b.Loop(); i++ {
		if i%len(members) == 0 {
			z = NewZSet()
		}
		z.Add(members[i%len(members)], r.Float64())
	}
}

func BenchmarkZSetUpdate(b *testing.B) {
	z, members := benchZSet(100000)
	r := rand.New(rand.NewPCG(9, 10))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		z.Add(members[i%len(members)], r.Float64()*1e6)
	}
}

func BenchmarkZSetRank(b *testing.B) {
	z, members := benchZSet(100000)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		z.Rank(members[i%len(members)])
	}
}

func BenchmarkZSetByRank(b *testing.B) {
	z, _ := benchZSet(100000)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		z.ByRank(i % 100000)
	}
}

// BenchmarkZSetRangeByScore finds a score range and walks 10 elements, as
// ZRANGEBYSCORE … LIMIT 0 10 does.
func BenchmarkZSetRangeByScore(b *testing.B) {
	z, _ := benchZSet(100000)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		lo := float64(i % 1000000)
		r := ScoreRange{Min: lo, Max: lo + 1000}
		n := 0
		for x := z.FirstInScore(&r); x != nil && n < 10 && r.BelowMax(x.Score()); x = x.Next() {
			n++
		}
	}
}

// BenchmarkZSetAddLarge adds members to a set of a million, where every
// search hop misses the cache as GEOADD's do.
func BenchmarkZSetAddLarge(b *testing.B) {
	z, _ := benchZSet(1000000)
	r := rand.New(rand.NewPCG(11, 12))
	members := make([][]byte, 1<<20)
	for i := range members {
		members[i] = []byte("new:" + strconv.Itoa(i))
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		m := members[i%len(members)]
		if !z.Add(m, r.Float64()*1e6) {
			z.Remove(m)
		}
	}
}
