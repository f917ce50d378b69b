package ws

import (
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server"
)

// conn is one WebSocket connection. Its reader (serve) parses frames and
// runs them through the session; its writer (writeLoop) is the only
// goroutine writing to the socket. Replies and pushes meet in one queue of
// encoded frames guarded by mu, so the order in which they are queued is the
// order the peer receives them.
type conn struct {
	l      *Listener
	ws     *websocket.Conn
	nc     net.Conn
	s      *server.Session
	p      resp.Parser
	remote string
	local  string

	mu     sync.Mutex
	out    []byte // encoded frames waiting for the writer
	frames int    // frames in out
	// While the reader runs a command (executing), pushes are held back
	// and queued right after the command's reply. A push caused by a write
	// that follows a live query's registration thus never overtakes the
	// qstate reply, as on the RESP port, where pushes are written after
	// the replies of the read being processed.
	held       []byte
	heldFrames int
	executing  bool
	closing    bool // Close was called: send what is queued, then close
	dead       bool // closed: queue nothing more
	// pong is the payload of the pong owed to the peer's latest ping, when
	// pongDue. Only the latest needs an answer (RFC 6455 section 5.5.3),
	// so a peer that pings without reading costs 125 bytes at most.
	pong    []byte
	pongDue bool

	pending atomic.Int64  // bytes queued and not yet written
	inbound atomic.Int64  // bytes of the frame read and not yet run
	signal  chan struct{} // the writer has work
	wake    chan struct{} // a blocking command was served
	done    chan struct{} // closed when the connection is torn down
	once    sync.Once
}

