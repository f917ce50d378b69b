package server

import (
	"log"
	"math/bits"
	"runtime/debug"
	"strings"
	"time"
	"unsafe"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
)

// Exec runs one request: prepare checks it, then it is queued in an open
// transaction or run under the locks of the shards its keys live in. The
// reply is appended to s.W, unless CLIENT REPLY turned replies off or
// skips this one: then only the pushes it wrote stay.
func (s *Session) Exec(args [][]byte) {
	if len(args) == 0 {
		return
	}
	if s.reply == replyOn {
		s.exec(args)
		if s.reply == replySkipNext {
			s.reply = replySkip
		}
		return
	}
	quiet := s.reply
	n := len(s.W.B)
	s.pushSpans = s.pushSpans[:0]
	s.exec(args)
	if s.reply != replyOn { // CLIENT REPLY ON replies
		out := s.W.B[:n]
		for _, sp := range s.pushSpans {
			out = append(out, s.W.B[sp[0]:sp[1]]...)
		}
		s.W.B = out
	}
	s.pushSpans = s.pushSpans[:0]
	switch {
	case s.reply == replySkipNext:
		s.reply = replySkip
	case quiet == replySkip && s.reply == replySkip:
		s.reply = replyOn
	}
}

// replyMode is the CLIENT REPLY state of a session.
type replyMode uint8

const (
	replyOn       replyMode = iota
	replyOff                // CLIENT REPLY OFF: no replies until ON
	replySkipNext           // CLIENT REPLY SKIP has just run
	replySkip               // the request running now gets no reply
)

// markPush records that W[start:] is a push (a subscribe confirmation or
// a message to the session itself), which CLIENT REPLY OFF and SKIP keep.
func (s *Session) markPush(start int) {
	if s.reply != replyOn {
		s.pushSpans = append(s.pushSpans, [2]int{start, len(s.W.B)})
	}
}

// exec is Exec's request, its reply kept.
func (s *Session) exec(args [][]byte) {
	cmd := s.prepare(args)
	if cmd == nil {
		return
	}
	if m := s.srv.pause.mode.Load(); m != pauseNone && s.conn != nil && s.held(cmd, m) {
		s.hold(args)
		return
	}
	// While another session's script holds every shard, wait for it up to
	// busy-reply-threshold, then answer -BUSY (script.go).
	if run := s.srv.scripts.running.Load(); run != nil && run.s != s && !s.waitScript(run, cmd) {
		return
	}
	// Over maxmemory, evict first; refuse what would grow memory when
	// nothing can be evicted (evict.go).
	if s.srv.mem.limit.Load() != 0 && !s.admitMemory(cmd) {
		return
	}
	// A primary with too few good replicas refuses writes (repl_good.go).
	if s.srv.repl.minWrite.Load() != 0 && s.refusesNoReplicas(cmd) {
		return
	}
	if s.multi != nil && cmd.Flags&FlagNoMulti == 0 {
		s.queue(cmd)
		return
	}
	if s.conn != nil && s.isScriptCall(cmd) {
		s.startScript(cmd)
		return
	}
	s.call(cmd)
}

