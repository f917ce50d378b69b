package amaquet

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/sync/apikey"
)

// outLimit is the queued output past which the reader stops reading
// until the writer has written it: a client that does not read its
// responses stops being served instead of growing the server's memory.
const outLimit = 4 << 20

// flushAt is the queued output past which the reader hands it to the
// writer without waiting for the end of what it has read.
const flushAt = 64 << 10

// The states of slot.park.
const (
	slotRunning   int32 = iota // the reader runs it (or it is free)
	slotParked                 // its request waits; Wake finishes it
	slotFinishing              // somebody collects its reply
)

// slot is a session of the connection and its request buffers. The
// reader runs requests on its current slot; a request that waits keeps
// its slot until it ends, and the reader goes on with another.
type slot struct {
	c       *conn
	s       *server.Session
	req     commandRequest
	payload []byte
	resp    []byte // the response frame being built
	gen     int    // the conn's auth generation the session's scope is of

	// The waiting request, while parked.
	id       uint64
	reserved int64
	park     atomic.Int32
	// killing is set by a CANCEL that stops the slot's script: its
	// "script killed" reply is then answered CANCELLED.
	killing atomic.Bool
}

// Push drops what the engine pushes outside replies: an Amaquet session
// never subscribes or registers for sync pushes (those commands are
// refused), so nothing is lost.
func (sl *slot) Push([]byte) {}

// Close closes the connection (CLIENT KILL).
func (sl *slot) Close() { sl.c.nc.Close() }

// Wake is called by the engine once the slot's wait has an answer: a
// goroutine of the request's own collects and sends it.
func (sl *slot) Wake() {
	if sl.park.CompareAndSwap(slotParked, slotFinishing) {
		go sl.c.finish(sl)
	}
}

// RemoteAddr returns the peer's address.
func (sl *slot) RemoteAddr() string { return sl.c.remote }

// TransportName names the slot's transport in the connection metrics
// (server.TransportNamer).
func (sl *slot) TransportName() string { return server.TransportAmaquet.String() }

// LocalAddr returns the local address.
func (sl *slot) LocalAddr() string { return sl.c.local }

// Buffered reports the bytes read and not yet run, and the output queued.
func (sl *slot) Buffered() (int, int) {
	return int(sl.c.inbound.Load()), int(sl.c.queued.Load())
}

// conn is one Amaquet connection: a reader goroutine that reads frames
// and runs requests, and a writer goroutine that alone writes frames.
type conn struct {
	l      *Listener
	srv    *server.Server
	nc     net.Conn
	fr     FrameReader
	remote string
	local  string

	cur   *slot // where the reader runs its next command
	slots []*slot
	// authed is set once AUTH succeeded, or at once when no API keys are
	// configured; gen counts AUTHs, so that slots pick up a new scope.
	authed bool
	gen    int
	key    *apikey.Key
	scope  []string
	chans  func([]byte) bool

	mu      sync.Mutex
	active  map[uint64]*slot // parked requests by id
	free    []*slot
	subs    map[string]*subscription
	closed  bool
	nparked atomic.Int32
	// stopping is set when the listener stops.
	stopping atomic.Bool

	// The output: frames queued in out (under outMu) until the reader
	// or the writer writes them (under wmu, which orders the two).
	wmu     sync.Mutex
	outMu   sync.Mutex
	out     []byte
	spare   []byte
	release int64         // budget to release once out is written
	queued  atomic.Int64  // bytes queued and not yet written
	inbound atomic.Int64  // bytes read and not yet run, for CLIENT LIST
	wake    chan struct{} // wakes the writer
	drained chan struct{} // the writer wrote: a reader over outLimit goes on
	done    chan struct{} // closed when the reader ends
	wdone   chan struct{} // closed when the writer ends
}

func newConn(l *Listener, nc net.Conn) *conn {
	c := &conn{
		l:       l,
		srv:     l.srv,
		nc:      nc,
		remote:  server.AddrString(nc.RemoteAddr()),
		local:   server.AddrString(nc.LocalAddr()),
		active:  make(map[uint64]*slot),
		wake:    make(chan struct{}, 1),
		drained: make(chan struct{}, 1),
		done:    make(chan struct{}),
		wdone:   make(chan struct{}),
	}
	c.fr = FrameReader{R: bufio.NewReaderSize(nc, 64<<10), MaxPayload: uint32(l.opt.MaxPayload)}
	return c
}

