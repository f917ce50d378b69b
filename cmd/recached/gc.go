package main

import (
	"context"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"syscall"
	"time"
)

// debugSetGC sets the garbage collector's target: a cache's heap is mostly
// live data, so collecting at 50% growth instead of 100% trades a little CPU
// for much less resident memory.
func debugSetGC() { debug.SetGCPercent(50) }

// memLimiter makes the Go runtime's soft memory limit (GOMEMLIMIT) follow
// maxmemory: what the runtime held at start plus maxmemory. The collector
// then runs as often as it must to keep the heap, garbage included, near
// maxmemory: under eviction churn the garbage of evicted keys would
// otherwise grow the process by up to GOGC's half again.
//
// At maxmemory the live heap is close to that limit, and the runtime's
// goal for the heap (the limit less what it holds besides objects, less
// 3%) can fall to the live heap itself: the collector then runs back to
// back, whatever little is allocated. So while maxmemory is set, the
// limit is watched every 100 ms and raised as far as needed to leave the
// collector a sixteenth of the live heap to allocate into, and lowered
// back when that room comes again on its own; it stays between the start
// size plus maxmemory and that plus an eighth of maxmemory, which keeps
// the process within 1.2x maxmemory of its empty size (TestEvictionRSS).
// Both bounds also leave room for what extra reports: the memory of the
// channel history, which maxmemory does not count.
type memLimiter struct {
	base  uint64        // the runtime's Sys at start
	extra func() uint64 // memory held outside maxmemory

	mu       sync.Mutex
	maxmem   uint64 // 0: no limit
	limit    int64  // as last set
	watching bool
}

// goMemoryLimit returns the hook that makes the memory limit follow
// maxmemory, with room for extra. maxmemory 0 lifts the limit; a
// GOMEMLIMIT set in the environment wins.
func goMemoryLimit(extra func() uint64) func(limit uint64) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func(uint64) {}
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	l := &memLimiter{base: m.Sys, extra: extra}
	return l.set
}

// set follows a new maxmemory.
func (l *memLimiter) set(maxmem uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if maxmem > math.MaxInt64/4 {
		maxmem = 0
	}
	l.maxmem = maxmem
	if maxmem == 0 {
		l.limit = math.MaxInt64
		debug.SetMemoryLimit(l.limit)
		return
	}
	l.limit = int64(l.base + maxmem + l.extra())
	debug.SetMemoryLimit(l.limit)
	if !l.watching {
		l.watching = true
		go l.watch()
	}
}

// watch keeps the collector's room while maxmemory is set.
func (l *memLimiter) watch() {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/goal:bytes"}}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for range t.C {
		metrics.Read(s)
		l.mu.Lock()
		if l.maxmem == 0 {
			l.watching = false
			l.mu.Unlock()
			return
		}
		floor := int64(l.base + l.maxmem + l.extra())
		if next := nextLimit(l.limit, floor, floor+int64(l.maxmem/8), s[0].Value.Uint64(), s[1].Value.Uint64()); next != l.limit {
			l.limit = next
			debug.SetMemoryLimit(next)
		}
		l.mu.Unlock()
	}
}

// nextLimit is the memory limit that gives the collector a sixteenth of
// the live heap of room above it, from the current limit and the heap
// goal it gives, within [floor, ceil]. Room up to twice that is left as
// it is, so that the limit does not swing.
func nextLimit(limit, floor, ceil int64, live, goal uint64) int64 {
	room := int64(live / 16)
	want := int64(live) + room
	switch g := int64(goal); {
	case g < want:
		limit += want - g
	case g > want+room:
		limit -= g - want - room
	}
	return min(max(limit, floor), ceil)
}

// Returning memory when idle.
//
// Under GOGC=50 the heap may hold half the live data again in garbage
// before the collector runs, and the pages it frees stay resident: the
// runtime's scavenger only returns what lies above a tenth more than the
// heap goal, which is itself 1.5x the live heap. A burst of writes that
// allocates more than it keeps (a command's arguments, a packed value
// rewritten as it grows) therefore leaves the process up to about 1.6x
// its data, for as long as no more writes come to trigger a collection.
// An idle server has no better use for a core than to give that memory
// back, as Redis's allocator returns its dirty pages in the background:
// once the server has been idle for idleTicks ticks in a row (the heap
// allocated next to nothing and the process used next to no CPU: a
// realtime fan-out writes to a thousand sockets a second on a few
// kilobytes of allocation, and a forced collection plus the page faults
// that take the returned pages back cost it several percent of its CPU),
// and either its free pages or what it has allocated since the last
// reclaim come to more than a sixteenth of the live heap plus a MiB,
// reclaimWhenIdle runs a collection and returns every free page
// (debug.FreeOSMemory). What was allocated since is the bound on the
// garbage: the live heap is only measured by a collection, so data that
// a FLUSHALL or DEL dropped without allocating anything still counts as
// live until one runs. A busy server never pays for it, and an idle one
// pays once: afterwards there is nothing left to reclaim until writes
// come again.

const (
	idleTick  = 250 * time.Millisecond
	idleTicks = 4       // a second without allocation
	idleAlloc = 1 << 18 // bytes a tick may allocate and still be idle
	// idleCPU is the CPU time a tick may use and still be idle: a
	// sixteenth of a core.
	idleCPU = idleTick / 16
)

// reclaimWhenIdle returns the heap's garbage and free pages to the system
// whenever the server turns idle, until ctx ends.
func reclaimWhenIdle(ctx context.Context) {
	s := []metrics.Sample{
		{Name: "/gc/heap/allocs:bytes"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
	}
	t := time.NewTicker(idleTick)
	defer t.Stop()
	var last, reclaimed uint64
	lastCPU := processCPU()
	idle := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(s)
		allocs, cpu := s[0].Value.Uint64(), processCPU()
		if isIdle(allocs-last, cpu-lastCPU) {
			idle++
		} else {
			idle = 0
		}
		last, lastCPU = allocs, cpu
		if idle >= idleTicks && worthReclaiming(s[1].Value.Uint64(), allocs-reclaimed, s[2].Value.Uint64()) {
			debug.FreeOSMemory()
			metrics.Read(s)
			last, reclaimed, lastCPU, idle = s[0].Value.Uint64(), s[0].Value.Uint64(), processCPU(), 0
		}
	}
}

// isIdle reports whether a tick that allocated allocated bytes and used
// cpu of the process's CPU time was an idle one.
func isIdle(allocated uint64, cpu time.Duration) bool {
	return allocated <= idleAlloc && cpu <= idleCPU
}

// processCPU returns the CPU time the process has used, user and system,
// every thread's; 0 when the system does not say.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// worthReclaiming reports whether an idle heap holds enough to give back:
// what it allocated since the last reclaim (at most that much of it can
// have turned to garbage) or its free pages not yet returned, against a
// sixteenth of the live heap plus a MiB.
func worthReclaiming(live, allocated, free uint64) bool {
	return max(allocated, free) > live/16+1<<20
}
