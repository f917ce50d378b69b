package server

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
	"github.com/recached/recached/snapshot/rdb"
)

// The primary side of Redis's replication protocol. A replica connects as
// an ordinary client, announces itself with REPLCONF (listening-port,
// ip-address, capa eof, capa psync2) and sends PSYNC replid offset (or
// SYNC, as redis-cli --rdb and old replicas do). When replid is this
// server's id (or its previous one, up to second_repl_offset) and the
// backlog still holds the offset, the answer is +CONTINUE and the stream
// from there. Otherwise it is +FULLRESYNC replid offset, an RDB image of
// the data as of offset, then the stream from offset on.
//
// The stream is the effects (effects.go): every Effect's Args as a RESP
// command, preceded by SELECT when the database changes, plus PING every
// repl-ping-replica-period seconds and REPLCONF GETACK * when a WAIT
// blocks. It goes to the backlog and to every online replica, under
// replState.mu, in the order the effects are published (each under its
// key's shard lock), so every replica receives the same bytes and its
// offsets are the primary's.
//
// The RDB image is taken as a save takes its snapshot (persist.go): with
// every shard locked for an instant the offset is read and the replica
// starts collecting the stream from there, then the shards are dumped one
// at a time, writes to shards not dumped yet keeping their pre-images. It
// is written to a temporary file and sent as $<len> (disk-based), or
// streamed to the socket between $EOF:<mark> and the mark when
// repl-diskless-sync is yes and the replica announced capa eof; the
// stream then waits for the replica's first REPLCONF ACK, since a replica
// reading such a payload cannot tell the mark from stream bytes that
// follow it in the same read. repl-diskless-sync-delay is not waited for:
// each replica gets its own image, so there is nothing to share.

// replHello is what a connection told with REPLCONF before PSYNC.
type replHello struct {
	port       int
	ip         string
	capaEOF    bool
	capaPsync2 bool
	rdbOnly    bool
}

// streamState is where a replica is in receiving the stream.
type streamState uint8

const (
	streamNone      streamState = iota // before the image's instant
	streamBuffering                    // collected in pending
	streamLive                         // pushed as it is produced
)

// diskless reports whether a full sync streams the image to the socket.
func (srv *Server) diskless() bool {
	srv.cfgMu.RLock()
	defer srv.cfgMu.RUnlock()
	return srv.paramValue(paramTable.lookup("repl-diskless-sync")) == "yes"
}