// stopReading makes the reader end (listener Stop): its next read fails.
func (c *conn) stopReading() {
	c.stopping.Store(true)
	_ = c.nc.SetReadDeadline(time.Unix(1, 0))
}

// readDeadline sets the socket's read deadline, or one already past once
// the listener stops (Stop may have set its own just before).
func (c *conn) readDeadline(t time.Time) {
	if c.stopping.Load() {
		t = time.Unix(1, 0)
	}
	_ = c.nc.SetReadDeadline(t)
}

// serve runs the connection until it ends.
func (c *conn) serve() {
	go c.writer()
	defer c.shutdown()
	if err := c.srv.Admit(server.TransportAmaquet, c.nc.RemoteAddr()); err != nil {
		code := CodeUnauthenticated
		if errors.Is(err, server.ErrMaxClients) {
			code = CodeOverloaded
		}
		c.respondError(0, 0, code, err.Error(), 0)
		return
	}
	first := &slot{c: c}
	s, err := c.srv.NewSession(first, false)
	if err != nil {
		c.respondError(0, 0, CodeOverloaded, err.Error(), 0)
		return
	}
	s.SetProtocol(3)
	first.s = s
	c.slots = append(c.slots, first)
	c.cur = first
	c.authed = !c.authRequired()
	for c.readFrame() {
	}
}

// readFrame reads and handles one frame; it reports false when the
// connection must end.
func (c *conn) readFrame() bool {
	r := c.fr.R
	if r.Buffered() < HeaderSize {
		// Waiting for the client: what is queued goes out now.
		c.flush()
		if r.Buffered() == 0 {
			if !c.checkKey() {
				return false
			}
			var dl time.Time
			if t := c.l.opt.IdleTimeout; t > 0 {
				dl = time.Now().Add(t)
			}
			c.readDeadline(dl)
			if _, err := r.Peek(1); err != nil {
				return false // closed, or idle too long: no frame to answer
			}
		}
		if r.Buffered() < HeaderSize {
			c.readDeadline(time.Now().Add(c.l.opt.ReadTimeout))
		}
	}
	h, err := c.fr.ReadHeader()
	if err != nil {
		var fe *FrameError
		switch {
		case errors.As(err, &fe):
			c.respondError(h.ID, h.Opcode, fe.Code, fe.Msg, 0)
		case errors.Is(err, io.EOF):
		case errors.Is(err, os.ErrDeadlineExceeded):
			c.respondError(h.ID, h.Opcode, CodeProtocolError, "frame header not completed within the read deadline", 0)
		case errors.Is(err, ErrTruncated):
			c.respondError(h.ID, h.Opcode, CodeProtocolError, "connection closed inside a frame header", 0)
		}
		return false
	}
	n := int64(h.Length)
	if !c.l.reserve(n) {
		c.respondError(h.ID, h.Opcode, CodeOverloaded, "the server's payload budget is exhausted", 0)
		return false
	}
	sl := c.cur
	if r.Buffered() < int(h.Length) {
		c.flush()
		c.readDeadline(time.Now().Add(c.l.opt.ReadTimeout))
	}
	sl.payload, err = c.fr.ReadPayload(sl.payload, h.Length)
	if err != nil {
		msg := "connection closed inside a frame payload"
		if errors.Is(err, os.ErrDeadlineExceeded) {
			msg = "frame payload not completed within the read deadline"
		}
		c.respondError(h.ID, h.Opcode, CodeProtocolError, msg, n)
		return false
	}
	c.inbound.Store(int64(r.Buffered()))
	c.dispatch(h, sl.payload, n)
	if c.cur == sl && cap(sl.payload) > 1<<20 {
		// A large payload's buffer is not kept for the next frame.
		sl.payload, sl.req = nil, commandRequest{}
	}
	if c.queued.Load() >= flushAt {
		c.flush()
		for c.queued.Load() > outLimit {
			select {
			case <-c.drained:
			case <-c.wdone:
				return false
			}
		}
	}
	return true
}

