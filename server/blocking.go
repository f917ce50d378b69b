package server

// Blocking pops (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN,
// BZPOPMAX, BZMPOP) and blocking stream reads (XREAD, XREADGROUP).
//
// A blocking command that finds nothing to pop registers a waiter on its
// keys and moves its session to blockWaiting without replying; the
// transport then holds the connection's further requests. Every effect on
// a key somebody waits for marks the key ready (blockRegistry.onEffect,
// under the writer's shard locks). The writing command, once it has
// released its locks, serves the ready keys (serveReady): for each key the
// oldest waiter first, under the key's shard locks it pops, emits the pop's
// effects as the waiter's session and builds the waiter's reply. A timer,
// CLIENT UNBLOCK or the connection's close end a wait too. Whoever claims
// the waiter first, under the registry's lock, answers it, so that every
// wait gets exactly one reply.
//
// The reply reaches the connection through its transport's goroutine,
// which owns W: the answering goroutine stores it in the session, moves the
// session to blockServed and wakes the transport. The transport's next
// Blocked call appends the reply to W, ends the wait, wakes the connection
// once more and still reports true, so that the transport sends W before
// it runs the requests it held back. Replies thus leave in request order
// whether the wait ends before or after the transport has seen it begin.
//
// Lock order: see server/LOCKS.md.

import (
	"math"
	"math/big"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
)

// The states of Session.blocked.
const (
	blockNone    int32 = iota // running requests
	blockWaiting              // waiting in a blocking command
	blockServed               // answered; the reply waits in blockReply
)

// errUnblocked is the reply of a client that CLIENT UNBLOCK ... ERROR
// released; it carries its own prefix, as in Redis.
const errUnblocked = "UNBLOCKED client unblocked via CLIENT UNBLOCK"

// maxTimerMs bounds the timeouts that get a timer; longer ones (centuries)
// wait forever, as they do in Redis.
const maxTimerMs = 1 << 40

// waitKind is what a blocked command does once a key has elements.
type waitKind uint8

const (
	waitPop   waitKind = iota // BLPOP, BRPOP: [key, element]
	waitMPop                  // BLMPOP: [key, [elements…]]
	waitMove                  // BLMOVE, BRPOPLPUSH: the element, pushed onto dst
	waitZPop                  // BZPOPMIN, BZPOPMAX (front: max): [key, member, score]
	waitZMPop                 // BZMPOP (front: max): [key, [[member, score]…]]
	// waitStream is XREAD or XREADGROUP BLOCK: served by serveStream
	// whenever the stream has entries after the waiter's id, which does
	// not depend on the waiters before it.
	waitStream
)

// valueType is the type of value w waits for.
func (w *waiter) valueType() keyspace.Type {
	if w.kind == waitZPop || w.kind == waitZMPop {
		return keyspace.TypeZSet
	}
	return keyspace.TypeList
}

// blockKey is a key of one database.
type blockKey struct {
	db  int
	key string
}

// waiter is one blocked command.
type waiter struct {
	s       *Session
	db      int
	proto   int // the session's protocol when it blocked
	kind    waitKind
	front   bool   // pop at the head
	toFront bool   // waitMove: push at the head of dst
	dst     []byte // waitMove: the destination key
	count   int64  // waitMPop: at most this many elements
	stream  *streamWait
	timer   *time.Timer
	// cmd and args are the blocked command, which SLOWLOG logs when the
	// wait ends; start is when its serve began.
	cmd   *Command
	args  [][]byte
	start time.Time

	// The fields below are guarded by blockRegistry.mu.
	nodes []*waitNode // the waiter's place in each of its keys' queues
	live  bool        // still waiting: in the queues, unclaimed
	// busy is closed when the serve that claimed the waiter is done with
	// its session.
	busy chan struct{}

	reply []byte // the answer, once served
}

// waitNode is a waiter's entry in one key's queue.
type waitNode struct {
	w          *waiter
	q          *waitQueue
	key        blockKey
	prev, next *waitNode
}

// waitQueue is the waiters of one key, oldest first.
type waitQueue struct {
	head, tail *waitNode
}

func (q *waitQueue) push(n *waitNode) {
	n.q = q
	n.prev = q.tail
	if q.tail != nil {
		q.tail.next = n
	} else {
		q.head = n
	}
	q.tail = n
}

