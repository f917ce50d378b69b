package sync

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/recached/recached/server/keyspace"
)

// matches returns the sorted patterns of ix matching key.
func matches(ix *Index[int], key string) []string {
	var out []string
	ix.Match([]byte(key), func(e *Entry[int]) bool {
		out = append(out, e.Pattern)
		return true
	})
	slices.Sort(out)
	return out
}

func TestIndexMatch(t *testing.T) {
	patterns := []string{
		"user:42", "user:42:*", "user:*", "user:4?", "user:[0-9]*", "*",
		"room:1", "room:\\*", "room:[^a]", "", "a*b*c", "exact:key",
	}
	var ix Index[int]
	for i, p := range patterns {
		if !ix.Add(p, i) {
			t.Fatalf("Add(%q) reported a duplicate", p)
		}
	}
	tests := []struct {
		key  string
		want []string
	}{
		{"user:42", []string{"*", "user:*", "user:42", "user:4?", "user:[0-9]*"}},
		{"user:42:name", []string{"*", "user:*", "user:42:*", "user:[0-9]*"}},
		{"user:x", []string{"*", "user:*"}},
		{"room:1", []string{"*", "room:1", "room:[^a]"}},
		{"room:a", []string{"*"}},
		{"room:*", []string{"*", "room:[^a]", "room:\\*"}},
		{"", []string{"", "*"}},
		{"aXbYc", []string{"*", "a*b*c"}},
		{"exact:key", []string{"*", "exact:key"}},
		{"exact:keys", []string{"*"}},
	}
	for _, tc := range tests {
		if got := matches(&ix, tc.key); !slices.Equal(got, tc.want) {
			t.Errorf("Match(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
}

func TestIndexAddRemove(t *testing.T) {
	var ix Index[int]
	if !ix.Add("a:*", 1) || ix.Add("a:*", 1) || !ix.Add("a:*", 2) || !ix.Add("a:b", 1) {
		t.Fatal("Add results wrong")
	}
	if ix.Len() != 3 {
		t.Fatalf("Len = %d, want 3", ix.Len())
	}
	if e := ix.Lookup("a:*"); e == nil || len(e.Values) != 2 {
		t.Fatalf("Lookup(a:*) = %+v", e)
	}
	if ix.Remove("a:*", 3) || ix.Remove("zz*", 1) || ix.Remove("nope", 1) {
		t.Fatal("Remove of an absent pair reported true")
	}
	for _, p := range []struct {
		pat string
		v   int
	}{{"a:*", 1}, {"a:*", 2}, {"a:b", 1}} {
		if !ix.Remove(p.pat, p.v) {
			t.Fatalf("Remove(%q, %d) = false", p.pat, p.v)
		}
	}
	if ix.Len() != 0 || len(ix.root.kids) != 0 || len(ix.exact) != 0 {
		t.Fatalf("index not empty after removing everything: len %d, kids %d", ix.Len(), len(ix.root.kids))
	}
	if ix.Matches([]byte("a:b")) {
		t.Fatal("empty index matched")
	}
}

// TestIndexAgainstBruteForce compares the index with matching every
// pattern in turn, over random patterns and keys from a small alphabet.
func TestIndexAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const alpha = "ab:*?[]^-\\"
	gen := func(n int, glob bool) string {
		b := make([]byte, r.IntN(n))
		for i := range b {
			if glob {
				b[i] = alpha[r.IntN(len(alpha))]
			} else {
				b[i] = alpha[r.IntN(3)]
			}
		}
		return string(b)
	}
	var ix Index[int]
	var pats []string
	for i := 0; i < 300; i++ {
		p := gen(7, true)
		if ix.Lookup(p) == nil {
			ix.Add(p, i)
			ix.Add(p, -i)
			pats = append(pats, p)
		}
	}
	// Remove a third to exercise pruning.
	for i := 0; i < len(pats); i += 3 {
		if e := ix.Lookup(pats[i]); e != nil {
			for _, v := range slices.Clone(e.Values) {
				ix.Remove(pats[i], v)
			}
		}
	}
	for i := 0; i < 3000; i++ {
		key := gen(8, i%2 == 0)
		var want []string
		seen := map[string]bool{}
		for j, p := range pats {
			if j%3 != 0 && !seen[p] && keyspace.Match(p, key) {
				want = append(want, p)
				seen[p] = true
			}
		}
		slices.Sort(want)
		if got := matches(&ix, key); !slices.Equal(got, want) {
			t.Fatalf("Match(%q) = %q, want %q", key, got, want)
		}
	}
}

// BenchmarkIndexMatch routes keys through an index of 10 000 patterns:
// one prefix pattern per user, a few hundred exact keys and some globs.
func BenchmarkIndexMatch(b *testing.B) {
	var ix Index[int]
	for i := 0; i < 9500; i++ {
		ix.Add(fmt.Sprintf("user:%d:*", i), i)
	}
	for i := 0; i < 400; i++ {
		ix.Add(fmt.Sprintf("room:%d", i), i)
	}
	for i := 0; i < 100; i++ {
		ix.Add(fmt.Sprintf("doc:%d:*:title", i), i)
	}
	keys := [][]byte{[]byte("user:4242:profile"), []byte("room:17"), []byte("doc:5:x:title"), []byte("other:key")}
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for i := 0; i < b.N; i++ {
		ix.Match(keys[i%len(keys)], func(*Entry[int]) bool { n++; return true })
	}
	if n == 0 {
		b.Fatal("no match")
	}
}
