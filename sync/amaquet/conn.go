// Package amaquet is a Go client of the Amaquet binary protocol (seed 000,
// SPEC section 10): many concurrent requests on one TCP connection,
// answered out of order and correlated by request ID, cancellation through
// context.Context (a cancelled call sends CANCEL), a server identity
// proved by an Ed25519 signature of a fresh nonce, API-key AUTH,
// best-effort pub/sub on bounded channels, and reconnection.
//
// A Conn is safe for concurrent use. PROTOCOL-AMAQUET.md in this directory
// describes the wire for clients in other languages.
package amaquet

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// HelloContext is the prefix of the bytes the server signs: the signature
// in HELLO covers HelloContext followed by the client's decoded nonce.
const HelloContext = "AMQT-HELLO\x00"

// Options configure a Conn. The zero value is not usable: set PublicKey,
// or TrustOnFirstUse.
type Options struct {
	// PublicKey is the server's pinned Ed25519 identity key (printed by
	// `recached amaquet-identity --dir D`). HELLO must present it and sign
	// the client's nonce with it, on every (re)connection.
	PublicKey ed25519.PublicKey
	// TrustOnFirstUse, when PublicKey is nil, accepts the key of the first
	// HELLO (its signature still checked) and pins it for the life of the
	// Conn, so a reconnection to another identity fails. Off by default:
	// it proves nothing about the first server reached.
	TrustOnFirstUse bool
	// APIKey, "<secret>.<keyId>", is sent in AUTH after HELLO on every
	// (re)connection. Empty: no AUTH (see Conn.Auth).
	APIKey string
	// DialTimeout bounds a connection attempt: TCP connect, HELLO, AUTH
	// and re-subscription. Default 10 s.
	DialTimeout time.Duration
	// WaitForSlot makes a command wait (as long as its context allows)
	// while the connection has max_inflight commands active, instead of
	// sending it to be refused with OVERLOADED. A request whose caller
	// gave up holds its slot until the server answers it.
	WaitForSlot bool
	// MinBackoff and MaxBackoff bound the delay between the background
	// redials that restore subscriptions after a lost connection.
	// Defaults 50 ms and 2 s.
	MinBackoff, MaxBackoff time.Duration
}

// Hello is the server's HELLO result.
type Hello struct {
	Server       string `json:"server"`
	Version      string `json:"-"`
	Protocol     int    `json:"protocol"`
	MaxPayload   int    `json:"max_payload"`
	MaxInflight  int    `json:"max_inflight"`
	AuthRequired bool   `json:"auth_required"`
	// PublicKey and Signature are decoded from base64.
	PublicKey ed25519.PublicKey `json:"public_key"`
	Signature []byte            `json:"signature"`
}

// Conn is a client connection to one server address. It dials again when
// the connection is lost: calls in flight then fail with a *ConnError, the
// next call reconnects, and a background redial with backoff restores the
// subscriptions.
type Conn struct {
	addr   string
	opts   Options
	nextID atomic.Uint64
	ctx    context.Context // cancelled by Close
	stop   context.CancelFunc
	wg     sync.WaitGroup // every goroutine the Conn started

	// frames recycles request frames (*[]byte): a caller fills one, the
	// link's writer returns it once written. calls recycles the *Call of
	// Do, whose payload buffer it keeps. Together they make Do allocate
	// only its decoded result.
	frames sync.Pool
	calls  sync.Pool

	// subMu serialises subscribe and unsubscribe round trips with the
	// re-subscription of a new link, so no subscription is lost between.
	subMu sync.Mutex

	// live is link, for the calls' lock-free look-up.
	live atomic.Pointer[link]

	mu        sync.Mutex
	link      *link
	dialing   chan struct{} // closed when the dial in progress ends
	dialErr   error         // the outcome of the last dial
	closed    bool
	pinned    ed25519.PublicKey
	hello     Hello
	apiKey    string
	subs      map[subKey]*Subscription
	redialing bool
}

type subKey struct{ key, channel string }

