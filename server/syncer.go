package server

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
	recsync "github.com/recached/recached/sync"
)

// The sync protocol's error replies (SPEC sections 4, 5 and 8). Scope
// violations use Redis's own ACL texts.
const (
	errScopeKey       = "NOPERM this user has no permissions to access one of the keys used as arguments"
	errScopeChannel   = "NOPERM this user has no permissions to access one of the channels used as arguments"
	errScopeAll       = "NOPERM this command reads the whole keyspace, which a scoped connection may not do"
	errScopeDB        = "NOPERM this command names a database, and a scoped connection stays in its own"
	errScopePattern   = "NOPERM BY and GET patterns read keys out of any scope, which a scoped connection may not do"
	errNoToken        = "NOPERM this connection has no scope: send SYNC TOKEN <token> first"
	errOpenSync       = "NOPERM open-mode SYNC is disabled on this server: send SYNC TOKEN <token>"
	errInvalidToken   = "NOPERM invalid token"
	errTokenExpired   = "NOPERM token expired"
	errNoTokenSecret  = "ERR SYNC TOKEN needs a token secret, and this server has none configured"
	errTooManyQueries = "ERR too many live queries: at most 64 per connection"
	errQueryTooBig    = "ERR live query matches more than 10000 keys"
	errTooManyWatched = "ERR too many watched keys: at most 1024 per connection"
	errQSubInMulti    = "ERR QSUB inside MULTI is not allowed"
)

// recreateChunk is the most elements one re-creation push carries; bigger
// values are re-created by several pushes.
const recreateChunk = 512

// syncer is the engine side of the sync protocol: it owns the router of
// SYNC scopes, live queries and watched keys, and its effect hook turns
// every write into mutation and keychange pushes for the other
// connections interested in the key.
type syncer struct {
	srv    *Server
	router *recsync.Router
	// secret is the token secret; nil in open mode.
	secret []byte
	// noToken is the scope of a WebSocket connection that has not presented
	// a token in strict mode: it grants nothing.
	noToken *recsync.Scope
	scratch sync.Pool // *routeScratch
	// pushes counts the frames handed to sync connections, for the
	// recached_sync_pushes_total metric.
	pushes atomic.Int64
	// dropped counts the frames transports discarded, for the
	// recached_sync_pushes_dropped_total metric (CountDroppedPushes).
	dropped atomic.Int64
}

// push hands one frame to a sync connection and counts it.
func (sy *syncer) push(sub *recsync.Sub, b []byte) {
	sy.pushes.Add(1)
	sub.Conn.Push(b)
}

// routeScratch is one routing's working memory, reused across effects.
type routeScratch struct {
	hits, hits2 []recsync.Hit
	subs        []*recsync.Sub
	buf         []byte
	args        [][]byte
}

func newSyncer(srv *Server, dbs int) *syncer {
	sy := &syncer{srv: srv, router: recsync.NewRouter(dbs), noToken: recsync.NewScope(nil)}
	if sec := srv.cfg.TokenSecret; sec != "" {
		sy.secret = []byte(sec)
	}
	sy.scratch.New = func() any { return &routeScratch{} }
	srv.resetHooks = append(srv.resetHooks, sy.reset)
	return sy
}

// scoped reports whether the session has rights to check, a scope or a
// channel capability: the dispatcher calls scopeCheck for those only.
func (s *Session) scoped() bool { return s.scope != nil || s.chanScope != nil }

// scopeCheck vets a prepared command against a scoped session's rights;
// it replies and returns false to refuse it.
func scopeCheck(s *Session, cmd *Command) bool {
	return (s.scope == nil || s.checkScope(cmd)) && (s.chanScope == nil || s.checkChannels(cmd))
}

// initialScope is a new connection's scope: in strict mode a WebSocket
// connection starts with no rights until it presents a token; everything
// else is unchecked until it does.
func (sy *syncer) initialScope(ws bool) *recsync.Scope {
	if ws && sy.secret != nil {
		return sy.noToken
	}
	return nil
}

