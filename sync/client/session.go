package client

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/recached/recached/resp"
	recsync "github.com/recached/recached/sync"
)

// pendKind says what an outstanding command is, so that its reply is
// handled accordingly.
type pendKind uint8

const (
	pendWrite    pendKind = iota // an outbox write (DEDUP-wrapped)
	pendCall                     // a plain command from Send or Do
	pendFatal                    // AUTH, HELLO, SYNC: an error reply ends the connection
	pendQSub                     // QSUB: the reply is qstate
	pendQUnsub                   // QUNSUB
	pendKWatch                   // KWATCH
	pendKUnwatch                 // KUNWATCH
	pendSub                      // SUBSCRIBE, PSUBSCRIBE, UNSUBSCRIBE, PUNSUBSCRIBE
	pendOther                    // a session command whose error is only reported
	pendRole                     // ROLE: a replica ends the connection unless it may stay
	pendWait                     // WAIT: enough replicas retire the writes answered before it
)

// pending is one command sent on a connection and not yet answered.
type pending struct {
	kind  pendKind
	setup bool // part of the session establishment
	w     *Write
	call  *Call
	what  string // the command, for error messages
	name  string // QUNSUB pattern
	keys  []string
	// confirm is, on TCP in RESP3, the tag of the push that answers a
	// subscription command ("subscribe", …).
	confirm string
}

// conn is one connection and its outstanding commands. Its fields other
// than t, tcp, signal and done are guarded by Client.mu; the order in which
// commands are appended to out is the order they are sent and the order of
// fifo.
type conn struct {
	t         transport
	addr      string // the server's address, for Event.Addr
	tcp       bool
	out       []byte
	ends      []int
	fifo      queue[pending]
	setupLeft int
	open      bool
	// waitNeeded: writes were sent since the last WAIT (WaitReplicas).
	waitNeeded bool
	signal     chan struct{}
	done       chan struct{}
}

// kick wakes the writer.
func (cn *conn) kick() {
	select {
	case cn.signal <- struct{}{}:
	default:
	}
}

// send queues a command for the writer and records it as outstanding.
func (cn *conn) send(p pending, args ...[]byte) {
	cn.out = resp.AppendCommand(cn.out, args...)
	cn.ends = append(cn.ends, len(cn.out))
	cn.push(p)
}

func (cn *conn) push(p pending) {
	cn.fifo.push(p)
	if p.setup {
		cn.setupLeft++
	}
	cn.kick()
}

// sendWrite queues w wrapped as DEDUP <client-id> <wire-id> <args…>; head
// is the encoded "DEDUP" and client id (dedupHead).
func (cn *conn) sendWrite(head []byte, w *Write) {
	b := resp.AppendHeader(cn.out, '*', 3+len(w.Args))
	b = append(b, head...)
	var num [20]byte
	b = resp.AppendBulk(b, strconv.AppendUint(num[:0], w.ID, 10))
	for _, a := range w.Args {
		b = resp.AppendBulk(b, a)
	}
	cn.out = b
	cn.ends = append(cn.ends, len(b))
	cn.push(pending{kind: pendWrite, w: w})
	cn.waitNeeded = true
}

// sendCall queues a plain command.
func (cn *conn) sendCall(call *Call) {
	cn.out = resp.AppendCommand(cn.out, call.Args...)
	cn.ends = append(cn.ends, len(cn.out))
	cn.push(pending{kind: pendCall, call: call})
}

// dedupHead returns the encoded first two arguments of every DEDUP the
// client sends: "DEDUP" and its client id.
func dedupHead(id []byte) []byte {
	return resp.AppendBulk(resp.AppendBulk(nil, []byte("DEDUP")), id)
}

// Command names the client sends.
var (
	bAUTH      = []byte("AUTH")
	bHELLO     = []byte("HELLO")
	bSYNC      = []byte("SYNC")
	bTOKEN     = []byte("TOKEN")
	bQSUB      = []byte("QSUB")
	bQUNSUB    = []byte("QUNSUB")
	bKWATCH    = []byte("KWATCH")
	bKUNWATCH  = []byte("KUNWATCH")
	bSUBSCRIBE = []byte("SUBSCRIBE")
	bPSUB      = []byte("PSUBSCRIBE")
	bUNSUB     = []byte("UNSUBSCRIBE")
	bPUNSUB    = []byte("PUNSUBSCRIBE")
	bROLE      = []byte("ROLE")
	bWAIT      = []byte("WAIT")
)

