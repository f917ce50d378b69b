package server

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

const (
	benchIncrScript   = "return redis.call('incr',KEYS[1])"
	benchExistsScript = "return redis.call('exists',KEYS[1])"
)

// BenchmarkEvalIncr is redis-benchmark's EVAL row in process: the body is
// hashed and found in the script cache on every call.
func BenchmarkEvalIncr(b *testing.B) {
	benchExec(b, nil, "EVAL", benchIncrScript, "1", "k")
}

// BenchmarkEvalSHAIncr is the EVALSHA row of make bench in process.
func BenchmarkEvalSHAIncr(b *testing.B) {
	benchExec(b, []string{"SCRIPT", "LOAD", benchIncrScript}, "EVALSHA", sha1hex(benchIncrScript), "1", "k")
}

// BenchmarkEvalPipelined is the EVAL row as a transport runs it: a
// connection with pipelines of 16 scripts, handed to the script worker,
// which runs the 15 that follow the first itself (runFollowing).
func BenchmarkEvalPipelined(b *testing.B) {
	benchScriptPipeline(b, "EVAL", benchIncrScript, "1", "k")
}

// BenchmarkEvalSHAPipelined is the EVALSHA row as a transport runs it.
func BenchmarkEvalSHAPipelined(b *testing.B) {
	benchScriptPipeline(b, "EVALSHA", sha1hex(benchIncrScript), "1", "k")
}

// repeatPipeline is a transport's read-ahead holding the same request
// left more times.
type repeatPipeline struct {
	args [][]byte
	left int
}

func (p *repeatPipeline) Peek() [][]byte {
	if p.left == 0 {
		return nil
	}
	return p.args
}

func (p *repeatPipeline) Advance() { p.left-- }

// benchScriptPipeline runs the script request args in pipelines of 16 on
// a connection's session; one op is one script. It also reports the
// process's CPU time per op (cpu-ns/op), which a loaded machine disturbs
// less than the elapsed time. It runs with GOMAXPROCS 1, as the server
// does with its one event loop (cmd/recached): with a second P idle, each
// hand-over to the script worker would also wake a second thread, a cost
// (about 400 ns per script here) that the server never pays.
func benchScriptPipeline(b *testing.B, args ...string) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	s, _ := blockSession(b, New(DefaultConfig()))
	s.Exec(toArgs("SCRIPT", "LOAD", benchIncrScript))
	s.Exec(toArgs("SCRIPT", "LOAD", benchExistsScript))
	s.Exec(toArgs("SET", "e", "v"))
	in := toArgs(args...)
	p := &repeatPipeline{args: in}
	s.SetPipeline(p)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := processCPU()
	for i := 0; i < b.N; i += 16 {
		s.W.B = s.W.B[:0]
		p.left = min(15, b.N-i-1)
		s.Exec(in)
	}
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
	if got := string(s.W.B); len(got) == 0 || got[0] != ':' {
		b.Fatalf("reply %q", got)
	}
}

// processCPU is the CPU time the process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkEvalSHAPipelinedExists is a script whose redis.call answers a
// small integer (1, the key e exists), as most calls do (EXISTS, SADD,
// HSET, DEL, EXPIRE …).
func BenchmarkEvalSHAPipelinedExists(b *testing.B) {
	benchScriptPipeline(b, "EVALSHA", sha1hex(benchExistsScript), "1", "e")
}
