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
				srv.AddHook(func(*server.Effect) { effects.Add(1) })
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
