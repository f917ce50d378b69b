// Package realtime is the Blackevin realtime transport (SPEC section 9, seed
// 003): an HTTP server whose path "/" upgrades to a WebSocket carrying one
// JSON object per text frame in each direction. Clients subscribe to
// channels (globs, with an RE2 filter and a rewind of the channel's
// history), publish, and share presence; an API key or an access token in
// the connect URL says which channels and operations they may use.
//
// Channels are the engine's pub/sub bus (SPEC section 11): a Subscribe is a
// bus subscription, a Publish a bus publish, so RESP PUBLISH and keyspace
// notifications reach realtime subscribers and a realtime Publish reaches
// RESP subscribers, in one publish order. Presence is the transport's own,
// in memory.
//
// Each connection has one goroutine, its reader, which runs the requests
// of its frames in order. What the server sends goes through a bounded
// queue of complete WebSocket frames. Flushers (one per GOMAXPROCS) write
// each connection's queued frames in one system call, let the publishers
// in during a long pass and, after a burst of fan-out, let the publishing
// settle before the next pass, so that each write carries several
// publications; a writer goroutine
// of the connection's own takes over only for a peer that does not keep
// up, so an idle connection costs its reader and a few hundred bytes. A
// Message frame is encoded once per publication and the same bytes are
// queued on every connection that receives it.
package realtime

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/internal/httplisten"
	"github.com/recached/recached/sync/realtime/web"
)

// Options are the transport's limits and timers; DefaultOptions returns
// SPEC section 9's values. Tests shorten the timers.
type Options struct {
	// HeartbeatInterval is how long the server may send nothing before it
	// sends a Heartbeat.
	HeartbeatInterval time.Duration
	// IdleTimeout is how long a client may send nothing before it is
	// disconnected (4000) as dead.
	IdleTimeout time.Duration
	// WriteTimeout bounds one socket write; a peer that does not take the
	// bytes within it is dropped.
	WriteTimeout time.Duration
	// CloseWait is how long the server waits for the peer's close frame
	// after sending its own.
	CloseWait time.Duration
	// MaxConnsPerKey is the number of connections one API key may hold
	// (its tokens' included).
	MaxConnsPerKey int
	// MaxSubscriptions is the number of subscriptions of one connection.
	MaxSubscriptions int
	// MaxMembers is the number of presence members of one channel.
	MaxMembers int
	// MaxPublishRate is the number of Publish frames one connection may
	// send per second.
	MaxPublishRate int
	// MaxQueueBytes and MaxQueueFrames bound the frames queued for a
	// connection and not yet written: past either it is a slow consumer,
	// sent 4000 and closed.
	MaxQueueBytes  int
	MaxQueueFrames int
}

// DefaultOptions returns SPEC section 9's limits and timers.
func DefaultOptions() Options {
	return Options{
		HeartbeatInterval: 15 * time.Second,
		IdleTimeout:       45 * time.Second,
		WriteTimeout:      10 * time.Second,
		CloseWait:         2 * time.Second,
		MaxConnsPerKey:    10000,
		MaxSubscriptions:  1000,
		MaxMembers:        10000,
		MaxPublishRate:    1000,
		MaxQueueBytes:     8 << 20,
		MaxQueueFrames:    10000,
	}
}

// Listener is the realtime transport of one server.
type Listener struct {
	// Listener binds and serves the HTTP server: Listen, Addr, Ready and
	// Serve are its.
	*httplisten.Listener
	opts     Options
	srv      *server.Server
	upgrader websocket.Upgrader
	pres     *presence
	// last is the Message frame encoded for the latest publication
	// delivered, shared by all its receivers (see messageFrame).
	last atomic.Pointer[encodedMessage]
	// flushers write the connections' frames (see flusher); next picks
	// the flusher of the next connection.
	flushers []*flusher
	next     atomic.Uint32

	mu      sync.Mutex
	conns   map[*conn]struct{}
	perKey  map[string]int // connections by API key id
	stopped bool
	wg      sync.WaitGroup // connection readers
}

