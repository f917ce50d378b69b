package realtime

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/sync/realtime/wire"
)

// TestConnsPerKey: past the key's ceiling the connect gets a 429 Nack and
// close 1013; tokens of the key count as the key; a slot frees when a
// connection closes.
func TestConnsPerKey(t *testing.T) {
	o := quickOptions()
	o.MaxConnsPerKey = 2
	r := startRig(t, testKeys, o, nil)
	a, _ := r.connect(t, keyQuery("k1"))
	r.connect(t, "accessToken="+r.token(t, "k1", time.Hour, nil, ""))
	c := r.dial(t, keyQuery("k1"))
	c.expect(wire.Nack, map[string]any{"code": codeTooMany})
	c.expectClose(websocket.CloseTryAgainLater)
	r.connect(t, keyQuery("k2")) // another key is not affected
	a.ws.Close()
	waitFor(t, "a slot to free", func() bool {
		c, err := dialClient(t, r.addr, keyQuery("k1"))
		if err != nil {
			t.Fatal(err)
		}
		ok := c.next().op() == wire.Connected
		c.ws.Close()
		return ok
	})
}

// TestSubscriptionsPerConnection: the 1001st subscription is a 429;
// replacing one is not a new one; the connection stays.
func TestSubscriptionsPerConnection(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	c, _ := r.connect(t, keyQuery("k3"))
	for i := 0; i < 1000; i++ {
		c.send(map[string]any{"op": wire.Subscribe, "channel": "s:" + strconv.Itoa(i)})
	}
	c.quiet() // no Nack for the first 1000
	c.send(sub("x", "s:1000"))
	c.expect(wire.Nack, map[string]any{"id": "x", "code": codeTooMany, "channel": "s:1000"})
	c.request(map[string]any{"op": wire.Subscribe, "id": "y", "channel": "s:5", "filter": "5"})
	c.request(map[string]any{"op": wire.Unsubscribe, "id": "z", "channel": "s:6"})
	c.request(sub("w", "s:1000"))
}

// TestMembersPerChannel: the 10001st member of a channel is a 429.
func TestMembersPerChannel(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	c, _ := r.connect(t, keyQuery("k3"))
	for i := 0; i < 10000; i++ {
		c.send(map[string]any{"op": wire.PresenceEnter, "channel": "crowd", "clientId": "m" + strconv.Itoa(i)})
	}
	c.quiet()
	c.send(enter("x", "crowd", "one-too-many", nil))
	c.expect(wire.Nack, map[string]any{"id": "x", "code": codeTooMany, "channel": "crowd"})
	c.request(enter("y", "crowd", "m7", "update is fine"))
	c.request(enter("z", "other", "one-too-many", nil))
	if n := r.l.pres.members("crowd"); n != 10000 {
		t.Fatalf("%d members", n)
	}
}

// TestPublishRate: more than 1000 publishes in a second get 429s; the
// connection stays.
func TestPublishRate(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	c, _ := r.connect(t, keyQuery("k3"))
	// 2001 publishes in one burst span at most two one-second windows
	// unless the burst takes over a second: at least one is refused.
	for i := 0; i < 2001; i++ {
		c.send(map[string]any{"op": wire.Publish, "channel": "rate"})
	}
	c.send(map[string]any{"op": wire.Heartbeat, "id": "end"})
	refused := 0
	for {
		f := c.next()
		if f.op() == wire.Heartbeat {
			break
		}
		if f.op() != wire.Nack || f.num("code") != codeTooMany || f.str("channel") != "rate" {
			t.Fatalf("frame %v", f)
		}
		refused++
	}
	if refused == 0 {
		t.Fatalf("2001 publishes in a burst, none refused")
	}
	t.Logf("%d of 2001 refused", refused)
}

