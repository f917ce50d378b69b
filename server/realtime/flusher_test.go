package realtime

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/server/servertest"
)

// TestPausedReaderGetsEverything: a subscriber that reads nothing while
// more is published to it than the sockets between it and the server
// hold (its receive buffer is made smaller) makes the flusher's
// non-blocking write come back short; the rest goes through the
// connection's own writer, and once the subscriber reads it receives
// every message once, in publish order.
func TestPausedReaderGetsEverything(t *testing.T) {
	o := quickOptions()
	o.WriteTimeout = time.Minute // however slow the machine, the pause is shorter
	r := startRig(t, testKeys, o, nil)
	d := websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			_ = nc.(*net.TCPConn).SetReadBuffer(256 << 10)
		}
		return nc, err
	}}
	ws, _, err := d.Dial("ws://"+r.addr+"/?"+keyQuery("k3"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	read := func() frame {
		t.Helper()
		var f frame
		_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		if err := ws.ReadJSON(&f); err != nil {
			t.Fatalf("read: %v", err)
		}
		return f
	}
	read() // Connected
	if err := ws.WriteJSON(sub("s", "paused")); err != nil {
		t.Fatal(err)
	}
	read() // Ack

	// 6 MB in 6 000 frames: more than the server's send buffer can grow
	// to (4 MB), less than the queue's bounds.
	const n = 6016 // 188 batches of 32
	payload := strings.Repeat("p", 1000)
	rc := servertest.Dial(t, r.resp)
	// In batches of 32 KB, each within what one flusher turn writes, so
	// that the turn that finds the socket full writes part of a batch.
	for i := 0; i < n; i += 32 {
		var batch []byte
		for j := i; j < i+32; j++ {
			batch = append(batch, servertest.Encode("PUBLISH", "paused", strconv.Itoa(j)+" "+payload)...)
		}
		if err := rc.Send(batch); err != nil {
			t.Fatal(err)
		}
		for range 32 {
			if _, err := rc.Read(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range n {
		f := read()
		if f.op() != 4 {
			t.Fatalf("frame %d: %v", i, f)
		}
		if got, _, _ := strings.Cut(f.str("data"), " "); got != strconv.Itoa(i) {
			t.Fatalf("message %d is %q", i, got)
		}
	}
}
