package tcp_test

import (
	"bytes"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// A pubsubStep sends cmd on connection conn (none: only reads) and expects
// to read want from it, value by value, exactly.
type pubsubStep struct {
	conn int
	cmd  []string
	want []string
}

func psCmd(args ...string) []string { return args }

// psBulk, psAgg and psInt build expected RESP values.
func psBulk(s string) string { return string(resp.AppendBulkString(nil, s)) }

func psAgg(kind byte, els ...string) string {
	b := resp.AppendHeader(nil, kind, len(els))
	for _, e := range els {
		b = append(b, e...)
	}
	return string(b)
}

func psInt(n int) string { return ":" + strconv.Itoa(n) + "\r\n" }

// psShape returns the aggregate type of deliveries in RESP2 (arrays) or RESP3
// (pushes).
func psShape(proto int) byte {
	if proto == 3 {
		return '>'
	}
	return '*'
}

// pubsubScenario is a conversation between a subscriber (connection 0, in
// proto), a second subscriber (1, RESP2) and a publisher (2).
func pubsubScenario(proto int) []pubsubStep {
	p := psShape(proto)
	nul := "$-1\r\n"
	if proto == 3 {
		nul = "_\r\n"
	}
	getWhileSubscribed := "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n"
	pingWhileSubscribed := psAgg('*', psBulk("pong"), psBulk(""))
	if proto == 3 {
		getWhileSubscribed = nul
		pingWhileSubscribed = "+PONG\r\n"
	}
	return []pubsubStep{
		{0, psCmd("SUBSCRIBE", "news", "sport"), []string{
			psAgg(p, psBulk("subscribe"), psBulk("news"), psInt(1)),
			psAgg(p, psBulk("subscribe"), psBulk("sport"), psInt(2)),
		}},
		{0, psCmd("PSUBSCRIBE", "n*"), []string{psAgg(p, psBulk("psubscribe"), psBulk("n*"), psInt(3))}},
		{1, psCmd("SUBSCRIBE", "news"), []string{psAgg('*', psBulk("subscribe"), psBulk("news"), psInt(1))}},
		{1, psCmd("PSUBSCRIBE", "n*"), []string{psAgg('*', psBulk("psubscribe"), psBulk("n*"), psInt(2))}},
		{2, psCmd("PUBSUB", "NUMSUB", "news", "sport", "none"), []string{psAgg('*', psBulk("news"), psInt(2), psBulk("sport"), psInt(1), psBulk("none"), psInt(0))}},
		{2, psCmd("PUBSUB", "NUMPAT"), []string{psInt(1)}},
		// Two channel subscribers and two pattern matches.
		{2, psCmd("PUBLISH", "news", "hello"), []string{psInt(4)}},
		{0, nil, []string{
			psAgg(p, psBulk("message"), psBulk("news"), psBulk("hello")),
			psAgg(p, psBulk("pmessage"), psBulk("n*"), psBulk("news"), psBulk("hello")),
		}},
		{1, nil, []string{
			psAgg('*', psBulk("message"), psBulk("news"), psBulk("hello")),
			psAgg('*', psBulk("pmessage"), psBulk("n*"), psBulk("news"), psBulk("hello")),
		}},
		{2, psCmd("PUBLISH", "sport", "goal"), []string{psInt(1)}},
		{0, nil, []string{psAgg(p, psBulk("message"), psBulk("sport"), psBulk("goal"))}},
		{2, psCmd("PUBLISH", "nothing-here", "x"), []string{psInt(2)}},
		{0, nil, []string{psAgg(p, psBulk("pmessage"), psBulk("n*"), psBulk("nothing-here"), psBulk("x"))}},
		{1, nil, []string{psAgg('*', psBulk("pmessage"), psBulk("n*"), psBulk("nothing-here"), psBulk("x"))}},
		{2, psCmd("PUBLISH", "other", "x"), []string{psInt(0)}},
		// Subscribed mode: RESP2 refuses other commands, RESP3 runs them.
		{0, psCmd("GET", "k"), []string{getWhileSubscribed}},
		{0, psCmd("PING"), []string{pingWhileSubscribed}},
		// Binary-safe payloads.
		{2, psCmd("PUBLISH", "sport", "a\r\nb\x00c"), []string{psInt(1)}},
		{0, nil, []string{psAgg(p, psBulk("message"), psBulk("sport"), psBulk("a\r\nb\x00c"))}},
		{0, psCmd("UNSUBSCRIBE", "news"), []string{psAgg(p, psBulk("unsubscribe"), psBulk("news"), psInt(2))}},
		{2, psCmd("PUBLISH", "news", "again"), []string{psInt(3)}},
		{0, nil, []string{psAgg(p, psBulk("pmessage"), psBulk("n*"), psBulk("news"), psBulk("again"))}},
		{1, nil, []string{
			psAgg('*', psBulk("message"), psBulk("news"), psBulk("again")),
			psAgg('*', psBulk("pmessage"), psBulk("n*"), psBulk("news"), psBulk("again")),
		}},
		{0, psCmd("PUNSUBSCRIBE"), []string{psAgg(p, psBulk("punsubscribe"), psBulk("n*"), psInt(1))}},
		{0, psCmd("UNSUBSCRIBE"), []string{psAgg(p, psBulk("unsubscribe"), psBulk("sport"), psInt(0))}},
		{0, psCmd("UNSUBSCRIBE"), []string{psAgg(p, psBulk("unsubscribe"), nul, psInt(0))}},
		{0, psCmd("PING"), []string{"+PONG\r\n"}},
		{2, psCmd("PUBLISH", "sport", "x"), []string{psInt(0)}},
		// RESET drops the second subscriber's subscriptions.
		{1, psCmd("RESET"), []string{"+RESET\r\n"}},
		{2, psCmd("PUBLISH", "news", "x"), []string{psInt(0)}},
		{2, psCmd("PUBSUB", "NUMPAT"), []string{psInt(0)}},
		{2, psCmd("PUBSUB", "CHANNELS"), []string{"*0\r\n"}},
		// Shard channels.
		{1, psCmd("SSUBSCRIBE", "orders"), []string{psAgg('*', psBulk("ssubscribe"), psBulk("orders"), psInt(1))}},
		{2, psCmd("SPUBLISH", "orders", "o1"), []string{psInt(1)}},
		{2, psCmd("PUBLISH", "orders", "o2"), []string{psInt(0)}},
		{1, nil, []string{psAgg('*', psBulk("smessage"), psBulk("orders"), psBulk("o1"))}},
		{1, psCmd("SUNSUBSCRIBE"), []string{psAgg('*', psBulk("sunsubscribe"), psBulk("orders"), psInt(0))}},
	}
}

// runPubSub plays steps against addr and reports the first difference.
func runPubSub(t *testing.T, addr string, proto int, steps []pubsubStep) {
	t.Helper()
	conns := make([]*servertest.Client, 3)
	for i := range conns {
		conns[i] = servertest.Dial(t, addr)
	}
	if proto == 3 {
		if rep, err := conns[0].Do("HELLO", "3"); err != nil || rep[0] != '%' {
			t.Fatalf("HELLO 3: %q %v", rep, err)
		}
	}
	for i, st := range steps {
		c := conns[st.conn]
		if st.cmd != nil {
			if err := c.Send(servertest.Encode(st.cmd...)); err != nil {
				t.Fatalf("step %d %q: %v", i, st.cmd, err)
			}
		}
		for _, want := range st.want {
			got, err := c.Read()
			if err != nil {
				t.Fatalf("step %d %q on conn %d: %v", i, st.cmd, st.conn, err)
			}
			if string(got) != want {
				t.Fatalf("step %d %q on conn %d:\n got %q\nwant %q", i, st.cmd, st.conn, got, want)
			}
		}
	}
}

// TestPubSub plays the same multi-connection conversation against
// redis-server and recached, in RESP2 and RESP3.
func TestPubSub(t *testing.T) {
	ours, _ := servertest.StartRecached(t, server.DefaultConfig())
	targets := []struct{ name, addr string }{{"recached", ours}}
	if servertest.HaveRedis() {
		targets = append(targets, struct{ name, addr string }{"redis", servertest.StartRedis(t)})
	}
	for _, tg := range targets {
		for _, proto := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/resp%d", tg.name, proto), func(t *testing.T) {
				runPubSub(t, tg.addr, proto, pubsubScenario(proto))
			})
		}
	}
}

