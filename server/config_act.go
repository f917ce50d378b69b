package server

import (
	"log"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/recached/recached/resp"
)

// The CONFIG parameters that act on connections and the server's periodic
// work: their values are copied into atomics when set (the parameters'
// apply functions), so that the paths that read them take no lock.
//
//	timeout                     idle clients closed (serverCron)
//	hz                          the rate of the periodic work (Run)
//	tcp-keepalive               keep-alive period of new RESP connections
//	client-output-buffer-limit  normal and pubsub classes (CheckOutput)
//	client-query-buffer-limit   a connection holding more unparsed input is closed
//	proto-max-bulk-len          a longer bulk string is a protocol error
//	port, bind                  the RESP transport listens there (Relistener)
//
// The replica class of client-output-buffer-limit applies to the
// connections of replicas (repl_primary.go).

// liveConfig holds the acting parameters' values.
type liveConfig struct {
	timeout   atomic.Int64 // seconds; 0 keeps idle clients
	hz        atomic.Int64 // periodic work per second, 1 to 500
	keepAlive atomic.Int64 // seconds; 0 turns keep-alive off
	queryMax  atomic.Int64 // bytes of unparsed input a client may hold
	bulkMax   atomic.Int64 // proto-max-bulk-len
	// out is client-output-buffer-limit by class (normal, replica,
	// pubsub).
	out atomic.Pointer[[3]outputLimit]
	// idleCheck is when (unix seconds) idle clients were last looked for.
	idleCheck atomic.Int64
	// setMaxIntset is set-max-intset-entries (cmd_set.go).
	setMaxIntset atomic.Int64
	// relistener moves the RESP listening sockets (port, bind); under
	// cfgMu.
	relistener Relistener
	// listFill is list-max-listpack-size (cmd_list.go).
	listFill atomic.Int64
	// hllSparseMax is hll-sparse-max-bytes (cmd_hll.go).
	hllSparseMax atomic.Int64
}

// Output classes, in client-output-buffer-limit's order.
const (
	classNormal = iota
	classReplica
	classPubSub
)

// outputLimit is one class's client-output-buffer-limit: a connection
// holding more than hard bytes of unsent output, or more than soft for
// softFor, is closed. Zero disables a bound.
type outputLimit struct {
	hard, soft int64
	softFor    time.Duration
}

// withApply returns p acting through fn when its value is set.
func withApply(p *configParam, fn func(srv *Server, v string)) *configParam {
	p.apply = fn
	return p
}

// applyInt makes a numeric parameter's value the content of a liveConfig
// field. CONFIG SET passes the value as given, so a memory value may carry
// a unit ("1mb").
func applyInt(field func(l *liveConfig) *atomic.Int64) func(srv *Server, v string) {
	return func(srv *Server, v string) {
		n, ok := resp.ParseInt(v)
		if !ok {
			u, _ := parseMemory(v)
			n = int64(min(u, math.MaxInt64))
		}
		field(&srv.live).Store(n)
	}
}

var (
	applyTimeout    = applyInt(func(l *liveConfig) *atomic.Int64 { return &l.timeout })
	applyKeepAlive  = applyInt(func(l *liveConfig) *atomic.Int64 { return &l.keepAlive })
	applyQueryLimit = applyInt(func(l *liveConfig) *atomic.Int64 { return &l.queryMax })
	applyBulkLimit  = applyInt(func(l *liveConfig) *atomic.Int64 { return &l.bulkMax })
)

// applyHz sets the periodic work's rate, within Redis's 1 to 500.
func applyHz(srv *Server, v string) {
	n, _ := strconv.ParseInt(v, 10, 64)
	srv.live.hz.Store(min(max(n, 1), 500))
}

// applyOutputLimits reads client-output-buffer-limit's three classes, as
// CONFIG GET shows them (class hard soft seconds, for all three). CONFIG
// SET passes the classes it was given and has stored the merged value.
func applyOutputLimits(srv *Server, v string) {
	full := v // at start: the whole value
	if merged, ok := srv.params["client-output-buffer-limit"]; ok {
		full = merged // after CONFIG SET of some classes: all three
	}
	var lim [3]outputLimit
	f := strings.Fields(full)
	for i := range lim {
		if 4*i+3 >= len(f) {
			break
		}
		hard, _ := strconv.ParseInt(f[4*i+1], 10, 64)
		soft, _ := strconv.ParseInt(f[4*i+2], 10, 64)
		secs, _ := strconv.ParseInt(f[4*i+3], 10, 64)
		lim[i] = outputLimit{hard: hard, soft: soft, softFor: time.Duration(secs) * time.Second}
	}
	srv.live.out.Store(&lim)
}

