package keyspace

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
)

// hashContents returns the hash as sorted "field=value" pairs, read through
// Range.
func hashContents(h *Hash) []string {
	var out []string
	h.Range(func(f, v []byte) bool {
		out = append(out, string(f)+"="+string(v))
		return true
	})
	sort.Strings(out)
	return out
}

func TestHashBasics(t *testing.T) {
	h := NewHash()
	if h.Type() != TypeHash || h.Len() != 0 || h.Encoding() != "listpack" {
		t.Fatalf("new hash: type %v len %d encoding %s", h.Type(), h.Len(), h.Encoding())
	}
	steps := []struct {
		op, field, value string
		want             bool // Set: new field; Delete: existed
	}{
		{"set", "a", "1", true},
		{"set", "b", "2", true},
		{"set", "a", "3", false},
		{"set", "", "empty field", true},
		{"set", "e", "", true},
		{"del", "zz", "", false},
		{"del", "b", "", true},
		{"del", "b", "", false},
		{"set", "b", "again", true},
	}
	for _, st := range steps {
		var got bool
		if st.op == "set" {
			got = h.Set([]byte(st.field), []byte(st.value))
		} else {
			got = h.Delete([]byte(st.field))
		}
		if got != st.want {
			t.Fatalf("%s %q: got %v, want %v", st.op, st.field, got, st.want)
		}
	}
	want := []string{"=empty field", "a=3", "b=again", "e="}
	if got := hashContents(h); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("contents %q, want %q", got, want)
	}
	if v, ok := h.Get([]byte("a")); !ok || string(v) != "3" {
		t.Fatalf("Get a = %q %v", v, ok)
	}
	if _, ok := h.Get([]byte("zz")); ok {
		t.Fatal("Get of a missing field succeeded")
	}
	if !h.Has([]byte("")) || h.Has([]byte("zz")) {
		t.Fatal("Has is wrong")
	}
}

func TestHashSetCopiesArguments(t *testing.T) {
	h := NewHash()
	f, v := []byte("field"), []byte("value")
	h.Set(f, v)
	f[0], v[0] = 'X', 'X'
	if got, ok := h.Get([]byte("field")); !ok || string(got) != "value" {
		t.Fatalf("after changing the arguments: %q %v", got, ok)
	}
}

// TestHashKeepsInsertionOrder checks that a listpack-encoded hash removes
// by shifting, as Redis's listpack does, so its order matches Redis's, with
// or without its index.
func TestHashKeepsInsertionOrder(t *testing.T) {
	for _, n := range []int{5, 16, 17, 200, 512} {
		h := NewHash()
		var want []string
		for i := 0; i < n; i++ {
			f := fmt.Sprint("f", i)
			h.Set([]byte(f), []byte("v"))
			want = append(want, f)
		}
		// Remove every third field, and update one that stays.
		for i := 0; i < n; i += 3 {
			h.Delete([]byte(fmt.Sprint("f", i)))
		}
		want = slices.DeleteFunc(want, func(f string) bool {
			var i int
			fmt.Sscanf(f, "f%d", &i)
			return i%3 == 0
		})
		h.Set([]byte(want[0]), []byte("w"))
		var got []string
		for i := 0; i < h.Len(); i++ {
			f, _ := h.At(i)
			got = append(got, string(f))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%d fields: order %q, want %q", n, got, want)
		}
		for i, f := range want {
			if v, ok := h.Get([]byte(f)); !ok || (i > 0 && string(v) != "v") {
				t.Fatalf("%d fields: Get(%s) = %q %v after the removals", n, f, v, ok)
			}
		}
	}
}

// TestHashScanListpackWhole checks that a listpack hash is scanned in one
// call whatever the count, as Redis does.
func TestHashScanListpackWhole(t *testing.T) {
	h := NewHash()
	for i := 0; i < 100; i++ {
		h.Set([]byte(fmt.Sprint(i)), nil)
	}
	n := 0
	if next := h.Scan(0, 1, func(_, _ []byte) { n++ }); next != 0 || n != 100 {
		t.Fatalf("scan returned %d entries and cursor %d", n, next)
	}
}