// New returns a listener for srv on addr ("127.0.0.1:6381") with opts.
func New(srv *server.Server, addr string, opts Options) *Listener {
	l := &Listener{
		opts:   opts,
		srv:    srv,
		pres:   newPresence(opts.MaxMembers),
		conns:  make(map[*conn]struct{}),
		perKey: make(map[string]int),
	}
	for range runtime.GOMAXPROCS(0) {
		l.flushers = append(l.flushers, newFlusher(&l.last))
	}
	l.upgrader = websocket.Upgrader{
		// The pool lends a write buffer only for the handshake: the
		// server writes frames to the socket itself.
		WriteBufferPool: &sync.Pool{},
		// A small read buffer: frame headers and small frames go through
		// it, larger payloads are read straight into the frame's buffer.
		ReadBufferSize: 1024,
		// The credential travels in the URL, never in a cookie, so a
		// page gains nothing from its origin: any page may connect.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("/{$}", l.upgrade)
	// The browser client: GET /realtime-client.js, /realtime-client.d.ts.
	web.NewHandler().Register(mux)
	l.Listener = httplisten.New("realtime", addr, mux, nil)
	return l
}

// Stop stops accepting, sends every connection a 4000 Nack after what is
// queued for it and closes it, and waits for the connections to end or ctx
// to expire.
func (l *Listener) Stop(ctx context.Context) error {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return nil
	}
	l.mu.Unlock()
	err := l.Shutdown(ctx)
	l.mu.Lock()
	l.stopped = true
	for c := range l.conns {
		c.finish(appendNack(nil, nil, codeDisconnected, "", "server shutting down"), websocket.CloseGoingAway, "server shutting down", true)
	}
	l.mu.Unlock()
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		l.mu.Lock()
		for c := range l.conns {
			c.kill()
		}
		l.mu.Unlock()
		return ctx.Err()
	}
	return err
}

// flusherFor returns the flusher of a new connection: each in turn.
func (l *Listener) flusherFor() *flusher {
	return l.flushers[int(l.next.Add(1))%len(l.flushers)]
}

// Conns returns the number of open realtime connections.
func (l *Listener) Conns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// upgrade answers "/" with the WebSocket handshake, then hands the
// connection to a goroutine of its own (run) and returns: the HTTP
// server's request, response and buffers are garbage from then on, which
// keeps an idle connection small.
func (l *Listener) upgrade(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	wsc, err := l.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered with an HTTP error
	}
	c := newConn(l, wsc, q.Get("echo") != "false")
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		_ = wsc.Close()
		return
	}
	l.conns[c] = struct{}{}
	l.wg.Add(1)
	l.mu.Unlock()
	go l.run(c, queryCredential(q))
}

// run is the connection's reader: its session (429 and a close past
// maxclients), the credential of the query string, answered with
// Connected, or with a 401 (429 past the key's connection ceiling) Nack
// and a close; then the connection's requests.
func (l *Listener) run(c *conn, cred credential) {
	defer l.wg.Done()
	defer l.remove(c)
	if !c.register() {
		c.drain()
		return
	}
	defer c.unregister()
	g, ferr := l.authenticate(cred)
	if ferr == nil && !l.acquire(g.keyID) {
		ferr = &frameError{code: codeTooMany, message: fmt.Sprintf("API key %s has %d connections, its ceiling", g.keyID, l.opts.MaxConnsPerKey)}
	}
	if ferr != nil {
		code := websocket.ClosePolicyViolation
		if ferr.code == codeTooMany {
			code = websocket.CloseTryAgainLater
		}
		c.finish(appendNack(nil, nil, ferr.code, "", ferr.message), code, ferr.message, false)
		c.drain()
		return
	}
	c.serve(g)
}

// acquire takes one of key id's connection slots; it reports false when
// all are taken.
func (l *Listener) acquire(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.perKey[id] >= l.opts.MaxConnsPerKey {
		return false
	}
	l.perKey[id]++
	return true
}

// release gives back a slot acquire took.
func (l *Listener) release(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.perKey[id]--; l.perKey[id] <= 0 {
		delete(l.perKey, id)
	}
}

func (l *Listener) remove(c *conn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
}

// ListenAndServe runs a listener for srv on addr with opts until ctx ends,
// then stops it gracefully. It returns once the listener has stopped.
func ListenAndServe(ctx context.Context, srv *server.Server, addr string, opts Options) error {
	l := New(srv, addr, opts)
	if err := l.Listen(); err != nil {
		return err
	}
	return server.RunListener(ctx, l, "realtime listener on "+l.Addr())
}