// outputClass is the client-output-buffer-limit class of the session: a
// subscribed client is a pub/sub client, as Redis classes it.
func (s *Session) outputClass() int {
	if s.replica.Load() != nil {
		return classReplica
	}
	st := &s.ps
	if st.counts[kindChannel].Load()+st.counts[kindPattern].Load()+st.counts[kindShard].Load() > 0 {
		return classPubSub
	}
	return classNormal
}

// outputLimitOf returns the limits of a class.
func (srv *Server) outputLimitOf(class int) outputLimit {
	if l := srv.live.out.Load(); l != nil {
		return l[class]
	}
	return outputLimit{}
}

// pastHardLimit reports whether pending bytes of output are over the
// session's class's hard limit.
func (s *Session) pastHardLimit(pending int) bool {
	l := s.srv.outputLimitOf(s.outputClass())
	return l.hard > 0 && int64(pending) > l.hard
}

// checkOutputLimit applies the session's class's output limits to pending
// bytes of unsent output, closing the connection when they are passed;
// it reports whether it did. softSince remembers when the soft limit was
// first passed.
func (s *Session) checkOutputLimit(pending int) bool {
	class := s.outputClass()
	l := s.srv.outputLimitOf(class)
	st := &s.ps
	if l.hard == 0 && l.soft == 0 { // normal clients by default: no limit
		if st.softSince.Load() != 0 {
			st.softSince.Store(0)
		}
		return false
	}
	var now int64
	if l.soft > 0 && int64(pending) > l.soft {
		now = time.Now().UnixNano()
	}
	over, since := outputOverLimitOf(l, pending, now, st.softSince.Load())
	st.softSince.Store(since)
	if over {
		s.dropSlowClient(class, pending)
	}
	return over
}

// outputOverLimitOf applies limits l to a connection holding pending
// bytes at time now (unix nanoseconds), given since, when the soft limit
// was first seen passed (0: not passed). It returns whether the connection
// must be closed and the new since.
func outputOverLimitOf(l outputLimit, pending int, now, since int64) (bool, int64) {
	p := int64(pending)
	switch {
	case l.hard > 0 && p > l.hard:
		return true, since
	case l.soft == 0 || p <= l.soft:
		return false, 0
	case since == 0:
		return false, now
	default:
		return now-since >= int64(l.softFor), since
	}
}

// dropSlowClient closes, once, the connection of a client past its
// class's output limits; other clients are not slowed by it.
func (s *Session) dropSlowClient(class int, pending int) {
	if !s.ps.closing.CompareAndSwap(false, true) {
		return
	}
	addr := ""
	if s.conn != nil {
		addr = s.conn.RemoteAddr()
	}
	name := [3]string{"normal", "replica", "pubsub"}[class]
	log.Printf("client id=%d addr=%s closed for overcoming of output buffer limits (%s, %d bytes pending)", s.ID, addr, name, pending)
	s.abort()
}

// aborter is implemented by transports that can close a connection
// without sending what they still hold for it, as Redis frees a client
// past its output limits: the output it did not read is dropped.
type aborter interface {
	Abort()
}

// abort closes the session's connection, dropping its unsent output when
// the transport can; Close, which sends it first, otherwise.
func (s *Session) abort() {
	switch c := s.conn.(type) {
	case nil:
	case aborter:
		c.Abort()
	default:
		c.Close()
	}
}

// Dropped reports whether the session's connection was closed for its
// output limits: the transport then writes nothing more to it and runs no
// more of its requests.
func (s *Session) Dropped() bool { return s.ps.closing.Load() }

// QueryBufferLimit is client-query-buffer-limit: transports close a
// connection holding more bytes of input not yet run.
func (srv *Server) QueryBufferLimit() int { return int(srv.live.queryMax.Load()) }

// KeepAlive is tcp-keepalive, the keep-alive period transports set on a
// new connection; 0 turns keep-alive off.
func (srv *Server) KeepAlive() time.Duration {
	return time.Duration(srv.live.keepAlive.Load()) * time.Second
}

// tickPeriod is the time between two runs of the periodic work (hz).
func (srv *Server) tickPeriod() time.Duration {
	hz := srv.live.hz.Load()
	if hz <= 0 {
		hz = 10
	}
	return time.Second / time.Duration(hz)
}

