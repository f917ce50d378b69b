package server

import "strconv"

// Effect is the replayable form of one change: the command that, applied
// to a copy of the previous state, reproduces the server's new state (SPEC
// section 4). INCR k yields SET k <value> KEEPTTL, EXPIRE yields PEXPIREAT,
// an expired key yields DEL.
//
// Every write reports its effects through one publisher (publish), and
// nothing else learns of writes: the append-only log, sync pushes, WATCH,
// blocked clients and the dirty counter all hear of them there.
type Effect struct {
	// Kind says what the effect is; the consumers switch on it, never on
	// Args[0].
	Kind EffectKind
	DB   int
	// Key is the key changed (EffectKey, EffectExpired); nil otherwise.
	Key []byte
	// Args is the replayable command, its verb one of the catalogue below;
	// empty for EffectMark.
	Args   [][]byte
	Origin *Session // the writing session; nil for expiry
	// ClientID and WireID are the DEDUP mark the change was made under
	// (ClientID nil when it was not DEDUP-wrapped). The append-only log
	// stores them with the change, so that replaying the change restores
	// the mark with it and a replayed write is never applied twice.
	ClientID []byte
	WireID   uint64
}

// EffectKind is what an Effect changes.
type EffectKind uint8

// The kinds of effect.
const (
	// EffectKey is a command's change to the key Key. RENAME, COPY and
	// MOVE also write the key or database their Args name.
	EffectKey EffectKind = iota
	// EffectExpired is a key found expired and removed (by a lookup or by
	// the active expiry cron): Args is DEL Key and Origin is nil.
	EffectExpired
	// EffectDB is a change to whole databases or to server-wide state
	// (FLUSHDB, FLUSHALL, SWAPDB a b; FUNCTION LOAD REPLACE <code>,
	// FUNCTION DELETE <name>, FUNCTION FLUSH): Key is nil, DB is the
	// database the command ran in.
	EffectDB
	// EffectMark is a DEDUP mark raised by a wrapped command that changed
	// nothing: Key is nil, Args empty, ClientID and WireID set. Only the
	// append-only log hears of it; the hooks do not.
	EffectMark
)

// The effect catalogue: every verb an EffectKey's or EffectExpired's
// Args[0] can be, and the option words effects carry. Replay runs them as
// commands (JSET, JMERGE, JDEL and RLSET are internal commands that exist
// for this). An EffectDB is one of the commands listed at EffectDB (emitDB).
var (
	bDEL       = []byte("DEL")
	bSET       = []byte("SET")
	bSETBIT    = []byte("SETBIT")
	bPEXPIREAT = []byte("PEXPIREAT")
	bPERSIST   = []byte("PERSIST")
	bRENAME    = []byte("RENAME")
	bCOPY      = []byte("COPY")
	bMOVE      = []byte("MOVE")
	bHSET      = []byte("HSET")
	bHDEL      = []byte("HDEL")
	bLPUSH     = []byte("LPUSH")
	bRPUSH     = []byte("RPUSH")
	bLPUSHX    = []byte("LPUSHX")
	bRPUSHX    = []byte("RPUSHX")
	bLPOP      = []byte("LPOP")
	bRPOP      = []byte("RPOP")
	bLSET      = []byte("LSET")
	bLREM      = []byte("LREM")
	bLTRIM     = []byte("LTRIM")
	bLINSERT   = []byte("LINSERT")
	bLMOVE     = []byte("LMOVE")
	bSADD      = []byte("SADD")
	bSREM      = []byte("SREM")
	bZADD      = []byte("ZADD")
	bZREM      = []byte("ZREM")
	bJSET      = []byte("JSET")
	bJMERGE    = []byte("JMERGE")
	bJDEL      = []byte("JDEL")
	bRLSET     = []byte("RLSET")
	bXADD      = []byte("XADD")
	bXTRIM     = []byte("XTRIM")
	bXDEL      = []byte("XDEL")
	bXSETID    = []byte("XSETID")
	bXACK      = []byte("XACK")
	bXCLAIM    = []byte("XCLAIM")
	// XGROUP CREATE | SETID | DESTROY | CREATECONSUMER | DELCONSUMER: the
	// key is Args[2] (emitKey).
	bXGROUP         = []byte("XGROUP")
	bCREATE         = []byte("CREATE")
	bSETID          = []byte("SETID")
	bDESTROY        = []byte("DESTROY")
	bCREATECONSUMER = []byte("CREATECONSUMER")
	bDELCONSUMER    = []byte("DELCONSUMER")

	// Option words.
	bKEEPTTL = []byte("KEEPTTL")
	bPXAT    = []byte("PXAT")
	bREPLACE = []byte("REPLACE")
	bDB      = []byte("DB")
	bLEFT    = []byte("LEFT")
	bRIGHT   = []byte("RIGHT")
	// Stream options: XADD/XTRIM MAXLEN|MINID = <threshold>, XGROUP …
	// MKSTREAM ENTRIESREAD <n>, XSETID … ENTRIESADDED MAXDELETEDID, XCLAIM
	// … 0 <id> TIME RETRYCOUNT FORCE JUSTID LASTID.
	bMAXLEN       = []byte("MAXLEN")
	bMINID        = []byte("MINID")
	bEquals       = []byte("=")
	bMKSTREAM     = []byte("MKSTREAM")
	bENTRIESREAD  = []byte("ENTRIESREAD")
	bENTRIESADDED = []byte("ENTRIESADDED")
	bMAXDELETEDID = []byte("MAXDELETEDID")
	bZero         = []byte("0")
	bTIME         = []byte("TIME")
	bRETRYCOUNT   = []byte("RETRYCOUNT")
	bFORCE        = []byte("FORCE")
	bJUSTID       = []byte("JUSTID")
	bLASTID       = []byte("LASTID")
)

