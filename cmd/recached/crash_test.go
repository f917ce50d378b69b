package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/server/tcp"
	"github.com/recached/recached/snapshot"
)

// The crash tests run the real binary, kill it with SIGKILL at awkward
// moments and check that a restart on the same directory has every write
// that was acknowledged.

// proc is one run of the binary.
type proc struct {
	cmd    *exec.Cmd
	addr   string
	logs   *bytes.Buffer
	mu     *sync.Mutex
	exited chan struct{}
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// lockedWriter lets the test read the logs while the process writes them.
type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// startIn runs the binary on dir and waits until it serves.
func startIn(t *testing.T, bin, dir string, args ...string) *proc {
	t.Helper()
	port, err := tcp.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	all := append([]string{"--port", strconv.Itoa(port), "--ws-port", "0", "--amaquet-port", "0", "--dir", dir, "--save", ""}, args...)
	return startWithConf(t, bin, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), all...)
}

// startWithConf runs the binary with args as given (a configuration file
// may come first) and waits until addr answers.
func startWithConf(t *testing.T, bin, addr string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), addr: addr, logs: &bytes.Buffer{}, mu: &sync.Mutex{}}
	p.cmd.Stdout = lockedWriter{p.mu, p.logs}
	p.cmd.Stderr = p.cmd.Stdout
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	p.exited = exited
	go func() {
		_ = p.cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			t.Fatalf("the server exited at start:\n%s", p.output())
		default:
		}
		if c, err := net.Dial("tcp", p.addr); err == nil {
			c.Close()
			return p
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the server did not listen:\n%s", p.output())
	return nil
}

// kill sends SIGKILL and waits for the process to go.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Kill()
	p.wait(t)
}

// wait waits for the process to exit.
func (p *proc) wait(t *testing.T) {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("the server did not exit:\n%s", p.output())
	}
}

// runFailing runs the binary on dir expecting it to refuse to start, and
// returns its exit code and output.
func runFailing(t *testing.T, bin, dir string) (int, string) {
	t.Helper()
	port, err := tcp.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--ws-port", "0", "--dir", dir)
	done := make(chan struct{})
	var out []byte
	go func() {
		out, err = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the server started on a damaged directory:\n%s", out)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("exit: %v\n%s", err, out)
	}
	return ee.ExitCode(), string(out)
}

// acked records the writes the server acknowledged: for each key, the
// value of the last acknowledged SET.
type acked struct {
	mu   sync.Mutex
	vals map[string]string
	n    atomic.Int64
}

// writers runs n clients that pipeline SETs of their own keys (depth per
// round trip) until stop is closed or the connection fails, recording
// each acknowledged write.
func writers(t *testing.T, addr string, n, depth int, stop <-chan struct{}, a *acked, prefix string) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := 0; w < n; w++ {
		c := servertest.Dial(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; ; round++ {
				select {
				case <-stop:
					return
				default:
				}
				var batch bytes.Buffer
				keys := make([]string, depth)
				for i := range keys {
					// Keys are rewritten every 500 rounds, so that the
					// last acknowledged value is what must survive.
					keys[i] = fmt.Sprintf("%s%d:%d:%d", prefix, w, round%500, i)
					batch.Write(servertest.Encode("SET", keys[i], strconv.Itoa(round)))
				}
				if err := c.Send(batch.Bytes()); err != nil {
					return
				}
				for i := range keys {
					rep, err := c.Read()
					if err != nil {
						return
					}
					if string(rep) != "+OK\r\n" {
						t.Errorf("SET %s: %q", keys[i], rep)
						return
					}
					a.mu.Lock()
					a.vals[keys[i]] = strconv.Itoa(round)
					a.mu.Unlock()
					a.n.Add(1)
				}
			}
		}()
	}
	return &wg
}

