package realtime_test

// The Go client against the real server: the recached binary on loopback
// ports, cut off from the client by a TCP relay (rttest.Proxy) or killed and
// started again on the same port and directory.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/sync/realtime"
	"github.com/recached/recached/sync/realtime/internal/rttest"
)

// bin is the recached binary TestMain builds once for every test.
var bin string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "realtime-test")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		bin = dir + "/recached"
		if err := servertest.BuildRecachedTo(bin); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}())
}

// ctx returns a context that ends with the test, within a bound.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// fast are client options that retry quickly, for tests.
func fast(o realtime.Options) realtime.Options {
	o.MinRetry, o.MaxRetry = 20*time.Millisecond, 200*time.Millisecond
	return o
}

// dial connects a client and closes it when the test ends.
func dial(t *testing.T, url string, o realtime.Options) *realtime.Client {
	t.Helper()
	c, err := realtime.Dial(ctx(t), url, fast(o))
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// recv reads n messages from s, failing after a bound.
func recv(t *testing.T, s *realtime.Subscription, n int) []realtime.Message {
	t.Helper()
	var out []realtime.Message
	timeout := time.After(30 * time.Second)
	for len(out) < n {
		select {
		case m, ok := <-s.C:
			if !ok {
				t.Fatalf("subscription ended after %d of %d messages: %v", len(out), n, s.Err())
			}
			out = append(out, m)
		case <-timeout:
			t.Fatalf("received %d of %d messages", len(out), n)
		}
	}
	return out
}

// numbers returns the data of messages as integers.
func numbers(t *testing.T, ms []realtime.Message) []int {
	t.Helper()
	var out []int
	for _, m := range ms {
		var n int
		if err := json.Unmarshal(m.Data, &n); err != nil {
			t.Fatalf("message data %s: %v", m.Data, err)
		}
		out = append(out, n)
	}
	return out
}

func seq(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// states records a client's state changes.
type states struct {
	mu  sync.Mutex
	all []realtime.StateChange
}

func (s *states) add(c realtime.StateChange) {
	s.mu.Lock()
	s.all = append(s.all, c)
	s.mu.Unlock()
}

func (s *states) list() []realtime.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []realtime.State
	for _, c := range s.all {
		out = append(out, c.Current)
	}
	return out
}

func publish(t *testing.T, ch *realtime.Channel, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		if err := ch.Publish(ctx(t), "n", i); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
}

// noMore checks that nothing else is queued on s once a marker published
// after everything else has arrived.
func noMore(t *testing.T, s *realtime.Subscription, marker *realtime.Channel) {
	t.Helper()
	if err := marker.Publish(ctx(t), "marker", -1); err != nil {
		t.Fatal(err)
	}
	m := recv(t, s, 1)
	if m[0].Name != "marker" {
		t.Fatalf("after the last message, got %q %s: a duplicate or an extra message", m[0].Name, m[0].Data)
	}
}

func TestReconnectRewindLosesNothing(t *testing.T) {
	srv := rttest.Start(t, bin)
	proxy := rttest.NewProxy(t, fmt.Sprintf("127.0.0.1:%d", srv.RTPort))
	var st states
	a := dial(t, proxy.URL(), realtime.Options{Key: rttest.Key1, OnState: st.add})
	b := dial(t, srv.URL(), realtime.Options{Key: rttest.Key1})
	sub, err := a.Channel("chat:room").Subscribe(ctx(t), realtime.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pub := b.Channel("chat:room")
	publish(t, pub, 1, 10)
	if got := numbers(t, recv(t, sub, 10)); !slices.Equal(got, seq(1, 10)) {
		t.Fatalf("before the cut: %v", got)
	}
	firstID := a.ConnectionID()

	// The network drops and stays down while b publishes; then it comes back.
	proxy.Block()
	if err := a.WaitState(ctx(t), realtime.Disconnected, realtime.Connecting); err != nil {
		t.Fatal(err)
	}
	publish(t, pub, 11, 40)
	proxy.Unblock()
	if got := numbers(t, recv(t, sub, 30)); !slices.Equal(got, seq(11, 40)) {
		t.Fatalf("after the reconnect: %v, want 11…40 once each in order", got)
	}
	noMore(t, sub, pub)
	if a.ConnectionID() == firstID {
		t.Fatalf("connection id %q unchanged: no reconnect happened", firstID)
	}
	if err := a.WaitState(ctx(t), realtime.Connected); err != nil {
		t.Fatal(err)
	}
	got := st.list()
	if i := slices.Index(got, realtime.Disconnected); i < 0 || !slices.Contains(got[i:], realtime.Connecting) || got[len(got)-1] != realtime.Connected {
		t.Fatalf("states %v: want connected, disconnected, connecting…, connected", got)
	}
	if sub.Dropped() != 0 {
		t.Fatalf("%d dropped", sub.Dropped())
	}
}

func TestServerRestartKeepsRewind(t *testing.T) {
	srv := rttest.Start(t, bin, "--appendfsync", "always")
	proxy := rttest.NewProxy(t, fmt.Sprintf("127.0.0.1:%d", srv.RTPort))
	a := dial(t, proxy.URL(), realtime.Options{Key: rttest.Key1})
	sub, err := a.Channel("news").Subscribe(ctx(t), realtime.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := dial(t, srv.URL(), realtime.Options{Key: rttest.Key1})
	publish(t, b.Channel("news"), 1, 5)
	recv(t, sub, 5)

	// The server crashes; a comes back only after b published again on the
	// restarted server, so a catches up from the persisted history.
	proxy.Block()
	srv.Kill()
	srv.Start()
	if err := b.WaitState(ctx(t), realtime.Connected); err != nil {
		t.Fatal(err)
	}
	publish(t, b.Channel("news"), 6, 12)
	proxy.Unblock()
	if got := numbers(t, recv(t, sub, 7)); !slices.Equal(got, seq(6, 12)) {
		t.Fatalf("after the restart: %v, want 6…12", got)
	}
	noMore(t, sub, b.Channel("news"))
}

func TestRewindOnFirstSubscribe(t *testing.T) {
	srv := rttest.Start(t, bin)
	b := dial(t, srv.URL(), realtime.Options{Key: rttest.Key1})
	publish(t, b.Channel("hist"), 1, 8)
	a := dial(t, srv.URL(), realtime.Options{Key: rttest.Key1})
	sub, err := a.Channel("hist").Subscribe(ctx(t), realtime.SubscribeOptions{Rewind: 3})
	if err != nil {
		t.Fatal(err)
	}
	publish(t, b.Channel("hist"), 9, 9)
	if got := numbers(t, recv(t, sub, 4)); !slices.Equal(got, []int{6, 7, 8, 9}) {
		t.Fatalf("rewind 3 then live: %v", got)
	}
}

func TestDeadPeerDetected(t *testing.T) {
	srv := rttest.Start(t, bin)
	proxy := rttest.NewProxy(t, fmt.Sprintf("127.0.0.1:%d", srv.RTPort))
	a := dial(t, proxy.URL(), realtime.Options{Key: rttest.Key1, IdleTimeout: 500 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond})
	sub, err := a.Channel("dp").Subscribe(ctx(t), realtime.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The relay stops moving bytes without closing anything: only the
	// client's idle timeout can notice.
	proxy.Freeze()
	if err := a.WaitState(ctx(t), realtime.Disconnected, realtime.Connecting); err != nil {
		t.Fatal(err)
	}
	b := dial(t, srv.URL(), realtime.Options{Key: rttest.Key1})
	publish(t, b.Channel("dp"), 1, 3)
	proxy.Unfreeze()
	proxy.Cut()
	if got := numbers(t, recv(t, sub, 3)); !slices.Equal(got, seq(1, 3)) {
		t.Fatalf("after the dead peer: %v", got)
	}
}

func TestTokenRenewedBeforeExpiry(t *testing.T) {
	srv := rttest.Start(t, bin)
	var calls atomic.Int32
	var st states
	auth := func(context.Context) (string, error) {
		calls.Add(1)
		return rttest.MintToken(bin, srv.KeysFile, "k1", 3*time.Second, "", "")
	}
	a := dial(t, srv.URL(), realtime.Options{AuthCallback: auth, RenewBefore: 1500 * time.Millisecond, OnState: st.add})
	id := a.ConnectionID()
	sub, err := a.Channel("tok").Subscribe(ctx(t), realtime.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := dial(t, srv.URL(), realtime.Options{Key: rttest.Key1})
	// Each token lives 3 s: by the fourth, the connection has outlived the
	// first two tokens, renewed in band.
	deadline := time.Now().Add(30 * time.Second)
	for calls.Load() < 4 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if calls.Load() < 4 {
		t.Fatalf("AuthCallback called %d times", calls.Load())
	}
	publish(t, b.Channel("tok"), 1, 1)
	recv(t, sub, 1)
	if got := st.list(); !slices.Equal(got, []realtime.State{realtime.Connecting, realtime.Connected}) {
		t.Fatalf("states %v: the connection should have stayed up through the renewals", got)
	}
	if a.ConnectionID() != id {
		t.Fatalf("connection id changed from %q to %q", id, a.ConnectionID())
	}
}

func TestExpiredTokenFetchesFreshOne(t *testing.T) {
	srv := rttest.Start(t, bin)
	stale := srv.Token("k1", time.Second, "", "")
	time.Sleep(1100 * time.Millisecond) // the token must be expired: nothing to poll
	var calls atomic.Int32
	auth := func(context.Context) (string, error) {
		calls.Add(1)
		return rttest.MintToken(bin, srv.KeysFile, "k1", time.Hour, "", "")
	}
	a := dial(t, srv.URL(), realtime.Options{Token: stale, AuthCallback: auth})
	if calls.Load() != 1 || a.State() != realtime.Connected {
		t.Fatalf("calls %d state %s", calls.Load(), a.State())
	}
}

func TestUnauthorizedFails(t *testing.T) {
	srv := rttest.Start(t, bin)
	for _, tc := range []struct {
		name string
		opts realtime.Options
	}{
		{"unknown key", realtime.Options{Key: "nope.k1"}},
		{"forged token", realtime.Options{Token: srv.Token("k1", time.Hour, "", "") + "x"}},
		{"callback returns garbage", realtime.Options{AuthCallback: func(context.Context) (string, error) { return "garbage", nil }}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st states
			o := fast(tc.opts)
			o.OnState = st.add
			c, err := realtime.Dial(ctx(t), srv.URL(), o)
			var e *realtime.Error
			if !errors.As(err, &e) || e.Code != 401 {
				t.Fatalf("Dial = %v, want a 401 *Error", err)
			}
			if c != nil {
				t.Fatal("client returned with the error")
			}
			if got := st.list(); got[len(got)-1] != realtime.Closed || !slices.Contains(got, realtime.Failed) || slices.Contains(got, realtime.Disconnected) {
				t.Fatalf("states %v: want failed without retrying, then closed", got)
			}
		})
	}
}

func TestForbiddenChannelLeavesOthersWorking(t *testing.T) {
	srv := rttest.Start(t, bin)
	a := dial(t, srv.URL(), realtime.Options{Key: rttest.Key2})
	b := dial(t, srv.URL(), realtime.Options{Key: rttest.Key1})
	ok, err := a.Channel("open:a").Subscribe(ctx(t), realtime.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ro, err := a.Channel("ro:news").Subscribe(ctx(t), realtime.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"publish on ro:news": a.Channel("ro:news").Publish(ctx(t), "x", 1),
		"subscribe secret":   func() error { _, err := a.Channel("secret").Subscribe(ctx(t), realtime.SubscribeOptions{}); return err }(),
		"enter on ro:news":   a.Channel("ro:news").Presence().EnterClient(ctx(t), "me", nil),
	} {
		var e *realtime.Error
		if !errors.As(err, &e) || e.Code != 403 {
			t.Errorf("%s = %v, want 403", name, err)
		}
	}
	if a.State() != realtime.Connected {
		t.Fatalf("state %s after 403s", a.State())
	}
	publish(t, b.Channel("open:a"), 1, 2)
	publish(t, b.Channel("ro:news"), 3, 3)
	if got := numbers(t, recv(t, ok, 2)); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("open:a got %v", got)
	}
	if got := numbers(t, recv(t, ro, 1)); !slices.Equal(got, []int{3}) {
		t.Fatalf("ro:news got %v", got)
	}
	if err := a.Channel("open:a").Publish(ctx(t), "mine", 4); err != nil {
		t.Fatalf("publish on open:a after the 403s: %v", err)
	}
}

func TestAuthSwapRemovesOnlyUncoveredSubscriptions(t *testing.T) {
	srv := rttest.Start(t, bin)
	var errs atomic.Int32
	var calls atomic.Int32
	auth := func(context.Context) (string, error) {
		capab := `{"a:*":["subscribe"],"b:*":["subscribe"]}`
		if calls.Add(1) > 1 {
			capab = `{"a:*":["subscribe"]}`
		}
		return rttest.MintToken(bin, srv.KeysFile, "k1", time.Hour, capab, "")
	}
	a := dial(t, srv.URL(), realtime.Options{AuthCallback: auth, OnError: func(error) { errs.Add(1) }})
	sa, err := a.Channel("a:1").Subscribe(ctx(t), realtime.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := a.Channel("b:1").Subscribe(ctx(t), realtime.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Authorize(ctx(t)); err != nil {
		t.Fatal(err)
	}
	// b:1's subscription ends with the server's 403; a:1 keeps working.
	select {
	case _, open := <-sb.C:
		if open {
			t.Fatal("a message on b:1 after the narrowing")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("b:1's subscription did not end")
	}
	var e *realtime.Error
	if !errors.As(sb.Err(), &e) || e.Code != 403 {
		t.Fatalf("b:1 ended with %v, want 403", sb.Err())
	}
	b := dial(t, srv.URL(), realtime.Options{Key: rttest.Key1})
	publish(t, b.Channel("a:1"), 1, 1)
	recv(t, sa, 1)
	if errs.Load() == 0 {
		t.Fatal("OnError was not told of the removal")
	}
}

func TestTooManyConnectionsRetried(t *testing.T) {
	srv := rttest.Start(t, bin, "--realtime-max-conns-per-key", "1")
	first := dial(t, srv.URL(), realtime.Options{Key: rttest.Key1})
	var st states
	var disconnected atomic.Bool
	second, err := realtime.New(srv.URL(), fast(realtime.Options{Key: rttest.Key1, OnState: func(c realtime.StateChange) {
		st.add(c)
		var e *realtime.Error
		if c.Current == realtime.Disconnected && errors.As(c.Reason, &e) && e.Code == 429 {
			disconnected.Store(true)
		}
	}}))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	deadline := time.Now().Add(30 * time.Second)
	for !disconnected.Load() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !disconnected.Load() {
		t.Fatalf("states %v: want disconnected by a 429", st.list())
	}
	first.Close()
	if err := second.WaitState(ctx(t), realtime.Connected); err != nil {
		t.Fatalf("after a slot freed: %v (states %v)", err, st.list())
	}
}

func TestSuspendedAfterConnectionStateTTL(t *testing.T) {
	srv := rttest.Start(t, bin)
	proxy := rttest.NewProxy(t, fmt.Sprintf("127.0.0.1:%d", srv.RTPort))
	a := dial(t, proxy.URL(), realtime.Options{Key: rttest.Key1, ConnectionStateTTL: 300 * time.Millisecond, SuspendedRetry: 200 * time.Millisecond})
	sub, err := a.Channel("susp").Subscribe(ctx(t), realtime.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	proxy.Block()
	if err := a.WaitState(ctx(t), realtime.Suspended); err != nil {
		t.Fatal(err)
	}
	if err := a.Channel("susp").Publish(ctx(t), "x", 1); err == nil || !strings.Contains(err.Error(), "suspended") {
		t.Fatalf("publish while suspended = %v, want an immediate suspended error", err)
	}
	b := dial(t, srv.URL(), realtime.Options{Key: rttest.Key1})
	publish(t, b.Channel("susp"), 1, 2)
	proxy.Unblock()
	if got := numbers(t, recv(t, sub, 2)); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("after suspended: %v", got)
	}
}

func TestPresenceSyncAcrossReconnect(t *testing.T) {
	srv := rttest.Start(t, bin)
	proxy := rttest.NewProxy(t, fmt.Sprintf("127.0.0.1:%d", srv.RTPort))
	a := dial(t, proxy.URL(), realtime.Options{Key: rttest.Key1, ClientID: "ann"})
	b := dial(t, srv.URL(), realtime.Options{Key: rttest.Key1, ClientID: "bob"})
	pa, pb := a.Channel("room").Presence(), b.Channel("room").Presence()
	if err := pa.Enter(ctx(t), map[string]string{"mood": "fine"}); err != nil {
		t.Fatal(err)
	}
	if err := pb.Enter(ctx(t), nil); err != nil {
		t.Fatal(err)
	}
	waitMembers(t, pa, "ann", "bob")
	got, err := pb.Get(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ClientID != "ann" || string(got[0].Data) != `{"mood":"fine"}` {
		t.Fatalf("bob sees %+v", got)
	}
	events := pa.Subscribe(64)

	// a is cut off; meanwhile bob leaves and cat enters.
	proxy.Block()
	if err := a.WaitState(ctx(t), realtime.Disconnected, realtime.Connecting); err != nil {
		t.Fatal(err)
	}
	waitMembers(t, pb, "bob") // the server made a's member leave
	if err := pb.Leave(ctx(t)); err != nil {
		t.Fatal(err)
	}
	c := dial(t, srv.URL(), realtime.Options{Key: rttest.Key1, ClientID: "cat"})
	if err := c.Channel("room").Presence().Enter(ctx(t), "hi"); err != nil {
		t.Fatal(err)
	}
	proxy.Unblock()
	// a's set comes back in line, with a itself entered again.
	waitMembers(t, pa, "ann", "cat")
	waitMembers(t, pb, "ann", "cat")
	// Its own old member's leave and new member's enter come too.
	seen := map[string]string{}
	for seen["bob"] != "leave" || seen["cat"] != "enter" {
		select {
		case e := <-events.C:
			seen[e.ClientID] = e.Action
		case <-time.After(30 * time.Second):
			t.Fatalf("a's presence events after the reconnect: %v, want bob leave and cat enter", seen)
		}
	}
}

// waitMembers waits until p's member set is exactly the client ids want.
func waitMembers(t *testing.T, p *realtime.Presence, want ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var ids []string
	for time.Now().Before(deadline) {
		ms, err := p.Get(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		ids = ids[:0]
		for _, m := range ms {
			ids = append(ids, m.ClientID)
		}
		if slices.Equal(ids, want) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("members %v, want %v", ids, want)
}

func TestRESPPublishReachesClient(t *testing.T) {
	srv := rttest.Start(t, bin)
	a := dial(t, srv.URL(), realtime.Options{Key: rttest.Key1})
	sub, err := a.Channel("bus:*").Subscribe(ctx(t), realtime.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep := srv.Do("PUBLISH", "bus:x", "hello"); rep != ":1\r\n" {
		t.Fatalf("PUBLISH = %q", rep)
	}
	m := recv(t, sub, 1)[0]
	if m.Channel != "bus:x" || string(m.Data) != `"hello"` || m.ConnectionID != "resp" || m.Name != "" {
		t.Fatalf("message %+v", m)
	}
}

func TestCloseStopsEveryGoroutine(t *testing.T) {
	srv := rttest.Start(t, bin)
	proxy := rttest.NewProxy(t, fmt.Sprintf("127.0.0.1:%d", srv.RTPort))
	before := runtime.NumGoroutine()
	for i := range 5 {
		c, err := realtime.Dial(ctx(t), srv.URL(), fast(realtime.Options{Key: rttest.Key1}))
		if err != nil {
			t.Fatal(err)
		}
		sub, err := c.Channel("g"+strconv.Itoa(i)).Subscribe(ctx(t), realtime.SubscribeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		if _, open := <-sub.C; open {
			t.Fatal("subscription still open after Close")
		}
		if !errors.Is(sub.Err(), realtime.ErrClosed) || c.State() != realtime.Closed {
			t.Fatalf("after Close: sub err %v, state %s", sub.Err(), c.State())
		}
		if err := c.Channel("x").Publish(ctx(t), "", nil); !errors.Is(err, realtime.ErrClosed) {
			t.Fatalf("publish after Close = %v", err)
		}
	}
	// A client closed while it is retrying stops too.
	proxy.Block()
	c, err := realtime.New(proxy.URL(), fast(realtime.Options{Key: rttest.Key1}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitState(ctx(t), realtime.Disconnected); err != nil {
		t.Fatal(err)
	}
	c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

func TestGlobFilterAndEcho(t *testing.T) {
	srv := rttest.Start(t, bin)
	a := dial(t, srv.URL(), realtime.Options{Key: rttest.Key1, NoEcho: true})
	sub, err := a.Channel("room:*", realtime.ChannelOptions{Filter: `^room:[0-9]+$`}).Subscribe(ctx(t), realtime.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Channel("bad:*", realtime.ChannelOptions{Filter: `(`}).Subscribe(ctx(t), realtime.SubscribeOptions{})
	var e *realtime.Error
	if !errors.As(err, &e) || e.Code != 400 {
		t.Fatalf("bad filter: %v, want 400", err)
	}
	b := dial(t, srv.URL(), realtime.Options{Key: rttest.Key1})
	for _, name := range []string{"room:abc", "room:1", "lobby", "room:22"} {
		publish(t, b.Channel(name), len(name), len(name))
	}
	// a's own publish is not echoed back to it.
	publish(t, a.Channel("room:3"), 100, 100)
	got := recv(t, sub, 2)
	if got[0].Channel != "room:1" || got[1].Channel != "room:22" {
		t.Fatalf("filtered glob delivered %v and %v", got[0].Channel, got[1].Channel)
	}
	noMore(t, sub, b.Channel("room:9"))
}

func TestTokenExpiringWithoutRenewalFails(t *testing.T) {
	srv := rttest.Start(t, bin)
	var st states
	a := dial(t, srv.URL(), realtime.Options{Token: srv.Token("k1", 2*time.Second, "", ""), OnState: st.add})
	if err := a.WaitState(ctx(t), realtime.Failed); err != nil {
		t.Fatal(err)
	}
	var e *realtime.Error
	if !errors.As(a.Reason(), &e) || e.Code != 401 || slices.Contains(st.list(), realtime.Disconnected) {
		t.Fatalf("at expiry: %v (states %v), want failed with 401 and no retry", a.Reason(), st.list())
	}
}