// syncSub returns the session's sync registrations, made on first use.
func (s *Session) syncSub() *recsync.Sub {
	if s.sub == nil {
		var p recsync.Pusher = nopPusher{}
		if s.conn != nil {
			p = s.conn
		}
		s.sub = s.srv.syncer.router.NewSub(p, s)
	}
	return s.sub
}

type nopPusher struct{}

func (nopPusher) Push([]byte) {}

// dropSync forgets the session's registrations (connection closed).
func (s *Session) dropSync() {
	if s.sub != nil {
		s.srv.syncer.router.Drop(s.sub)
	}
}

// reset is the RESET hook: registrations go and the scope is a new
// connection's again.
func (sy *syncer) reset(s *Session) {
	s.dropSync()
	s.setScope(sy.initialScope(s.WS))
}

// setScope sets the session's scope (nil: unchecked) and filters its
// pub/sub pattern deliveries to channels in it.
func (s *Session) setScope(sc *recsync.Scope) {
	s.scope = sc
	if sc == nil {
		s.scopeView.Store(nil)
		s.setChannelFilter(nil)
		return
	}
	pats := sc.Patterns()
	s.scopeView.Store(&pats)
	s.setChannelFilter(sc.Match)
}

// checkScope enforces a scoped connection's rights before cmd runs (SPEC
// section 4, strict mode), from the command table alone: every key argument
// and every channel must be in the token's scope; a connection without a
// token may run no command that takes keys or channels, reads the whole
// keyspace, is filtered to a scope, or runs another command (DEDUP, whose
// marks every client shares); and no scoped connection may read the whole
// keyspace, reveal or change server state (ACL categories admin and
// dangerous: INFO, CLIENT LIST, …) or name a database other than its own.
// On refusal it replies -NOPERM and reports false: nothing executes.
func (s *Session) checkScope(cmd *Command) bool {
	wholeKeyspace := !cmd.HasKeys() && cmd.Flags&(FlagAllKeys|FlagAllDBs|FlagAllChans) != 0
	if s.scope == s.srv.syncer.noToken {
		if cmd.HasKeys() || cmd.HasChannels() || wholeKeyspace || cmd.Flags&FlagFiltered != 0 || cmd.Wraps > 0 {
			s.reject(cmd, errNoToken)
			return false
		}
	}
	switch {
	case cmd.HasChannels():
		for _, c := range cmd.ChannelArgs(s.Args) {
			if !s.channelAllowed(c) {
				s.reject(cmd, errScopeChannel)
				return false
			}
		}
		return true
	case cmd.Flags&FlagFiltered != 0:
		return true // its results are filtered to the scope
	case wholeKeyspace:
		s.reject(cmd, errScopeAll)
		return false
	case cmd.restricted:
		s.reject(cmd, "NOPERM this user has no permissions to run the '"+cmd.Name+"' command")
		return false
	case cmd.DBArgs != nil && len(cmd.DBArgs(s.Args)) > 0:
		s.reject(cmd, errScopeDB)
		return false
	case cmd.PatternKeys != nil && cmd.PatternKeys(s.Args):
		s.reject(cmd, errScopePattern)
		return false
	}
	s.keys = cmd.KeyArgs(s.keys[:0], s.Args)
	for _, k := range s.keys {
		if !s.scope.Match(k) {
			s.reject(cmd, errScopeKey)
			return false
		}
	}
	return true
}

// routeEffect is the sync effect hook, which publish calls while some
// sync client is registered. It runs under the shard lock of the effect's
// key(s), so it only routes, encodes each frame once and hands the bytes
// to the targets' Push, which queue them. An effect has the shape of a
// command of the table, whose Relocates says whether it moves keys
// between names or databases.
func (sy *syncer) routeEffect(e *Effect) {
	sc := sy.scratch.Get().(*routeScratch)
	defer sy.putScratch(sc)
	switch e.Kind {
	case EffectDB:
		if cmd := sy.srv.table.Lookup(e.Args[0]); cmd != nil {
			sy.dbWide(e, cmd, sc)
		}
		return
	case EffectKey:
		if sy.relocate(e, sc) {
			return
		}
	}
	sy.route(e, sc)
}

