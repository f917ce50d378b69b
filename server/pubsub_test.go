package server

import (
	"strings"
	"testing"
	"time"
)

// newPubSubSessions returns a server and n sessions without a transport:
// deliveries to them are counted but go nowhere, except a publisher's own
// deliveries, which go into its reply buffer.
func newPubSubSessions(n int, ws bool) (*Server, []*Session) {
	srv := New(DefaultConfig())
	out := make([]*Session, n)
	for i := range out {
		out[i] = newSession(srv, nil, ws)
	}
	return srv, out
}

// TestWebSocketSubscribeReplies checks SPEC section 3: on the WebSocket
// port the subscribe family replies once, with the subscription count
// afterwards, and a subscribed connection may run any command.
func TestWebSocketSubscribeReplies(t *testing.T) {
	_, ss := newPubSubSessions(1, true)
	s := ss[0]
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"UNSUBSCRIBE"}, ":0\r\n"},
		{[]string{"SUBSCRIBE", "a", "b", "a"}, ":2\r\n"},
		{[]string{"PSUBSCRIBE", "p*"}, ":3\r\n"},
		{[]string{"GET", "k"}, "$-1\r\n"},
		{[]string{"UNSUBSCRIBE", "a", "zz"}, ":2\r\n"},
		{[]string{"SSUBSCRIBE", "s1", "s2"}, ":2\r\n"},
		{[]string{"UNSUBSCRIBE"}, ":1\r\n"},
		{[]string{"PUNSUBSCRIBE"}, ":0\r\n"},
		{[]string{"SUNSUBSCRIBE", "s1"}, ":1\r\n"},
		{[]string{"SUNSUBSCRIBE"}, ":0\r\n"},
		{[]string{"SUBSCRIBE", "me"}, ":1\r\n"},
		// Its own message goes to the transport as a push, not the reply.
		{[]string{"PUBLISH", "me", "hi"}, ":1\r\n"},
		{[]string{"PING"}, "+PONG\r\n"},
	}
	for _, st := range steps {
		if got := run(s, st.args...); got != st.want {
			t.Fatalf("%q: got %q, want %q", st.args, got, st.want)
		}
	}
	if s.subscribed != 1 {
		t.Fatalf("subscribed = %d, want 1", s.subscribed)
	}
}

// TestPublishCounts checks PUBLISH's count: one per channel subscription
// and one per matching pattern subscription, minus filtered deliveries.
func TestPublishCounts(t *testing.T) {
	srv, ss := newPubSubSessions(3, false)
	a, b, pub := ss[0], ss[1], ss[2]
	for _, args := range [][]string{{"SUBSCRIBE", "news"}, {"PSUBSCRIBE", "n*"}, {"PSUBSCRIBE", "*s"}, {"PSUBSCRIBE", "x*"}} {
		run(a, args...)
	}
	run(b, "PSUBSCRIBE", "n*")
	run(b, "SSUBSCRIBE", "news")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"PUBLISH", "news", "m"}, ":4\r\n"},
		{[]string{"PUBLISH", "nope", "m"}, ":2\r\n"},
		{[]string{"PUBLISH", "other", "m"}, ":0\r\n"},
		{[]string{"SPUBLISH", "news", "m"}, ":1\r\n"},
		{[]string{"PUBSUB", "NUMPAT"}, ":3\r\n"},
		{[]string{"PUBSUB", "NUMSUB", "news"}, "*2\r\n$4\r\nnews\r\n:1\r\n"},
		{[]string{"PUBSUB", "SHARDNUMSUB", "news"}, "*2\r\n$4\r\nnews\r\n:1\r\n"},
	}
	for _, tt := range tests {
		if got := run(pub, tt.args...); got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.args, got, tt.want)
		}
	}
	a.setChannelFilter(func(ch []byte) bool { return !strings.HasPrefix(string(ch), "ne") })
	if got := run(pub, "PUBLISH", "news", "m"); got != ":1\r\n" {
		t.Errorf("filtered PUBLISH: got %q, want :1", got)
	}
	a.setChannelFilter(nil)
	if ch, pats, shards := srv.pubsub.stats(); ch != 1 || pats != 3 || shards != 1 {
		t.Errorf("stats = %d %d %d, want 1 3 1", ch, pats, shards)
	}
	if ch, pats, shards := a.PubSubCounts(); ch != 1 || pats != 3 || shards != 0 {
		t.Errorf("PubSubCounts = %d %d %d, want 1 3 0", ch, pats, shards)
	}
	// RESET and disconnect drop everything.
	if got := run(a, "RESET"); got != "+RESET\r\n" {
		t.Fatalf("RESET: %q", got)
	}
	b.release()
	if ch, pats, shards := srv.pubsub.stats(); ch != 0 || pats != 0 || shards != 0 {
		t.Errorf("stats after RESET and release = %d %d %d", ch, pats, shards)
	}
	if a.subscribed != 0 || b.subscribed != 0 {
		t.Errorf("subscribed = %d %d", a.subscribed, b.subscribed)
	}
	if got := run(pub, "PUBLISH", "news", "m"); got != ":0\r\n" {
		t.Errorf("PUBLISH after RESET: %q", got)
	}
}

