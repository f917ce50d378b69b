package keyspace

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

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
			got = s.Add([]byte(st.member))
		case "addstr":
			got = s.AddString(st.member)
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
	s.Add(m)
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
			s.Add([]byte(m))
		}
		if got := s.Encoding(); got != tc.want {
			t.Errorf("%s: encoding %s, want %s", tc.name, got, tc.want)
		}
	}
	s := NewSet()
	for i := 0; i < 512; i++ {
		s.Add([]byte(fmt.Sprint(i)))
	}
	if s.Encoding() != "intset" {
		t.Fatal("512 integers are not an intset")
	}
	s.Add([]byte("512"))
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
			if s.Add(m) == ref[v] {
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
	s.Add([]byte("abc"))
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
			if s.Add([]byte(m)) == ref[m] {
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
		s.Add([]byte(fmt.Sprint("m", i)))
	}
	c := s.Copy().(*Set)
	c.Remove([]byte("m0"))
	c.Add([]byte("new"))
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
			s.Add([]byte(fmt.Sprint("m", i)))
		}
		checkScanGuarantee(t, r, round, n, "m", scanned{
			scan: func(cursor uint64, count int, seen map[string]bool) uint64 {
				return s.Scan(cursor, count, func(m string) { seen[m] = true })
			},
			len:      s.Len,
			removeAt: s.RemoveAt,
			add:      func(m string) { s.Add([]byte(m)) },
		})
	}
}

func TestSetMemoryUsageGrows(t *testing.T) {
	s := NewSet()
	small := s.MemoryUsage()
	for i := 0; i < 1000; i++ {
		s.Add([]byte(fmt.Sprint(strings.Repeat("m", 100), i)))
	}
	if big := s.MemoryUsage(); big < small+100*1000 {
		t.Fatalf("memory usage %d for 100 kB of members", big)
	}
}
