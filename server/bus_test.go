package server_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// busQueue is a bus subscriber that queues what it receives, as a
// transport would.
type busQueue struct {
	mu   sync.Mutex
	msgs []*server.BusMessage
	ch   chan struct{}
}

func newBusQueue() *busQueue { return &busQueue{ch: make(chan struct{}, 1)} }

func (q *busQueue) deliver(m *server.BusMessage) {
	q.mu.Lock()
	q.msgs = append(q.msgs, m)
	q.mu.Unlock()
	select {
	case q.ch <- struct{}{}:
	default:
	}
}

// wait returns the first n messages once they have arrived, failing after
// 10 seconds.
func (q *busQueue) wait(t *testing.T, n int) []*server.BusMessage {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		q.mu.Lock()
		if len(q.msgs) >= n {
			out := append([]*server.BusMessage(nil), q.msgs[:n]...)
			q.mu.Unlock()
			return out
		}
		q.mu.Unlock()
		select {
		case <-q.ch:
		case <-deadline:
			t.Fatalf("bus subscriber: %d of %d messages after 10s", q.len(), n)
		}
	}
}

func (q *busQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.msgs)
}

// readPush reads one pub/sub message from a RESP2 subscriber and returns
// its channel and payload (pattern messages: the last two elements).
func readPush(t *testing.T, c *servertest.Client) (string, string) {
	t.Helper()
	rep, err := c.Read()
	if err != nil {
		t.Fatal(err)
	}
	els, err := servertest.Elements(rep)
	if err != nil || len(els) < 3 {
		t.Fatalf("not a message: %q (%v)", rep, err)
	}
	return bulkText(els[len(els)-2]), bulkText(els[len(els)-1])
}

