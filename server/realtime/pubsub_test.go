package realtime

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/sync/realtime/wire"
)

func sub(id, channel string) map[string]any {
	return map[string]any{"op": wire.Subscribe, "id": id, "channel": channel}
}

func pub(id, channel string, name string, data any) map[string]any {
	m := map[string]any{"op": wire.Publish, "id": id, "channel": channel}
	if name != "" {
		m["name"] = name
	}
	if data != nil {
		m["data"] = data
	}
	return m
}

// TestPublishSubscribe: a Publish reaches subscribers as a Message with
// the publisher's connectionId and the server's timestamp, name and data
// omitted when the publish had none; the publisher receives its own
// message unless it connected with echo=false.
func TestPublishSubscribe(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	a, aID := r.connect(t, keyQuery("k1"))
	b, _ := r.connect(t, keyQuery("k1"))
	quietPub, qID := r.connect(t, keyQuery("k1")+"&echo=false")
	a.request(sub("1", "chat:1"))
	b.request(sub("1", "chat:1"))
	quietPub.request(sub("1", "chat:1"))

	// The publisher, subscribed, receives its message before the Ack.
	before := time.Now().UnixMilli()
	a.send(pub("2", "chat:1", "greeting", map[string]any{"text": "hi", "n": 1}))
	for _, c := range []*client{a, b, quietPub} {
		f := c.expect(wire.Message, map[string]any{"channel": "chat:1", "name": "greeting", "data": map[string]any{"text": "hi", "n": 1}, "connectionId": aID})
		if ts := int64(f.num("timestamp")); ts < before || ts > time.Now().UnixMilli() {
			t.Fatalf("timestamp %d not within [%d, now]", ts, before)
		}
	}
	a.expect(wire.Ack, map[string]any{"id": "2"})
	b.send(pub("3", "chat:1", "", nil))
	for _, c := range []*client{a, b, quietPub} {
		f := c.expect(wire.Message, map[string]any{"channel": "chat:1"})
		if _, ok := f["name"]; ok {
			t.Fatalf("%v has a name", f)
		}
		if _, ok := f["data"]; ok {
			t.Fatalf("%v has data", f)
		}
	}
	b.expect(wire.Ack, map[string]any{"id": "3"})
	// echo=false: its own publish is not delivered back to it.
	quietPub.request(pub("5", "chat:1", "n", "own"))
	a.expect(wire.Message, map[string]any{"connectionId": qID, "data": "own"})
	b.expect(wire.Message, map[string]any{"connectionId": qID, "data": "own"})
	quietPub.quiet()
}

// TestNullData: `"data":null` is published as data null, not as no data.
func TestNullData(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	a, _ := r.connect(t, keyQuery("k1"))
	a.request(sub("1", "chat:1"))
	a.sendRaw(1, []byte(`{"op":3,"id":"2","channel":"chat:1","data":null}`))
	f := a.expect(wire.Message, nil)
	if v, ok := f["data"]; !ok || v != nil {
		t.Fatalf("%v: want data null", f)
	}
	a.expect(wire.Ack, map[string]any{"id": "2"})
}

// TestGlobAndFilter: a glob subscription receives every matching channel,
// its RE2 filter narrows it, a message matching two subscriptions of a
// connection is delivered once, and Unsubscribe stops delivery.
func TestGlobAndFilter(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	c, _ := r.connect(t, keyQuery("k3"))
	c.request(sub("1", "room:*"))
	c.request(map[string]any{"op": wire.Subscribe, "id": "2", "channel": "digits:*", "filter": `^digits:[0-9]+$`})
	c.request(sub("3", "room:1"))
	p, _ := r.connect(t, keyQuery("k3"))
	for i, ch := range []string{"room:1", "room:lobby", "digits:42", "digits:abc", "other", "digits:7"} {
		p.request(pub(strconv.Itoa(i), ch, "", ch))
	}
	for _, want := range []string{"room:1", "room:lobby", "digits:42", "digits:7"} {
		c.expect(wire.Message, map[string]any{"channel": want, "data": want})
	}
	c.quiet()
	c.request(map[string]any{"op": wire.Unsubscribe, "id": "4", "channel": "room:*"})
	c.request(map[string]any{"op": wire.Unsubscribe, "id": "5", "channel": "never-subscribed"})
	p.request(pub("6", "room:lobby", "", "x"))
	p.request(pub("7", "room:1", "", "y"))
	c.expect(wire.Message, map[string]any{"channel": "room:1", "data": "y"})
	c.quiet()
}