// verify checks that the server at addr holds every acknowledged write.
// A key may hold a later value than the acknowledged one (written but not
// acknowledged before the kill), never an earlier one or none.
func verify(t *testing.T, addr string, a *acked) {
	t.Helper()
	c := servertest.Dial(t, addr)
	a.mu.Lock()
	defer a.mu.Unlock()
	keys := make([]string, 0, len(a.vals))
	for k := range a.vals {
		keys = append(keys, k)
	}
	missing := 0
	for start := 0; start < len(keys); start += 500 {
		end := min(start+500, len(keys))
		var batch bytes.Buffer
		for _, k := range keys[start:end] {
			batch.Write(servertest.Encode("GET", k))
		}
		if err := c.Send(batch.Bytes()); err != nil {
			t.Fatal(err)
		}
		for _, k := range keys[start:end] {
			rep, err := c.Read()
			if err != nil {
				t.Fatal(err)
			}
			want, _ := strconv.Atoi(a.vals[k])
			got := -1
			if s := string(rep); strings.HasPrefix(s, "$") {
				if i := strings.Index(s, "\r\n"); i > 0 {
					got, _ = strconv.Atoi(strings.TrimSuffix(s[i+2:], "\r\n"))
				}
			}
			if got < want {
				if missing < 5 {
					t.Errorf("%s: acknowledged %d, found %q", k, want, rep)
				}
				missing++
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d acknowledged keys lost", missing, len(keys))
	}
}

// fill loads n keys quickly through one pipelined connection.
func fill(t *testing.T, addr string, n int) {
	t.Helper()
	c := servertest.Dial(t, addr)
	for start := 0; start < n; start += 1000 {
		var batch bytes.Buffer
		end := min(start+1000, n)
		for i := start; i < end; i++ {
			batch.Write(servertest.Encode("SET", "fill:"+strconv.Itoa(i), strings.Repeat("v", 16)))
		}
		if err := c.Send(batch.Bytes()); err != nil {
			t.Fatal(err)
		}
		for i := start; i < end; i++ {
			if rep, err := c.Read(); err != nil || string(rep) != "+OK\r\n" {
				t.Fatalf("fill: %q %v", rep, err)
			}
		}
	}
}

func dbsize(t *testing.T, addr string) int {
	t.Helper()
	rep, err := servertest.Dial(t, addr).Do("DBSIZE")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(string(rep), ":")))
	return n
}

func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the real binary")
	}
	bin := build(t)

	for _, fsync := range []string{"always", "everysec"} {
		t.Run("kill -9 with appendfsync "+fsync, func(t *testing.T) {
			dir := t.TempDir()
			p := startIn(t, bin, dir, "--appendfsync", fsync)
			// The log is written before every reply: SIGKILL loses no
			// acknowledged write under any policy.
			a := &acked{vals: map[string]string{}}
			stop := make(chan struct{})
			wg := writers(t, p.addr, 4, 10, stop, a, "w")
			deadline := time.Now().Add(60 * time.Second)
			for a.n.Load() < 10000 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			// Kill while the writers are still going.
			p.kill(t)
			close(stop)
			wg.Wait()
			if a.n.Load() < 10000 {
				t.Fatalf("only %d writes acknowledged", a.n.Load())
			}
			p2 := startIn(t, bin, dir, "--appendfsync", fsync)
			verify(t, p2.addr, a)
			t.Logf("%d acknowledged writes survived kill -9", a.n.Load())
		})
	}

	for _, cmd := range []string{"BGSAVE", "BGREWRITEAOF"} {
		t.Run("kill -9 during "+cmd, func(t *testing.T) {
			dir := t.TempDir()
			p := startIn(t, bin, dir, "--appendfsync", "always")
			const preload = 300000
			fill(t, p.addr, preload)
			a := &acked{vals: map[string]string{}}
			stop := make(chan struct{})
			wg := writers(t, p.addr, 2, 10, stop, a, "d")
			c := servertest.Dial(t, p.addr)
			if rep, err := c.Do(cmd); err != nil || !strings.Contains(string(rep), "started") {
				t.Fatalf("%s: %q %v", cmd, rep, err)
			}
			// Kill as soon as some writes raced with the save.
			start := a.n.Load()
			deadline := time.Now().Add(10 * time.Second)
			for a.n.Load() < start+20 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			info, _ := c.Do("INFO", "persistence")
			p.kill(t)
			close(stop)
			wg.Wait()
			inProgress := strings.Contains(string(info), "rdb_bgsave_in_progress:1") || strings.Contains(string(info), "aof_rewrite_in_progress:1")
			t.Logf("killed with the save in progress: %v; %d writes acknowledged", inProgress, a.n.Load())
			p2 := startIn(t, bin, dir, "--appendfsync", "always")
			verify(t, p2.addr, a)
			if n := dbsize(t, p2.addr); n < preload+len(a.vals) {
				t.Errorf("%d keys after restart, want at least %d", n, preload+len(a.vals))
			}
		})
	}

	t.Run("clean shutdown saves", func(t *testing.T) {
		dir := t.TempDir()
		p := startIn(t, bin, dir, "--appendonly", "no", "--save", "3600 1")
		fill(t, p.addr, 1000)
		if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		p.wait(t)
		if p.cmd.ProcessState.ExitCode() != 0 {
			t.Fatalf("exit %v:\n%s", p.cmd.ProcessState, p.output())
		}
		p2 := startIn(t, bin, dir, "--appendonly", "no")
		if n := dbsize(t, p2.addr); n != 1000 {
			t.Errorf("%d keys after a clean restart", n)
		}
		if !strings.Contains(p2.output(), "loaded 1000 keys") {
			t.Errorf("no load line:\n%s", p2.output())
		}
	})
}

