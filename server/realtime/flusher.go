package realtime

import (
	"errors"
	"net"
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

	// buf holds the frames of the connection being written; write is the
	// flusher's syscall.RawConn write function (a method value made
	// once), n and errno its result.
	buf   []byte
	write func(fd uintptr) bool
	n     int
	errno syscall.Errno
}

// fastWriteMax bounds what one connection's turn writes through the
// flusher's buffer; more (a backlog, a large frame) goes to the
// connection's own writer.
const fastWriteMax = 64 << 10

func newFlusher() *flusher {
	f := &flusher{}
	f.write = f.writeRaw
	return f
}

// writeRaw writes buf to the socket once, never waiting for it. (A raw
// system call, which the runtime cannot hand the flusher's P away from,
// cost about as much CPU and, on the loaded 2-core machine, cut deliveries
// per second by a third: a flusher descheduled inside a write held up the
// publishers.)
func (f *flusher) writeRaw(fd uintptr) bool {
	var err error
	f.n, err = syscall.Write(int(fd), f.buf)
	f.errno, _ = err.(syscall.Errno)
	return true
}

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
	c.mu.Unlock()

	f.buf, f.n, f.errno = b, 0, 0
	// Write fails only on a closed socket or a past deadline, without
	// calling f.write.
	err := c.raw.Write(f.write)
	n := max(f.n, 0)
	if errors.Is(err, net.ErrClosed) || err == nil && f.errno != 0 && f.errno != syscall.EAGAIN && f.errno != syscall.EINTR {
		c.kill()
		c.mu.Lock()
		c.scheduled = false
		c.mu.Unlock()
		return
	}
	if data && n > 0 {
		c.lastSend.Store(now)
	}
	c.mu.Lock()
	if n < len(b) {
		// The socket is full (or its write deadline, which only the
		// connection's own writer sets, has passed): that writer waits
		// for it, starting with the rest of these bytes.
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
