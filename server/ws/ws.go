// Package ws is the WebSocket bridge (SPEC section 3): an HTTP server whose
// path "/" upgrades to a WebSocket carrying one RESP value per frame in each
// direction, served by the same engine and command table as the RESP port.
//
// WebSocket is only a transport here. Each client frame (text or binary)
// holds one command, parsed with resp.Parser.ParseFrame and run by a
// server.Session created with ws=true; each server frame, always a text
// frame, holds exactly one RESP value: the command's reply, or a push.
//
// gorilla/websocket performs the handshake and reads client frames. The
// connection's writer goroutine writes server frames itself, batching every
// frame queued since its last write into one socket write, so that a
// connection receiving many pushes costs one system call per batch rather
// than one per frame; it is the only goroutine writing to the socket.
package ws

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/dashboard"
	"github.com/recached/recached/server/internal/httplisten"
	"github.com/recached/recached/server/metrics"
	"github.com/recached/recached/sync/web"
)

// Limits and keepalive defaults.
const (
	// MaxFrame is the largest client frame accepted (the seed's 64 MB
	// message limit). A bigger frame is read to its end and discarded, and
	// answered with a protocol error; the connection stays open.
	MaxFrame = 64 << 20

	// DefaultPingInterval is how often the server pings an idle peer.
	DefaultPingInterval = 20 * time.Second
	// DefaultReadTimeout is how long a peer may stay silent (no frame, no
	// pong) before it is dropped as dead.
	DefaultReadTimeout = 60 * time.Second
	// DefaultWriteTimeout is how long one socket write may block before the
	// peer is dropped.
	DefaultWriteTimeout = 30 * time.Second
)

// Listener is the WebSocket transport of one server.
type Listener struct {
	// PingInterval, ReadTimeout and WriteTimeout are the keepalive
	// settings; set them before Serve.
	PingInterval time.Duration
	ReadTimeout  time.Duration
	WriteTimeout time.Duration

	// Listener binds and serves the HTTP server: Listen, Addr, Ready and
	// Serve are its.
	*httplisten.Listener
	srv      *server.Server
	upgrader websocket.Upgrader

	mu      sync.Mutex
	conns   map[*conn]struct{}
	stopped bool
	wg      sync.WaitGroup // connection goroutines
}

// New returns a listener for srv on addr ("127.0.0.1:6380").
func New(srv *server.Server, addr string) *Listener {
	l := &Listener{
		PingInterval: DefaultPingInterval,
		ReadTimeout:  DefaultReadTimeout,
		WriteTimeout: DefaultWriteTimeout,
		srv:          srv,
		conns:        make(map[*conn]struct{}),
	}
	l.upgrader = websocket.Upgrader{
		ReadBufferSize:  16 << 10,
		WriteBufferSize: 4 << 10,
		CheckOrigin:     l.checkOrigin,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("/{$}", l.upgrade)
	mux.Handle("GET /metrics", metrics.Handler(srv))
	dashboard.Register(mux, srv)
	// The browser client and its demo: GET /recached-edge.js, /demo/.
	web.NewHandler().Register(mux)
	l.Listener = httplisten.New("WebSocket", addr, mux, func(ln net.Listener) net.Listener { return keepAliveListener{ln, srv} })
	return l
}

// Stop stops accepting, lets every connection send what is queued for it,
// closes it, and waits for the connections to end or ctx to expire.
func (l *Listener) Stop(ctx context.Context) error {
	err := l.Shutdown(ctx)
	l.mu.Lock()
	l.stopped = true
	for c := range l.conns {
		c.Close()
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

// Conns returns the number of open WebSocket connections.
func (l *Listener) Conns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// checkOrigin decides which web pages may open a connection. Browsers on
// any origin are the audience when the server has a credential (a password
// or a token secret): access is then granted in band (AUTH, SYNC TOKEN),
// and recached uses no cookie or other credential a browser would attach
// by itself, so a page gains nothing from the origin it runs on. With no
// credential, everyone protected mode lets in (a loopback peer) may do
// everything; a page of any web site the local user opens could then drive
// the server through the browser (cross-site WebSocket hijacking, the
// WebSocket form of the attack Redis's POST/Host: defence stops). So only
// a request without an Origin (not a browser) or from a page served by a
// loopback host (localhost, 127.0.0.1, [::1]) is accepted then.
func (l *Listener) checkOrigin(r *http.Request) bool {
	cfg := l.srv.Config()
	if cfg.RequirePass != "" || cfg.TokenSecret != "" {
		return true
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// upgrade answers "/": the engine's admission first (protected mode and
// maxclients refuse before the upgrade, with HTTP 403 and 503 and Redis's
// text), then the WebSocket handshake; the connection's reader then runs in
// this goroutine and its writer in another.
func (l *Listener) upgrade(w http.ResponseWriter, r *http.Request) {
	if err := l.srv.Admit(server.TransportWS, remoteAddr(r)); err != nil {
		status := http.StatusServiceUnavailable
		if errors.Is(err, server.ErrProtected) {
			status = http.StatusForbidden
		}
		http.Error(w, err.Error(), status)
		return
	}
	wsc, err := l.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered with an HTTP error
	}
	c := newConn(l, wsc)
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		_ = wsc.Close()
		return
	}
	l.conns[c] = struct{}{}
	l.wg.Add(2)
	l.mu.Unlock()
	go c.writeLoop()
	c.serve()
}

// remoteAddr returns the peer address of r. One that cannot be parsed
// becomes the unspecified address, which is not loopback: admission fails
// closed.
func remoteAddr(r *http.Request) net.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return &net.TCPAddr{IP: net.IPv4zero}
	}
	return net.TCPAddrFromAddrPort(ap)
}

func (l *Listener) remove(c *conn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
}

// ListenAndServe runs a listener for srv on addr until ctx ends, then stops
// it gracefully. It returns once the listener has stopped.
func ListenAndServe(ctx context.Context, srv *server.Server, addr string) error {
	l := New(srv, addr)
	if err := l.Listen(); err != nil {
		return err
	}
	return server.RunListener(ctx, l, "websocket listener on "+l.Addr())
}