// Dial connects to addr (host:port), checks the server's identity with
// HELLO and authenticates when opts.APIKey is set.
func Dial(ctx context.Context, addr string, opts Options) (*Conn, error) {
	if opts.PublicKey == nil && !opts.TrustOnFirstUse {
		return nil, fmt.Errorf("amaquet: dial %s: set Options.PublicKey (recached amaquet-identity prints it) or Options.TrustOnFirstUse", addr)
	}
	if opts.PublicKey != nil && len(opts.PublicKey) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("amaquet: dial %s: public key of %d bytes, want %d", addr, len(opts.PublicKey), ed25519.PublicKeySize)
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 10 * time.Second
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 50 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(2*time.Second, opts.MinBackoff)
	}
	c := &Conn{addr: addr, opts: opts, pinned: opts.PublicKey, apiKey: opts.APIKey, subs: map[subKey]*Subscription{}}
	c.ctx, c.stop = context.WithCancel(context.Background())
	if _, err := c.getLink(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Hello returns the HELLO result of the current (or last) connection.
func (c *Conn) Hello() Hello {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hello
}

// Close ends the connection and every goroutine of the Conn: calls in
// flight fail with an error matching ErrClosed and subscription channels
// are closed. It waits for the goroutines to exit.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	l := c.link
	c.link = nil
	c.live.Store(nil)
	subs := c.subs
	c.subs = nil
	c.mu.Unlock()
	c.stop()
	if l != nil {
		l.kill(ErrClosed)
	}
	for _, s := range subs {
		s.close(ErrClosed)
	}
	c.wg.Wait()
	return nil
}

// getLink returns the live link, dialing one when there is none (or
// waiting for the dial already under way).
func (c *Conn) getLink(ctx context.Context) (*link, error) {
	if l := c.live.Load(); l != nil && !l.dead() {
		return l, nil
	}
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		if l := c.link; l != nil && !l.dead() {
			c.mu.Unlock()
			return l, nil
		}
		if ch := c.dialing; ch != nil {
			c.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			c.mu.Lock()
			l, err := c.link, c.dialErr
			c.mu.Unlock()
			if l != nil && !l.dead() {
				return l, nil
			}
			if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				return nil, err
			}
			continue // that dial was abandoned by its caller: try our own
		}
		ch := make(chan struct{})
		c.dialing = ch
		c.mu.Unlock()
		l, err := c.dial(ctx)
		c.mu.Lock()
		c.dialing, c.dialErr = nil, err
		if err == nil && c.closed {
			err = ErrClosed
		}
		if err == nil {
			c.link = l
			c.live.Store(l)
			c.wg.Add(2)
			go l.readLoop(&c.wg)
			go l.writeLoop(&c.wg)
		}
		c.mu.Unlock()
		close(ch)
		if err != nil {
			if l != nil {
				l.nc.Close()
			}
			return nil, err
		}
		return l, nil
	}
}

// dial connects, runs HELLO and AUTH and re-subscribes, synchronously on
// the new socket, before the link's goroutines start.
func (c *Conn) dial(ctx context.Context) (*link, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.DialTimeout)
	defer cancel()
	stopOnClose := context.AfterFunc(c.ctx, cancel)
	defer stopOnClose()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, &ConnError{Err: err}
	}
	dl, _ := ctx.Deadline()
	_ = nc.SetDeadline(dl)
	unblock := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	l := &link{
		nc:    nc,
		r:     bufio.NewReaderSize(nc, 64<<10),
		out:   make(chan *[]byte, 256),
		ready: make(chan struct{}, 1),
		done:  make(chan struct{}),
		calls: map[uint64]*Call{},
		subs:  map[uint64]*Subscription{},
		down:  c.linkDown,
		pool:  &c.frames,
	}
	err = c.handshake(ctx, l)
	if !unblock() || ctx.Err() != nil {
		err = errors.Join(err, ctx.Err())
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	_ = nc.SetDeadline(time.Time{})
	return l, nil
}

// handshake runs HELLO, AUTH and the re-subscriptions on a new link.
func (c *Conn) handshake(ctx context.Context, l *link) error {
	nonce := make([]byte, 32)
	if _, err := rand.Read(nonce); err != nil {
		return fmt.Errorf("amaquet: nonce: %w", err)
	}
	payload := append(append([]byte(`{"nonce":"`), base64.StdEncoding.EncodeToString(nonce)...), `"}`...)
	res, err := l.syncCall(c.nextID.Add(1), OpHello, payload)
	if err != nil {
		return fmt.Errorf("amaquet: HELLO to %s: %w", c.addr, err)
	}
	h, err := parseHello(res)
	if err != nil {
		return fmt.Errorf("amaquet: HELLO from %s: %w", c.addr, err)
	}
	c.mu.Lock()
	pinned, apiKey := c.pinned, c.apiKey
	c.mu.Unlock()
	if err := verifyHello(h, pinned, nonce); err != nil {
		return fmt.Errorf("amaquet: HELLO from %s: %w", c.addr, err)
	}
	l.maxPayload = h.MaxPayload
	if c.opts.WaitForSlot && h.MaxInflight > 0 {
		l.slots = make(chan struct{}, h.MaxInflight)
	}
	if l.maxPayload <= 0 || l.maxPayload > HardMaxPayload {
		l.maxPayload = HardMaxPayload
	}
	c.mu.Lock()
	if c.pinned == nil {
		c.pinned = h.PublicKey
	}
	c.hello = h
	c.mu.Unlock()
	if apiKey != "" {
		if _, err := l.syncCall(c.nextID.Add(1), OpAuth, authPayload(apiKey)); err != nil {
			return fmt.Errorf("amaquet: AUTH to %s: %w", c.addr, err)
		}
	}
	return c.resubscribe(l)
}

