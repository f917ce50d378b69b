package realtime

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/server"
)

// conn is one realtime connection. Its reader (serve) reads frames and runs
// their requests one at a time; the state those requests change (grant,
// subscriptions, attachments, members, the publish window) is the
// reader's alone. What is sent goes through the queue, guarded by mu: the
// order frames are queued in is the order the peer receives them. While
// the queue is not empty the connection is either on its flusher's list
// (scheduled) or written by a writer goroutine of its own (writing, see
// flush), never both.
type conn struct {
	// The output side comes first: each delivery of a publication and
	// each flusher turn read these fields, kept together so that fan-out
	// to many connections reads one or two cache lines of each instead
	// of five.
	l  *Listener
	fl *flusher

	mu        sync.Mutex
	echo      bool // the peer receives its own publications
	scheduled bool // on the flusher's list, or being written by it
	writing   bool // a flush goroutine runs
	// final is set once the last frames (a close frame, after a Nack or
	// not) are queued: nothing more is queued.
	final      bool
	readerGone bool // the reader has returned: the writer closes the socket
	closed     bool // the socket is closed, or is once the flusher's write returns
	inWrite    bool // the flusher is writing to fd, outside mu
	// pongDue asks the writer for a pong with payload pong (owed to the
	// peer's latest ping), pingDue for a ping. Control frames are written
	// before the queue and are not data: they do not put off the
	// Heartbeat a browser's client, which cannot see them, relies on.
	pongDue bool
	pingDue bool
	// fd is nc's socket descriptor, which the flusher writes to with
	// write(2) (see flusher.turn); -1: no flusher.
	fd        int
	queue     [][]byte // complete WebSocket frames, in order
	qbytes    int
	recent    [4]*server.BusMessage // the latest publications queued (see deliverOnce)
	recentPos int
	lastSend  atomic.Int64 // unix nanoseconds of the latest data frame written
	pong      []byte
	spare     [][]byte
	authGen   int // counts Auth swaps, so a stale expiry timer does nothing

	ws   *websocket.Conn
	nc   net.Conn
	sess *server.Session // the engine's record of the connection (session.go)
	id   string

	// The reader's state.
	grant    *grant
	subs     map[string]*subscription // by the Subscribe's channel string
	attached map[string]struct{}
	entered  map[string]map[string]struct{} // channel → client ids entered
	winStart time.Time                      // the publish rate window
	winCount int

	// capab is the grant's capability, read by deliveries of glob
	// subscriptions on publishers' goroutines.
	capab atomic.Pointer[grant]

	// writeDeadline is the socket's write deadline, unix nanoseconds;
	// only the writer (one at a time) uses it.
	writeDeadline int64

	lastRecv atomic.Int64 // unix nanoseconds of the latest frame read
	beat     *time.Timer
	expiry   *time.Timer
}

func newConn(l *Listener, wsc *websocket.Conn, echo bool) *conn {
	c := &conn{l: l, ws: wsc, nc: wsc.NetConn(), fd: -1, fl: l.flusherFor(), id: newConnectionID(), echo: echo}
	if sc, ok := c.nc.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			_ = raw.Control(func(fd uintptr) { c.fd = int(fd) })
		}
	}
	now := time.Now().UnixNano()
	c.lastSend.Store(now)
	c.lastRecv.Store(now)
	// gorilla answers pings and close frames by writing to the socket
	// itself; here the connection's writer writes every frame instead.
	wsc.SetPingHandler(func(data string) error {
		c.extend()
		c.mu.Lock()
		if !c.final {
			c.pong = append(c.pong[:0], data...)
			c.pongDue = true
			c.startWriterLocked()
		}
		c.mu.Unlock()
		return nil
	})
	wsc.SetPongHandler(func(string) error { c.extend(); return nil })
	wsc.SetCloseHandler(func(code int, _ string) error {
		if code == websocket.CloseNoStatusReceived {
			code = websocket.CloseNormalClosure
		}
		c.finish(nil, code, "", true)
		return nil
	})
	return c
}

