package keyspace

import (
	"fmt"
	"testing"
)

// BenchmarkSetStringNew stores a million new string keys (11 bytes, with
// 16-byte values) into an empty database, as the strings memory row of
// redisbench does: the cost of an insert with the key table's growth
// included.
func BenchmarkSetStringNew(b *testing.B) {
	const n = 1000000
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "k:%09d", i)
	}
	val := []byte("value:0000000001")
	b.ReportAllocs()
	for b.Loop() {
		db := New(1, nil).DBs[0]
		for _, k := range keys {
			db.SetString(k, val, false)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/key")
}