// authRequired reports whether requests other than HELLO and AUTH need
// an AUTH first: API keys are configured, or a password is (then, with
// no API keys, nothing can authenticate: the port is closed to commands,
// as it must not bypass requirepass).
func (c *conn) authRequired() bool {
	return c.srv.APIKeys() != nil || c.srv.Config().RequirePass != ""
}

// dispatch handles one well-formed frame; reserved is its payload's
// budget reservation, released once its response is written.
func (c *conn) dispatch(h Header, p []byte, reserved int64) {
	switch h.Opcode {
	case OpHello:
		c.hello(h, p, reserved)
		return
	case OpAuth:
		c.auth(h, p, reserved)
		return
	case OpCommand, OpSubscribe, OpUnsubscribe, OpCancel:
	default:
		c.respondError(h.ID, h.Opcode, CodeUnknownOpcode, "unknown opcode "+strconv.Itoa(int(h.Opcode)), reserved)
		return
	}
	if !c.authed {
		c.respondError(h.ID, h.Opcode, CodeUnauthenticated, "AUTH with an API key first", reserved)
		return
	}
	switch h.Opcode {
	case OpCommand:
		c.command(h, p, reserved)
	case OpSubscribe:
		c.subscribe(h, p, reserved)
	case OpUnsubscribe:
		c.unsubscribe(h, p, reserved)
	case OpCancel:
		c.cancel(h, p, reserved)
	}
}

// command runs a COMMAND request on the current slot: to its end when it
// does not wait, which is every command but the blocking ones and
// scripts; a waiting one is parked and the reader goes on.
func (c *conn) command(h Header, p []byte, reserved int64) {
	if c.nparked.Load() > 0 {
		c.mu.Lock()
		_, dup := c.active[h.ID]
		c.mu.Unlock()
		if dup {
			c.respondError(h.ID, h.Opcode, CodeDuplicateRequest, "request "+strconv.FormatUint(h.ID, 10)+" is still active", reserved)
			return
		}
	}
	if int(c.nparked.Load()) >= c.l.opt.MaxInflight {
		c.respondError(h.ID, h.Opcode, CodeOverloaded, "too many requests in flight on this connection", reserved)
		return
	}
	if c.l.inflight.Add(1) > int64(c.l.opt.GlobalInflight) {
		c.l.inflight.Add(-1)
		c.respondError(h.ID, h.Opcode, CodeOverloaded, "too many requests in flight on this server", reserved)
		return
	}
	sl := c.cur
	if code, msg := c.prepare(sl, p); code != "" {
		c.l.inflight.Add(-1)
		c.respondError(h.ID, h.Opcode, code, msg, reserved)
		return
	}
	s := sl.s
	if cap(s.W.B) > 1<<20 {
		s.W.B = nil
	}
	s.W.B = s.W.B[:0]
	if sl.req.isTxn {
		s.ExecTransaction(sl.req.txn)
	} else {
		s.Exec(sl.req.args)
	}
	if s.Quit {
		// The engine drops the connection (a cross-protocol attack's
		// POST or Host:), as the RESP port does, with no reply.
		c.l.inflight.Add(-1)
		c.l.release(reserved)
		c.nc.Close()
		return
	}
	if waiting, _ := s.Waiting(); !waiting {
		c.l.inflight.Add(-1)
		c.respondReply(sl, h.ID, reserved)
		return
	}
	c.parkSlot(sl, h.ID, reserved)
}

// prepare decodes the request into sl and checks it against what the
// connection may run; it returns an error code and message to refuse it.
func (c *conn) prepare(sl *slot, p []byte) (code, msg string) {
	if err := sl.req.parse(p); err != nil {
		return CodeBadRequest, err.Error()
	}
	if sl.gen != c.gen {
		sl.s.SetKeyScope(c.scope, c.chans)
		sl.s.SetAuthenticated()
		sl.gen = c.gen
	}
	s := sl.s
	db := sl.req.db
	if db >= c.srv.Databases() {
		return CodeBadRequest, "db " + strconv.Itoa(db) + " is out of range (the server has " + strconv.Itoa(c.srv.Databases()) + " databases)"
	}
	if db != 0 && s.Scoped() {
		return CodeForbidden, "an API key's scope is database 0"
	}
	s.SelectDB(db)
	if sl.req.isTxn {
		for _, args := range sl.req.txn {
			if s.Stateful(args) {
				return CodeBadRequest, stateful(args)
			}
		}
		return "", ""
	}
	if s.Stateful(sl.req.args) {
		return CodeBadRequest, stateful(sl.req.args)
	}
	return "", ""
}