// newConnectionID returns 128 random bits in base64url: 22 characters no
// one can guess.
func newConnectionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// enqueue queues frame f. It never blocks: a connection whose queue passes
// its bounds is a slow consumer and is cut off, so that it never holds up
// a publisher or another connection.
func (c *conn) enqueue(f []byte) {
	c.mu.Lock()
	c.enqueueLocked(f)
	c.mu.Unlock()
}

func (c *conn) enqueueLocked(f []byte) {
	if c.final {
		return
	}
	c.queue = append(c.queue, f)
	c.qbytes += len(f)
	if len(c.queue) > c.l.opts.MaxQueueFrames || c.qbytes > c.l.opts.MaxQueueBytes {
		// The queue is dropped; a writer blocked on a peer that does not
		// read gives up within WriteTimeout.
		c.finishLocked(appendNack(nil, nil, codeDisconnected, "", "slow consumer"), codeDisconnected, "slow consumer", false)
		return
	}
	c.startWriterLocked()
}

// deliverOnce queues the Message frame f of publication key unless it was
// just queued: a connection receives a publication once even when several
// of its subscriptions match its channel.
func (c *conn) deliverOnce(key *server.BusMessage, f []byte) {
	c.mu.Lock()
	for _, k := range c.recent {
		if k == key {
			c.mu.Unlock()
			return
		}
	}
	c.recent[c.recentPos] = key
	c.recentPos = (c.recentPos + 1) % len(c.recent)
	c.enqueueLocked(f)
	c.mu.Unlock()
}

// startWriterLocked has what is queued written: by the flusher, or by a
// writer of the connection's own when it has no flusher or is closing.
func (c *conn) startWriterLocked() {
	if c.writing || c.scheduled || c.closed {
		return
	}
	if c.fd < 0 || c.final {
		c.writing = true
		go c.flush(nil)
		return
	}
	c.scheduled = true
	c.fl.add(c)
}

// finish queues the connection's last frames: the Nack nack (nil for none)
// then a close frame with code and reason. What is already queued goes
// first when keep is set, and is dropped otherwise.
func (c *conn) finish(nack []byte, code int, reason string, keep bool) {
	c.mu.Lock()
	c.finishLocked(nack, code, reason, keep)
	c.mu.Unlock()
}

func (c *conn) finishLocked(nack []byte, code int, reason string, keep bool) {
	if c.final {
		return
	}
	if !keep {
		clear(c.queue)
		c.queue, c.qbytes = c.queue[:0], 0
	}
	if nack != nil {
		f := wsFrame(wsText, nack)
		c.queue = append(c.queue, f)
		c.qbytes += len(f)
	}
	c.queue = append(c.queue, closeFrame(code, reason))
	c.final = true
	c.startWriterLocked()
}

// isFinal reports whether the connection is closing.
func (c *conn) isFinal() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.final
}

// kill closes the socket at once, dropping what is queued.
func (c *conn) kill() {
	c.mu.Lock()
	c.final = true
	clear(c.queue)
	c.queue, c.qbytes = nil, 0
	c.closeLocked()
	c.mu.Unlock()
}

// closeLocked closes the socket, or has the flusher close it when its
// write returns: the descriptor it writes to is not closed (and so not
// reused) under it.
func (c *conn) closeLocked() {
	if !c.closed {
		c.closed = true
		if !c.inWrite {
			_ = c.nc.Close()
		}
	}
}

