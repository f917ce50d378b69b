package realtime

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
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
// After a pass that wrote to many connections (a burst of fan-out), the
// flusher lets the publishing settle before its next pass (see settle):
// the publications that arrive meanwhile go out together, several frames
// in each connection's one write. A write costs about the same whatever
// it carries, so the write system calls, most of the server's CPU in
// fan-out, follow the passes, not the publications. The first pass of a
// run never waits: a message published on a quiet server goes out at
// once.
//
// A long pass also lets the publishers in every yieldEvery (see yielder):
// what they publish then goes out to the connections the pass has not
// reached yet, in this pass's writes.
//
// The listener has one flusher per GOMAXPROCS, each connection being
// bound to one of them.
type flusher struct {
	// published is the listener's latest publication delivered to a
	// connection (Listener.last): it changes with each new one, which is
	// how settle sees that publishing goes on.
	published *atomic.Pointer[encodedMessage]

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

// A pass that wrote to at least burstConns connections is a burst of
// fan-out, after which the flusher waits for publishing to settle: checking
// every settleStep for a new publication, and at most as long as the pass
// took, so that under sustained publishing at least half of the flusher's
// time goes to writing, and a publication waits at most one pass more.
const (
	burstConns = 64
	settleStep = 100 * time.Microsecond
)

func newFlusher(published *atomic.Pointer[encodedMessage]) *flusher {
	return &flusher{published: published}
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
	// The yields of this run's passes share a pipe, closed when it ends.
	var y yielder
	defer y.close()
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
		start := time.Now()
		now := start.UnixNano()
		last := start
		for i, c := range list {
			f.turn(c, now)
			list[i] = nil
			if i%yieldCheck == yieldCheck-1 && i+1 < len(list) && time.Since(last) >= yieldEvery {
				y.yield()
				last = time.Now()
			}
		}
		f.mu.Lock()
		if cap(list) <= 1<<16 {
			f.spare = list[:0]
		}
		f.mu.Unlock()
		if len(list) >= burstConns {
			f.settle(time.Since(start))
		}
	}
}

// A pass yields to the goroutines the network has made ready every
// yieldEvery of writing (checked every yieldCheck connections; see
// yielder).
const (
	yieldEvery = time.Millisecond
	yieldCheck = 16
)

// A yielder lets the goroutines the network has made ready run in the
// middle of a flusher's pass, then returns: the readers of Publish frames
// that arrived meanwhile fan their publications out, and the connections
// the pass has not reached yet take them in this pass's write. Without it
// a pass over a thousand connections holds the listener's only P (the
// benchmark's GOMAXPROCS 1) for its whole length, since a write system
// call gives the P away only when it lasts past a tick of the runtime's
// monitor (20 us or more): every publication that arrives during
// the pass waits for the next one, and each connection's write carries
// the publications of one pass only (8.5 frames a write in the 1000
// subscriber fan-out with 8 messages in flight, 11 with the yield: a
// quarter fewer writes, the server's and the subscribers' main cost).
//
// The runtime looks at the network only once its run queues are empty,
// and a timer of less than a millisecond can leave the P idle until the
// next millisecond tick of its poller; so the flusher waits on a pipe of
// its own instead, made readable by a goroutine it starts first: the
// scheduler runs that goroutine, finds nothing else queued, polls the
// network, and gets the flusher back together with the publishers' readers,
// which the flusher lets go first (Gosched). When nothing came in, a yield
// costs two system calls and a few goroutine switches.
type yielder struct {
	r, w *os.File
}

func (y *yielder) yield() {
	if y.r == nil {
		r, w, err := os.Pipe()
		if err != nil {
			return
		}
		y.r, y.w = r, w
	}
	go y.w.Write([]byte{0})
	var b [1]byte
	if _, err := y.r.Read(b[:]); err != nil {
		return
	}
	runtime.Gosched()
}

// close releases the pipe, if a yield made one.
func (y *yielder) close() {
	if y.r != nil {
		_ = y.r.Close()
		_ = y.w.Close()
	}
}

// settle waits while publications keep coming, for at most limit: it
// returns after a step of settleStep (longer when the runtime finds
// nothing else to do: its timers wake an idle thread to the millisecond)
// in which no new publication reached a connection. A publisher that
// fans a message out to many connections runs while the flusher sleeps
// here, and so does the next, instead of each of them splitting the
// connections' writes.
//
// In the fan-out benchmark to 1000 subscribers (bench/realtime, with a
// window of 8 messages in flight) a pass takes about 8 ms and the wait 2
// to 5: without it each pass carried what the publishers had sent during
// the one before, 2 to 5 messages, with it every pass carries the 8.
func (f *flusher) settle(limit time.Duration) {
	deadline := time.Now().Add(limit)
	for {
		seen := f.published.Load()
		time.Sleep(min(settleStep, time.Until(deadline)))
		if f.published.Load() == seen || !time.Now().Before(deadline) {
			return
		}
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