func subscribe(t *testing.T, c *servertest.Client, cmd string, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := c.Send(servertest.Encode(cmd, n)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBusRESPBothWays: a RESP PUBLISH reaches bus subscriptions (by channel
// and by glob) and is counted; a BusPublish reaches RESP subscribers as the
// JSON text of SPEC section 11, and bus subscribers with Realtime set.
func TestBusRESPBothWays(t *testing.T) {
	addr, srv := servertest.StartRecached(t, server.DefaultConfig())
	exact, glob, other := newBusQueue(), newBusQueue(), newBusQueue()
	srv.BusSubscribe(server.BusSubOptions{Channel: "chat:1", Deliver: exact.deliver})
	srv.BusSubscribe(server.BusSubOptions{Channel: "chat:*", Glob: true, Deliver: glob.deliver})
	srv.BusSubscribe(server.BusSubOptions{Channel: "news", Deliver: other.deliver})
	sub := servertest.Dial(t, addr)
	subscribe(t, sub, "SUBSCRIBE", "chat:1")
	pub := servertest.Dial(t, addr)
	if got := servertest.MustDo(t, pub, "PUBLISH", "chat:1", "hello"); got != ":3\r\n" {
		t.Fatalf("PUBLISH counted %q, want :3", got)
	}
	if ch, p := readPush(t, sub); ch != "chat:1" || p != "hello" {
		t.Fatalf("RESP subscriber got %q %q", ch, p)
	}
	for _, q := range []*busQueue{exact, glob} {
		m := q.wait(t, 1)[0]
		if string(m.Channel) != "chat:1" || string(m.Payload) != "hello" || m.Realtime != nil || m.Notification || m.Time.IsZero() {
			t.Fatalf("bus subscriber got %+v", m)
		}
	}

	n, bm := srv.BusPublish([]byte("chat:1"), server.RealtimeMeta{Name: "greeting", HasName: true, Data: json.RawMessage(`{ "text" : "hi" }`), ConnectionID: "conn-1"})
	if n != 3 {
		t.Fatalf("BusPublish counted %d, want 3", n)
	}
	want := fmt.Sprintf(`{"name":"greeting","data":{"text":"hi"},"connectionId":"conn-1","timestamp":%d}`, bm.Time.UnixMilli())
	if ch, p := readPush(t, sub); ch != "chat:1" || p != want {
		t.Fatalf("RESP subscriber got %q %q, want %q", ch, p, want)
	}
	for _, q := range []*busQueue{exact, glob} {
		m := q.wait(t, 2)[1]
		if m != bm || m.Realtime.Name != "greeting" || string(m.Realtime.Data) != `{ "text" : "hi" }` || m.Realtime.ConnectionID != "conn-1" {
			t.Fatalf("bus subscriber got %+v", m)
		}
	}
	// Without name or data the JSON text omits them.
	_, bm = srv.BusPublish([]byte("chat:1"), server.RealtimeMeta{ConnectionID: "c2"})
	want = fmt.Sprintf(`{"connectionId":"c2","timestamp":%d}`, bm.Time.UnixMilli())
	if _, p := readPush(t, sub); p != want {
		t.Fatalf("RESP subscriber got %q, want %q", p, want)
	}
	if other.len() != 0 {
		t.Fatalf("a subscriber of another channel received %d messages", other.len())
	}
}

// TestBusOrder: concurrent publishers on one channel, RESP and bus; a RESP
// subscriber, a RESP pattern subscriber, a bus channel subscription and a
// bus glob subscription see the same order.
func TestBusOrder(t *testing.T) {
	addr, srv := servertest.StartRecached(t, server.DefaultConfig())
	const publishers, each = 4, 200
	total := 2 * publishers * each
	exact, glob := newBusQueue(), newBusQueue()
	srv.BusSubscribe(server.BusSubOptions{Channel: "order", Deliver: exact.deliver})
	srv.BusSubscribe(server.BusSubOptions{Channel: "ord*", Glob: true, Deliver: glob.deliver})
	sub := servertest.Dial(t, addr)
	subscribe(t, sub, "SUBSCRIBE", "order")
	psub := servertest.Dial(t, addr)
	subscribe(t, psub, "PSUBSCRIBE", "o*")
	var wg sync.WaitGroup
	for p := 0; p < publishers; p++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			c := servertest.Dial(t, addr)
			for i := 0; i < each; i++ {
				if _, err := c.Do("PUBLISH", "order", fmt.Sprintf("resp-%d-%d", p, i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				srv.BusPublish([]byte("order"), server.RealtimeMeta{Name: fmt.Sprintf("bus-%d-%d", p, i), HasName: true, ConnectionID: "x"})
			}
		}()
	}
	wg.Wait()
	payloads := func(q *busQueue) []string {
		var out []string
		for _, m := range q.wait(t, total) {
			out = append(out, string(m.Payload))
		}
		return out
	}
	ref := payloads(exact)
	got := exact.wait(t, total)
	for i := 1; i < len(got); i++ {
		if got[i].Time.Before(got[i-1].Time) {
			t.Fatalf("message %d's time %v is before the previous one's %v", i, got[i].Time, got[i-1].Time)
		}
	}
	if got := payloads(glob); strings.Join(got, "\n") != strings.Join(ref, "\n") {
		t.Fatal("the bus glob subscription saw another order than the bus channel subscription")
	}
	for _, c := range []*servertest.Client{sub, psub} {
		for i := 0; i < total; i++ {
			if _, p := readPush(t, c); p != ref[i] {
				t.Fatalf("RESP subscriber message %d is %q, the bus saw %q", i, p, ref[i])
			}
		}
	}
	// Each publisher's messages are in its own order.
	next := map[string]int{}
	for _, p := range ref {
		var prefix string
		var n int
		if strings.HasPrefix(p, "resp-") {
			i := strings.LastIndexByte(p, '-')
			prefix, n = p[:i], atoi(t, p[i+1:])
		} else {
			var m map[string]any
			if err := json.Unmarshal([]byte(p), &m); err != nil {
				t.Fatal(err)
			}
			name := m["name"].(string)
			i := strings.LastIndexByte(name, '-')
			prefix, n = name[:i], atoi(t, name[i+1:])
		}
		if next[prefix] != n {
			t.Fatalf("%s: message %d arrived when %d was expected", prefix, n, next[prefix])
		}
		next[prefix]++
	}
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBusUnsubscribe: once BusUnsubscribe returns nothing more is
// delivered; a second call reports false.
func TestBusUnsubscribe(t *testing.T) {
	srv := server.New(server.DefaultConfig())
	for _, glob := range []bool{false, true} {
		q := newBusQueue()
		name := "u"
		if glob {
			name = "u*"
		}
		sub := srv.BusSubscribe(server.BusSubOptions{Channel: name, Glob: glob, Deliver: q.deliver})
		if n, _ := srv.BusPublish([]byte("u"), server.RealtimeMeta{ConnectionID: "c"}); n != 1 {
			t.Fatalf("glob %v: count %d before unsubscribing", glob, n)
		}
		if !srv.BusUnsubscribe(sub) {
			t.Fatal("BusUnsubscribe reported false")
		}
		if srv.BusUnsubscribe(sub) {
			t.Fatal("a second BusUnsubscribe reported true")
		}
		if n, _ := srv.BusPublish([]byte("u"), server.RealtimeMeta{ConnectionID: "c"}); n != 0 {
			t.Fatalf("glob %v: count %d after unsubscribing", glob, n)
		}
		if q.len() != 1 {
			t.Fatalf("glob %v: %d deliveries, want 1", glob, q.len())
		}
	}
}

// TestBusReplace: replacing a subscription while a publisher runs loses
// and duplicates nothing: every message reaches the old one or the new
// one, the old one's before the new one's, and the old one gets nothing
// once replaced.
func TestBusReplace(t *testing.T) {
	srv := server.New(server.DefaultConfig())
	const total = 2000
	var mu sync.Mutex
	var got []string
	deliver := func(tag string) func(*server.BusMessage) {
		return func(m *server.BusMessage) {
			mu.Lock()
			got = append(got, tag+":"+m.Realtime.Name)
			mu.Unlock()
		}
	}
	sub := srv.BusSubscribe(server.BusSubOptions{Channel: "r", Deliver: deliver("0")})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < total; i++ {
			srv.BusPublish([]byte("r"), server.RealtimeMeta{Name: strconv.Itoa(i), HasName: true, ConnectionID: "p"})
		}
	}()
	for i := 1; i <= 20; i++ {
		sub = srv.BusReplace(sub, server.BusSubOptions{Channel: "r", Deliver: deliver(strconv.Itoa(i))})
	}
	<-done
	if srv.BusReplace(nil, server.BusSubOptions{Channel: "x", Deliver: func(*server.BusMessage) {}}) == nil {
		t.Fatal("BusReplace(nil, …) returned nil")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != total {
		t.Fatalf("%d deliveries, want %d", len(got), total)
	}
	lastTag := 0
	for i, g := range got {
		tag, name, _ := strings.Cut(g, ":")
		if atoi(t, name) != i {
			t.Fatalf("delivery %d is message %s", i, name)
		}
		if n := atoi(t, tag); n < lastTag {
			t.Fatalf("delivery %d went to subscription %d after %d had been replaced", i, n, lastTag)
		} else {
			lastTag = n
		}
	}
}

// TestBusFilter: a publication a subscription's Filter refuses is neither
// delivered nor counted.
func TestBusFilter(t *testing.T) {
	srv := server.New(server.DefaultConfig())
	q := newBusQueue()
	srv.BusSubscribe(server.BusSubOptions{Channel: "f:*", Glob: true, Filter: func(ch []byte) bool { return strings.HasSuffix(string(ch), "!") }, Deliver: q.deliver})
	for _, tt := range []struct {
		ch   string
		want int
	}{{"f:a", 0}, {"f:a!", 1}, {"g:a!", 0}} {
		if n, _ := srv.BusPublish([]byte(tt.ch), server.RealtimeMeta{ConnectionID: "c"}); n != tt.want {
			t.Errorf("%s: count %d, want %d", tt.ch, n, tt.want)
		}
	}
	if q.len() != 1 {
		t.Fatalf("%d deliveries, want 1", q.len())
	}
}

// TestBusPubSubIntrospection: PUBSUB NUMSUB counts bus subscriptions of the
// channel (receivers, as Redis users expect), PUBSUB CHANNELS lists
// channels only bus subscriptions have, NUMPAT counts distinct globs of
// both kinds; shard channels know nothing of the bus.
func TestBusPubSubIntrospection(t *testing.T) {
	addr, srv := servertest.StartRecached(t, server.DefaultConfig())
	c := servertest.Dial(t, addr)
	sub := servertest.Dial(t, addr)
	subscribe(t, sub, "SUBSCRIBE", "both")
	subscribe(t, sub, "PSUBSCRIBE", "b*")
	nop := func(*server.BusMessage) {}
	srv.BusSubscribe(server.BusSubOptions{Channel: "both", Deliver: nop})
	srv.BusSubscribe(server.BusSubOptions{Channel: "busonly", Deliver: nop})
	srv.BusSubscribe(server.BusSubOptions{Channel: "busonly", Deliver: nop})
	srv.BusSubscribe(server.BusSubOptions{Channel: "b*", Glob: true, Deliver: nop})
	srv.BusSubscribe(server.BusSubOptions{Channel: "x*", Glob: true, Deliver: nop})
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"PUBSUB", "NUMSUB", "both", "busonly", "none"}, "*6\r\n$4\r\nboth\r\n:2\r\n$7\r\nbusonly\r\n:2\r\n$4\r\nnone\r\n:0\r\n"},
		{[]string{"PUBSUB", "NUMPAT"}, ":2\r\n"},
		{[]string{"PUBSUB", "CHANNELS", "bus*"}, "*1\r\n$7\r\nbusonly\r\n"},
		{[]string{"PUBSUB", "SHARDNUMSUB", "both"}, "*2\r\n$4\r\nboth\r\n:0\r\n"},
		// Subscriptions: both (RESP + bus), b* (RESP + bus glob), busonly (2).
		{[]string{"PUBLISH", "both", "m"}, ":4\r\n"},
		{[]string{"PUBLISH", "busonly", "m"}, ":4\r\n"},
		{[]string{"SPUBLISH", "both", "m"}, ":0\r\n"},
	}
	for _, tt := range tests {
		if got := servertest.MustDo(t, c, tt.args...); got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.args, got, tt.want)
		}
	}
	chans := servertest.MustDo(t, c, "PUBSUB", "CHANNELS")
	for _, ch := range []string{"both", "busonly"} {
		if strings.Count(chans, "\r\n"+ch+"\r\n") != 1 {
			t.Errorf("PUBSUB CHANNELS %q lists %s other than once", chans, ch)
		}
	}
}

