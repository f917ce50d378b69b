// Package rttest runs the recached binary with its realtime port for the
// tests of the realtime clients (sync/realtime and its browser client): a
// real process on free loopback ports with an API-keys file, which a test
// can kill and start again on the same ports and directory, and tokens
// minted by the binary's own `realtime-token` subcommand.
package rttest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/recached/recached/server/servertest"
)

// Keys is an API-keys file for the tests: k1 may do everything on every
// channel; k2 may subscribe to and publish on "open:*" and presence on it,
// and only subscribe to "ro:*" (so publishing there is 403).
const Keys = `[
  {"id": "k1", "secret": "s1-secret", "capability": {"*": ["subscribe", "publish", "presence"]}},
  {"id": "k2", "secret": "s2-secret", "capability": {"open:*": ["subscribe", "publish", "presence"], "ro:*": ["subscribe"]}}
]`

// Key1 and Key2 are the credentials of k1 and k2 for ?key=.
const (
	Key1 = "s1-secret.k1"
	Key2 = "s2-secret.k2"
)

// Server is one recached process with its realtime port.
type Server struct {
	tb       testing.TB
	Bin      string
	Dir      string
	KeysFile string
	Port     int // RESP
	RTPort   int // realtime
	args     []string
	cmd      *exec.Cmd
	out      *servertest.SafeBuffer
	exited   chan struct{}
}

// Start starts bin (servertest.BuildRecached builds it) with the test keys file, the realtime
// port and extra flags, and waits for both ports. The process is stopped
// when the test ends.
func Start(tb testing.TB, bin string, extra ...string) *Server {
	tb.Helper()
	dir := tb.TempDir()
	keys := filepath.Join(dir, "keys.json")
	if err := os.WriteFile(keys, []byte(Keys), 0o600); err != nil {
		tb.Fatal(err)
	}
	s := &Server{tb: tb, Bin: bin, Dir: dir, KeysFile: keys, Port: servertest.FreePort(tb), RTPort: servertest.FreePort(tb), args: extra, out: &servertest.SafeBuffer{}}
	s.Start()
	tb.Cleanup(func() {
		s.Stop()
		if tb.Failed() {
			tb.Logf("server output:\n%s", s.out.String())
		}
	})
	return s
}

// Start starts the process (again) on the same ports and directory.
func (s *Server) Start() {
	s.tb.Helper()
	args := append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(s.Port), "--ws-port", "0",
		"--realtime-port", strconv.Itoa(s.RTPort), "--amaquet-port", "0", "--api-keys", s.KeysFile, "--dir", s.Dir, "--save", ""}, s.args...)
	s.cmd = exec.Command(s.Bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		s.tb.Fatalf("start recached: %v", err)
	}
	s.exited = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Wait()
		close(done)
	}(s.cmd, s.exited)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if dialable(s.Port) && dialable(s.RTPort) {
			return
		}
		select {
		case <-s.exited:
			s.tb.Fatalf("recached exited at start:\n%s", s.out.String())
		default:
		}
		if time.Now().After(deadline) {
			s.tb.Fatalf("recached did not listen in time:\n%s", s.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func dialable(port int) bool {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Kill kills the process with SIGKILL: every socket drops at once, as in a
// crash or a network cut.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Stop stops the process with SIGTERM (SIGKILL after 15 s).
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		s.tb.Errorf("recached did not stop on SIGTERM in time")
	}
	s.cmd = nil
}

// URL returns the realtime WebSocket URL.
func (s *Server) URL() string { return fmt.Sprintf("ws://127.0.0.1:%d/", s.RTPort) }

// HTTPURL returns an http URL of path on the realtime port.
func (s *Server) HTTPURL(path string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", s.RTPort, path)
}

// Do runs one command on the RESP port and returns its reply's bytes.
func (s *Server) Do(args ...string) string {
	s.tb.Helper()
	c := servertest.Dial(s.tb, fmt.Sprintf("127.0.0.1:%d", s.Port))
	defer c.Conn().Close()
	rep, err := c.Do(args...)
	if err != nil {
		s.tb.Fatalf("%q: %v", args, err)
	}
	return string(rep)
}

// Token mints an access token of key with the binary's realtime-token
// subcommand; capability and clientID may be empty.
func (s *Server) Token(key string, ttl time.Duration, capability, clientID string) string {
	s.tb.Helper()
	tok, err := MintToken(s.Bin, s.KeysFile, key, ttl, capability, clientID)
	if err != nil {
		s.tb.Fatal(err)
	}
	return tok
}

// MintToken runs `bin realtime-token`; it is safe to call from any
// goroutine (an AuthCallback).
func MintToken(bin, keysFile, key string, ttl time.Duration, capability, clientID string) (string, error) {
	args := []string{"realtime-token", "--api-keys", keysFile, "--key", key, "--ttl", ttl.String()}
	if capability != "" {
		args = append(args, "--capability", capability)
	}
	if clientID != "" {
		args = append(args, "--client-id", clientID)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("recached %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// Output returns what the process wrote so far.
func (s *Server) Output() string { return s.out.String() }

// Proxy is a TCP relay between clients and the server on which a test cuts
// the network: Cut closes every relayed connection (the server sees its
// sockets close, the client sees the connection drop), Block refuses new
// ones until Unblock, and Freeze stops relaying without closing anything
// (a dead peer).
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	blocked bool
	frozen  chan struct{} // closed while relaying; replaced by Freeze
	wg      sync.WaitGroup
}

// NewProxy relays a free loopback port to target until the test ends.
func NewProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: make(map[net.Conn]struct{}), frozen: make(chan struct{})}
	close(p.frozen)
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(func() {
		ln.Close()
		p.Unfreeze()
		p.Cut()
		p.wg.Wait()
	})
	return p
}

// URL returns the proxy's WebSocket URL.
func (p *Proxy) URL() string { return "ws://" + p.ln.Addr().String() + "/" }

// Addr returns the proxy's address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		blocked := p.blocked
		p.mu.Unlock()
		if blocked {
			c.Close()
			continue
		}
		up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.relay(c, up)
		go p.relay(up, c)
	}
}

// relay copies from src to dst until either closes, waiting while frozen.
func (p *Proxy) relay(src, dst net.Conn) {
	defer p.wg.Done()
	defer func() {
		src.Close()
		dst.Close()
		p.mu.Lock()
		delete(p.conns, src)
		delete(p.conns, dst)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			gate := p.frozen
			p.mu.Unlock()
			<-gate
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Cut closes every relayed connection.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

// Block makes the proxy refuse new connections (closing them at once), and
// cuts the current ones.
func (p *Proxy) Block() {
	p.mu.Lock()
	p.blocked = true
	p.mu.Unlock()
	p.Cut()
}

// Unblock lets new connections through again.
func (p *Proxy) Unblock() {
	p.mu.Lock()
	p.blocked = false
	p.mu.Unlock()
}

// Freeze stops relaying bytes without closing anything.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.frozen:
		p.frozen = make(chan struct{})
	default:
	}
}

// Unfreeze relays again.
func (p *Proxy) Unfreeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.frozen:
	default:
		close(p.frozen)
	}
}

// Conns returns how many connections the proxy relays now (two sockets each).
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns) / 2
}
