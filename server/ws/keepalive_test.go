package ws_test

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// TestKeepAlive checks that tcp-keepalive reaches WebSocket connections:
// the kernel shows a keep-alive timer on the server's end of the socket
// (/proc/net/tcp, timer 2) due within the configured period, none with 0.
func TestKeepAlive(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp")
	}
	e := start(t, server.DefaultConfig())
	admin := e.tcpClient(t)
	for _, tt := range []struct {
		secs  int
		timer bool
	}{{60, true}, {0, false}} {
		servertest.MustDo(t, admin, "CONFIG", "SET", "tcp-keepalive", strconv.Itoa(tt.secs))
		c := e.dial(t)
		if got := c.do("PING"); !strings.Contains(got, "PONG") {
			t.Fatalf("PING: %q", got)
		}
		timer, when := socketTimer(t, e.ws.Addr(), c.c.LocalAddr().String())
		if timer != tt.timer || tt.timer && (when <= 0 || when > time.Duration(tt.secs)*time.Second) {
			t.Errorf("tcp-keepalive %d: keep-alive timer %v due in %v", tt.secs, timer, when)
		}
	}
}

// socketTimer finds the server's end of the connection from client to
// server in /proc/net/tcp and returns whether its keep-alive timer runs
// and when it is due.
func socketTimer(t *testing.T, srv, client string) (bool, time.Duration) {
	t.Helper()
	hexAddr := func(a string) string {
		h, p, _ := net.SplitHostPort(a)
		ip := net.ParseIP(h).To4()
		port, _ := strconv.Atoi(p)
		return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], port)
	}
	local, remote := hexAddr(srv), hexAddr(client)
	// Right after a write the socket may run its retransmission timer
	// instead (timer 1): poll until it is idle, for up to 5 s.
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile("/proc/net/tcp")
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) < 6 || f[1] != local || f[2] != remote {
				continue
			}
			found = true
			tm, due, _ := strings.Cut(f[5], ":")
			if tm == "00" || tm == "02" || time.Now().After(deadline) {
				j, _ := strconv.ParseUint(due, 16, 64)
				return tm == "02", time.Duration(j) * time.Second / 100
			}
		}
		if !found && time.Now().After(deadline) {
			t.Fatalf("no socket %s -> %s in /proc/net/tcp", client, srv)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
