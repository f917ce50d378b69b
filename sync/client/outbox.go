package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/recached/recached/resp"
	recsync "github.com/recached/recached/sync"
)

// Write is one write in the outbox: a command the server runs exactly
// once, wrapped as DEDUP <client-id> <ID> <Args…>.
type Write struct {
	// ID is the wire id: (session epoch << 32) | write counter.
	ID uint64
	// Args is the command; the client keeps it until the write is retired.
	Args [][]byte

	done     chan struct{}
	reply    resp.Value
	dup      bool
	err      error
	sent     bool // on the current connection (guarded by Client.mu)
	tried    bool // sent on some connection (guarded by Client.mu)
	finished bool // guarded by Client.mu
	// With WaitReplicas (guarded by Client.mu): answered once a reply
	// came on any connection, then kept in reply and dup; acked while
	// that reply came on the current connection and waits for a WAIT.
	answered bool
	acked    bool
}

// finish resolves w once. The caller holds Client.mu.
func (w *Write) finish(v resp.Value, dup bool, err error) {
	if w.finished {
		return
	}
	w.finished = true
	w.reply, w.dup, w.err = v, dup, err
	if err == nil {
		w.err = v.Err()
	}
	close(w.done)
}

// Done is closed once the write is resolved.
func (w *Write) Done() <-chan struct{} { return w.done }

// Wait waits for the write's resolution: the wrapped command's reply, with
// its error reply as a *resp.ReplyError; +DUP (see Dup) with a nil error,
// since the server had executed this wire id before; or ErrDropped or
// ErrClosed. A ctx that ends first returns ctx.Err() and leaves the write
// in the outbox.
func (w *Write) Wait(ctx context.Context) (resp.Value, error) {
	select {
	case <-w.done:
		return w.reply, w.err
	case <-ctx.Done():
		return resp.Value{}, ctx.Err()
	}
}

// Dup reports whether the write was acknowledged by +DUP: the server had
// already executed it under this wire id, on a connection whose reply was
// lost. Valid once Done is closed.
func (w *Write) Dup() bool {
	<-w.done
	return w.dup
}

// Call is a plain command: sent as is, not replayed if the connection
// drops before its reply.
type Call struct {
	Args [][]byte

	done     chan struct{}
	reply    resp.Value
	err      error
	sent     bool // guarded by Client.mu
	finished bool // guarded by Client.mu
}

// finish resolves call once. The caller holds Client.mu.
func (call *Call) finish(v resp.Value, err error) {
	if call.finished {
		return
	}
	call.finished = true
	call.reply, call.err = v, err
	if err == nil {
		call.err = v.Err()
	}
	close(call.done)
}

// Done is closed once the call is resolved.
func (call *Call) Done() <-chan struct{} { return call.done }

// Wait waits for the reply (an error reply as a *resp.ReplyError), or
// ErrConnectionLost, ErrClosed, or ctx.Err().
func (call *Call) Wait(ctx context.Context) (resp.Value, error) {
	select {
	case <-call.done:
		return call.reply, call.err
	case <-ctx.Done():
		return resp.Value{}, ctx.Err()
	}
}

// commands is the server's command list (sync/commands.json, generated
// from its command table): the client routes by it and names no command.
var commands = mustLoadCommands()

func mustLoadCommands() *recsync.Commands {
	cs, err := recsync.LoadCommands()
	if err != nil {
		panic(err) // the file is compiled in and checked by the sync package's tests
	}
	return cs
}

// Write queues a write; see WriteArgs.
func (c *Client) Write(args ...string) *Write {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return c.WriteArgs(b)
}

// WriteArgs appends a write to the outbox and sends it at once when the
// session is open. The client keeps args: do not modify them. When the
// outbox already holds OutboxLimit writes, the oldest is dropped, resolved
// with ErrDropped and passed to OnDrop.
func (c *Client) WriteArgs(args [][]byte) *Write {
	w := &Write{Args: args, done: make(chan struct{})}
	c.mu.Lock()
	switch cmd := commands.Lookup(args); {
	case len(args) == 0:
		w.finish(resp.Value{}, false, errors.New("client: empty command"))
	case cmd != nil && cmd.Connection:
		w.finish(resp.Value{}, false, fmt.Errorf("client: %s is connection-scoped and cannot be an outbox write", upper(args[0])))
	case c.closed:
		w.finish(resp.Value{}, false, ErrClosed)
	}
	if w.finished {
		c.mu.Unlock()
		return w
	}
	id, err := c.newID()
	if err != nil {
		w.finish(resp.Value{}, false, err)
		c.mu.Unlock()
		return w
	}
	w.ID = id
	c.queue.push(item{w: w})
	c.writes++
	c.dirty = true
	var dropped *Write
	if c.writes > c.opts.OutboxLimit {
		dropped = c.dropOldestLocked()
	}
	if cn := c.cn; cn != nil && cn.open {
		cn.sendWrite(c.dedupHead, w)
		w.sent, w.tried = true, true
	}
	c.mu.Unlock()
	if dropped != nil && c.opts.OnDrop != nil {
		c.opts.OnDrop(dropped)
	}
	return w
}