// TestMessageShapes checks the encoded deliveries, and that each shape is
// built once and reused.
func TestMessageShapes(t *testing.T) {
	tests := []struct {
		m          message
		arr, push  string
		shareBytes bool
	}{
		{message{tag: "message", ch: []byte("c"), payload: []byte("hi")},
			"*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$2\r\nhi\r\n", ">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$2\r\nhi\r\n", true},
		{message{tag: "pmessage", pat: "", ch: []byte(""), payload: []byte("")},
			"*4\r\n$8\r\npmessage\r\n$0\r\n\r\n$0\r\n\r\n$0\r\n\r\n", ">4\r\n$8\r\npmessage\r\n$0\r\n\r\n$0\r\n\r\n$0\r\n\r\n", true},
		{message{tag: "smessage", ch: []byte("s"), payload: []byte("a\r\nb")},
			"*3\r\n$8\r\nsmessage\r\n$1\r\ns\r\n$4\r\na\r\nb\r\n", ">3\r\n$8\r\nsmessage\r\n$1\r\ns\r\n$4\r\na\r\nb\r\n", true},
	}
	for _, tt := range tests {
		m := tt.m
		if got := string(m.bytes(false)); got != tt.arr {
			t.Errorf("array: %q, want %q", got, tt.arr)
		}
		if got := string(m.bytes(true)); got != tt.push {
			t.Errorf("push: %q, want %q", got, tt.push)
		}
		first := m.bytes(true)
		if &m.bytes(true)[0] != &first[0] {
			t.Errorf("push encoded twice")
		}
	}
}

// TestOutputOverLimit checks the pub/sub output limit rules.
func TestOutputOverLimit(t *testing.T) {
	sec := int64(time.Second)
	tests := []struct {
		name       string
		pending    int
		now, since int64
		over       bool
		newSince   int64
	}{
		{"empty", 0, 100 * sec, 0, false, 0},
		{"below soft", pubsubSoftLimit, 100 * sec, 0, false, 0},
		{"below soft resets the timer", pubsubSoftLimit, 100 * sec, 50 * sec, false, 0},
		{"soft passed starts the timer", pubsubSoftLimit + 1, 100 * sec, 0, false, 100 * sec},
		{"soft passed for 59s", pubsubSoftLimit + 1, 159 * sec, 100 * sec, false, 100 * sec},
		{"soft passed for 60s", pubsubSoftLimit + 1, 160 * sec, 100 * sec, true, 100 * sec},
		{"at the hard limit", pubsubHardLimit, 100 * sec, 0, false, 100 * sec},
		{"past the hard limit", pubsubHardLimit + 1, 100 * sec, 0, true, 0},
	}
	for _, tt := range tests {
		over, since := outputOverLimit(tt.pending, tt.now, tt.since)
		if over != tt.over || since != tt.newSince {
			t.Errorf("%s: got %v %d, want %v %d", tt.name, over, since, tt.over, tt.newSince)
		}
	}
}

// TestCheckOutput checks that only subscribers are held to the limits and
// that a dropped one stays dropped.
func TestCheckOutput(t *testing.T) {
	_, ss := newPubSubSessions(2, false)
	sub, other := ss[0], ss[1]
	run(sub, "SUBSCRIBE", "c")
	if sub.CheckOutput(pubsubSoftLimit) {
		t.Fatal("dropped below the soft limit")
	}
	if sub.CheckOutput(pubsubSoftLimit + 1) {
		t.Fatal("dropped as soon as the soft limit was passed")
	}
	if sub.ps.softSince.Load() == 0 {
		t.Fatal("soft limit timer not started")
	}
	if other.CheckOutput(pubsubHardLimit + 1) {
		t.Fatal("a client without subscriptions was dropped")
	}
	if !sub.CheckOutput(pubsubHardLimit + 1) {
		t.Fatal("a subscriber past the hard limit was kept")
	}
	if !sub.CheckOutput(0) || !sub.ps.closing.Load() {
		t.Fatal("a dropped subscriber came back")
	}
}
