// Package realtime is the Go client of recached's Blackevin realtime protocol
// (SPEC section 9, seed 003; sync/realtime/web is its browser twin): a
// WebSocket connection that keeps itself up, channels with subscriptions and
// presence, and awaitable publishes.
//
// The connection follows Ably's state machine: initialized, connecting,
// connected, disconnected (retried with exponential backoff and jitter),
// suspended (no success for connectionStateTtl: retried every
// SuspendedRetry, requests fail at once), closed (Close) and failed (a 401
// or 403 on connect: the credential will not start working, so the client
// stops). A 429 on connect is retried like any drop.
//
// After a reconnect the client attaches and subscribes again, asking each
// plain channel for a rewind of history and skipping what it had already
// delivered, so that a short outage loses no message; it enters its
// presence members again and brings each channel's member set up to date.
// Tokens from Options.AuthCallback are renewed through Auth before they
// expire.
//
// Every call takes a context. Messages arrive on bounded channels that the
// client never blocks on: a subscriber that falls behind by more than its
// buffer loses messages (counted by Dropped, reported to Options.OnError).
// Close stops every goroutine the client started.
package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/sync/realtime/wire"
)

// State is a connection state.
type State string

// The connection states, as Ably names them.
const (
	Initialized  State = "initialized"
	Connecting   State = "connecting"
	Connected    State = "connected"
	Disconnected State = "disconnected"
	Suspended    State = "suspended"
	Closed       State = "closed"
	Failed       State = "failed"
)

// StateChange is one transition, given to Options.OnState.
type StateChange struct {
	Previous, Current State
	Reason            error         // why, when a failure caused it
	RetryIn           time.Duration // for disconnected and suspended: the wait before the next attempt
}

// Options configure a client. Exactly one credential is needed: Key, Token
// or AuthCallback (which may also back a Token that expires).
type Options struct {
	// Key is an API key, "<secret>.<keyId>".
	Key string
	// Token is an access token (a JWT minted with `recached realtime-token`).
	Token string
	// AuthCallback returns a fresh access token. It is called to connect
	// when there is no token, RenewBefore ahead of the token's expiry (the
	// new token is swapped in with Auth, the connection stays up), and once
	// after a 401 on connect with a token it did not just return.
	AuthCallback func(ctx context.Context) (string, error)
	// RenewBefore is how long before a token's expiry it is renewed
	// (default 30 s, at most half the token's lifetime).
	RenewBefore time.Duration
	// ClientID is the presence client id when the token carries none.
	ClientID string
	// NoEcho asks the server not to deliver this connection's own publishes.
	NoEcho bool
	// MinRetry and MaxRetry bound the backoff between reconnect attempts
	// (defaults 250 ms and 15 s); each wait is jittered by up to 30 %.
	MinRetry, MaxRetry time.Duration
	// SuspendedRetry is the wait between attempts once suspended (default 30 s).
	SuspendedRetry time.Duration
	// ConnectionStateTTL overrides the server's connectionStateTtl: how long
	// without a connection before the state becomes suspended.
	ConnectionStateTTL time.Duration
	// HeartbeatInterval is how often the client sends a heartbeat (default
	// 15 s; the server closes a connection silent for 45 s).
	HeartbeatInterval time.Duration
	// IdleTimeout is how long without any frame from the server before the
	// connection is taken for dead (default 45 s; the server sends a
	// heartbeat after 15 s of silence).
	IdleTimeout time.Duration
	// OnState is called on every state change. It must not block.
	OnState func(StateChange)
	// OnError is told of failures no call returns: a message dropped because
	// a subscriber's buffer was full, a subscription removed by the server,
	// a Nack without id. It must not block.
	OnError func(error)
	// Dialer dials the WebSocket (default: websocket.DefaultDialer's settings).
	Dialer *websocket.Dialer
}

// Client is one realtime connection and its channels. It is safe for
// concurrent use.
type Client struct {
	url  string
	opts Options

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns

	mu       sync.Mutex
	state    State
	changed  chan struct{} // closed and replaced on every state change
	reason   error         // the last failure (the reason of failed, suspended)
	cn       *conn         // the live connection, when connected
	connID   string
	ttl      time.Duration
	token    string
	tokenAt  time.Time // when AuthCallback returned token
	fresh    bool      // the last connect attempt used a token AuthCallback had just returned
	nextID   uint64
	pending  map[string]*pending
	channels map[string]*Channel
	later    []func() // callbacks queued under mu, run by the reader once it unlocks
}