// EffectHook hears of every effect but DEDUP marks alone. It is called with
// the key's shard locked, in the order the changes were applied, so it must
// not block or call back into the keyspace. The Effect is only valid during
// the call.
type EffectHook func(e *Effect)

// publish is the one effect publisher: emit, emitDB, onExpire and emitMark
// all end here. It counts the change and hands the effect first to the
// append-only log, then to the hooks: those added by AddHookFirst, the
// engine's own (WATCH, blocked clients, client tracking, sync routing),
// then those added by AddHook. The engine's are called by name, each
// behind its own check here (somebody waits, tracks, syncs), so that a
// write nobody listens to calls none of them and copies no arguments
// (publishArgs).
//
// The log comes first, and this order is a guarantee the transports rely
// on: by the time a hook (the syncer, a blocked client's wake-up) has
// queued a push about the change, the log holds its record, so that the
// Commit a transport runs before writing pushes to a socket writes (under
// appendfsync always, fsyncs) that record before the push leaves.
func (srv *Server) publish(e *Effect) { srv.publishArgs(e, nil) }

// publishArgs is publish for an effect whose arguments are still args
// (not nil), on the writer's stack, and not yet in e.Args: they are copied
// there only when a consumer that reads them is on, once, so that a write
// nobody logs, replicates, syncs or hooks copies nothing. Each consumer's
// own check decides, just before it is called, so that one turned on
// meanwhile still gets them.
func (srv *Server) publishArgs(e *Effect, args [][]byte) {
	if srv.repl.on.Load() {
		args = e.takeArgs(args)
		srv.feedEffect(e) // the replication stream (repl_primary.go)
	}
	l := srv.persist.log.Load()
	if e.Kind == EffectMark {
		if l != nil {
			onEffect(l, e)
		}
		return
	}
	srv.dirty.Add(1)
	if l != nil {
		args = e.takeArgs(args)
		onEffect(l, e)
	}
	if len(srv.firstHooks) != 0 || len(srv.hooks) != 0 {
		args = e.takeArgs(args)
	}
	for _, h := range srv.firstHooks {
		h(e)
	}
	srv.watches.touch(e.DB, e.Key)
	if srv.blocking.waiting.Load() != 0 {
		args = e.takeArgs(args)
		srv.blocking.markEffect(e)
	}
	if srv.tracking.on() {
		args = e.takeArgs(args)
		srv.tracking.invalidateEffect(srv, e)
	}
	if srv.syncer.router.Active() {
		e.takeArgs(args)
		srv.syncer.routeEffect(e)
	}
	for _, h := range srv.hooks {
		h(e)
	}
}

