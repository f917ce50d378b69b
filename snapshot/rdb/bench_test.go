package rdb_test

import (
	"os"
	"testing"
	"time"

	"github.com/recached/recached/server/keyspace"
	"github.com/recached/recached/snapshot/rdb"
)

// BenchmarkLoad loads the RDB file RDB_BENCH_FILE (bench/rdb -dump makes
// one) into a fresh keyspace.
func BenchmarkLoad(b *testing.B) {
	path := os.Getenv("RDB_BENCH_FILE")
	if path == "" {
		b.Skip("RDB_BENCH_FILE not set")
	}
	for i := 0; i < b.N; i++ {
		ks := keyspace.New(16, nil)
		if _, err := rdb.Load(path, ks, time.Now().UnixMilli(), false); err != nil {
			b.Fatal(err)
		}
	}
}
