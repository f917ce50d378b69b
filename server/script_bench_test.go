package server

import "testing"

const benchIncrScript = "return redis.call('incr',KEYS[1])"

// BenchmarkEvalIncr is redis-benchmark's EVAL row in process: the body is
// hashed and found in the script cache on every call.
func BenchmarkEvalIncr(b *testing.B) {
	benchExec(b, nil, "EVAL", benchIncrScript, "1", "k")
}

// BenchmarkEvalSHAIncr is the EVALSHA row of make bench in process.
func BenchmarkEvalSHAIncr(b *testing.B) {
	benchExec(b, []string{"SCRIPT", "LOAD", benchIncrScript}, "EVALSHA", sha1hex(benchIncrScript), "1", "k")
}
