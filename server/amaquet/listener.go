package amaquet

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recached/recached/server"
)

// Defaults of the listener's limits (SPEC section 10). The idle
// timeout's default (300 s) is the server's configuration's: here zero
// keeps idle connections forever.
const (
	DefaultMaxInflight    = 64
	DefaultGlobalInflight = 4096
	DefaultPayloadBudget  = 256 << 20
	DefaultReadTimeout    = 10 * time.Second
)

// Options configures a Listener. Zero fields take the defaults, except
// IdleTimeout, where zero keeps idle connections forever.
type Options struct {
	// Addr is the "host:port" to listen on (port 0: any free port).
	Addr string
	// Identity is the server's Ed25519 key, which HELLO signs with.
	Identity ed25519.PrivateKey
	// MaxPayload is the largest payload a request may declare, at most
	// HardMaxPayload.
	MaxPayload int
	// MaxInflight is the most active COMMAND requests of one connection;
	// GlobalInflight of the whole listener.
	MaxInflight    int
	GlobalInflight int
	// PayloadBudget is the total of the declared payload lengths of the
	// requests read and not yet answered.
	PayloadBudget int64
	// ReadTimeout bounds the time a started frame may take to arrive;
	// IdleTimeout the time between frames (0: forever).
	ReadTimeout time.Duration
	IdleTimeout time.Duration
}

// withDefaults returns o with its zero fields set and its bounds checked.
func (o Options) withDefaults() (Options, error) {
	if o.MaxPayload == 0 {
		o.MaxPayload = DefaultMaxPayload
	}
	if o.MaxPayload < 0 || o.MaxPayload > HardMaxPayload {
		return o, fmt.Errorf("amaquet: max payload %d is not within 0 and %d", o.MaxPayload, HardMaxPayload)
	}
	if o.MaxInflight == 0 {
		o.MaxInflight = DefaultMaxInflight
	}
	if o.GlobalInflight == 0 {
		o.GlobalInflight = DefaultGlobalInflight
	}
	if o.PayloadBudget == 0 {
		o.PayloadBudget = DefaultPayloadBudget
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	switch {
	case o.MaxInflight < 0 || o.GlobalInflight < 0:
		return o, errors.New("amaquet: in-flight limits must be positive")
	case o.PayloadBudget < 0:
		return o, errors.New("amaquet: the payload budget must be positive")
	case o.ReadTimeout < 0 || o.IdleTimeout < 0:
		return o, errors.New("amaquet: timeouts must not be negative")
	case o.Identity == nil:
		return o, errors.New("amaquet: no identity key")
	}
	return o, nil
}

// Listener serves Amaquet on one TCP address for one engine. Its limits
// (in-flight requests, the payload budget) are shared by its connections.
type Listener struct {
	srv   *server.Server
	opt   Options
	ln    net.Listener
	ready chan struct{}
	pub   string // the identity's public key, base64

	inflight atomic.Int64 // active COMMAND requests
	budget   atomic.Int64 // declared payload bytes reserved

	mu    sync.Mutex
	conns map[*conn]struct{}
	stop  bool
	wg    sync.WaitGroup
}

// New listens on opt.Addr for srv; Serve then accepts.
func New(srv *server.Server, opt Options) (*Listener, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", opt.Addr)
	if err != nil {
		return nil, fmt.Errorf("amaquet: %w", err)
	}
	return &Listener{
		srv:   srv,
		opt:   opt,
		ln:    ln,
		ready: make(chan struct{}),
		pub:   PublicKeyText(opt.Identity),
		conns: make(map[*conn]struct{}),
	}, nil
}

// Addr returns the address the listener is bound to.
func (l *Listener) Addr() string { return l.ln.Addr().String() }

// Ready is closed once Serve accepts connections.
func (l *Listener) Ready() <-chan struct{} { return l.ready }

// Serve accepts connections until Stop, serving each on goroutines of
// its own (a reader and a writer).
func (l *Listener) Serve() error {
	log.Printf("recached: Amaquet listening on %s", l.Addr())
	close(l.ready)
	var backoff time.Duration
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			l.mu.Lock()
			stopped := l.stop
			l.mu.Unlock()
			if stopped {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("amaquet: %w", err)
			}
			// Out of file descriptors and the like: wait and go on, as
			// net/http does, instead of stopping the server.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			log.Printf("recached: Amaquet accept: %v; retrying in %v", err, backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		l.mu.Lock()
		if l.stop {
			l.mu.Unlock()
			nc.Close()
			return nil
		}
		c := newConn(l, nc)
		l.conns[c] = struct{}{}
		l.wg.Add(1)
		l.mu.Unlock()
		go func() {
			defer l.wg.Done()
			c.serve()
			l.mu.Lock()
			delete(l.conns, c)
			l.mu.Unlock()
		}()
	}
}

// Stop stops accepting, closes every connection once what is queued for
// it has been written, and waits for them to end or ctx to expire.
func (l *Listener) Stop(ctx context.Context) error {
	l.mu.Lock()
	l.stop = true
	conns := make([]*conn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	l.ln.Close()
	for _, c := range conns {
		c.stopReading()
	}
	done := make(chan struct{})
	go func() {
		l.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ListenAndServe serves Amaquet for srv until ctx ends, then stops
// gracefully; it returns once the listener has stopped.
func ListenAndServe(ctx context.Context, srv *server.Server, opt Options) error {
	l, err := New(srv, opt)
	if err != nil {
		return err
	}
	return server.RunListener(ctx, l, "amaquet listener on "+opt.Addr)
}

// reserve takes n bytes from the payload budget; it reports false,
// taking nothing, when they are not available.
func (l *Listener) reserve(n int64) bool {
	if n == 0 {
		return true
	}
	if l.budget.Add(n) > l.opt.PayloadBudget {
		l.budget.Add(-n)
		return false
	}
	return true
}

// release returns n bytes to the payload budget.
func (l *Listener) release(n int64) {
	if n != 0 {
		l.budget.Add(-n)
	}
}