// TestBusNotifications: keyspace notifications reach bus subscribers with
// Notification set, and are not recorded in the history.
func TestBusNotifications(t *testing.T) {
	addr, srv := servertest.StartRecached(t, server.DefaultConfig())
	c := servertest.Dial(t, addr)
	servertest.MustDo(t, c, "CONFIG", "SET", "notify-keyspace-events", "KEA")
	q := newBusQueue()
	srv.BusSubscribe(server.BusSubOptions{Channel: "__keyspace@0__:user:*", Glob: true, Deliver: q.deliver})
	servertest.MustDo(t, c, "SET", "user:1", "v")
	m := q.wait(t, 1)[0]
	if string(m.Channel) != "__keyspace@0__:user:1" || string(m.Payload) != "set" || !m.Notification {
		t.Fatalf("got %+v", m)
	}
	var hist []*server.BusMessage
	srv.BusSubscribe(server.BusSubOptions{Channel: "__keyspace@0__:user:1", Rewind: 100, Start: func(h []*server.BusMessage) { hist = h }, Deliver: q.deliver})
	if len(hist) != 0 {
		t.Fatalf("a notification was recorded in the history: %d messages", len(hist))
	}
}

// TestRewindBoundary: subscriptions with Rewind made while publishers run
// see every message exactly once, history then live, in order.
func TestRewindBoundary(t *testing.T) {
	srv := server.New(server.DefaultConfig())
	const total = 3000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < total; i++ {
			srv.BusPublish([]byte("rw"), server.RealtimeMeta{Name: strconv.Itoa(i), HasName: true, ConnectionID: "p"})
		}
	}()
	type result struct {
		q    *busQueue
		hist []*server.BusMessage
	}
	var results []*result
	for i := 0; i < 20; i++ {
		r := &result{q: newBusQueue()}
		srv.BusSubscribe(server.BusSubOptions{Channel: "rw", Rewind: 100, Start: func(h []*server.BusMessage) { r.hist = h }, Deliver: r.q.deliver})
		results = append(results, r)
	}
	<-done
	for i, r := range results {
		var names []int
		for _, m := range r.hist {
			names = append(names, atoi(t, m.Realtime.Name))
		}
		first := total - r.q.len()
		live := r.q.wait(t, r.q.len())
		for _, m := range live {
			names = append(names, atoi(t, m.Realtime.Name))
		}
		if len(r.hist) > 100 {
			t.Fatalf("subscriber %d: %d history messages", i, len(r.hist))
		}
		if first > 100 && len(r.hist) != 100 {
			t.Fatalf("subscriber %d: %d history messages, want 100", i, len(r.hist))
		}
		for j := 1; j < len(names); j++ {
			if names[j] != names[j-1]+1 {
				t.Fatalf("subscriber %d: message %d follows %d", i, names[j], names[j-1])
			}
		}
		if len(names) > 0 && names[len(names)-1] != total-1 {
			t.Fatalf("subscriber %d: the last message is %d", i, names[len(names)-1])
		}
	}
}

