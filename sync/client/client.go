// Package client is the reference sync client of recached: the
// platform-neutral implementation of the wire protocol (the seed's "Wire
// Protocol" page, SPEC sections 3 to 5 and 8, sync/CLIENTS.md) that other
// clients are measured against.
//
// A Client keeps one connection to the server, over WebSocket
// ("ws://host:port/") or TCP ("tcp://host:port", RESP3), and re-establishes
// it with exponential backoff and full jitter whenever it drops. On every
// connection it establishes the session in the seed's order: AUTH, SYNC
// TOKEN or SYNC patterns, one QSUB per live query (then KWATCH and the
// pub/sub subscriptions), and once every one of those has been answered,
// the replay of the outbox, oldest first.
//
// Writes go through the outbox: each is wrapped as
// DEDUP <client-id> <wire-id> <command> <args…>, where the wire id is
// (session epoch << 32) | write counter, and stays in the outbox until the
// server's reply retires it. The reply is the wrapped command's own, or
// +DUP when the server had already executed that wire id (an earlier
// connection sent it and lost the reply): the write is then acknowledged as
// a success. Replayed writes therefore apply exactly once.
//
// With replication (a primary, its replicas, maybe Redis Sentinel) the
// client is given every address (Options.URLs) or the Sentinels, asks ROLE
// on every connection and follows the primary: a write answered -READONLY
// stays in the outbox and is replayed to the new primary with its wire id
// (failover.go, sync/CLIENTS.md section 8). With Options.WaitReplicas a
// write is resolved only once WAIT confirms it, so a failover loses none.
//
// Every frame the server sends is classified by the seed's taxonomy
// (Classify): replies retire the oldest command sent, mutation pushes and
// keychange frames update the local Store, qstate replies hydrate it, and
// pub/sub deliveries reach the subscriptions' callbacks.
package client

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	crand "crypto/rand"

	"github.com/recached/recached/resp"
	recsync "github.com/recached/recached/sync"
)

// MaxOutbox is the seed's client outbox limit: at most this many writes
// wait for their acknowledgment; a new write beyond it drops the oldest.
const MaxOutbox = 10000

// Defaults of the Options fields left zero.
const (
	DefaultMinBackoff         = 100 * time.Millisecond
	DefaultMaxBackoff         = 10 * time.Second
	DefaultDialTimeout        = 5 * time.Second
	DefaultWriteTimeout       = 30 * time.Second
	DefaultReadTimeout        = 60 * time.Second
	DefaultOutboxSaveInterval = time.Second
	DefaultWaitTimeout        = time.Second
)

// Errors a write or a call can end with.
var (
	// ErrClosed: the client was closed first. An unacknowledged write
	// stays in the outbox saved to Storage and is replayed by the next
	// client using it.
	ErrClosed = errors.New("client: closed")
	// ErrDropped: the write was the oldest in a full outbox and was dropped
	// unacknowledged; it may or may not have been applied.
	ErrDropped = errors.New("client: write dropped from a full outbox")
	// ErrConnectionLost: the connection dropped after a plain command was
	// sent and before its reply; it may or may not have run. Plain commands
	// are not replayed: only writes are exactly-once.
	ErrConnectionLost = errors.New("client: connection lost before the reply")
)

