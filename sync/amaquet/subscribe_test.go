package amaquet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/server/tcp"
)

// nextEvent waits for one event on s.
func nextEvent(t *testing.T, s *Subscription) Event {
	t.Helper()
	select {
	case ev, ok := <-s.C:
		if !ok {
			t.Fatalf("subscription %s:%s closed: %v", s.Key, s.Channel, s.Err())
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatalf("no event on %s:%s within 10s", s.Key, s.Channel)
	}
	return Event{}
}

// RESP PUBLISH of key:channel reaches the Amaquet subscription, text and
// bytes typed; Unsubscribe closes C; a second subscription replaces the
// first.
func TestSubscribe(t *testing.T) {
	p := startProc(t)
	c := p.dial(Options{})
	ctx := testCtx(t)
	r := p.resp()
	s, err := c.Subscribe(ctx, "bus", "updates", 16)
	if err != nil {
		t.Fatal(err)
	}
	if got := servertest.MustDo(t, r, "PUBLISH", "bus:updates", "hello"); got != ":1\r\n" {
		t.Fatalf("PUBLISH = %q, want one receiver", got)
	}
	if got := servertest.MustDo(t, r, "PUBLISH", "bus:updates", "\xff\x00"); got != ":1\r\n" {
		t.Fatalf("PUBLISH = %q", got)
	}
	for _, want := range []struct {
		typ  string
		data []byte
	}{{"text", []byte("hello")}, {"bytes", []byte{0xff, 0}}} {
		ev := nextEvent(t, s)
		if ev.Channel != "updates" || ev.Type != want.typ || !bytes.Equal(ev.Data, want.data) || ev.PublishedAt.IsZero() || ev.Dropped != 0 {
			t.Fatalf("event %+v, want %s %q", ev, want.typ, want.data)
		}
		if d := time.Since(ev.PublishedAt); d < 0 || d > time.Minute {
			t.Fatalf("published_at %v is %v from now", ev.PublishedAt, d)
		}
	}

	s2, err := c.Subscribe(ctx, "bus", "updates", 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := <-s.C; ok || s.Err() != nil {
		t.Fatalf("replaced subscription: open=%v err=%v", ok, s.Err())
	}
	if got := servertest.MustDo(t, r, "PUBLISH", "bus:updates", "again"); got != ":1\r\n" {
		t.Fatalf("PUBLISH after re-subscribing = %q, want one receiver", got)
	}
	if ev := nextEvent(t, s2); string(ev.Data) != "again" {
		t.Fatalf("event %+v", ev)
	}
	for _, want := range []bool{true, false} {
		ok, err := c.Unsubscribe(ctx, "bus", "updates")
		if err != nil || ok != want {
			t.Fatalf("Unsubscribe = %v %v, want %v", ok, err, want)
		}
	}
	if _, ok := <-s2.C; ok {
		t.Fatal("C open after Unsubscribe")
	}
	if got := servertest.MustDo(t, r, "PUBLISH", "bus:updates", "gone"); got != ":0\r\n" {
		t.Fatalf("PUBLISH after Unsubscribe = %q, want no receiver", got)
	}
	if _, err := c.Subscribe(ctx, "bus", "x", 0); err == nil {
		t.Fatal("buffer 0 accepted")
	}

	// A SUBSCRIBE whose context ends before its answer leaves no
	// subscription on the server.
	for i := 0; i < 20; i++ {
		cctx, cancel := context.WithCancel(ctx)
		go cancel()
		if s, err := c.Subscribe(cctx, "bus", "racy", 4); err == nil {
			if ok, err := c.Unsubscribe(ctx, "bus", "racy"); err != nil || !ok {
				t.Fatalf("Unsubscribe = %v %v", ok, err)
			}
			_ = s
		}
		cancel()
	}
	if _, err := c.Do(ctx, "PING"); err != nil {
		t.Fatal(err)
	}
	if got := servertest.MustDo(t, r, "PUBLISH", "bus:racy", "x"); got != ":0\r\n" {
		t.Fatalf("PUBLISH after cancelled SUBSCRIBEs = %q, want no receiver", got)
	}
}

// A consumer that does not read loses events, counted by the client
// (C full) or by the server (its buffer full, reported on the next event):
// every published event is received or counted.
func TestSubscribeDrops(t *testing.T) {
	p := startProc(t)
	c := p.dial(Options{})
	ctx := testCtx(t)
	r := p.resp()
	s, err := c.Subscribe(ctx, "bus", "slow", 1)
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	var batch []byte
	for i := 0; i < n; i++ {
		batch = append(batch, servertest.Encode("PUBLISH", "bus:slow", fmt.Sprint(i))...)
	}
	if err := r.Send(batch); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := r.Read(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "drops", func() bool { return s.Dropped() > 0 || len(s.C) == cap(s.C) })
	received := 0
	var last Event
	drain := func() {
		for {
			select {
			case last = <-s.C:
				received++
			case <-time.After(200 * time.Millisecond):
				return
			}
		}
	}
	drain()
	servertest.MustDo(t, r, "PUBLISH", "bus:slow", "marker")
	for string(last.Data) != "marker" {
		last = nextEvent(t, s)
		received++
	}
	total := uint64(received) + s.Dropped() + s.ServerDropped()
	if total != n+1 || received == n+1 {
		t.Fatalf("received %d, client dropped %d, server dropped %d: total %d, want %d with some dropped",
			received, s.Dropped(), s.ServerDropped(), total, n+1)
	}
	t.Logf("received %d, client dropped %d, server dropped %d", received, s.Dropped(), s.ServerDropped())
}

// A server killed and restarted on the same port and directory: calls in
// flight fail with a *ConnError, the next call reconnects (same pinned
// identity), and the subscription is restored by the background redial.
func TestReconnect(t *testing.T) {
	p := startProc(t)
	base := runtime.NumGoroutine()
	c := p.dial(Options{MinBackoff: 10 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	ctx := testCtx(t)
	s, err := c.Subscribe(ctx, "bus", "re", 16)
	if err != nil {
		t.Fatal(err)
	}
	blocked := c.Start(ctx, "BLPOP", "q", 0)
	if _, err := c.Do(ctx, "PING"); err != nil {
		t.Fatal(err)
	}
	p.kill()
	_, err = blocked.Result()
	var ce *ConnError
	if !errors.Is(err, ErrDisconnected) || !errors.As(err, &ce) {
		t.Fatalf("call in flight when the server died: %v", err)
	}
	if _, err := c.Do(ctx, "PING"); !errors.Is(err, ErrDisconnected) {
		t.Fatalf("PING with the server down: %v", err)
	}
	p.start()
	waitFor(t, 10*time.Second, "a call to succeed again", func() bool {
		r, err := c.Do(ctx, "PING")
		return err == nil && r == "PONG"
	})
	r := p.resp()
	waitFor(t, 10*time.Second, "the subscription to be restored", func() bool {
		return servertest.MustDo(t, r, "PUBLISH", "bus:re", "back") == ":1\r\n"
	})
	if ev := nextEvent(t, s); string(ev.Data) != "back" {
		t.Fatalf("event after reconnecting: %+v", ev)
	}

	// Down again: the background redial runs until Close, which ends it.
	p.kill()
	waitFor(t, 10*time.Second, "the background redial to start", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.redialing
	})
	c.Close()
	if _, ok := <-s.C; ok || !errors.Is(s.Err(), ErrClosed) {
		t.Fatalf("subscription after Close: open=%v err=%v", ok, s.Err())
	}
	waitFor(t, 10*time.Second, "goroutines back to "+strconv.Itoa(base), func() bool { return runtime.NumGoroutine() <= base })
}

// writeKeys writes an API keys file (SPEC section 9) and returns its path.
func writeKeys(t *testing.T, keys string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(f, []byte(keys), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// With API keys configured, commands need AUTH; a key's patterns scope the
// keys it may touch (FORBIDDEN, nothing executed) and its capability the
// channels it may subscribe to.
func TestAuth(t *testing.T) {
	if out, _ := exec.Command(recachedBin(t), "-h").CombinedOutput(); !strings.Contains(string(out), "api-keys") {
		t.Fatalf("recached has no --api-keys flag:\n%s", out)
	}
	keys := writeKeys(t, `[{"id":"k1","secret":"s3cret","keys":["user:*"],"capability":{"bus:*":["subscribe"]}}]`)
	p := startProc(t, "--api-keys", keys)
	ctx := testCtx(t)

	anon := p.dial(Options{})
	if !anon.Hello().AuthRequired {
		t.Fatal("HELLO says no auth required")
	}
	if _, err := anon.Do(ctx, "PING"); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("PING before AUTH: %v", err)
	}
	if _, err := anon.Auth(ctx, "wrong.k1"); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("AUTH with a wrong secret: %v", err)
	}
	if id, err := anon.Auth(ctx, "s3cret.k1"); err != nil || id != "k1" {
		t.Fatalf("AUTH = %q %v", id, err)
	}
	if r, err := anon.Do(ctx, "SET", "user:1", "x"); err != nil || r != "OK" {
		t.Fatalf("SET user:1 after AUTH = %v %v", r, err)
	}

	c := p.dial(Options{APIKey: "s3cret.k1"})
	for _, tc := range []struct {
		args []any
		want error
	}{
		{[]any{"SET", "user:2", "y"}, nil},
		{[]any{"SET", "other", "y"}, ErrForbidden},
		{[]any{"MSET", "user:3", "a", "other2", "b"}, ErrForbidden},
	} {
		_, err := c.Do(ctx, tc.args[0].(string), tc.args[1:]...)
		if !errors.Is(err, tc.want) {
			t.Errorf("%v: %v, want %v", tc.args, err, tc.want)
		}
	}
	r := p.resp()
	if got := servertest.MustDo(t, r, "EXISTS", "other", "other2", "user:3"); got != ":0\r\n" {
		t.Fatalf("refused writes executed: EXISTS = %q", got)
	}
	if _, err := c.Subscribe(ctx, "bus", "ok", 4); err != nil {
		t.Fatalf("SUBSCRIBE bus:ok: %v", err)
	}
	if _, err := c.Subscribe(ctx, "private", "no", 4); !errors.Is(err, ErrForbidden) {
		t.Fatalf("SUBSCRIBE private:no: %v", err)
	}
	if _, err := Dial(ctx, p.Addr, Options{PublicKey: p.publicKey(), APIKey: "bad.k9"}); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("Dial with an unknown key: %v", err)
	}
}

// A Blackevin (realtime) Publish with data reaches the Amaquet subscriber
// of key:channel as a json event carrying that data (SPEC section 11).
func TestSubscribeRealtimePublish(t *testing.T) {
	keys := writeKeys(t, `[{"id":"k1","secret":"s3cret","capability":{"bus:*":["subscribe","publish"]}}]`)
	rtPort, err := tcp.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p := startProc(t, "--api-keys", keys, "--realtime-port", strconv.Itoa(rtPort))
	ctx := testCtx(t)
	c := p.dial(Options{APIKey: "s3cret.k1"})
	s, err := c.Subscribe(ctx, "bus", "j", 8)
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("ws://127.0.0.1:%d/?key=s3cret.k1", rtPort)
	var ws *websocket.Conn
	waitFor(t, 10*time.Second, "the realtime listener", func() bool {
		ws, _, err = websocket.DefaultDialer.Dial(url, nil)
		return err == nil
	})
	defer ws.Close()
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	var connected map[string]any
	if err := ws.ReadJSON(&connected); err != nil || connected["op"] != float64(12) {
		t.Fatalf("realtime connect: %v %v", connected, err)
	}
	if err := ws.WriteJSON(map[string]any{"op": 3, "id": "1", "channel": "bus:j", "data": map[string]any{"a": []int{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	var ack map[string]any
	if err := ws.ReadJSON(&ack); err != nil || ack["op"] != float64(9) {
		t.Fatalf("realtime publish answered %v %v, want an Ack", ack, err)
	}
	ev := nextEvent(t, s)
	var got any
	if ev.Type != "json" || json.Unmarshal(ev.Data, &got) != nil || !reflect.DeepEqual(got, map[string]any{"a": []any{1.0, 2.0}}) {
		t.Fatalf("event from a realtime publish: %+v (%s)", ev, ev.Data)
	}
}

// A key revoked by a reload (SIGHUP) ends the connection with
// UNAUTHENTICATED; the client's redial then fails its AUTH the same way.
func TestRevokedKey(t *testing.T) {
	keys := writeKeys(t, `[{"id":"k1","secret":"s3cret"}]`)
	p := startProc(t, "--api-keys", keys)
	c := p.dial(Options{APIKey: "s3cret.k1"})
	ctx := testCtx(t)
	if _, err := c.Do(ctx, "PING"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keys, []byte(`[{"id":"k2","secret":"other"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "UNAUTHENTICATED after the reload", func() bool {
		_, err := c.Do(ctx, "PING")
		return errors.Is(err, ErrUnauthenticated)
	})
}
