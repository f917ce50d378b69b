package main

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// evictMaxMemory is the maxmemory of the eviction row: small enough to
// fill in a second, large enough to hold tens of thousands of keys.
const evictMaxMemory = "32mb"

// evictRows is SET at pipeline 16 into a server that has reached maxmemory
// and evicts with allkeys-lru: both servers are filled past the limit
// first (not measured), so every measured SET of a new key evicts one.
func evictRows(scale int) []row {
	return []row{{test: "set evicting allkeys-lru", clients: 50, pipeline: 16, threads: 1, n: 1000000 / scale, drive: evictingSet}}
}

// evictingSet prepares a server for the eviction row and returns the load:
// redis-benchmark SETs of 100-byte values over a million random keys.
// maxmemory is lifted again when the load ends.
func evictingSet(addr string, n, clients, pipeline int) (func() (int, error), error) {
	cn, err := dialRESP(addr)
	if err != nil {
		return nil, err
	}
	for _, cmd := range [][]string{{"FLUSHALL"}, {"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"}, {"CONFIG", "SET", "maxmemory", evictMaxMemory}} {
		if _, err := cn.do(cmd...); err != nil {
			cn.c.Close()
			return nil, err
		}
	}
	host, port, _ := strings.Cut(addr, ":")
	bench := func(n int) error {
		out, err := exec.Command("redis-benchmark", "-h", host, "-p", port, "-c", strconv.Itoa(clients), "-P", strconv.Itoa(pipeline),
			"-n", strconv.Itoa(n), "-t", "set", "-r", "1000000", "-d", "100", "--csv").CombinedOutput()
		if err != nil {
			return fmt.Errorf("redis-benchmark: %v\n%s", err, out)
		}
		return nil
	}
	for i := 0; ; i++ {
		v, err := cn.do("INFO", "stats")
		if err != nil {
			cn.c.Close()
			return nil, err
		}
		if evicted(v.str) > 0 {
			break
		}
		if i == 20 {
			cn.c.Close()
			return nil, fmt.Errorf("no eviction after filling past maxmemory %s", evictMaxMemory)
		}
		if err := bench(200000); err != nil {
			cn.c.Close()
			return nil, err
		}
	}
	return func() (int, error) {
		defer cn.c.Close()
		err := bench(n)
		if _, e := cn.do("CONFIG", "SET", "maxmemory", "0"); err == nil {
			err = e
		}
		return n, err
	}, nil
}

// evicted reads evicted_keys from INFO stats.
func evicted(info string) int {
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "evicted_keys:"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}
