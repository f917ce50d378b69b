package realtime

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/sync/realtime/wire"
)

// proc is a recached process built from this tree.
type proc struct {
	t        *testing.T
	bin, dir string
	keys     string
	rt, resp int
	cmd      *exec.Cmd
}

// buildBinary builds cmd/recached into the test's temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "recached")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/recached")
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// start runs the binary on dir with extra flags and waits until its
// realtime port answers.
func (b *proc) start(extra ...string) {
	t := b.t
	t.Helper()
	b.rt, b.resp = freePort(t), freePort(t)
	args := append([]string{
		"--port", strconv.Itoa(b.resp), "--ws-port", "0", "--amaquet-port", "0",
		"--realtime-port", strconv.Itoa(b.rt), "--api-keys", b.keys, "--dir", b.dir,
	}, extra...)
	b.cmd = exec.Command(b.bin, args...)
	b.cmd.Stdout, b.cmd.Stderr = os.Stderr, os.Stderr
	if !testing.Verbose() {
		b.cmd.Stdout, b.cmd.Stderr = nil, nil
	}
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd := b.cmd
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", b.rt)
	waitFor(t, "the realtime port", func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// kill ends the process with SIGKILL: no shutdown work runs.
func (b *proc) kill() {
	b.t.Helper()
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		b.t.Fatal(err)
	}
	_ = b.cmd.Wait()
}

func (b *proc) addr() string { return "127.0.0.1:" + strconv.Itoa(b.rt) }

func newBinary(t *testing.T) *proc {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.json")
	if err := os.WriteFile(keys, []byte(testKeys), 0o600); err != nil {
		t.Fatal(err)
	}
	return &proc{t: t, bin: buildBinary(t), dir: dir, keys: keys}
}

// TestHistorySurvivesSIGKILL: under --appendfsync always, every Publish
// acknowledged before a SIGKILL is in the history after the restart, and
// rewind delivers it, in order.
func TestHistorySurvivesSIGKILL(t *testing.T) {
	b := newBinary(t)
	b.start("--appendfsync", "always", "--save", "")
	c, err := dialClient(t, b.addr(), keyQuery("k3"))
	if err != nil {
		t.Fatal(err)
	}
	c.expect(wire.Connected, nil)
	const n = 60
	for i := 0; i < n; i++ {
		c.request(pub(strconv.Itoa(i), "durable", "m", i))
	}
	// Unacknowledged publishes may be lost, acknowledged ones not: these
	// race the kill.
	for i := n; i < n+20; i++ {
		c.send(map[string]any{"op": wire.Publish, "channel": "durable", "name": "m", "data": i})
	}
	b.kill()

	b.start("--appendfsync", "always", "--save", "")
	c, err = dialClient(t, b.addr(), keyQuery("k3"))
	if err != nil {
		t.Fatal(err)
	}
	c.expect(wire.Connected, nil)
	c.send(map[string]any{"op": wire.Subscribe, "id": "s", "channel": "durable", "rewind": 100})
	c.expect(wire.Ack, map[string]any{"id": "s"})
	var got []int
	for {
		f := c.next()
		if f.op() == wire.Heartbeat {
			break
		}
		if f.op() != wire.Message || f.str("name") != "m" {
			t.Fatalf("frame %v", f)
		}
		got = append(got, f.num("data"))
		if len(got) == 1 {
			c.send(map[string]any{"op": wire.Heartbeat, "id": "end"}) // marks the end of the history
		}
	}
	if len(got) < n {
		t.Fatalf("history after SIGKILL has %d messages, want at least the %d acknowledged", len(got), n)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("history %v: message %d is %d", got, i, v)
		}
	}
}

// TestBinaryFlags: --realtime-max-conns-per-key reaches the listener, and
// --realtime-port 0 disables it.
func TestBinaryFlags(t *testing.T) {
	b := newBinary(t)
	b.start("--realtime-max-conns-per-key", "1", "--appendonly", "no", "--save", "")
	c, err := dialClient(t, b.addr(), keyQuery("k1"))
	if err != nil {
		t.Fatal(err)
	}
	c.expect(wire.Connected, nil)
	d, err := dialClient(t, b.addr(), keyQuery("k1"))
	if err != nil {
		t.Fatal(err)
	}
	d.expect(wire.Nack, map[string]any{"code": codeTooMany})
	d.expectClose(websocket.CloseTryAgainLater)
	b.kill()

	// With --realtime-port 0 the server starts without the listener.
	port := freePort(t)
	var out servertest.SafeBuffer
	cmd := exec.Command(b.bin, "--port", strconv.Itoa(port), "--ws-port", "0", "--amaquet-port", "0", "--realtime-port", "0", "--dir", b.dir, "--appendonly", "no", "--save", "")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	waitFor(t, "the RESP port", func() bool { return strings.Contains(out.String(), "RESP listening") })
	if strings.Contains(out.String(), "realtime listening") {
		t.Fatalf("--realtime-port 0 started the listener:\n%s", out.String())
	}
}
