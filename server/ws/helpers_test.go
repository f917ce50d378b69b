package ws_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/server/ws"
)

// env is a running recached: the RESP listener (servertest) and the
// WebSocket listener on free loopback ports.
type env struct {
	tcp string
	ws  *ws.Listener
	srv *server.Server
}

// start runs recached with cfg and a WebSocket listener; tune may adjust
// the listener before it serves.
func start(t *testing.T, cfg server.Config, tune ...func(*ws.Listener)) *env {
	t.Helper()
	addr, srv := servertest.StartRecached(t, cfg)
	l := ws.New(srv, "127.0.0.1:0")
	for _, f := range tune {
		f(l)
	}
	if err := l.Listen(); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- l.Serve() }()
	<-l.Ready()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := l.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
		if err := <-errc; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return &env{tcp: addr, ws: l, srv: srv}
}

// client is a WebSocket test client.
type client struct {
	t *testing.T
	c *websocket.Conn
}

func (e *env) dial(t *testing.T) *client {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	c, resp, err := d.Dial("ws://"+e.ws.Addr()+"/", nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	resp.Body.Close()
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c}
}

// tcpClient dials the RESP port.
func (e *env) tcpClient(t *testing.T) *servertest.Client {
	return servertest.Dial(t, e.tcp)
}

// send sends one command as a RESP array in a text frame.
func (c *client) send(args ...string) {
	c.t.Helper()
	c.sendRaw(websocket.TextMessage, servertest.Encode(args...))
}

func (c *client) sendRaw(typ int, b []byte) {
	c.t.Helper()
	_ = c.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := c.c.WriteMessage(typ, b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// read returns the next frame's text; it fails the test after 10 s.
func (c *client) read() string {
	c.t.Helper()
	_ = c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	typ, b, err := c.c.ReadMessage()
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	if want := frameType(b); typ != want {
		c.t.Fatalf("frame %q has type %d, want %d (binary exactly when not UTF-8)", b, typ, want)
	}
	if n := valueLen(b); n != len(b) {
		c.t.Fatalf("frame %q is not exactly one RESP value", b)
	}
	return string(b)
}

// frameType is the type of the server frame holding b: text, unless b is
// not valid UTF-8.
func frameType(b []byte) int {
	if utf8.Valid(b) {
		return websocket.TextMessage
	}
	return websocket.BinaryMessage
}

// do sends a command and returns the next frame, which must be its reply.
func (c *client) do(args ...string) string {
	c.t.Helper()
	c.send(args...)
	return c.read()
}

// expect sends a command and checks its reply.
func (c *client) expect(want string, args ...string) {
	c.t.Helper()
	if got := c.do(args...); got != want {
		c.t.Fatalf("%q: got %q, want %q", args, got, want)
	}
}

// noFrame checks that nothing arrives within a short while: a PING's reply
// must be the next frame.
func (c *client) noFrame() {
	c.t.Helper()
	if got := c.do("PING", "barrier"); got != "$7\r\nbarrier\r\n" {
		c.t.Fatalf("unexpected frame %q before the barrier reply", got)
	}
}

// tcpDo runs a command on a TCP client and returns the reply's bytes.
func tcpDo(t *testing.T, c *servertest.Client, args ...string) string {
	t.Helper()
	rep, err := c.Do(args...)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return string(rep)
}

// push encodes a RESP3 push of bulk strings, as mutation pushes look.
func push(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, ">%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// arr encodes an array of bulk strings.
func arr(args ...string) string {
	return "*" + push(args...)[1:]
}

func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

// keychange encodes ["keychange", key, value]; value is raw RESP.
func keychange(key, value string) string {
	return "*3\r\n" + bulk("keychange") + bulk(key) + value
}

// valueLen is the length of the complete RESP value at the start of b, or
// -1; the test's own reading of the protocol.
func valueLen(b []byte) int {
	r := bufio.NewReader(bytes.NewReader(b))
	n, err := skipValue(r)
	if err != nil {
		return -1
	}
	return n
}

func skipValue(r *bufio.Reader) (int, error) {
	line, err := r.ReadString('\n')
	if err != nil || len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return 0, fmt.Errorf("bad line %q", line)
	}
	n := len(line)
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+', '-', ':', ',', '#', '_', '(':
		return n, nil
	case '$', '=', '!':
		l, err := strconv.Atoi(body)
		if err != nil {
			return 0, err
		}
		if l < 0 {
			return n, nil
		}
		buf := make([]byte, l+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return 0, err
		}
		return n + l + 2, nil
	case '*', '~', '>', '%':
		l, err := strconv.Atoi(body)
		if err != nil {
			return 0, err
		}
		if line[0] == '%' {
			l *= 2
		}
		for i := 0; i < l; i++ {
			m, err := skipValue(r)
			if err != nil {
				return 0, err
			}
			n += m
		}
		return n, nil
	}
	return 0, fmt.Errorf("unknown type %q", line)
}

// httpGet fetches a URL of the WebSocket listener.
func httpGet(t *testing.T, e *env, path string) (int, string) {
	t.Helper()
	cl := &http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + e.ws.Addr() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// waitFor polls cond for up to 10 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
