package server

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"time"

	"github.com/recached/recached/resp"
)

// Transport names the kind of listener a connection arrives on. What a
// port trusts decides who may connect to it (Admit).
type Transport int

const (
	// TransportRESP is the RESP port: its connections are trusted and
	// unchecked unless they present a token, so only a password lifts
	// protected mode on it.
	TransportRESP Transport = iota
	// TransportWS is the WebSocket port: with a token secret configured
	// every connection's keys and channels are checked against the token it
	// presents (strict mode; one with no token may use none), so a password
	// or a token secret lifts protected mode on it.
	TransportWS
	// TransportAmaquet is the Amaquet port: with API keys configured
	// every connection must AUTH with one, so the keys file (or a
	// password) lifts protected mode on it.
	TransportAmaquet
)

// String returns the transport's name for logs.
func (t Transport) String() string {
	switch t {
	case TransportWS:
		return "websocket"
	case TransportAmaquet:
		return "amaquet"
	}
	return "resp"
}

// Admission errors: Admit refuses with one of them. Their texts are
// Redis's, for the transport to send as an error reply.
var (
	//lint:ignore ST1005 Redis's exact text, sent to clients as it is
	ErrProtected  = errors.New(protectedMsg)
	ErrMaxClients = errors.New(errMaxClients)
)

// protectedMsg is Redis's protected-mode refusal.
const protectedMsg = "DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Set up an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside."

// Admit decides whether a new connection from remote may be served on a
// transport: every listener calls it as it accepts, before it creates a
// session (the WebSocket port before the upgrade). It returns nil, or
// ErrProtected or ErrMaxClients. The maxclients test here refuses early;
// NewSession repeats it where the session is registered, so that a burst of
// accepts cannot overshoot.
func (srv *Server) Admit(t Transport, remote net.Addr) error {
	if srv.Protected(t) && !isLoopback(remote) {
		srv.rejected.Add(1)
		return ErrProtected
	}
	if srv.full() {
		srv.rejected.Add(1)
		return ErrMaxClients
	}
	return nil
}

// Protected reports whether connections to transport from non-loopback
// addresses are refused. On a port that trusts its clients (RESP) only a
// password lifts protected mode: a token secret does not make that port
// check anything. On the WebSocket port a token secret does, since there a
// connection without a token is refused every key and channel.
func (srv *Server) Protected(t Transport) bool {
	cfg := srv.Config()
	if cfg.RequirePass != "" {
		return false
	}
	if t == TransportAmaquet {
		return srv.APIKeys() == nil
	}
	return t != TransportWS || cfg.TokenSecret == ""
}

// full reports whether maxclients connections are registered.
func (srv *Server) full() bool {
	srv.clientsMu.Lock()
	defer srv.clientsMu.Unlock()
	return srv.fullLocked()
}

// fullLocked is full for a caller holding clientsMu.
func (srv *Server) fullLocked() bool {
	return len(srv.clients) >= srv.Config().MaxClients
}

// isLoopback reports whether a is a loopback address; an address that is
// not TCP (a Unix socket, a test pipe) is local.
func isLoopback(a net.Addr) bool {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.IsLoopback()
	}
	return true
}

// AddrString returns a's "ip:port", "" for nil: the form Conn's RemoteAddr
// and LocalAddr report.
func AddrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// RequestLimits returns the bounds the session's next request is parsed
// with: Redis's unauthenticated limits while a password is required and the
// session has not authenticated, none otherwise. Transports set them on
// their parser before each request.
func (s *Session) RequestLimits() resp.Limits {
	l := resp.UnauthenticatedLimits
	if s.authed {
		l = resp.Limits{}
	}
	l.MaxBulkLen = int(s.srv.live.bulkMax.Load()) // proto-max-bulk-len
	return l
}

// The unread output a connection may hold (sync/PROTOCOL.md section 7):
// past MaxUnreadBytes or MaxUnreadFrames the client is not reading and is
// disconnected, so that it never slows the writers that push to it. One
// frame bigger than MaxUnreadBytes alone (a large reply) is allowed. The
// WebSocket port applies them to every connection; the RESP port to sync
// subscribers (SYNC, QSUB, KWATCH), its pub/sub subscribers having Redis's
// own pub/sub limits.
const (
	MaxUnreadBytes  = 8 << 20
	MaxUnreadFrames = 10000
)

// OverUnreadLimit reports whether a connection holding bytes of unread
// output in frames frames is past the unread-output limits.
func OverUnreadLimit(bytes, frames int) bool {
	return frames > MaxUnreadFrames || bytes > MaxUnreadBytes && frames > 1
}

// CheckUnread applies the unread-output limits to a RESP sync subscriber
// holding bytes of output in frames pushes; it closes the connection and
// returns true when it is past them. The transport calls it from the
// session's goroutine after writing pushes.
func (s *Session) CheckUnread(bytes, frames int) bool {
	if s.sub == nil || !OverUnreadLimit(bytes, frames) {
		return false
	}
	addr := ""
	if s.conn != nil {
		addr = s.conn.RemoteAddr()
	}
	log.Printf("client id=%d addr=%s closed for overcoming of output buffer limits (sync, %d bytes in %d frames pending)", s.ID, addr, bytes, frames)
	s.srv.CountDroppedPushes(frames)
	s.abort()
	return true
}

// Listener is what every transport's listener offers to RunListener.
type Listener interface {
	// Serve accepts connections until Stop.
	Serve() error
	// Ready is closed once the listener accepts connections.
	Ready() <-chan struct{}
	// Stop stops accepting, lets the connections send what is queued for
	// them, and waits for them to end or ctx to expire.
	Stop(ctx context.Context) error
}

// stopTimeout bounds a listener's graceful stop.
const stopTimeout = 5 * time.Second

// RunListener serves l until ctx ends, then stops it gracefully (at most 5
// seconds). It returns once l has stopped; name describes l in errors.
func RunListener(ctx context.Context, l Listener, name string) error {
	errc := make(chan error, 1)
	go func() { errc <- l.Serve() }()
	select {
	case err := <-errc:
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	case <-l.Ready():
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := l.Stop(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return <-errc
}