func TestHashEncoding(t *testing.T) {
	tests := []struct {
		name   string
		fields int
		flen   int
		vlen   int
		want   string
	}{
		{"empty-ish", 1, 1, 1, "listpack"},
		{"512 entries", 512, 4, 4, "listpack"},
		{"513 entries", 513, 4, 4, "hashtable"},
		{"64-byte value", 1, 1, 64, "listpack"},
		{"65-byte value", 1, 1, 65, "hashtable"},
		{"65-byte field", 1, 65, 1, "hashtable"},
	}
	for _, tc := range tests {
		h := NewHash()
		for i := 0; i < tc.fields; i++ {
			f := fmt.Sprintf("%0*d", tc.flen, i)
			h.Set([]byte(f), []byte(strings.Repeat("v", tc.vlen)))
		}
		if got := h.Encoding(); got != tc.want {
			t.Errorf("%s: encoding %s, want %s", tc.name, got, tc.want)
		}
	}
	// Like Redis, a hash never converts back.
	h := NewHash()
	h.Set([]byte("f"), []byte(strings.Repeat("v", 65)))
	h.Set([]byte("f"), []byte("short"))
	if h.Encoding() != "hashtable" {
		t.Error("hash converted back to listpack")
	}
	if c := h.Copy().(*Hash); c.Encoding() != "hashtable" {
		t.Error("copy lost the encoding")
	}
}

// hashLimitCases are the thresholds the model tests run under: Redis's
// defaults (both encodings, converting on the way), limits that keep every
// hash packed, limits that convert every hash at once, and small ones that
// convert often.
var hashLimitCases = []struct {
	name string
	lim  HashLimits
}{
	{"default", DefaultHashLimits()},
	{"always-listpack", HashLimits{Entries: 1 << 30, Value: 1 << 30}},
	{"always-hashtable", HashLimits{Entries: 0, Value: 0}},
	{"small", HashLimits{Entries: 8, Value: 20}},
}

// TestHashAgainstMap runs random operations on a Hash and on a map and
// compares them under every hashLimitCases (values up to 70 bytes cross
// the default value threshold), across the index and compaction
// thresholds of the hash table; after each round Fit re-encodes the hash
// as a load would, and the model test goes on from there.
func TestHashAgainstMap(t *testing.T) {
	for _, lc := range hashLimitCases {
		for _, maxLen := range []int{10, 70} {
			t.Run(fmt.Sprint(lc.name, "/values<", maxLen), func(t *testing.T) { hashAgainstMap(t, lc.lim, maxLen) })
		}
	}
}

func hashAgainstMap(t *testing.T, lim HashLimits, maxLen int) {
	r := rand.New(rand.NewPCG(1, 2))
	h := NewHash()
	ref := map[string]string{}
	for i := 0; i < 20000; i++ {
		// Vary the key space so the hash grows past the index threshold
		// and shrinks back, compacting.
		span := 4 + (i/2000%5)*60
		f := fmt.Sprint(r.IntN(span))
		if r.IntN(3) == 0 {
			_, had := ref[f]
			if h.Delete([]byte(f)) != had {
				t.Fatalf("step %d: Delete(%s) disagrees", i, f)
			}
			delete(ref, f)
		} else {
			v := strings.Repeat("x", r.IntN(maxLen))
			_, had := ref[f]
			if h.SetWith([]byte(f), []byte(v), lim) == had {
				t.Fatalf("step %d: Set(%s) disagrees", i, f)
			}
			ref[f] = v
		}
		if h.Len() != len(ref) {
			t.Fatalf("step %d: len %d, want %d", i, h.Len(), len(ref))
		}
		if i%1000 == 999 {
			want := fitEncoding(ref, lim, h.Encoding())
			h.Fit(lim)
			if got := h.Encoding(); got != want {
				t.Fatalf("step %d: after Fit encoding %s, want %s", i, got, want)
			}
		}
		if i%97 == 0 {
			checkHashAgainst(t, h, ref)
		}
	}
}

// fitEncoding is the encoding a hash of contents ref saved in encoding
// enc has after a load under lim.
func fitEncoding(ref map[string]string, lim HashLimits, enc string) string {
	if len(ref) > lim.Entries {
		return "hashtable"
	}
	if enc == "listpack" {
		return enc
	}
	for f, v := range ref {
		if len(f) > lim.Value || len(v) > lim.Value {
			return "hashtable"
		}
	}
	return "listpack"
}

