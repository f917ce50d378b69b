package keyspace

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// Helpers shared by the package's tests.

// scanned is what checkScanGuarantee needs of a value: one SCAN call that
// marks what it returns in seen, the value's size, and the removal and
// addition of elements between calls.
type scanned struct {
	scan     func(cursor uint64, count int, seen map[string]bool) uint64
	len      func() int
	removeAt func(i int) string // removes element i, returning its name
	add      func(name string)
}

// checkScanGuarantee scans v, which holds the n elements named prefix0 to
// prefix<n-1>, removing and adding random elements between calls, and
// checks SCAN's guarantee: every element present for the whole scan is
// returned. round numbers the check in failures.
func checkScanGuarantee(t *testing.T, r *rand.Rand, round, n int, prefix string, v scanned) {
	t.Helper()
	stable := map[string]bool{}
	for i := 0; i < n; i++ {
		stable[fmt.Sprint(prefix, i)] = true
	}
	seen := map[string]bool{}
	var cursor uint64
	next := n
	for calls := 0; ; calls++ {
		if calls > 10*n+10 {
			t.Fatal("scan does not end")
		}
		cursor = v.scan(cursor, 1+r.IntN(7), seen)
		if cursor == 0 {
			break
		}
		for k := r.IntN(4); k > 0 && v.len() > 0; k-- {
			delete(stable, v.removeAt(r.IntN(v.len())))
		}
		for k := r.IntN(3); k > 0; k-- {
			v.add(fmt.Sprint(prefix, next))
			next++
		}
	}
	for name := range stable {
		if !seen[name] {
			t.Fatalf("round %d: scan missed %s", round, name)
		}
	}
}
