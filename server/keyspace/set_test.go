package keyspace

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/recached/recached/resp"
)

// setContents returns the members sorted, read through Range.
func setContents(s *Set) []string {
	var out []string
	s.Range(func(m []byte) bool {
		out = append(out, string(m))
		return true
	})
	sort.Strings(out)
	return out
}

func TestSetBasics(t *testing.T) {
	s := NewSet()
	if s.Type() != TypeSet || s.Len() != 0 {
		t.Fatalf("new set: type %v len %d", s.Type(), s.Len())
	}
	steps := []struct {
		op, member string
		want       bool
	}{
		{"add", "a", true},
		{"add", "a", false},
		{"add", "", true},
		{"add", "b", true},
		{"rem", "zz", false},
		{"rem", "a", true},
		{"rem", "a", false},
		{"addstr", "c", true},
		{"addstr", "c", false},
	}
	for _, st := range steps {
		var got bool
		switch st.op {
		case "add":
			got = s.Add([]byte(st.member), 512)
		case "addstr":
			got = s.AddString(st.member, 512)
		case "rem":
			got = s.Remove([]byte(st.member))
		}
		if got != st.want {
			t.Fatalf("%s %q: got %v, want %v", st.op, st.member, got, st.want)
		}
	}
	if got := strings.Join(setContents(s), ","); got != ",b,c" {
		t.Fatalf("contents %q", got)
	}
	if !s.Has([]byte("")) || !s.HasString("b") || s.Has([]byte("a")) || s.HasString("zz") {
		t.Fatal("Has is wrong")
	}
}

func TestSetAddCopiesArgument(t *testing.T) {
	s := NewSet()
	m := []byte("member")
	s.Add(m, 512)
	m[0] = 'X'
	if !s.Has([]byte("member")) || s.Has(m) {
		t.Fatal("the set shares its argument's bytes")
	}
}

func TestSetEncoding(t *testing.T) {
	tests := []struct {
		name    string
		members []string
		want    string
	}{
		{"integers", []string{"1", "-2", "300"}, "intset"},
		{"a string", []string{"a"}, "hashtable"},
		{"integers then a string", []string{"1", "2", "a"}, "hashtable"},
		{"non-canonical integer", []string{"1", "01"}, "hashtable"},
		{"out of int64", []string{"9223372036854775808"}, "hashtable"},
	}
	for _, tc := range tests {
		s := NewSet()
		for _, m := range tc.members {
			s.Add([]byte(m), 512)
		}
		if got := s.Encoding(); got != tc.want {
			t.Errorf("%s: encoding %s, want %s", tc.name, got, tc.want)
		}
	}
	s := NewSet()
	for i := 0; i < 512; i++ {
		s.Add([]byte(fmt.Sprint(i)), 512)
	}
	if s.Encoding() != "intset" {
		t.Fatal("512 integers are not an intset")
	}
	s.Add([]byte("512"), 512)
	if s.Encoding() != "hashtable" {
		t.Fatal("513 integers are still an intset")
	}
	// Like Redis, a set never converts back.
	s.Remove([]byte("512"))
	if s.Encoding() != "hashtable" {
		t.Fatal("set converted back to an intset")
	}
	if c := s.Copy().(*Set); c.Encoding() != "hashtable" {
		t.Fatal("copy lost the encoding")
	}
}

