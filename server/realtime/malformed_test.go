package realtime

import (
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/sync/realtime/wire"
)

// TestMalformedFrames sends every kind of bad frame SPEC section 9 names
// over a real connection: each gets a Nack with its code (and the frame's
// id when it had a usable one), and the connection stays open.
func TestMalformedFrames(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	c, _ := r.connect(t, keyQuery("k1"))
	big := `{"op":3,"channel":"chat:a","data":"` + strings.Repeat("x", 1<<20) + `"}`
	edge := `{"op":3,"id":"e","channel":"chat:a","data":"` // padded to exactly MaxMessageSize below
	edge += strings.Repeat("y", MaxMessageSize-len(edge)-2) + `"}`
	for _, tc := range []struct {
		name  string
		typ   int
		frame string
		code  int
		id    any
	}{
		{"not json", websocket.TextMessage, "hello", 400, nil},
		{"truncated json", websocket.TextMessage, `{"op":13,"id":"1"`, 400, nil},
		{"array", websocket.TextMessage, `[13]`, 400, nil},
		{"number", websocket.TextMessage, `42`, 400, nil},
		{"empty", websocket.TextMessage, ``, 400, nil},
		{"no op", websocket.TextMessage, `{"id":"a"}`, 400, "a"},
		{"unknown op", websocket.TextMessage, `{"op":99,"id":"b"}`, 400, "b"},
		{"server op", websocket.TextMessage, `{"op":9,"id":"c"}`, 400, "c"},
		{"op wrong type", websocket.TextMessage, `{"op":"13","id":"d"}`, 400, "d"},
		{"channel wrong type", websocket.TextMessage, `{"op":13,"id":"e","channel":["chat:a"]}`, 400, "e"},
		{"missing channel", websocket.TextMessage, `{"op":3,"id":"f"}`, 400, "f"},
		{"rewind wrong type", websocket.TextMessage, `{"op":13,"id":"g","channel":"chat:a","rewind":"3"}`, 400, "g"},
		{"bad filter", websocket.TextMessage, `{"op":13,"id":"h","channel":"chat:*","filter":"(("}`, 400, "h"},
		{"rewind on a glob", websocket.TextMessage, `{"op":13,"id":"i","channel":"chat:*","rewind":3}`, 400, "i"},
		{"numeric id", websocket.TextMessage, `{"op":11,"id":12}`, 400, 12},
		{"invalid utf-8", websocket.TextMessage, "{\"op\":3,\"channel\":\"chat:\xff\"}", 400, nil},
		{"binary frame", websocket.BinaryMessage, `{"op":11,"id":"j"}`, 400, nil},
		{"1 MB frame", websocket.TextMessage, big, 413, nil},
		{"one byte over", websocket.TextMessage, edge + " ", 413, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.sendRaw(tc.typ, []byte(tc.frame))
			f := c.expect(wire.Nack, map[string]any{"code": tc.code})
			if tc.id == nil && f["id"] != nil || tc.id != nil && f["id"] != tc.id && f.num("id") != tc.id {
				t.Fatalf("Nack %v, want id %v", f, tc.id)
			}
			if f.str("message") == "" {
				t.Fatalf("Nack %v without a message", f)
			}
			c.quiet() // the connection is still served
		})
	}
	t.Run("exactly the maximum", func(t *testing.T) {
		c.sendRaw(websocket.TextMessage, []byte(edge))
		c.expect(wire.Ack, map[string]any{"id": "e"})
	})
}

// TestFragmentedFrame: a client frame split into WebSocket continuation
// frames (a client write buffer of 8 bytes splits every message) is one
// request.
func TestFragmentedFrame(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	d := websocket.Dialer{WriteBufferSize: 8}
	ws, _, err := d.Dial("ws://"+r.addr+"/?"+keyQuery("k1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	c := &client{t: t, ws: ws, frames: make(chan frame, 16), closed: make(chan error, 1)}
	go c.readLoop()
	c.expect(wire.Connected, nil)
	c.sendRaw(websocket.TextMessage, []byte(`{"op":11,"id":"fragmented into many frames"}`))
	c.expect(wire.Heartbeat, map[string]any{"id": "fragmented into many frames"})
}
