// Package tcp serves RESP over TCP on a gnet event loop. It parses pipelined
// requests with the resp package, runs them through the engine's sessions and
// writes every reply of one read in a single write.
package tcp

import (
	"context"
	"log"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/panjf2000/gnet/v2/pkg/logging"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server"
)

// flushAt is the reply size past which replies are written before the rest
// of a pipeline is processed, bounding the reply buffer.
const flushAt = 256 << 10

// Listener is the RESP/TCP transport of one server.
type Listener struct {
	gnet.BuiltinEventEngine

	srv   *server.Server
	addr  string
	loops int
	eng   gnet.Engine
	ready chan struct{}
	// booted is set by the first OnTick, when the event loops run.
	booted bool
	// idleDir holds the engine's unreachable listener until it is bound.
	idleDir string

	// mu guards the listening sockets (listen.go), which CONFIG SET port
	// and bind replace while the engine runs.
	mu        sync.Mutex
	socks     []socket
	stopped   bool
	accepting sync.WaitGroup
	regMu     sync.Mutex

	loopsMu sync.Mutex
	pending map[gnet.EventLoop]*loopPushes
}

// loopPushes is one event loop's list of connections with pushes queued.
// A publish to many subscribers of one loop schedules one task for them
// all instead of one per subscriber. It also holds every connection of the
// loop for the query buffer cron (querybuf.go).
type loopPushes struct {
	mu    sync.Mutex
	conns []*conn
	spare []*conn
	fn    gnet.AsyncCallback

	// On the event loop only: its connections and the cron's place in
	// them.
	el   gnet.EventLoop
	cron gnet.Runnable
	all  []*conn
	next int
}

// flush runs on the event loop: it writes every listed connection's pushes.
func (lp *loopPushes) flush(gnet.Conn, error) error {
	lp.mu.Lock()
	conns := lp.conns
	lp.conns, lp.spare = lp.spare, nil
	lp.mu.Unlock()
	for i, c := range conns {
		_ = c.writePushes(c.c, nil)
		conns[i] = nil
	}
	lp.mu.Lock()
	lp.spare = conns[:0]
	lp.mu.Unlock()
	return nil
}

// loopOf returns the push list of gc's event loop.
func (l *Listener) loopOf(gc gnet.Conn) *loopPushes {
	l.loopsMu.Lock()
	defer l.loopsMu.Unlock()
	if l.pending == nil {
		l.pending = make(map[gnet.EventLoop]*loopPushes)
	}
	lp := l.pending[gc.EventLoop()]
	if lp == nil {
		lp = &loopPushes{el: gc.EventLoop()}
		lp.fn = lp.flush
		lp.cron = gnet.RunnableFunc(lp.runCron)
		l.pending[gc.EventLoop()] = lp
	}
	return lp
}

// New returns a listener for srv on addr ("127.0.0.1:6379") using loops
// event loops.
func New(srv *server.Server, addr string, loops int) *Listener {
	return &Listener{
		srv:   srv,
		addr:  addr,
		loops: max(loops, 1),
		ready: make(chan struct{}),
	}
}

// Serve listens and serves until Stop; it returns the engine's error. The
// addresses are bound before it serves, so that a port in use is an error
// at once. The listener is the one CONFIG SET port and bind move.
func (l *Listener) Serve() error {
	bind, port, err := splitAddr(l.addr)
	if err != nil {
		return err
	}
	socks, err := listenAll(listenAddrs(bind, port), nil)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.socks = socks
	l.mu.Unlock()
	l.srv.SetRelistener(l)
	// The accept goroutines hand the engine its connections (listen.go).
	// gnet refuses to run, register or stop without a listener: it gets a
	// Unix socket in a directory of its own, removed once the engine has
	// bound it (OnBoot), so that nobody can ever connect to it.
	dir, err := os.MkdirTemp("", "recached-resp-")
	if err != nil {
		return err
	}
	l.idleDir = dir
	defer os.RemoveAll(dir)
	err = gnet.Rotate(l, []string{"unix://" + filepath.Join(dir, "idle.sock")},
		gnet.WithNumEventLoop(l.loops),
		gnet.WithTCPNoDelay(gnet.TCPNoDelay),
		gnet.WithReadBufferCap(64<<10),
		gnet.WithLogLevel(logging.ErrorLevel),
		gnet.WithTicker(true),
	)
	l.closeListeners() // when the engine failed to start
	return err
}

// Loops is the number of event loops the listener serves with (INFO's
// recached_event_loops).
func (l *Listener) Loops() int { return l.loops }

