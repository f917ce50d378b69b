package tcp

import (
	"context"
	"time"
)

// Every connection keeps its unparsed input in a query buffer of its own,
// sized as Redis sizes a client's querybuf (networking.c), so that CLIENT
// LIST's qbuf and qbuf-free are the bytes it really holds:
//
//   - a read makes room for at least ioBufLen more bytes (PROTO_IOBUF_LEN);
//     a buffer holding a partial request grows by doubling;
//   - a request with a big argument (bigArg, PROTO_MBULK_BIG_ARG) grows the
//     buffer to what it needs and no further, as Redis's non-greedy growth;
//   - the event loop's cron (cronQueryBuffers, every connection about once a
//     second, clientsCronResizeQueryBuffer) frees the free space of a buffer
//     idle for more than 2 seconds, and trims a buffer larger than resizeAt
//     (PROTO_RESIZE_THRESHOLD) that is more than twice its peak since the
//     last visit down to that peak.
//
// gnet reads into its event loop's buffer and OnTraffic takes all of it,
// so that gnet holds no input for the connection between two reads. When
// the connection's buffer is empty, the requests of a read are run from
// gnet's buffer where they are, and only what is left of the read (part
// of a request) is copied into the connection's buffer, whose room is
// still sized as for the read (reserve): copying every read costs a cache
// miss per 64 bytes on 50 connections' buffers, 2% of the CPU of a
// pipelined SET of 100-byte values.
const (
	ioBufLen = 16 << 10
	bigArg   = 32 << 10
	resizeAt = 32 << 10
	// cronPeriod is the time between two cron passes of the event loops
	// (Redis's clientsCron at hz 10); a pass visits a tenth of the
	// connections, at least cronMin of them.
	cronPeriod = 100 * time.Millisecond
	cronMin    = 5
)

// queryBuf is a connection's query buffer; only its event loop uses it.
type queryBuf struct {
	b []byte
	// peak is the most room a read wanted since the cron's last visit.
	peak int
}

// add appends in, first making room as Redis would for a read: need is
// the size of the pending request when the parser knows it (0 if not).
func (q *queryBuf) add(in []byte, need int) {
	n := len(q.b)
	want := n + max(len(in), ioBufLen)
	if need >= bigArg {
		// A big argument: room for it, no more, reached by doubling, so
		// that a length the client only announced allocates nothing.
		want = max(n+len(in), min(need, 2*cap(q.b)))
	}
	q.peak = max(q.peak, want)
	if cap(q.b) < n+len(in) || cap(q.b) == 0 {
		size := want
		if n > 0 && need < bigArg {
			size = max(want, 2*cap(q.b))
		}
		b := make([]byte, n, size)
		copy(b, q.b)
		q.b = b
	}
	q.b = append(q.b, in...)
}

// reserve makes the room a read of n bytes makes, when the buffer is
// empty and the read is run where gnet put it.
func (q *queryBuf) reserve(n int) {
	want := max(n, ioBufLen)
	q.peak = max(q.peak, want)
	if cap(q.b) < want {
		q.b = make([]byte, 0, want)
	}
}

// consume drops the first off bytes, which have been run.
func (q *queryBuf) consume(off int) {
	if off >= len(q.b) {
		q.b = q.b[:0]
		return
	}
	if off > 0 {
		q.b = q.b[:copy(q.b, q.b[off:])]
	}
}

// cron is clientsCronResizeQueryBuffer: idle is the seconds since the
// client last sent a request, need the size of its pending request (0 if
// unknown). It reports whether the buffer changed.
func (q *queryBuf) cron(idle int64, need int) bool {
	size, free := cap(q.b), cap(q.b)-len(q.b)
	resized := false
	if free > 4<<10 {
		switch {
		case idle > 2:
			q.resize(len(q.b))
			resized = true
		case size > resizeAt && size/2 > q.peak:
			q.resize(max(len(q.b), q.peak, need))
			resized = true
		}
	}
	q.peak = max(len(q.b), need)
	return resized
}

// resize moves the content into a buffer of size bytes (none when 0).
func (q *queryBuf) resize(size int) {
	if size == 0 {
		q.b = nil
		return
	}
	b := make([]byte, len(q.b), size)
	copy(b, q.b)
	q.b = b
}

// publish records the buffer's sizes for CLIENT LIST, which other
// goroutines run.
func (c *conn) publish() {
	c.inbound.Store(int64(len(c.q.b)))
	c.qfree.Store(int64(cap(c.q.b) - len(c.q.b)))
}

// QueryFree reports the free bytes of the connection's query buffer
// (CLIENT LIST's qbuf-free). Any goroutine may call it.
func (c *conn) QueryFree() int { return int(c.qfree.Load()) }

// cronQueryBuffers runs on gnet's ticker goroutine: it has every event
// loop run its share of the query buffer cron.
func (l *Listener) cronQueryBuffers() {
	l.loopsMu.Lock()
	defer l.loopsMu.Unlock()
	for _, lp := range l.pending {
		_ = lp.el.Execute(context.Background(), lp.cron)
	}
}

// runCron runs on the event loop: it visits the next tenth of its
// connections (at least cronMin), so that each is seen about once a
// second.
func (lp *loopPushes) runCron(context.Context) error {
	n := min(len(lp.all), max(cronMin, len(lp.all)/10))
	for range n {
		if lp.next >= len(lp.all) {
			lp.next = 0
		}
		c := lp.all[lp.next]
		lp.next++
		if c.q.cron(c.s.IdleSeconds(), c.p.Need()) {
			c.publish()
		}
	}
	return nil
}

// track adds c to its loop's connections; on the event loop.
func (lp *loopPushes) track(c *conn) {
	c.slot = len(lp.all)
	lp.all = append(lp.all, c)
}

// untrack removes c from its loop's connections; on the event loop.
func (lp *loopPushes) untrack(c *conn) {
	last := len(lp.all) - 1
	if c.slot < 0 || c.slot > last || lp.all[c.slot] != c {
		return
	}
	lp.all[c.slot] = lp.all[last]
	lp.all[c.slot].slot = c.slot
	lp.all[last] = nil
	lp.all = lp.all[:last]
	c.slot = -1
}
