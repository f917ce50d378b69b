package server_test

import (
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/recached/recached/bench/procstat"
	"github.com/recached/recached/server/servertest"
)

// TestEvictionRSS runs the real binary with maxmemory 32mb under
// allkeys-lru, writes three times as much, and checks that the process's
// resident memory (VmRSS) stays within 1.2x maxmemory plus what the empty
// server held. It is a behavioural check with a generous bound (eviction
// and the Go memory limit keep the process near maxmemory), not a
// measurement; the ratio of used_memory to RSS growth is measured by hand
// (README, "Memory").
func TestEvictionRSS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	if testing.Short() {
		t.Skip("fills a real server with 100 MB")
	}
	if raceDetector {
		// The unit run checks it; under -race every package's tests run
		// at once, and the collector of the process measured falls behind
		// for want of CPU, not of memory.
		t.Skip("measures a process's memory, not races")
	}
	const limit = 32 << 20
	bin := servertest.BuildRecached(t)
	port := servertest.FreePort(t)
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--ws-port", "0", "--amaquet-port", "0", "--realtime-port", "0",
		"--appendonly", "no", "--save", "", "--dir", t.TempDir(), "--maxmemory", "32mb", "--maxmemory-policy", "allkeys-lru")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for i := 0; ; i++ {
		nc, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			nc.Close()
			break
		}
		if i == 400 {
			t.Fatalf("recached did not start: %v", err)
		}
		time.Sleep(25 * time.Millisecond)
	}
	c := servertest.Dial(t, addr)
	empty := procstat.RSS(cmd.Process.Pid)
	n := 3 * limit / 300 // keys of about 300 counted bytes each
	peak := int64(0)
	evWrite(t, c, "k:", 0, n, nil, func(int) { peak = max(peak, procstat.RSS(cmd.Process.Pid)) })
	rss := procstat.RSS(cmd.Process.Pid)
	bound := limit*6/5 + empty
	t.Logf("empty RSS %.1f MB, after writing %d keys %.1f MB (peak %.1f MB), bound %.1f MB; used_memory %d, evicted %d",
		float64(empty)/1e6, n, float64(rss)/1e6, float64(peak)/1e6, float64(bound)/1e6, evInfoInt(t, c, "used_memory"), evInfoInt(t, c, "evicted_keys"))
	if peak > bound {
		t.Errorf("RSS peaked at %d bytes, over 1.2x maxmemory plus the empty server's %d", peak, bound)
	}
	if evInfoInt(t, c, "evicted_keys") == 0 {
		t.Error("nothing evicted")
	}
}