func (q *waitQueue) remove(n *waitNode) {
	if n.prev != nil {
		n.prev.next = n.next
	} else {
		q.head = n.next
	}
	if n.next != nil {
		n.next.prev = n.prev
	} else {
		q.tail = n.prev
	}
	n.prev, n.next = nil, nil
}

// blockRegistry is the server's blocked clients: the queue of waiters of
// each key, each blocked session's waiter, and the keys made ready since
// they were last served.
type blockRegistry struct {
	waiting  atomic.Int64 // live waiters: the effect hook's fast path, INFO
	hasReady atomic.Bool

	mu       sync.Mutex
	queues   map[blockKey]*waitQueue
	sessions map[*Session]*waiter
	ready    []blockKey
	readySet map[blockKey]struct{}
}

// Blocked reports whether the session waits in a blocking command; the
// transport must not run its next request until Wake is called. The
// transport calls it from the goroutine that runs the session: when the
// wait has been answered, Blocked appends the answer to W, wakes the
// connection and reports true one last time, so that the transport sends
// W before running the requests it held back.
func (s *Session) Blocked() bool {
	if s.blocked.Load() == blockNone {
		return false
	}
	if s.blocked.Load() == blockServed && s.postponed != nil {
		// The pause that held the request is over: it runs now, and may
		// wait again (pause.go).
		args := s.postponed
		s.postponed = nil
		s.blocked.Store(blockNone)
		s.Exec(args)
		if s.blocked.Load() == blockNone {
			s.conn.Wake()
		}
		return true
	}
	if s.blocked.Load() == blockServed {
		s.W.Raw(s.blockReply)
		s.blockReply = nil
		if s.quitAfterWait.Swap(false) {
			s.Quit = true // the transport closes after this reply
		}
		s.blocked.Store(blockNone)
		s.conn.Wake()
	}
	return true
}

// isBlocked reports, without side effects, whether the session waits.
func (s *Session) isBlocked() bool { return s.blocked.Load() == blockWaiting }

// canBlock reports whether the running command may block: not inside
// MULTI/EXEC or DEDUP, and only on a real connection.
func (s *Session) canBlock() bool {
	return s.conn != nil && !s.inExec && !s.inDedup
}

// BlockedClients returns the number of sessions waiting in a blocking
// command.
func (srv *Server) BlockedClients() int64 { return srv.blocking.waiting.Load() }

// timeoutArg parses the timeout at s.Args[i], in seconds, as Redis's
// getTimeoutFromObjectOrReply does (a long double, multiplied by 1000 and
// rounded up), and returns it in milliseconds, 0 meaning forever. It
// replies with Redis's error when it fails.
func (s *Session) timeoutArg(i int) (int64, bool) {
	f, ok := parseLongDouble(s.Args[i])
	if !ok {
		s.W.Error(errTimeout)
		return 0, false
	}
	ms := new(big.Float).SetPrec(longDouble).SetMode(big.ToNearestEven).Mul(f, big.NewFloat(1000))
	var t int64
	if !ms.IsInf() {
		n, acc := ms.Int(nil)
		if acc == big.Below {
			n.Add(n, big.NewInt(1))
		}
		if n.IsInt64() {
			t = n.Int64()
		} else {
			// C's conversion of an out-of-range value yields the
			// minimum long long, which Redis reports as negative.
			t = math.MinInt64
		}
	} else {
		t = math.MinInt64
	}
	if t < 0 {
		s.W.Error(errNegTimeout)
		return 0, false
	}
	return t, true
}

