package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/server/tcp"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr bool
		check   func(t *testing.T, out string)
	}{
		{args: []string{"--port", "7000", "--ws-port", "0", "--databases", "4", "--appendfsync", "always"}},
		{args: []string{"--nosuchflag"}, wantErr: true, check: func(t *testing.T, out string) {
			if !strings.Contains(out, "Usage: recached") || !strings.Contains(out, "--port") && !strings.Contains(out, "-port") {
				t.Errorf("usage text missing: %q", out)
			}
		}},
		{args: []string{"--appendfsync", "sometimes"}, wantErr: true},
		{args: []string{"--appendonly", "maybe"}, wantErr: true},
		{args: []string{"--databases", "0"}, wantErr: true},
		{args: []string{"--save", "10"}, wantErr: true},
		{args: []string{"extra"}, wantErr: true},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		cfg, err := parseFlags(tt.args, &out)
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: err %v", tt.args, err)
		}
		if tt.check != nil {
			tt.check(t, out.String())
		}
		if !tt.wantErr && (cfg.Port != 7000 || cfg.WSPort != 0 || cfg.Databases != 4 || cfg.AppendFsync != "always") {
			t.Errorf("%q: cfg %+v", tt.args, cfg)
		}
	}
	var out bytes.Buffer
	if _, err := parseFlags([]string{"--help"}, &out); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "requirepass") {
		t.Errorf("--help: %v %q", err, out.String())
	}
}

// TestProcsFollowLoops checks that io-threads or --loops above one gives
// each event loop a processor, up to the cores, unless --procs is given;
// the configured loops stay as given.
func TestProcsFollowLoops(t *testing.T) {
	cores := runtime.NumCPU()
	two := min(2, cores)
	tests := []struct {
		args         []string
		loops, procs int
	}{
		{nil, 1, 1},
		{[]string{"--loops", "2"}, 2, two},
		{[]string{"--io-threads", "2"}, 2, two},
		{[]string{"--io-threads", "128"}, 128, cores},
		{[]string{"--loops", "2", "--procs", "1"}, 2, 1},
		{[]string{"--procs", "1", "--io-threads", "2"}, 2, 1},
		{[]string{"--loops", "2", "--procs", "0"}, 2, 0},
	}
	for _, tt := range tests {
		cfg, err := parseFlags(tt.args, io.Discard)
		if err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		if cfg.Loops != tt.loops || cfg.Procs != tt.procs {
			t.Errorf("%q: loops %d procs %d, want %d and %d", tt.args, cfg.Loops, cfg.Procs, tt.loops, tt.procs)
		}
	}
	procs := runtime.GOMAXPROCS(0)
	for _, c := range []struct{ loops, want int }{{0, 1}, {1, 1}, {procs, procs}, {procs + 3, procs}} {
		if got := loopsFor(c.loops); got != c.want {
			t.Errorf("loopsFor(%d) with %d processors: %d, want %d", c.loops, procs, got, c.want)
		}
	}
}

// TestLoopsHeldToProcessors runs the binary with one processor and
// io-threads 2: it serves with one event loop, as INFO says, while CONFIG
// GET keeps the configured two.
func TestLoopsHeldToProcessors(t *testing.T) {
	bin := build(t)
	t.Setenv("GOMAXPROCS", "1")
	_, addr := startBinary(t, bin, "--realtime-port", "0", "--io-threads", "2")
	c := servertest.Dial(t, addr)
	info, err := c.Do("INFO", "server")
	if err != nil || !strings.Contains(string(info), "recached_event_loops:1\r\n") {
		t.Errorf("INFO server: want recached_event_loops:1 in %q (%v)", info, err)
	}
	got, err := c.Do("CONFIG", "GET", "io-threads")
	if want := "*2\r\n$10\r\nio-threads\r\n$1\r\n2\r\n"; err != nil || string(got) != want {
		t.Errorf("CONFIG GET io-threads: %q (%v), want %q", got, err, want)
	}
}

// build compiles the binary once per test run.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "recached")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startBinary runs the real binary on free ports and waits for PING.
func startBinary(t *testing.T, bin string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	port, err := tcp.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	all := append([]string{"--port", strconv.Itoa(port), "--ws-port", "0", "--amaquet-port", "0", "--dir", t.TempDir()}, args...)
	cmd := exec.Command(bin, all...)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return cmd, addr
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("binary did not listen; logs:\n%s", logs.String())
	return nil, ""
}

// waitExit waits up to 10 s for the process and returns its exit code.
func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(10 * time.Second):
		t.Fatal("process did not exit within 10s")
		return -1
	}
}

func TestBinaryLifecycle(t *testing.T) {
	bin := build(t)

	t.Run("unknown flag exits 2", func(t *testing.T) {
		out, err := exec.Command(bin, "--bogus").CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "Usage") {
			t.Fatalf("exit %v, output %q", err, out)
		}
	})

	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, addr := startBinary(t, bin)
			c := servertest.Dial(t, addr)
			if rep, err := c.Do("SET", "k", "v"); err != nil || string(rep) != "+OK\r\n" {
				t.Fatalf("SET: %q %v", rep, err)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if code := waitExit(t, cmd); code != 0 {
				t.Fatalf("exit code %d", code)
			}
		})
	}

	t.Run("SHUTDOWN", func(t *testing.T) {
		cmd, addr := startBinary(t, bin)
		c := servertest.Dial(t, addr)
		if err := c.Send(servertest.Encode("SHUTDOWN")); err != nil {
			t.Fatal(err)
		}
		if code := waitExit(t, cmd); code != 0 {
			t.Fatalf("exit code %d", code)
		}
	})
}

// TestHistoryMaxMemoryFlag: --realtime-history-max-memory takes a byte
// count as redis.conf writes one, 0 for no bound, and refuses anything
// else.
func TestHistoryMaxMemoryFlag(t *testing.T) {
	tests := []struct {
		args []string
		want int64
		ok   bool
	}{
		{nil, server.DefaultHistoryMaxMemory, true},
		{[]string{"--realtime-history-max-memory", "64mb"}, 64 << 20, true},
		{[]string{"--realtime-history-max-memory", "1000"}, 1000, true},
		{[]string{"--realtime-history-max-memory", "0"}, 0, true},
		{[]string{"--realtime-history-max-memory", "-1"}, 0, false},
		{[]string{"--realtime-history-max-memory", "lots"}, 0, false},
	}
	for _, tt := range tests {
		cfg, err := parseFlags(tt.args, io.Discard)
		if (err == nil) != tt.ok {
			t.Fatalf("%q: error %v, want ok %v", tt.args, err, tt.ok)
		}
		if tt.ok && cfg.RealtimeHistoryMaxMemory != tt.want {
			t.Errorf("%q: %d, want %d", tt.args, cfg.RealtimeHistoryMaxMemory, tt.want)
		}
	}
}
