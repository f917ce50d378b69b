package keyspace

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"
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

// The encodings the tests run on: always packed (limits no test set
// reaches), a skip list from the first member, and Redis's defaults, under
// which the sets convert part way.
var zencodings = []struct {
	name string
	lim  ZLimits
}{
	{"packed", ZLimits{Entries: 1 << 30, Value: 1 << 30}},
	{"skiplist", ZLimits{}},
	{"default", DefaultZLimits()},
}

// checkZSet verifies every structural invariant of z against want (sorted):
// order, ranks, back links, the last element and lookups through the public
// API; for a skip list also the spans, the map and the member bytes; for a
// packed set the entry count and array length.
func checkZSet(t *testing.T, z *ZSet, want zmodel) {
	t.Helper()
	if z.Len() != len(want) {
		t.Fatalf("Len %d, want %d", z.Len(), len(want))
	}
	i := 0
	var prev ZPos
	bytes := 0
	for x := z.First(); x.Valid(); x = x.Next() {
		if i >= len(want) || x.Member() != want[i].member || x.Score() != want[i].score {
			t.Fatalf("element %d is (%q, %v), want %v", i, x.Member(), x.Score(), want[min(i, len(want)-1)])
		}
		if p := x.Prev(); p != prev {
			t.Fatalf("element %d: bad back link", i)
		}
		if s, ok := z.ScoreString(x.Member()); !ok || s != x.Score() {
			t.Fatalf("lookup has %v %v for %q", s, ok, x.Member())
		}
		if r, s, ok := z.Rank([]byte(x.Member())); !ok || r != i || s != x.Score() {
			t.Fatalf("Rank(%q) = %d %v %v, want %d", x.Member(), r, s, ok, i)
		}
		if r := z.RankOf(x); r != i {
			t.Fatalf("RankOf(%q) = %d, want %d", x.Member(), r, i)
		}
		if y := z.ByRank(i); y != x {
			t.Fatalf("ByRank(%d) is not %q", i, x.Member())
		}
		bytes += len(x.Member())
		prev = x
		i++
	}
	if i != len(want) {
		t.Fatalf("walked %d elements, want %d", i, len(want))
	}
	if z.Last() != prev {
		t.Fatalf("bad last element")
	}
	if z.ByRank(-1).Valid() || z.ByRank(len(want)).Valid() {
		t.Fatalf("ByRank out of range returned an element")
	}
	if z.big == nil {
		if n := countEntries(z.packed()); n != int(z.n) {
			t.Fatalf("packed count %d, %d entries", z.n, n)
		}
		return
	}
	sl := &z.big.sl
	if sl.length != len(want) || len(z.big.dict) != len(want) {
		t.Fatalf("list %d, map %d, want %d", sl.length, len(z.big.dict), len(want))
	}
	if bytes != z.big.bytes {
		t.Fatalf("member bytes %d, counted %d", z.big.bytes, bytes)
	}
	// Every level is sorted, its spans add up to the ranks and every link
	// holds its next node's score.
	for lvl := 0; lvl < sl.level; lvl++ {
		rank := 0
		for x := sl.head; x.level(lvl).next != nil; x = x.level(lvl).next {
			if l := x.level(lvl); math.Float64bits(l.score) != math.Float64bits(l.next.score) {
				t.Fatalf("level %d: link to %q holds score %v, the node has %v", lvl, l.next.member, l.score, l.next.score)
			}
			rank += x.level(lvl).span
			if got := z.RankOf(nodePos(x.level(lvl).next)) + 1; got != rank {
				t.Fatalf("level %d: span sum %d, rank %d", lvl, rank, got)
			}
		}
	}
}

// countEntries counts the packed entries of b, checking that they end
// exactly at its end.
func countEntries(b []byte) int {
	n, off := 0, 0
	for off < len(b) {
		off = zskip(b, off)
		n++
	}
	if off != len(b) {
		return -1
	}
	return n
}

func TestZSetRandomOperations(t *testing.T) {
	for _, enc := range zencodings {
		t.Run(enc.name, func(t *testing.T) { testZSetRandomOperations(t, enc.lim) })
	}
}

