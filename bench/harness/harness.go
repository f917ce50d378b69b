// Package harness holds what the side-by-side benchmark programs share:
// a free loopback port for each server they start, a dial that waits
// for a starting server, and the median and range of the per-round
// ratios they report. Keeping one copy means every program picks ports
// and summarises rounds the same way.
package harness

import (
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// FreePort returns a loopback TCP port nothing listens on at the moment
// of the call, for a server the benchmark is about to start.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// DialWait connects to a server starting on a loopback port, retrying
// every 5 ms until it accepts or limit has passed.
func DialWait(port int, limit time.Duration) (net.Conn, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(limit)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("dialling %s for %v: %w", addr, limit, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Median returns the middle value of v (the upper one of an even count),
// 0 for none. v is not modified.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// Spread formats per-round ratios as "median [lowest-highest]", e.g.
// "0.91x [0.88-0.98]": the median says where the rounds agree, the range
// how much the machine's load moved them.
func Spread(ratios []float64) string {
	if len(ratios) == 0 {
		return "-"
	}
	s := slices.Clone(ratios)
	slices.Sort(s)
	return fmt.Sprintf("%.2fx [%.2f-%.2f]", s[len(s)/2], s[0], s[len(s)-1])
}

// Stop asks a started server to exit with SIGTERM, as an operator would,
// so that it shuts down cleanly, and kills it if it has not exited within
// 10 s. It returns once the process has been waited for.
func Stop(cmd *exec.Cmd) {
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}