// relocate delivers an effect that moves a key to another name or
// database, and reports whether e was one.
func (sy *syncer) relocate(e *Effect, sc *routeScratch) bool {
	cmd := sy.srv.table.Lookup(e.Args[0])
	if cmd == nil {
		return false
	}
	switch cmd.Relocates {
	case RelocRename:
		if len(e.Args) == 3 {
			sy.rename(e, sc)
			return true
		}
	case RelocCopy:
		if db, ok := sy.targetDB(cmd, e); ok && len(e.Args) >= 3 {
			sy.recreateFor(sc, e.Origin, db, e.Args[2])
			return true
		}
	case RelocMove:
		if db, ok := sy.targetDB(cmd, e); ok {
			sy.deleteFor(sc, e.Origin, e.DB, e.Key)
			sy.recreateFor(sc, e.Origin, db, e.Key)
			return true
		}
	}
	return false
}

func (sy *syncer) putScratch(sc *routeScratch) {
	if cap(sc.buf) > 1<<20 {
		sc.buf = nil
	}
	clear(sc.hits[:cap(sc.hits)])
	clear(sc.hits2[:cap(sc.hits2)])
	clear(sc.subs[:cap(sc.subs)])
	clear(sc.args[:cap(sc.args)])
	sy.scratch.Put(sc)
}

// targetDB reads the database an effect of cmd names (COPY's DB n, MOVE's
// db); the effect's own database when it names none.
func (sy *syncer) targetDB(cmd *Command, e *Effect) (int, bool) {
	if cmd.DBArgs == nil {
		return e.DB, true
	}
	dbs := cmd.DBArgs(e.Args)
	if len(dbs) == 0 {
		return e.DB, true
	}
	return sy.dbIndex(dbs[len(dbs)-1])
}

// dbIndex reads a database index an effect names.
func (sy *syncer) dbIndex(b []byte) (int, bool) {
	n, ok := resp.ParseInt(b)
	return int(n), ok && n >= 0 && n < int64(len(sy.srv.ks.DBs))
}

// isOrigin reports whether sub belongs to the session that made the effect:
// a writer never gets its own pushes.
func isOrigin(sub *recsync.Sub, origin *Session) bool {
	return origin != nil && sub.Owner == any(origin)
}

// route delivers an ordinary effect: the effect itself as a mutation push
// and the key's new value as a keychange.
func (sy *syncer) route(e *Effect, sc *routeScratch) {
	sc.hits = sy.router.Route(e.DB, e.Key, sc.hits[:0])
	if len(sc.hits) == 0 {
		return
	}
	sc.buf = sc.buf[:0]
	var push, kc []byte
	for _, h := range sc.hits {
		if isOrigin(h.Sub, e.Origin) {
			continue
		}
		if h.Kind&recsync.Mutation != 0 {
			if push == nil {
				start := len(sc.buf)
				sc.buf = resp.AppendPush(sc.buf, e.Args...)
				push = sc.buf[start:len(sc.buf):len(sc.buf)]
			}
			sy.push(h.Sub, push)
		}
		if h.Kind&recsync.Keychange != 0 {
			if kc == nil {
				start := len(sc.buf)
				sc.buf = sy.appendKeychange(sc.buf, e.DB, e.Key)
				kc = sc.buf[start:len(sc.buf):len(sc.buf)]
			}
			sy.push(h.Sub, kc)
		}
	}
}

// frame returns the frame *f, building it at the end of sc.buf on first
// use; frames built earlier stay valid.
func (sc *routeScratch) frame(f *[]byte, build func(b []byte) []byte) []byte {
	if *f == nil {
		start := len(sc.buf)
		sc.buf = build(sc.buf)
		*f = sc.buf[start:len(sc.buf):len(sc.buf)]
	}
	return *f
}

