package amaquet

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/server/tcp"
)

// The recached binary, built once for the package's tests.
var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func recachedBin(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "amaquet-test-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "recached")
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/recached")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/recached: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// proc is a recached process serving RESP and Amaquet on free loopback
// ports, restartable on the same ports and directory.
type proc struct {
	t          testing.TB
	bin, dir   string
	args       []string
	port       int // RESP
	aport      int // Amaquet
	cmd        *exec.Cmd
	out        *servertest.SafeBuffer
	Addr, RESP string
}

// startProc starts recached with extra flags.
func startProc(t testing.TB, extra ...string) *proc {
	t.Helper()
	p := &proc{t: t, bin: recachedBin(t), dir: t.TempDir(), args: extra}
	var err error
	if p.port, err = tcp.FreePort(); err != nil {
		t.Fatal(err)
	}
	if p.aport, err = tcp.FreePort(); err != nil {
		t.Fatal(err)
	}
	p.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(p.aport))
	p.RESP = net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port))
	p.start()
	t.Cleanup(p.kill)
	return p
}

func (p *proc) start() {
	p.t.Helper()
	args := append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(p.port), "--amaquet-port", strconv.Itoa(p.aport),
		"--ws-port", "0", "--realtime-port", "0", "--dir", p.dir, "--save", "", "--appendonly", "no"}, p.args...)
	p.out = &servertest.SafeBuffer{}
	p.cmd = exec.Command(p.bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		p.t.Fatalf("start recached: %v", err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", p.Addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.t.Fatalf("recached did not listen on %s within 15s; output:\n%s", p.Addr, p.out.String())
}

// kill ends the process with SIGKILL and waits for it.
func (p *proc) kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
	p.cmd = nil
}

// publicKey returns the identity key printed by `recached amaquet-identity`.
func (p *proc) publicKey() ed25519.PublicKey {
	p.t.Helper()
	out, err := exec.Command(p.bin, "amaquet-identity", "--dir", p.dir).CombinedOutput()
	if err != nil {
		p.t.Fatalf("recached amaquet-identity: %v\n%s", err, out)
	}
	for _, f := range strings.Fields(string(out)) {
		if b, err := base64.StdEncoding.DecodeString(f); err == nil && len(b) == ed25519.PublicKeySize {
			return b
		}
		if b, err := hex.DecodeString(f); err == nil && len(b) == ed25519.PublicKeySize {
			return b
		}
	}
	p.t.Fatalf("no Ed25519 public key in the output of amaquet-identity: %q", out)
	return nil
}

// dial connects with the pinned identity key and opts' other fields.
func (p *proc) dial(opts Options) *Conn {
	p.t.Helper()
	if opts.PublicKey == nil && !opts.TrustOnFirstUse {
		opts.PublicKey = p.publicKey()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, p.Addr, opts)
	if err != nil {
		p.t.Fatalf("Dial %s: %v\nserver output:\n%s", p.Addr, err, p.out.String())
	}
	p.t.Cleanup(func() { c.Close() })
	return c
}

// resp dials the process's RESP port.
func (p *proc) resp() *servertest.Client {
	return servertest.Dial(p.t, p.RESP)
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond every 10 ms for at most d.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// isDone reports whether a call has its answer.
func isDone(c *Call) bool {
	select {
	case <-c.Done():
		return true
	default:
		return false
	}
}