func parseHello(res []byte) (Hello, error) {
	var h Hello
	if err := json.Unmarshal(res, &h); err != nil {
		return h, fmt.Errorf("%w: %v", ErrBadFrame, err)
	}
	var v struct {
		Version json.RawMessage `json:"version"`
	}
	_ = json.Unmarshal(res, &v)
	if s, err := strconv.Unquote(string(v.Version)); err == nil {
		h.Version = s
	} else {
		h.Version = string(v.Version)
	}
	return h, nil
}

// verifyHello checks the protocol, the key against pinned (any key when
// pinned is nil: trust on first use) and the signature of the nonce.
func verifyHello(h Hello, pinned ed25519.PublicKey, nonce []byte) error {
	if h.Protocol != Version {
		return fmt.Errorf("%w: protocol %d, this client speaks %d", ErrIdentity, h.Protocol, Version)
	}
	if len(h.PublicKey) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: public key of %d bytes", ErrIdentity, len(h.PublicKey))
	}
	if pinned != nil && !bytes.Equal(pinned, h.PublicKey) {
		return fmt.Errorf("%w: server key %s, pinned %s", ErrIdentity, hex.EncodeToString(h.PublicKey), hex.EncodeToString(pinned))
	}
	msg := append([]byte(HelloContext), nonce...)
	if !ed25519.Verify(h.PublicKey, msg, h.Signature) {
		return fmt.Errorf("%w: signature of the nonce does not verify", ErrIdentity)
	}
	return nil
}

func authPayload(apiKey string) []byte {
	return append(appendString([]byte(`{"api_key":`), apiKey), '}')
}

// Auth authenticates the connection with an API key ("<secret>.<keyId>")
// and returns the key's id. The key is kept and sent again on every
// reconnection.
func (c *Conn) Auth(ctx context.Context, apiKey string) (string, error) {
	res, err := c.roundTrip(ctx, OpAuth, authPayload(apiKey), "AUTH")
	if err != nil {
		return "", err
	}
	var v struct {
		Authenticated bool   `json:"authenticated"`
		KeyID         string `json:"key_id"`
	}
	if err := json.Unmarshal(res, &v); err != nil || !v.Authenticated {
		return "", fmt.Errorf("amaquet: AUTH: unexpected result %.200s", res)
	}
	c.mu.Lock()
	c.apiKey = apiKey
	c.mu.Unlock()
	return v.KeyID, nil
}

// Do runs one command on database 0 and returns its decoded result (see
// DecodeResult). Arguments are strings, []byte, int, int64, uint64 or
// float64. An error reply is an *Error; a lost connection a *ConnError.
// Cancelling ctx sends CANCEL for the request and returns ctx's error.
func (c *Conn) Do(ctx context.Context, cmd string, args ...any) (any, error) {
	return c.DB(0).Do(ctx, cmd, args...)
}

// Transaction runs commands atomically (as MULTI/EXEC) on database 0 and
// returns their results. Each command is its name followed by its
// arguments, e.g. []any{"SET", "a", "1"}.
func (c *Conn) Transaction(ctx context.Context, cmds ...[]any) ([]any, error) {
	return c.DB(0).Transaction(ctx, cmds...)
}

// Start sends a command on database 0 without waiting for its result.
func (c *Conn) Start(ctx context.Context, cmd string, args ...any) *Call {
	return c.DB(0).Start(ctx, cmd, args...)
}

// DB is a handle on one database of a Conn: its calls carry {"db":N}.
type DB struct {
	c *Conn
	n int
}

// DB returns a handle whose requests run on database n.
func (c *Conn) DB(n int) DB { return DB{c: c, n: n} }

