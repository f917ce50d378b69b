package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/recached/recached/server/servertest"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/tcp"
)

// chaosWrites is the number of writes a chaos run makes.
const chaosWrites = 10000

// chaosPlan describes one chaos run: the client under test writes through
// url while the run breaks its connection at the kill points and calls
// restart (if any) halfway through.
type chaosPlan struct {
	url     string
	backend string // URL of a client that reads the final state
	kills   int    // how many times to break the connection
	restart func()
	prefix  string
}

// runChaos makes chaosWrites DEDUP-wrapped writes, INCRs over four counters
// and APPENDs of unique tokens to two strings, with up to 500 in flight,
// breaking the connection at random points. Every write must resolve
// without error, and at the end every counter must equal the number of
// INCRs made on it and every string must hold each of its tokens exactly
// once: nothing lost, nothing applied twice.
func runChaos(t *testing.T, plan chaosPlan) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("chaos seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>7))
	tracker := &connTracker{}
	start := time.Now()
	c := newClient(t, Options{URL: plan.url, NetDial: tracker.dial, OutboxSaveInterval: -1,
		OnState:    func(e Event) { t.Logf("%v: %v (retry in %v, %v)", time.Since(start), e.State, e.Retry, e.Err) },
		MinBackoff: 2 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	kill := make(map[int]bool)
	for len(kill) < plan.kills {
		kill[rng.IntN(chaosWrites)] = true
	}
	counters := make([]string, 4)
	for i := range counters {
		counters[i] = plan.prefix + "c" + strconv.Itoa(i)
	}
	strs := []string{plan.prefix + "a0", plan.prefix + "a1"}
	wantCount := make([]int, len(counters))
	wantTokens := make([][]string, len(strs))
	const window = 500
	ring := make([]*Write, window)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	wait := func(w *Write) {
		if w == nil {
			return
		}
		if _, err := w.Wait(ctx); err != nil {
			t.Fatalf("write %d %q: %v", w.ID&0xffffffff, w.Args, err)
		}
	}
	owed, killed := 0, 0
	for i := range chaosWrites {
		if kill[i] {
			owed++
		}
		// A kill point reached while the broken connection is not yet
		// replaced is carried to the next write.
		if owed > 0 && tracker.kill(rng.IntN(2) == 0) {
			owed--
			killed++
		}
		if plan.restart != nil && i == chaosWrites/2 {
			plan.restart()
		}
		wait(ring[i%window])
		if r := rng.IntN(5); r < 4 {
			wantCount[r]++
			ring[i%window] = c.Write("INCR", counters[r])
		} else {
			s := rng.IntN(len(strs))
			tok := "t" + strconv.Itoa(i)
			wantTokens[s] = append(wantTokens[s], tok)
			ring[i%window] = c.Write("APPEND", strs[s], tok+",")
		}
	}
	for _, w := range ring {
		wait(w)
	}
	st := c.Stats()
	t.Logf("%d connections broken, %d made, %d sessions, %d writes acknowledged by +DUP", killed, tracker.count(), st.Connects, st.Dups)
	if killed == 0 && plan.kills > 0 {
		t.Errorf("no connection was broken")
	}
	if st.Dropped != 0 || st.Outbox != 0 {
		t.Errorf("stats %+v", st)
	}
	backend := newClient(t, Options{URL: plan.backend})
	for i, k := range counters {
		v, err := backend.Do(ctx, "GET", k)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := strconv.Atoi(v.Text()); n != wantCount[i] {
			t.Errorf("%s = %q, want %d", k, v.Text(), wantCount[i])
		}
	}
	for i, k := range strs {
		v, err := backend.Do(ctx, "GET", k)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Split(strings.TrimSuffix(v.Text(), ","), ",")
		if !slices.Equal(got, wantTokens[i]) {
			seen := map[string]int{}
			for _, g := range got {
				seen[g]++
			}
			var dup, missing []string
			for _, w := range wantTokens[i] {
				if seen[w] == 0 {
					missing = append(missing, w)
				}
				if seen[w] > 1 {
					dup = append(dup, w)
				}
			}
			t.Errorf("%s: %d tokens, want %d; duplicated %v, missing %v", k, len(got), len(wantTokens[i]), dup, missing)
		}
	}
}

// TestChaos breaks the client's connection 25 times during 10 000 writes,
// against recached in-process, over both transports.
func TestChaos(t *testing.T) {
	s := startServer(t, server.Config{})
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			runChaos(t, chaosPlan{url: s.url(tr), backend: s.url("tcp"), kills: 25, prefix: "chaos:" + tr + ":"})
		})
	}
}