// rename delivers RENAME src dst: a connection that sees both keys gets the
// RENAME itself; one that sees only the source gets DEL src; one that sees
// only the destination gets the destination re-created.
func (sy *syncer) rename(e *Effect, sc *routeScratch) {
	src, dst := e.Args[1], e.Args[2]
	sc.hits = sy.router.Route(e.DB, src, sc.hits[:0])
	sc.hits2 = sy.router.Route(e.DB, dst, sc.hits2[:0])
	if len(sc.hits) == 0 && len(sc.hits2) == 0 {
		return
	}
	recsync.SortHits(sc.hits)
	recsync.SortHits(sc.hits2)
	sc.buf = sc.buf[:0]
	var both, del, recreate, kcSrc, kcDst []byte
	frame := sc.frame
	db := sy.srv.ks.DBs[e.DB]
	i, j := 0, 0
	for i < len(sc.hits) || j < len(sc.hits2) {
		var sub *recsync.Sub
		var ks, kd recsync.Kind
		switch {
		case j >= len(sc.hits2) || i < len(sc.hits) && recsync.Before(sc.hits[i].Sub, sc.hits2[j].Sub):
			sub, ks = sc.hits[i].Sub, sc.hits[i].Kind
			i++
		case i >= len(sc.hits) || recsync.Before(sc.hits2[j].Sub, sc.hits[i].Sub):
			sub, kd = sc.hits2[j].Sub, sc.hits2[j].Kind
			j++
		default:
			sub, ks, kd = sc.hits[i].Sub, sc.hits[i].Kind, sc.hits2[j].Kind
			i++
			j++
		}
		if isOrigin(sub, e.Origin) {
			continue
		}
		switch ms, md := ks&recsync.Mutation != 0, kd&recsync.Mutation != 0; {
		case ms && md:
			sy.push(sub, frame(&both, func(b []byte) []byte { return resp.AppendPush(b, e.Args...) }))
		case ms:
			sy.push(sub, frame(&del, func(b []byte) []byte { return resp.AppendPush(b, bDEL, src) }))
		case md:
			sy.push(sub, frame(&recreate, func(b []byte) []byte { return sy.appendRecreate(b, db, dst, true) }))
		}
		if ks&recsync.Keychange != 0 {
			sy.push(sub, frame(&kcSrc, func(b []byte) []byte { return sy.appendKeychange(b, e.DB, src) }))
		}
		if kd&recsync.Keychange != 0 {
			sy.push(sub, frame(&kcDst, func(b []byte) []byte { return sy.appendKeychange(b, e.DB, dst) }))
		}
	}
}

// deleteFor tells the connections interested in key of database db that it
// is gone (MOVE's source).
func (sy *syncer) deleteFor(sc *routeScratch, origin *Session, db int, key []byte) {
	sc.hits = sy.router.Route(db, key, sc.hits[:0])
	var del, kc []byte
	for _, h := range sc.hits {
		if isOrigin(h.Sub, origin) {
			continue
		}
		if h.Kind&recsync.Mutation != 0 {
			sy.push(h.Sub, sc.frame(&del, func(b []byte) []byte { return resp.AppendPush(b, bDEL, key) }))
		}
		if h.Kind&recsync.Keychange != 0 {
			sy.push(h.Sub, sc.frame(&kc, func(b []byte) []byte { return appendNilKeychange(b, key) }))
		}
	}
}

// recreateFor sends the connections interested in key of database db its
// whole current value (COPY's and MOVE's destination, SWAPDB).
func (sy *syncer) recreateFor(sc *routeScratch, origin *Session, db int, key []byte) {
	if db < 0 || db >= len(sy.srv.ks.DBs) {
		return
	}
	sc.hits = sy.router.Route(db, key, sc.hits[:0])
	var rec, kc []byte
	for _, h := range sc.hits {
		if isOrigin(h.Sub, origin) {
			continue
		}
		if h.Kind&recsync.Mutation != 0 {
			sy.push(h.Sub, sc.frame(&rec, func(b []byte) []byte {
				return sy.appendRecreate(b, sy.srv.ks.DBs[db], key, true)
			}))
		}
		if h.Kind&recsync.Keychange != 0 {
			sy.push(h.Sub, sc.frame(&kc, func(b []byte) []byte { return sy.appendKeychange(b, db, key) }))
		}
	}
}