// Options configure a Client.
type Options struct {
	// URL is the server: "ws://host:port/" (or wss://) for the WebSocket
	// bridge, "tcp://host:port" for the RESP port.
	URL string
	// URLs are more addresses of the same deployment, in URL's scheme:
	// the primary and its replicas. With more than one address, the
	// client asks ROLE on every connection and establishes its session
	// only on the primary (unless ReplicaOK); it moves to the next
	// address in turn when the server is a replica, when a write is
	// answered -READONLY, or when the connection fails, and replays its
	// outbox there with the same wire ids (CLIENTS.md section 8).
	URLs []string
	// Sentinels are Redis Sentinel addresses (host:port) monitoring the
	// deployment under MasterName: before each connection the client asks
	// them for the primary's address and dials it. Only for the tcp
	// scheme, since Sentinel names RESP addresses; a WebSocket client
	// lists the bridges in URLs instead.
	Sentinels        []string
	MasterName       string
	SentinelPassword string
	// ReplicaOK lets a session with several addresses stay on a replica
	// (it serves SYNC, QSUB, KWATCH and the pushes of the replicated
	// stream) until a write is answered -READONLY; from then on the
	// client looks for the primary. For clients that mostly read.
	ReplicaOK bool
	// WaitReplicas, when positive, makes each write durable on that many
	// replicas before it is resolved: after the writes it sends, the
	// client sends WAIT <WaitReplicas> <WaitTimeout>, and keeps the writes
	// in its outbox until a WAIT answers at least WaitReplicas. A write
	// whose primary died before the WAIT is replayed to the new primary:
	// +DUP if it had been replicated, run otherwise. With it, exactly-once
	// holds across a failover with no acknowledged write lost.
	WaitReplicas int
	// WaitTimeout is the WAIT timeout (0: DefaultWaitTimeout).
	WaitTimeout time.Duration
	// Username and Password are sent with AUTH first on every connection
	// when Password is set.
	Username string
	Password string
	// Token is sent as SYNC TOKEN <token> (strict scoping); otherwise
	// Patterns, when set, as SYNC <pattern…> (open mode).
	Token    string
	Patterns []string
	// Storage keeps the client id, the session epoch and the outbox across
	// process starts (nil: a new MemoryStorage, so no continuity).
	Storage Storage
	// OutboxLimit is the most unacknowledged writes kept (0: MaxOutbox; at
	// most MaxOutbox).
	OutboxLimit int
	// OutboxSaveInterval is how often the outbox is saved to Storage when
	// it changed (0: DefaultOutboxSaveInterval; negative: only on Close
	// and SaveOutbox).
	OutboxSaveInterval time.Duration
	// MinBackoff and MaxBackoff bound the reconnection delay: attempt n
	// waits a uniformly random time in [0, min(MaxBackoff, MinBackoff<<n)].
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// DialTimeout bounds a connection attempt, handshake included.
	DialTimeout time.Duration
	// WriteTimeout bounds one socket write.
	WriteTimeout time.Duration
	// ReadTimeout is how long a WebSocket may stay silent (the server pings
	// every 20 s) before it is presumed dead. TCP relies on keepalives.
	ReadTimeout time.Duration
	// NetDial opens the network connection (nil: a net.Dialer). Tests use
	// it to reach the connection and break it.
	NetDial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Now is the clock for the local store's expiry (nil: time.Now).
	Now func() time.Time

	// OnState hears every connection state change, in order, from the
	// client's connection goroutine.
	OnState func(Event)
	// OnDrop hears of each write dropped from a full outbox.
	OnDrop func(w *Write)
	// OnError hears of asynchronous failures that do not close the
	// connection: a refused QSUB, KWATCH or SUBSCRIBE, an outbox save that
	// failed.
	OnError func(error)
}

// State is the client's connection state.
type State uint8

// The connection states.
const (
	// StateConnecting: dialing and establishing the session.
	StateConnecting State = iota + 1
	// StateOpen: the session is established; writes flow.
	StateOpen
	// StateOffline: the connection failed or dropped; the client retries
	// after Event.Retry.
	StateOffline
	// StateClosed: Close was called; Event.Err is ErrClosed.
	StateClosed
)

var stateNames = [...]string{"", "connecting", "open", "offline", "closed"}

// String names the state.
func (s State) String() string {
	if int(s) < len(stateNames) && s > 0 {
		return stateNames[s]
	}
	return "unknown"
}

// Event is one connection state change.
type Event struct {
	State State
	// Err is why the client is offline or closed.
	Err error
	// Retry is the delay before the next attempt (StateOffline).
	Retry time.Duration
	// Attempt counts the connection attempts since the last open session.
	Attempt int
	// Addr is the server of the attempt: host:port for tcp, the URL for
	// ws (StateConnecting, StateOpen, StateOffline).
	Addr string
}

