package realtime

import (
	"context"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/sync/realtime/wire"
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

// TestMessagesAfterBurstArrive: after a pass that wrote to many
// connections the flusher waits for publishing to settle; whatever is
// published during the burst or the wait, and a message published alone
// afterwards, reaches every subscriber with nothing published after it
// (no later publication is needed to end the wait). A message published
// on a quiet server to one subscriber goes out likewise.
func TestMessagesAfterBurstArrive(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	read := func(ws *websocket.Conn) frame {
		t.Helper()
		var f frame
		_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second)) // a bound, not a timing assertion
		for {
			if err := ws.ReadJSON(&f); err != nil {
				t.Fatalf("read: %v", err)
			}
			if f.op() != wire.Heartbeat {
				return f
			}
		}
	}
	subscribe := func(channel string) *websocket.Conn {
		t.Helper()
		ws, _, err := websocket.DefaultDialer.Dial("ws://"+r.addr+"/?"+keyQuery("k3"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.Close() })
		if f := read(ws); f.op() != wire.Connected {
			t.Fatalf("got %v, want Connected", f)
		}
		if err := ws.WriteJSON(sub("s", channel)); err != nil {
			t.Fatal(err)
		}
		if f := read(ws); f.op() != wire.Ack {
			t.Fatalf("got %v, want the Subscribe's Ack", f)
		}
		return ws
	}
	expect := func(ws *websocket.Conn, data string) {
		t.Helper()
		if f := read(ws); f.op() != wire.Message || f.str("data") != data {
			t.Fatalf("got %v, want the message %q", f, data)
		}
	}

	subs := make([]*websocket.Conn, 4*burstConns) // each pass is a burst
	for i := range subs {
		subs[i] = subscribe("burst")
	}
	rc := servertest.Dial(t, r.resp)
	publish := func(channel, data string) {
		t.Helper()
		if _, err := rc.Do("PUBLISH", channel, data); err != nil {
			t.Fatal(err)
		}
	}
	// The second message is published once the first has reached a
	// subscriber: while the flusher writes it to the others, or waits
	// after that pass, and then no more until it has reached everyone.
	publish("burst", "one")
	expect(subs[0], "one")
	publish("burst", "two")
	for i, ws := range subs {
		if i > 0 {
			expect(ws, "one")
		}
		expect(ws, "two")
	}
	// One more once everything is written: the last thing published.
	publish("burst", "three")
	for _, ws := range subs {
		expect(ws, "three")
	}

	lone := subscribe("lone")
	publish("lone", "alone")
	expect(lone, "alone")
}

// TestYieldRunsNetworkReaders: with one P, a goroutine that never blocks
// keeps a goroutine waiting for a socket from running even after its bytes
// came in (runtime.Gosched does not look at the network); a yield lets it
// run before it returns, as the flusher's pass needs for the Publish frames
// that arrive during it. The runtime does not promise either: when
// another thread already waits in the poller, the reader runs once that
// thread hands it over, during the spin or after the yield; so half the
// bytes are asked to wait for a yield and three in four of those to go
// through at the first (nearly all do), and every byte within 50 ms.
func TestYieldRunsNetworkReaders(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	var got atomic.Int64
	go func() {
		b := make([]byte, 1)
		for {
			if _, err := server.Read(b); err != nil {
				return
			}
			got.Add(1)
		}
	}()
	var y yielder
	defer y.close()
	const bytes = 40
	waiting, first := 0, 0
	for i := range int64(bytes) {
		for deadline := time.Now().Add(time.Second); got.Load() < i && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond) // the reader parks on its socket
		}
		if _, err := client.Write([]byte{1}); err != nil {
			t.Fatal(err)
		}
		// Give the byte time to arrive without ever blocking: the
		// reader cannot run meanwhile.
		for deadline := time.Now().Add(200 * time.Microsecond); time.Now().Before(deadline); {
			runtime.Gosched()
		}
		if got.Load() > i {
			continue // another thread polled the network meanwhile
		}
		waiting++
		y.yield()
		if got.Load() == i+1 {
			first++
			continue
		}
		for deadline := time.Now().Add(50 * time.Millisecond); got.Load() == i && time.Now().Before(deadline); {
			y.yield()
		}
		if got.Load() != i+1 {
			t.Fatalf("byte %d: the reader did not run during 50 ms of yields", i)
		}
	}
	t.Logf("%d of %d bytes waited for a yield, %d went through at the first", waiting, bytes, first)
	if waiting < bytes/2 || first < waiting*3/4 {
		t.Errorf("%d of %d bytes waited for a yield, %d went through at the first: want half waiting, three in four of them through", waiting, bytes, first)
	}
}