// Ready is closed once the listener accepts connections.
func (l *Listener) Ready() <-chan struct{} { return l.ready }

// Stop stops accepting, closes every connection after flushing what it was
// sent, and waits for the event loops to end.
func (l *Listener) Stop(ctx context.Context) error {
	<-l.ready
	l.closeListeners()
	return l.eng.Stop(ctx)
}

// OnBoot records the engine so that Stop can reach it.
func (l *Listener) OnBoot(eng gnet.Engine) gnet.Action {
	l.eng = eng
	_ = os.RemoveAll(l.idleDir)
	return gnet.None
}

// OnTick runs on gnet's ticker goroutine. Its first call, once the event
// loops run, starts accepting; every call has the event loops look after
// their connections' query buffers (querybuf.go).
func (l *Listener) OnTick() (time.Duration, gnet.Action) {
	if !l.booted {
		l.booted = true
		l.mu.Lock()
		l.startAccepting(l.socks, nil)
		l.mu.Unlock()
		log.Printf("recached: RESP listening on %s (%d event loop(s))", l.addr, l.loops)
		close(l.ready)
	}
	l.cronQueryBuffers()
	return cronPeriod, gnet.None
}

// conn is one TCP connection: the gnet connection, its session and parser.
type conn struct {
	c      gnet.Conn
	srv    *server.Server
	s      *server.Session
	p      resp.Parser
	remote string
	local  string
	closed atomic.Bool
	// q is the connection's query buffer (querybuf.go); slot is its place
	// in its loop's connections.
	q    queryBuf
	slot int
	// inbound and qfree are the query buffer's bytes not yet run and its
	// free bytes, and outbound the bytes gnet holds for the socket, as of
	// the event loop's last look, for CLIENT LIST from other goroutines.
	inbound  atomic.Int64
	qfree    atomic.Int64
	outbound atomic.Int64
	// frames counts the pushes queued since the socket last took all the
	// output, for the unread-output limit (written by Push and the loop).
	frames atomic.Int64

	// Pushes from other goroutines collect in pushBuf and are written by
	// the event loop in one write per pass (writePushes); queued counts
	// their bytes until then (it sits next to pushMu: one cache line).
	pushMu    sync.Mutex
	queued    atomic.Int64
	pushSched bool
	pushBuf   []byte
	pushSpare []byte
	loop      *loopPushes

	// in is the input OnTraffic is running and next the offset of the
	// request after the one running now: the script worker reads ahead
	// through them (Peek, Advance) while the loop waits for it.
	in     []byte
	next   int
	peeked int
}

// Peek returns the next complete request after the one running, nil when
// none is buffered or it does not parse (the loop then meets it itself).
// Only the script worker calls it, while the loop waits in Exec.
func (c *conn) Peek() [][]byte {
	if c.next >= len(c.in) {
		return nil
	}
	c.p.SetLimits(c.s.RequestLimits())
	n, err := c.p.Parse(c.in[c.next:])
	if err != nil || n == 0 || len(c.p.Args) == 0 {
		c.p.Reset()
		return nil
	}
	c.peeked = n
	return c.p.Args
}

// Advance consumes the request Peek returned: it has run.
func (c *conn) Advance() { c.next += c.peeked }

// Push delivers bytes outside the reply cycle through the event loop. It
// copies b; pushes queued before the loop's next pass go out in one write.
func (c *conn) Push(b []byte) {
	if c.closed.Load() {
		return
	}
	c.pushMu.Lock()
	c.pushBuf = append(c.pushBuf, b...)
	sched := !c.pushSched
	c.pushSched = true
	c.pushMu.Unlock()
	c.queued.Add(int64(len(b)))
	c.frames.Add(1)
	if sched {
		lp := c.loop
		lp.mu.Lock()
		first := len(lp.conns) == 0
		lp.conns = append(lp.conns, c)
		lp.mu.Unlock()
		if first {
			// An empty writev makes no system call: the callback writes
			// every connection of the loop listed by then.
			_ = c.c.AsyncWritev(nil, lp.fn)
		}
	}
}

// Pending reports the bytes queued by Push that the event loop has not yet
// handed to the socket.
func (c *conn) Pending() int { return int(c.queued.Load()) }

// Buffered reports the bytes of the query buffer not yet run, and the
// bytes of output not yet written to the socket.
func (c *conn) Buffered() (query, output int) {
	return int(c.inbound.Load()), int(c.outbound.Load()) + c.Pending()
}

