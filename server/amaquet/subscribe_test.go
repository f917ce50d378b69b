package amaquet_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/amaquet"
	"github.com/recached/recached/server/servertest"
)

// event is an event frame's payload.
type event struct {
	Channel string `json:"channel"`
	Payload struct {
		Type  string          `json:"type"`
		Value json.RawMessage `json:"value"`
	} `json:"payload"`
	PublishedAt string `json:"published_at"`
	Dropped     *int64 `json:"dropped"`
}

// readEvent reads an event frame of subscription id.
func (c *client) readEvent(id uint64) event {
	c.t.Helper()
	f := c.read()
	if f.kind != 3 || f.op != amaquet.OpSubscribe || f.id != id {
		c.t.Fatalf("frame kind %d op %d id %d, want an event of %d: %s", f.kind, f.op, f.id, id, f.payload)
	}
	var ev event
	if err := json.Unmarshal(f.payload, &ev); err != nil {
		c.t.Fatalf("event %q: %v", f.payload, err)
	}
	return ev
}

// TestSubscribe: RESP PUBLISH key:channel reaches an Amaquet subscriber
// of (key, channel) as events of its request id, typed text or bytes,
// stamped in RFC 3339 with nanoseconds; a Blackevin-style bus publish
// with data arrives as json; UNSUBSCRIBE stops them.
func TestSubscribe(t *testing.T) {
	e := start(t, amaquet.Options{}, "")
	c := dial(t, e.amq)
	f := c.do(amaquet.OpSubscribe, 7, `{"key":"bus","channel":"updates","buffer":16}`)
	if string(f.env(t).Result) != `{"key":"bus","channel":"updates"}` {
		t.Fatalf("SUBSCRIBE: %s", f.payload)
	}
	before := time.Now()
	if got := e.respDo(t, "PUBLISH", "bus:updates", "hello"); got != ":1\r\n" {
		t.Fatalf("PUBLISH %q", got)
	}
	ev := c.readEvent(7)
	if ev.Channel != "updates" || ev.Payload.Type != "text" || string(ev.Payload.Value) != `"hello"` || ev.Dropped != nil {
		t.Fatalf("event %+v", ev)
	}
	at, err := time.Parse(time.RFC3339Nano, ev.PublishedAt)
	if err != nil || at.Before(before.Add(-time.Second)) || len(ev.PublishedAt) != len("2006-01-02T15:04:05.000000000Z") {
		t.Fatalf("published_at %q: %v", ev.PublishedAt, err)
	}
	r := servertest.Dial(t, e.resp)
	if _, err := r.Do("PUBLISH", "bus:updates", "\xff\x00"); err != nil {
		t.Fatal(err)
	}
	ev = c.readEvent(7)
	if ev.Payload.Type != "bytes" || string(ev.Payload.Value) != `"/wA="` {
		t.Fatalf("bytes event %+v", ev)
	}
	if n, _ := e.srv.BusPublish([]byte("bus:updates"), server.RealtimeMeta{Name: "n", HasName: true, Data: json.RawMessage(`{"a":[1,2]}`), ConnectionID: "c1"}); n != 1 {
		t.Fatalf("BusPublish reached %d", n)
	}
	ev = c.readEvent(7)
	if ev.Payload.Type != "json" || string(ev.Payload.Value) != `{"a":[1,2]}` {
		t.Fatalf("json event %+v", ev)
	}
	// Other channels and keys are not delivered.
	e.respDo(t, "PUBLISH", "bus:other", "x")
	e.respDo(t, "PUBLISH", "updates", "x")
	if f := c.do(amaquet.OpUnsubscribe, 8, `{"key":"bus","channel":"updates"}`); string(f.env(t).Result) != `{"unsubscribed":true}` {
		t.Fatalf("UNSUBSCRIBE: %s", f.payload)
	}
	if got := e.respDo(t, "PUBLISH", "bus:updates", "late"); got != ":0\r\n" {
		t.Fatalf("PUBLISH after UNSUBSCRIBE reached %q", got)
	}
	if f := c.do(amaquet.OpUnsubscribe, 9, `{"key":"bus","channel":"updates"}`); string(f.env(t).Result) != `{"unsubscribed":false}` {
		t.Fatalf("second UNSUBSCRIBE: %s", f.payload)
	}
}