// dropOldestLocked removes the oldest write from the outbox. If it is in
// flight, its reply will find it resolved already and be ignored. The
// caller holds mu.
func (c *Client) dropOldestLocked() *Write {
	for i := 0; i < c.queue.len(); i++ {
		if w := c.queue.at(i).w; w != nil {
			c.queue.removeAt(i)
			c.writes--
			c.dropped.Add(1)
			w.finish(resp.Value{}, false, ErrDropped)
			return w
		}
	}
	return nil
}

// Send queues a plain command (not wrapped, not replayed) and sends it at
// once when the session is open; commands made while offline wait for the
// next session, in order with the outbox. Commands the client issues
// itself (SUBSCRIBE, QSUB, KWATCH, SYNC, AUTH, HELLO, …) are refused: use
// Subscribe, Query, Watch and the Options instead.
func (c *Client) Send(args ...string) *Call {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return c.SendArgs(b)
}

// SendArgs is Send with byte arguments, which the client keeps.
func (c *Client) SendArgs(args [][]byte) *Call {
	call := &Call{Args: args, done: make(chan struct{})}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch cmd := commands.Lookup(args); {
	case len(args) == 0:
		call.finish(resp.Value{}, errors.New("client: empty command"))
		return call
	case cmd != nil && cmd.ClientOwned:
		call.finish(resp.Value{}, fmt.Errorf("client: %s is managed by the client; use its methods", upper(args[0])))
		return call
	case c.closed:
		call.finish(resp.Value{}, ErrClosed)
		return call
	}
	c.queue.push(item{c: call})
	if cn := c.cn; cn != nil && cn.open {
		cn.sendCall(call)
		call.sent = true
	}
	return call
}

// Do sends a plain command and waits for its reply.
func (c *Client) Do(ctx context.Context, args ...string) (resp.Value, error) {
	return c.Send(args...).Wait(ctx)
}

// Publish publishes a pub/sub message (never wrapped: PUBLISH is
// connection-scoped) and returns the number of receivers.
func (c *Client) Publish(ctx context.Context, channel string, payload []byte) (int64, error) {
	v, err := c.SendArgs([][]byte{[]byte("PUBLISH"), []byte(channel), payload}).Wait(ctx)
	if err != nil {
		return 0, err
	}
	return v.Int, nil
}

// Outbox returns the writes waiting for their acknowledgment, oldest
// first: among them the writes reloaded from Storage by New, whose
// resolution nobody else waits for.
func (c *Client) Outbox() []*Write {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Write, 0, c.writes)
	for i := 0; i < c.queue.len(); i++ {
		if w := c.queue.at(i).w; w != nil {
			out = append(out, w)
		}
	}
	return out
}

// SaveOutbox saves the outbox to Storage now. The client also saves it
// every OutboxSaveInterval when it changed, and on Close. A write made
// after the last save is lost if the process dies before the next one,
// but never applied twice; a saved write already acknowledged is replayed
// and answered +DUP.
func (c *Client) SaveOutbox() error {
	c.saveMu.Lock()
	defer c.saveMu.Unlock()
	c.mu.Lock()
	b := c.encodeOutboxLocked()
	c.dirty = false
	c.mu.Unlock()
	if err := c.storage.Save(nameOutbox, b); err != nil {
		c.mu.Lock()
		c.dirty = true
		c.mu.Unlock()
		return err
	}
	return nil
}

// encodeOutboxLocked encodes the outbox as a RESP array of arrays
// [wire-id, command, args…], oldest first. The caller holds mu.
func (c *Client) encodeOutboxLocked() []byte {
	b := resp.AppendHeader(nil, '*', c.writes)
	var num [20]byte
	for i := 0; i < c.queue.len(); i++ {
		w := c.queue.at(i).w
		if w == nil {
			continue
		}
		b = resp.AppendHeader(b, '*', 1+len(w.Args))
		b = resp.AppendBulk(b, strconv.AppendUint(num[:0], w.ID, 10))
		for _, a := range w.Args {
			b = resp.AppendBulk(b, a)
		}
	}
	return b
}

