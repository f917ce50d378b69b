package client

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server"
)

// benchWindow is how many commands a benchmark keeps in flight.
const benchWindow = 1000

// benchSet sends b.N SETs through one client, pipelined with benchWindow
// in flight: DEDUP-wrapped outbox writes when dedup is set, plain calls
// otherwise. Both go through the same connection, writer, FIFO and reply
// path; the writes also through the outbox and the server's DEDUP marks.
func benchSet(b *testing.B, transport string, dedup bool) {
	s := startServer(b, server.Config{})
	c := newClient(b, Options{URL: s.url(transport), OutboxSaveInterval: -1})
	waitFor(b, "open", func() bool { return c.State() == StateOpen })
	keys := make([][]byte, 1000)
	for i := range keys {
		keys[i] = []byte("bench:" + strconv.Itoa(i))
	}
	cmd, val := []byte("SET"), []byte("0123456789abcdef")
	ctx := ctx10(b)
	b.ReportAllocs()
	b.ResetTimer()
	if dedup {
		ring := make([]*Write, benchWindow)
		for i := 0; i < b.N; i++ {
			if w := ring[i%benchWindow]; w != nil {
				if _, err := w.Wait(ctx); err != nil {
					b.Fatal(err)
				}
			}
			ring[i%benchWindow] = c.WriteArgs([][]byte{cmd, keys[i%len(keys)], val})
		}
		for _, w := range ring {
			if w != nil {
				if _, err := w.Wait(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
	} else {
		ring := make([]*Call, benchWindow)
		for i := 0; i < b.N; i++ {
			if call := ring[i%benchWindow]; call != nil {
				if _, err := call.Wait(ctx); err != nil {
					b.Fatal(err)
				}
			}
			ring[i%benchWindow] = c.SendArgs([][]byte{cmd, keys[i%len(keys)], val})
		}
		for _, call := range ring {
			if call != nil {
				if _, err := call.Wait(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.StopTimer()
}

// BenchmarkClientSet is plain SET through the client, pipelined.
func BenchmarkClientSet(b *testing.B) {
	for _, tr := range transports {
		b.Run(tr, func(b *testing.B) { benchSet(b, tr, false) })
	}
}

// BenchmarkClientDedupSet is DEDUP-wrapped SET through the outbox,
// pipelined: compare with BenchmarkClientSet for the cost of exactly-once.
func BenchmarkClientDedupSet(b *testing.B) {
	for _, tr := range transports {
		b.Run(tr, func(b *testing.B) { benchSet(b, tr, true) })
	}
}

// BenchmarkClientDedupOverhead alternates rounds of plain and
// DEDUP-wrapped pipelined SETs on one client and server, so that both see
// the same machine load, and reports each one's time per SET and the
// overhead of the wrapped form in percent.
func BenchmarkClientDedupOverhead(b *testing.B) {
	for _, tr := range transports {
		b.Run(tr, func(b *testing.B) {
			s := startServer(b, server.Config{})
			c := newClient(b, Options{URL: s.url(tr), OutboxSaveInterval: -1})
			waitFor(b, "open", func() bool { return c.State() == StateOpen })
			ctx := ctx10(b)
			keys := make([][]byte, 1000)
			for i := range keys {
				keys[i] = []byte("bench:" + strconv.Itoa(i))
			}
			cmd, val := []byte("SET"), []byte("0123456789abcdef")
			type future interface {
				Wait(context.Context) (resp.Value, error)
			}
			run := func(n int, dedup bool) (time.Duration, time.Duration) {
				ring := make([]future, benchWindow)
				start, cpu0 := time.Now(), cpuTime()
				for i := 0; i < n; i++ {
					if f := ring[i%benchWindow]; f != nil {
						if _, err := f.Wait(ctx); err != nil {
							b.Fatal(err)
						}
					}
					args := [][]byte{cmd, keys[i%len(keys)], val}
					if dedup {
						ring[i%benchWindow] = c.WriteArgs(args)
					} else {
						ring[i%benchWindow] = c.SendArgs(args)
					}
				}
				for _, f := range ring {
					if f != nil {
						if _, err := f.Wait(ctx); err != nil {
							b.Fatal(err)
						}
					}
				}
				return time.Since(start), cpuTime() - cpu0
			}
			const round = 10000
			var plain, wrapped, plainCPU, wrappedCPU time.Duration
			var n int
			b.ResetTimer()
			for n < b.N {
				m := min(round, b.N-n)
				// Alternate which goes first, so that neither pays for
				// the other's garbage more often.
				first := n/round%2 == 0
				for _, dedup := range []bool{!first, first} {
					wall, cpu := run(m, dedup)
					if dedup {
						wrapped, wrappedCPU = wrapped+wall, wrappedCPU+cpu
					} else {
						plain, plainCPU = plain+wall, plainCPU+cpu
					}
				}
				n += m
			}
			b.ReportMetric(float64(plain.Nanoseconds())/float64(n), "plain-ns/set")
			b.ReportMetric(float64(wrapped.Nanoseconds())/float64(n), "dedup-ns/set")
			b.ReportMetric(100*(float64(wrapped)/float64(plain)-1), "overhead-%")
			b.ReportMetric(float64(plainCPU.Nanoseconds())/float64(n), "plain-cpu-ns/set")
			b.ReportMetric(float64(wrappedCPU.Nanoseconds())/float64(n), "dedup-cpu-ns/set")
		})
	}
}

// cpuTime returns the CPU time the process (client and in-process server)
// has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
