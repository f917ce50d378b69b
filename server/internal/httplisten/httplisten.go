// Package httplisten binds and serves the HTTP servers of the transports
// that speak WebSocket (the sync bridge and the realtime port): one bind,
// the address it got, a readiness signal and a serve loop that ends
// cleanly when the server is shut down.
package httplisten

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"time"
)

// Listener serves one HTTP server on one address.
type Listener struct {
	name  string
	addr  string
	wrap  func(net.Listener) net.Listener
	ln    net.Listener
	hs    *http.Server
	ready chan struct{}
}

// New returns a listener named name (for its log line and errors) that
// serves handler on addr. wrap, when not nil, wraps the bound socket (the
// bridge's TCP keep-alive). Request errors net/http would log are dropped:
// probes and port scans are not the operator's concern.
func New(name, addr string, handler http.Handler, wrap func(net.Listener) net.Listener) *Listener {
	return &Listener{
		name:  name,
		addr:  addr,
		wrap:  wrap,
		hs:    &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)},
		ready: make(chan struct{}),
	}
}

// Listen binds the address; Addr then reports it.
func (l *Listener) Listen() error {
	ln, err := net.Listen("tcp", l.addr)
	if err != nil {
		return fmt.Errorf("%s listener on %s: %w", strings.ToLower(l.name), l.addr, err)
	}
	l.addr = ln.Addr().String()
	if l.wrap != nil {
		ln = l.wrap(ln)
	}
	l.ln = ln
	return nil
}

// Addr returns the address listened on.
func (l *Listener) Addr() string { return l.addr }

// Ready is closed once the listener accepts connections.
func (l *Listener) Ready() <-chan struct{} { return l.ready }

// Serve accepts connections until Shutdown; it binds first if Listen was
// not called. It returns nil after Shutdown.
func (l *Listener) Serve() error {
	if l.ln == nil {
		if err := l.Listen(); err != nil {
			return err
		}
	}
	log.Printf("recached: %s listening on %s", l.name, l.addr)
	close(l.ready)
	err := l.hs.Serve(l.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting and waits, until ctx ends, for the requests
// in progress (hijacked WebSocket connections are the caller's to close).
func (l *Listener) Shutdown(ctx context.Context) error { return l.hs.Shutdown(ctx) }