// takeArgs copies args, unless nil, into e.Args, and returns nil, which
// tells the next consumer that they are there.
func (e *Effect) takeArgs(args [][]byte) [][]byte {
	if args != nil {
		e.Args = append(e.Args[:0], args...)
	}
	return nil
}

// emit reports one effect of the running command on key args[1]. The
// arguments are copied into the session's effect only when somebody reads
// them (publishArgs), so the call does not allocate.
func (s *Session) emit(args ...[]byte) { s.emitKey(args[1], args...) }

// emitKey is emit for an effect whose key is not args[1]: XGROUP <sub>
// <key> ….
func (s *Session) emitKey(key []byte, args ...[]byte) {
	s.eff.Args = s.eff.Args[:0]
	s.emitArgs(key, args)
}

// effectArgs starts the arguments of an effect that keeps only some of
// the command's (the members SADD added, HDEL removed, …) in the
// session's effect, whose room is kept from one command to the next, so
// that building them does not allocate; emitBuilt reports them. The room
// is kept even when the command changes nothing and emits no effect (SADD
// of a member already there), so that such a command allocates only once
// per session.
func (s *Session) effectArgs(name, key []byte) [][]byte {
	s.eff.Args = append(s.eff.Args[:0], name, key)
	return s.eff.Args
}

// emitBuilt reports the effect whose arguments effectArgs started and the
// caller appended to.
func (s *Session) emitBuilt(args [][]byte) {
	s.eff.Args = args
	s.emitArgs(args[1], nil)
}

// emitNamed emits the effect name followed by args (the running command's
// key and arguments), copying them once, into the effect.
func (s *Session) emitNamed(name []byte, args [][]byte) {
	s.emitBuilt(append(append(s.eff.Args[:0], name), args...))
}

// emitArgs reports the effect on key whose arguments are args, or, when
// args is nil, already in s.eff.Args.
func (s *Session) emitArgs(key []byte, args [][]byte) {
	s.emitted++
	e := &s.eff
	e.Kind, e.DB, e.Key, e.Origin = EffectKey, s.DBIndex, key, s
	s.markEffect(e)
	if s.scriptHold != nil {
		e.takeArgs(args)
		s.scriptHold.holdEffect(e)
		return
	}
	s.srv.publishArgs(e, args)
}

// emitDB reports an effect on whole databases (FLUSHDB, FLUSHALL, SWAPDB).
func (s *Session) emitDB(db int, args ...string) {
	s.emitted++
	e := &Effect{Kind: EffectDB, DB: db, Origin: s}
	for _, a := range args {
		e.Args = append(e.Args, []byte(a))
	}
	s.markEffect(e)
	if s.scriptHold != nil {
		s.scriptHold.holdEffect(e)
		return
	}
	s.srv.publish(e)
}

// emitMark reports a raised DEDUP mark with no change attached.
func (s *Session) emitMark(cid []byte, id uint64) {
	e := &s.eff
	e.Kind, e.DB, e.Key, e.Args, e.Origin = EffectMark, s.DBIndex, nil, e.Args[:0], s
	e.ClientID, e.WireID = cid, id
	s.srv.publish(e)
}

// markEffect sets the DEDUP mark the running command is wrapped in.
func (s *Session) markEffect(e *Effect) {
	e.ClientID, e.WireID = nil, 0
	if s.inDedup {
		e.ClientID, e.WireID = s.dedupClient, s.dedupWire
	}
}

// onExpire turns a key found expired into a DEL effect. The keyspace calls it
// under the key's shard lock.
func (srv *Server) onExpire(db int, key string) {
	srv.expiredKeys.Add(1)
	k := []byte(key)
	srv.publish(&Effect{Kind: EffectExpired, DB: db, Key: k, Args: [][]byte{bDEL, k}})
	srv.notifyServer(notifyExpired, "expired", db, k)
}

