package server

import (
	"sync/atomic"
	"time"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
	recsync "github.com/recached/recached/sync"
)

// Session is one client connection's state, driven by a transport: it feeds
// requests to Exec and sends what Exec appended to W. A session is used by
// one goroutine at a time; fields other goroutines read (CLIENT LIST) are
// atomics.
type Session struct {
	srv *Server
	// ID is the connection id CLIENT ID reports.
	ID int64
	// Args are the running command's arguments, valid during the handler.
	Args [][]byte
	// W collects replies; the transport sends and truncates it.
	W resp.Writer
	// DBIndex is the selected database.
	DBIndex int
	// errCounted is set when the error reply just written by a script
	// was already counted in INFO errorstats as the reply of a command
	// the script called; callLocked then counts it as a failed call only.
	errCounted bool
	// trk is the session's CLIENT TRACKING state, nil while tracking is
	// off; other sessions' writes read it (tracking.go).
	trk atomic.Pointer[tracker]
	// inScript is set while a command a script called runs.
	inScript bool
	// postponed is the request CLIENT PAUSE holds (pause.go).
	postponed [][]byte
	// WS is set for sessions on the WebSocket port.
	WS bool
	// replMaster is set in the session a replica runs its master's
	// stream in (repl_replica.go).
	replMaster bool
	// Quit is set once the client asked to close (QUIT) or must be dropped;
	// the transport closes the connection after sending W.
	Quit bool

	// blocked is the state of a blocking command (blocking.go): while it
	// is not blockNone the transport runs no further request of the
	// connection. blockReply is the answer waiting for Blocked to hand it
	// over.
	blocked    atomic.Int32
	blockReply []byte

	db     *keyspace.DB
	conn   Conn
	authed bool
	// user is the ACL user the session runs as (acl.go); other
	// goroutines read it (CLIENT LIST, ACL DELUSER).
	user    atomic.Pointer[User]
	created time.Time

	name       atomic.Pointer[string]
	libName    atomic.Pointer[string]
	libVer     atomic.Pointer[string]
	lastCmd    atomic.Pointer[Command]
	lastActive atomic.Int64 // keyspace clock (seconds) of the last command
	dbShown    atomic.Int32
	proto      atomic.Int32
	noEvict    bool
	noTouch    bool
	// oom is set when the running command found memory over maxmemory
	// with nothing to evict (evict.go): its script may not write.
	oom bool
	// acctKeys is accountKeys' scratch list.
	acctKeys [][]byte
	// geo holds the buffers of the GEO searches (cmd_geo.go).
	geo geoScratch

	multi *multiState
	// multiLen is 1 + the commands queued in an open MULTI, 0 without one,
	// for CLIENT LIST from other goroutines.
	multiLen atomic.Int32
	watch    *watchState

	// Subscribed counts channels and patterns; in RESP2 a subscribed
	// connection may only run the pub/sub context commands.
	subscribed int
	// ps is the session's side of its pub/sub subscriptions (pubsub.go).
	ps pubsubState
	// sub is the session's sync registrations, made on first use; scope,
	// when not nil, restricts the keys and channels it may use (syncer.go).
	sub   *recsync.Sub
	scope *recsync.Scope
	// scopeView is scope's patterns for other goroutines (SyncConns).
	scopeView atomic.Pointer[[]string]
	// chanScope, when set, decides instead of scope which channels a
	// scoped session may name (an API key's capability, transport_api.go).
	chanScope func(channel []byte) bool

	lastTop     *Command // the last top-level command looked up, for pipelines
	lastWrapped *Command // the same for commands wrapped by DEDUP
	keys        [][]byte
	masks       []uint64
	lockDB      uint64 // bit i set: masks[i] has shards locked
	// hashedKey is the argument of a one-key command whose shard
	// addLocks locked, and keyHash its hash, until unlock: lookupKey
	// finds that argument without hashing it again.
	hashedKey []byte
	keyHash   uint64
	inExec    bool
	// afterExec is the work commands inside EXEC left for after its
	// locks are released (CONFIG SET appendonly).
	afterExec []func()
	eff       Effect
	// scriptHold, set while a scoped session's script runs, holds its effects
	// and saves the keys it writes (script_hold.go).
	scriptHold *scriptHold

	// inDedup is set while a DEDUP-wrapped command runs, with its mark.
	inDedup     bool
	dedupClient []byte
	dedupWire   uint64
	emitted     uint64 // effects this session has emitted
	// script is the registered run of the script this session is about
	// to run; scriptSess is the session the connection's scripts run in
	// (script.go).
	script     *scriptRun
	scriptSess *Session
	// replHello is what REPLCONF announced, replica the link once the
	// connection is a replica, woff the replication offset after the
	// session's last write, which WAIT waits for (repl_primary.go).
	replHello *replHello
	// replUnit: the session holds the stream's open transaction (one of
	// replState.unit); replMarked: the running DEDUP command's mark is in
	// it. Both under replState.mu (repl_dedup.go). replWrap counts the
	// commands running now whose effects go to the replicas as one
	// transaction (EXEC, a script, DEDUP).
	replUnit, replMarked bool
	replWrap             atomic.Int32
	// beforeReply, set by the transport (SetBeforeReply), runs before a
	// command starts its reply.
	beforeReply func()
	// logUnit is the append-only log's id for the transaction the running
	// wrapped command writes (0 until its first effect): its effects are
	// logged as one unit, ended by endUnit (persist_unit.go).
	logUnit uint64
	replica atomic.Pointer[replicaLink]
	woff    atomic.Int64
	// quitAfterWait: the blocking command's answer ends the connection
	// (-UNBLOCKED, repl_replica.go); set by the answering goroutine,
	// turned into Quit by Blocked in the session's own.
	quitAfterWait atomic.Bool
	// scriptOf is, in a script session, the connection's session.
	scriptOf *Session
	// job is, in a script session, the script startScript hands over.
	job *scriptJob
	// pipe is the transport's read-ahead of the connection's requests
	// (SetPipeline, script.go).
	pipe    Pipeline
	scratch []byte // per-command formatting space (itoa)
	// zeff holds the buffers of ZADD's effect, reused from one command
	// to the next (reusedZEffect); nil until the first ZADD.
	zeff *zeffectBufs
	// reply is the CLIENT REPLY mode; while it is not replyOn, pushSpans
	// are the parts of W the running request wrote that are pushes
	// (subscribe confirmations, its own messages), kept when its replies
	// are dropped (dispatch.go).
	reply     replyMode
	pushSpans [][2]int
	// absent is the keys of the running write that did not exist before
	// it, kept only while the "new" keyspace event is on (effects.go).
	absent [][]byte
}