// checkHashAgainst checks every way of reading h against ref.
func checkHashAgainst(t *testing.T, h *Hash, ref map[string]string) {
	t.Helper()
	if h.Len() != len(ref) {
		t.Fatalf("len %d, want %d", h.Len(), len(ref))
	}
	for k, v := range ref {
		if got, ok := h.Get([]byte(k)); !ok || string(got) != v {
			t.Fatalf("Get(%s) = %q %v, want %q", k, got, ok, v)
		}
		if !h.Has([]byte(k)) {
			t.Fatalf("Has(%s) is false", k)
		}
	}
	if _, ok := h.Get([]byte("absent field")); ok || h.Has([]byte("absent field")) {
		t.Fatal("an absent field is found")
	}
	seen := map[string]bool{}
	for j := 0; j < h.Len(); j++ {
		f, v := h.At(j)
		if w, ok := ref[string(f)]; !ok || w != string(v) || seen[string(f)] {
			t.Fatalf("At(%d) = %s=%s, not in the reference or twice", j, f, v)
		}
		seen[string(f)] = true
	}
	n := 0
	h.Range(func(f, v []byte) bool {
		if ref[string(f)] != string(v) {
			t.Fatalf("Range gave %s=%s, not in the reference", f, v)
		}
		n++
		return true
	})
	if n != len(ref) {
		t.Fatalf("Range gave %d entries, want %d", n, len(ref))
	}
	clear(seen)
	for cursor, calls := uint64(0), 0; ; calls++ {
		if calls > len(ref)+1 {
			t.Fatal("scan does not end")
		}
		cursor = h.Scan(cursor, 3, func(f, _ []byte) { seen[string(f)] = true })
		if cursor == 0 {
			break
		}
	}
	if len(seen) != len(ref) {
		t.Fatalf("scan saw %d fields, want %d", len(seen), len(ref))
	}
}

func TestHashCopyIsDeep(t *testing.T) {
	h := NewHash()
	for i := 0; i < 40; i++ {
		h.Set([]byte(fmt.Sprint(i)), []byte("v"))
	}
	c := h.Copy().(*Hash)
	c.Set([]byte("0"), []byte("changed"))
	c.Delete([]byte("1"))
	c.Set([]byte("new"), []byte("x"))
	if v, _ := h.Get([]byte("0")); string(v) != "v" {
		t.Fatalf("original changed through the copy: %q", v)
	}
	if !h.Has([]byte("1")) || h.Has([]byte("new")) || h.Len() != 40 {
		t.Fatal("original changed through the copy")
	}
	if c.Len() != 40 || !c.Has([]byte("new")) {
		t.Fatal("copy is wrong")
	}
}

func TestHashRangeStops(t *testing.T) {
	h := NewHash()
	for i := 0; i < 10; i++ {
		h.Set([]byte(fmt.Sprint(i)), nil)
	}
	n := 0
	h.Range(func(_, _ []byte) bool { n++; return n < 3 })
	if n != 3 {
		t.Fatalf("Range went on for %d calls after false", n)
	}
}

// TestHashScanGuarantee deletes and adds fields between the calls of a scan:
// every field present from start to end must be returned.
func TestHashScanGuarantee(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 50; round++ {
		h := NewHash()
		n := 1 + r.IntN(300)
		// A long value makes it a hashtable, which scans by cursor.
		long := []byte(strings.Repeat("v", 65))
		for i := 0; i < n; i++ {
			h.Set([]byte(fmt.Sprint("f", i)), long)
		}
		checkScanGuarantee(t, r, round, n, "f", scanned{
			scan: func(cursor uint64, count int, seen map[string]bool) uint64 {
				return h.Scan(cursor, count, func(f, _ []byte) { seen[string(f)] = true })
			},
			len: h.Len,
			removeAt: func(i int) string {
				f, _ := h.At(i)
				name := string(f)
				h.Delete(f)
				return name
			},
			add: func(f string) { h.Set([]byte(f), nil) },
		})
	}
}

func TestHashMemoryUsageGrows(t *testing.T) {
	h := NewHash()
	small := h.MemoryUsage()
	for i := 0; i < 1000; i++ {
		h.Set([]byte(fmt.Sprint(i)), []byte(strings.Repeat("v", 100)))
	}
	if big := h.MemoryUsage(); big < small+100*1000 {
		t.Fatalf("memory usage %d for 100 kB of values", big)
	}
}