// serverCron is the part of the periodic work config_act.go owns: once a
// second it closes idle clients; every tick it follows a change of hz.
func (srv *Server) serverCron(now time.Time, t *time.Ticker, period *time.Duration) {
	if p := srv.tickPeriod(); p != *period {
		*period = p
		t.Reset(p)
	}
	sec := now.Unix()
	if srv.live.idleCheck.Load() == sec {
		return
	}
	srv.live.idleCheck.Store(sec)
	if limit := srv.live.timeout.Load(); limit > 0 {
		srv.closeIdleClients(int64(srv.ks.Clock()), limit)
	}
}

// closeIdleClients closes the connections idle for more than limit
// seconds (timeout), except, as in Redis, blocked clients (their own
// timeout governs them) and subscribers (they wait for messages by
// design), and WebSocket connections, which the bridge keeps alive with
// its own pings for the sync replicas they carry, and other transports'
// connections that check their peers' liveness themselves (KeepAliver).
// A RESP sync client is closed like any other; the sync clients reconnect.
func (srv *Server) closeIdleClients(clock, limit int64) {
	for _, s := range srv.sessions() {
		if clock-s.lastActive.Load() <= limit || s.WS || s.conn == nil || s.isBlocked() || s.outputClass() == classPubSub {
			continue
		}
		if _, ok := s.conn.(KeepAliver); ok {
			continue
		}
		s.conn.Close()
	}
}

// KeepAliver is implemented by a transport's Conn whose protocol detects
// dead peers with heartbeats of its own (the realtime port): timeout does
// not close it.
type KeepAliver interface {
	KeepsAlive()
}

// NoteInput records that the client sent bytes that do not yet make a
// whole request: like a command, they count as activity for timeout and
// CLIENT LIST's idle (Redis's last interaction is its last read), so a
// client uploading a large value slowly is not closed as idle.
func (s *Session) NoteInput() { s.lastActive.Store(int64(s.srv.ks.Clock())) }

// IdleSeconds is the time since the client's last request or input, in
// the keyspace clock's seconds (CLIENT LIST's idle); transports free an
// idle client's query buffer by it.
func (s *Session) IdleSeconds() int64 { return int64(s.srv.ks.Clock()) - s.lastActive.Load() }

// Relistener is the RESP transport's side of CONFIG SET port and bind, and
// of INFO's recached_event_loops.
type Relistener interface {
	// Relisten opens listening sockets on the new addresses, then closes
	// the old ones, keeping the connections they accepted; when a new
	// socket cannot be opened it keeps the old ones and returns the error.
	Relisten(bind []string, port int) error
	// Loops is the number of event loops the listener serves with, which
	// may be fewer than io-threads asks (no more loops than processors).
	Loops() int
}

// SetRelistener makes r the transport that CONFIG SET port and bind move
// (the RESP listener registers itself when it serves).
func (srv *Server) SetRelistener(r Relistener) {
	srv.cfgMu.Lock()
	srv.live.relistener = r
	srv.cfgMu.Unlock()
}

// servedLoops is the number of event loops the RESP listener serves with
// (Relistener.Loops); 0 when there is no listener.
func (srv *Server) servedLoops() int {
	srv.cfgMu.RLock()
	r := srv.live.relistener
	srv.cfgMu.RUnlock()
	if r == nil {
		return 0
	}
	return r.Loops()
}

// relisten moves the RESP listener when a CONFIG SET changed port or bind
// from prev; under cfgMu. When it cannot, it returns the parameter to name
// and Redis's text (config.c's applyPort and applyBind); "" when it could.
func (srv *Server) relisten(prev Config) (param, why string) {
	cfg := srv.cfg
	r := srv.live.relistener
	if r == nil || cfg.Port == prev.Port && cfg.Bind == prev.Bind {
		return "", ""
	}
	if err := r.Relisten(strings.Fields(cfg.Bind), cfg.Port); err != nil {
		if cfg.Port != prev.Port {
			return "port", "Unable to listen on this port. Check server logs."
		}
		return "bind", "Failed to bind to specified addresses."
	}
	return "", ""
}

// queryFreer is implemented by transports whose connections keep a query
// buffer of their own: CLIENT LIST shows its free bytes as qbuf-free.
type queryFreer interface {
	QueryFree() int
}

// intParam returns the numeric value of a parameter kept in params (a
// memory value may carry a unit), def when it was never set. The caller
// holds cfgMu.
func (srv *Server) intParam(name string, def int) int {
	v, ok := srv.params[name]
	if !ok {
		return def
	}
	if n, ok := resp.ParseInt([]byte(v)); ok {
		return int(n)
	}
	n, _ := parseMemory(v)
	return int(min(n, math.MaxInt64))
}
