package realtime

import (
	"runtime"
	"sync"
	"syscall"
	"time"
)

// A flusher writes what is queued for many connections from one
// goroutine: a connection that receives a frame joins the flusher's list
// (once, however many frames it gets before its turn), and the flusher
// goes through the list writing each connection's frames in one buffer
// with one non-blocking write system call. Fan-out of a channel to N
// connections thus wakes one goroutine, not N, and a connection that gets
// several publications between two turns receives them in one write. A
// write that would block (the peer reads slowly) or a connection that is
// closing hands the connection to a writer goroutine of its own (conn.flush)
// until its queue is empty.
//
// The listener has one flusher per GOMAXPROCS, each connection being
// bound to one of them.
type flusher struct {
	mu   sync.Mutex
	list []*conn
	// spare is the list the flusher last went through, reused.
	spare []*conn
	// running is set while a goroutine goes through the list; it ends
	// when the list is empty, and add starts the next one.
	running bool

	// buf holds the frames of the connection being written.
	buf []byte
}

// fastWriteMax bounds what one connection's turn writes through the
// flusher's buffer; more (a backlog, a large frame) goes to the
// connection's own writer.
const fastWriteMax = 64 << 10

func newFlusher() *flusher { return &flusher{} }

// add puts c on the list; the caller holds c.mu and has set c.scheduled.
func (f *flusher) add(c *conn) {
	f.mu.Lock()
	f.list = append(f.list, c)
	start := !f.running
	f.running = true
	f.mu.Unlock()
	if start {
		go f.run()
	}
}

// run goes through the list, pass after pass, until it is empty. An idle
// server has no flusher goroutine.
func (f *flusher) run() {
	// The publishers that are ready to run go first: what they queue
	// meanwhile goes out in this pass.
	runtime.Gosched()
	for {
		f.mu.Lock()
		list := f.list
		if len(list) == 0 {
			f.running = false
			f.mu.Unlock()
			return
		}
		f.list, f.spare = f.spare[:0], nil
		f.mu.Unlock()
		now := time.Now().UnixNano()
		for i, c := range list {
			f.turn(c, now)
			list[i] = nil
		}
		f.mu.Lock()
		if cap(list) <= 1<<16 {
			f.spare = list[:0]
		}
		f.mu.Unlock()
	}
}

// turn writes what is queued for c, or hands c to a writer of its own.
//
// The write is one write(2) on the socket's descriptor, which is
// non-blocking: net.RawConn.Write, the runtime's way to it, also takes
// the descriptor's lock and resets its poller state, a tenth of the
// flusher's time outside the system call; here inWrite keeps the
// descriptor open instead (closeLocked). It is a system call the runtime
// can hand the flusher's P away from: a raw one cost about as much CPU
// and, on the loaded 2-core machine, cut deliveries per second by a
// third, a flusher descheduled inside a write holding up the publishers.
func (f *flusher) turn(c *conn, now int64) {
	c.mu.Lock()
	if c.closed {
		c.scheduled = false
		c.mu.Unlock()
		return
	}
	if c.final || c.qbytes+len(c.pong)+8 > fastWriteMax {
		c.scheduled = false
		c.writing = true
		c.mu.Unlock()
		go c.flush(nil)
		return
	}
	b := f.buf[:0]
	if c.pongDue {
		b = appendWSFrame(b, wsPong, c.pong)
		c.pongDue = false
	}
	if c.pingDue {
		b = append(b, 0x80|wsPing, 0)
		c.pingDue = false
	}
	data := len(c.queue) > 0
	for i, fr := range c.queue {
		b = append(b, fr...)
		c.queue[i] = nil
	}
	c.queue, c.qbytes = c.queue[:0], 0
	// The socket stays open during the write: closeLocked leaves the
	// close to the flusher while inWrite is set.
	c.inWrite = true
	c.mu.Unlock()

	f.buf = b
	n, err := syscall.Write(c.fd, b)
	n = max(n, 0)
	c.mu.Lock()
	c.inWrite = false
	if c.closed {
		// Closed during the write (killed, or its reader is gone).
		_ = c.nc.Close()
		c.scheduled = false
		c.mu.Unlock()
		return
	}
	if err != nil && err != syscall.EAGAIN && err != syscall.EINTR {
		// The peer is gone: what is queued is dropped.
		c.final = true
		clear(c.queue)
		c.queue, c.qbytes = nil, 0
		c.closeLocked()
		c.scheduled = false
		c.mu.Unlock()
		return
	}
	if data && n > 0 {
		c.lastSend.Store(now)
	}
	if n < len(b) {
		// The socket is full: the connection's own writer waits for it,
		// starting with the rest of these bytes.
		c.scheduled = false
		c.writing = true
		c.mu.Unlock()
		go c.flush(append([]byte(nil), b[n:]...))
		return
	}
	if len(c.queue) == 0 && !c.pongDue && !c.pingDue && !c.final {
		c.scheduled = false
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	f.mu.Lock()
	f.list = append(f.list, c) // next pass
	f.mu.Unlock()
}