// Do runs one command on the handle's database (see Conn.Do).
func (d DB) Do(ctx context.Context, cmd string, args ...any) (any, error) {
	c := d.c
	f := c.frame()
	b, err := d.appendPayload(*f, cmd, args)
	if err != nil {
		c.frames.Put(f)
		return nil, err
	}
	*f = b
	l, err := c.getLink(ctx)
	if err != nil {
		c.frames.Put(f)
		return nil, fmt.Errorf("amaquet: %s: %w", cmd, err)
	}
	call, err := c.send(ctx, l, 0, OpCommand, f, cmd, false, c.pooledCall())
	if err != nil {
		return nil, err
	}
	if err := c.wait(ctx, l, call, OpCommand); err != nil {
		call.woke()
		return nil, err
	}
	res, err := parseEnvelope(call.payload)
	var v any
	if err != nil {
		err = opError(cmd, call.ID, err)
	} else {
		v, err = DecodeResult(res)
	}
	// Counted as woken until here, where the caller is about to make its
	// next request, if any.
	call.woke()
	c.recycle(call)
	return v, err
}

// frame returns an empty frame buffer with room for the header, to be
// filled by appending the payload.
func (c *Conn) frame() *[]byte {
	f, _ := c.frames.Get().(*[]byte)
	if f == nil {
		f = new([]byte)
	}
	*f = append((*f)[:0], make([]byte, HeaderSize)...)
	return f
}

// pooledCall returns a Call for Do, completed by a send on its buffered
// done channel rather than a close, so that it can be used again.
func (c *Conn) pooledCall() *Call {
	if call, _ := c.calls.Get().(*Call); call != nil {
		return call
	}
	return &Call{pooled: true, done: make(chan struct{}, 1)}
}

// recycle returns a pooled call that got its response. A call abandoned by
// its caller or ended by the link's death is left to the garbage
// collector: something else may still hold it.
func (c *Conn) recycle(call *Call) {
	if cap(call.payload) > 64<<10 {
		call.payload = nil // keep no large buffer alive
	}
	call.ID, call.name, call.l, call.err, call.payload = 0, "", nil, nil, call.payload[:0]
	call.state.Store(callWaiting)
	c.calls.Put(call)
}

// Start sends one command on the handle's database and returns at once;
// the Call completes with the server's answer. Cancelling ctx sends CANCEL
// for it: the Call then completes with the server's answer, CANCELLED for
// a command still running.
func (d DB) Start(ctx context.Context, cmd string, args ...any) *Call {
	p, err := d.appendPayload(nil, cmd, args)
	if err != nil {
		return doneCall(cmd, err)
	}
	call, err := d.c.start(ctx, OpCommand, p, cmd, true)
	if err != nil {
		return doneCall(cmd, err)
	}
	return call
}

// Transaction runs commands atomically on the handle's database (see
// Conn.Transaction).
func (d DB) Transaction(ctx context.Context, cmds ...[]any) ([]any, error) {
	b := []byte(`{"transaction":[`)
	for i, cmd := range cmds {
		if len(cmd) == 0 {
			return nil, fmt.Errorf("amaquet: transaction: command %d is empty", i)
		}
		name, ok := cmd[0].(string)
		if !ok {
			return nil, fmt.Errorf("amaquet: transaction: command %d: name of type %T", i, cmd[0])
		}
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendCommand(b, name, cmd[1:]); err != nil {
			return nil, fmt.Errorf("amaquet: transaction: command %d: %w", i, err)
		}
	}
	b = append(b, ']')
	b = d.appendDB(b)
	res, err := d.c.roundTrip(ctx, OpCommand, append(b, '}'), "transaction")
	if err != nil {
		return nil, err
	}
	v, err := DecodeResult(res)
	if err != nil {
		return nil, err
	}
	a, ok := v.([]any)
	if !ok && v != nil {
		return nil, fmt.Errorf("amaquet: transaction: result of type %T, want an array", v)
	}
	return a, nil
}

// appendPayload appends the COMMAND payload {"command":…,"args":[…]} to b.
func (d DB) appendPayload(b []byte, cmd string, args []any) ([]byte, error) {
	b = appendString(append(b, `{"command":`...), cmd)
	b = append(b, `,"args":[`...)
	for i, a := range args {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendArg(b, a); err != nil {
			return b, fmt.Errorf("amaquet: %s argument %d: %w", cmd, i+1, err)
		}
	}
	b = append(b, ']')
	return append(d.appendDB(b), '}'), nil
}

func (d DB) appendDB(b []byte) []byte {
	if d.n == 0 {
		return b
	}
	return strconv.AppendInt(append(b, `,"db":`...), int64(d.n), 10)
}