// flush is the connection's own writer, for a peer that does not take
// its bytes at once, a connection that is closing, or one without a
// flusher: it writes rest (what the flusher could not), then every frame
// queued since its last write in one system call, until the queue is
// empty, waiting for the socket as long as WriteTimeout. After the last
// frames it half-closes the socket and gives the peer CloseWait to answer
// the close frame, or closes it when the reader is already gone.
func (c *conn) flush(rest []byte) {
	if rest != nil {
		c.armWriteDeadline()
		if _, err := c.nc.Write(rest); err != nil {
			c.kill()
			c.mu.Lock()
			c.writing = false
			c.mu.Unlock()
			return
		}
		c.lastSend.Store(time.Now().UnixNano())
	}
	for {
		c.mu.Lock()
		if len(c.queue) == 0 && !c.pongDue && !c.pingDue || c.closed {
			c.writing = false
			if c.final && !c.closed {
				if c.readerGone {
					c.closeLocked()
				} else {
					if tc, ok := c.nc.(*net.TCPConn); ok {
						_ = tc.CloseWrite()
					}
					_ = c.nc.SetReadDeadline(time.Now().Add(c.l.opts.CloseWait))
				}
			}
			c.mu.Unlock()
			return
		}
		batch := c.queue
		c.queue, c.spare = c.spare[:0], nil
		c.qbytes = 0
		var ctrl []byte
		if c.pongDue {
			ctrl = wsFrame(wsPong, c.pong)
			c.pongDue = false
		}
		if c.pingDue {
			ctrl = append(ctrl, 0x80|wsPing, 0)
			c.pingDue = false
		}
		c.mu.Unlock()

		c.armWriteDeadline()
		var err error
		if ctrl != nil {
			_, err = c.nc.Write(ctrl)
		}
		if err == nil && len(batch) > 0 {
			bufs := net.Buffers(batch)
			_, err = bufs.WriteTo(c.nc)
		}
		if err != nil {
			c.kill()
			c.mu.Lock()
			c.writing = false
			c.mu.Unlock()
			return
		}
		if len(batch) > 0 {
			c.lastSend.Store(time.Now().UnixNano())
		}
		clear(batch)
		c.mu.Lock()
		if cap(batch) <= 1024 {
			c.spare = batch[:0]
		}
		c.mu.Unlock()
	}
}

// armWriteDeadline gives the next write at least half of WriteTimeout and
// at most all of it, moving the socket's deadline only when less than half
// is left: setting a deadline costs a timer update, and a busy writer
// writes often.
func (c *conn) armWriteDeadline() {
	now := time.Now().UnixNano()
	if c.writeDeadline-now >= int64(c.l.opts.WriteTimeout/2) {
		return
	}
	c.writeDeadline = now + int64(c.l.opts.WriteTimeout)
	_ = c.nc.SetWriteDeadline(time.Unix(0, c.writeDeadline))
}

// extend moves the idle deadline: the peer has sent something.
func (c *conn) extend() {
	if !c.isFinal() {
		if c.sess != nil {
			c.sess.NoteInput() // CLIENT LIST's idle
		}
		now := time.Now()
		c.lastRecv.Store(now.UnixNano())
		_ = c.nc.SetReadDeadline(now.Add(c.l.opts.IdleTimeout))
	}
}

// heartbeat runs on the heartbeat timer: after HeartbeatInterval without
// a data frame written it queues a Heartbeat; after HeartbeatInterval
// without a frame read it sends a WebSocket ping, which any WebSocket
// client (a browser included) answers by itself with a pong: a live
// client that only listens is not taken for a dead one at IdleTimeout.
// Then it sets the timer again. An idle connection whose credential was
// revoked meanwhile is ended here.
func (c *conn) heartbeat() {
	if c.isFinal() {
		return
	}
	if c.revoked() {
		c.revoke()
		return
	}
	every := c.l.opts.HeartbeatInterval
	now := time.Now().UnixNano()
	idle := time.Duration(now - c.lastSend.Load())
	if idle >= every {
		c.enqueue(wsFrame(wsText, appendHeartbeat(nil, nil)))
		idle = 0
	}
	if silent := time.Duration(now - c.lastRecv.Load()); silent >= every {
		c.mu.Lock()
		if !c.final {
			c.pingDue = true
			c.startWriterLocked()
		}
		c.mu.Unlock()
	} else {
		idle = max(idle, silent) // the timer also serves the next ping
	}
	c.beat.Reset(every - idle)
}

