package amaquet

import (
	"context"
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

// BenchmarkClientDo measures the client's cost per Do (allocs/op is the
// figure to watch: the client shares the machine with the server) for GET
// and SET, one call at a time and with 64 in flight as bench/amaquet runs
// them. The keys are made before the timer starts.
func BenchmarkClientDo(b *testing.B) {
	p := startProc(b)
	c := p.dial(Options{})
	ctx := context.Background()
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = "k:" + strconv.Itoa(i)
		if _, err := c.Do(ctx, "SET", keys[i], "value:0123456789"); err != nil {
			b.Fatal(err)
		}
	}
	for _, bc := range []struct {
		name     string
		inflight int
		set      bool
	}{
		{"GET/serial", 1, false},
		{"SET/serial", 1, true},
		{"GET/inflight64", 64, false},
		{"SET/inflight64", 64, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			do := func(i int) error {
				var err error
				if bc.set {
					_, err = c.Do(ctx, "SET", keys[i%len(keys)], "value:0123456789")
				} else {
					_, err = c.Do(ctx, "GET", keys[i%len(keys)])
				}
				return err
			}
			b.ReportAllocs()
			if bc.inflight == 1 {
				for i := 0; b.Loop(); i++ {
					if err := do(i); err != nil {
						b.Fatal(err)
					}
				}
				return
			}
			b.SetParallelism(bc.inflight)
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					if err := do(i); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