func newSession(srv *Server, c Conn, ws bool) *Session {
	s := &Session{
		srv:     srv,
		ID:      srv.nextID.Add(1),
		conn:    c,
		WS:      ws,
		created: time.Now(),
		masks:   make([]uint64, len(srv.ks.DBs)),
	}
	s.W.Proto = 2
	s.proto.Store(2)
	s.selectDB(0)
	s.user.Store(srv.acl.def)
	if c == nil {
		s.user.Store(srv.acl.internal) // the log's replay, never limited
	}
	s.authed = srv.acl.defaultOpen()
	s.lastActive.Store(int64(srv.ks.Clock()))
	s.setScope(srv.syncer.initialScope(ws))
	return s
}

// Conn returns the session's transport connection.
func (s *Session) Conn() Conn { return s.conn }

// DB returns the selected database.
func (s *Session) DB() *keyspace.DB { return s.db }

func (s *Session) selectDB(i int) {
	s.DBIndex = i
	s.db = s.srv.ks.DBs[i]
	s.dbShown.Store(int32(i))
}

func (s *Session) setProto(p int) {
	s.W.Proto = p
	s.proto.Store(int32(p))
}

// release drops what the session holds in shared structures; the server
// calls it when the connection closes.
func (s *Session) release() {
	s.releaseBlocked()
	s.unwatchAll()
	s.pubsubRelease()
	s.dropSync()
	s.srv.disableTracking(s)
	s.srv.unmonitor(s)
	if s.postponed != nil {
		s.srv.dropHeld(s)
	}
}

// str returns a session string field, "" when unset.
func str(p *atomic.Pointer[string]) string {
	if v := p.Load(); v != nil {
		return *v
	}
	return ""
}

// lookupType returns key's entry when it holds a value of type t, nil when
// the key is absent; wrong reports (and replies to) a value of another type.
func (s *Session) lookupType(key []byte, t keyspace.Type) (e *keyspace.Entry, wrong bool) {
	return s.checkType(s.db.Lookup(key), t)
}

// lookupWrite is lookupType for the write commands that count their own
// size (LPUSH, HSET, SADD, ZADD: accountWrite), which find the key
// through lookupKey without hashing it again. Only the session's own
// commands may use it: it reads the session's lock state, which a blocked
// client's command, run by the writer that served it, must not read.
func (s *Session) lookupWrite(key []byte, t keyspace.Type) (e *keyspace.Entry, wrong bool) {
	return s.checkType(s.lookupKey(key), t)
}

// checkType returns e, or nil and wrong after replying the WRONGTYPE
// error when e holds a value of another type than t.
func (s *Session) checkType(e *keyspace.Entry, t keyspace.Type) (*keyspace.Entry, bool) {
	if e != nil && e.Type() != t {
		s.W.Error(errWrongType)
		return nil, true
	}
	return e, false
}

// accountWrite brings the used memory of key up to date after the running
// command changed its value in place (FlagSized): e is the entry the
// command's lookup found, counted in the shard of the hash addLocks kept
// without a second lookup, or nil when the command created the key, which
// is then looked up, as is a key whose hash was not kept. The key must
// still exist.
func (s *Session) accountWrite(key []byte, e *keyspace.Entry) {
	if e == nil || !s.isHashedKey(key) {
		s.db.Account(key)
		return
	}
	s.db.AccountIn(keyspace.ShardOfHash(s.keyHash), e)
}

// SetBeforeReply makes fn run, on the session's goroutine, each time a
// command is about to write its reply (not for the commands inside EXEC
// or a script, whose replies are parts of one). A transport that queues
// pushes from other goroutines moves those queued so far into W there, so
// that a message published before the command ran precedes its reply and
// one published while it ran follows it, in the order Redis, which runs
// one command at a time, sends them.
func (s *Session) SetBeforeReply(fn func()) { s.beforeReply = fn }