// takePushes moves the pushes queued so far into the session's replies; the session
// calls it as a command starts its reply (Session.SetBeforeReply): a
// message published before the command ran reaches the client before its
// reply, one published while it ran after it (flush), as Redis orders
// them.
func (c *conn) takePushes() {
	if c.queued.Load() == 0 {
		return
	}
	c.pushMu.Lock()
	n := len(c.pushBuf)
	c.s.W.B = append(c.s.W.B, c.pushBuf...)
	c.pushBuf = c.pushBuf[:0]
	c.pushMu.Unlock()
	c.queued.Add(-int64(n))
}

// writePushes runs on the event loop: it writes every queued push at once,
// then reports what the connection still holds to the engine, which drops
// subscribers past the pub/sub and the sync output limits. The log is
// committed after the pushes are taken and before they are written, so
// that no push leaves before the write that caused it is in the log (a
// push is queued after the log's effect hook has run). Committing before
// taking them would let a push queued meanwhile by another goroutine (the
// expiry cron during an appendfsync always fsync) leave unlogged.
func (c *conn) writePushes(gc gnet.Conn, err error) error {
	c.pushMu.Lock()
	b := c.pushBuf
	c.pushBuf, c.pushSpare = c.pushSpare, nil
	c.pushSched = false
	c.pushMu.Unlock()
	c.srv.Commit()
	if len(b) == 0 {
		c.pushMu.Lock()
		c.pushSpare = b
		c.pushMu.Unlock()
		return nil
	}
	if err == nil && !c.closed.Load() && (c.s == nil || !c.s.Dropped()) {
		_, _ = gc.Write(b)
		c.srv.AddNetIO(0, len(b))
	}
	c.queued.Add(-int64(len(b)))
	if err == nil && !c.closed.Load() {
		out := gc.OutboundBuffered()
		c.outbound.Store(int64(out))
		if out == 0 {
			c.frames.Store(0) // the socket took everything
		}
		pending := out + c.Pending()
		if !c.s.CheckOutput(pending) {
			c.s.CheckUnread(pending, int(c.frames.Load()))
		}
	}
	if cap(b) <= 1<<20 {
		c.pushMu.Lock()
		c.pushSpare = b[:0]
		c.pushMu.Unlock()
	}
	return nil
}

// Close closes the connection from any goroutine.
func (c *conn) Close() {
	if c.closed.Load() {
		return
	}
	_ = c.c.Close()
}

// Abort closes the connection at once, without what is still queued for
// it: the socket is reset (SO_LINGER 0), so that a client the engine
// dropped for its output limits gets none of the output it did not read.
func (c *conn) Abort() {
	if c.closed.Load() {
		return
	}
	_ = c.c.SetLinger(0)
	_ = c.c.Close()
}

// Wake makes the event loop run OnTraffic again, so that requests held
// back while the session was blocked are processed.
func (c *conn) Wake() {
	if c.closed.Load() {
		return
	}
	_ = c.c.Wake(nil)
}

// RemoteAddr returns the peer's "ip:port".
func (c *conn) RemoteAddr() string { return c.remote }

// LocalAddr returns the local "ip:port".
func (c *conn) LocalAddr() string { return c.local }

// OnOpen creates the session, or refuses the connection as the engine's
// admission decides (protected mode, maxclients), with Redis's error.
func (l *Listener) OnOpen(gc gnet.Conn) ([]byte, gnet.Action) {
	if err := l.srv.Admit(server.TransportRESP, gc.RemoteAddr()); err != nil {
		return []byte("-" + err.Error() + "\r\n"), gnet.Close
	}
	cc := &conn{c: gc, srv: l.srv, remote: server.AddrString(gc.RemoteAddr()), local: server.AddrString(gc.LocalAddr())}
	cc.loop = l.loopOf(gc)
	s, err := l.srv.NewSession(cc, false)
	if err != nil {
		return []byte("-" + err.Error() + "\r\n"), gnet.Close
	}
	cc.s = s
	s.SetPipeline(cc)
	s.SetBeforeReply(cc.takePushes)
	gc.SetContext(cc)
	cc.loop.track(cc)
	if d := l.srv.KeepAlive(); d > 0 {
		_ = gc.SetKeepAlivePeriod(d) // tcp-keepalive, as Redis sets it on accept
	}
	return nil, gnet.None
}