// recachedBinary builds cmd/recached once per test binary run into dir.
func recachedBinary(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	bin := filepath.Join(t.TempDir(), "recached")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/recached")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/recached: %v\n%s", err, out)
	}
	return bin
}

// process is a recached process on fixed ports and a data directory:
// started with conf as its configuration file when set (CONFIG REWRITE
// needs one), then the flags, then extra.
type process struct {
	t              *testing.T
	bin, dir       string
	port, wsPort   int
	conf           string
	extra          []string
	cmd            *exec.Cmd
	out            servertest.SafeBuffer
	serveWebSocket bool
}

func (p *process) start() {
	p.t.Helper()
	var args []string
	if p.conf != "" {
		args = append(args, p.conf)
	}
	args = append(args, "--bind", "127.0.0.1", "--port", strconv.Itoa(p.port),
		"--ws-port", strconv.Itoa(p.wsPort), "--dir", p.dir, "--appendonly", "yes",
		"--appendfsync", "always", "--save", "")
	p.cmd = exec.Command(p.bin, append(args, p.extra...)...)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port))
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(2 * time.Second))
			_, _ = c.Write([]byte("PING\r\n"))
			buf := make([]byte, 7)
			n, _ := c.Read(buf)
			c.Close()
			if string(buf[:n]) == "+PONG\r\n" {
				break
			}
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("recached did not start:\n%s", p.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if res, err := http.Get("http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(p.wsPort)) + "/healthz"); err == nil {
		res.Body.Close()
		p.serveWebSocket = res.StatusCode == http.StatusOK
	}
}

// kill ends the process with SIGKILL: no shutdown snapshot, only what the
// append-only log made durable survives.
func (p *process) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
}

// TestChaosRestart is the chaos run against the recached binary with the
// append-only log fsynced on every write, killed with SIGKILL and restarted
// halfway through: acknowledged writes and the DEDUP marks must survive, so
// that the replay after the restart applies each write exactly once.
func TestChaosRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the recached binary")
	}
	bin := recachedBinary(t)
	help, _ := exec.Command(bin, "--help").CombinedOutput()
	if !bytes.Contains(help, []byte("-appendonly")) || !bytes.Contains(help, []byte("-appendfsync")) {
		t.Skipf("the recached binary has no --appendonly/--appendfsync flags yet:\n%s", help)
	}
	port, err1 := tcp.FreePort()
	wsPort, err2 := tcp.FreePort()
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	p := &process{t: t, bin: bin, dir: t.TempDir(), port: port, wsPort: wsPort}
	p.start()
	t.Cleanup(p.kill)
	url := fmt.Sprintf("tcp://127.0.0.1:%d", port)
	runs := []string{url}
	if p.serveWebSocket {
		runs = append(runs, fmt.Sprintf("ws://127.0.0.1:%d/", wsPort))
	} else {
		t.Logf("the binary serves no WebSocket bridge on --ws-port: restart run over TCP only")
	}
	for i, u := range runs {
		t.Run(u[:strings.Index(u, ":")], func(t *testing.T) {
			runChaos(t, chaosPlan{url: u, backend: url, kills: 10, prefix: "restart" + strconv.Itoa(i) + ":",
				restart: func() {
					p.kill()
					p.start()
				}})
		})
	}
	if t.Failed() {
		t.Logf("recached output:\n%s", p.out.String())
	}
	_ = os.RemoveAll(p.dir)
}