// prepare finds the command of args and checks arity, authentication, the
// port's restrictions, the scope and the subscribed-mode rules. It sets
// s.Args and returns the command, or replies with the error and returns nil.
// Every way into a command (Exec, a DEDUP-wrapped command) passes here.
func (s *Session) prepare(args [][]byte) *Command {
	s.Args = args
	if now := int64(s.srv.ks.Clock()); s.lastActive.Load() != now {
		s.lastActive.Store(now)
	}
	cmd := s.lookup(args[0], s.inDedup)
	if cmd == nil {
		if isCrossProtocol(args[0]) { // no command has either name
			s.securityWarning()
			return nil
		}
		s.reject(nil, unknownCommand(args))
		return nil
	}
	if cmd.subs != nil && len(args) >= 2 {
		sub := cmd.Sub(args[1])
		if sub == nil {
			s.reject(cmd, "ERR unknown subcommand '"+string(trunc(args[1], 128))+"'. Try "+strings.ToUpper(string(args[0]))+" HELP.")
			return nil
		}
		cmd = sub
	}
	if !cmd.checkArity(len(args)) {
		s.reject(cmd, "ERR wrong number of arguments for '"+cmd.Name+"' command")
		return nil
	}
	if !s.authed && cmd.Flags&FlagNoAuth == 0 && !s.srv.acl.defaultOpen() {
		s.reject(cmd, errNoAuth)
		return nil
	}
	if s.WS && cmd.Flags&(FlagNoWS|FlagAdmin|FlagDangerous) != 0 {
		s.reject(cmd, errNoPermWS)
		return nil
	}
	// ACL rules (acl.go): a user with every permission has no limits, so
	// this costs the default user one pointer check.
	if st := s.user.Load().limits.Load(); st != nil && !s.aclAllows(st, cmd) {
		return nil
	}
	if s.scoped() && !scopeCheck(s, cmd) {
		return nil
	}
	// On a replica: -READONLY, -MASTERDOWN (repl_replica.go).
	if g := s.srv.replica.gate.Load(); g != 0 && s.replicaRefuses(cmd, g) {
		return nil
	}
	if s.subscribed > 0 && s.W.Proto == 2 && !s.WS && cmd.Flags&FlagSubContext == 0 {
		s.reject(cmd, "ERR Can't execute '"+cmd.Name+"': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
		return nil
	}
	// Stores that change nothing are skipped: an atomic store costs
	// more than the load, and a pipeline repeats one command.
	if s.lastCmd.Load() != cmd {
		s.lastCmd.Store(cmd)
	}
	return cmd
}

// isCrossProtocol reports whether a command name is "POST" or "Host:"
// (any case): the first words an HTTP request sends, which Redis takes for
// an attack by cross-protocol scripting (a web page making a browser post
// RESP to the server).
func isCrossProtocol(name []byte) bool {
	return resp.EqualFold(name, "post") || resp.EqualFold(name, "host:")
}

// securityWarning drops a connection that sent POST or Host: with no reply,
// as Redis's securityWarningCommand does, logging at most once a minute.
func (s *Session) securityWarning() {
	now := time.Now().Unix()
	if last := s.srv.securityLogged.Load(); now-last >= 60 && s.srv.securityLogged.CompareAndSwap(last, now) {
		log.Printf("Possible SECURITY ATTACK detected. It looks like somebody is sending POST or Host: commands to Redis. This is likely due to an attacker attempting to use Cross Protocol Scripting to compromise your Redis instance. Connection aborted.")
	}
	s.Quit = true
}

// lookup finds a top-level command by name. Pipelines repeat one command,
// so it compares with the last one found before hashing; wrapped commands
// (DEDUP's) have a slot of their own so that the two do not evict each
// other.
func (s *Session) lookup(name []byte, wrapped bool) *Command {
	slot := &s.lastTop
	if wrapped {
		slot = &s.lastWrapped
	}
	if c := *slot; c != nil && resp.EqualFold(name, c.Name) {
		return c
	}
	c := s.srv.table.Lookup(name)
	*slot = c
	return c
}

// wrapped returns the command a wrapper (DEDUP) runs and its arguments,
// its subcommand resolved, for the checks that judge a command by what it
// runs (memory, read-only replica, min-replicas); cmd and args themselves
// when cmd wraps nothing or the wrapped name is unknown.
func (s *Session) wrapped(cmd *Command, args [][]byte) (*Command, [][]byte) {
	w := cmd.Wraps
	if w == 0 || len(args) <= w {
		return cmd, args
	}
	in := s.lookup(args[w], true)
	if in == nil {
		return cmd, args
	}
	args = args[w:]
	if in.subs != nil && len(args) >= 2 {
		if sc := in.Sub(args[1]); sc != nil {
			in = sc
		}
	}
	return in, args
}

// reject answers a command that will not run, and poisons an open
// transaction as Redis does.
func (s *Session) reject(cmd *Command, msg string) {
	if cmd != nil {
		cmd.stats.rejected.Add(1)
	}
	if s.multi != nil {
		s.multi.failed = true
	}
	n := len(s.W.B)
	s.W.Error(msg)
	s.srv.countError(s.W.B[n:])
}

// unknownCommand builds Redis's unknown-command error.
func unknownCommand(args [][]byte) string {
	var b strings.Builder
	b.WriteString("ERR unknown command '")
	b.Write(trunc(args[0], 128))
	b.WriteString("', with args beginning with: ")
	n := 0
	for _, a := range args[1:] {
		if n >= 128 {
			break
		}
		a = trunc(a, 128-n)
		b.WriteByte('\'')
		b.Write(a)
		b.WriteString("' ")
		n += len(a) + 3
	}
	return b.String()
}

// trunc returns at most n bytes of b, as C's "%.*s" does.
func trunc(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// call runs a checked command under its locks.
func (s *Session) call(cmd *Command) {
	if s.inExec {
		s.callLocked(cmd)
		return
	}
	s.lockFor(cmd)
	s.callLocked(cmd)
	s.unlock()
	// Serve clients blocked on keys the command filled (blocking.go).
	s.srv.serveReady()
}

// callLocked runs a checked command whose shards are locked and accounts
// for it in INFO commandstats.
func (s *Session) callLocked(cmd *Command) {
	// During a snapshot, keep the pre-images of the keys a write changes
	// (persist.go); refuse writes the append-only log cannot record.
	if cmd.Flags&FlagWrite != 0 && !s.srv.persist.beforeWrite(s, cmd) {
		return
	}
	s.noteAbsent(cmd)
	track := s.srv.latencyTracking.Load()
	// One load tells whether anybody monitors or the latency monitor is
	// on (latency.go).
	hooks := s.srv.diag.hooks.Load()
	timed := cmd.stats.startCall(track) || cmd.timeAll || s.srv.slowlog.logsAll() || hooks&hookLatency != 0
	var start time.Duration
	if timed {
		start = s.commandStart(cmd)
	}
	if s.beforeReply != nil && !s.inExec && !s.inScript {
		s.beforeReply() // the transport's pushes queued until now go first
	}
	n := len(s.W.B)
	if !s.inDedup {
		s.scratch = s.scratch[:0]
	}
	defer s.recoverPanic(cmd, n)
	tr := s.trk.Load()
	if tr != nil {
		tr.enter()
	}
	emitted := s.emitted
	// MONITOR (monitor.go): a script's command shows before the commands
	// it calls, any other after it ran.
	mon := hooks&hookMonitor != 0
	args := s.Args // EXEC's change as it runs its commands
	if mon && cmd.Flags&FlagRunsScript != 0 {
		s.feedMonitors(cmd, args)
	}
	cmd.Handler(s)
	if mon && cmd.Flags&FlagRunsScript == 0 {
		s.feedMonitors(cmd, args)
	}
	if s.emitted != emitted && cmd.Flags&(FlagWrite|FlagSized) == FlagWrite {
		s.accountKeys(cmd)
	}
	if timed {
		d := s.srv.clock() - start
		cmd.stats.endTimed(d, track)
		if s.blocked.Load() == blockNone {
			// A command that blocked is logged when its wait ends.
			s.srv.slowlog.note(s, cmd, d)
		}
		s.srv.noteCommandLatency(cmd, d)
	}
	if tr != nil {
		s.endTracked(tr, cmd)
	} else if s.srv.tracking.dirty.Load() && !s.inExec && !s.inScript {
		s.srv.broadcastTracking() // a command's BCAST changes in one message
	}
	// A script's error reply that a command it called already counted
	// (script.go) counts once, as in Redis.
	counted := s.errCounted
	s.errCounted = false
	if len(s.W.B) > n && s.W.B[n] == '-' {
		cmd.stats.failed.Add(1)
		if !counted {
			s.srv.countError(s.W.B[n:])
		}
	}
}

// recoverPanic turns a panic in a command handler into an error reply for
// that command, logged with its stack, instead of a crash of the server.
func (s *Session) recoverPanic(cmd *Command, n int) {
	if r := recover(); r != nil {
		log.Printf("recached: panic in %s: %v\n%s", cmd.Name, r, debug.Stack())
		s.W.B = s.W.B[:n]
		s.W.Error("ERR internal error in '" + cmd.Name + "'")
		cmd.stats.failed.Add(1)
		s.srv.countError(s.W.B[n:])
	}
}

// lockFor locks the shards cmd will touch, in lock order.
func (s *Session) lockFor(cmd *Command) {
	s.addLocks(cmd, s.Args, s.DBIndex)
	s.lock()
}

// addLocks adds to the session's lock set the shards cmd touches when run
// with args in database db.
func (s *Session) addLocks(cmd *Command, args [][]byte, db int) {
	if cmd.Wraps > 0 {
		inner := s.lookup(args[min(cmd.Wraps, len(args)-1)], true)
		if inner == nil || len(args) <= cmd.Wraps || inner.Wraps > 0 {
			return
		}
		cmd, args = inner, args[cmd.Wraps:]
	}
	switch {
	case cmd.Flags&FlagAllDBs != 0:
		for i := range s.masks {
			s.masks[i] = ^uint64(0)
		}
		s.lockDB = 1<<len(s.masks) - 1
	case cmd.Flags&FlagAllKeys != 0:
		s.masks[db] = ^uint64(0)
		s.lockDB |= 1 << db
	case cmd.PatternKeys != nil && cmd.PatternKeys(args):
		s.masks[db] = ^uint64(0)
		s.lockDB |= 1 << db
	case cmd.FirstKey > 0 || cmd.Keys != nil:
		s.keys = cmd.KeyArgs(s.keys[:0], args)
		if len(s.keys) == 1 {
			k := s.keys[0]
			s.hashedKey, s.keyHash = k, s.srv.ks.Hash(k)
			s.masks[db] |= 1 << keyspace.ShardOfHash(s.keyHash)
		} else {
			for _, k := range s.keys {
				s.masks[db] |= 1 << s.srv.ks.ShardOf(k)
			}
		}
		if len(s.keys) > 0 {
			s.lockDB |= 1 << db
		}
	}
}

// lock acquires the lock set built by addLocks.
func (s *Session) lock() {
	for d := s.lockDB; d != 0; d &= d - 1 {
		i := bits.TrailingZeros64(d)
		db := s.srv.ks.DBs[i]
		for m := s.masks[i]; m != 0; m &= m - 1 {
			db.Shard(bits.TrailingZeros64(m)).Lock()
		}
	}
}

// unlock releases every lock the session holds and empties its lock set.
func (s *Session) unlock() {
	for d := s.lockDB; d != 0; d &= d - 1 {
		i := bits.TrailingZeros64(d)
		db := s.srv.ks.DBs[i]
		for m := s.masks[i]; m != 0; m &= m - 1 {
			db.Shard(bits.TrailingZeros64(m)).Unlock()
		}
		s.masks[i] = 0
	}
	s.lockDB = 0
	s.hashedKey = nil
}

// lookupKey is s.db.Lookup(key), which does not hash key again when it is
// the very argument (the same bytes in memory, not a copy) whose shard
// addLocks locked.
func (s *Session) lookupKey(key []byte) *keyspace.Entry {
	if s.isHashedKey(key) {
		return s.db.LookupHashed(key, s.keyHash)
	}
	return s.db.Lookup(key)
}

// isHashedKey reports whether key is the very argument whose hash
// addLocks kept (s.keyHash).
func (s *Session) isHashedKey(key []byte) bool {
	return len(key) == len(s.hashedKey) && len(key) > 0 && unsafe.SliceData(key) == unsafe.SliceData(s.hashedKey)
}