// OnClose releases the session.
func (l *Listener) OnClose(gc gnet.Conn, _ error) gnet.Action {
	if cc, ok := gc.Context().(*conn); ok && cc.s != nil {
		cc.closed.Store(true)
		cc.loop.untrack(cc)
		l.srv.CloseSession(cc.s)
	}
	return gnet.None
}

// OnTraffic takes what arrived into the connection's query buffer, then
// parses and runs every complete request it holds and writes their
// replies at once. A partial request stays in the query buffer.
func (l *Listener) OnTraffic(gc gnet.Conn) gnet.Action {
	cc, ok := gc.Context().(*conn)
	if !ok {
		return gnet.Close
	}
	q := &cc.q
	buf := q.b
	// inPlace: the read is run from gnet's buffer, what is left of it is
	// kept after (querybuf.go).
	inPlace := false
	if in, _ := gc.Next(-1); len(in) > 0 {
		l.srv.AddNetIO(len(in), 0)
		if len(q.b) == 0 && cc.p.Need() == 0 && !cc.s.Blocked() {
			q.reserve(len(in))
			buf, inPlace = in, true
		} else {
			q.add(in, cc.p.Need())
			buf = q.b
		}
	}
	if n := len(buf); n > l.srv.QueryBufferLimit() {
		log.Printf("closing client id=%d addr=%s that reached max query buffer length (client-query-buffer-limit, %d bytes)", cc.s.ID, cc.remote, n)
		return gnet.Close
	}
	cc.inbound.Store(int64(len(buf)))
	if cc.s.Blocked() {
		cc.publish()
		return gnet.None
	}
	if cc.s.Quit {
		// Answered -UNBLOCKED by a change of role (repl_replica.go):
		// closed after the reply, with nothing more run, as QUIT.
		cc.publish()
		l.srv.Commit()
		l.flush(gc, cc.s)
		return gnet.Close
	}
	if need := cc.p.Need(); need > 0 && len(buf) < need {
		cc.s.NoteInput() // part of a request: the client is not idle
		cc.publish()
		return gnet.None
	}
	s := cc.s
	off := 0
	action := gnet.None
	for off < len(buf) {
		// Until the client authenticates, Redis's small request bounds
		// apply: it cannot make the server hold large requests.
		cc.p.SetLimits(s.RequestLimits())
		n, err := cc.p.Parse(buf[off:])
		if err != nil {
			s.W.Error("ERR " + err.Error())
			off = len(buf)
			action = gnet.Close
			break
		}
		if n == 0 {
			break
		}
		cc.in, cc.next = buf, off+n
		s.Exec(cc.p.Args)
		off = cc.next // past the requests the script worker ran too
		cc.in = nil
		if s.Quit || s.Dropped() {
			off = len(buf)
			action = gnet.Close
			break
		}
		if s.Blocked() {
			break
		}
		if len(s.W.B) >= flushAt {
			l.srv.Commit()
			l.flush(gc, s)
		}
	}
	if inPlace {
		if off < len(buf) {
			q.add(buf[off:], cc.p.Need())
		}
	} else {
		q.consume(off)
	}
	cc.publish()
	l.srv.Commit()
	l.flush(gc, s)
	return action
}

func (l *Listener) flush(gc gnet.Conn, s *server.Session) {
	if len(s.W.B) == 0 {
		return
	}
	if s.Dropped() {
		s.W.B = s.W.B[:0] // closed for its output limits: nothing more
		return
	}
	_, _ = gc.Write(s.W.B)
	l.srv.AddNetIO(0, len(s.W.B))
	if cc, ok := gc.Context().(*conn); ok {
		if cc.queued.Load() > 0 {
			// Pushes queued while the last request ran (a message
			// published after a SUBSCRIBE) follow its reply; the earlier
			// ones are in W already (takePushes).
			_ = cc.writePushes(gc, nil)
		}
		out := gc.OutboundBuffered()
		cc.outbound.Store(int64(out))
		s.CheckOutput(out + cc.Pending()) // client-output-buffer-limit
	}
	if cap(s.W.B) > 4<<20 {
		s.W.B = nil
		return
	}
	s.W.B = s.W.B[:0]
}

// ListenAndServe runs a listener for srv until ctx ends, then stops it
// gracefully. It returns once the listener has stopped.
func ListenAndServe(ctx context.Context, srv *server.Server, addr string, loops int) error {
	return server.RunListener(ctx, New(srv, addr, loops), "resp listener on "+addr)
}

// FreePort returns a free loopback TCP port, for tests and benchmarks.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	return strconv.Atoi(p)
}
