package ws_test

import (
	"errors"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// readFrame returns the type and payload of the next frame.
func (c *client) readFrame() (int, []byte) {
	c.t.Helper()
	_ = c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	typ, b, err := c.c.ReadMessage()
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return typ, b
}

// A server frame is a binary frame exactly when its bytes are not valid
// UTF-8, replies and pushes alike: browsers fail the connection on a text
// frame that is not UTF-8.
func TestFrameOpcodeIsBinaryExactlyWhenNotUTF8(t *testing.T) {
	e := start(t, server.Config{})
	tcp := e.tcpClient(t)
	sub := e.dial(t)
	sub.expect("+OK\r\n", "SYNC", "u:*")
	reader := e.dial(t)
	for _, tc := range []struct {
		name  string
		value string
		want  int
	}{
		{"ascii", "hello", websocket.TextMessage},
		{"utf-8", "h\u00e9llo \u2713 \U0001F600", websocket.TextMessage},
		{"empty", "", websocket.TextMessage},
		{"invalid byte", "\xff\xfe", websocket.BinaryMessage},
		{"cut multibyte", "ok\xe2\x82", websocket.BinaryMessage},
		{"overlong", "\xc0\xaf", websocket.BinaryMessage},
		{"surrogate", "\xed\xa0\x80", websocket.BinaryMessage},
		{"nul and high", "a\x00\x80", websocket.BinaryMessage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "u:" + tc.name
			if r, err := tcp.Do("SET", key, tc.value); err != nil || string(r) != "+OK\r\n" {
				t.Fatalf("SET on the RESP port: %q, %v", r, err)
			}
			push := string(servertest.Encode("SET", key, tc.value))
			push = ">" + push[1:]
			if typ, b := sub.readFrame(); typ != tc.want || string(b) != push {
				t.Errorf("push: frame type %d %q, want type %d %q", typ, b, tc.want, push)
			}
			reader.send("GET", key)
			bulk := "$" + itoa(len(tc.value)) + "\r\n" + tc.value + "\r\n"
			if typ, b := reader.readFrame(); typ != tc.want || string(b) != bulk {
				t.Errorf("GET reply: frame type %d %q, want type %d %q", typ, b, tc.want, bulk)
			}
		})
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// A client text frame that is not valid UTF-8 fails the connection with
// status 1007 (RFC 6455 section 8.1) and runs nothing; the same bytes in a
// binary frame are a command like any other.
func TestInvalidUTF8TextFrameClosesWith1007(t *testing.T) {
	e := start(t, server.Config{})
	tcp := e.tcpClient(t)
	cmd := servertest.Encode("SET", "bin", "\xff\x00\xfe")

	c := e.dial(t)
	c.expect("+PONG\r\n", "PING")
	c.sendRaw(websocket.TextMessage, cmd)
	_ = c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, b, err := c.c.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseInvalidFramePayloadData {
		t.Fatalf("after a text frame of invalid UTF-8: frame %q, error %v; want a close frame with status 1007", b, err)
	}
	if r, err := tcp.Do("EXISTS", "bin"); err != nil || string(r) != ":0\r\n" {
		t.Fatalf("EXISTS bin = %q, %v: the refused frame ran", r, err)
	}

	bc := e.dial(t)
	bc.sendRaw(websocket.BinaryMessage, cmd)
	if typ, b := bc.readFrame(); typ != websocket.TextMessage || string(b) != "+OK\r\n" {
		t.Fatalf("binary frame: reply type %d %q, want text +OK", typ, b)
	}
	bc.expect("+PONG\r\n", "PING")
	if r, err := tcp.Do("GET", "bin"); err != nil || string(r) != "$3\r\n\xff\x00\xfe\r\n" {
		t.Fatalf("GET bin = %q, %v", r, err)
	}
}
