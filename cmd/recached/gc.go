package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
)

// debugSetGC sets the garbage collector's target: a cache's heap is mostly
// live data, so collecting at 50% growth instead of 100% trades a little CPU
// for much less resident memory.
func debugSetGC() { debug.SetGCPercent(50) }

// goMemoryLimit returns the hook that makes the Go runtime's soft memory
// limit (GOMEMLIMIT) follow maxmemory: the limit is maxmemory plus a tenth
// plus what the runtime held at start, and never less than 64 MiB over
// that, so that the collector keeps the resident memory near maxmemory
// when garbage piles up (eviction churn) without collecting continuously
// at a tiny maxmemory. maxmemory 0 lifts the limit. A GOMEMLIMIT set in
// the environment wins.
func goMemoryLimit() func(limit uint64) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func(uint64) {}
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	base := m.Sys
	return func(limit uint64) {
		if limit == 0 || limit > math.MaxInt64/2 {
			debug.SetMemoryLimit(math.MaxInt64)
			return
		}
		debug.SetMemoryLimit(int64(base + max(limit+limit/10, 64<<20)))
	}
}