// TestPubSubOwnMessages checks that a RESP3 connection publishing to a
// channel it listens to receives its message before the PUBLISH reply, as
// Redis writes them, also inside a transaction.
func TestPubSubOwnMessages(t *testing.T) {
	ours, _ := servertest.StartRecached(t, server.DefaultConfig())
	addrs := []string{ours}
	if servertest.HaveRedis() {
		addrs = append(addrs, servertest.StartRedis(t))
	}
	msg := psAgg('>', psBulk("message"), psBulk("me"), psBulk("hi"))
	steps := []pubsubStep{
		{0, psCmd("SUBSCRIBE", "me"), []string{psAgg('>', psBulk("subscribe"), psBulk("me"), psInt(1))}},
		{0, psCmd("PUBLISH", "me", "hi"), []string{msg, psInt(1)}},
		{0, psCmd("MULTI"), []string{"+OK\r\n"}},
		{0, psCmd("PUBLISH", "me", "hi"), []string{"+QUEUED\r\n"}},
		// The push lands inside EXEC's array, before the reply it precedes.
		{0, psCmd("EXEC"), []string{"*1\r\n" + msg, psInt(1)}},
	}
	for _, addr := range addrs {
		runPubSub(t, addr, 3, steps)
	}
}

// TestPubSubPipeline publishes pipelines of messages and checks that every
// subscriber gets all of them, in order.
func TestPubSubPipeline(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	const subs, batches, batch = 5, 20, 16
	readers := make([]*servertest.Client, subs)
	for i := range readers {
		readers[i] = servertest.Dial(t, addr)
		if _, err := readers[i].Do("SUBSCRIBE", "pipe"); err != nil {
			t.Fatal(err)
		}
	}
	pub := servertest.Dial(t, addr)
	for b := 0; b < batches; b++ {
		var req []byte
		for i := 0; i < batch; i++ {
			req = append(req, servertest.Encode("PUBLISH", "pipe", strconv.Itoa(b*batch+i))...)
		}
		if err := pub.Send(req); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < batch; i++ {
			if rep, err := pub.Read(); err != nil || string(rep) != psInt(subs) {
				t.Fatalf("PUBLISH reply %q %v", rep, err)
			}
		}
	}
	for r, c := range readers {
		for n := 0; n < batches*batch; n++ {
			got, err := c.Read()
			want := psAgg('*', psBulk("message"), psBulk("pipe"), psBulk(strconv.Itoa(n)))
			if err != nil || string(got) != want {
				t.Fatalf("subscriber %d message %d: %q %v, want %q", r, n, got, err, want)
			}
		}
	}
}