// TestSetIntsetOrder checks that an intset keeps its members in ascending
// numeric order, as Redis replies, through additions and removals, and
// that a hashtable set stops doing so.
func TestSetIntsetOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	s := NewSet()
	ref := map[int64]bool{}
	for i := 0; i < 3000; i++ {
		v := r.Int64N(400) - 200
		m := []byte(fmt.Sprint(v))
		if r.IntN(3) == 0 {
			if s.Remove(m) != ref[v] {
				t.Fatalf("Remove(%d) disagrees", v)
			}
			delete(ref, v)
		} else {
			if s.Add(m, 512) == ref[v] {
				t.Fatalf("Add(%d) disagrees", v)
			}
			ref[v] = true
		}
	}
	want := slices.Sorted(maps.Keys(ref))
	var got []int64
	for i := 0; i < s.Len(); i++ {
		v, ok := resp.ParseInt(s.At(i))
		if !ok {
			t.Fatalf("member %q is not an integer", s.At(i))
		}
		got = append(got, v)
	}
	if !slices.Equal(got, want) || s.Encoding() != "intset" {
		t.Fatalf("order %v, want %v (encoding %s)", got, want, s.Encoding())
	}
	if s.Has([]byte("abc")) || s.Has([]byte("01")) || s.HasString("-0") {
		t.Fatal("an intset found a non-canonical member")
	}
	n := 0
	if next := s.Scan(0, 1, func(string) { n++ }); next != 0 || n != s.Len() {
		t.Fatalf("intset scan returned %d of %d members and cursor %d", n, s.Len(), next)
	}
	s.Add([]byte("abc"), 512)
	if !s.Has([]byte("abc")) || !s.Has([]byte(fmt.Sprint(want[0]))) || s.Len() != len(want)+1 {
		t.Fatal("conversion to a hashtable lost members")
	}
}

// TestSetAgainstMap runs random operations on a Set and on a map and
// compares them, in both encodings, across the index and compaction
// thresholds.
func TestSetAgainstMap(t *testing.T) {
	for _, prefix := range []string{"", "m"} {
		t.Run("prefix="+prefix, func(t *testing.T) { setAgainstMap(t, prefix) })
	}
}

// setAgainstMap is TestSetAgainstMap with members prefix+n: integers with
// no prefix (an intset), strings with one (a hashtable).
func setAgainstMap(t *testing.T, prefix string) {
	r := rand.New(rand.NewPCG(7, 8))
	s := NewSet()
	ref := map[string]bool{}
	for i := 0; i < 20000; i++ {
		span := 4 + (i/2000%5)*60
		m := prefix + fmt.Sprint(r.IntN(span))
		switch r.IntN(4) {
		case 0:
			if s.Remove([]byte(m)) != ref[m] {
				t.Fatalf("step %d: Remove(%s) disagrees", i, m)
			}
			delete(ref, m)
		case 1:
			if s.Len() > 0 {
				got := s.RemoveAt(r.IntN(s.Len()))
				if !ref[got] {
					t.Fatalf("step %d: RemoveAt returned %s, not a member", i, got)
				}
				delete(ref, got)
			}
		default:
			if s.Add([]byte(m), 512) == ref[m] {
				t.Fatalf("step %d: Add(%s) disagrees", i, m)
			}
			ref[m] = true
		}
		if s.Len() != len(ref) {
			t.Fatalf("step %d: len %d, want %d", i, s.Len(), len(ref))
		}
		if i%97 == 0 {
			for m := range ref {
				if !s.Has([]byte(m)) {
					t.Fatalf("step %d: %s missing", i, m)
				}
			}
			for j := 0; j < s.Len(); j++ {
				if !ref[s.At(j)] {
					t.Fatalf("step %d: At(%d) = %s, not a member", i, j, s.At(j))
				}
			}
		}
	}
}

func TestSetCopyIsIndependent(t *testing.T) {
	s := NewSet()
	for i := 0; i < 40; i++ {
		s.Add([]byte(fmt.Sprint("m", i)), 512)
	}
	c := s.Copy().(*Set)
	c.Remove([]byte("m0"))
	c.Add([]byte("new"), 512)
	if !s.Has([]byte("m0")) || s.Has([]byte("new")) || s.Len() != 40 {
		t.Fatal("original changed through the copy")
	}
	if c.Len() != 40 || c.Has([]byte("m0")) || !c.Has([]byte("new")) {
		t.Fatal("copy is wrong")
	}
}

// TestSetScanGuarantee removes and adds members between the calls of a
// scan: every member present from start to end must be returned.
func TestSetScanGuarantee(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for round := 0; round < 50; round++ {
		s := NewSet()
		n := 1 + r.IntN(300)
		for i := 0; i < n; i++ {
			s.Add([]byte(fmt.Sprint("m", i)), 512)
		}
		checkScanGuarantee(t, r, round, n, "m", scanned{
			scan: func(cursor uint64, count int, seen map[string]bool) uint64 {
				return s.Scan(cursor, count, func(m string) { seen[m] = true })
			},
			len:      s.Len,
			removeAt: s.RemoveAt,
			add:      func(m string) { s.Add([]byte(m), 512) },
		})
	}
}