// Stats are a client's counters.
type Stats struct {
	Connects       int64 // sessions established
	Replies        int64 // replies received
	Dups           int64 // writes acknowledged by +DUP
	Resent         int64 // writes sent again on a later connection (replays)
	Dropped        int64 // writes dropped from a full outbox
	Mutations      int64 // mutation pushes received
	UnknownEffects int64 // mutation pushes the store did not understand
	Keychanges     int64 // keychange frames received
	Messages       int64 // pub/sub deliveries received
	Ignored        int64 // frames of no known kind and no outstanding command
	Outbox         int   // writes waiting for their acknowledgment now
}

// Message is one pub/sub delivery.
type Message struct {
	Pattern string // the matching pattern, for PSubscribe
	Channel string
	Payload []byte
}

// Client is a sync client. Its methods are safe for concurrent use.
//
// OnState and the callbacks of queries, watches and subscriptions run one
// at a time on the client's connection goroutine, the one that reads
// replies: they may call the client's methods that do not wait (Write,
// Send, Query, Get, …) but must not wait for a reply (Do, Write.Wait),
// call Close, or block for long. OnDrop runs on the goroutine that made
// the write that overflowed the outbox; OnError on the connection
// goroutine or the outbox saver's.
type Client struct {
	opts   Options
	scheme string
	// targets are the addresses the client dials, in turn: host:port for
	// tcp, the URL for ws. turn counts the attempts (owned by the
	// connection goroutine); hint is a primary named by a replica's ROLE
	// reply, dialled next (guarded by mu).
	targets []string
	turn    int
	hint    string
	// needPrimary is set once a write was refused with -READONLY while
	// ReplicaOK let the session stay on a replica (guarded by mu).
	needPrimary bool
	id          string
	// dedupHead is the encoded "DEDUP" and client id that start every
	// wrapped write.
	dedupHead []byte
	storage   Storage
	store     *Store

	ctx     context.Context
	cancel  context.CancelFunc
	stopped chan struct{}
	saver   chan struct{}

	mu         sync.Mutex
	closed     bool
	state      State
	cn         *conn
	epoch      uint64
	counter    uint32
	queue      queue[item] // unacknowledged writes and unsent calls, in order
	writes     int         // writes in queue
	dirty      bool        // the outbox changed since it was last saved
	saveMu     sync.Mutex  // serializes outbox saves
	token      string
	scope      []string // patterns whose keys the server pushes (SYNC)
	queries    map[string][]*Query
	watches    map[string][]*Watch
	channels   map[string][]*Subscription
	pchannels  map[string][]*Subscription
	unwatching map[string]int // KUNWATCH sent, not yet answered
	unquerying map[string]int // QUNSUB sent, not yet answered

	connects, replies, dups, dropped, resent atomic.Int64
	mutations, unknown, keychanges, messages atomic.Int64
	ignored                                  atomic.Int64
}

// item is an entry of the client's queue: a write or a plain call.
type item struct {
	w *Write
	c *Call
}