// dbWide delivers an effect on whole databases. A connection cannot be
// told which of its keys a flush removed (they are gone when the hook
// runs), so every connection with SYNC patterns or live queries in a
// flushed database gets the replayable push ">1 FLUSHDB": drop every key
// this connection synced. Watchers get a nil keychange per watched key.
// A swap of databases is a flush of both followed by the re-creation of
// every key of their new contents that each connection may see.
func (sy *syncer) dbWide(e *Effect, cmd *Command, sc *routeScratch) {
	switch cmd.Relocates {
	case RelocFlush:
		sy.flushed(sc, e.Origin, e.DB)
	case RelocFlushAll:
		for db := range sy.srv.ks.DBs {
			sy.flushed(sc, e.Origin, db)
		}
	case RelocSwap:
		dbs := cmd.DBArgs(e.Args)
		if len(dbs) != 2 {
			return
		}
		for _, a := range dbs {
			db, ok := sy.dbIndex(a)
			if !ok {
				continue
			}
			sy.flushed(sc, e.Origin, db)
			sy.replayDB(sc, e.Origin, db)
		}
	}
}

var flushDBPush = []byte(">1\r\n$7\r\nFLUSHDB\r\n")

// flushed tells the connections with registrations in db that it was
// emptied.
func (sy *syncer) flushed(sc *routeScratch, origin *Session, db int) {
	sc.subs = sy.router.Members(db, sc.subs[:0])
	for _, sub := range sc.subs {
		if !isOrigin(sub, origin) {
			sy.push(sub, flushDBPush)
		}
	}
	sc.buf = sc.buf[:0]
	sy.router.Watched(db, func(key string, subs []*recsync.Sub) {
		sc.buf = appendNilKeychange(sc.buf[:0], []byte(key))
		for _, sub := range subs {
			if !isOrigin(sub, origin) {
				sy.push(sub, sc.buf)
			}
		}
	})
}

// replayDB re-creates every key of db for the connections that see it.
// The caller (SWAPDB) holds every shard lock.
func (sy *syncer) replayDB(sc *routeScratch, origin *Session, db int) {
	d := sy.srv.ks.DBs[db]
	for i := 0; i < keyspace.NumShards; i++ {
		d.Range(i, func(k string, _ *keyspace.Entry) bool {
			sc.buf = sc.buf[:0]
			sy.recreateFor(sc, origin, db, []byte(k))
			return true
		})
	}
}

var keychangeHead = []byte("*3\r\n$9\r\nkeychange\r\n")

// appendKeychange appends ["keychange", key, value] with key's current
// value in database db: the string, a nil bulk string when absent, or the
// type name as a simple string.
func (sy *syncer) appendKeychange(b []byte, db int, key []byte) []byte {
	b = append(b, keychangeHead...)
	b = resp.AppendBulk(b, key)
	return appendValue(b, sy.srv.ks.DBs[db].Peek(key))
}

func appendNilKeychange(b, key []byte) []byte {
	b = append(b, keychangeHead...)
	b = resp.AppendBulk(b, key)
	return append(b, "$-1\r\n"...)
}

// appendValue appends a keychange or qstate value: a string as a bulk
// string, another type as its marker, absent as a nil bulk string.
func appendValue(b []byte, e *keyspace.Entry) []byte {
	switch {
	case e == nil:
		return append(b, "$-1\r\n"...)
	case e.Obj == nil:
		return resp.AppendBulk(b, e.Str)
	}
	b = append(b, '+')
	b = append(b, e.Type().String()...)
	return append(b, '\r', '\n')
}

// The Range methods the value types offer; recreation and hydration use
// them, so that they need no knowledge of the types' internals.
type (
	pairRanger interface {
		Range(fn func(f, v []byte) bool)
	}
	memberRanger interface{ Range(fn func(v []byte) bool) }
	scoreRanger  interface {
		Range(fn func(m []byte, score float64) bool)
	}
	// recreator is implemented by value types whose content has no
	// generic shape (json, ratelimit): the commands re-creating it at key.
	recreator interface{ Recreate(key []byte) [][][]byte }
)