// BenchmarkPublish is RESP PUBLISH through the engine (no transport) to a
// channel with no subscriber, one RESP subscriber, and one bus subscriber,
// with no subscriber and the history off, and to a million distinct
// channels in turn (each new until b.N passes a million), which the
// history records.
func BenchmarkPublish(b *testing.B) {
	for _, kind := range []string{"nosub", "respsub", "bussub", "nohistory", "distinct"} {
		b.Run(kind, func(b *testing.B) {
			cfg := server.DefaultConfig()
			if kind == "nohistory" {
				cfg.RealtimeHistoryTTL = 0
			}
			srv := server.New(cfg)
			pub, err := srv.NewSession(nil, false)
			if err != nil {
				b.Fatal(err)
			}
			switch kind {
			case "respsub":
				sub, err := srv.NewSession(nil, false)
				if err != nil {
					b.Fatal(err)
				}
				sub.Exec([][]byte{[]byte("SUBSCRIBE"), []byte("chan:1")})
			case "bussub":
				srv.BusSubscribe(server.BusSubOptions{Channel: "chan:1", Deliver: func(*server.BusMessage) {}})
			}
			in := [][]byte{[]byte("PUBLISH"), []byte("chan:1"), []byte("payload:0000000001")}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if kind == "distinct" {
					in[1] = strconv.AppendInt(in[1][:len("chan:")], int64(i%1000000), 10)
				}
				pub.W.B = pub.W.B[:0]
				pub.Exec(in)
			}
		})
	}
}
