package amaquet_test

import (
	"encoding/binary"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/recached/recached/server/amaquet"
	"github.com/recached/recached/server/servertest"
)

// BenchmarkGet64 runs GET over one connection with 64 requests in flight
// (written 64 at a time, answered before the next 64): the server's cost
// per request, the client's included, allocations process-wide.
func BenchmarkGet64(b *testing.B) {
	benchInflight(b, cmd("GET", "key"))
}

// BenchmarkSet64 is BenchmarkGet64 for SET.
func BenchmarkSet64(b *testing.B) {
	benchInflight(b, cmd("SET", "key", "value-of-sixteen"))
}

func benchInflight(b *testing.B, payload string) {
	const inflight = 64
	e := start(b, amaquet.Options{}, "")
	c := dial(b, e.amq)
	c.result(1, cmd("SET", "key", "value-of-sixteen"))
	var batch []byte
	for i := 0; i < inflight; i++ {
		batch = append(batch, request(amaquet.OpCommand, uint64(i+1), payload)...)
	}
	var hdr [24]byte
	buf := make([]byte, 4096)
	b.ReportAllocs()
	b.ResetTimer()
	defer cpuPerOp(b)()
	for done := 0; done < b.N; done += inflight {
		if _, err := c.nc.Write(batch); err != nil {
			b.Fatal(err)
		}
		for i := 0; i < inflight; i++ {
			if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
				b.Fatal(err)
			}
			n := binary.BigEndian.Uint32(hdr[20:])
			if _, err := io.ReadFull(c.r, buf[:n]); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkRESPGet64 is BenchmarkGet64 over RESP at pipeline 64, the
// same engine: the transport's cost side by side.
func BenchmarkRESPGet64(b *testing.B) {
	const inflight = 64
	e := start(b, amaquet.Options{}, "")
	r := servertest.Dial(b, e.resp)
	if _, err := r.Do("SET", "key", "value-of-sixteen"); err != nil {
		b.Fatal(err)
	}
	var batch []byte
	for i := 0; i < inflight; i++ {
		batch = append(batch, servertest.Encode("GET", "key")...)
	}
	want := len("$16\r\nvalue-of-sixteen\r\n") * inflight
	buf := make([]byte, want)
	b.ReportAllocs()
	b.ResetTimer()
	defer cpuPerOp(b)()
	for done := 0; done < b.N; done += inflight {
		if _, err := r.Conn().Write(batch); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(r.Conn(), buf); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuPerOp reports the process's CPU time (user and system, client and
// server together: both run in the test) per operation, which a shared
// machine's wall clock does not tell; call the returned function at the
// end.
func cpuPerOp(b *testing.B) func() {
	start := cpuTime()
	return func() {
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