// pending is a request waiting for its Ack or Nack.
type pending struct {
	cn   *conn
	done chan error  // buffered: a user call waits here
	fn   func(error) // an internal request: called under c.mu
}

// errConnGone tells a waiting request that its connection ended first.
var errConnGone = errors.New("realtime: connection ended")

// New returns a client of the server at rawURL (ws://host:port/) and starts
// connecting in the background.
func New(rawURL string, opts Options) (*Client, error) {
	if _, err := url.Parse(rawURL); err != nil {
		return nil, fmt.Errorf("realtime: bad url: %w", err)
	}
	if opts.Key == "" && opts.Token == "" && opts.AuthCallback == nil {
		return nil, errors.New("realtime: a Key, Token or AuthCallback is required")
	}
	defaults(&opts)
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{
		url: rawURL, opts: opts, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		state: Initialized, changed: make(chan struct{}), ttl: 120 * time.Second,
		token: opts.Token, pending: make(map[string]*pending), channels: make(map[string]*Channel),
	}
	if opts.ConnectionStateTTL > 0 {
		c.ttl = opts.ConnectionStateTTL
	}
	go c.run()
	return c, nil
}

// Dial is New followed by waiting for the first connection: it returns the
// connected client, or the reason it failed (a 401 is an *Error).
func Dial(ctx context.Context, rawURL string, opts Options) (*Client, error) {
	c, err := New(rawURL, opts)
	if err != nil {
		return nil, err
	}
	if err := c.WaitState(ctx, Connected); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func defaults(o *Options) {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&o.RenewBefore, 30*time.Second)
	set(&o.MinRetry, 250*time.Millisecond)
	set(&o.MaxRetry, 15*time.Second)
	set(&o.SuspendedRetry, 30*time.Second)
	set(&o.HeartbeatInterval, 15*time.Second)
	set(&o.IdleTimeout, 45*time.Second)
	if o.Dialer == nil {
		o.Dialer = &websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	}
}

// State returns the current connection state.
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// ConnectionID returns the id the server gave the connection ("" before the
// first Connected). It changes on every reconnect.
func (c *Client) ConnectionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connID
}

// Reason returns the last failure: why the client is failed, suspended or
// disconnected (nil before any).
func (c *Client) Reason() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reason
}

// WaitState waits until the state is one of want. It returns an error when
// ctx ends first, or when the client reaches failed or closed and neither is
// wanted (the error says why).
func (c *Client) WaitState(ctx context.Context, want ...State) error {
	for {
		c.mu.Lock()
		st, ch, reason := c.state, c.changed, c.reason
		c.mu.Unlock()
		for _, w := range want {
			if st == w {
				return nil
			}
		}
		switch st {
		case Failed:
			return reason
		case Closed:
			return ErrClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("realtime: waiting for %v (state %s): %w", want, st, ctx.Err())
		}
	}
}

// Close closes the connection, ends every subscription and waits for the
// client's goroutines to stop. Calls after it return ErrClosed.
func (c *Client) Close() error {
	c.cancel()
	c.mu.Lock()
	if cn := c.cn; cn != nil {
		cn.close()
	}
	c.mu.Unlock()
	<-c.done
	c.mu.Lock()
	prev := c.state
	c.setStateLocked(Closed, nil)
	for id, p := range c.pending {
		delete(c.pending, id)
		p.resolve(ErrClosed)
	}
	for _, ch := range c.channels {
		ch.endLocked(ErrClosed)
	}
	c.mu.Unlock()
	if prev != Closed && c.opts.OnState != nil {
		c.opts.OnState(StateChange{Previous: prev, Current: Closed})
	}
	return nil
}