// stateful is the refusal of a connection-scoped command.
func stateful(args [][]byte) string {
	name := args[0]
	if len(name) > 64 {
		name = name[:64]
	}
	return "'" + string(name) + "' is connection-scoped: Amaquet requests keep no connection state (use \"transaction\", \"db\", SUBSCRIBE and AUTH frames)"
}

// parkSlot parks the request waiting on sl and moves the reader to a
// free slot.
func (c *conn) parkSlot(sl *slot, id uint64, reserved int64) {
	sl.id, sl.reserved = id, reserved
	c.mu.Lock()
	c.active[id] = sl
	var next *slot
	if n := len(c.free); n > 0 {
		next = c.free[n-1]
		c.free = c.free[:n-1]
	}
	c.mu.Unlock()
	c.nparked.Add(1)
	if next == nil {
		next = &slot{c: c, gen: -1}
		next.s = c.slots[0].s.NewPeer(next)
		c.mu.Lock()
		c.slots = append(c.slots, next)
		c.mu.Unlock()
	}
	c.cur = next
	sl.park.Store(slotParked)
	// The answer may have come before the slot was parked: then Wake
	// found it running and it is collected here.
	if sl.s.Answered() && sl.park.CompareAndSwap(slotParked, slotFinishing) {
		c.finish(sl)
	}
}

// finish collects a parked request's reply and sends it; the slot is free
// again.
func (c *conn) finish(sl *slot) {
	_, cancelled := sl.s.Waiting()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return // shutdown accounted for it
	}
	c.mu.Unlock()
	id := sl.id
	if killed := sl.killing.Swap(false); cancelled || killed && server.ScriptKilled(sl.s.W.B) {
		sl.resp = appendErrorFrame(sl.resp[:0], OpCommand, id, CodeCancelled, "request cancelled")
	} else {
		sl.resp = c.replyFrame(sl.resp[:0], sl.s.W.B, id)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	delete(c.active, id)
	sl.park.Store(slotRunning)
	c.free = append(c.free, sl)
	c.nparked.Add(-1)
	c.l.inflight.Add(-1)
	c.queue(sl.resp, sl.reserved)
	c.mu.Unlock()
	c.kick()
}

// respondReply sends the response of the reply in sl's session.
func (c *conn) respondReply(sl *slot, id uint64, reserved int64) {
	sl.resp = c.replyFrame(sl.resp[:0], sl.s.W.B, id)
	c.queue(sl.resp, reserved)
}

// replyFrame appends the COMMAND response frame of a RESP3 reply.
func (c *conn) replyFrame(b, reply []byte, id uint64) []byte {
	start := len(b)
	b = AppendHeader(b, KindResponse, OpCommand, id, 0)
	b, err := appendReply(b, reply)
	if err != nil {
		b = appendError(b[:start+HeaderSize], CodeInternal, "the server could not map the command's reply to JSON")
	}
	setLength(b[start:])
	return b
}

// setLength writes the payload length into the frame at b.
func setLength(b []byte) {
	n := len(b) - HeaderSize
	b[20], b[21], b[22], b[23] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
}

// appendErrorFrame appends a response frame holding an error envelope.
func appendErrorFrame(b []byte, op uint16, id uint64, code, msg string) []byte {
	start := len(b)
	b = AppendHeader(b, KindResponse, op, id, 0)
	b = appendError(b, code, msg)
	setLength(b[start:])
	return b
}

// respondError queues an error response.
func (c *conn) respondError(id uint64, op uint16, code, msg string, reserved int64) {
	sl := c.cur
	var buf []byte
	if sl != nil {
		buf = sl.resp[:0]
	}
	buf = appendErrorFrame(buf, op, id, code, msg)
	if sl != nil {
		sl.resp = buf
	}
	c.queue(buf, reserved)
}

