// Package servertest starts real servers for tests: a throwaway redis-server
// on a free loopback port, and recached in-process on another, plus a raw
// RESP client that returns replies byte for byte.
package servertest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/tcp"
	"github.com/recached/recached/server/ws"
)

// StartRedis starts redis-server on a free loopback port with persistence
// off and returns its address. The server is killed when the test ends.
func StartRedis(tb testing.TB, extra ...string) string {
	tb.Helper()
	bin := RedisBin(tb)
	port, err := tcp.FreePort()
	if err != nil {
		tb.Fatal(err)
	}
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tb.TempDir()}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start redis-server: %v", err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	waitPing(tb, addr)
	return addr
}

// StartRecached runs recached in-process with cfg on a free loopback port
// and returns its address and engine. It stops when the test ends.
func StartRecached(tb testing.TB, cfg server.Config) (string, *server.Server) {
	tb.Helper()
	port, err := tcp.FreePort()
	if err != nil {
		tb.Fatal(err)
	}
	cfg.Bind = "127.0.0.1"
	cfg.Port = port
	if cfg.Databases == 0 {
		cfg.Databases = 16
	}
	if cfg.MaxClients == 0 {
		cfg.MaxClients = 10000
	}
	srv := server.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	done := make(chan error, 1)
	go srv.Run(ctx)
	go func() { done <- tcp.ListenAndServe(ctx, srv, addr, max(cfg.Loops, 1)) }()
	tb.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			tb.Errorf("recached did not stop within 10s")
		}
	})
	waitPing(tb, addr)
	return addr, srv
}

func waitPing(tb testing.TB, addr string) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			cl := &Client{conn: c, r: bufio.NewReader(c)}
			_ = c.SetDeadline(time.Now().Add(2 * time.Second))
			rep, err := cl.Do("PING")
			c.Close()
			if err == nil && (string(rep) == "+PONG\r\n" || strings.HasPrefix(string(rep), "-NOAUTH")) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("server at %s did not answer PING within 10s", addr)
}

// Client is a raw RESP client: it sends commands and returns each reply's
// exact bytes.
type Client struct {
	conn net.Conn
	r    *bufio.Reader
}

// Dial connects to addr.
func Dial(tb testing.TB, addr string) *Client {
	tb.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		tb.Fatalf("dial %s: %v", addr, err)
	}
	tb.Cleanup(func() { c.Close() })
	return &Client{conn: c, r: bufio.NewReader(c)}
}

// Conn returns the underlying connection.
func (c *Client) Conn() net.Conn { return c.conn }

// Encode encodes args as a RESP multibulk request.
func Encode(args ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.Bytes()
}

// Do sends one command and returns its reply's bytes.
func (c *Client) Do(args ...string) ([]byte, error) {
	if err := c.Send(Encode(args...)); err != nil {
		return nil, err
	}
	return c.Read()
}

// Send writes raw bytes with a deadline.
func (c *Client) Send(b []byte) error {
	_ = c.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := c.conn.Write(b)
	return err
}

// Read reads one whole reply, within 10 seconds, and returns its bytes.
func (c *Client) Read() ([]byte, error) {
	_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var out []byte
	err := readValue(c.r, &out)
	return out, err
}