// TestSlowConsumer: a connection that stops reading is sent a 4000 "slow
// consumer" Nack and closed once its queue passes the bound; what it had
// received is an unbroken prefix; the others receive everything.
func TestSlowConsumer(t *testing.T) {
	o := quickOptions()
	o.MaxQueueFrames = 200
	o.WriteTimeout = time.Minute // the slow client reads once cut off
	r := startRig(t, testKeys, o, nil)
	fast, _ := r.connect(t, keyQuery("k3"))
	fast.request(sub("1", "flood"))

	// The slow client reads nothing after its Ack.
	d := websocket.Dialer{}
	slow, _, err := d.Dial("ws://"+r.addr+"/?"+keyQuery("k3"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	readJSON := func() frame {
		var f frame
		_ = slow.SetReadDeadline(time.Now().Add(10 * time.Second))
		if err := slow.ReadJSON(&f); err != nil {
			t.Fatalf("slow client: %v", err)
		}
		return f
	}
	readJSON() // Connected
	slow.WriteJSON(sub("1", "flood"))
	readJSON() // Ack

	// Published in batches the fast client reads before the next, so
	// that only the slow one falls behind, however slow the machine.
	payload := strings.Repeat("p", 32<<10)
	rc := servertest.Dial(t, r.resp)
	const n, batch = 4000, 50
	sent := 0
	for i := 0; i < n && !r.anyClosing(); i += batch {
		sent = i + batch
		for j := i; j < i+batch; j++ {
			if _, err := rc.Do("PUBLISH", "flood", strconv.Itoa(j)+":"+payload); err != nil {
				t.Fatal(err)
			}
		}
		for j := i; j < i+batch; j++ {
			f := fast.expect(wire.Message, nil)
			if !strings.HasPrefix(f.str("data"), strconv.Itoa(j)+":") {
				t.Fatalf("fast client: message %d is %.20s", j, f.str("data"))
			}
		}
	}
	// Now the slow one reads: a prefix, the 4000, the close.
	next := 0
	for {
		var f frame
		_ = slow.SetReadDeadline(time.Now().Add(10 * time.Second))
		err := slow.ReadJSON(&f)
		if err != nil {
			if !websocket.IsCloseError(err, codeDisconnected) {
				t.Fatalf("slow client closed with %v after %d messages, want close 4000", err, next)
			}
			break
		}
		switch f.op() {
		case wire.Message:
			if !strings.HasPrefix(f.str("data"), strconv.Itoa(next)+":") {
				t.Fatalf("slow client: message %d is %.20s", next, f.str("data"))
			}
			next++
		case wire.Nack:
			if f.num("code") != codeDisconnected || f.str("message") != "slow consumer" {
				t.Fatalf("Nack %v", f)
			}
			next = -1 << 30 // nothing but the close may follow
		default:
			t.Fatalf("frame %v", f)
		}
	}
	if next >= 0 {
		t.Fatalf("no 4000 Nack")
	}
	if sent == n {
		t.Fatalf("the slow client was not cut off after %d messages", n)
	}
}

// anyClosing reports whether a connection of the rig is closing.
func (r *rig) anyClosing() bool {
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	for c := range r.l.conns {
		if c.isFinal() {
			return true
		}
	}
	return false
}

// TestHeartbeat: a client Heartbeat is answered with its id; the server
// sends one after HeartbeatInterval of silence; a client silent for
// IdleTimeout (not even answering WebSocket pings) gets 4000 and is
// closed, while one that sends heartbeats stays, and so does one that
// only listens but answers pings, as every WebSocket client does.
func TestHeartbeat(t *testing.T) {
	o := quickOptions()
	o.HeartbeatInterval = 200 * time.Millisecond
	o.IdleTimeout = time.Second
	r := startRig(t, testKeys, o, nil)
	c, _ := r.connect(t, keyQuery("k1"))
	c.beats = true
	pinged := make(chan struct{}, 100)
	c.ws.SetPingHandler(func(string) error { pinged <- struct{}{}; return nil }) // no pong
	c.send(map[string]any{"op": wire.Heartbeat, "id": "h"})
	c.expect(wire.Heartbeat, map[string]any{"id": "h"})
	f := c.expect(wire.Heartbeat, nil) // the server's, after 200 ms of silence
	if _, ok := f["id"]; ok {
		t.Fatalf("server heartbeat %v has an id", f)
	}
	for {
		f := c.next()
		if f.op() == wire.Nack {
			if f.num("code") != codeDisconnected {
				t.Fatalf("Nack %v", f)
			}
			break
		}
		if f.op() != wire.Heartbeat {
			t.Fatalf("frame %v", f)
		}
	}
	c.expectClose(codeDisconnected)
	if len(pinged) == 0 {
		t.Fatalf("the silent client was never pinged")
	}

	// A client that keeps talking outlives several idle timeouts.
	k, _ := r.connect(t, keyQuery("k1"))
	start := time.Now()
	for time.Since(start) < 3*o.IdleTimeout {
		k.send(map[string]any{"op": wire.Heartbeat, "id": "k"})
		k.expect(wire.Heartbeat, map[string]any{"id": "k"})
		time.Sleep(300 * time.Millisecond) // the client's pace, under the idle timeout
	}

	// A client that only receives, answering pings (gorilla's default),
	// outlives them too, while messages keep the server busy sending.
	l, _ := r.connect(t, keyQuery("k1"))
	l.request(sub("1", "chat:live"))
	rc := servertest.Dial(t, r.resp)
	start = time.Now()
	for i := 0; time.Since(start) < 3*o.IdleTimeout; i++ {
		if _, err := rc.Do("PUBLISH", "chat:live", strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
		l.expect(wire.Message, map[string]any{"data": strconv.Itoa(i)})
		time.Sleep(50 * time.Millisecond) // the publisher's pace
	}
}

// TestShutdown: Stop sends every connection 4000 then close 1001.
func TestShutdown(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	var cs []*client
	for i := 0; i < 5; i++ {
		c, _ := r.connect(t, keyQuery("k1"))
		cs = append(cs, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.l.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		c.expect(wire.Nack, map[string]any{"code": codeDisconnected, "message": "server shutting down"})
		c.expectClose(websocket.CloseGoingAway)
	}
	if n := r.l.Conns(); n != 0 {
		t.Fatalf("%d connections after Stop", n)
	}
}