// loadOutbox reloads a saved outbox. Its writes keep their wire ids, all
// of earlier epochs than this session's, so they stay below every new
// write's id and are replayed first.
func (c *Client) loadOutbox() error {
	b, err := c.storage.Load(nameOutbox)
	if err != nil || len(b) == 0 {
		return err
	}
	v, n, err := resp.ParseValue(b)
	if err == nil && (n != len(b) || v.Kind != '*' || v.Null) {
		err = errors.New("not one array")
	}
	if err != nil {
		return fmt.Errorf("client: saved outbox: %w", err)
	}
	var last uint64
	for _, e := range v.Elems {
		args, ok := elemStrings(e)
		if !ok || e.Kind != '*' || len(args) < 2 {
			return errors.New("client: saved outbox: malformed write")
		}
		id, err := strconv.ParseUint(string(args[0]), 10, 64)
		if err != nil || id <= last || id>>32 >= c.epoch {
			return fmt.Errorf("client: saved outbox: wire id %q out of order", args[0])
		}
		last = id
		w := &Write{ID: id, done: make(chan struct{})}
		for _, a := range args[1:] {
			w.Args = append(w.Args, append([]byte{}, a...))
		}
		c.queue.push(item{w: w})
		c.writes++
	}
	for c.writes > c.opts.OutboxLimit {
		w := c.dropOldestLocked()
		if c.opts.OnDrop != nil {
			c.opts.OnDrop(w)
		}
	}
	return nil
}

// ownEffect returns the effect of the client's own acknowledged write, to
// apply locally, since the server sends a writer none of its own pushes;
// nil when it cannot tell. Writes already in effect form (SET k v, HSET,
// LPUSH, …) are their own effect, and so are JSET (without NX/XX), JMERGE
// and JDEL when they did something; INCR and its kin become SET k <reply>
// KEEPTTL; XADD becomes XADD with the id it chose (unless its trim was
// approximate), XDEL and XACK are their own effect. Commands on several keys are left to the pushes and
// re-hydration that follow.
func ownEffect(args [][]byte, reply resp.Value) [][]byte {
	name := upper(args[0])
	switch name {
	case "INCR", "DECR", "INCRBY", "DECRBY":
		if reply.Kind != ':' {
			return nil
		}
		return [][]byte{[]byte("SET"), args[1], []byte(strconv.FormatInt(reply.Int, 10)), []byte("KEEPTTL")}
	case "INCRBYFLOAT":
		if reply.Kind != '$' || reply.Null {
			return nil
		}
		return [][]byte{[]byte("SET"), args[1], reply.Str, []byte("KEEPTTL")}
	case "SET", "PEXPIREAT", "PERSIST", "HSET", "HDEL", "LPUSH", "RPUSH", "LPUSHX", "RPUSHX", "LSET", "LREM",
		"LTRIM", "LINSERT", "SADD", "SREM", "ZADD", "ZREM", "SETBIT":
		if reply.Null {
			return nil // a conditional write that did nothing
		}
		return args
	case "DEL", "UNLINK":
		if len(args) == 2 {
			return args
		}
	case "JSET":
		// JSET key path value [NX|XX]: the effect is the write without
		// its condition, when it ran (+OK; a condition not met is nil).
		if len(args) >= 4 && reply.Kind == '+' {
			return args[:4]
		}
	case "JMERGE":
		if reply.Kind == '+' {
			return args
		}
	case "JDEL", "XDEL", "XACK":
		if reply.Kind == ':' && reply.Int > 0 {
			return args
		}
	case "XADD":
		if reply.Kind == '$' && !reply.Null {
			return xaddEffect(args, reply.Str)
		}
	}
	return nil
}

// xaddEffect returns the effect of XADD args that added the entry id: the
// command with the id it chose, or nil when its trim was approximate or
// limited (the entries it removed depend on the server's nodes).
func xaddEffect(args [][]byte, id []byte) [][]byte {
	for i := 2; i < len(args); i++ {
		switch upper(args[i]) {
		case "NOMKSTREAM":
			continue
		case "MAXLEN", "MINID":
			if i+2 >= len(args) || string(args[i+1]) == "~" || eqUpper(args[i+2], "LIMIT") || i+3 < len(args) && eqUpper(args[i+3], "LIMIT") {
				return nil
			}
			if string(args[i+1]) == "=" {
				i++
			}
			i++
			continue
		}
		out := slices.Clone(args)
		out[i] = id
		return out
	}
	return nil
}