// block parks the session in w until one of keys has elements. The caller
// holds the keys' shard locks and has found them all empty, so no push can
// slip in between; it has checked canBlock. ms is the timeout, 0 for none.
func (s *Session) block(w *waiter, keys [][]byte, ms int64) {
	reg := &s.srv.blocking
	w.s, w.db, w.proto = s, s.DBIndex, s.W.Proto
	w.cmd = s.lastCmd.Load()
	w.args = make([][]byte, len(s.Args))
	for i, a := range s.Args {
		w.args[i] = append([]byte(nil), a...)
	}
	s.blocked.Store(blockWaiting)
	reg.mu.Lock()
	if reg.queues == nil {
		reg.queues = make(map[blockKey]*waitQueue)
		reg.sessions = make(map[*Session]*waiter)
		reg.readySet = make(map[blockKey]struct{})
	}
	for _, k := range keys {
		bk := blockKey{db: w.db, key: string(k)}
		q := reg.queues[bk]
		if q == nil {
			q = &waitQueue{}
			reg.queues[bk] = q
		} else if q.tail.w == w {
			continue // the same key twice
		}
		n := &waitNode{w: w, key: bk}
		q.push(n)
		w.nodes = append(w.nodes, n)
	}
	w.live = true
	reg.sessions[s] = w
	reg.waiting.Add(1)
	if ms > 0 && ms < maxTimerMs {
		srv := s.srv
		w.timer = time.AfterFunc(time.Duration(ms)*time.Millisecond, func() {
			var wr resp.Writer
			wr.Proto = w.proto
			wr.NullArray()
			srv.endWait(w, wr.B)
		})
	}
	reg.mu.Unlock()
}

// claimLocked takes w out of every queue. The caller holds reg.mu and has
// checked w.live.
func (reg *blockRegistry) claimLocked(w *waiter) {
	w.live = false
	for _, n := range w.nodes {
		n.q.remove(n)
		if n.q.head == nil {
			delete(reg.queues, n.key)
		}
	}
	w.nodes = nil
	reg.waiting.Add(-1)
}

// answer hands the session its reply and wakes its transport.
func (w *waiter) answer(reply []byte) {
	s := w.s
	s.blockReply = reply
	s.blocked.Store(blockServed)
	s.conn.Wake()
}

// endWait ends w's wait with reply unless it has already ended; it reports
// whether it did (timeouts, CLIENT UNBLOCK).
func (srv *Server) endWait(w *waiter, reply []byte) bool {
	return srv.finishWait(w, reply, false)
}

// finishWait is endWait; with quit, the connection closes once the reply
// is written, as QUIT closes it.
func (srv *Server) finishWait(w *waiter, reply []byte, quit bool) bool {
	reg := &srv.blocking
	reg.mu.Lock()
	if !w.live {
		reg.mu.Unlock()
		return false
	}
	reg.claimLocked(w)
	if reg.sessions[w.s] == w {
		delete(reg.sessions, w.s)
	}
	reg.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
	if quit {
		w.s.quitAfterWait.Store(true) // Blocked turns it into Quit
	}
	w.answer(reply)
	return true
}

// releaseBlocked drops the session's wait when its connection closes. If a
// serve has claimed the wait, it waits until the serve is done with the
// session, so that nothing touches the session after release.
func (s *Session) releaseBlocked() {
	if s.blocked.Load() == blockNone {
		return
	}
	reg := &s.srv.blocking
	reg.mu.Lock()
	w := reg.sessions[s]
	if w == nil {
		reg.mu.Unlock()
		return
	}
	if w.live {
		reg.claimLocked(w)
		delete(reg.sessions, s)
		reg.mu.Unlock()
		if w.timer != nil {
			w.timer.Stop()
		}
		s.blocked.Store(blockNone)
		return
	}
	busy := w.busy
	reg.mu.Unlock()
	if busy != nil {
		<-busy
	}
}

// markEffect is the effect hook that marks keys ready, which publish
// calls while some client waits: the effect's key, and the key a RENAME,
// COPY or MOVE writes; after SWAPDB, every key waited for. It runs under
// the writer's shard locks.
func (reg *blockRegistry) markEffect(e *Effect) {
	a := e.Args
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if e.Kind == EffectDB {
		// After SWAPDB every key waited for may have changed; after a
		// flush, blocked XREADGROUPs learn that their key is gone.
		all := resp.EqualFold(a[0], "swapdb") || resp.EqualFold(a[0], "flushall")
		for k := range reg.queues {
			if all || k.db == e.DB {
				reg.markLocked(k)
			}
		}
		return
	}
	reg.markLocked(blockKey{db: e.DB, key: string(e.Key)})
	if len(a) < 3 {
		return
	}
	switch {
	case resp.EqualFold(a[0], "rename"), resp.EqualFold(a[0], "renamenx"):
		reg.markLocked(blockKey{db: e.DB, key: string(a[2])})
	case resp.EqualFold(a[0], "copy"):
		db := e.DB
		for i := 3; i+1 < len(a); i++ {
			if resp.EqualFold(a[i], "db") {
				if n, ok := resp.ParseInt(a[i+1]); ok {
					db = int(n)
				}
			}
		}
		reg.markLocked(blockKey{db: db, key: string(a[2])})
	case resp.EqualFold(a[0], "move"):
		if n, ok := resp.ParseInt(a[2]); ok {
			reg.markLocked(blockKey{db: int(n), key: string(a[1])})
		}
	}
}