// drain reads and drops frames until the peer answers the close frame or
// the socket is closed, then closes it: for a connection that was refused
// at connect.
func (c *conn) drain() {
	for {
		if _, _, err := c.ws.NextReader(); err != nil {
			break
		}
	}
	c.readerDone()
}

// readerDone marks the reader gone and closes the socket, unless the
// writer is still sending the last frames (it closes it then).
func (c *conn) readerDone() {
	c.mu.Lock()
	c.readerGone = true
	c.final = true
	if !c.writing && !c.scheduled {
		c.closeLocked()
	}
	c.mu.Unlock()
}

// serve runs the connection for grant g: Connected, then every frame's
// request until the peer goes away or the connection closes, then the
// cleanup (subscriptions, presence, the key's slot).
func (c *conn) serve(g *grant) {
	c.setGrant(g)
	c.subs = make(map[string]*subscription)
	c.enqueue(wsFrame(wsText, appendConnected(nil, c.id)))
	c.beat = time.AfterFunc(c.l.opts.HeartbeatInterval, c.heartbeat)
	defer func() {
		c.beat.Stop()
		c.mu.Lock()
		if c.expiry != nil {
			c.expiry.Stop()
		}
		c.mu.Unlock()
		c.cleanup()
		c.l.release(c.grant.keyID)
	}()
	err := c.readLoop()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() && !c.isFinal() {
		msg := fmt.Sprintf("no frame for %v", c.l.opts.IdleTimeout)
		c.finish(appendNack(nil, nil, codeDisconnected, "", msg), codeDisconnected, msg, true)
	}
	c.readerDone()
}

// readLoop reads frames and runs them until a read fails, which it
// returns.
func (c *conn) readLoop() error {
	c.extend()
	for {
		typ, r, err := c.ws.NextReader()
		if err != nil {
			return err
		}
		frame, tooBig, err := readFrame(r, MaxMessageSize)
		if err != nil {
			return err
		}
		if c.isFinal() {
			putBuf(frame)
			continue // closing: nothing more is served
		}
		c.extend()
		switch {
		case tooBig:
			c.nack(nil, codeTooLarge, "", fmt.Sprintf("frame larger than %d bytes", MaxMessageSize))
		case typ != websocket.TextMessage:
			c.nack(nil, codeBadRequest, "", "binary frames are not served: send one JSON object per text frame")
		default:
			req, ferr := decodeRequest(*frame)
			if ferr != nil {
				c.nack(ferr.id, ferr.code, "", ferr.message)
			} else {
				c.run(req)
			}
		}
		putBuf(frame)
	}
}

// bufs holds frame buffers between reads, so an idle connection holds
// none.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func putBuf(b *[]byte) {
	if cap(*b) <= MaxMessageSize+1 {
		*b = (*b)[:0]
		bufs.Put(b)
	}
}

// readFrame reads one message of up to limit bytes into a pooled buffer. A
// longer message is read to its end and dropped: tooBig is set.
func readFrame(r io.Reader, limit int) (buf *[]byte, tooBig bool, err error) {
	buf = bufs.Get().(*[]byte)
	b := (*buf)[:0]
	for {
		if len(b) == cap(b) {
			if len(b) > limit {
				*buf = b[:0]
				_, err := io.Copy(io.Discard, r)
				return buf, true, err
			}
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			*buf = b
			return buf, len(b) > limit, nil
		}
		if err != nil {
			*buf = b
			return buf, false, err
		}
	}
}

// ack queues the Ack of a request that had an id.
func (c *conn) ack(id []byte) {
	if id != nil {
		c.enqueue(wsFrame(wsText, appendAck(nil, id)))
	}
}

// nack queues a Nack: failures are never silent, whether or not the
// request had an id.
func (c *conn) nack(id []byte, code int, channel, message string) {
	c.enqueue(wsFrame(wsText, appendNack(nil, id, code, channel, message)))
}
