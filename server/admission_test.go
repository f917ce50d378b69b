package server_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// peerIP is the non-loopback address the protected-mode test connects from
// and to, inside a network namespace of its own where it sits on lo.
const peerIP = "192.0.2.1"

// insideEnv marks the test binary re-executed inside the namespace.
const insideEnv = "RECACHED_TEST_NETNS"

// TestProtectedMode connects from a non-loopback address to both ports, as
// protected mode is decided for each: the RESP port trusts its clients, so
// only a password lifts it there; the WebSocket port checks keys against
// tokens when a token secret is set, so a token secret lifts it too. The
// test re-executes itself in a private network namespace (unshare) where
// peerIP is a local, non-loopback address.
func TestProtectedMode(t *testing.T) {
	if os.Getenv(insideEnv) == "" {
		reexecInNetns(t, "^TestProtectedMode$")
		return
	}
	tests := []struct {
		name          string
		cfg           server.Config
		respRefused   bool
		wsRefused     bool
		wantPingReply string // the RESP reply to PING when admitted
	}{
		{"no credential", server.Config{}, true, true, ""},
		{"password", server.Config{RequirePass: "pw"}, false, false, "-NOAUTH Authentication required.\r\n"},
		{"token secret", server.Config{TokenSecret: "s3cret"}, true, false, ""},
		{"both", server.Config{RequirePass: "pw", TokenSecret: "s3cret"}, false, false, "-NOAUTH Authentication required.\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Bind = "0.0.0.0"
			s := servertest.StartServers(t, cfg, nil)
			checkRESP(t, net.JoinHostPort(peerIP, strconv.Itoa(s.RESPPort)), tt.respRefused, tt.wantPingReply)
			checkWS(t, net.JoinHostPort(peerIP, strconv.Itoa(s.WSPort)), tt.wsRefused)
			// Loopback peers are always admitted.
			checkRESP(t, s.RESP, false, tt.wantPingReply)
			checkWS(t, s.WS, false)
		})
	}
}