// markLocked adds k to the ready keys if somebody waits for it.
func (reg *blockRegistry) markLocked(k blockKey) {
	if reg.queues[k] == nil {
		return
	}
	if _, dup := reg.readySet[k]; dup {
		return
	}
	reg.readySet[k] = struct{}{}
	reg.ready = append(reg.ready, k)
	reg.hasReady.Store(true)
}

// serveReady serves the waiters of the keys made ready, in the order the
// keys became ready and, per key, in the order the clients blocked. A
// command calls it after releasing its locks; it must hold none.
func (srv *Server) serveReady() {
	reg := &srv.blocking
	if !reg.hasReady.Load() {
		return
	}
	var served []*waiter
	for {
		reg.mu.Lock()
		batch := reg.ready
		reg.ready = nil
		clear(reg.readySet)
		reg.hasReady.Store(false)
		reg.mu.Unlock()
		if len(batch) == 0 {
			break
		}
		for _, k := range batch {
			served = srv.serveKey(k, served)
		}
	}
	if len(served) == 0 {
		return
	}
	// The pops must be durable before anybody hears of them.
	srv.Commit()
	for _, w := range served {
		w.answer(w.reply)
	}
}

// serveKey serves k's waiters, oldest first, while k holds elements, and
// appends those it answered to served.
func (srv *Server) serveKey(k blockKey, served []*waiter) []*waiter {
	reg := &srv.blocking
	// Stream waiters the key cannot serve yet, which the others behind
	// them do not wait for.
	var skip map[*waiter]bool
	for {
		reg.mu.Lock()
		var w *waiter
		if q := reg.queues[k]; q != nil {
			for n := q.head; n != nil; n = n.next {
				if !skip[n.w] {
					w = n.w
					break
				}
			}
		}
		reg.mu.Unlock()
		if w == nil {
			return served
		}
		switch srv.serveOne(w, k) {
		case serveEmpty:
			if w.kind != waitStream {
				return served
			}
			if skip == nil {
				skip = make(map[*waiter]bool)
			}
			skip[w] = true
		case serveDone:
			served = append(served, w)
		}
		// serveLost: w ended meanwhile; the next waiter is the oldest.
	}
}

// serveResult is the outcome of one serveOne.
type serveResult uint8

const (
	serveDone  serveResult = iota // w was answered
	serveEmpty                    // k holds no list: nothing to serve
	serveLost                     // w ended (timeout, unblock, close) first
)

// serveOne answers w from k's list, under the shard locks of k and, for a
// move, of the destination.
func (srv *Server) serveOne(w *waiter, k blockKey) serveResult {
	if w.kind == waitStream {
		return srv.serveStream(w, k)
	}
	db := srv.ks.DBs[k.db]
	key := []byte(k.key)
	a := srv.ks.ShardOf(key)
	b := a
	if w.kind == waitMove {
		b = srv.ks.ShardOf(w.dst)
	}
	if a > b {
		a, b = b, a
	}
	db.Shard(a).Lock()
	if b != a {
		db.Shard(b).Lock()
	}
	defer func() {
		if b != a {
			db.Shard(b).Unlock()
		}
		db.Shard(a).Unlock()
	}()
	e := db.Lookup(key)
	if e == nil || e.Type() != w.valueType() || !srv.persistReady() {
		return serveEmpty
	}
	if !srv.claimServe(w) {
		return serveLost
	}
	srv.preimage(k.db, key)
	if w.kind == waitMove {
		srv.preimage(k.db, w.dst)
	}
	tr := w.s.trk.Load()
	if tr != nil {
		tr.enter()
	}
	w.reply = w.s.serveWaiter(w, key, e.Obj)
	if tr != nil {
		// Invalidations of the keys the served command changed follow
		// its reply, as in Redis.
		srv.broadcastTracking()
		w.reply = append(w.reply, tr.leave()...)
	}
	srv.doneServe(w)
	return serveDone
}