func TestSetMemoryUsageGrows(t *testing.T) {
	s := NewSet()
	small := s.MemoryUsage()
	for i := 0; i < 1000; i++ {
		s.Add([]byte(fmt.Sprint(strings.Repeat("m", 100), i)), 512)
	}
	if big := s.MemoryUsage(); big < small+100*1000 {
		t.Fatalf("memory usage %d for 100 kB of members", big)
	}
}

// TestSetConversions crosses each intset threshold in both directions and
// checks the contents and the encoding after every step: the length limit
// (as given, including 0), a member that is not a canonical integer,
// widths, and the conversions back that Redis makes (Repack, as SPOP
// rebuilds a set) or refuses (removals).
func TestSetConversions(t *testing.T) {
	type step struct {
		op      string // add, rem, repack, hashtable
		members []string
		limit   int
		want    string // encoding after the step
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"length", []step{
			{"add", []string{"1", "2", "3"}, 3, "intset"},
			{"add", []string{"3"}, 3, "intset"},
			{"add", []string{"4"}, 3, "hashtable"},
			{"rem", []string{"4", "3"}, 3, "hashtable"},
			{"repack", nil, 3, "intset"},
			{"add", []string{"3"}, 3, "intset"},
		}},
		{"limit zero", []step{
			{"add", []string{"7"}, 0, "hashtable"},
			{"repack", nil, 0, "hashtable"},
			{"repack", nil, 1, "intset"},
		}},
		{"limit lowered", []step{
			{"add", []string{"1", "2", "3"}, 512, "intset"},
			{"add", []string{"2"}, 1, "intset"},
			{"add", []string{"9"}, 1, "hashtable"},
		}},
		{"not an integer", []step{
			{"add", []string{"-1", "0"}, 512, "intset"},
			{"add", []string{"01"}, 512, "hashtable"},
			{"rem", []string{"01"}, 512, "hashtable"},
			{"repack", nil, 512, "intset"},
			{"add", []string{"x"}, 512, "hashtable"},
			{"repack", nil, 512, "hashtable"},
			{"hashtable", nil, 512, "hashtable"},
		}},
		{"widths", []step{
			{"add", []string{"32767", "-32768"}, 512, "intset"},
			{"add", []string{"32768"}, 512, "intset"},
			{"add", []string{"-2147483649", "9223372036854775807", "-9223372036854775808"}, 512, "intset"},
			{"rem", []string{"-9223372036854775808", "9223372036854775807", "-2147483649", "32768"}, 512, "intset"},
			{"add", []string{"9223372036854775808"}, 512, "hashtable"},
		}},
		{"forced", []step{
			{"add", []string{"5"}, 512, "intset"},
			{"hashtable", nil, 512, "hashtable"},
			{"add", []string{"6"}, 512, "hashtable"},
		}},
	}
	for _, tc := range tests {
		s := NewSet()
		ref := map[string]bool{}
		for i, st := range tc.steps {
			for _, m := range st.members {
				switch st.op {
				case "add":
					if s.Add([]byte(m), st.limit) == ref[m] {
						t.Fatalf("%s step %d: Add(%s) disagrees", tc.name, i, m)
					}
					ref[m] = true
				case "rem":
					if s.Remove([]byte(m)) != ref[m] {
						t.Fatalf("%s step %d: Remove(%s) disagrees", tc.name, i, m)
					}
					delete(ref, m)
				}
			}
			switch st.op {
			case "repack":
				s.Repack(st.limit)
			case "hashtable":
				s.ConvertToHashtable()
			}
			if got := s.Encoding(); got != st.want {
				t.Fatalf("%s step %d: encoding %s, want %s", tc.name, i, got, st.want)
			}
			if got, want := setContents(s), slices.Sorted(maps.Keys(ref)); !slices.Equal(got, want) {
				t.Fatalf("%s step %d: contents %q, want %q", tc.name, i, got, want)
			}
			for m := range ref {
				if !s.Has([]byte(m)) || !s.HasString(m) {
					t.Fatalf("%s step %d: %s missing", tc.name, i, m)
				}
			}
			if c := s.Copy().(*Set); c.Encoding() != s.Encoding() || !slices.Equal(setContents(c), setContents(s)) {
				t.Fatalf("%s step %d: copy differs", tc.name, i)
			}
		}
	}
}