// Cancel asks the server to cancel the request id (see Call.ID) and
// reports whether it was still active.
func (c *Conn) Cancel(ctx context.Context, id uint64) (bool, error) {
	res, err := c.roundTrip(ctx, OpCancel, cancelPayload(id), "CANCEL")
	if err != nil {
		return false, err
	}
	var v struct {
		RequestID uint64 `json:"request_id"`
		Found     bool   `json:"found"`
	}
	if err := json.Unmarshal(res, &v); err != nil || v.RequestID != id {
		return false, fmt.Errorf("amaquet: CANCEL %d: unexpected result %.200s", id, res)
	}
	return v.Found, nil
}

func cancelPayload(id uint64) []byte {
	return append(strconv.AppendUint([]byte(`{"request_id":`), id, 10), '}')
}

// roundTrip sends one request on the live link (dialing one if needed)
// and waits for its response's result.
func (c *Conn) roundTrip(ctx context.Context, op Opcode, payload []byte, name string) ([]byte, error) {
	l, err := c.getLink(ctx)
	if err != nil {
		return nil, fmt.Errorf("amaquet: %s: %w", name, err)
	}
	return c.roundTripOn(ctx, l, 0, op, payload, name)
}

// roundTripOn sends one request on l with request ID id (0: the next one)
// and waits for its response's result. Cancelling ctx sends CANCEL for a
// COMMAND and returns at once.
func (c *Conn) roundTripOn(ctx context.Context, l *link, id uint64, op Opcode, payload []byte, name string) ([]byte, error) {
	call, err := c.startOn(ctx, l, id, op, payload, name, false)
	if err != nil {
		return nil, err
	}
	if err := c.wait(ctx, l, call, op); err != nil {
		return nil, err
	}
	res, err := parseEnvelope(call.payload)
	if err != nil {
		return nil, opError(name, call.ID, err)
	}
	return res, nil
}

// wait waits for call's response, or for ctx: cancelling a COMMAND sends
// CANCEL and returns at once.
func (c *Conn) wait(ctx context.Context, l *link, call *Call, op Opcode) error {
	select {
	case <-call.done:
	case <-ctx.Done():
		if call.pooled && !call.state.CompareAndSwap(callWaiting, callAbandoned) {
			<-call.done // answered meanwhile (and signalled): keep the answer
			break
		}
		select {
		case <-call.done: // answered meanwhile: keep the answer
		default:
			// The call stays registered until the server answers it
			// (it always does), so that its slot is freed then.
			if op == OpCommand {
				l.sendCancel(c.nextID.Add(1), call.ID)
			}
			return opError(call.name, call.ID, ctx.Err())
		}
	}
	if call.err != nil {
		return opError(call.name, call.ID, call.err)
	}
	return nil
}

// start sends one request on the live link (dialing one if needed).
func (c *Conn) start(ctx context.Context, op Opcode, payload []byte, name string, watch bool) (*Call, error) {
	l, err := c.getLink(ctx)
	if err != nil {
		return nil, fmt.Errorf("amaquet: %s: %w", name, err)
	}
	return c.startOn(ctx, l, 0, op, payload, name, watch)
}

// startOn registers and sends one request on l with request ID id (0: the
// next one). With watch, cancelling ctx sends CANCEL for it (Start's
// calls, which outlive the function that made them).
func (c *Conn) startOn(ctx context.Context, l *link, id uint64, op Opcode, payload []byte, name string, watch bool) (*Call, error) {
	f := c.frame()
	*f = append(*f, payload...)
	return c.send(ctx, l, id, op, f, name, watch, &Call{done: make(chan struct{})})
}