func newConn(l *Listener, wsc *websocket.Conn) *conn {
	nc := wsc.NetConn()
	return &conn{
		l:      l,
		ws:     wsc,
		nc:     nc,
		remote: server.AddrString(nc.RemoteAddr()),
		local:  server.AddrString(nc.LocalAddr()),
		signal: make(chan struct{}, 1),
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
}

// Push queues b, one or more RESP values, as one frame per value. It never
// blocks: a connection whose queue passes its limits is disconnected.
func (c *conn) Push(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead || c.closing {
		c.l.srv.CountDroppedPushes(1)
		return
	}
	c.queueValues(b, c.executing)
}

// Pending reports the bytes queued and not yet written to the socket, for
// the engine's pub/sub output limits.
func (c *conn) Pending() int { return int(c.pending.Load()) }

// Buffered reports the bytes of the frame read and not yet run, and the
// bytes queued and not yet written to the socket.
func (c *conn) Buffered() (query, output int) {
	return int(c.inbound.Load()), c.Pending()
}

// Close sends what is queued, then a close frame, and closes.
func (c *conn) Close() {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	c.kick()
}

// Wake resumes a reader waiting for a blocking command.
func (c *conn) Wake() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// RemoteAddr returns the peer's "ip:port".
func (c *conn) RemoteAddr() string { return c.remote }

// LocalAddr returns the local "ip:port".
func (c *conn) LocalAddr() string { return c.local }

// kick tells the writer there is work.
func (c *conn) kick() {
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

// kill tears the connection down at once: the socket is closed, which ends
// a blocked read or write, and queued frames are dropped.
func (c *conn) kill() {
	c.mu.Lock()
	c.killLocked()
	c.mu.Unlock()
}

func (c *conn) killLocked() {
	c.dead = true
	c.out, c.held, c.pong = nil, nil, nil
	c.pongDue = false
	c.once.Do(func() {
		close(c.done)
		_ = c.nc.Close()
	})
}

// queueValues appends one frame per RESP value of b, to the held queue when
// hold is set. The caller holds mu.
func (c *conn) queueValues(b []byte, hold bool) {
	before := len(c.out) + len(c.held)
	for len(b) > 0 {
		v := valueLen(b)
		if v <= 0 {
			v = len(b) // not RESP the engine should produce: one frame
		}
		op := dataOp(b[:v])
		if hold {
			c.held = appendFrame(c.held, op, b[:v])
			c.heldFrames++
		} else {
			c.out = appendFrame(c.out, op, b[:v])
			c.frames++
		}
		b = b[v:]
	}
	c.pending.Add(int64(len(c.out) + len(c.held) - before))
	if c.overLimitLocked() {
		return
	}
	if !hold {
		c.kick()
	}
}

// overLimitLocked kills a connection whose queue is past the engine's
// unread-output limits and reports whether it did. The caller holds mu.
func (c *conn) overLimitLocked() bool {
	if !server.OverUnreadLimit(len(c.out)+len(c.held), c.frames+c.heldFrames) {
		return false
	}
	c.l.srv.CountDroppedPushes(c.frames + c.heldFrames)
	c.killLocked() // a slow consumer: never let it hold up anyone
	return true
}

// dataOp returns the opcode of a server frame holding the RESP value v: a
// text frame, as SPEC section 3 says, unless v is not valid UTF-8 (a value
// written in binary on the RESP port), which goes out in a binary frame. A
// text frame must be UTF-8 (RFC 6455 section 8.1): browsers fail the
// connection on one that is not.
func dataOp(v []byte) byte {
	if utf8.Valid(v) {
		return opText
	}
	return opBinary
}

// queuePing queues a ping; it counts against the output limits as any
// frame does.
func (c *conn) queuePing() {
	c.mu.Lock()
	if !c.dead {
		before := len(c.out)
		c.out = appendFrame(c.out, opPing, nil)
		c.frames++
		c.pending.Add(int64(len(c.out) - before))
		c.overLimitLocked()
	}
	c.mu.Unlock()
	c.kick()
}

// queuePong owes the peer a pong for a ping with payload data, replacing
// any pong not yet sent.
func (c *conn) queuePong(data string) {
	c.mu.Lock()
	if !c.dead {
		c.pong = append(c.pong[:0], data...)
		c.pongDue = true
	}
	c.mu.Unlock()
	c.kick()
}

// reply queues a reply outside of a command (protocol errors).
func (c *conn) reply(b []byte) {
	c.mu.Lock()
	if !c.dead {
		c.queueValues(b, false)
	}
	c.mu.Unlock()
}

// serve is the connection's reader; it runs in the HTTP handler's
// goroutine. It creates the session, then reads frames and runs them one at
// a time until the peer goes away or the connection closes.
func (c *conn) serve() {
	defer c.l.wg.Done()
	defer c.l.remove(c)
	s, err := c.l.srv.NewSession(c, true)
	if err != nil {
		c.reply([]byte("-" + err.Error() + "\r\n"))
		c.Close()
		return
	}
	c.s = s
	defer c.l.srv.CloseSession(s)
	graceful := c.readLoop()
	if !graceful {
		c.kill()
		return
	}
	c.Close()
}

// readLoop runs frames until the peer closes (graceful), QUIT (graceful),
// or a read error (not graceful).
func (c *conn) readLoop() (graceful bool) {
	timeout := c.l.ReadTimeout
	extend := func() { _ = c.ws.SetReadDeadline(time.Now().Add(timeout)) }
	extend()
	c.ws.SetPongHandler(func(string) error { extend(); return nil })
	c.ws.SetPingHandler(func(data string) error {
		extend()
		c.queuePong(data)
		return nil
	})
	closed := false
	c.ws.SetCloseHandler(func(int, string) error { closed = true; return nil })
	var buf []byte
	// unblocked is closed when the blocking command the session waits in
	// has been served (see awaitUnblock); nil when it is not blocked.
	var unblocked chan struct{}
	for {
		typ, r, err := c.ws.NextReader()
		if err != nil {
			if unblocked != nil {
				select {
				case <-unblocked:
					// Answered -UNBLOCKED by a change of role: the
					// reply goes, then the connection closes.
					return closed || c.s.Quit
				default:
				}
			}
			return closed
		}
		// Until the client authenticates, Redis's small request bounds
		// apply (resp.UnauthenticatedLimits), the frame's size included:
		// it cannot make the server hold large requests.
		limits := c.s.RequestLimits()
		c.p.SetLimits(limits)
		limit := MaxFrame
		if n := limits.MaxFrame(); n > 0 {
			limit = n
		}
		var tooBig bool
		buf, tooBig, err = readFrame(r, buf[:0], limit)
		if err != nil {
			return false
		}
		c.l.srv.AddNetIO(len(buf), 0)
		if !tooBig && typ == websocket.TextMessage && !utf8.Valid(buf) {
			c.failInvalidText()
			return false
		}
		extend()
		if unblocked != nil {
			select {
			case <-unblocked:
				unblocked = nil
			case <-c.done:
				return false
			}
		}
		switch {
		case tooBig && limit < MaxFrame:
			c.reply([]byte("-ERR " + unauthenticatedError(&c.p, buf).Error() + "\r\n"))
			return true
		case tooBig:
			c.reply([]byte("-ERR Protocol error: frame larger than 64 MB\r\n"))
		default:
			c.inbound.Store(int64(len(buf)))
			ok := c.run(buf)
			c.inbound.Store(0)
			if !ok {
				return true
			}
		}
		if cap(buf) > 1<<20 {
			buf = nil // a large frame's buffer goes with it
		}
		if c.s.Blocked() {
			unblocked = c.awaitUnblock()
		}
	}
}

// failInvalidText fails the connection after a text frame that is not
// valid UTF-8, as RFC 6455 section 8.1 requires: replies still queued are
// dropped, a close frame with status 1007 (invalid frame payload data) is
// sent, and the socket is closed. Values that are not UTF-8 travel in
// binary frames.
func (c *conn) failInvalidText() {
	c.mu.Lock()
	c.dead = true // queue nothing more; the writer finds nothing to send
	c.out, c.held = nil, nil
	c.mu.Unlock()
	reason := "invalid UTF-8 in a text frame: send binary frames for such values"
	payload := append([]byte{0x03, 0xef}, reason...) // 1007
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.l.WriteTimeout))
	_, _ = c.nc.Write(appendFrame(nil, opClose, payload))
	c.kill()
}

