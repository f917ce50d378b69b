package amaquet

import (
	"strconv"
	"testing"
)

// BenchmarkGet runs GETs from 64 goroutines sharing one Conn against the
// real server (client and server CPU together: compare runs, not with
// redis-server; bench/amaquet measures the server alone).
func BenchmarkGet(b *testing.B) {
	p := startProc(b)
	c := p.dial(Options{})
	ctx := testCtx(b)
	for i := 0; i < 1000; i++ {
		if _, err := c.Do(ctx, "SET", "k:"+strconv.Itoa(i), "value:0123456789"); err != nil {
			b.Fatal(err)
		}
	}
	b.SetParallelism(64)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := c.Do(ctx, "GET", "k:"+strconv.Itoa(i%1000)); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}
