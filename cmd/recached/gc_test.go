package main

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/bench/procstat"
	"github.com/recached/recached/server/servertest"
)

func TestNextLimit(t *testing.T) {
	const mb = 1 << 20
	floor, ceil := int64(40*mb), int64(44*mb)
	cases := []struct {
		name       string
		limit      int64
		live, goal uint64
		want       int64
	}{
		{"goal at the live heap: raised by the room", floor, 32 * mb, 32 * mb, floor + 2*mb},
		{"some room: raised by what is missing", floor, 32 * mb, 33 * mb, floor + mb},
		{"enough room: kept", floor + mb, 32 * mb, 35 * mb, floor + mb},
		{"too much room: lowered", floor + 3*mb, 32 * mb, 38 * mb, floor + mb},
		{"never below the floor", floor, 16 * mb, 24 * mb, floor},
		{"never above the ceiling", floor, 40 * mb, 30 * mb, ceil},
	}
	for _, c := range cases {
		if got := nextLimit(c.limit, floor, ceil, c.live, c.goal); got != c.want {
			t.Errorf("%s: limit %d, want %d", c.name, got, c.want)
		}
	}
}

func TestWorthReclaiming(t *testing.T) {
	const mb = 1 << 20
	cases := []struct {
		name                  string
		live, allocated, free uint64
		want                  bool
	}{
		{"empty heap", 0, 0, 0, false},
		{"a MiB allocated is not enough", 2 * mb, mb, 0, false},
		{"allocated past a sixteenth and a MiB", 16 * mb, 2*mb + 1, 0, true},
		{"free pages count as well", 16 * mb, 0, 2*mb + 1, true},
		{"little of either on a large heap", 1024 * mb, 40 * mb, 40 * mb, false},
		{"a whole data set loaded since", 1024 * mb, 1024 * mb, 0, true},
	}
	for _, c := range cases {
		if got := worthReclaiming(c.live, c.allocated, c.free); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestIsIdle(t *testing.T) {
	cases := []struct {
		name      string
		allocated uint64
		cpu       time.Duration
		want      bool
	}{
		{"nothing allocated, no CPU", 0, 0, true},
		{"a little of both", idleAlloc, idleCPU, true},
		{"allocating", idleAlloc + 1, 0, false},
		// A realtime fan-out to many subscribers allocates a few
		// kilobytes per publication but writes all the time.
		{"busy without allocating", 0, idleTick / 2, false},
	}
	for _, c := range cases {
		if got := isIdle(c.allocated, c.cpu); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestIdleReclaim runs the real binary, fills it with about 40 MB of
// strings, deletes them all and leaves it idle: no write comes to trigger
// a collection, so only the idle reclaim gives the garbage back. The
// resident memory must fall by at least half of what the strings added,
// within 10 s.
func TestIdleReclaim(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	if testing.Short() {
		t.Skip("fills a real server with 40 MB")
	}
	cmd, addr := startBinary(t, build(t), "--appendonly", "no", "--save", "")
	c := servertest.Dial(t, addr)
	empty := procstat.RSS(cmd.Process.Pid)
	const keys, batch = 200000, 1000
	val := strings.Repeat("v", 200)
	for i := 0; i < keys; i += batch {
		var b []byte
		for j := i; j < i+batch; j++ {
			b = append(b, servertest.Encode("SET", "key:"+strconv.Itoa(j), val)...)
		}
		if err := c.Send(b); err != nil {
			t.Fatal(err)
		}
		for range batch {
			if _, err := c.Read(); err != nil {
				t.Fatal(err)
			}
		}
	}
	full := procstat.RSS(cmd.Process.Pid)
	if _, err := c.Do("FLUSHALL", "SYNC"); err != nil {
		t.Fatal(err)
	}
	want := full - (full-empty)/2
	rss := full
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && rss > want; {
		time.Sleep(100 * time.Millisecond)
		rss = procstat.RSS(cmd.Process.Pid)
	}
	t.Logf("RSS empty %.1f MB, filled %.1f MB, idle after FLUSHALL %.1f MB", float64(empty)/1e6, float64(full)/1e6, float64(rss)/1e6)
	if rss > want {
		t.Errorf("RSS %d bytes 10 s after the data was deleted, want at most %d", rss, want)
	}
}