// TestIntsetWidth checks the packed layout: the narrowest width that holds
// every value added, kept after the wide values go, as Redis keeps it.
func TestIntsetWidth(t *testing.T) {
	s := NewSet()
	steps := []struct {
		add, rem string
		width    int
	}{
		{"1", "", 2}, {"-32768", "", 2}, {"32768", "", 4}, {"-2147483648", "", 4},
		{"2147483648", "", 8}, {"", "2147483648", 8}, {"", "32768", 8},
	}
	for _, st := range steps {
		if st.add != "" {
			s.Add([]byte(st.add), 512)
		} else {
			s.Remove([]byte(st.rem))
		}
		w, data, ok := s.Intset()
		if !ok || w != st.width || len(data) != w*s.Len() {
			t.Fatalf("after %q/%q: width %d, %d bytes for %d members", st.add, st.rem, w, len(data), s.Len())
		}
		back, err := ParseIntset(w, data, 512)
		if err != nil || !slices.Equal(setContents(back), setContents(s)) {
			t.Fatalf("ParseIntset of %x: %v %q", data, err, setContents(back))
		}
	}
}

// FuzzParseIntset decodes arbitrary intset contents: a value that decodes
// must be strictly ascending, found by Has, iterated whole, and encoded
// back to the same bytes.
func FuzzParseIntset(f *testing.F) {
	f.Add(2, []byte{0xf9, 0xff, 5, 0})
	f.Add(4, []byte{1, 0, 0, 0, 2, 0, 0, 0})
	f.Add(8, []byte{0, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
	f.Add(2, []byte{5, 0, 5, 0})
	f.Add(3, []byte{1, 2, 3})
	f.Add(2, []byte{1})
	f.Add(2, []byte{})
	f.Fuzz(func(t *testing.T, width int, data []byte) {
		s, err := ParseIntset(width, data, 512)
		if err != nil {
			return
		}
		if s.Len() != len(data)/width {
			t.Fatalf("len %d for %d bytes of width %d", s.Len(), len(data), width)
		}
		prev, n := int64(0), 0
		s.Range(func(m []byte) bool {
			v, ok := resp.ParseInt(m)
			if !ok || (n > 0 && v <= prev) || !s.Has(m) {
				t.Fatalf("member %q after %d (%d)", m, prev, n)
			}
			prev = v
			n++
			return true
		})
		if n != s.Len() {
			t.Fatalf("range gave %d of %d", n, s.Len())
		}
		if s.Len() > 512 {
			if s.Encoding() != "hashtable" {
				t.Fatalf("%d members in an intset", s.Len())
			}
			return
		}
		if w, back, ok := s.Intset(); len(data) > 0 && (!ok || w != width || !slices.Equal(back, data)) {
			t.Fatalf("encoded back as %d %x", w, back)
		}
	})
}

// BenchmarkSmallSetBytes reports the heap bytes per set of 10 small
// integers, the memory row, without the key's entry.
func BenchmarkSmallSetBytes(b *testing.B) {
	const n = 10000
	sets := make([]*Set, n)
	var before, after runtime.MemStats
	for range b.N {
		clear(sets)
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range sets {
			s := NewSet()
			for j := range 10 {
				s.Add(strconv.AppendInt(nil, int64(i*10+j), 10), 512)
			}
			sets[i] = s
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/set")
	runtime.KeepAlive(sets)
}

// TestSetGrow checks that growing a set for the members SADD is about to
// add changes nothing but its capacity: the set then holds what adding
// alone gives, in the same encoding and width, and a set grown once for
// new integers is allocated to its size.
func TestSetGrow(t *testing.T) {
	cases := []struct {
		name    string
		start   []string
		members []string
		max     int
		exact   bool // allocated to its size
	}{
		{"integers into an empty set", nil, []string{"3", "1", "2"}, 512, true},
		{"wider integers", []string{"1", "2"}, []string{"100000", "-7"}, 512, true},
		{"64-bit integers", []string{"1"}, []string{"9223372036854775807", "5"}, 512, true},
		{"members already there", []string{"1", "2"}, []string{"2", "1"}, 512, false},
		{"a string converts", []string{"1"}, []string{"2", "x"}, 512, false},
		{"too many converts", []string{"1"}, []string{"2", "3", "4"}, 3, false},
		{"duplicates in the batch", nil, []string{"5", "5", "6"}, 512, false},
	}
	for _, c := range cases {
		grown, plain := NewSet(), NewSet()
		for _, m := range c.start {
			grown.Add([]byte(m), c.max)
			plain.Add([]byte(m), c.max)
		}
		ms := make([][]byte, len(c.members))
		for i, m := range c.members {
			ms[i] = []byte(m)
		}
		grown.Grow(ms, c.max)
		for _, m := range ms {
			grown.Add(m, c.max)
			plain.Add(m, c.max)
		}
		if g, p := setContents(grown), setContents(plain); !slices.Equal(g, p) {
			t.Errorf("%s: %q, adding alone gives %q", c.name, g, p)
		}
		if grown.Encoding() != plain.Encoding() || grown.ints().w != plain.ints().w {
			t.Errorf("%s: %s of width %d, adding alone gives %s of width %d", c.name,
				grown.Encoding(), grown.ints().w, plain.Encoding(), plain.ints().w)
		}
		if is := grown.ints(); c.exact && cap(is.b) != len(is.b) {
			t.Errorf("%s: capacity %d for %d bytes", c.name, cap(is.b), len(is.b))
		}
	}
}

// TestSetInEntry checks the sets kept whole in their entry (entry.go,
// "Sets kept whole in their entry"): AddSet with integer members puts the
// intset after the key in the entry's allocation; the set grows out of it,
// converts, moves to another key and survives collections with its
// members, and a string stored over it keeps the time to live when asked.
func TestSetInEntry(t *testing.T) {
	ks := New(1, nil)
	db := ks.DBs[0]
	args := func(vs ...int) [][]byte {
		var ms [][]byte
		for _, v := range vs {
			ms = append(ms, []byte(strconv.Itoa(v)))
		}
		return ms
	}
	for _, c := range []struct {
		key     string
		members [][]byte
		packed  bool
	}{
		{"s:000001", args(10, 11, 12, 13, 14, 15, 16, 17, 18, 19), true},
		{"", args(-1), true},
		{"wide", args(1<<40, 3), true},
		{strings.Repeat("k", 200), args(1, 2, 3, 4), false}, // past maxInline
		{"strs", [][]byte{[]byte("a")}, false},
		{"none", nil, false},
	} {
		s := db.AddSet([]byte(c.key), c.members, SetMaxIntsetEntries)
		s.Grow(c.members, SetMaxIntsetEntries)
		for _, m := range c.members {
			s.Add(m, SetMaxIntsetEntries)
		}
		e := db.Lookup([]byte(c.key))
		if e == nil || e.key() != c.key || e.Obj != s || (e.flags&flagPacked != 0) != c.packed {
			t.Fatalf("%q: entry %v, packed %v", c.key, e != nil, e != nil && e.flags&flagPacked != 0)
		}
		if c.packed {
			start := uintptr(unsafe.Pointer(e)) + unsafe.Sizeof(Entry{}) + uintptr(len(c.key))
			if uintptr(s.p) != start {
				t.Fatalf("%q: the intset is not after the key", c.key)
			}
		}
	}
	usedInvariant(t, ks)

	// Grow past the room (out of the entry), then past the intset.
	s := db.Lookup([]byte("s:000001")).Obj.(*Set)
	for i := range 600 {
		s.Add([]byte(strconv.Itoa(i*7)), SetMaxIntsetEntries)
		if i%100 == 0 {
			runtime.GC()
		}
		db.Account([]byte("s:000001"))
	}
	if e := db.Lookup([]byte("s:000001")); e.key() != "s:000001" || s.Encoding() != "hashtable" || !s.Has([]byte("15")) || !s.Has([]byte("4193")) {
		t.Fatalf("grown set: key %q, %s of %d", e.key(), s.Encoding(), s.Len())
	}

	// RENAME: the moved entry takes the intset whole.
	old := db.Lookup([]byte("wide"))
	db.Delete([]byte("wide"))
	moved := db.Set([]byte("w2"), old)
	if moved.flags&flagPacked == 0 || moved.key() != "w2" || uintptr(moved.Obj.(*Set).p) != uintptr(unsafe.Pointer(moved))+unsafe.Sizeof(Entry{})+2 {
		t.Fatalf("moved entry: flags %b key %q", moved.flags, moved.key())
	}
	old = nil
	runtime.GC()
	junk := make([][]byte, 0, 1000)
	for range 1000 {
		junk = append(junk, bytes.Repeat([]byte{0xff}, 96))
	}
	if got := setContents(moved.Obj.(*Set)); !slices.Equal(got, []string{"1099511627776", "3"}) {
		t.Fatalf("moved set holds %q", got)
	}
	_ = junk

	// A loader's intset is kept whole, a caller's own set stays the
	// caller's.
	ls, _ := ParseIntset(2, []byte{1, 0, 2, 0}, SetMaxIntsetEntries)
	if e := db.Lookup([]byte("loaded")); e != nil || !db.Load("loaded", &Entry{Obj: ls}, 0) {
		t.Fatal("load")
	}
	if e := db.Lookup([]byte("loaded")); e.flags&flagPacked == 0 || e.Obj == ls || !slices.Equal(setContents(e.Obj.(*Set)), []string{"1", "2"}) {
		t.Fatalf("loaded set: flags %b, %q", e.flags, setContents(e.Obj.(*Set)))
	}
	if e := db.SetObject([]byte("own"), ls); e.Obj != ls || e.flags&flagPacked != 0 {
		t.Fatal("SetObject packed a caller's set")
	}

	// SET over a set kept whole, with KEEPTTL and without.
	db.SetExpiry([]byte(""), ks.Now()+100000)
	e := db.SetString([]byte(""), []byte("str"), true)
	if at, ok := db.Expiry([]byte("")); e.Obj != nil || string(e.Str) != "str" || e.key() != "" || !ok || at == 0 {
		t.Fatalf("SET KEEPTTL over a set left %v %q, expiry %v", e.Obj, e.Str, ok)
	}
	db.AddSet([]byte("v"), args(7), SetMaxIntsetEntries).Add([]byte("7"), SetMaxIntsetEntries)
	db.SetExpiry([]byte("v"), ks.Now()+100000)
	if e := db.SetString([]byte("v"), []byte("x"), false); string(e.Str) != "x" || e.HasExpiry() {
		t.Fatalf("SET over a set left %q, expiry %v", e.Str, e.HasExpiry())
	}
	usedInvariant(t, ks)
}

// TestSetKeyBytes reports the live heap a key of the memory table's sets
// row takes (an 8-byte key, ten 4-byte integers) and keeps it from
// growing back to an entry and an intset of their own (64 and 48 bytes
// and the table's slots): one 96-byte allocation a key.
func TestSetKeyBytes(t *testing.T) {
	const n = 100000
	per, objs := heapPerKey(n, func(db *DB, i int) {
		var ms [][]byte
		for j := range 10 {
			ms = append(ms, strconv.AppendInt(nil, int64(i*10+j), 10))
		}
		s := db.AddSet(fmt.Appendf(nil, "s:%06d", i), ms, SetMaxIntsetEntries)
		s.Grow(ms, SetMaxIntsetEntries)
		for _, m := range ms {
			s.Add(m, SetMaxIntsetEntries)
		}
	})
	t.Logf("%.1f live bytes and %.2f objects a key", per, objs)
	if objs > 1.05 || per > 120 {
		t.Fatalf("%.1f bytes and %.2f objects a key", per, objs)
	}
}