// New returns a client for opts and starts connecting. It loads (or
// creates and saves) the client id, bumps and saves the session epoch, and
// reloads a saved outbox, whose writes are replayed once the session is
// established.
func New(opts Options) (*Client, error) {
	c := &Client{
		opts:       opts,
		stopped:    make(chan struct{}),
		saver:      make(chan struct{}),
		queries:    make(map[string][]*Query),
		watches:    make(map[string][]*Watch),
		channels:   make(map[string][]*Subscription),
		pchannels:  make(map[string][]*Subscription),
		unwatching: make(map[string]int),
		unquerying: make(map[string]int),
	}
	for _, raw := range append([]string{opts.URL}, opts.URLs...) {
		scheme, target, err := parseTarget(raw)
		if err != nil {
			return nil, err
		}
		if c.scheme != "" && scheme != c.scheme {
			return nil, fmt.Errorf("client: URL %q: every address must use the scheme %s", raw, c.scheme)
		}
		c.scheme = scheme
		c.targets = append(c.targets, target)
	}
	if len(opts.Sentinels) > 0 && (c.scheme != "tcp" || opts.MasterName == "") {
		return nil, errors.New("client: Sentinels need the tcp scheme and a MasterName")
	}
	o := &c.opts
	o.WaitTimeout = cmpOr(o.WaitTimeout, DefaultWaitTimeout)
	if o.OutboxLimit <= 0 || o.OutboxLimit > MaxOutbox {
		o.OutboxLimit = MaxOutbox
	}
	if o.OutboxSaveInterval == 0 {
		o.OutboxSaveInterval = DefaultOutboxSaveInterval
	}
	o.MinBackoff = cmpOr(o.MinBackoff, DefaultMinBackoff)
	o.MaxBackoff = max(cmpOr(o.MaxBackoff, DefaultMaxBackoff), o.MinBackoff)
	o.DialTimeout = cmpOr(o.DialTimeout, DefaultDialTimeout)
	o.WriteTimeout = cmpOr(o.WriteTimeout, DefaultWriteTimeout)
	o.ReadTimeout = cmpOr(o.ReadTimeout, DefaultReadTimeout)
	c.storage = opts.Storage
	if c.storage == nil {
		c.storage = NewMemoryStorage()
	}
	c.store = NewStore(opts.Now)
	if err := c.loadIdentity(); err != nil {
		return nil, err
	}
	if err := c.loadOutbox(); err != nil {
		return nil, err
	}
	c.token = opts.Token
	c.scope = c.scopePatterns()
	c.ctx, c.cancel = context.WithCancel(context.Background())
	go c.run()
	if c.opts.OutboxSaveInterval > 0 {
		go c.saveLoop()
	} else {
		close(c.saver)
	}
	return c, nil
}

func cmpOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// parseServerURL parses a server URL: ws://, wss:// (the path "/" when
// empty) or tcp://, with a host.
func parseServerURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("client: bad URL %q: %w", raw, err)
	}
	switch u.Scheme {
	case "tcp", "ws", "wss":
	default:
		return nil, fmt.Errorf("client: bad URL %q: the scheme must be ws, wss or tcp", raw)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("client: bad URL %q: no host", raw)
	}
	if u.Path == "" && u.Scheme != "tcp" {
		u.Path = "/"
	}
	return u, nil
}

// loadIdentity loads the client id (creating a random one on first use)
// and the epoch, and saves the epoch bumped for this session.
func (c *Client) loadIdentity() error {
	b, err := c.storage.Load(nameClientID)
	if err != nil {
		return err
	}
	id := strings.TrimSpace(string(b))
	if id == "" {
		var raw [16]byte
		if _, err := crand.Read(raw[:]); err != nil {
			return fmt.Errorf("client: random client id: %w", err)
		}
		id = hex.EncodeToString(raw[:])
		if err := c.storage.Save(nameClientID, []byte(id)); err != nil {
			return err
		}
	}
	if len(id) > 64 || strings.ContainsAny(id, " \t\r\n") {
		return fmt.Errorf("client: stored client id %q is not 1 to 64 bytes without spaces", id)
	}
	c.id, c.dedupHead = id, dedupHead([]byte(id))
	b, err = c.storage.Load(nameEpoch)
	if err != nil {
		return err
	}
	var epoch uint64
	if s := strings.TrimSpace(string(b)); s != "" {
		epoch, err = strconv.ParseUint(s, 10, 32)
		if err != nil {
			return fmt.Errorf("client: stored epoch %q: %w", s, err)
		}
	}
	return c.bumpEpoch(epoch)
}