// appendRecreate appends the pushes that re-create key's current value in
// db from nothing: SET for a string; DEL then HSET, RPUSH, SADD or ZADD in
// chunks for the other types (a stream: see appendStream); then PEXPIREAT when withTTL is set and the
// key has a time to live. An absent key is a DEL.
func (sy *syncer) appendRecreate(b []byte, db *keyspace.DB, key []byte, withTTL bool) []byte {
	e := db.Peek(key)
	if e == nil {
		return resp.AppendPush(b, bDEL, key)
	}
	if e.Obj == nil {
		b = resp.AppendPush(b, bSET, key, e.Str)
	} else {
		b = resp.AppendPush(b, bDEL, key)
		b = appendContent(b, key, e)
	}
	if at, ok := db.Expiry(key); ok && withTTL {
		var num [20]byte
		b = resp.AppendPush(b, bPEXPIREAT, key, strconv.AppendInt(num[:0], at, 10))
	}
	return b
}

// appendContent appends the pushes that fill an empty key with e's
// content, at most recreateChunk elements (members, field-value or
// score-member pairs) per push. The Range callbacks' slices are only valid
// during the call, so each element is encoded as it comes.
func appendContent(b, key []byte, e *keyspace.Entry) []byte {
	var scratch [32]byte
	switch o := e.Obj.(type) {
	case pairRanger:
		c := chunker{b: b, cmd: bHSET, key: key, per: 2}
		o.Range(func(f, v []byte) bool { c.add(f, v); return true })
		return c.flush()
	case memberRanger:
		cmd := bSADD
		if e.Type() == keyspace.TypeList {
			cmd = bRPUSH
		}
		c := chunker{b: b, cmd: cmd, key: key, per: 1}
		o.Range(func(v []byte) bool { c.add(v); return true })
		return c.flush()
	case scoreRanger:
		c := chunker{b: b, cmd: bZADD, key: key, per: 2}
		o.Range(func(m []byte, score float64) bool {
			c.add(resp.AppendFloat(scratch[:0], score), m)
			return true
		})
		return c.flush()
	case *keyspace.Stream:
		return appendStream(b, key, o)
	case recreator:
		for _, cmd := range o.Recreate(key) {
			b = resp.AppendPush(b, cmd...)
		}
	}
	return b
}

// chunker builds "cmd key elements…" pushes of at most recreateChunk
// elements of per arguments each.
type chunker struct {
	b, body  []byte
	cmd, key []byte
	per      int
	n        int // arguments in body
}

func (c *chunker) add(args ...[]byte) {
	if c.n >= recreateChunk*c.per {
		c.flush()
	}
	for _, a := range args {
		c.body = resp.AppendBulk(c.body, a)
	}
	c.n += len(args)
}

// flush appends the pending push, if any, and returns the output.
func (c *chunker) flush() []byte {
	if c.n > 0 {
		c.b = resp.AppendHeader(c.b, '>', 2+c.n)
		c.b = resp.AppendBulk(c.b, c.cmd)
		c.b = resp.AppendBulk(c.b, c.key)
		c.b = append(c.b, c.body...)
		c.body, c.n = c.body[:0], 0
	}
	return c.b
}

// Hydration of a stream: its entries, counters, consumer groups, consumers
// and pending entries, as commands a replica applies in order.
var (
	bEmptyID = []byte("0-1")
	bX       = []byte("x")
)