// waitNumSub polls PUBSUB NUMSUB until channel has n subscribers.
func waitNumSub(t *testing.T, c *servertest.Client, channel string, n int) {
	t.Helper()
	want := psAgg('*', psBulk(channel), psInt(n))
	deadline := time.Now().Add(10 * time.Second)
	for {
		rep, err := c.Do("PUBSUB", "NUMSUB", channel)
		if err != nil {
			t.Fatal(err)
		}
		if string(rep) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("PUBSUB NUMSUB %s: %q, want %q", channel, rep, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPubSubDisconnect checks that a closed connection's subscriptions go.
func TestPubSubDisconnect(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	admin := servertest.Dial(t, addr)
	c := servertest.Dial(t, addr)
	if _, err := c.Do("SUBSCRIBE", "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do("PSUBSCRIBE", "gone*"); err != nil {
		t.Fatal(err)
	}
	waitNumSub(t, admin, "gone", 1)
	c.Conn().Close()
	waitNumSub(t, admin, "gone", 0)
	if rep, err := admin.Do("PUBSUB", "NUMPAT"); err != nil || string(rep) != psInt(0) {
		t.Fatalf("PUBSUB NUMPAT: %q %v", rep, err)
	}
	if rep, err := admin.Do("PUBLISH", "gone", "x"); err != nil || string(rep) != psInt(0) {
		t.Fatalf("PUBLISH: %q %v", rep, err)
	}
}

// TestSlowSubscriber checks the pub/sub output limit: a subscriber that
// never reads is disconnected once it holds more than 32 MB, while another
// subscriber of the same channel keeps receiving everything.
func TestSlowSubscriber(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	stuck, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	if _, err := stuck.Write(servertest.Encode("SUBSCRIBE", "flood")); err != nil {
		t.Fatal(err)
	}
	reader := servertest.Dial(t, addr)
	if _, err := reader.Do("SUBSCRIBE", "flood"); err != nil {
		t.Fatal(err)
	}
	pub := servertest.Dial(t, addr)
	waitNumSub(t, pub, "flood", 2)

	payload := bytes.Repeat([]byte("x"), 1<<20)
	want := psAgg('*', psBulk("message"), psBulk("flood"), psBulk(string(payload)))
	dropped := false
	// 32 MB plus what the kernel's socket buffers absorb; 200 MB at most.
	for i := 0; i < 200 && !dropped; i++ {
		rep, err := pub.Do("PUBLISH", "flood", string(payload))
		if err != nil {
			t.Fatal(err)
		}
		switch string(rep) {
		case psInt(1):
			dropped = true
		case psInt(2):
		default:
			t.Fatalf("PUBLISH reply %q", rep)
		}
		got, err := reader.Read()
		if err != nil || string(got) != want {
			t.Fatalf("reader message %d: %d bytes, %v", i, len(got), err)
		}
	}
	if !dropped {
		t.Fatal("the subscriber that never reads was not disconnected after 200 MB")
	}
	waitNumSub(t, pub, "flood", 1)
	// The stuck connection was closed by the server: reading reaches EOF.
	_ = stuck.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 1<<20)
	for {
		if _, err := stuck.Read(buf); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("the slow subscriber's connection is still open")
			}
			break
		}
	}
	if rep, err := pub.Do("PUBLISH", "flood", "after"); err != nil || string(rep) != psInt(1) {
		t.Fatalf("PUBLISH after the drop: %q %v", rep, err)
	}
	if got, err := reader.Read(); err != nil || string(got) != psAgg('*', psBulk("message"), psBulk("flood"), psBulk("after")) {
		t.Fatalf("reader after the drop: %q %v", got, err)
	}
}

