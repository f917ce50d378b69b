package ws_test

import (
	"bytes"
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

// closedAfter reads frames until the connection ends and returns them; it
// fails the test if it does not end within 10 seconds.
func (c *client) closedAfter() []string {
	c.t.Helper()
	var frames []string
	_ = c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, b, err := c.c.ReadMessage()
		if err != nil {
			if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
				c.t.Fatalf("connection still open after %q", frames)
			}
			return frames
		}
		frames = append(frames, string(b))
	}
}

// TestWSCrossProtocolScripting: a frame whose command is POST or Host:
// closes the connection with no reply, as on the RESP port.
func TestWSCrossProtocolScripting(t *testing.T) {
	e := start(t, server.Config{})
	for _, frame := range []string{"POST / HTTP/1.1", "host: 127.0.0.1", string(servertest.Encode("Post", "x"))} {
		c := e.dial(t)
		c.sendRaw(websocket.TextMessage, []byte(frame))
		if got := c.closedAfter(); len(got) != 0 {
			t.Errorf("%q: got %q before the close, want nothing", frame, got)
		}
	}
}

// TestWSUnauthenticatedLimits: with a password, a frame from a connection
// that has not authenticated may hold at most 10 arguments of at most
// 16 384 bytes: past that it gets Redis's error and the connection closes.
func TestWSUnauthenticatedLimits(t *testing.T) {
	e := start(t, server.Config{RequirePass: "pw"})
	eleven := []string{"MSET"}
	for i := 0; i < 5; i++ {
		eleven = append(eleven, "k"+strconv.Itoa(i), "v")
	}
	tests := []struct {
		name  string
		auth  bool
		frame []byte
		want  string
		shut  bool
	}{
		{"count over 10", false, servertest.Encode(eleven...), "-ERR Protocol error: unauthenticated multibulk length\r\n", true},
		{"bulk over 16384", false, servertest.Encode("AUTH", strings.Repeat("p", 16385)), "-ERR Protocol error: unauthenticated bulk length\r\n", true},
		{"frame past the bounds", false, servertest.Encode("AUTH", strings.Repeat("p", 1<<20)), "-ERR Protocol error: unauthenticated bulk length\r\n", true},
		{"within the bounds", false, servertest.Encode("GET", "k"), "-NOAUTH Authentication required.\r\n", false},
		{"count over 10 after AUTH", true, servertest.Encode(eleven...), "+OK\r\n", false},
		{"big after AUTH", true, servertest.Encode("SET", "big", strings.Repeat("x", 1<<20)), "+OK\r\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := e.dial(t)
			if tt.auth {
				c.expect("+OK\r\n", "AUTH", "pw")
			}
			c.sendRaw(websocket.BinaryMessage, tt.frame)
			if !tt.shut {
				if got := c.read(); got != tt.want {
					t.Errorf("got %q, want %q", got, tt.want)
				}
				return
			}
			if got := c.closedAfter(); len(got) != 1 || got[0] != tt.want {
				t.Errorf("got %q then the close, want %q", got, tt.want)
			}
		})
	}
}

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