// awaitUnblock waits, in a goroutine of its own, for the session's blocking
// command to be served, and returns a channel closed when it has been. The
// reader meanwhile goes on reading, so that a peer that disconnects while
// blocked is noticed, but runs nothing until the channel is closed; until
// then only the waiting goroutine touches the session.
func (c *conn) awaitUnblock() chan struct{} {
	ch := make(chan struct{})
	go func() {
		quit := false
		defer func() {
			close(ch)
			if quit {
				// -UNBLOCKED (repl_replica.go): the connection closes
				// after the reply, as Redis closes it; the reader's wait
				// for a frame ends now.
				_ = c.ws.SetReadDeadline(time.Now())
			}
		}()
		for c.s.Blocked() {
			select {
			case <-c.wake:
			case <-c.done:
				return
			}
		}
		c.flushLate()
		quit = c.s.Quit
	}()
	return ch
}

// run executes the command in frame and queues its reply. It reports false
// when the connection must close (QUIT, or closed meanwhile).
func (c *conn) run(frame []byte) bool {
	var args [][]byte
	var err error
	if len(frame) > 0 {
		args, err = c.p.ParseFrame(frame)
	}
	switch {
	case err != nil:
		c.reply([]byte("-ERR " + resp.Sanitize(err.Error()) + "\r\n"))
		// A request past the unauthenticated limits closes the
		// connection, as Redis does; other protocol errors do not.
		return !resp.IsLimitError(err)
	case len(args) == 0:
		c.reply([]byte("-ERR Protocol error: empty command\r\n"))
		return true
	}
	s := c.s
	c.mu.Lock()
	c.executing = true
	c.mu.Unlock()
	s.Exec(args)
	c.l.srv.Commit()
	c.mu.Lock()
	c.executing = false
	dead := c.dead
	if !dead {
		c.queueValues(s.W.B, false)
	}
	if !c.dead && len(c.held) > 0 {
		c.out = append(c.out, c.held...)
		c.frames += c.heldFrames
		c.held, c.heldFrames = c.held[:0], 0
		c.kick()
	}
	c.mu.Unlock()
	c.resetReplies()
	return !dead && !s.Quit
}

