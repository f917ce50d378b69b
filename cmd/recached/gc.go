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
// limit (GOMEMLIMIT) follow maxmemory: what the runtime held at start plus
// maxmemory. The collector then runs as often as it must to
// keep the heap, garbage included, near maxmemory: under eviction churn
// the garbage of evicted keys would otherwise grow the process by up to
// GOGC's half again. maxmemory 0 lifts the limit; a GOMEMLIMIT set in the
// environment wins.
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
		debug.SetMemoryLimit(int64(base + limit))
	}
}