// bumpEpoch makes the epoch after prev the current one, saving it before
// any wire id of it is used. The caller holds mu or owns c.
func (c *Client) bumpEpoch(prev uint64) error {
	if prev >= 1<<32-1 {
		return errors.New("client: session epochs exhausted for this client id")
	}
	if err := c.storage.Save(nameEpoch, []byte(strconv.FormatUint(prev+1, 10))); err != nil {
		return err
	}
	c.epoch, c.counter = prev+1, 0
	return nil
}

// ID returns the client id, as DEDUP carries it.
func (c *Client) ID() string { return c.id }

// Epoch returns the current session epoch.
func (c *Client) Epoch() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

// Store returns the local store.
func (c *Client) Store() *Store { return c.store }

// Get returns a copy of key's value in the local store.
func (c *Client) Get(key string) (Value, bool) { return c.store.Get(key) }

// JGet returns the JSON text of the value at path in key's document in the
// local store, as Store.JGet does.
func (c *Client) JGet(key, path string) (text []byte, ok bool, err error) {
	return c.store.JGet(key, path)
}

// XRange returns entries of key's stream in the local store, as
// Store.XRange does (XRANGE, or XREVRANGE when rev is set).
func (c *Client) XRange(key string, start, end StreamID, count int, rev bool) ([]StreamEntry, bool) {
	return c.store.XRange(key, start, end, count, rev)
}

// State returns the current connection state.
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Stats returns the client's counters.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	n := c.writes
	c.mu.Unlock()
	return Stats{
		Connects: c.connects.Load(), Replies: c.replies.Load(), Dups: c.dups.Load(), Resent: c.resent.Load(),
		Dropped: c.dropped.Load(), Mutations: c.mutations.Load(), UnknownEffects: c.unknown.Load(),
		Keychanges: c.keychanges.Load(), Messages: c.messages.Load(), Ignored: c.ignored.Load(),
		Outbox: n,
	}
}

// scopePatterns returns the patterns whose keys the server pushes to this
// client: Patterns in open mode, the token's patterns in strict mode (read
// from its payload, which the client need not verify).
func (c *Client) scopePatterns() []string {
	if c.token == "" {
		return slices.Clone(c.opts.Patterns)
	}
	payload, _, _ := strings.Cut(c.token, ".")
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(payload, "="))
	if err != nil {
		return nil
	}
	pats, _, _ := strings.Cut(string(raw), "|")
	if pats == "" {
		return nil
	}
	return strings.Split(pats, ",")
}

// SetToken replaces the scope token: it is sent as SYNC TOKEN now when a
// session is open, and on every later connection. A refusal is reported
// to OnError and leaves the connection's previous scope.
func (c *Client) SetToken(token string) {
	c.mu.Lock()
	c.token = token
	c.scope = c.scopePatterns()
	if cn := c.cn; cn != nil && !c.closed {
		cn.send(pending{kind: pendOther, what: "SYNC TOKEN"}, []byte("SYNC"), []byte("TOKEN"), []byte(token))
	}
	c.mu.Unlock()
}

// run is the connection goroutine: it connects, serves the connection
// until it drops and retries with backoff, until Close.
func (c *Client) run() {
	defer close(c.stopped)
	attempt := 0
	for c.ctx.Err() == nil {
		target := c.nextTarget()
		c.setState(Event{State: StateConnecting, Attempt: attempt, Addr: target})
		t, err := c.dial(target)
		if err == nil {
			var opened bool
			opened, err = c.serve(t, target)
			if opened {
				attempt = 0
			}
		}
		if c.ctx.Err() != nil {
			break
		}
		delay := backoff(attempt, c.opts.MinBackoff, c.opts.MaxBackoff)
		attempt++
		c.setState(Event{State: StateOffline, Err: err, Retry: delay, Attempt: attempt, Addr: target})
		timer := time.NewTimer(delay)
		select {
		case <-timer.C:
		case <-c.ctx.Done():
			timer.Stop()
		}
	}
	c.setState(Event{State: StateClosed, Err: ErrClosed})
}

