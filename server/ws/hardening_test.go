package ws_test

import (
	"bytes"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/server/ws"
)

// TestWSPingFlood: a client that sends pings and never reads keeps at most
// one pong owed, authenticated or not: the server's queue for it stays
// small (CLIENT LIST omem) or it is disconnected, never growing with the
// pings.
func TestWSPingFlood(t *testing.T) {
	tests := []struct {
		name string
		cfg  server.Config
	}{
		{"open", server.Config{}},
		{"before AUTH", server.Config{RequirePass: "pw"}},
	}
	payload := bytes.Repeat([]byte("p"), 125)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t, tt.cfg)
			_, portStr, _ := strings.Cut(e.ws.Addr(), ":")
			port, _ := strconv.Atoi(portStr)
			c := e.dial(t)
			// 200 000 pings: 25 MB of pongs, well past what the kernel's
			// socket buffers hold.
			for i := 0; i < 200000; i++ {
				if err := c.c.WriteControl(websocket.PingMessage, payload, time.Now().Add(10*time.Second)); err != nil {
					t.Fatalf("ping %d: %v", i, err)
				}
			}
			// Frames run in order: once the connection's last command is
			// AUTH (a wrong one: it stays unauthenticated) every ping
			// before it has been handled.
			c.send("AUTH", "wrong")
			tc := e.tcpClient(t)
			if tt.cfg.RequirePass != "" {
				tcpDo(t, tc, "AUTH", tt.cfg.RequirePass)
			}
			var line map[string]string
			waitFor(t, "the frame after the pings to run", func() bool {
				line = servertest.ClientLine(t, tc, port, 0)
				return line == nil || line["cmd"] == "auth"
			})
			if line == nil {
				return // disconnected: also bounded
			}
			if n, _ := strconv.Atoi(line["omem"]); n > 64<<10 {
				t.Errorf("omem=%d after 200000 pings, want at most 64 KB", n)
			}
		})
	}
}

// TestWSOversizedFrameReleased: the buffer of a frame refused for being
// over 64 MB does not stay with the connection.
func TestWSOversizedFrameReleased(t *testing.T) {
	e := start(t, server.Config{})
	c := e.dial(t)
	c.expect("+PONG\r\n", "PING")
	before := heapAlloc()
	w, err := c.c.NextWriter(websocket.BinaryMessage)
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	for sent := 0; sent <= ws.MaxFrame; sent += len(chunk) {
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := c.read(); got != "-ERR Protocol error: frame larger than 64 MB\r\n" {
		t.Fatalf("got %q", got)
	}
	c.expect("+PONG\r\n", "PING") // the connection stays open
	if grown := heapAlloc() - before; grown > 32<<20 {
		t.Errorf("heap grew by %d MB after a refused 64 MB frame: its buffer is still held", grown>>20)
	}
}

// heapAlloc returns the bytes of live heap objects after a collection.
func heapAlloc() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestWSOrigin: with a credential configured, pages on any origin may
// connect (access is in band); with none, where every admitted peer may do
// everything, only non-browser clients and pages from a loopback host may,
// so that a web site cannot drive a local server through its visitors'
// browsers.
func TestWSOrigin(t *testing.T) {
	tests := []struct {
		name   string
		cfg    server.Config
		origin string
		want   int
	}{
		{"no credential, no origin", server.Config{}, "", http.StatusSwitchingProtocols},
		{"no credential, localhost", server.Config{}, "http://localhost:3000", http.StatusSwitchingProtocols},
		{"no credential, 127.0.0.1", server.Config{}, "http://127.0.0.1:8080", http.StatusSwitchingProtocols},
		{"no credential, [::1]", server.Config{}, "http://[::1]:8080", http.StatusSwitchingProtocols},
		{"no credential, foreign site", server.Config{}, "https://evil.example", http.StatusForbidden},
		{"no credential, lookalike", server.Config{}, "http://127.0.0.1.evil.example", http.StatusForbidden},
		{"password, foreign site", server.Config{RequirePass: "pw"}, "https://app.example", http.StatusSwitchingProtocols},
		{"token secret, foreign site", server.Config{TokenSecret: "s"}, "https://app.example", http.StatusSwitchingProtocols},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t, tt.cfg)
			h := http.Header{}
			if tt.origin != "" {
				h.Set("Origin", tt.origin)
			}
			d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
			c, resp, err := d.Dial("ws://"+e.ws.Addr()+"/", h)
			if c != nil {
				c.Close()
			}
			if resp == nil {
				t.Fatalf("dial: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}
