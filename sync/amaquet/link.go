package amaquet

import (
	"bufio"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
)

// link is one TCP connection: a reader goroutine that routes responses to
// their calls by request ID and events to their subscriptions, and a
// writer goroutine that batches queued frames into few writes.
type link struct {
	nc   net.Conn
	r    *bufio.Reader
	out  chan *[]byte // frames to write; the writer returns them to pool
	pool *sync.Pool
	rbuf []byte // the payload being routed, reused by the reader
	// woken counts the Do callers woken by a response that have not yet
	// returned from Do: the writer waits for them so that the requests
	// they make next leave in one write with the others, and the server
	// reads them in one read.
	woken      atomic.Int64
	ready      chan struct{} // receives a value when woken drops to 0
	done       chan struct{} // closed when the link is dead
	once       sync.Once
	err        error // why it died; set before done is closed
	maxPayload int
	slots      chan struct{} // one per active command, with WaitForSlot
	down       func(*link)

	mu    sync.Mutex
	calls map[uint64]*Call // nil once dead
	subs  map[uint64]*Subscription
}

func (l *link) dead() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// cause returns why the link died (nil while it is alive).
func (l *link) cause() error {
	if !l.dead() {
		return nil
	}
	return l.err
}

// kill ends the link once: it closes the socket and completes every call
// in flight with a *ConnError carrying err.
func (l *link) kill(err error) {
	l.once.Do(func() {
		l.err = err
		close(l.done)
		l.nc.Close()
		l.mu.Lock()
		calls := l.calls
		l.calls = nil
		l.mu.Unlock()
		for _, c := range calls {
			c.err = &ConnError{Err: err}
			c.unwatch()
			c.finish()
		}
		if l.down != nil {
			l.down(l)
		}
	})
}

// register adds a call awaiting its response; false when the link is dead.
func (l *link) register(c *Call) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.calls == nil {
		return false
	}
	l.calls[c.ID] = c
	return true
}

// release frees the slot c holds, if any.
func (l *link) release(c *Call) {
	if c.slot {
		c.slot = false
		<-l.slots
	}
}

// forget drops a call that was never sent.
func (l *link) forget(id uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.calls != nil {
		delete(l.calls, id)
	}
}

// frame returns a frame of payload for the writer, from the pool.
func (l *link) frame(op Opcode, id uint64, payload []byte) *[]byte {
	f, _ := l.pool.Get().(*[]byte)
	if f == nil {
		f = new([]byte)
	}
	*f = AppendFrame((*f)[:0], KindRequest, op, id, payload)
	return f
}

// sendCancel queues a CANCEL (request ID id) of request target; its
// response is discarded.
func (l *link) sendCancel(id, target uint64) {
	f := l.frame(OpCancel, id, cancelPayload(target))
	select {
	case l.out <- f:
	case <-l.done:
	}
}

func (l *link) readLoop(wg *sync.WaitGroup) {
	defer wg.Done()
	hdr := make([]byte, HeaderSize)
	for {
		f, err := l.readFrame(hdr)
		if err != nil {
			l.kill(err)
			return
		}
		if f.Kind == KindResponse && f.ID == 0 {
			// Request ID 0 is not ours: the server ends the connection
			// (a revoked API key) and says why.
			if _, err := parseEnvelope(f.Payload); err != nil {
				l.kill(err)
				return
			}
		}
		l.route(f)
	}
}

// readFrame reads the next frame, its payload in l.rbuf (valid until the
// next call: route copies what it keeps).
func (l *link) readFrame(hdr []byte) (Frame, error) {
	if cap(l.rbuf) > 1<<20 {
		l.rbuf = nil // keep no large buffer alive after a large response
	}
	f, err := readFrame(l.r, hdr, l.rbuf, HardMaxPayload)
	l.rbuf = f.Payload
	return f, err
}

// route hands a frame to its call or subscription; a response nobody
// waits for (a forgotten call, a CANCEL's answer) is dropped.
func (l *link) route(f Frame) {
	l.mu.Lock()
	if f.Kind == KindEvent {
		s := l.subs[f.ID]
		l.mu.Unlock()
		if s != nil {
			s.deliver(f.Payload)
		}
		return
	}
	c := l.calls[f.ID]
	if c != nil {
		delete(l.calls, f.ID)
	}
	l.mu.Unlock()
	if c != nil {
		c.payload = append(c.payload[:0], f.Payload...)
		c.unwatch()
		l.release(c)
		c.finish()
	}
}

func (l *link) writeLoop(wg *sync.WaitGroup) {
	defer wg.Done()
	w := bufio.NewWriterSize(l.nc, 64<<10)
	for {
		select {
		case <-l.done:
			return
		case f := <-l.out:
			_, err := w.Write(*f)
			l.pool.Put(f)
			// Let the callers woken by the last responses queue their next
			// requests, so that they leave in one write (and the server
			// reads them in one read) instead of one write each: wait
			// (without spinning, so that the other processor can run them)
			// until every woken caller has run, and yield until a yield
			// brings no new request.
			for err == nil {
				select {
				case <-l.ready: // stale: from before
				default:
				}
				if l.woken.Load() > 0 {
					select {
					case <-l.ready:
					case <-l.done:
						return
					}
				}
				runtime.Gosched()
				n := 0
				for more := true; more && err == nil; {
					select {
					case f = <-l.out:
						_, err = w.Write(*f)
						l.pool.Put(f)
						n++
					default:
						more = false
					}
				}
				if n == 0 && l.woken.Load() <= 0 {
					break
				}
			}
			if err == nil {
				err = w.Flush()
			}
			if err != nil {
				l.kill(err)
				return
			}
		}
	}
}

// syncCall writes one request and reads frames until its response, before
// the link's goroutines run (HELLO, AUTH, re-subscription); events read
// meanwhile go to their subscriptions. It returns the result or the
// *Error of the envelope.
func (l *link) syncCall(id uint64, op Opcode, payload []byte) ([]byte, error) {
	if _, err := l.nc.Write(AppendFrame(nil, KindRequest, op, id, payload)); err != nil {
		return nil, &ConnError{Err: err}
	}
	hdr := make([]byte, HeaderSize)
	for {
		f, err := ReadFrame(l.r, hdr, HardMaxPayload)
		if err != nil {
			return nil, &ConnError{Err: err}
		}
		if f.Kind == KindEvent {
			l.route(f)
			continue
		}
		if f.ID == 0 && f.ID != id {
			if _, err := parseEnvelope(f.Payload); err != nil {
				return nil, err // the server refused the connection
			}
		}
		if f.ID != id {
			continue
		}
		if f.Opcode != op {
			return nil, fmt.Errorf("%w: response to opcode %d has opcode %d", ErrBadFrame, op, f.Opcode)
		}
		return parseEnvelope(f.Payload)
	}
}