func testZSetRandomOperations(t *testing.T, lim ZLimits) {
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
		if r.IntN(8) == 0 {
			score = float64(r.IntN(1<<20) - 1<<19) // a multi-byte integer
		}
		switch op := r.IntN(10); {
		case op < 5:
			_, existed := ref[member]
			if added := z.Add([]byte(member), score, lim); added == existed {
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
				if first.Valid() || last.Valid() || z.CountInScore(&rg) != 0 {
					t.Fatalf("range %+v should be empty", rg)
				}
				continue
			}
			if !first.Valid() || first.Member() != in[0].member || !last.Valid() || last.Member() != in[len(in)-1].member {
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

// TestZSetMoves changes the scores of a skip list's members in every way a
// move can go: to a random score, to a neighbour's score (the member then
// decides the order), by a step too small to leave its place, to the ends,
// and to its own place's bounds, checking the whole structure as it goes.
func TestZSetMoves(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	z := NewZSet()
	ref := map[string]float64{}
	members := numbered(2000, 8)
	for _, m := range members {
		s := float64(r.IntN(500))
		z.Add([]byte(m), s, ZLimits{})
		ref[m] = s
	}
	model := func() zmodel {
		var m zmodel
		for k, v := range ref {
			m = append(m, zpairT{k, v})
		}
		return m.sorted()
	}
	moves := []struct {
		name  string
		score func(cur float64, sorted zmodel) float64
	}{
		{"random", func(float64, zmodel) float64 { return float64(r.IntN(500)) }},
		{"neighbour's score", func(_ float64, m zmodel) float64 { return m[r.IntN(len(m))].score }},
		{"small step", func(cur float64, _ zmodel) float64 { return cur + 1.0/1024 }},
		{"lowest", func(float64, zmodel) float64 { return -1e9 }},
		{"highest", func(float64, zmodel) float64 { return 1e9 }},
		{"next down", func(cur float64, _ zmodel) float64 { return math.Nextafter(cur, math.Inf(-1)) }},
	}
	for _, mv := range moves {
		before := model()
		for range 300 {
			m := members[r.IntN(len(members))]
			s := mv.score(ref[m], before)
			if z.Add([]byte(m), s, ZLimits{}) {
				t.Fatalf("%s: Add(%q) reported a new member", mv.name, m)
			}
			ref[m] = s
		}
		checkZSet(t, z, model())
	}
}

func TestZSetLexRanges(t *testing.T) {
	for _, enc := range zencodings {
		for _, size := range []int{20, 500} { // listpack-sized and larger
			t.Run(enc.name+"/"+strconv.Itoa(size), func(t *testing.T) { testZSetLexRanges(t, size, enc.lim) })
		}
	}
}

func testZSetLexRanges(t *testing.T, size int, lim ZLimits) {
	z := NewZSet()
	var members []string
	for i := 0; i < size; i++ {
		m := strconv.Itoa(i * 7 % 1000)
		members = append(members, m)
		z.Add([]byte(m), 0, lim)
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
			t.Fatalf("CountInLex(%+v) = %d, want %d", rg, c, len(want))
		}
		first, last := z.FirstInLex(&rg), z.LastInLex(&rg)
		if len(want) == 0 {
			if first.Valid() || last.Valid() {
				t.Fatalf("range %+v should be empty", rg)
			}
			continue
		}
		if !first.Valid() || first.Member() != want[0] || !last.Valid() || last.Member() != want[len(want)-1] {
			t.Fatalf("range %+v: first %v last %v, want %q..%q", rg, first, last, want[0], want[len(want)-1])
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
		t.Fatalf("RemoveRangeByLex removed %q, want %q", got, want)
	}
	if z.Len() != size || c.Len() != size-n {
		t.Fatalf("copy not independent: %d, %d", z.Len(), c.Len())
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

// TestZSetEncoding converts sets across both thresholds, at Redis's
// defaults and at other limits, and checks the encoding and the contents
// on either side: a set stays packed up to the limits, becomes a skip list
// with the member that crosses one and never goes back.
func TestZSetEncoding(t *testing.T) {
	tests := []struct {
		name    string
		lim     ZLimits
		members []string // added in order; the last one crosses a limit
	}{
		{"entries 128", DefaultZLimits(), numbered(129, 1)},
		{"value 64", DefaultZLimits(), append(numbered(5, 1), string(make([]byte, 65)))},
		{"value 64 first", DefaultZLimits(), []string{string(make([]byte, 65))}},
		{"entries 3", ZLimits{Entries: 3, Value: 64}, numbered(4, 1)},
		{"entries 0", ZLimits{Entries: 0, Value: 64}, numbered(1, 1)},
		{"value 10", ZLimits{Entries: 128, Value: 10}, append(numbered(3, 10), numbered(1, 11)...)},
		{"value 0", ZLimits{Entries: 128, Value: 0}, []string{"", "", "a"}[1:]},
		{"long member 200", ZLimits{Entries: 128, Value: 300}, append(numbered(3, 200), string(make([]byte, 301)))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			z := NewZSet()
			var want zmodel
			for i, m := range tc.members {
				score := float64(len(tc.members) - i) // reversed: every add inserts at the front
				z.Add([]byte(m), score, tc.lim)
				want = append(want, zpairT{m, score})
				enc := "listpack"
				if i == len(tc.members)-1 {
					enc = "skiplist"
				}
				if z.Encoding() != enc {
					t.Fatalf("after %d members: %s, want %s", i+1, z.Encoding(), enc)
				}
				checkZSet(t, z, want.sorted())
				if i == len(tc.members)-2 {
					// An update of a packed set does not convert.
					z.Add([]byte(tc.members[0]), -1, tc.lim)
					want[0].score = -1
					if z.Encoding() != "listpack" {
						t.Fatalf("update converted: %s", z.Encoding())
					}
				}
			}
			for len(want) > 0 {
				z.Remove([]byte(want[0].member))
				want = want[1:]
				checkZSet(t, z, want.sorted())
				if z.Encoding() != "skiplist" {
					t.Fatalf("shrunk to %d: %s, want skiplist (one-way)", len(want), z.Encoding())
				}
			}
			if c := z.Copy().(*ZSet); c.Encoding() != "skiplist" {
				t.Fatalf("copy: %s", c.Encoding())
			}
		})
	}

	sized := []struct {
		n, maxLen int
		lim       ZLimits
		enc       string
	}{
		{128, 64, DefaultZLimits(), "listpack"},
		{129, 1, DefaultZLimits(), "skiplist"},
		{1, 65, DefaultZLimits(), "skiplist"},
		{5, 10, ZLimits{Entries: 4, Value: 10}, "skiplist"},
		{4, 10, ZLimits{Entries: 4, Value: 10}, "listpack"},
	}
	for _, tc := range sized {
		if got := NewZSetSized(tc.n, tc.maxLen, tc.lim).Encoding(); got != tc.enc {
			t.Errorf("NewZSetSized(%d, %d, %+v) is %s, want %s", tc.n, tc.maxLen, tc.lim, got, tc.enc)
		}
	}
}

// numbered returns n distinct members of at least size bytes: the
// numbers, padded with x in front.
func numbered(n, size int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(i)
		if pad := size - len(out[i]); pad > 0 {
			out[i] = strings.Repeat("x", pad) + out[i]
		}
	}
	return out
}

func TestZSetNegativeZero(t *testing.T) {
	negZero := math.Copysign(0, -1)
	small := NewZSet()
	if _, stored := small.Store([]byte("a"), negZero, DefaultZLimits()); math.Signbit(stored) {
		t.Fatal("a packed set kept -0")
	}
	if s, _ := small.Score([]byte("a")); math.Signbit(s) {
		t.Fatal("a packed set reads back -0")
	}
	small.Store([]byte("a"), 1, DefaultZLimits())
	if _, stored := small.Store([]byte("a"), negZero, DefaultZLimits()); math.Signbit(stored) {
		t.Fatal("a packed set kept -0 on update")
	}
	big := NewZSet()
	big.Add(make([]byte, 100), 1, DefaultZLimits())
	if _, stored := big.Store([]byte("a"), negZero, DefaultZLimits()); !math.Signbit(stored) {
		t.Fatal("a skip list set lost -0")
	}
	if _, stored := big.Store([]byte("a"), 0, DefaultZLimits()); !math.Signbit(stored) {
		t.Fatal("0 replaced -0, which Redis treats as the same score")
	}
}

// TestZPackScores round-trips scores and members through the packed
// entry: integers at the edges of the integer form, fractions, infinities,
// the largest and smallest doubles, and members whose length needs a
// multi-byte varint.
func TestZPackScores(t *testing.T) {
	scores := []float64{0, 1, -1, 63, 64, -64, -65, 1 << 20, zintMax, -zintMax, zintMax + 2, -zintMax - 2,
		1 << 62, 0.5, -2.25, math.Pi, 1e300, -1e300, math.MaxFloat64, math.SmallestNonzeroFloat64,
		math.Inf(1), math.Inf(-1), 4.5e15, 9007199254740993}
	members := []string{"", "a", string(make([]byte, 127)), string(make([]byte, 128)), string(make([]byte, 20000))}
	for _, m := range members {
		for _, s := range scores {
			b := appendZEntry(nil, m, s)
			if len(b) != zentrySize(m, s) {
				t.Fatalf("entry of %d bytes and %v: %d bytes, zentrySize %d", len(m), s, len(b), zentrySize(m, s))
			}
			gm, gs, next := zentry(b, 0)
			if gm != m || gs != s || next != len(b) || zskip(b, 0) != len(b) {
				t.Fatalf("entry (%d bytes, %v) reads back (%d bytes, %v), next %d of %d", len(m), s, len(gm), gs, next, len(b))
			}
		}
	}
}

// TestZSetViewsSurviveWrites checks that a member read from a packed set
// keeps its value after the set changes: writes build new arrays.
func TestZSetViewsSurviveWrites(t *testing.T) {
	z := NewZSet()
	lim := DefaultZLimits()
	for i := 0; i < 10; i++ {
		z.Add([]byte("m"+strconv.Itoa(i)), float64(i), lim)
	}
	first := z.First().Member()
	z.Add([]byte("a"), -1, lim)
	z.Remove([]byte("m0"))
	z.RemoveRangeByRank(0, 3, nil)
	if first != "m0" {
		t.Fatalf("member read before the writes is now %q", first)
	}
}

func TestZSetRangeAndCopy(t *testing.T) {
	for _, enc := range zencodings {
		t.Run(enc.name, func(t *testing.T) {
			z := NewZSet()
			for i := 0; i < 1000; i++ {
				z.Add([]byte("m"+strconv.Itoa(i)), float64(i%10), enc.lim)
			}
			c := z.Copy().(*ZSet)
			var want zmodel
			z.Range(func(m []byte, s float64) bool {
				want = append(want, zpairT{string(m), s})
				return true
			})
			checkZSet(t, c, want)
			c.Add([]byte("m1"), 100, enc.lim)
			c.Remove([]byte("m2"))
			if s, _ := z.Score([]byte("m1")); s != 1 {
				t.Fatal("changing the copy changed the original")
			}
			checkZSet(t, z, want)
			n := 0
			z.Range(func([]byte, float64) bool { n++; return n < 5 })
			if n != 5 {
				t.Fatalf("Range did not stop: %d calls", n)
			}
			// At least the members and a byte per score.
			least := int64(z.Len())
			for _, p := range want {
				least += int64(len(p.member))
			}
			if z.MemoryUsage() < least {
				t.Fatalf("MemoryUsage %d looks wrong", z.MemoryUsage())
			}
			var obj Object = z
			if obj.Type() != TypeZSet {
				t.Fatal("Type is not TypeZSet")
			}
		})
	}
}

// FuzzZSet runs a program of operations read from the input on a packed
// set and a skip list at once and checks both against a model after each
// step: the packed encoder, decoder and iteration on every shape of
// member and score the input makes.
func FuzzZSet(f *testing.F) {
	f.Add([]byte("\x00a\x01\x00b\x02\x01a\x03\x02\x00\x01"))
	f.Add([]byte("\x00\x00\x00\x00\xff\xff\x00\x01\x7f\x04\x03\x05\x06\x80\x81"))
	f.Add(bytes.Repeat([]byte{0, 'x', 0x80, 0, 'y', 0x40, 5, 1, 2}, 20))
	f.Fuzz(func(t *testing.T, prog []byte) {
		packed, big := NewZSet(), NewZSet()
		plim, blim := zencodings[0].lim, zencodings[1].lim
		ref := map[string]float64{}
		model := func() zmodel {
			var m zmodel
			for k, v := range ref {
				m = append(m, zpairT{k, v})
			}
			return m.sorted()
		}
		next := func() byte {
			if len(prog) == 0 {
				return 0
			}
			c := prog[0]
			prog = prog[1:]
			return c
		}
		for steps := 0; len(prog) > 0 && steps < 200; steps++ {
			op := next() % 5
			n := int(next() % 40)
			n = min(n, len(prog))
			member := string(prog[:n])
			prog = prog[n:]
			var score float64
			switch c := next(); c % 4 {
			case 0:
				score = float64(int8(next())) * float64(int(c)<<10)
			case 1:
				var raw [8]byte
				for i := range raw {
					raw[i] = next()
				}
				score = math.Float64frombits(binary.LittleEndian.Uint64(raw[:]))
				if math.IsNaN(score) {
					score = math.Inf(1)
				}
			case 2:
				score = float64(c) / 8
			default:
				score = math.Copysign(0, -1)
			}
			switch op {
			case 0, 1:
				_, pst := packed.Store([]byte(member), score, plim)
				big.Store([]byte(member), pst, blim)
				ref[member] = pst
			case 2:
				packed.Remove([]byte(member))
				big.Remove([]byte(member))
				delete(ref, member)
			case 3:
				if len(ref) > 0 {
					a := int(next()) % len(ref)
					b := a + int(next())%(len(ref)-a)
					var got []string
					packed.RemoveRangeByRank(a, b, func(m string, _ float64) { got = append(got, m) })
					big.RemoveRangeByRank(a, b, nil)
					for _, m := range got {
						delete(ref, m)
					}
				}
			default:
				rg := ScoreRange{Min: score, Max: score + float64(next()), MinEx: n%2 == 0}
				packed.RemoveRangeByScore(&rg, nil)
				big.RemoveRangeByScore(&rg, func(m string, _ float64) { delete(ref, m) })
			}
			want := model()
			checkZSet(t, packed, want)
			checkZSet(t, big, want)
		}
	})
}

// benchZSet builds a set of n members with distinct random scores.
func benchZSet(n int) (*ZSet, [][]byte) {
	r := rand.New(rand.NewPCG(5, 6))
	z := NewZSet()
	members := make([][]byte, n)
	for i := range members {
		members[i] = []byte("member:" + strconv.Itoa(i))
		z.Add(members[i], r.Float64()*1e6, ZLimits{})
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
		z.Add(members[i%len(members)], r.Float64(), DefaultZLimits())
	}
}

func BenchmarkZSetUpdate(b *testing.B) {
	z, members := benchZSet(100000)
	r := rand.New(rand.NewPCG(9, 10))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		z.Add(members[i%len(members)], r.Float64()*1e6, ZLimits{})
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
		for x := z.FirstInScore(&r); x.Valid() && n < 10 && r.BelowMax(x.Score()); x = x.Next() {
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
		if !z.Add(m, r.Float64()*1e6, ZLimits{}) {
			z.Remove(m)
		}
	}
}

// BenchmarkZSetUpdateLarge moves members of a set of a million to random
// scores, as GEOADD of known members does: every search hop misses the
// cache, and a move finds both the old place and the new one.
func BenchmarkZSetUpdateLarge(b *testing.B) {
	z, members := benchZSet(1000000)
	r := rand.New(rand.NewPCG(13, 14))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		z.Add(members[r.IntN(len(members))], r.Float64()*1e6, ZLimits{})
	}
}

// BenchmarkZSetSmallMemory reports the heap bytes a sorted set of ten
// members ("member:0" … "member:9", whole scores) costs, built by ZADD's
// adds, as the memory table's sorted set row loads them.
func BenchmarkZSetSmallMemory(b *testing.B) {
	const sets = 10000
	members := make([][]byte, 10)
	for j := range members {
		members[j] = []byte("member:" + strconv.Itoa(j))
	}
	for b.Loop() {
		keep := make([]*ZSet, sets)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range keep {
			z := NewZSet()
			for j, m := range members {
				z.Add(m, float64(100000+i+j), DefaultZLimits())
			}
			keep[i] = z
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/sets, "bytes/set")
		runtime.KeepAlive(keep)
	}
}

// TestZSetFit checks the encoding a loaded set gets: packed within the
// limits whatever it was, a skip list past them, the contents the same
// (-0 becoming 0 in a packed set, as a listpack stores it).
func TestZSetFit(t *testing.T) {
	negZero := math.Copysign(0, -1)
	tests := []struct {
		name    string
		build   ZLimits // the limits the set is built under
		fit     ZLimits
		members []string
		enc     string
	}{
		{"skiplist to packed", ZLimits{}, DefaultZLimits(), numbered(10, 3), "listpack"},
		{"packed to skiplist by entries", DefaultZLimits(), ZLimits{Entries: 9, Value: 64}, numbered(10, 3), "skiplist"},
		{"packed to skiplist by value", DefaultZLimits(), ZLimits{Entries: 128, Value: 2}, numbered(10, 3), "skiplist"},
		{"skiplist stays", ZLimits{}, DefaultZLimits(), numbered(129, 1), "skiplist"},
		{"packed stays", DefaultZLimits(), DefaultZLimits(), numbered(128, 64), "listpack"},
		{"empty", ZLimits{}, DefaultZLimits(), nil, "listpack"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			z := NewZSetSized(len(tc.members), 0, tc.build)
			var want zmodel
			for i, m := range tc.members {
				score := float64(i%7) - 3.5
				if i == 0 {
					score = negZero
				}
				_, stored := z.Store([]byte(m), score, tc.build)
				want = append(want, zpairT{m, stored})
			}
			z.Fit(tc.fit)
			if z.Encoding() != tc.enc {
				t.Fatalf("encoding %s, want %s", z.Encoding(), tc.enc)
			}
			if tc.enc == "listpack" && len(want) > 0 {
				want[0].score = 0
			}
			checkZSet(t, z, want.sorted())
		})
	}
}

// TestZNodeLayout checks what level relies on: every node type holds a
// znode first and its links at zlinksOffset, and a node of height 1 is one
// 64-byte cache line.
func TestZNodeLayout(t *testing.T) {
	offsets := []uintptr{
		unsafe.Offsetof(zNode1{}.lv), unsafe.Offsetof(zNode2{}.lv), unsafe.Offsetof(zNode3{}.lv),
		unsafe.Offsetof(zNode4{}.lv), unsafe.Offsetof(zNode8{}.lv), unsafe.Offsetof(zNodeMax{}.lv),
		unsafe.Offsetof(zNodeWith[[1]zlevel, [16]byte]{}.lv), unsafe.Offsetof(zNodeWith[[4]zlevel, [32]byte]{}.lv),
	}
	for i, off := range offsets {
		if off != zlinksOffset {
			t.Errorf("type %d: links at %d, want %d", i, off, zlinksOffset)
		}
	}
	if size := unsafe.Sizeof(zNode1{}); size != 64 {
		t.Errorf("a node of height 1 is %d bytes, want 64", size)
	}
	for k := 1; k <= 2*skipMaxLevel; k++ {
		// Both kinds of node: links only, and links with the member's
		// bytes after them (members of 9 to 40 bytes).
		h, member := k, "m"
		n := newZNode(h, float64(h), member)
		if k > skipMaxLevel {
			h, member = k-skipMaxLevel, strings.Repeat("x", k-skipMaxLevel+8)
			n = newZNodeCopy(h, float64(h), member)
		}
		for i := range h {
			n.level(i).span = i + 1
		}
		for i := range h {
			if got := n.level(i).span; got != i+1 {
				t.Fatalf("height %d: level %d reads span %d", h, i, got)
			}
		}
		if n.height != h || n.score != float64(h) || n.member != member {
			t.Fatalf("height %d: node header %+v overwritten", h, *n)
		}
	}
}

// TestZPosToward checks that repeating Toward from an element reaches the
// first element at or above a score, as walking with Next does, in packed
// and skip list sets with repeated scores, and that it takes fewer steps
// than the walk over long distances.
func TestZPosToward(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, n := range []int{100, 5000} {
		z := NewZSet()
		for i := range n {
			z.AddString("m"+strconv.Itoa(i), float64(rng.IntN(n/2)), DefaultZLimits())
		}
		steps, walked := 0, 0
		for range 500 {
			from := z.ByRank(rng.IntN(n))
			target := from.Score() + 1 + float64(rng.IntN(n/2))
			want := from
			for want.Valid() && want.Score() < target {
				want = want.Next()
				walked++
			}
			got := from
			for got.Valid() && got.Score() < target {
				got = got.Toward(target)
				steps++
			}
			if got.Valid() != want.Valid() || got.Valid() && got.Member() != want.Member() {
				t.Fatalf("n %d: from %s toward %v reached %v, want %v", n, from.Member(), target, got, want)
			}
		}
		if n > 1000 && steps*5 > walked {
			t.Errorf("n %d: %d steps toward the targets, %d walking", n, steps, walked)
		}
	}
}