// TestResubscribeReplaces: a second Subscribe of the same channel string
// replaces the first, filter included, and messages flowing meanwhile are
// delivered exactly once.
func TestResubscribeReplaces(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	c, _ := r.connect(t, keyQuery("k3"))
	c.request(map[string]any{"op": wire.Subscribe, "id": "1", "channel": "t:*", "filter": "^t:a"})
	c.request(map[string]any{"op": wire.Subscribe, "id": "2", "channel": "t:*", "filter": "^t:b"})
	p, _ := r.connect(t, keyQuery("k3"))
	p.request(pub("1", "t:a", "", 1))
	p.request(pub("2", "t:b", "", 2))
	c.expect(wire.Message, map[string]any{"channel": "t:b"})
	c.quiet()

	// Resubscribing while a publisher runs loses and repeats nothing.
	c.request(sub("3", "seq"))
	const n = 400
	done := make(chan struct{})
	go func() {
		defer close(done)
		rc := servertest.Dial(t, r.resp)
		for i := 0; i < n; i++ {
			if _, err := rc.Do("PUBLISH", "seq", strconv.Itoa(i)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := 0; i < 20; i++ {
		c.send(map[string]any{"op": wire.Subscribe, "id": "re" + strconv.Itoa(i), "channel": "seq"})
	}
	next := 0
	acks := 0
	for next < n || acks < 20 {
		f := c.next()
		switch f.op() {
		case wire.Ack:
			acks++
		case wire.Message:
			if got := f.str("data"); got != strconv.Itoa(next) {
				t.Fatalf("got message %s, want %d", got, next)
			}
			next++
		default:
			t.Fatalf("frame %v", f)
		}
	}
	<-done
	c.quiet()
}

// TestRewind: rewind delivers the last min(N, 100) messages oldest first
// right after the Ack, from RESP and realtime publishers alike.
func TestRewind(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	p, _ := r.connect(t, keyQuery("k3"))
	for i := 0; i < 150; i++ {
		if i%2 == 0 {
			p.request(pub(strconv.Itoa(i), "hist", "n", i))
		} else {
			r.respDo(t, "PUBLISH", "hist", strconv.Itoa(i))
		}
	}
	for _, tc := range []struct{ rewind, first, count int }{
		{5, 145, 5}, {1, 149, 1}, {100, 50, 100}, {1000, 50, 100}, {0, 0, 0},
	} {
		t.Run(fmt.Sprint(tc.rewind), func(t *testing.T) {
			c, _ := r.connect(t, keyQuery("k3"))
			c.send(map[string]any{"op": wire.Subscribe, "id": "s", "channel": "hist", "rewind": tc.rewind})
			c.expect(wire.Ack, map[string]any{"id": "s"})
			for i := tc.first; i < tc.first+tc.count; i++ {
				f := c.expect(wire.Message, map[string]any{"channel": "hist"})
				got := fmt.Sprint(f["data"])
				if i%2 == 1 {
					if f.str("connectionId") != "resp" {
						t.Fatalf("%v: want connectionId resp", f)
					}
				}
				if got != strconv.Itoa(i) {
					t.Fatalf("history message %v, want %d", f, i)
				}
			}
			c.quiet()
		})
	}
}

// TestRewindUnderConcurrentPublishes subscribes with rewind while a
// publisher runs: the history and the live stream together are the
// publisher's sequence from some point on, with no gap and no repeat.
func TestRewindUnderConcurrentPublishes(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	const n = 3000
	started := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		rc := servertest.Dial(t, r.resp)
		for i := 0; i < n; i++ {
			if i == 200 {
				close(started)
			}
			if _, err := rc.Do("PUBLISH", "busy", strconv.Itoa(i)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	<-started
	var wg sync.WaitGroup
	for k := 0; k < 4; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := dialClient(t, r.addr, keyQuery("k3"))
			if err != nil {
				t.Error(err)
				return
			}
			if f := <-c.frames; f.op() != wire.Connected {
				t.Errorf("first frame %v", f)
				return
			}
			c.ws.WriteJSON(map[string]any{"op": wire.Subscribe, "id": "s", "channel": "busy", "rewind": 100})
			if f := <-c.frames; f.op() != wire.Ack {
				t.Errorf("after Subscribe: %v", f)
				return
			}
			prev := -1
			for prev < n-1 {
				f, ok := <-c.frames
				if !ok {
					t.Errorf("closed at %d", prev)
					return
				}
				v, _ := strconv.Atoi(f.str("data"))
				if prev >= 0 && v != prev+1 {
					t.Errorf("message %d after %d", v, prev)
					return
				}
				prev = v
			}
		}()
	}
	wg.Wait()
	<-done
}

// TestRESPBridge: RESP PUBLISH reaches realtime subscribers as a Message
// whose data is the payload as a JSON string and connectionId "resp"; a
// realtime Publish reaches RESP subscribers as the JSON text of SPEC
// section 11, in one publish order, and PUBLISH counts realtime
// receivers.
func TestRESPBridge(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	c, cID := r.connect(t, keyQuery("k3"))
	c.request(sub("1", "bridge"))
	if got := r.respDo(t, "PUBLISH", "bridge", "hello \"world\"\n\xff"); got != ":1\r\n" {
		t.Fatalf("PUBLISH counted %q, want :1", got)
	}
	f := c.expect(wire.Message, map[string]any{"channel": "bridge", "data": "hello \"world\"\n\uFFFD", "connectionId": "resp"})
	if _, ok := f["name"]; ok {
		t.Fatalf("%v has a name", f)
	}

	nc, err := net.Dial("tcp", r.resp)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	br := bufio.NewReader(nc)
	fmt.Fprint(nc, "SUBSCRIBE bridge\r\n")
	readRESP(t, nc, br) // the confirmation
	c.send(pub("2", "bridge", "ev", map[string]any{"k": []int{1, 2}}))
	c.expect(wire.Message, map[string]any{"data": map[string]any{"k": []int{1, 2}}})
	c.expect(wire.Ack, map[string]any{"id": "2"})
	msg := readRESP(t, nc, br)
	want := fmt.Sprintf(`{"name":"ev","data":{"k":[1,2]},"connectionId":"%s","timestamp":`, cID)
	if !strings.Contains(msg, want) {
		t.Fatalf("RESP subscriber got %q, want the payload %s…}", msg, want)
	}
	// Order: two publishers, one on each path, at once; both subscribers
	// see one order.
	const n = 200
	done := make(chan struct{})
	go func() {
		defer close(done)
		rc := servertest.Dial(t, r.resp)
		for i := 0; i < n; i += 2 {
			if _, err := rc.Do("PUBLISH", "bridge", strconv.Itoa(i)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := 1; i < n; i += 2 {
		c.send(map[string]any{"op": wire.Publish, "channel": "bridge", "data": i})
	}
	<-done
	var viaRT, viaRESP []string
	for i := 0; i < n; i++ {
		viaRT = append(viaRT, fmt.Sprint(c.expect(wire.Message, nil)["data"]))
		m := readRESP(t, nc, br)
		parts := strings.Split(m, "\r\n")
		v := parts[len(parts)-2]
		if strings.HasPrefix(v, "{") {
			var p struct{ Data int }
			if err := json.Unmarshal([]byte(v), &p); err != nil {
				t.Fatalf("RESP payload %q: %v", v, err)
			}
			v = strconv.Itoa(p.Data)
		}
		viaRESP = append(viaRESP, v)
	}
	if strings.Join(viaRT, ",") != strings.Join(viaRESP, ",") {
		t.Fatalf("orders differ:\nrealtime %v\nRESP     %v", viaRT, viaRESP)
	}
}

// readRESP reads one RESP push (an array of bulk strings) as text.
func readRESP(t *testing.T, nc net.Conn, br *bufio.Reader) string {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
	out := line
	for i := 0; i < n; i++ {
		h, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		out += h
		if h[0] == '$' {
			l, _ := strconv.Atoi(strings.TrimSpace(h[1:]))
			buf := make([]byte, l+2)
			if _, err := io.ReadFull(br, buf); err != nil {
				t.Fatal(err)
			}
			out += string(buf)
		}
	}
	return out
}

// TestKeyspaceNotifications: keyspace notification channels are
// subscribable like any other when the capability allows.
func TestKeyspaceNotifications(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	r.respDo(t, "CONFIG", "SET", "notify-keyspace-events", "KEA")
	c, _ := r.connect(t, keyQuery("k1"))
	c.request(sub("1", "__keyspace@0__:user:*"))
	c.request(sub("2", "__keyevent@0__:del"))
	r.respDo(t, "SET", "user:42", "v")
	r.respDo(t, "DEL", "user:42")
	c.expect(wire.Message, map[string]any{"channel": "__keyspace@0__:user:42", "data": "set", "connectionId": "resp"})
	c.expect(wire.Message, map[string]any{"channel": "__keyspace@0__:user:42", "data": "del"})
	c.expect(wire.Message, map[string]any{"channel": "__keyevent@0__:del", "data": "user:42"})

	narrow, _ := r.connect(t, keyQuery("k2"))
	narrow.send(sub("1", "__keyspace@0__:user:*"))
	narrow.expect(wire.Nack, map[string]any{"id": "1", "code": codeForbidden, "channel": "__keyspace@0__:user:*"})
	narrow.quiet()
}

// TestFanOutSharesFrame: one publication delivered to many connections is
// encoded once; every queue holds the same bytes. (No writer runs: the
// test reads the queues.)
func TestFanOutSharesFrame(t *testing.T) {
	l := New(nil, "", DefaultOptions())
	m := &server.BusMessage{Channel: []byte("fan"), Payload: []byte("x"), Time: time.Now()}
	var conns []*conn
	for i := 0; i < 5; i++ {
		c := &conn{l: l, id: "c" + strconv.Itoa(i), echo: true, writing: true}
		s := &subscription{c: c, channel: "fan"}
		s.deliver(m)
		conns = append(conns, c)
	}
	first := conns[0].queue[0]
	if want := `{"op":4,"channel":"fan","data":"x","connectionId":"resp","timestamp":` + strconv.FormatInt(m.Time.UnixMilli(), 10) + `}`; string(first[2:]) != want {
		t.Fatalf("frame %q, want %q", first[2:], want)
	}
	for _, c := range conns {
		if len(c.queue) != 1 || &c.queue[0][0] != &first[0] {
			t.Fatalf("connection %s holds its own copy of the frame", c.id)
		}
	}
	// A second delivery of the same publication to a connection (two of
	// its subscriptions match) is dropped.
	(&subscription{c: conns[0], channel: "f*", glob: true}).deliver(m)
	if len(conns[0].queue) != 1 {
		t.Fatalf("delivered twice to one connection")
	}
}

// BenchmarkFanOut measures delivering one publication to 5000
// subscriptions: the bus's per-subscriber work on the publisher's
// goroutine (queueing; no writer runs).
func BenchmarkFanOut(b *testing.B) {
	l := New(nil, "", DefaultOptions())
	l.opts.MaxQueueFrames = 1 << 30
	l.opts.MaxQueueBytes = 1 << 40
	subs := make([]*subscription, 5000)
	for i := range subs {
		c := &conn{l: l, id: "c", echo: true, writing: true}
		subs[i] = &subscription{c: c, channel: "fan"}
	}
	b.ReportAllocs()
	for b.Loop() {
		m := &server.BusMessage{Channel: []byte("fan"), Payload: []byte("payload"), Time: time.Now()}
		for _, s := range subs {
			s.deliver(m)
		}
		for _, s := range subs {
			clear(s.c.queue)
			s.c.queue = s.c.queue[:0]
			s.c.qbytes = 0
		}
	}
}

// TestConcurrentPublishers: four connections publish to one channel at
// once; every subscriber receives every message once, each publisher's in
// the order it sent them, and all subscribers in the same order.
func TestConcurrentPublishers(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	var subs []*client
	for i := 0; i < 2; i++ {
		c, _ := r.connect(t, keyQuery("k3"))
		c.request(sub("s", "many"))
		subs = append(subs, c)
	}
	const pubs, n = 4, 100
	var wg sync.WaitGroup
	for p := 0; p < pubs; p++ {
		c, _ := r.connect(t, keyQuery("k3"))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				if err := c.ws.WriteJSON(map[string]any{"op": wire.Publish, "channel": "many", "name": strconv.Itoa(p), "data": i}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var orders []string
	for _, c := range subs {
		last := []int{-1, -1, -1, -1}
		var order []string
		for k := 0; k < pubs*n; k++ {
			f := c.expect(wire.Message, map[string]any{"channel": "many"})
			p, _ := strconv.Atoi(f.str("name"))
			if i := f.num("data"); i != last[p]+1 {
				t.Fatalf("publisher %d: message %d after %d", p, i, last[p])
			}
			last[p]++
			order = append(order, f.str("name"))
		}
		c.quiet()
		orders = append(orders, strings.Join(order, ""))
	}
	if orders[0] != orders[1] {
		t.Fatalf("the subscribers saw different orders")
	}
}
