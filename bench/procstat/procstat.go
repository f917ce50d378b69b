// Package procstat reads a process's CPU time and resident memory from
// /proc, for the benchmarks that compare servers by CPU per request.
package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// TicksPerSecond is USER_HZ on Linux: the unit of CPUTicks.
const TicksPerSecond = 100

// CPUTicks returns the process's utime+stime in clock ticks (0 when it
// cannot be read).
func CPUTicks(pid int) int64 { return statSum(pid, 11, 12) }

// CPUTicksWithChildren is CPUTicks plus the CPU time of the process's
// children it has waited for (cutime+cstime): redis-server's forked
// children (a diskless full sync's image) count for it.
func CPUTicksWithChildren(pid int) int64 { return statSum(pid, 11, 12, 13, 14) }

// statSum adds fields of /proc/PID/stat, counted from the one after the
// command name's parenthesis (0 when the file cannot be read).
func statSum(pid int, fields ...int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	var n int64
	for _, i := range fields {
		if i >= len(f) {
			return 0
		}
		v, _ := strconv.ParseInt(f[i], 10, 64)
		n += v
	}
	return n
}

// NsPer converts a CPU time in ticks to nanoseconds per one of n units.
func NsPer(ticks int64, n int) float64 {
	return float64(ticks) * 1e9 / TicksPerSecond / float64(n)
}

// RSS returns the process's resident set size in bytes (0 when it cannot
// be read).
func RSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// WriteCalls returns the number of write system calls (write, writev,
// sendmsg and their kin) the process has made, from /proc/PID/io's syscw
// (0 when it cannot be read): the benchmarks report writes per delivery,
// what batching saves.
func WriteCalls(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "syscw: "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// ContextSwitches returns the context switches, voluntary and not, of every
// thread the process has now (from /proc/PID/task/*/status; 0 when they
// cannot be read). A server that wakes threads of its own besides the one
// serving (a runtime handing its processor to another thread while the
// event loop waits) shows it here, where CPU time alone is noisy.
func ContextSwitches(pid int) int64 {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0
	}
	var n int64
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, t.Name()))
		if err != nil {
			continue // the thread has exited
		}
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				c, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				n += c
			}
		}
	}
	return n
}