// replInt is an integer CONFIG parameter of replication.
func (srv *Server) replInt(name string) int64 {
	srv.cfgMu.RLock()
	v := srv.paramValue(paramTable.lookup(name))
	srv.cfgMu.RUnlock()
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

// cmdReplconf is REPLCONF option value …: a replica's announcements, and
// ACK offset, which gets no reply.
func cmdReplconf(s *Session) {
	if len(s.Args)%2 == 0 {
		s.W.Error(errSyntax)
		return
	}
	h := s.replHello
	if h == nil {
		h = &replHello{}
	}
	for i := 1; i < len(s.Args); i += 2 {
		opt, v := s.Args[i], s.Args[i+1]
		switch {
		case resp.EqualFold(opt, "listening-port"):
			n, ok := resp.ParseInt(v)
			if !ok {
				s.W.Error(errNotInt)
				return
			}
			h.port = int(n)
		case resp.EqualFold(opt, "ip-address"):
			if len(v) >= 256 { // Redis's NET_HOST_STR_LEN
				s.W.Error(fmt.Sprintf("ERR REPLCONF ip-address provided by replica instance is too long: %d bytes", len(v)))
				return
			}
			h.ip = string(v)
		case resp.EqualFold(opt, "capa"):
			switch {
			case resp.EqualFold(v, "eof"):
				h.capaEOF = true
			case resp.EqualFold(v, "psync2"):
				h.capaPsync2 = true
			}
		case resp.EqualFold(opt, "ack"):
			off, ok := resp.ParseInt(v)
			if ok {
				s.srv.replicaAck(s, off)
			}
			return // ACK has no reply
		case resp.EqualFold(opt, "getack"):
			// A replica's master asks for its offset (repl_replica*.go).
			s.srv.repl.mu.Lock()
			m := s.srv.repl.master
			s.srv.repl.mu.Unlock()
			if a, ok := m.(interface{ SendAck() }); ok {
				a.SendAck()
			}
			return
		case resp.EqualFold(opt, "rdb-only"):
			n, ok := resp.ParseInt(v)
			switch {
			case !ok:
				s.W.Error(errNotInt)
				return
			case n != 0 && n != 1:
				s.W.Error("ERR value is out of range, value must between 0 and 1")
				return
			}
			h.rdbOnly = n == 1
		case resp.EqualFold(opt, "rdb-filter-only"):
			// Only the empty filter exists in Redis 7.0: keep every key.
			if len(v) != 0 {
				s.W.Error("ERR Unsupported rdb-filter-only option: " + string(v))
				return
			}
		default:
			s.W.Error("ERR Unrecognized REPLCONF option: " + string(opt))
			return
		}
	}
	s.replHello = h
	s.W.OK()
}

// cmdPSync is PSYNC replid offset.
func cmdPSync(s *Session) {
	off, ok := resp.ParseInt(s.Args[2])
	if !ok {
		s.W.Error(errNotInt)
		return
	}
	s.srv.replSync(s, string(s.Args[1]), off, true)
}

// replSync serves PSYNC (psync) or SYNC with no arguments.
func (srv *Server) replSync(s *Session, id string, off int64, psync bool) {
	if s.replica.Load() != nil {
		return // already a replica: Redis ignores it
	}
	if s.conn == nil {
		s.W.Error("ERR Replica can't be a script or an internal client")
		return
	}
	r := &srv.repl
	r.mu.Lock()
	m := r.master
	r.mu.Unlock()
	if m != nil {
		if _, _, state, _ := m.Role(); state != "connected" {
			s.W.Error("NOMASTERLINK Can't SYNC while not connected with my master")
			return
		}
	}
	h := s.replHello
	if h == nil {
		h = &replHello{}
	}
	l := &replicaLink{s: s, conn: s.conn, ip: h.ip, port: h.port, state: "wait_bgsave", hello: *h, ackTime: time.Now().Unix()}
	if l.ip == "" {
		l.ip, _, _ = net.SplitHostPort(s.conn.RemoteAddr())
	}
	r.mu.Lock()
	if psync && r.tryContinue(l, id, off) {
		r.mu.Unlock()
		return
	}
	if psync && id != "?" {
		r.syncPartialErr.Add(1)
	}
	r.syncFull.Add(1)
	r.replicas = append(r.replicas, l)
	s.replica.Store(l)
	r.mu.Unlock()
	go srv.fullSync(l, psync)
}

// tryContinue answers +CONTINUE and the stream from off when the backlog
// holds it for id, as Redis's masterTryPartialResynchronization decides.
// The caller holds r.mu.
func (r *replState) tryContinue(l *replicaLink, id string, off int64) bool {
	if id != r.replid && (id != r.replid2 || off > r.secondOffset) {
		return false
	}
	if r.backlog == nil || !r.backlog.holds(off) {
		return false
	}
	line := "+CONTINUE\r\n"
	if l.hello.capaPsync2 {
		line = "+CONTINUE " + r.replid + "\r\n"
	}
	l.conn.Push([]byte(line))
	l.conn.Push(r.backlog.from(off))
	l.state, l.stream = "online", streamLive
	l.ackOffset = off - 1
	r.replicas = append(r.replicas, l)
	l.s.replica.Store(l)
	r.refreshGoodLocked(time.Now().Unix())
	r.syncPartialOK.Add(1)
	return true
}

// fullSync sends l an RDB image and then the stream: +FULLRESYNC (for
// PSYNC), the image and the stream collected since its instant. It runs
// in its own goroutine and drops the replica when anything fails.
func (srv *Server) fullSync(l *replicaLink, psync bool) {
	if err := srv.sendImage(l, psync); err != nil {
		log.Printf("recached: full resynchronisation of replica %s:%d failed: %v", l.ip, l.port, err)
		srv.dropReplicaLink(l)
		l.conn.Close()
		return
	}
	r := &srv.repl
	r.mu.Lock()
	defer r.mu.Unlock()
	if l.dropped {
		return
	}
	if l.hello.rdbOnly {
		// redis-cli --rdb: the image alone, then the connection ends.
		r.removeLocked(l)
		l.conn.Close()
		return
	}
	l.state = "online"
	l.ackTime = time.Now().Unix()
	r.refreshGoodLocked(l.ackTime)
	if !l.eofMode {
		l.conn.Push(l.pending)
		l.pending, l.stream = nil, streamLive
	}
	log.Printf("recached: synchronisation with replica %s:%d succeeded", l.ip, l.port)
}

// sendImage takes the RDB image and sends it to l.
func (srv *Server) sendImage(l *replicaLink, psync bool) error {
	p := srv.persist
	p.claim(saveRDB, true)
	diskless := srv.diskless() && l.hello.capaEOF
	var (
		tmp  *os.File
		out  io.Writer
		mark string
	)
	if diskless {
		var b [20]byte
		_, _ = rand.Read(b[:])
		mark = hex.EncodeToString(b[:])
		out = &pushWriter{srv: srv, l: l}
	} else {
		dir := srv.Config().Dir
		if dir == "" {
			dir = "."
		}
		f, err := os.CreateTemp(dir, "temp-repl-*.rdb")
		if err != nil {
			p.release()
			return err
		}
		defer os.Remove(f.Name())
		defer f.Close()
		tmp = f
		out = bufio.NewWriterSize(f, 256<<10)
	}
	st := newSnapState(srv.ks, nil)
	sink := &rdbSink{db: -1}
	st.rdb = sink
	r := &srv.repl
	srv.lockAll(srv.ks.DBs...)
	r.mu.Lock()
	if r.backlog == nil {
		// A backlog made from scratch starts a new history, as in Redis.
		r.replid, r.replid2, r.secondOffset = newReplID(), noReplID, -1
		r.backlog = newBacklog(srv.backlogSize(), r.offset+1)
		r.on.Store(true)
	}
	off := r.offset
	r.seldb = -1 // the stream names its database again from here
	l.stream = streamBuffering
	l.pending = nil
	if psync {
		l.conn.Push([]byte("+FULLRESYNC " + r.replid + " " + strconv.FormatInt(off, 10) + "\r\n"))
	}
	if diskless {
		l.eofMode = true
		l.conn.Push([]byte("$EOF:" + mark + "\r\n"))
	} else {
		l.presync = true // newlines keep it waiting until $<len>
	}
	r.mu.Unlock()
	for _, db := range srv.ks.DBs {
		var n [2]uint64
		for i := 0; i < keyspace.NumShards; i++ {
			n[0] += uint64(db.Len(i))
			n[1] += uint64(db.Expires(i))
		}
		sink.sizes = append(sink.sizes, n)
	}
	sink.w = rdb.NewWriter(out, time.Now().Unix(), [2]string{"aof-base", "0"})
	err := sink.functions(srv.scripts.sortedLibs())
	st.err = err
	p.snap.Store(st)
	srv.unlockAll(srv.ks.DBs...)
	err = st.run(p)
	p.snap.Store(nil)
	close(st.done)
	p.release()
	if err == nil {
		err = sink.w.Close()
	}
	if err != nil {
		return err
	}
	if diskless {
		// Online from the mark on; the stream waits for its first ACK.
		r.mu.Lock()
		l.conn.Push([]byte(mark))
		l.state = "online"
		l.ackTime = time.Now().Unix()
		r.refreshGoodLocked(l.ackTime)
		r.mu.Unlock()
		return nil
	}
	if err := out.(*bufio.Writer).Flush(); err != nil {
		return err
	}
	return srv.sendFile(l, tmp)
}

// sendFile sends the image file f as a bulk string without its final CRLF.
func (srv *Server) sendFile(l *replicaLink, f *os.File) error {
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	r := &srv.repl
	r.mu.Lock()
	l.presync = false
	l.state = "send_bulk"
	r.mu.Unlock()
	l.conn.Push([]byte("$" + strconv.FormatInt(size, 10) + "\r\n"))
	_, err = io.Copy(&pushWriter{srv: srv, l: l}, f)
	return err
}

// pushWriter writes to a replica's connection through Push, waiting while
// more than maxQueued bytes are not yet on the socket, for at most
// repl-timeout, so that an image never sits whole in memory.
type pushWriter struct {
	srv *Server
	l   *replicaLink
}

// maxQueued is how much of an image may wait for a replica's socket.
const maxQueued = 64 << 20

func (w *pushWriter) Write(b []byte) (int, error) {
	deadline := time.Now().Add(time.Duration(w.srv.replInt("repl-timeout")) * time.Second)
	for {
		w.srv.repl.mu.Lock()
		dropped := w.l.dropped
		w.srv.repl.mu.Unlock()
		if dropped {
			return 0, errors.New("the replica's connection closed")
		}
		if _, out := w.l.conn.Buffered(); out < maxQueued {
			break
		}
		if time.Now().After(deadline) {
			return 0, errors.New("timeout writing to the replica")
		}
		time.Sleep(time.Millisecond)
	}
	w.l.conn.Push(b)
	return len(b), nil
}

// replicaAck records REPLCONF ACK offset from a replica and answers the
// WAITs it satisfies.
func (srv *Server) replicaAck(s *Session, off int64) {
	l := s.replica.Load()
	if l == nil {
		return // Redis ignores ACK from a client that is not a replica
	}
	r := &srv.repl
	r.mu.Lock()
	if off > l.ackOffset {
		l.ackOffset = off
	}
	l.ackTime = time.Now().Unix()
	if l.eofMode && l.state == "online" && l.stream == streamBuffering {
		// The replica has loaded the image: the stream may follow.
		l.conn.Push(l.pending)
		l.pending, l.stream = nil, streamLive
	}
	r.mu.Unlock()
	srv.serveWaits()
}

// dropReplica forgets s's replica link when its connection closes.
func (srv *Server) dropReplica(s *Session) {
	if l := s.replica.Load(); l != nil {
		srv.dropReplicaLink(l)
	}
}

func (srv *Server) dropReplicaLink(l *replicaLink) {
	r := &srv.repl
	r.mu.Lock()
	r.removeLocked(l)
	r.mu.Unlock()
	srv.serveWaits() // a WAIT may now never be satisfied: no change, but cheap
}

// removeLocked takes l out of the replicas; the caller holds r.mu.
func (r *replState) removeLocked(l *replicaLink) {
	l.dropped = true
	l.pending = nil
	for i, x := range r.replicas {
		if x == l {
			r.replicas = append(r.replicas[:i], r.replicas[i+1:]...)
			break
		}
	}
	now := time.Now().Unix()
	if len(r.replicas) == 0 {
		r.lonelySince = now
	}
	r.refreshGoodLocked(now)
}

// feedEffect adds e to the stream. publish calls it, under e's shard
// lock, only while r.on is set: a primary with a backlog.
func (srv *Server) feedEffect(e *Effect) {
	r := &srv.repl
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.master != nil || r.backlog == nil {
		return // a replica's stream is its master's (FeedStream)
	}
	o := e.unitOwner()
	b := r.scratch[:0]
	if o != nil && !o.replUnit && e.Kind != EffectMark && o.replWrap.Load() > 0 {
		b = r.openUnit(b, o) // an EXEC's or a script's first effect
	}
	if e.ClientID != nil {
		b = r.appendMark(b, e, o)
	}
	if e.Kind != EffectMark {
		if e.DB != r.seldb {
			b = resp.AppendCommand(b, bSELECT, strconv.AppendInt(nil, int64(e.DB), 10))
			r.seldb = e.DB
		}
		b = resp.AppendCommand(b, e.Args...)
	}
	r.feedLocked(b)
	r.scratch = b[:0]
	if o != nil {
		o.woff.Store(r.offset)
	}
}

var bSELECT = []byte("SELECT")

// feedLocked appends b to the stream: the backlog and every replica that
// receives it. The caller holds r.mu.
func (r *replState) feedLocked(b []byte) {
	r.backlog.write(b)
	r.offset += int64(len(b))
	for _, l := range r.replicas {
		switch l.stream {
		case streamLive:
			l.conn.Push(b)
		case streamBuffering:
			l.pending = append(l.pending, b...)
		}
	}
}

// FeedStream adds b, bytes of the master's stream a replica received and
// applied, to its own backlog and sub-replicas, so that its offset stays
// its master's (the replica side calls it).
func (srv *Server) FeedStream(b []byte) {
	r := &srv.repl
	r.mu.Lock()
	if r.backlog == nil {
		r.offset += int64(len(b))
	} else {
		r.feedLocked(b)
	}
	r.mu.Unlock()
}

// resetStream starts the history a replica received by a full sync:
// the master's id and offset, no replid2, a fresh backlog (so that the
// replica, promoted, can continue its own replicas' streams), and its
// own replicas dropped, their history being gone (as Redis's
// disconnectSlaves after loading the master's image).
func (srv *Server) resetStream(replid string, off int64) {
	size := srv.backlogSize()
	r := &srv.repl
	r.mu.Lock()
	r.replid, r.offset = replid, off
	r.replid2, r.secondOffset = noReplID, -1
	r.backlog = newBacklog(size, off+1)
	r.on.Store(true)
	drop := append([]*replicaLink(nil), r.replicas...)
	for _, l := range drop {
		r.removeLocked(l)
	}
	r.mu.Unlock()
	for _, l := range drop {
		l.conn.Close()
	}
}

// replCron is replication's periodic work, once a second from Run: PING
// to the replicas every repl-ping-replica-period seconds, newlines to
// those waiting for their image, replicas silent for repl-timeout
// dropped, the backlog resized to repl-backlog-size and freed after
// repl-backlog-ttl seconds without replicas.
func (srv *Server) replCron(now time.Time) {
	r := &srv.repl
	sec := now.Unix()
	if !r.on.Load() || r.cronSec.Swap(sec) == sec {
		return
	}
	period, timeout, ttl := srv.replInt("repl-ping-replica-period"), srv.replInt("repl-timeout"), srv.replInt("repl-backlog-ttl")
	size := srv.backlogSize()
	var stale []*replicaLink
	r.mu.Lock()
	r.cronLoops++
	if r.master == nil && period > 0 && r.cronLoops%period == 0 && len(r.replicas) > 0 {
		r.feedLocked(resp.AppendCommand(nil, []byte("PING")))
	}
	for _, l := range r.replicas {
		if l.presync {
			l.conn.Push([]byte("\n"))
		}
		if l.state == "online" && !l.hello.rdbOnly && sec-l.ackTime > timeout {
			stale = append(stale, l)
		}
	}
	r.refreshGoodLocked(sec)
	if r.backlog != nil && int64(len(r.backlog.buf)) != size {
		r.backlog = r.backlog.resized(size)
	}
	if r.master == nil && len(r.replicas) == 0 && ttl > 0 && sec-r.lonelySince > ttl {
		r.backlog, r.unit = nil, 0
		r.on.Store(false)
	}
	r.mu.Unlock()
	for _, l := range stale {
		log.Printf("recached: disconnecting timedout replica %s:%d", l.ip, l.port)
		srv.dropReplicaLink(l)
		l.conn.Close()
	}
}

// replWait is a WAIT blocked until n replicas acknowledge offset off.
type replWait struct {
	w   *waiter
	n   int
	off int64
}

// acksFor counts the replicas that acknowledged offset off; the caller
// holds r.mu.
func (r *replState) acksFor(off int64) int {
	n := 0
	for _, l := range r.replicas {
		if l.state == "online" && l.ackOffset >= off {
			n++
		}
	}
	return n
}

// serveWaits answers the WAITs the replicas' acknowledgements satisfy.
func (srv *Server) serveWaits() {
	r := &srv.repl
	r.mu.Lock()
	var done []replWait
	kept := r.waits[:0]
	reg := &srv.blocking
	for _, w := range r.waits {
		reg.mu.Lock()
		live := w.w.live
		reg.mu.Unlock()
		if !live {
			continue
		}
		if r.acksFor(w.off) >= w.n {
			done = append(done, w)
			continue
		}
		kept = append(kept, w)
	}
	for i := len(kept); i < len(r.waits); i++ {
		r.waits[i] = replWait{}
	}
	r.waits = kept
	counts := make([]int, len(done))
	for i, w := range done {
		counts[i] = r.acksFor(w.off)
	}
	r.mu.Unlock()
	for i, w := range done {
		srv.endWait(w.w, []byte(":"+strconv.Itoa(counts[i])+"\r\n"))
	}
}

// cmdWait is WAIT numreplicas timeout: it answers how many replicas
// acknowledged every write the client made, blocking until numreplicas
// have or the timeout (milliseconds, 0 forever) passes. While it blocks
// the replicas are asked for their offsets (REPLCONF GETACK *).
func cmdWait(s *Session) {
	n, ok := resp.ParseInt(s.Args[1])
	if !ok {
		s.W.Error(errNotInt)
		return
	}
	ms, ok := resp.ParseInt(s.Args[2])
	if !ok {
		s.W.Error("ERR timeout is not an integer or out of range")
		return
	}
	if ms < 0 {
		s.W.Error("ERR timeout is negative")
		return
	}
	srv := s.srv
	r := &srv.repl
	r.mu.Lock()
	if r.master != nil {
		r.mu.Unlock()
		s.W.Error("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.")
		return
	}
	off := s.woff.Load()
	acks := r.acksFor(off)
	if int64(acks) >= n || !s.canBlock() {
		r.mu.Unlock()
		s.W.Int(int64(acks))
		return
	}
	w := &waiter{}
	s.block(w, nil, 0)
	r.waits = append(r.waits, replWait{w: w, n: int(n), off: off})
	if r.backlog != nil && len(r.replicas) > 0 {
		r.feedLocked(getAck)
	}
	r.mu.Unlock()
	if ms > 0 && ms < maxTimerMs {
		reg := &srv.blocking
		reg.mu.Lock()
		w.timer = time.AfterFunc(time.Duration(ms)*time.Millisecond, func() {
			r.mu.Lock()
			c := r.acksFor(off)
			r.mu.Unlock()
			srv.endWait(w, []byte(":"+strconv.Itoa(c)+"\r\n"))
		})
		reg.mu.Unlock()
	}
}

// getAck is REPLCONF GETACK * as the stream carries it.
var getAck = resp.AppendCommand(nil, []byte("REPLCONF"), []byte("GETACK"), []byte("*"))