// TestPubSubConcurrent publishes from several connections on two event
// loops while others subscribe and unsubscribe, and checks that every
// subscriber gets every message once, in each publisher's order.
func TestPubSubConcurrent(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.Loops = 2
	addr, _ := servertest.StartRecached(t, cfg)
	const publishers, perPublisher, subscribers = 3, 300, 4
	readers := make([]*servertest.Client, subscribers)
	for i := range readers {
		readers[i] = servertest.Dial(t, addr)
		if _, err := readers[i].Do("SUBSCRIBE", "conc"); err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			if _, err := readers[i].Do("PSUBSCRIBE", "con*"); err != nil {
				t.Fatal(err)
			}
		}
	}
	errs := make(chan error, publishers+subscribers+1)
	done := make(chan struct{})
	churn := servertest.Dial(t, addr)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				errs <- nil
				return
			default:
			}
			ch := "churn" + strconv.Itoa(i%7)
			if _, err := churn.Do("SUBSCRIBE", ch); err != nil {
				errs <- err
				return
			}
			if _, err := churn.Do("UNSUBSCRIBE", ch); err != nil {
				errs <- err
				return
			}
		}
	}()
	for p := 0; p < publishers; p++ {
		c := servertest.Dial(t, addr)
		go func() {
			for n := 0; n < perPublisher; n++ {
				rep, err := c.Do("PUBLISH", "conc", fmt.Sprintf("%d:%d", p, n))
				if err != nil || string(rep) != psInt(subscribers+subscribers/2) {
					errs <- fmt.Errorf("publisher %d: %q %v", p, rep, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for i, r := range readers {
		next := make([]int, publishers)
		nextP := make([]int, publishers)
		want := publishers * perPublisher
		if i%2 == 1 {
			want *= 2
		}
		for k := 0; k < want; k++ {
			rep, err := r.Read()
			if err != nil {
				t.Fatalf("subscriber %d after %d messages: %v", i, k, err)
			}
			els, _ := servertest.Elements(rep)
			seq := next
			if len(els) == 4 {
				seq = nextP
			}
			var p, n int
			payload := els[len(els)-1]
			body := payload[bytes.IndexByte(payload, '\n')+1 : len(payload)-2]
			if _, err := fmt.Sscanf(string(body), "%d:%d", &p, &n); err != nil || p < 0 || p >= publishers || n != seq[p] {
				t.Fatalf("subscriber %d: message %q out of order (want %v)", i, rep, seq)
			}
			seq[p]++
		}
	}
	close(done)
	for i := 0; i < publishers+1; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestSubscribeReplyBeforeMessages subscribes while other connections
// publish to the channel without pause: a subscriber's first value is the
// SUBSCRIBE reply, before the messages published after it, which are
// queued as pushes (a subscriber already there keeps the loop's push task
// busy). It fails when replies wait for a task that a push task can
// overtake.
func TestSubscribeReplyBeforeMessages(t *testing.T) {
	for _, loops := range []int{1, 2} {
		t.Run(fmt.Sprintf("loops=%d", loops), func(t *testing.T) {
			cfg := server.DefaultConfig()
			cfg.Loops = loops
			addr, _ := servertest.StartRecached(t, cfg)
			other := servertest.Dial(t, addr)
			if _, err := other.Do("SUBSCRIBE", "hot"); err != nil {
				t.Fatal(err)
			}
			go func() { // the messages to other are not checked
				for {
					if _, err := other.Read(); err != nil {
						return
					}
				}
			}()
			const publishers = 3
			done := make(chan error, publishers)
			stop := make(chan struct{})
			for range publishers {
				pub := servertest.Dial(t, addr)
				go func() {
					for {
						select {
						case <-stop:
							done <- nil
							return
						default:
						}
						if _, err := pub.Do("PUBLISH", "hot", "m"); err != nil {
							done <- err
							return
						}
					}
				}()
			}
			for i := 0; i < 200; i++ {
				sub := servertest.Dial(t, addr)
				rep, err := sub.Do("SUBSCRIBE", "hot")
				if err != nil || string(rep) != psAgg('*', psBulk("subscribe"), psBulk("hot"), psInt(1)) {
					t.Fatalf("subscriber %d: first value %q (%v), want the SUBSCRIBE reply", i, rep, err)
				}
				rep, err = sub.Read()
				if err != nil || !bytes.Contains(rep, []byte("message")) {
					t.Fatalf("subscriber %d: second value %q (%v), want a message", i, rep, err)
				}
				sub.Conn().Close()
			}
			close(stop)
			for range publishers {
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
