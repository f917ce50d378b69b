package server

import (
	"fmt"
	"runtime"
	"strconv"
)

// memoryInfo is INFO's memory section. used_memory is the figure eviction
// reads (evict.go): usedBase plus the keyspace's entry sizes, an estimate
// of the resident bytes the dataset costs (keyspace/memory.go); the Go
// runtime's own figures follow it as go_heap_* for comparison.
func (srv *Server) memoryInfo() [][2]string {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	rss := residentBytes()
	used := srv.UsedMemory()
	peak := max(uint64(srv.mem.peak.Load()), used)
	limit := srv.mem.limit.Load()
	dataset := uint64(srv.ks.Used())
	return [][2]string{
		{"used_memory", strconv.FormatUint(used, 10)}, {"used_memory_human", human(used)},
		{"used_memory_rss", strconv.FormatUint(rss, 10)}, {"used_memory_rss_human", human(rss)},
		{"used_memory_peak", strconv.FormatUint(peak, 10)}, {"used_memory_peak_human", human(peak)},
		{"used_memory_peak_perc", fmt.Sprintf("%.2f%%", 100*float64(used)/float64(max(peak, 1)))},
		{"used_memory_overhead", strconv.FormatUint(usedBase, 10)},
		{"used_memory_startup", strconv.FormatUint(usedBase, 10)},
		{"used_memory_dataset", strconv.FormatUint(dataset, 10)},
		{"used_memory_dataset_perc", fmt.Sprintf("%.2f%%", 100*float64(dataset)/float64(max(used, 1)))},
		{"number_of_cached_scripts", strconv.Itoa(srv.scripts.cached())},
		{"total_system_memory", "0"},
		{"maxmemory", strconv.FormatUint(limit, 10)}, {"maxmemory_human", human(limit)},
		{"maxmemory_policy", policyNames[srv.mem.policy.Load()]},
		{"mem_fragmentation_ratio", fmt.Sprintf("%.2f", float64(rss)/float64(max(used, 1)))},
		{"mem_not_counted_for_evict", "0"},
		{"mem_allocator", "go"},
		{"lazyfree_pending_objects", "0"},
		{"lazyfreed_objects", strconv.FormatInt(srv.mem.lazyFreed.Load(), 10)},
		{"go_heap_alloc", strconv.FormatUint(m.HeapAlloc, 10)}, {"go_heap_sys", strconv.FormatUint(m.HeapSys, 10)},
		{"gc_cycles", strconv.FormatUint(uint64(m.NumGC), 10)},
	}
}

// The OBJECT errors when the policy does not track what is asked.
const (
	errNoLFU = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."
	errNoLRU = "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."
)

// cmdObjectIdletime answers the seconds since the key's last access, as
// Redis does only under a policy that is not LFU. It does not count as an
// access.
func cmdObjectIdletime(s *Session) {
	e := s.db.Peek(s.Args[2])
	if e == nil {
		s.W.Null()
		return
	}
	if policyLFU(int(s.srv.mem.policy.Load())) {
		s.W.Error(errNoLRU)
		return
	}
	s.W.Int(int64(s.srv.ks.Idle(e) / 100))
}

// cmdObjectFreq answers the key's LFU counter, decayed to now, under an
// LFU policy. It does not count as an access.
func cmdObjectFreq(s *Session) {
	e := s.db.Peek(s.Args[2])
	if e == nil {
		s.W.Null()
		return
	}
	if !policyLFU(int(s.srv.mem.policy.Load())) {
		s.W.Error(errNoLFU)
		return
	}
	s.W.Int(int64(s.srv.ks.Freq(e)))
}

// CheckParam checks value as CONFIG SET checks the named parameter's and
// returns the form CONFIG GET shows: for flags that set a parameter
// (--maxmemory 2gb).
func CheckParam(name, value string) (string, error) {
	p := paramTable.lookup(name)
	if p == nil {
		return "", fmt.Errorf("unknown parameter %q", name)
	}
	return p.parseValue(value, p.def)
}
