package harness

import (
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

func TestMedianAndSpread(t *testing.T) {
	for _, tc := range []struct {
		in     []float64
		median float64
		spread string
	}{
		{nil, 0, "-"},
		{[]float64{2}, 2, "2.00x [2.00-2.00]"},
		{[]float64{3, 1, 2}, 2, "2.00x [1.00-3.00]"},
		{[]float64{0.9, 1.1, 0.8, 1.0}, 1.0, "1.00x [0.80-1.10]"},
	} {
		in := append([]float64(nil), tc.in...)
		if got := Median(tc.in); got != tc.median {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.median)
		}
		if got := Spread(tc.in); got != tc.spread {
			t.Errorf("Spread(%v) = %q, want %q", tc.in, got, tc.spread)
		}
		for i := range in {
			if in[i] != tc.in[i] {
				t.Fatalf("input reordered: %v, was %v", tc.in, in)
			}
		}
	}
}

func TestFreePortAndDialWait(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DialWait(port, 20*time.Millisecond); err == nil {
		t.Fatalf("dialled port %d with nothing listening", port)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := DialWait(port, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func TestStop(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep binary:", err)
	}
	start := time.Now()
	Stop(cmd)
	if cmd.ProcessState == nil {
		t.Fatal("Stop returned before the process was waited for")
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("SIGTERM did not end sleep (waited %v)", time.Since(start))
	}
}