// TestDamagedFiles starts the binary on damaged directories: a torn log
// tail is cut with a warning, anything else stops the start with the file
// and the offset, and "recached check --fix" repairs a log.
func TestDamagedFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := build(t)
	// A directory with a snapshot and a log of a few records.
	base := t.TempDir()
	p := startIn(t, bin, base, "--appendfsync", "always")
	c := servertest.Dial(t, p.addr)
	for i := 0; i < 5; i++ {
		c.Do("SET", "snap"+strconv.Itoa(i), "v")
	}
	if rep, _ := c.Do("SAVE"); string(rep) != "+OK\r\n" {
		t.Fatalf("SAVE: %q", rep)
	}
	for i := 0; i < 5; i++ {
		c.Do("SET", "log"+strconv.Itoa(i), strings.Repeat("v", 50))
	}
	p.kill(t)
	logName := snapshot.LogName(1)
	files := map[string][]byte{}
	for _, n := range []string{snapshot.SnapshotName, logName} {
		b, err := os.ReadFile(filepath.Join(base, n))
		if err != nil {
			t.Fatal(err)
		}
		files[n] = b
	}
	variant := func(t *testing.T, change func(files map[string][]byte)) string {
		dir := t.TempDir()
		fs := map[string][]byte{}
		for n, b := range files {
			fs[n] = append([]byte(nil), b...)
		}
		change(fs)
		for n, b := range fs {
			if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}

	t.Run("torn log tail", func(t *testing.T) {
		dir := variant(t, func(fs map[string][]byte) { fs[logName] = fs[logName][:len(fs[logName])-10] })
		p := startIn(t, bin, dir)
		if n := dbsize(t, p.addr); n != 9 {
			t.Errorf("%d keys, want 9", n)
		}
		if !strings.Contains(p.output(), "cut short") {
			t.Errorf("no warning:\n%s", p.output())
		}
	})
	for _, tc := range []struct {
		name   string
		change func(fs map[string][]byte)
		want   []string
	}{
		{"flipped log byte", func(fs map[string][]byte) { fs[logName][len(fs[logName])/2] ^= 0x40 }, []string{logName, "byte offset"}},
		{"flipped snapshot byte", func(fs map[string][]byte) { fs[snapshot.SnapshotName][40] ^= 0x40 }, []string{snapshot.SnapshotName, "byte offset"}},
		{"empty snapshot", func(fs map[string][]byte) { fs[snapshot.SnapshotName] = nil }, []string{snapshot.SnapshotName, "empty file"}},
		{"empty log", func(fs map[string][]byte) { fs[logName] = nil }, []string{logName, "empty file"}},
		{"future version", func(fs map[string][]byte) {
			// The header array's first element is the version (fixint 1).
			fs[snapshot.SnapshotName][len(snapshot.SnapshotMagic)+1] = 99
		}, []string{snapshot.SnapshotName, "unsupported format version 99"}},
		{"missing log generation", func(fs map[string][]byte) {
			fs[snapshot.LogName(2)] = fs[logName]
			delete(fs, logName)
		}, []string{"generation 1 is missing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := variant(t, tc.change)
			code, out := runFailing(t, bin, dir)
			if code != 1 {
				t.Errorf("exit code %d", code)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "panic") {
				t.Errorf("panic:\n%s", out)
			}
		})
	}

	t.Run("log of the snapshot's generation missing", func(t *testing.T) {
		// dump.rcd of generation 1 was saved with appendonly.1.aof: starting
		// without the log would drop its acknowledged writes.
		dir := variant(t, func(fs map[string][]byte) { delete(fs, logName) })
		path := filepath.Join(dir, logName)
		code, out := runFailing(t, bin, dir)
		if code != 1 || !strings.Contains(out, path+" is missing") || !strings.Contains(out, "recached check --fix "+path) {
			t.Fatalf("exit code %d, output:\n%s", code, out)
		}
		// The documented way out: create the log empty, losing its writes.
		if out, err := exec.Command(bin, "check", "--fix", path).CombinedOutput(); err != nil || !strings.Contains(string(out), "created empty") {
			t.Fatalf("check --fix: %v\n%s", err, out)
		}
		p := startIn(t, bin, dir)
		if n := dbsize(t, p.addr); n != 5 {
			t.Errorf("%d keys, want the snapshot's 5", n)
		}
	})

	t.Run("check reports a damaged header", func(t *testing.T) {
		for _, tc := range []struct {
			name, file string
			data       func(fs map[string][]byte) []byte
			want       string
		}{
			{"empty snapshot", snapshot.SnapshotName, func(map[string][]byte) []byte { return nil }, "empty file"},
			{"bad magic", logName, func(fs map[string][]byte) []byte { return append([]byte("X"), fs[logName][1:]...) }, "bad magic"},
			{"snapshot cut at byte 20", snapshot.SnapshotName, func(fs map[string][]byte) []byte { return fs[snapshot.SnapshotName][:20] }, "corrupt at byte offset"},
			{"log cut at byte 20", logName, func(fs map[string][]byte) []byte { return fs[logName][:20] }, "corrupt at byte offset"},
		} {
			dir := variant(t, func(fs map[string][]byte) { fs[tc.file] = tc.data(fs) })
			path := filepath.Join(dir, tc.file)
			out, err := exec.Command(bin, "check", path).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Errorf("%s: check: %v\n%s", tc.name, err, out)
			}
			for _, w := range []string{path, tc.want, "header is damaged"} {
				if !strings.Contains(string(out), w) {
					t.Errorf("%s: output lacks %q:\n%s", tc.name, w, out)
				}
			}
		}
	})

	t.Run("check --fix", func(t *testing.T) {
		dir := variant(t, func(fs map[string][]byte) { fs[logName][len(fs[logName])-30] ^= 0x01 })
		path := filepath.Join(dir, logName)
		out, err := exec.Command(bin, "check", path).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "--fix") {
			t.Fatalf("check: %v\n%s", err, out)
		}
		if out, err := exec.Command(bin, "check", "--fix", path).CombinedOutput(); err != nil || !strings.Contains(string(out), "fixed") {
			t.Fatalf("check --fix: %v\n%s", err, out)
		}
		if out, err := exec.Command(bin, "check", filepath.Join(dir, snapshot.SnapshotName)).CombinedOutput(); err != nil || !strings.Contains(string(out), "checksum verified") {
			t.Fatalf("check snapshot: %v\n%s", err, out)
		}
		p := startIn(t, bin, dir)
		if n := dbsize(t, p.addr); n != 9 {
			t.Errorf("%d keys after --fix, want 9", n)
		}
	})
}