// dialFrom dials addr from the local address peerIP (loopback addresses
// are dialled from loopback).
func dialFrom(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if strings.HasPrefix(addr, peerIP+":") {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(peerIP)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// checkRESP sends PING to addr: a refused connection reads Redis's
// -DENIED text and then the end of the stream.
func checkRESP(t *testing.T, addr string, refused bool, pingReply string) {
	t.Helper()
	c := dialFrom(t, addr)
	if _, err := c.Write(servertest.Encode("PING")); err != nil && !refused {
		t.Fatalf("%s: write: %v", addr, err)
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if !refused {
		want := pingReply
		if want == "" {
			want = "+PONG\r\n"
		}
		if err != nil || line != want {
			t.Errorf("%s: PING answered %q, %v; want %q", addr, line, err, want)
		}
		return
	}
	if !strings.HasPrefix(line, "-DENIED Redis is running in protected mode") {
		t.Errorf("%s: refused with %q, %v; want -DENIED …", addr, line, err)
	}
	// The server closes at once: PING, unread, may make that a reset.
	if rest, err := io.ReadAll(r); err != nil && !errors.Is(err, syscall.ECONNRESET) || len(rest) > 0 {
		t.Errorf("%s: after -DENIED read %q, %v; want the end of the stream", addr, rest, err)
	}
}

// checkWS asks addr for a WebSocket upgrade: a refused peer gets HTTP 403
// with Redis's protected-mode text before any upgrade.
func checkWS(t *testing.T, addr string, refused bool) {
	t.Helper()
	c := dialFrom(t, addr)
	req := "GET / HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatalf("%s: write: %v", addr, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s: read response: %v", addr, err)
	}
	defer resp.Body.Close()
	if !refused {
		if resp.StatusCode != http.StatusSwitchingProtocols {
			t.Errorf("%s: upgrade answered %s, want 101", addr, resp.Status)
		}
		return
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusForbidden || !strings.HasPrefix(string(body), "DENIED Redis is running in protected mode") {
		t.Errorf("%s: refused with %s %q, want 403 DENIED …", addr, resp.Status, body)
	}
}

// reexecInNetns runs the test binary's test run inside a new network
// namespace where peerIP is assigned to lo, and fails with its output if
// it fails. Without unshare (or the right to use it) the test is skipped,
// unless CI is set.
func reexecInNetns(t *testing.T, run string) {
	t.Helper()
	script := "ip link set lo up && ip addr add " + peerIP + "/32 dev lo && exec \"$0\" -test.run=\"$1\" -test.count=1 -test.v"
	cmd := exec.Command("unshare", "-n", "--", "sh", "-c", script, os.Args[0], run)
	cmd.Env = append(os.Environ(), insideEnv+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		t.Logf("inside the network namespace:\n%s", out)
	case errors.As(err, &exit) && strings.Contains(string(out), "--- FAIL"):
		t.Fatalf("inside the network namespace:\n%s", out)
	case os.Getenv("CI") != "":
		t.Fatalf("cannot make a network namespace with unshare (needed for a non-loopback peer): %v\n%s", err, out)
	default:
		t.Skipf("cannot make a network namespace with unshare (needed for a non-loopback peer; set CI to make this a failure): %v\n%s", err, out)
	}
}

// TestPushesAfterCommit: a push leaves only once the write that caused it
// is in the log. The engine's commit function here records how many
// effects it has seen, after a pause that gives a push written without a
// Commit of its own every chance to overtake it; each push the subscriber
// reads must be covered by a commit made before it was sent.
func TestPushesAfterCommit(t *testing.T) {
	const writes = 200
	tests := []struct {
		name      string
		subscribe func(t *testing.T, s servertest.Servers) (next func() string)
	}{
		{"resp", func(t *testing.T, s servertest.Servers) func() string {
			c := servertest.Dial(t, s.RESP)
			if rep, err := c.Do("SYNC", "k:*"); err != nil || string(rep) != "+OK\r\n" {
				t.Fatalf("SYNC: %q, %v", rep, err)
			}
			return func() string {
				rep, err := c.Read()
				if err != nil {
					t.Fatalf("read push: %v", err)
				}
				return string(rep)
			}
		}},
		{"websocket", func(t *testing.T, s servertest.Servers) func() string {
			c, resp, err := websocket.DefaultDialer.Dial("ws://"+s.WS+"/", nil)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			resp.Body.Close()
			t.Cleanup(func() { c.Close() })
			next := func() string {
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				_, b, err := c.ReadMessage()
				if err != nil {
					t.Fatalf("read push: %v", err)
				}
				return string(b)
			}
			if err := c.WriteMessage(websocket.TextMessage, servertest.Encode("SYNC", "k:*")); err != nil {
				t.Fatal(err)
			}
			if rep := next(); rep != "+OK\r\n" {
				t.Fatalf("SYNC: %q", rep)
			}
			return next
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var effects, committed atomic.Int64
			s := servertest.StartServers(t, server.Config{Loops: 2}, func(srv *server.Server) {
				// The stand-in log hears of each effect before the
				// syncer queues its push, as the real log does.
				srv.AddHookFirst(func(*server.Effect) { effects.Add(1) })
				srv.SetCommit(func() {
					time.Sleep(200 * time.Microsecond)
					n := effects.Load()
					for c := committed.Load(); c < n && !committed.CompareAndSwap(c, n); c = committed.Load() {
					}
				})
			})
			next := tt.subscribe(t, s)
			w := servertest.Dial(t, s.RESP)
			for i := 1; i <= writes; i++ {
				if err := w.Send(servertest.Encode("SET", "k:"+strconv.Itoa(i), "v")); err != nil {
					t.Fatal(err)
				}
				push := next()
				if !strings.Contains(push, "k:"+strconv.Itoa(i)+"\r\n") {
					t.Fatalf("push %d: %q", i, push)
				}
				if c := committed.Load(); c < int64(i) {
					t.Fatalf("push for write %d arrived with %d writes committed", i, c)
				}
				if _, err := w.Read(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// wire is one connection to either port, request bytes in, reply bytes
// out: a RESP stream, or one WebSocket frame a request and a reply.
type wire interface {
	// send sends one request: raw bytes on RESP, one frame on WebSocket.
	send(b []byte)
	// next returns the next reply.
	next() string
	// rest returns what arrives until the server closes the connection;
	// it fails the test if that does not happen within 10 seconds.
	rest() string
}

type respWire struct {
	t *testing.T
	c *servertest.Client
}

func (w respWire) send(b []byte) {
	if err := w.c.Send(b); err != nil {
		w.t.Fatal(err)
	}
}

func (w respWire) next() string {
	rep, err := w.c.Read()
	if err != nil {
		w.t.Fatalf("read: %v", err)
	}
	return string(rep)
}

func (w respWire) rest() string {
	_ = w.c.Conn().SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(w.c.Conn())
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		w.t.Fatalf("connection still open after %q", b)
	}
	return string(b)
}

type wsWire struct {
	t *testing.T
	c *websocket.Conn
}

func dialWS(t *testing.T, addr string) wsWire {
	t.Helper()
	c, resp, err := websocket.DefaultDialer.Dial("ws://"+addr+"/", nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	resp.Body.Close()
	t.Cleanup(func() { c.Close() })
	return wsWire{t, c}
}

func (w wsWire) send(b []byte) {
	_ = w.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := w.c.WriteMessage(websocket.BinaryMessage, b); err != nil {
		w.t.Fatal(err)
	}
}

func (w wsWire) next() string {
	_ = w.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, b, err := w.c.ReadMessage()
	if err != nil {
		w.t.Fatalf("read: %v", err)
	}
	return string(b)
}

func (w wsWire) rest() string {
	_ = w.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var out string
	for {
		_, b, err := w.c.ReadMessage()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			w.t.Fatalf("connection still open after %q", out)
		}
		if err != nil {
			return out
		}
		out += string(b)
	}
}

// dialWire connects to the port of s that transport names.
func dialWire(t *testing.T, s servertest.Servers, transport server.Transport) wire {
	if transport == server.TransportWS {
		return dialWS(t, s.WS)
	}
	return respWire{t, servertest.Dial(t, s.RESP)}
}

// TestUnauthenticatedLimits: with a password, a client that has not
// authenticated may not send a multibulk count over 10 or a bulk over
// 16 384 bytes, on either port: Redis's error, then the connection closes.
// Once authenticated it may.
func TestUnauthenticatedLimits(t *testing.T) {
	s := servertest.StartServers(t, server.Config{RequirePass: "pw"}, nil)
	eleven := []string{"MSET"}
	for i := 0; i < 5; i++ {
		eleven = append(eleven, "k"+strconv.Itoa(i), "v")
	}
	tests := []struct {
		name string
		auth bool
		// req is the request on RESP: its bytes up to the header that is
		// refused, all of which the server reads. ws is the WebSocket
		// frame, nil for the same bytes.
		req, ws []byte
		want    string
		shut    bool
	}{
		{"count over 10", false, []byte("*11\r\n"), servertest.Encode(eleven...), "-ERR Protocol error: unauthenticated multibulk length\r\n", true},
		{"bulk over 16384", false, []byte("*2\r\n$4\r\nAUTH\r\n$16385\r\n"), servertest.Encode("AUTH", strings.Repeat("p", 16385)), "-ERR Protocol error: unauthenticated bulk length\r\n", true},
		{"frame past the bounds", false, []byte("*2\r\n$4\r\nAUTH\r\n$1048576\r\n"), servertest.Encode("AUTH", strings.Repeat("p", 1<<20)), "-ERR Protocol error: unauthenticated bulk length\r\n", true},
		{"within the bounds", false, servertest.Encode("GET", "k"), nil, "-NOAUTH Authentication required.\r\n", false},
		{"count over 10 after AUTH", true, servertest.Encode(eleven...), nil, "+OK\r\n", false},
		{"big after AUTH", true, servertest.Encode("SET", "big", strings.Repeat("x", 1<<20)), nil, "+OK\r\n", false},
	}
	for _, transport := range []server.Transport{server.TransportRESP, server.TransportWS} {
		for _, tt := range tests {
			t.Run(transport.String()+"/"+tt.name, func(t *testing.T) {
				w := dialWire(t, s, transport)
				if tt.auth {
					w.send(servertest.Encode("AUTH", "pw"))
					if got := w.next(); got != "+OK\r\n" {
						t.Fatalf("AUTH: %q", got)
					}
				}
				req := tt.req
				if transport == server.TransportWS && tt.ws != nil {
					req = tt.ws
				}
				w.send(req)
				if !tt.shut {
					if got := w.next(); got != tt.want {
						t.Errorf("got %q, want %q", got, tt.want)
					}
					return
				}
				if got := w.rest(); got != tt.want {
					t.Errorf("got %q then the close, want %q", got, tt.want)
				}
			})
		}
	}
}

// TestCrossProtocolScripting: an HTTP request whose body is RESP, as a web
// page can make a browser send, is dropped at its first line ("POST" or
// "Host:", any case) with no reply and before the body runs, on either
// port.
func TestCrossProtocolScripting(t *testing.T) {
	s := servertest.StartServers(t, server.Config{}, nil)
	check := servertest.Dial(t, s.RESP)
	tests := []struct {
		name string
		send []string // requests, one frame each on WebSocket
		want string
	}{
		{"http post", []string{"POST / HTTP/1.1\r\n", "Host: 127.0.0.1:6379\r\n", "SET xproto pwned\r\n"}, ""},
		{"host first", []string{"Host: 127.0.0.1\r\n", "SET xproto pwned\r\n"}, ""},
		{"lower case multibulk", []string{string(servertest.Encode("post", "/")), string(servertest.Encode("SET", "xproto", "pwned"))}, ""},
		{"after a command", []string{string(servertest.Encode("PING")), "hOsT: x\r\n", "SET xproto pwned\r\n"}, "+PONG\r\n"},
	}
	for _, transport := range []server.Transport{server.TransportRESP, server.TransportWS} {
		for _, tt := range tests {
			t.Run(transport.String()+"/"+tt.name, func(t *testing.T) {
				w := dialWire(t, s, transport)
				if transport == server.TransportRESP {
					w.send([]byte(strings.Join(tt.send, ""))) // one write, as a browser's
				} else {
					// The frames after the one that closes may not get
					// through: only what the server answered matters.
					c := w.(wsWire).c
					for _, b := range tt.send {
						if c.WriteMessage(websocket.TextMessage, []byte(b)) != nil {
							break
						}
					}
				}
				if got := w.rest(); got != tt.want {
					t.Errorf("got %q, want %q and the connection closed", got, tt.want)
				}
				if rep, err := check.Do("EXISTS", "xproto"); err != nil || string(rep) != ":0\r\n" {
					t.Errorf("EXISTS xproto = %q, %v: the request body ran", rep, err)
				}
			})
		}
	}
}

// TestSyncSubscriberOutputLimit: a TCP connection that registers for sync
// pushes and never reads is disconnected once the unread output passes
// the limit (sync/PROTOCOL.md section 7), for each way of registering;
// CLIENT LIST shows its output piling up meanwhile.
func TestSyncSubscriberOutputLimit(t *testing.T) {
	tests := []struct {
		name     string
		register []string
	}{
		{"SYNC", []string{"SYNC", "k:*"}},
		{"QSUB", []string{"QSUB", "k:*"}},
		{"KWATCH", []string{"KWATCH", "k:1"}},
	}
	value := strings.Repeat("v", 256<<10)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := servertest.StartServers(t, server.Config{}, nil)
			addr, port := s.RESP, s.RESPPort
			sub := servertest.Dial(t, addr)
			if _, err := sub.Do(tt.register...); err != nil {
				t.Fatal(err)
			}
			w := servertest.Dial(t, addr)
			id, err := w.Do("CLIENT", "ID")
			if err != nil {
				t.Fatal(err)
			}
			self, _ := strconv.ParseInt(strings.TrimSpace(string(id[1:])), 10, 64)
			maxOmem := 0
			// 1 GB of pushes at the most: far past the limit plus what the
			// kernel's socket buffers hold.
			for i := 0; i < 4000; i++ {
				key := "k:" + strconv.Itoa(i)
				if tt.name == "KWATCH" {
					key = "k:1"
				}
				if rep, err := w.Do("SET", key, value); err != nil || string(rep) != "+OK\r\n" {
					t.Fatalf("SET: %q, %v", rep, err)
				}
				if i%8 != 0 {
					continue
				}
				line := servertest.ClientLine(t, w, port, self)
				if line == nil {
					if maxOmem == 0 {
						t.Errorf("cut, but CLIENT LIST never showed its output (omem=0)")
					}
					return // cut
				}
				n, _ := strconv.Atoi(line["omem"])
				maxOmem = max(maxOmem, n)
				if n > 2*server.MaxUnreadBytes {
					t.Fatalf("subscriber holds omem=%d, past twice the limit", n)
				}
			}
			t.Fatalf("a subscriber that never reads was not disconnected after 1 GB of pushes (omem up to %d)", maxOmem)
		})
	}
}

// TestClientListQueryBuffer: CLIENT LIST reports the bytes of a request
// received and not yet complete (qbuf).
func TestClientListQueryBuffer(t *testing.T) {
	s := servertest.StartServers(t, server.Config{}, nil)
	addr, port := s.RESP, s.RESPPort
	partial := servertest.Dial(t, addr)
	req := "*2\r\n$3\r\nGET\r\n$100\r\nabc"
	if err := partial.Send([]byte(req)); err != nil {
		t.Fatal(err)
	}
	c := servertest.Dial(t, addr)
	id, _ := c.Do("CLIENT", "ID")
	self, _ := strconv.ParseInt(strings.TrimSpace(string(id[1:])), 10, 64)
	for i := 0; i < 500; i++ {
		line := servertest.ClientLine(t, c, port, self)
		if line != nil && line["qbuf"] == strconv.Itoa(len(req)) {
			return
		}
		time.Sleep(10 * time.Millisecond) // until the server has read it
	}
	t.Errorf("CLIENT LIST never showed qbuf=%d for a connection holding %[1]d bytes of a request", len(req))
}