// claimServe claims w for a serve that holds the shard locks of its keys
// and reports whether w was still waiting; the serve builds w.reply, then
// calls doneServe.
func (srv *Server) claimServe(w *waiter) bool {
	reg := &srv.blocking
	reg.mu.Lock()
	if !w.live {
		reg.mu.Unlock()
		return false
	}
	reg.claimLocked(w)
	w.busy = make(chan struct{})
	reg.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
	w.start = time.Now()
	return true
}

// doneServe ends a serve claimed by claimServe: the session is free.
func (srv *Server) doneServe(w *waiter) {
	reg := &srv.blocking
	srv.slowlog.noteWait(w, time.Since(w.start))
	close(w.busy)
	reg.mu.Lock()
	if reg.sessions[w.s] == w {
		delete(reg.sessions, w.s)
	}
	reg.mu.Unlock()
}

// serveWaiter performs w's pop from key's value obj (a list, or a sorted
// set for the zset kinds) as the waiting session s (its database and
// effects) and returns the reply in w's protocol. The caller holds the
// shard locks.
func (s *Session) serveWaiter(w *waiter, key []byte, obj any) []byte {
	var wr resp.Writer
	wr.Proto = w.proto
	switch w.kind {
	case waitZPop:
		zpopKeyed(s, &wr, key, w.front)
		return wr.B
	case waitZMPop:
		zmpopKeyed(s, &wr, key, w.front, int(w.count))
		return wr.B
	}
	l := obj.(*keyspace.List)
	switch w.kind {
	case waitPop:
		s.popWithKey(&wr, key, l, w.front)
	case waitMPop:
		s.mpopWithKey(&wr, key, l, w.front, w.count)
	case waitMove:
		de := s.db.Lookup(w.dst)
		if de != nil && de.Type() != keyspace.TypeList {
			wr.Error(errWrongType)
			s.srv.countBlockedError(s, wr.B)
			break
		}
		wr.Bulk(s.moveOne(key, l, w.dst, de, w.front, w.toFront))
	}
	return wr.B
}

// persistReady reports whether writes can be logged: while the append-only
// log fails, waiters stay blocked rather than pop what cannot be recorded.
func (srv *Server) persistReady() bool {
	p := srv.persist
	if p == nil {
		return true
	}
	l := p.log.Load()
	return l == nil || l.Err() == nil
}

// preimage keeps, during a snapshot, key's state from before a served
// waiter changes it, as beforeWrite does for commands. The caller holds
// the key's shard lock.
func (srv *Server) preimage(db int, key []byte) {
	if srv.persist == nil {
		return
	}
	if st := srv.persist.snap.Load(); st != nil {
		st.preimage(db, key)
	}
}

// cmdClientUnblock is CLIENT UNBLOCK client-id [TIMEOUT | ERROR]: it ends
// another client's wait as a timeout (the default) or with an error.
func cmdClientUnblock(s *Session) {
	if len(s.Args) > 4 {
		s.W.Error("ERR unknown subcommand or wrong number of arguments for 'UNBLOCK'. Try CLIENT HELP.")
		return
	}
	asError := false
	if len(s.Args) == 4 {
		switch {
		case resp.EqualFold(s.Args[3], "timeout"):
		case resp.EqualFold(s.Args[3], "error"):
			asError = true
		default:
			s.W.Error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
			return
		}
	}
	id, ok := s.intArg(2)
	if !ok {
		return
	}
	srv := s.srv
	srv.clientsMu.Lock()
	target := srv.clients[id]
	srv.clientsMu.Unlock()
	var w *waiter
	if target != nil {
		srv.blocking.mu.Lock()
		w = srv.blocking.sessions[target]
		srv.blocking.mu.Unlock()
	}
	if w == nil {
		s.W.Int(0)
		return
	}
	var wr resp.Writer
	wr.Proto = w.proto
	if asError {
		wr.Error(errUnblocked)
	} else {
		wr.NullArray()
	}
	if !srv.endWait(w, wr.B) {
		s.W.Int(0)
		return
	}
	if asError {
		srv.countBlockedError(target, wr.B)
	}
	s.W.Int(1)
}