// respondJSON queues a success response whose result is v.
func (c *conn) respondJSON(id uint64, op uint16, v any, reserved int64) {
	res, err := json.Marshal(v)
	if err != nil {
		c.respondError(id, op, CodeInternal, err.Error(), reserved)
		return
	}
	b := AppendHeader(nil, KindResponse, op, id, 0)
	b = append(b, `{"ok":true,"result":`...)
	b = append(b, res...)
	b = append(b, '}')
	setLength(b)
	c.queue(b, reserved)
}

// queue appends a frame to the output; the writer sends it, then releases
// reserved bytes of the payload budget.
func (c *conn) queue(frame []byte, reserved int64) {
	c.outMu.Lock()
	c.out = append(c.out, frame...)
	c.release += reserved
	c.outMu.Unlock()
	c.queued.Add(int64(len(frame)))
}

// kick wakes the writer.
func (c *conn) kick() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// writer is the connection's one writer: it sends what is queued, the
// subscriptions' events first, whenever it is woken, until the connection
// ends (after a last write of what is queued then).
func (c *conn) writer() {
	defer close(c.wdone)
	for {
		select {
		case <-c.wake:
		case <-c.done:
			c.drainEvents()
			c.write()
			return
		}
		c.drainEvents()
		if !c.write() {
			// The reader's next read fails and it shuts down.
			c.nc.Close()
			return
		}
	}
}

// flush sends what is queued, from the reader about to wait: itself when
// the writer is idle, which saves a goroutine switch per batch of
// requests, else through the writer.
func (c *conn) flush() {
	if c.queued.Load() == 0 {
		return
	}
	if !c.wmu.TryLock() {
		c.kick()
		return
	}
	ok := c.writeLocked()
	c.wmu.Unlock()
	if !ok {
		c.nc.Close() // the reader's next read fails
	}
}

// write sends the queued output; it reports false when the socket failed.
func (c *conn) write() bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked()
}

// writeLocked is write for a caller holding wmu, which orders the
// writes of the reader and the writer.
func (c *conn) writeLocked() bool {
	c.outMu.Lock()
	b, rel := c.out, c.release
	c.out, c.release = c.spare[:0], 0
	c.spare = nil
	c.outMu.Unlock()
	// The requests are answered: their payloads' budget is free once
	// their responses are on their way.
	c.l.release(rel)
	ok := true
	if len(b) > 0 {
		// Nothing leaves before the writes it reports are in the log.
		c.srv.Commit()
		ok = c.send(b)
		c.queued.Add(-int64(len(b)))
	}
	if cap(b) <= 1<<20 {
		c.outMu.Lock()
		c.spare = b[:0]
		c.outMu.Unlock()
	}
	select {
	case c.drained <- struct{}{}:
	default:
	}
	return ok
}

// writeChunk is how much of the output one write deadline covers: a
// client that takes no chunk within the read timeout is gone, one that
// reads slowly is not.
const writeChunk = 256 << 10

// send writes b, each chunk within the read timeout.
func (c *conn) send(b []byte) bool {
	for len(b) > 0 {
		n := min(len(b), writeChunk)
		_ = c.nc.SetWriteDeadline(time.Now().Add(c.l.opt.ReadTimeout))
		if _, err := c.nc.Write(b[:n]); err != nil {
			return false
		}
		b = b[n:]
	}
	return true
}

// shutdown ends the connection: the writer sends what is queued, the
// subscriptions go, waiting requests end, the sessions close. The
// listener's in-flight count gets the waiting requests back only once
// their sessions are closed: a client that finds room again finds their
// waits gone too (INFO's blocked_clients), as Redis ends a client's wait
// as it frees the client.
func (c *conn) shutdown() {
	c.mu.Lock()
	c.closed = true
	subs := c.subs
	c.subs = nil
	var parked int64
	for id, sl := range c.active {
		parked++
		c.l.release(sl.reserved)
		delete(c.active, id)
	}
	slots := c.slots
	c.mu.Unlock()
	for _, sub := range subs {
		sub.remove()
	}
	close(c.done)
	<-c.wdone
	c.nc.Close()
	// What was queued and never written.
	c.outMu.Lock()
	c.l.release(c.release)
	c.release = 0
	c.outMu.Unlock()
	for _, sl := range slots {
		c.srv.CloseSession(sl.s)
	}
	c.l.inflight.Add(-parked)
}