// setStateLocked changes the state and wakes WaitState; c.mu is held. The
// caller calls OnState after unlocking.
func (c *Client) setStateLocked(st State, reason error) {
	c.state = st
	if reason != nil {
		c.reason = reason
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

// setState changes the state and tells OnState.
func (c *Client) setState(st State, reason error, retry time.Duration) {
	c.mu.Lock()
	prev := c.state
	if prev == Closed {
		c.mu.Unlock()
		return
	}
	c.setStateLocked(st, reason)
	c.mu.Unlock()
	if c.opts.OnState != nil && prev != st {
		c.opts.OnState(StateChange{Previous: prev, Current: st, Reason: reason, RetryIn: retry})
	}
}

// run keeps the client connected until Close or a terminal failure.
func (c *Client) run() {
	defer close(c.done)
	attempt := 0
	lostAt := time.Now() // since when the client has had no connection
	for {
		c.setState(Connecting, nil, 0)
		connected, err := c.connectOnce()
		if c.ctx.Err() != nil {
			return
		}
		if connected {
			attempt, lostAt = 0, time.Now()
		}
		var e *Error
		if errors.As(err, &e) && e.Terminal() {
			c.mu.Lock()
			if e.Code == 401 && c.opts.AuthCallback != nil && !c.fresh {
				// The token may simply have expired while away: one more
				// try with a fresh one.
				c.token = ""
				c.mu.Unlock()
				continue
			}
			c.failPendingLocked(err)
			c.mu.Unlock()
			c.setState(Failed, err, 0)
			return
		}
		attempt++
		c.mu.Lock()
		ttl := c.ttl
		c.mu.Unlock()
		st, wait := Disconnected, backoff(c.opts.MinRetry, c.opts.MaxRetry, attempt)
		if time.Since(lostAt) >= ttl {
			st, wait = Suspended, jitter(c.opts.SuspendedRetry)
			c.mu.Lock()
			c.failPendingLocked(fmt.Errorf("realtime: suspended: %w", err))
			c.mu.Unlock()
		}
		c.setState(st, err, wait)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return
		}
	}
}

// backoff is the wait before reconnect attempt n (1, 2, …): min doubled each
// time up to max, jittered.
func backoff(minD, maxD time.Duration, n int) time.Duration {
	d := minD
	for i := 1; i < n && d < maxD; i++ {
		d *= 2
	}
	return jitter(min(d, maxD))
}

// jitter shortens d by a random 0-30 %, so that clients dropped together do
// not come back together.
func jitter(d time.Duration) time.Duration {
	return d - time.Duration(rand.Float64()*0.3*float64(d))
}

// failPendingLocked rejects every waiting request with err.
func (c *Client) failPendingLocked(err error) {
	for id, p := range c.pending {
		delete(c.pending, id)
		p.resolve(err)
	}
	for _, ch := range c.channels {
		ch.failWaitersLocked(err)
	}
}

// credential returns the query parameter to connect with, calling
// AuthCallback when there is no token.
func (c *Client) credential() (url.Values, error) {
	q := url.Values{}
	if c.opts.NoEcho {
		q.Set("echo", "false")
	}
	if c.opts.Key != "" {
		q.Set("key", c.opts.Key)
		return q, nil
	}
	c.mu.Lock()
	tok := c.token
	c.fresh = false
	c.mu.Unlock()
	if exp := tokenExpiry(tok); tok == "" || (!exp.IsZero() && time.Until(exp) < time.Second && c.opts.AuthCallback != nil) {
		var err error
		if tok, err = c.fetchToken(); err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.fresh = true
		c.mu.Unlock()
	}
	q.Set("accessToken", tok)
	return q, nil
}

// fetchToken calls AuthCallback and keeps the token.
func (c *Client) fetchToken() (string, error) {
	if c.opts.AuthCallback == nil {
		return "", errors.New("realtime: no token and no AuthCallback")
	}
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	tok, err := c.opts.AuthCallback(ctx)
	if err != nil {
		return "", fmt.Errorf("realtime: AuthCallback: %w", err)
	}
	c.mu.Lock()
	c.token, c.tokenAt = tok, time.Now()
	c.mu.Unlock()
	return tok, nil
}

// connectOnce dials, waits for Connected and serves the connection until it
// ends. It reports whether Connected was reached and why it ended.
func (c *Client) connectOnce() (bool, error) {
	q, err := c.credential()
	if err != nil {
		return false, err
	}
	u, err := url.Parse(c.url)
	if err != nil {
		return false, err
	}
	u.RawQuery = q.Encode()
	dctx, cancel := context.WithTimeout(c.ctx, 15*time.Second)
	ws, hr, err := c.opts.Dialer.DialContext(dctx, u.String(), nil)
	cancel()
	if hr != nil && hr.Body != nil {
		hr.Body.Close()
	}
	if err != nil {
		return false, fmt.Errorf("realtime: dial: %w", err)
	}
	ws.SetReadLimit(16 << 20)
	_ = ws.SetReadDeadline(time.Now().Add(c.opts.IdleTimeout))
	stop := context.AfterFunc(c.ctx, func() { ws.Close() })
	var first frame
	err = readFrame(ws, &first)
	stop()
	if err != nil {
		ws.Close()
		return false, fmt.Errorf("realtime: waiting for Connected: %w", err)
	}
	switch first.Op {
	case wire.Connected:
	case wire.Nack:
		ws.Close()
		return false, &Error{Code: first.Code, Message: first.Message}
	default:
		ws.Close()
		return false, fmt.Errorf("realtime: first frame has op %d, want Connected", first.Op)
	}
	cn := newConn(ws, c.opts.HeartbeatInterval)
	c.mu.Lock()
	if c.ctx.Err() != nil {
		c.mu.Unlock()
		cn.close()
		cn.wait()
		return false, ErrClosed
	}
	c.cn, c.connID = cn, first.ConnectionID
	if first.ConnectionStateTTL > 0 && c.opts.ConnectionStateTTL <= 0 {
		c.ttl = time.Duration(first.ConnectionStateTTL) * time.Millisecond
	}
	for _, ch := range c.channels {
		ch.resumeLocked(cn)
	}
	c.mu.Unlock()
	c.setState(Connected, nil, 0)

	stopRenew := c.scheduleRenewal(cn)
	err = c.readLoop(cn)
	stopRenew()
	cn.close()
	cn.wait()
	c.mu.Lock()
	c.cn = nil
	for id, p := range c.pending {
		if p.cn == cn {
			delete(c.pending, id)
			p.resolve(errConnGone)
		}
	}
	for _, ch := range c.channels {
		ch.lostLocked(cn)
	}
	c.mu.Unlock()
	return true, err
}

// readFrame reads one text frame and decodes it.
func readFrame(ws *websocket.Conn, f *frame) error {
	_, b, err := ws.ReadMessage()
	if err != nil {
		return err
	}
	*f = frame{}
	if err := json.Unmarshal(b, f); err != nil {
		return fmt.Errorf("realtime: bad frame from the server: %w", err)
	}
	return nil
}

// readLoop handles frames until the connection ends and returns why.
func (c *Client) readLoop(cn *conn) error {
	for {
		_ = cn.ws.SetReadDeadline(time.Now().Add(c.opts.IdleTimeout))
		var f frame
		if err := readFrame(cn.ws, &f); err != nil {
			if c.ctx.Err() != nil {
				return ErrClosed
			}
			if cn.nack != nil {
				return cn.nack
			}
			return fmt.Errorf("realtime: connection lost: %w", err)
		}
		if err := c.handle(cn, &f); err != nil {
			return err
		}
	}
}

// handle dispatches one frame from the server. A non-nil error ends the
// connection.
func (c *Client) handle(cn *conn, f *frame) error {
	c.mu.Lock()
	defer c.runLater()
	switch f.Op {
	case wire.Ack, wire.Nack, wire.Heartbeat:
		var err error
		if f.Op == wire.Nack {
			err = &Error{Code: f.Code, Message: f.Message, Channel: f.Channel}
		}
		if p := c.pending[f.ID]; f.ID != "" && p != nil {
			delete(c.pending, f.ID)
			p.resolve(err)
			break
		}
		if f.Op != wire.Nack {
			break
		}
		e := err.(*Error)
		switch {
		case e.Code == 401 || e.Code == 4000:
			// The server closes the socket after these.
			cn.nack = e
			c.mu.Unlock()
			return e
		case e.Channel != "":
			if ch := c.channels[e.Channel]; ch != nil {
				ch.removedLocked(e)
			}
		}
		c.later = append(c.later, func() { c.report(e) })
	case wire.Connected:
		// After an Auth: the same connection, maybe new limits.
		if f.ConnectionID != "" {
			c.connID = f.ConnectionID
		}
		if f.ConnectionStateTTL > 0 && c.opts.ConnectionStateTTL <= 0 {
			c.ttl = time.Duration(f.ConnectionStateTTL) * time.Millisecond
		}
	case wire.Message:
		m := Message{Channel: f.Channel, Data: f.Data, ConnectionID: f.ConnectionID, Timestamp: time.UnixMilli(f.Timestamp)}
		if f.Name != nil {
			m.Name = *f.Name
		}
		for _, ch := range c.channels {
			if ch.matches(f.Channel) {
				ch.deliverLocked(m, f.Timestamp)
			}
		}
	case wire.Presence:
		if ch := c.channels[f.Channel]; ch != nil {
			ch.presence.applyLocked(f)
		}
	}
	c.mu.Unlock()
	return nil
}

// runLater runs the callbacks queued under the lock, after it was released.
func (c *Client) runLater() {
	c.mu.Lock()
	fns := c.later
	c.later = nil
	c.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// report hands an asynchronous failure to OnError.
func (c *Client) report(err error) {
	if c.opts.OnError != nil {
		c.opts.OnError(err)
	}
}

// sendLocked sends f on cn, registering fn for its Ack or Nack when fn is
// set (f then gets an id). c.mu is held.
func (c *Client) sendLocked(cn *conn, f frame, fn func(error)) {
	if fn != nil {
		c.nextID++
		f.ID = fmt.Sprintf("g%d", c.nextID)
		c.pending[f.ID] = &pending{cn: cn, fn: fn}
	}
	cn.send(f)
}

// call sends f when connected and waits for its Ack or Nack. before, when
// set, runs under the lock on the connection f will go on, just before f
// (the implicit attach). A request whose connection drops before the answer
// is sent again on the next connection when retry is set, else it fails
// with ErrConnectionLost.
func (c *Client) call(ctx context.Context, f frame, retry bool, before func(*conn)) error {
	for {
		c.mu.Lock()
		cn, err := c.connLocked()
		if cn == nil && err == nil {
			ch := c.changed
			c.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err != nil {
			c.mu.Unlock()
			return err
		}
		if before != nil {
			before(cn)
		}
		c.nextID++
		f.ID = fmt.Sprintf("u%d", c.nextID)
		p := &pending{cn: cn, done: make(chan error, 1)}
		c.pending[f.ID] = p
		cn.send(f)
		c.mu.Unlock()
		select {
		case err := <-p.done:
			if errors.Is(err, errConnGone) {
				if retry {
					continue
				}
				return ErrConnectionLost
			}
			return err
		case <-ctx.Done():
			c.mu.Lock()
			delete(c.pending, f.ID)
			c.mu.Unlock()
			return ctx.Err()
		}
	}
}

// connLocked returns the live connection, or nil and nil while one is being
// made (the caller waits), or an error in suspended, failed and closed.
func (c *Client) connLocked() (*conn, error) {
	switch c.state {
	case Connected:
		if c.cn != nil {
			return c.cn, nil
		}
	case Suspended:
		return nil, fmt.Errorf("realtime: suspended: %w", c.reason)
	case Failed:
		return nil, c.reason
	case Closed:
		return nil, ErrClosed
	}
	if c.ctx.Err() != nil {
		return nil, ErrClosed
	}
	return nil, nil
}

func (p *pending) resolve(err error) {
	if p.fn != nil {
		p.fn(err)
		return
	}
	p.done <- err
}

// Authorize fetches a new token from AuthCallback now and swaps it in with
// Auth, as renewal before expiry does.
func (c *Client) Authorize(ctx context.Context) error {
	tok, err := c.fetchToken()
	if err != nil {
		return err
	}
	return c.call(ctx, frame{Op: wire.Auth, AccessToken: tok}, true, nil)
}

// scheduleRenewal renews the connection's token RenewBefore its expiry, as
// long as cn lives; the returned func stops it.
func (c *Client) scheduleRenewal(cn *conn) func() {
	if c.opts.AuthCallback == nil || c.opts.Key != "" {
		return func() {}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c.mu.Lock()
			tok, at := c.token, c.tokenAt
			c.mu.Unlock()
			exp := tokenExpiry(tok)
			if exp.IsZero() {
				return
			}
			lead := c.opts.RenewBefore
			if at.IsZero() {
				at = time.Now()
			}
			if life := exp.Sub(at); lead > life/2 {
				lead = life / 2
			}
			t := time.NewTimer(time.Until(exp.Add(-lead)))
			select {
			case <-t.C:
			case <-stop:
				t.Stop()
				return
			case <-cn.done:
				t.Stop()
				return
			}
			ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
			err := c.Authorize(ctx)
			cancel()
			if err != nil {
				c.report(fmt.Errorf("realtime: token renewal: %w", err))
				if c.ctx.Err() != nil {
					return
				}
				// Try again shortly; the server closes the socket with 401
				// at expiry, and the reconnect fetches a fresh token.
				select {
				case <-time.After(time.Second):
				case <-stop:
					return
				case <-cn.done:
					return
				}
			}
		}
	}()
	return func() {
		close(stop)
		<-done
	}
}