// itoa formats n into the session's scratch space and returns the digits,
// valid until the command ends. Effects built from it do not allocate.
func (s *Session) itoa(n int64) []byte {
	start := len(s.scratch)
	s.scratch = strconv.AppendInt(s.scratch, n, 10)
	return s.scratch[start:len(s.scratch):len(s.scratch)]
}

// itoaNext is itoa(n+1) for the digits old of a number n >= 0, as
// ParseInt accepts them (no sign, no leading zero), with n+1 not past
// MaxInt64: INCR adds one to the digits it holds instead of formatting
// the sum, which costs a division per two digits.
func (s *Session) itoaNext(old []byte) []byte {
	start := len(s.scratch)
	// A leading '0' is room for the carry out of 9…9.
	s.scratch = append(append(s.scratch, '0'), old...)
	d := s.scratch[start:len(s.scratch):len(s.scratch)]
	i := len(d) - 1
	for d[i] == '9' {
		d[i] = '0'
		i--
	}
	d[i]++
	if i == 0 {
		return d
	}
	return d[1:]
}

// utoa is itoa for unsigned numbers.
func (s *Session) utoa(n uint64) []byte {
	start := len(s.scratch)
	s.scratch = strconv.AppendUint(s.scratch, n, 10)
	return s.scratch[start:len(s.scratch):len(s.scratch)]
}

// Keyspace notification classes, the letters of notify-keyspace-events
// (Redis's NOTIFY_* flags).
const (
	notifyKeyspace uint32 = 1 << iota // K: __keyspace@<db>__:<key> channels
	notifyKeyevent                    // E: __keyevent@<db>__:<event> channels
	notifyGeneric                     // g: del, expire, rename_from, ...
	notifyString                      // $
	notifyList                        // l
	notifySet                         // s
	notifyHash                        // h
	notifyZSet                        // z
	notifyExpired                     // x
	notifyEvicted                     // e
	notifyStream                      // t
	notifyKeyMiss                     // m
	notifyModule                      // d
	notifyNew                         // n
	// notifyAll is what A stands for: every class but m and n.
	notifyAll = notifyGeneric | notifyString | notifyList | notifySet | notifyHash | notifyZSet | notifyExpired | notifyEvicted | notifyStream | notifyModule
)

// keyspaceEventFlags turns a notify-keyspace-events value (checked by
// checkKeyspaceEvents) into class bits.
func keyspaceEventFlags(v string) uint32 {
	var f uint32
	for _, c := range []byte(v) {
		switch c {
		case 'A':
			f |= notifyAll
		case 'K':
			f |= notifyKeyspace
		case 'E':
			f |= notifyKeyevent
		case 'g':
			f |= notifyGeneric
		case '$':
			f |= notifyString
		case 'l':
			f |= notifyList
		case 's':
			f |= notifySet
		case 'h':
			f |= notifyHash
		case 'z':
			f |= notifyZSet
		case 'x':
			f |= notifyExpired
		case 'e':
			f |= notifyEvicted
		case 't':
			f |= notifyStream
		case 'm':
			f |= notifyKeyMiss
		case 'd':
			f |= notifyModule
		case 'n':
			f |= notifyNew
		}
	}
	return f
}

// notify publishes the keyspace event of class named event on key, in the
// running command's database. Handlers call it after the emit of the write
// it describes (and after the reply where Redis replies first, for a
// writer subscribed to its own events), so the notification, a push to
// subscribers, is queued only once the log holds the write; with
// notifications off it costs one atomic load. The first event on a key the
// command created is preceded by the "new" event, as Redis's dbAdd fires
// it.
func (s *Session) notify(class uint32, event string, key []byte) {
	s.notifyDB(class, event, s.DBIndex, key)
}

// notifyDB is notify for a key of database db (MOVE, COPY ... DB).
func (s *Session) notifyDB(class uint32, event string, db int, key []byte) {
	f := s.srv.notifyFlags.Load()
	if f == 0 {
		return
	}
	pub := s.eventPublisher()
	if f&notifyNew != 0 && db == s.DBIndex && s.takeAbsent(key) {
		s.srv.publishKeyEvent(pub, f, "new", db, key)
	}
	if f&class != 0 {
		s.srv.publishKeyEvent(pub, f, event, db, key)
	}
}