// backoff returns the delay before attempt n (0-based): full jitter over
// an exponentially growing, bounded ceiling.
func backoff(n int, lo, hi time.Duration) time.Duration {
	ceil := hi
	if n < 62 && lo<<n > 0 && lo<<n < hi {
		ceil = lo << n
	}
	return rand.N(ceil + 1)
}

func (c *Client) setState(e Event) {
	c.mu.Lock()
	c.state = e.State
	c.mu.Unlock()
	if c.opts.OnState != nil {
		c.opts.OnState(e)
	}
}

// Close stops the client: the connection closes, the outbox is saved to
// Storage, and every write or call still waiting ends with ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.stopped
		return nil
	}
	c.closed = true
	cn := c.cn
	c.mu.Unlock()
	c.cancel()
	if cn != nil {
		cn.t.close()
	}
	<-c.stopped
	<-c.saver
	err := c.SaveOutbox()
	c.mu.Lock()
	var fail []item
	for i := 0; i < c.queue.len(); i++ {
		fail = append(fail, c.queue.at(i))
	}
	for _, it := range fail {
		if it.w != nil {
			it.w.finish(resp.Value{}, false, ErrClosed)
		} else {
			it.c.finish(resp.Value{}, ErrClosed)
		}
	}
	c.queue.reset()
	c.writes = 0
	c.mu.Unlock()
	return err
}

// saveLoop saves the outbox when it changed, every OutboxSaveInterval.
func (c *Client) saveLoop() {
	defer close(c.saver)
	t := time.NewTicker(c.opts.OutboxSaveInterval)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		c.mu.Lock()
		dirty := c.dirty
		c.mu.Unlock()
		if dirty {
			if err := c.SaveOutbox(); err != nil {
				c.report(err)
			}
		}
	}
}

func (c *Client) report(err error) {
	if c.opts.OnError != nil && err != nil {
		c.opts.OnError(err)
	}
}

// interested reports whether key is one the client keeps locally: in its
// SYNC scope, matching a live query, or watched. The caller holds mu.
func (c *Client) interested(key string) bool {
	if _, ok := c.watches[key]; ok {
		return true
	}
	for p := range c.queries {
		if recsync.Match(p, key) {
			return true
		}
	}
	for _, p := range c.scope {
		if recsync.Match(p, key) {
			return true
		}
	}
	return false
}

// keychangeInterest reports whether the server may send a keychange for
// key: it is watched or matches a live query, counting those whose removal
// is not yet answered.
func (c *Client) keychangeInterest(key []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := string(key)
	if _, ok := c.watches[k]; ok || c.unwatching[k] > 0 {
		return true
	}
	for p := range c.queries {
		if recsync.Match(p, k) {
			return true
		}
	}
	for p := range c.unquerying {
		if recsync.Match(p, k) {
			return true
		}
	}
	return false
}

// notify runs the callbacks of the live queries matching each changed key
// and of the key's watchers, with the key's current value.
func (c *Client) notify(keys []string) {
	if len(keys) == 0 {
		return
	}
	type target struct {
		key string
		fns []func(string, Value)
	}
	var targets []target
	c.mu.Lock()
	if len(c.queries) > 0 || len(c.watches) > 0 {
		for _, k := range keys {
			var fns []func(string, Value)
			for p, qs := range c.queries {
				if recsync.Match(p, k) {
					for _, q := range qs {
						fns = append(fns, q.fn)
					}
				}
			}
			for _, w := range c.watches[k] {
				fns = append(fns, w.fn)
			}
			if len(fns) > 0 {
				targets = append(targets, target{k, fns})
			}
		}
	}
	c.mu.Unlock()
	for _, t := range targets {
		v, _ := c.store.Get(t.key)
		for _, fn := range t.fns {
			fn(t.key, v)
		}
	}
}

// newID returns the next wire id. The caller holds mu.
func (c *Client) newID() (uint64, error) {
	if c.counter == 1<<32-1 {
		if err := c.bumpEpoch(c.epoch); err != nil {
			return 0, err
		}
	}
	c.counter++
	return c.epoch<<32 | uint64(c.counter), nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