// readValue reads one RESP2 or RESP3 value, appending its bytes to out.
func readValue(r *bufio.Reader, out *[]byte) error {
	line, err := r.ReadBytes('\n')
	if err != nil {
		return err
	}
	*out = append(*out, line...)
	if len(line) < 3 {
		return fmt.Errorf("short line %q", line)
	}
	body := string(line[1 : len(line)-2])
	switch line[0] {
	case '+', '-', ':', ',', '#', '_', '(':
		return nil
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil {
			return fmt.Errorf("bad length %q", line)
		}
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		*out = append(*out, buf...)
		return nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return fmt.Errorf("bad count %q", line)
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			if err := readValue(r, out); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown reply type %q", line)
}

// Elements splits an aggregate reply into its elements' bytes (the header
// dropped); a non-aggregate reply is returned as one element.
func Elements(reply []byte) ([][]byte, error) {
	r := bufio.NewReader(bytes.NewReader(reply))
	line, err := r.ReadBytes('\n')
	if err != nil {
		return nil, err
	}
	switch line[0] {
	case '*', '~', '>', '%', '|':
	default:
		return [][]byte{reply}, nil
	}
	n, err := strconv.Atoi(string(line[1 : len(line)-2]))
	if err != nil || n < 0 {
		return nil, nil
	}
	if line[0] == '%' || line[0] == '|' {
		n *= 2
	}
	var out [][]byte
	for i := 0; i < n; i++ {
		var v []byte
		if err := readValue(r, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// RedisBin returns the path of redis-server, the reference every
// differential test compares against, and logs its version. Without it the
// test is skipped with a message saying how to install it, unless the CI
// environment variable is set: CI must never pass by skipping the
// comparison.
func RedisBin(tb testing.TB) string {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("redis-server not found and CI is set: run 'make test-deps' (%v)", err)
		}
		tb.Skipf("redis-server not found, skipping the comparison with Redis: run 'make test-deps' to install it (%v)", err)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		tb.Fatalf("redis-server --version: %v", err)
	}
	tb.Logf("comparing against %s", bytes.TrimSpace(out))
	return bin
}

// HaveRedis reports whether a test should add redis-server to the servers
// it compares: when it is installed, and always under CI, where RedisBin
// then fails the test instead of letting it pass without the reference.
func HaveRedis() bool {
	_, err := exec.LookPath("redis-server")
	return err == nil || os.Getenv("CI") != ""
}

// SafeBuffer is a bytes.Buffer that a process's output goroutines may write
// while a test reads it.
type SafeBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SafeBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *SafeBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Servers is a recached running in-process with both listeners.
type Servers struct {
	// RESP and WS are the addresses to dial: the listeners' ports on
	// 127.0.0.1 (the bind address when it is a specific one).
	RESP, WS string
	// RESPPort and WSPort are the ports listened on.
	RESPPort, WSPort int
	// Srv is the engine.
	Srv *server.Server
}

// StartServers runs recached in-process with cfg: the RESP and WebSocket
// listeners on free ports of cfg.Bind (127.0.0.1 when empty; "0.0.0.0"
// listens on every address). setup, when not nil, runs on the engine
// before it serves (hooks, the commit function). Both stop when the test
// ends.
func StartServers(tb testing.TB, cfg server.Config, setup func(*server.Server)) Servers {
	tb.Helper()
	if cfg.Bind == "" {
		cfg.Bind = "127.0.0.1"
	}
	if cfg.Databases == 0 {
		cfg.Databases = 16
	}
	if cfg.MaxClients == 0 {
		cfg.MaxClients = 10000
	}
	var err error
	if cfg.Port, err = tcp.FreePort(); err != nil {
		tb.Fatal(err)
	}
	if cfg.WSPort, err = tcp.FreePort(); err != nil {
		tb.Fatal(err)
	}
	srv := server.New(cfg)
	if setup != nil {
		setup(srv)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go srv.Run(ctx)
	go func() {
		done <- tcp.ListenAndServe(ctx, srv, net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.Port)), max(cfg.Loops, 1))
	}()
	go func() { done <- ws.ListenAndServe(ctx, srv, net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.WSPort))) }()
	tb.Cleanup(func() {
		cancel()
		for i := 0; i < 2; i++ {
			select {
			case err := <-done:
				if err != nil {
					tb.Errorf("listener: %v", err)
				}
			case <-time.After(10 * time.Second):
				tb.Errorf("recached did not stop within 10s")
				return
			}
		}
	})
	host := cfg.Bind
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	s := Servers{
		RESP:     net.JoinHostPort(host, strconv.Itoa(cfg.Port)),
		WS:       net.JoinHostPort(host, strconv.Itoa(cfg.WSPort)),
		RESPPort: cfg.Port,
		WSPort:   cfg.WSPort,
		Srv:      srv,
	}
	waitPing(tb, net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Port)))
	waitHTTP(tb, "http://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.WSPort))+"/healthz")
	return s
}

// waitHTTP waits until url answers 200.
func waitHTTP(tb testing.TB, url string) {
	tb.Helper()
	c := http.Client{Timeout: time.Second}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("%s did not answer 200 within 10s", url)
}

// ClientLine returns the CLIENT LIST line, as fields, of the connection
// whose local address ends with ":port" (the listener it came in on) and,
// when skip is not 0, whose id is not skip; nil when there is none. It asks
// over c.
func ClientLine(tb testing.TB, c *Client, port int, skip int64) map[string]string {
	tb.Helper()
	rep, err := c.Do("CLIENT", "LIST")
	if err != nil {
		tb.Fatalf("CLIENT LIST: %v", err)
	}
	_, body, ok := bytes.Cut(rep, []byte("\r\n"))
	if !ok {
		tb.Fatalf("CLIENT LIST reply %q", rep)
	}
	for _, line := range strings.Split(string(body), "\n") {
		f := make(map[string]string)
		for _, kv := range strings.Fields(line) {
			k, v, _ := strings.Cut(kv, "=")
			f[k] = v
		}
		if strings.HasSuffix(f["laddr"], ":"+strconv.Itoa(port)) && f["id"] != strconv.FormatInt(skip, 10) {
			return f
		}
	}
	return nil
}

// MustDo sends one command on c and returns its reply; it fails the test
// on a network error.
func MustDo(tb testing.TB, c *Client, args ...string) string {
	tb.Helper()
	rep, err := c.Do(args...)
	if err != nil {
		tb.Fatalf("%q: %v", args, err)
	}
	return string(rep)
}