// send registers call and queues frame f (its header still to be written,
// then its payload) on l with request ID id (0: the next one). With watch,
// cancelling ctx sends CANCEL for it. f belongs to the link from then on.
func (c *Conn) send(ctx context.Context, l *link, id uint64, op Opcode, f *[]byte, name string, watch bool, call *Call) (*Call, error) {
	if err := ctx.Err(); err != nil {
		c.frames.Put(f)
		return nil, fmt.Errorf("amaquet: %s: %w", name, err)
	}
	if n := len(*f) - HeaderSize; n > l.maxPayload {
		c.frames.Put(f)
		return nil, fmt.Errorf("amaquet: %s: %w", name, &Error{Code: CodePayloadTooLarge,
			Message: fmt.Sprintf("payload of %d bytes over the server's max_payload of %d", n, l.maxPayload)})
	}
	if id == 0 {
		id = c.nextID.Add(1)
	}
	putHeader(*f, KindRequest, op, id)
	call.ID, call.name, call.l = id, name, l
	if op == OpCommand && l.slots != nil {
		select {
		case l.slots <- struct{}{}:
			call.slot = true
		case <-l.done:
			return nil, opError(name, call.ID, &ConnError{Err: l.cause()})
		case <-ctx.Done():
			return nil, opError(name, call.ID, ctx.Err())
		}
	}
	if watch && op == OpCommand {
		call.stopWatch = context.AfterFunc(ctx, func() { l.sendCancel(c.nextID.Add(1), call.ID) })
	}
	if !l.register(call) {
		call.unwatch()
		l.release(call)
		return nil, opError(name, call.ID, &ConnError{Err: l.cause()})
	}
	select {
	case l.out <- f:
	case <-l.done:
		// the link's death completes the call with its cause
	case <-ctx.Done():
		l.forget(call.ID)
		call.unwatch()
		l.release(call)
		return nil, opError(name, call.ID, ctx.Err())
	}
	return call, nil
}

// Call is a request sent by Start.
type Call struct {
	// ID is the request ID, for Conn.Cancel.
	ID   uint64
	name string
	l    *link
	// done is closed when the call completes, or, for a pooled call
	// (Do's), receives one value: it is used again.
	done      chan struct{}
	pooled    bool
	state     atomic.Int32 // a pooled call: callWaiting, callAbandoned or callAnswered
	payload   []byte       // the response's payload
	err       error
	stopWatch func() bool
	slot      bool // holds one of the link's slots (WaitForSlot)
	once      sync.Once
	result    any
	rerr      error
}

func doneCall(name string, err error) *Call {
	c := &Call{name: name, done: make(chan struct{}), err: err}
	close(c.done)
	return c
}

// The states of a pooled call: its waiter gives up (callAbandoned) or the
// reader answers it (callAnswered), whichever comes first.
const (
	callWaiting int32 = iota
	callAbandoned
	callAnswered
)

// finish signals the call's completion to its waiter. A pooled call's
// waiter still waiting is counted in its link's woken until it runs.
func (c *Call) finish() {
	if !c.pooled {
		close(c.done)
		return
	}
	if c.state.CompareAndSwap(callWaiting, callAnswered) {
		c.l.woken.Add(1)
	}
	c.done <- struct{}{}
}

// woke tells the link that the waiter of a finished call runs again (a
// no-op for a call its waiter abandoned).
func (c *Call) woke() {
	if c.pooled && c.state.Load() == callAnswered && c.l.woken.Add(-1) == 0 {
		select {
		case c.l.ready <- struct{}{}:
		default:
		}
	}
}

func (c *Call) unwatch() {
	if c.stopWatch != nil {
		c.stopWatch()
	}
}

// Done is closed when the call has its answer.
func (c *Call) Done() <-chan struct{} { return c.done }

// Result waits for the call's answer and returns it decoded.
func (c *Call) Result() (any, error) {
	<-c.done
	c.once.Do(func() {
		switch {
		case c.err != nil && c.l == nil:
			c.rerr = c.err
		case c.err != nil:
			c.rerr = opError(c.name, c.ID, c.err)
		default:
			res, err := parseEnvelope(c.payload)
			if err != nil {
				c.rerr = opError(c.name, c.ID, err)
				return
			}
			c.result, c.rerr = DecodeResult(res)
		}
	})
	return c.result, c.rerr
}

// linkDown is called once when a link dies: the Conn forgets it and, when
// subscriptions are to be restored, starts the background redial.
func (c *Conn) linkDown(l *link) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.link == l {
		c.link = nil
		c.live.Store(nil)
	}
	if c.closed || len(c.subs) == 0 || c.redialing {
		return
	}
	c.redialing = true
	c.wg.Add(1)
	go c.redial()
}

// redial reconnects with exponential backoff until the Conn has a live
// link again or is closed.
func (c *Conn) redial() {
	defer c.wg.Done()
	backoff := c.opts.MinBackoff
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			c.mu.Lock()
			c.redialing = false
			c.mu.Unlock()
			return
		case <-t.C:
		}
		_, _ = c.getLink(c.ctx)
		c.mu.Lock()
		if c.closed || (c.link != nil && !c.link.dead()) {
			c.redialing = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		t.Reset(backoff)
		backoff = min(2*backoff, c.opts.MaxBackoff)
	}
}