// notifyNew publishes the "new" event of key in database db whether or not
// the key existed before the command: RENAME, COPY and MOVE replace their
// destination, which Redis reports as a new key; a served BLMOVE knows no
// absent keys.
func (s *Session) notifyNew(db int, key []byte) {
	f := s.srv.notifyFlags.Load()
	if f&notifyNew == 0 {
		return
	}
	pub := s.eventPublisher()
	if db == s.DBIndex {
		s.takeAbsent(key)
	}
	s.srv.publishKeyEvent(pub, f, "new", db, key)
}

// eventPublisher is the publisher of the session's events: the session,
// whose own subscription then gets them in its reply stream, or nil for a
// blocked client's pop served by another goroutine (blocking.go), whose
// deliveries go through its connection; what such a client knew of absent
// keys is stale and is dropped.
func (s *Session) eventPublisher() *Session {
	if s.isBlocked() {
		s.absent = s.absent[:0]
		return nil
	}
	return s
}

// noteAbsent records, before a write command runs, which of its keys do
// not exist, so that notify can tell the keys it creates. It does
// nothing unless the "new" event is on.
func (s *Session) noteAbsent(cmd *Command) {
	s.absent = s.absent[:0]
	if s.srv.notifyFlags.Load()&notifyNew == 0 || cmd.Flags&FlagWrite == 0 || cmd.Wraps > 0 {
		return
	}
	db := s.srv.ks.DBs[s.DBIndex]
	for _, k := range cmd.KeyArgs(nil, s.Args) {
		if db.Peek(k) == nil {
			s.absent = append(s.absent, k)
		}
	}
}

// takeAbsent reports whether key was absent before the running command
// and exists now, and forgets it so that "new" fires once.
func (s *Session) takeAbsent(key []byte) bool {
	for i, k := range s.absent {
		if string(k) == string(key) {
			if s.srv.ks.DBs[s.DBIndex].Peek(key) == nil {
				return false
			}
			s.absent = append(s.absent[:i], s.absent[i+1:]...)
			return true
		}
	}
	return false
}

// publishKeyEvent delivers one event on the pub/sub bus: event on
// __keyspace@<db>__:<key> when K is on, key on __keyevent@<db>__:<event>
// when E is. pub is the session whose command caused it (nil for expiry):
// its own subscription receives the message in its reply stream.
//
// It runs under the writer's shard locks and takes the pub/sub registry's
// read lock inside them (LOCKS.md).
func (srv *Server) publishKeyEvent(pub *Session, flags uint32, event string, db int, key []byte) {
	if pub != nil && pub.scriptHold != nil {
		pub.scriptHold.holdEvent(flags, event, db, key)
		return
	}
	if flags&notifyKeyspace != 0 {
		ch := make([]byte, 0, len("__keyspace@__:")+4+len(key))
		ch = append(ch, "__keyspace@"...)
		ch = strconv.AppendInt(ch, int64(db), 10)
		ch = append(ch, "__:"...)
		ch = append(ch, key...)
		srv.pubsub.notify(pub, ch, []byte(event))
	}
	if flags&notifyKeyevent != 0 {
		ch := make([]byte, 0, len("__keyevent@__:")+4+len(event))
		ch = append(ch, "__keyevent@"...)
		ch = strconv.AppendInt(ch, int64(db), 10)
		ch = append(ch, "__:"...)
		ch = append(ch, event...)
		srv.pubsub.notify(pub, ch, key)
	}
}

// notifyServer publishes an event no command caused: "expired" (class x)
// of a key removed by expiry, "evicted" (class e) of a key removed by
// eviction. It runs under the key's shard lock, after the removal's
// effect.
func (srv *Server) notifyServer(class uint32, event string, db int, key []byte) {
	if f := srv.notifyFlags.Load(); f&class != 0 {
		srv.publishKeyEvent(nil, f, event, db, key)
	}
}