// flushLate queues a reply the engine left in the session's buffer after a
// blocking command was served.
func (c *conn) flushLate() {
	if len(c.s.W.B) == 0 {
		return
	}
	c.reply(c.s.W.B)
	c.resetReplies()
}

func (c *conn) resetReplies() {
	if cap(c.s.W.B) > 1<<20 {
		c.s.W.B = nil
		return
	}
	c.s.W.B = c.s.W.B[:0]
}

// writeLoop is the connection's writer: it writes every frame queued since
// its last write in one socket write, pings the peer periodically and
// closes the connection when asked to.
func (c *conn) writeLoop() {
	defer c.l.wg.Done()
	ping := time.NewTicker(c.l.PingInterval)
	defer ping.Stop()
	var spare, pong []byte
	for {
		select {
		case <-c.signal:
		case <-ping.C:
			c.queuePing()
			continue
		case <-c.done:
			return
		}
		c.mu.Lock()
		batch := c.out
		c.out = spare[:0]
		c.frames = 0
		if c.pongDue {
			pong = appendFrame(pong[:0], opPong, c.pong)
			c.pongDue = false
		}
		closing := c.closing && len(c.held) == 0
		c.mu.Unlock()
		// Commit the log once the batch is taken, before frames that may
		// hold pushes leave: a push is queued once the log's effect hook
		// has run, so the log then has the write behind every push of the
		// batch. Committing before taking it would let a push queued
		// meanwhile (during an appendfsync always fsync) leave unlogged.
		c.l.srv.Commit()
		if len(pong) > 0 {
			if !c.write(pong) {
				return
			}
			pong = pong[:0]
		}
		if len(batch) > 0 {
			if !c.write(batch) {
				return
			}
			c.pending.Add(-int64(len(batch)))
			if c.s != nil && c.s.CheckOutput(c.Pending()) {
				c.kill()
				return
			}
		}
		if cap(batch) <= 1<<20 {
			spare = batch
		} else {
			spare = nil
		}
		if closing {
			c.mu.Lock()
			empty := len(c.out) == 0
			c.mu.Unlock()
			if empty {
				c.write(appendFrame(nil, opClose, []byte{0x03, 0xe8})) // 1000, normal closure
				c.kill()
				return
			}
			c.kick()
		}
	}
}

// write writes b to the socket within the write timeout; on failure the
// connection is torn down.
func (c *conn) write(b []byte) bool {
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.l.WriteTimeout))
	n, err := c.nc.Write(b)
	c.l.srv.AddNetIO(0, n)
	if err != nil {
		c.kill()
		return false
	}
	return true
}

// readFrame reads one message into buf. A message longer than limit is
// read to its end and dropped: tooBig is set and out holds the message's
// first bytes, limit of them or more.
func readFrame(r io.Reader, buf []byte, limit int) (out []byte, tooBig bool, err error) {
	for {
		if len(buf) == cap(buf) {
			if len(buf) > limit {
				_, err := io.Copy(io.Discard, r)
				return buf, true, err
			}
			grow := min(max(cap(buf), 4096), limit+1-len(buf))
			buf = slices.Grow(buf, grow)
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			if len(buf) > limit {
				return buf, true, nil
			}
			return buf, false, nil
		}
		if err != nil {
			return buf, false, err
		}
	}
}

// unauthenticatedError returns the protocol error of a frame too big for
// the unauthenticated limits, given its first bytes: the limits error its
// header earns (p has the limits set), else the bulk-length one.
func unauthenticatedError(p *resp.Parser, head []byte) error {
	_, err := p.Parse(head)
	p.Reset()
	if resp.IsLimitError(err) {
		return err
	}
	return resp.ErrUnauthenticatedBulk
}
