package client

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/server/ws"
)

// testServer is recached in-process: its RESP port and WebSocket bridge.
type testServer struct {
	srv    *server.Server
	tcp    string // host:port
	wsAddr string // host:port
}

// startServer starts recached with cfg on free loopback ports, both
// transports, stopped when the test ends.
func startServer(tb testing.TB, cfg server.Config) *testServer {
	tb.Helper()
	addr, srv := servertest.StartRecached(tb, cfg)
	l := ws.New(srv, "127.0.0.1:0")
	if err := l.Listen(); err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- l.Serve() }()
	<-l.Ready()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = l.Stop(ctx)
		<-done
	})
	return &testServer{srv: srv, tcp: addr, wsAddr: l.Addr()}
}

// url returns the server's URL for transport "ws" or "tcp".
func (s *testServer) url(transport string) string {
	if transport == "ws" {
		return "ws://" + s.wsAddr + "/"
	}
	return "tcp://" + s.tcp
}

// connTracker is a NetDial that remembers the connections it opened, so
// that a test can break the client's current one.
type connTracker struct {
	mu     sync.Mutex
	conns  []net.Conn
	killed int // conns[:killed] were broken or replaced
	d      net.Dialer
}

func (t *connTracker) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := t.d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.conns = append(t.conns, c)
	t.mu.Unlock()
	return c, nil
}

// killLast closes the most recent connection and reports whether there was
// one.
func (t *connTracker) killLast() bool { return t.kill(false) }

// kill breaks the most recent connection, unless it was broken already,
// and reports whether it did. readOnly shuts down only its reading side:
// the server still runs what was sent, and its replies are lost.
func (t *connTracker) kill(readOnly bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.conns) == 0 || t.killed == len(t.conns) {
		return false
	}
	t.killed = len(t.conns)
	c := t.conns[len(t.conns)-1]
	if tc, ok := c.(*net.TCPConn); ok && readOnly {
		_ = tc.CloseRead()
		return true
	}
	_ = c.Close()
	return true
}

// count returns the number of connections opened.
func (t *connTracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns)
}

// stateLog records state events and lets a test wait for one.
type stateLog struct {
	mu     sync.Mutex
	events []Event
	ch     chan struct{}
}

func newStateLog() *stateLog { return &stateLog{ch: make(chan struct{}, 1)} }

func (l *stateLog) on(e Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
	select {
	case l.ch <- struct{}{}:
	default:
	}
}

// states returns the states seen so far.
func (l *stateLog) states() []State {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]State, len(l.events))
	for i, e := range l.events {
		out[i] = e.State
	}
	return out
}

// waitCount waits until state s has been seen n times.
func (l *stateLog) waitCount(tb testing.TB, s State, n int) {
	tb.Helper()
	deadline := time.After(10 * time.Second)
	for {
		c := 0
		for _, x := range l.states() {
			if x == s {
				c++
			}
		}
		if c >= n {
			return
		}
		select {
		case <-l.ch:
		case <-deadline:
			tb.Fatalf("state %v not seen %d times; states %v", s, n, l.states())
		}
	}
}

// newClient starts a client, closed when the test ends.
func newClient(tb testing.TB, opts Options) *Client {
	tb.Helper()
	if opts.MinBackoff == 0 {
		opts.MinBackoff = 5 * time.Millisecond
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = 50 * time.Millisecond
	}
	c, err := New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// waitFor polls cond until it holds or 10 seconds pass.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// awaitConverged polls diff until it reports no difference, failing with
// step and the last difference when 5 seconds pass.
func awaitConverged(tb testing.TB, step string, diff func() (string, error)) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		d, err := diff()
		if err != nil {
			tb.Fatal(err)
		}
		if d == "" {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: replica differs: %s", step, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ctx10(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	tb.Cleanup(cancel)
	return ctx
}

var transports = []string{"ws", "tcp"}