// TestResubscribeReplaces: a second SUBSCRIBE of the same key and
// channel replaces the first: one receiver, events with the new id.
func TestResubscribeReplaces(t *testing.T) {
	e := start(t, amaquet.Options{}, "")
	c := dial(t, e.amq)
	c.do(amaquet.OpSubscribe, 1, `{"key":"k","channel":"c"}`)
	c.do(amaquet.OpSubscribe, 2, `{"key":"k","channel":"c","buffer":4}`)
	if got := e.respDo(t, "PUBLISH", "k:c", "m"); got != ":1\r\n" {
		t.Fatalf("PUBLISH reached %q", got)
	}
	if ev := c.readEvent(2); string(ev.Payload.Value) != `"m"` {
		t.Fatalf("%+v", ev)
	}
	// A subscription of another connection is its own.
	d := dial(t, e.amq)
	d.do(amaquet.OpSubscribe, 1, `{"key":"k","channel":"c"}`)
	if got := e.respDo(t, "PUBLISH", "k:c", "m2"); got != ":2\r\n" {
		t.Fatalf("PUBLISH reached %q", got)
	}
	c.readEvent(2)
	d.readEvent(1)
	// Closing a connection removes its subscriptions.
	d.nc.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := e.respDo(t, "PUBSUB", "NUMSUB", "k:c")
		if got == "*2\r\n$3\r\nk:c\r\n:1\r\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("NUMSUB after close: %q", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDropped: a subscriber that does not read loses events beyond its
// buffer; the next event it gets says how many were dropped, and events
// keep publish order.
func TestDropped(t *testing.T) {
	e := start(t, amaquet.Options{}, "")
	c := dial(t, e.amq)
	c.do(amaquet.OpSubscribe, 3, `{"key":"bus","channel":"flood","buffer":1}`)
	r := servertest.Dial(t, e.resp)
	big := strings.Repeat("x", 16<<10)
	const n = 2000 // 32 MB: more than the sockets hold
	for i := 0; i < n; i++ {
		if _, err := r.Do("PUBLISH", "bus:flood", big); err != nil {
			t.Fatal(err)
		}
	}
	// Read now; publish numbered ticks, one at a time, until the newest
	// arrives: then every message was received or counted as dropped.
	evs := make(chan event, n+100)
	go func() {
		for {
			f, err := c.tryRead(30 * time.Second)
			if err != nil {
				close(evs)
				return
			}
			var ev event
			if json.Unmarshal(f.payload, &ev) == nil && f.kind == 3 && f.id == 3 {
				evs <- ev
			}
		}
	}()
	var got, dropped int64
	ticks := 0
	for seen := false; !seen; {
		if ticks == 100 {
			t.Fatalf("no tick arrived: received %d, dropped %d", got, dropped)
		}
		ticks++
		tick := `"tick-` + strconv.Itoa(ticks) + `"`
		if _, err := r.Do("PUBLISH", "bus:flood", tick[1:len(tick)-1]); err != nil {
			t.Fatal(err)
		}
		wait := time.After(2 * time.Second)
	drain:
		for {
			select {
			case ev, ok := <-evs:
				if !ok {
					t.Fatal("connection ended")
				}
				got++
				if ev.Dropped != nil {
					dropped += *ev.Dropped
				}
				if string(ev.Payload.Value) == tick {
					seen = true
					break drain
				}
			case <-wait:
				break drain
			}
		}
	}
	if dropped == 0 || got+dropped != int64(n+ticks) {
		t.Fatalf("received %d, dropped %d, of %d", got, dropped, n+ticks)
	}
}

// TestSameEffectsAsRESP: a write over Amaquet produces the keyspace
// notification and the sync mutation push a RESP write does.
func TestSameEffectsAsRESP(t *testing.T) {
	e := start(t, amaquet.Options{}, "")
	e.respDo(t, "CONFIG", "SET", "notify-keyspace-events", "KEA")
	sub := servertest.Dial(t, e.resp)
	if _, err := sub.Do("SUBSCRIBE", "__keyspace@0__:n1"); err != nil {
		t.Fatal(err)
	}
	syncer := servertest.Dial(t, e.resp)
	if _, err := syncer.Do("HELLO", "3"); err != nil {
		t.Fatal(err)
	}
	if rep, err := syncer.Do("SYNC", "n*"); err != nil || strings.HasPrefix(string(rep), "-") {
		t.Fatalf("SYNC: %q %v", rep, err)
	}
	amq := dial(t, e.amq)
	writer := servertest.Dial(t, e.resp)
	var viaAmq, viaRESP [2]string
	for round, via := range []*[2]string{&viaAmq, &viaRESP} {
		if round == 0 {
			amq.result(1, cmd("INCRBY", "n1", "5"))
		} else {
			if _, err := writer.Do("INCRBY", "n1", "5"); err != nil {
				t.Fatal(err)
			}
		}
		note, err := sub.Read()
		if err != nil {
			t.Fatal(err)
		}
		push, err := syncer.Read()
		if err != nil {
			t.Fatal(err)
		}
		via[0], via[1] = string(note), string(push)
	}
	if viaAmq[0] != viaRESP[0] || !strings.Contains(viaAmq[0], "incrby") {
		t.Errorf("notification: Amaquet %q, RESP %q", viaAmq[0], viaRESP[0])
	}
	// The pushes carry the new value: 5, then 10.
	if strings.Replace(viaAmq[1], "$1\r\n5\r\n", "$2\r\n10\r\n", 1) != viaRESP[1] {
		t.Errorf("sync push: Amaquet %q, RESP %q", viaAmq[1], viaRESP[1])
	}
}

// TestSubscriptionLimit: a connection holds at most 1000 subscriptions;
// re-subscribing one it holds is not a new one.
func TestSubscriptionLimit(t *testing.T) {
	e := start(t, amaquet.Options{}, "")
	c := dial(t, e.amq)
	var batch []byte
	for i := 0; i < 1000; i++ {
		batch = append(batch, request(amaquet.OpSubscribe, uint64(i), `{"key":"k","channel":"c`+strconv.Itoa(i)+`"}`)...)
	}
	c.write(batch)
	for i := 0; i < 1000; i++ {
		if f := c.read(); f.code(t) != "" {
			t.Fatalf("subscription %d: %s", i, f.payload)
		}
	}
	if f := c.do(amaquet.OpSubscribe, 1000, `{"key":"k","channel":"one-more"}`); f.code(t) != amaquet.CodeOverloaded {
		t.Fatalf("1001st: %s", f.payload)
	}
	if f := c.do(amaquet.OpSubscribe, 1001, `{"key":"k","channel":"c7"}`); f.code(t) != "" {
		t.Fatalf("re-subscribe at the limit: %s", f.payload)
	}
}