// maxKWatch is the most keys one KWATCH carries (the server's limit per
// connection).
const maxKWatch = 1024

// startConn makes cn the client's connection and queues the session
// establishment in the seed's order: AUTH, (HELLO 3 on TCP,) SYNC, one QSUB
// per live query, then KWATCH and the subscriptions. The outbox is
// replayed once all of them are answered (openLocked). With nothing else
// to establish, a PING stands in: a server that refuses the connection
// (maxclients) answers it with its error, which must not be taken for the
// reply to the first write. It returns nil when the client was closed
// meanwhile.
func (c *Client) startConn(t transport, addr string) *conn {
	cn := &conn{t: t, addr: addr, tcp: c.scheme == "tcp", signal: make(chan struct{}, 1), done: make(chan struct{})}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.cn = cn
	if c.opts.Password != "" {
		args := [][]byte{bAUTH, []byte(c.opts.Password)}
		if c.opts.Username != "" {
			args = [][]byte{bAUTH, []byte(c.opts.Username), []byte(c.opts.Password)}
		}
		cn.send(pending{kind: pendFatal, setup: true, what: "AUTH"}, args...)
	}
	if cn.tcp {
		cn.send(pending{kind: pendFatal, setup: true, what: "HELLO 3"}, bHELLO, []byte("3"))
	}
	if c.checksRole() {
		cn.send(pending{kind: pendRole, setup: true, what: "ROLE"}, bROLE)
	}
	switch {
	case c.token != "":
		cn.send(pending{kind: pendFatal, setup: true, what: "SYNC TOKEN"}, bSYNC, bTOKEN, []byte(c.token))
	case len(c.opts.Patterns) > 0:
		args := [][]byte{bSYNC}
		for _, p := range c.opts.Patterns {
			args = append(args, []byte(p))
		}
		cn.send(pending{kind: pendFatal, setup: true, what: "SYNC"}, args...)
	}
	for _, p := range sortedKeys(c.queries) {
		cn.send(pending{kind: pendQSub, setup: true, what: "QSUB " + p}, bQSUB, []byte(p))
	}
	keys := sortedKeys(c.watches)
	for len(keys) > 0 {
		n := min(len(keys), maxKWatch)
		args := [][]byte{bKWATCH}
		for _, k := range keys[:n] {
			args = append(args, []byte(k))
		}
		cn.send(pending{kind: pendKWatch, setup: true, what: "KWATCH"}, args...)
		keys = keys[n:]
	}
	for _, ch := range sortedKeys(c.channels) {
		cn.send(pending{kind: pendSub, setup: true, what: "SUBSCRIBE " + ch, confirm: "subscribe"}, bSUBSCRIBE, []byte(ch))
	}
	for _, p := range sortedKeys(c.pchannels) {
		cn.send(pending{kind: pendSub, setup: true, what: "PSUBSCRIBE " + p, confirm: "psubscribe"}, bPSUB, []byte(p))
	}
	if cn.setupLeft == 0 {
		cn.send(pending{kind: pendFatal, setup: true, what: "PING"}, []byte("PING"))
	}
	return cn
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// openLocked marks the session established and sends everything queued:
// the outbox oldest first, interleaved with the plain calls in the order
// they were made. The caller holds mu and reports StateOpen afterwards.
func (c *Client) openLocked(cn *conn) {
	cn.open = true
	c.connects.Add(1)
	for i := 0; i < c.queue.len(); i++ {
		it := c.queue.at(i)
		switch {
		case it.w != nil && !it.w.sent:
			if it.w.tried {
				c.resent.Add(1)
			}
			cn.sendWrite(c.dedupHead, it.w)
			it.w.sent, it.w.tried = true, true
		case it.c != nil && !it.c.sent:
			cn.sendCall(it.c)
			it.c.sent = true
		}
	}
}

// serve runs a connection until it fails, then forgets it: plain calls
// that were sent fail with ErrConnectionLost, writes wait for the next
// connection.
func (c *Client) serve(t transport, addr string) (opened bool, err error) {
	cn := c.startConn(t, addr)
	if cn == nil {
		t.close()
		return false, ErrClosed
	}
	go c.writeLoop(cn)
	err = c.readLoop(cn)
	close(cn.done)
	t.close()
	c.mu.Lock()
	opened = cn.open
	c.cn = nil
	var lost []*Call
	c.queue.filter(func(it item) bool {
		if it.w != nil {
			it.w.sent, it.w.acked = false, false
			return true
		}
		if it.c.sent {
			lost = append(lost, it.c)
			return false
		}
		return true
	})
	for _, call := range lost {
		call.finish(resp.Value{}, ErrConnectionLost)
	}
	clear(c.unwatching)
	clear(c.unquerying)
	c.mu.Unlock()
	return opened, err
}

// writeLoop is a connection's writer: it sends everything queued since
// its last write in one batch.
func (c *Client) writeLoop(cn *conn) {
	var spare []byte
	var spareEnds []int
	for {
		select {
		case <-cn.signal:
		case <-cn.done:
			return
		}
		c.mu.Lock()
		if cn.waitNeeded && c.opts.WaitReplicas > 0 {
			cn.waitNeeded = false
			cn.send(pending{kind: pendWait, what: "WAIT"}, bWAIT, []byte(strconv.Itoa(c.opts.WaitReplicas)),
				[]byte(strconv.FormatInt(c.opts.WaitTimeout.Milliseconds(), 10)))
			// cn.send kicked the writer: drain that, the WAIT leaves now.
			select {
			case <-cn.signal:
			default:
			}
		}
		batch, ends := cn.out, cn.ends
		cn.out, cn.ends = spare[:0], spareEnds[:0]
		c.mu.Unlock()
		if len(batch) > 0 {
			if err := cn.t.writeCommands(batch, ends); err != nil {
				cn.t.close() // the reader sees the failure and reconnects
				return
			}
		}
		if cap(batch) > 1<<20 {
			batch = nil
		}
		spare, spareEnds = batch, ends
	}
}

// readLoop reads and handles frames until the connection fails.
func (c *Client) readLoop(cn *conn) error {
	for {
		v, err := cn.t.read()
		if err != nil {
			return err
		}
		if err := c.handle(cn, v); err != nil {
			return err
		}
	}
}

// handle dispatches one frame by the seed's taxonomy.
func (c *Client) handle(cn *conn, v resp.Value) error {
	switch Classify(v, c.keychangeInterest) {
	case FramePubSub:
		c.deliver(v)
		return nil
	case FrameMutation:
		c.applyMutation(v)
		return nil
	case FrameKeychange:
		c.applyKeychange(v)
		return nil
	case FrameConfirm:
		// A confirmation is a reply only to the subscription command
		// outstanding on the RESP port; anything else is ignored.
		c.mu.Lock()
		p, ok := cn.fifo.front()
		match := cn.tcp && ok && p.confirm != "" && resp.EqualFold(tagOf(v), p.confirm)
		c.mu.Unlock()
		if !match {
			c.ignored.Add(1)
			return nil
		}
	}
	return c.reply(cn, v)
}

// reply retires the oldest outstanding command with v.
func (c *Client) reply(cn *conn, v resp.Value) error {
	c.mu.Lock()
	p, ok := cn.fifo.pop()
	if !ok {
		// No command is outstanding, so this cannot be a reply: a frame
		// of a kind this client does not know (the compatibility rules:
		// ignore unknown tags).
		c.mu.Unlock()
		c.ignored.Add(1)
		return nil
	}
	c.replies.Add(1)
	var (
		fatal      error
		refused    error
		ownChanged []string
		ownApplied bool
		retain     bool
		opened     bool
	)
	switch p.kind {
	case pendWrite:
		w := p.w
		if isReadOnly(v) {
			// A replica: the write did not run and stays in the outbox
			// for the primary.
			fatal = c.readOnlyLocked()
			break
		}
		dup := isDup(v)
		if dup {
			c.dups.Add(1)
		} else if !v.IsError() && len(w.Args) > 1 && !w.finished && c.interested(string(w.Args[1])) {
			// The local store has the write's effect before Wait returns
			// (the store's lock is a leaf under c.mu).
			if own := ownEffect(w.Args, v); own != nil {
				ownChanged, ownApplied = c.store.Apply(own)
			}
		}
		if c.opts.WaitReplicas > 0 {
			// Resolved when a WAIT confirms it. +DUP to a replay keeps
			// the reply of the execution it stands for, when known.
			if !dup || !w.answered {
				w.reply, w.dup = v, dup
			}
			w.answered, w.acked = true, true
			break
		}
		if f, ok := c.queue.front(); ok && f.w == w {
			c.queue.pop()
			c.writes--
			c.dirty = true
		}
		w.finish(v, dup, nil)
	case pendCall:
		c.removeCallLocked(p.call)
		p.call.finish(v, nil)
		if isReadOnly(v) {
			fatal = c.readOnlyLocked()
		}
	case pendRole:
		role, primary := roleOf(v)
		switch {
		case v.IsError():
			// Refused (a token-scoped bridge connection may not ask):
			// the role is unknown, and a write's -READONLY will tell.
		case role != "master" && (!c.opts.ReplicaOK || c.needPrimary):
			if c.scheme == "tcp" && primary != "" && len(c.opts.Sentinels) == 0 {
				c.hint = primary
			}
			fatal = fmt.Errorf("%w (ROLE %s, primary %s)", ErrNotPrimary, role, primary)
		}
	case pendWait:
		switch {
		case v.IsError():
			// A demoted primary: "WAIT cannot be used with replica
			// instances".
			fatal = fmt.Errorf("client: WAIT refused: %w", v.Err())
		case v.Int >= int64(c.opts.WaitReplicas):
			c.confirmLocked()
		default:
			// Too few replicas acknowledged: the writes stay, and
			// another WAIT asks again.
			if c.ackedLocked() {
				cn.waitNeeded = true
				cn.kick()
			}
		}
	case pendFatal:
		if v.IsError() {
			fatal = fmt.Errorf("client: %s refused: %w", p.what, v.Err())
		}
	case pendQUnsub:
		if c.unquerying[p.name]--; c.unquerying[p.name] <= 0 {
			delete(c.unquerying, p.name)
		}
		retain = true
	case pendKUnwatch:
		for _, k := range p.keys {
			if c.unwatching[k]--; c.unwatching[k] <= 0 {
				delete(c.unwatching, k)
			}
		}
		retain = true
	}
	if fatal == nil && p.kind != pendWrite && p.kind != pendCall && p.kind != pendFatal && p.kind != pendRole && v.IsError() {
		refused = fmt.Errorf("client: %s refused: %w", p.what, v.Err())
	}
	if p.setup && fatal == nil {
		if cn.setupLeft--; cn.setupLeft == 0 {
			c.openLocked(cn)
			opened = true
		}
	}
	c.mu.Unlock()

	if p.kind == pendQSub && isQState(v) {
		c.applyQState(v)
	}
	if ownApplied {
		c.notify(ownChanged)
	}
	if retain {
		c.retain()
	}
	if refused != nil {
		c.report(refused)
	}
	if opened {
		c.setState(Event{State: StateOpen, Addr: cn.addr})
	}
	return fatal
}

// readOnlyLocked notes that the server refused a write as a replica and
// returns the error that closes the connection. The caller holds mu.
func (c *Client) readOnlyLocked() error {
	c.needPrimary = true
	return errReadOnly
}

// removeCallLocked removes an answered call from the queue: at its front,
// or behind writes answered and waiting for a WAIT. The caller holds mu.
func (c *Client) removeCallLocked(call *Call) {
	for i := 0; i < c.queue.len(); i++ {
		it := c.queue.at(i)
		if it.c == call {
			c.queue.removeAt(i)
			return
		}
		if it.w == nil || !it.w.acked {
			return
		}
	}
}

// ackedLocked reports whether the oldest write is answered and waits for
// a WAIT. The caller holds mu.
func (c *Client) ackedLocked() bool {
	for i := 0; i < c.queue.len(); i++ {
		if w := c.queue.at(i).w; w != nil {
			return w.acked
		}
	}
	return false
}

// confirmLocked retires the writes a WAIT confirmed, those answered before
// it: from the front of the queue up to the first write not answered on
// this connection. The caller holds mu.
func (c *Client) confirmLocked() {
	for c.queue.len() > 0 {
		it, _ := c.queue.front()
		if it.w == nil || !it.w.acked {
			return
		}
		c.queue.pop()
		c.writes--
		c.dirty = true
		it.w.finish(it.w.reply, it.w.dup, nil)
	}
}

// isDup reports whether v is the +DUP reply.
func isDup(v resp.Value) bool {
	return v.Kind == '+' && string(v.Str) == "DUP"
}

// applyMutation applies a mutation push to the local store.
func (c *Client) applyMutation(v resp.Value) {
	c.mutations.Add(1)
	args, ok := elemStrings(v)
	if !ok {
		c.unknown.Add(1)
		return
	}
	changed, ok := c.store.Apply(args)
	if !ok {
		c.unknown.Add(1)
		return
	}
	c.notify(changed)
}

// applyKeychange applies ["keychange", key, value].
func (c *Client) applyKeychange(v resp.Value) {
	c.keychanges.Add(1)
	key := string(v.Elems[1].Str)
	if c.store.SetState(key, v.Elems[2]) {
		c.notify([]string{key})
	}
}

// applyQState applies ["qstate", pattern, k1, v1, …]: the keys listed take
// their values, without an expiry time until the PEXPIREAT pushes that
// follow give one, and local keys matching the pattern that are not listed
// are gone from the server. Every key listed or removed is notified.
func (c *Client) applyQState(v resp.Value) {
	pattern := string(v.Elems[1].Str)
	listed := make(map[string]bool, len(v.Elems)/2)
	var keys []string
	for i := 2; i+1 < len(v.Elems); i += 2 {
		k := v.Elems[i]
		if (k.Kind != '$' && k.Kind != '+') || k.Null {
			continue
		}
		key := string(k.Str)
		listed[key] = true
		c.store.hydrate(key, v.Elems[i+1])
		keys = append(keys, key)
	}
	keys = append(keys, c.store.removeMatching(pattern, listed)...)
	c.notify(keys)
}

// retain drops from the local store the keys the client has no interest
// in any more (after QUNSUB or KUNWATCH).
func (c *Client) retain() {
	c.mu.Lock()
	var patterns []string
	patterns = append(patterns, c.scope...)
	for p := range c.queries {
		patterns = append(patterns, p)
	}
	watched := make(map[string]bool, len(c.watches))
	for k := range c.watches {
		watched[k] = true
	}
	c.mu.Unlock()
	c.store.Retain(func(key string) bool {
		if watched[key] {
			return true
		}
		for _, p := range patterns {
			if recsync.Match(p, key) {
				return true
			}
		}
		return false
	})
}

// deliver runs the callbacks of a pub/sub delivery.
func (c *Client) deliver(v resp.Value) {
	c.messages.Add(1)
	args, ok := elemStrings(v)
	if !ok {
		return
	}
	var m Message
	var subs []*Subscription
	c.mu.Lock()
	switch {
	case resp.EqualFold(args[0], "pmessage") && len(args) == 4:
		m = Message{Pattern: string(args[1]), Channel: string(args[2]), Payload: args[3]}
		subs = slices.Clone(c.pchannels[m.Pattern])
	case len(args) == 3 && !resp.EqualFold(args[0], "pmessage"):
		m = Message{Channel: string(args[1]), Payload: args[2]}
		subs = slices.Clone(c.channels[m.Channel])
	}
	c.mu.Unlock()
	for _, s := range subs {
		s.fn(m)
	}
}