// appendStream appends the pushes that fill an empty key with the stream
// st (sync/TYPES.md):
//
//	XADD key <id> <field> <value> …            every entry, in id order
//	XGROUP CREATE key <group> <last-id> ENTRIESREAD <n>
//	XGROUP CREATECONSUMER key <group> <consumer>
//	XCLAIM key <group> <consumer> 0 <id> TIME <ms> RETRYCOUNT <n> FORCE JUSTID
//	XTRIM / XDEL                                placeholders, see below
//	XSETID key <last-id> ENTRIESADDED <n> [MAXDELETEDID <id>]
//
// A pending entry whose stream entry is gone (deleted or trimmed after its
// delivery) can only be claimed while an entry of its id exists, so such
// ids are added as placeholder entries ("" "") among the real ones and
// removed after the claims: those before the first real entry by XTRIM
// MINID (or MAXLEN 0), which leaves the largest deleted id alone, the
// others by XDEL (they were deleted, so the largest deleted id is at least
// theirs). A stream with no entry at all is created as Redis's AOF rewrite
// does, by XADD key MAXLEN = 0 0-1 x x. XSETID comes last and sets the
// counters the placeholders disturbed.
func appendStream(b, key []byte, st *keyspace.Stream) []byte {
	var ghosts []keyspace.StreamID
	for _, g := range st.Groups() {
		for _, n := range g.Pending() {
			if !st.Exists(n.ID) {
				ghosts = append(ghosts, n.ID)
			}
		}
	}
	slices.SortFunc(ghosts, keyspace.StreamID.Compare)
	ghosts = slices.Compact(ghosts)

	var idBuf, numBuf [44]byte
	args := make([][]byte, 0, 16)
	empty := []byte{}
	gi := 0
	addGhostsBefore := func(id keyspace.StreamID, all bool) {
		for ; gi < len(ghosts) && (all || ghosts[gi].Compare(id) < 0); gi++ {
			b = resp.AppendPush(b, bXADD, key, ghosts[gi].Append(idBuf[:0]), empty, empty)
		}
	}
	first, live := keyspace.StreamID{}, false
	st.Range(keyspace.StreamID{}, keyspace.MaxStreamID, false, func(id keyspace.StreamID, fv [][]byte) bool {
		if !live {
			first, live = id, true
		}
		addGhostsBefore(id, false)
		args = append(args[:0], bXADD, key, id.Append(idBuf[:0]))
		b = resp.AppendPush(b, append(args, fv...)...)
		return true
	})
	addGhostsBefore(keyspace.StreamID{}, true)
	if !live && len(ghosts) == 0 {
		b = resp.AppendPush(b, bXADD, key, bMAXLEN, bEquals, bZero, bEmptyID, bX, bX)
	}
	for _, g := range st.Groups() {
		b = resp.AppendPush(b, bXGROUP, bCREATE, key, g.Name, g.LastID.Append(idBuf[:0]),
			bENTRIESREAD, strconv.AppendInt(numBuf[:0], g.EntriesRead, 10))
		for _, c := range g.Consumers() {
			b = resp.AppendPush(b, bXGROUP, bCREATECONSUMER, key, g.Name, c.Name)
		}
		for _, n := range g.Pending() {
			if n.Consumer == nil {
				continue // never the case once a command has finished
			}
			var timeBuf [20]byte
			b = resp.AppendPush(b, bXCLAIM, key, g.Name, n.Consumer.Name, bZero, n.ID.Append(idBuf[:0]),
				bTIME, strconv.AppendInt(timeBuf[:0], n.DeliveryTime, 10),
				bRETRYCOUNT, strconv.AppendUint(numBuf[:0], n.DeliveryCount, 10), bFORCE, bJUSTID)
		}
	}
	if len(ghosts) > 0 {
		if !live {
			b = resp.AppendPush(b, bXTRIM, key, bMAXLEN, bEquals, bZero)
		} else {
			if ghosts[0].Compare(first) < 0 {
				b = resp.AppendPush(b, bXTRIM, key, bMINID, bEquals, first.Append(idBuf[:0]))
			}
			args = append(args[:0], bXDEL, key)
			for _, id := range ghosts {
				if id.Compare(first) > 0 {
					args = append(args, []byte(id.String()))
				}
			}
			if len(args) > 2 {
				b = resp.AppendPush(b, args...)
			}
		}
	}
	args = append(args[:0], bXSETID, key, st.LastID.Append(idBuf[:0]),
		bENTRIESADDED, strconv.AppendUint(numBuf[:0], st.EntriesAdded, 10))
	if !st.MaxDeletedID.IsZero() {
		args = append(args, bMAXDELETEDID, []byte(st.MaxDeletedID.String()))
	}
	return resp.AppendPush(b, args...)
}
