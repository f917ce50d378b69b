package server

// What a request/response transport (Amaquet, server/amaquet) needs of a
// session beyond Exec: it runs each request on a session of its own
// choosing, so requests of one connection can wait independently, and it
// keeps no connection state between requests (the database, a transaction)
// on the session.
//
// A blocking command (BLPOP and its kin, XREAD BLOCK) or a script leaves
// its session waiting: Exec returns with no reply and Waiting reports true.
// The engine later calls the session's Conn.Wake from whichever goroutine
// answered the wait; the transport then calls Waiting again, from a
// goroutine that owns the session, to collect the reply. CancelWait ends a
// wait early, the way CLIENT UNBLOCK does, and the collected result then
// says it was cancelled; KillScript stops a script as SCRIPT KILL does.

import (
	recsync "github.com/recached/recached/sync"
)

// NewPeer registers another session for the connection of s, with the
// same authentication, protocol and scope, to run a request while the
// sessions the connection has are busy (waiting in a blocking command).
// It is not counted against maxclients: the connection was admitted once.
// CloseSession releases it.
func (s *Session) NewPeer(c Conn) *Session {
	srv := s.srv
	p := newSession(srv, c, s.WS)
	p.authed = s.authed
	p.user.Store(s.user.Load())
	p.setProto(s.W.Proto)
	p.setScope(s.scope)
	p.chanScope = s.chanScope
	srv.clientsMu.Lock()
	srv.clients[p.ID] = p
	srv.clientsMu.Unlock()
	return p
}

// SetProtocol sets the RESP version (2 or 3) the session's replies use.
func (s *Session) SetProtocol(p int) { s.setProto(p) }

// SelectDB makes database i the session's current one, as SELECT does; it
// reports false, changing nothing, when there is no database i.
func (s *Session) SelectDB(i int) bool {
	if i < 0 || i >= len(s.srv.ks.DBs) {
		return false
	}
	if i != s.DBIndex {
		s.selectDB(i)
	}
	return true
}

// Databases returns the number of databases.
func (srv *Server) Databases() int { return len(srv.ks.DBs) }

// SetAuthenticated marks the session as authenticated by its transport (an
// API key), as a successful AUTH would.
func (s *Session) SetAuthenticated() { s.authed = true }

// Scoped reports whether a scope restricts the session's keys.
func (s *Session) Scoped() bool { return s.scope != nil }

// SetKeyScope scopes the session as a sync token with these patterns does
// (nil patterns: no key scope): the one scope check of dispatch then
// refuses, with -NOPERM and nothing executed, every key outside the
// patterns, commands that read the whole keyspace or reveal server state,
// and other databases. channels, when not nil, decides instead of the
// patterns which pub/sub channels its commands may name (an API key's
// capability), scope or not.
func (s *Session) SetKeyScope(patterns []string, channels func(channel []byte) bool) {
	if patterns == nil {
		s.setScope(nil)
	} else {
		s.setScope(recsync.NewScope(patterns))
	}
	s.chanScope = channels
}

// channelAllowed reports whether a scoped session may name channel c.
func (s *Session) channelAllowed(c []byte) bool {
	if s.chanScope != nil {
		return s.chanScope(c)
	}
	return s.scope.Match(c)
}

// checkChannels refuses, as the scope check does, a command naming a
// channel that the session's chanScope does not allow.
func (s *Session) checkChannels(cmd *Command) bool {
	if !cmd.HasChannels() {
		return true
	}
	for _, c := range cmd.ChannelArgs(s.Args) {
		if !s.chanScope(c) {
			s.reject(cmd, errScopeChannel)
			return false
		}
	}
	return true
}

// Stateful reports whether the command args name needs state a connection
// keeps between requests (the table's FlagStateful, on the command or its
// subcommand), which a request/response transport refuses. It reports
// false for an unknown command, which Exec then answers.
func (s *Session) Stateful(args [][]byte) bool {
	if len(args) == 0 {
		return false
	}
	cmd := s.lookup(args[0], false)
	if cmd == nil {
		return false
	}
	if cmd.Flags&FlagStateful != 0 {
		return true
	}
	if cmd.subs != nil && len(args) >= 2 {
		if sub := cmd.Sub(args[1]); sub != nil {
			return sub.Flags&FlagStateful != 0
		}
	}
	return false
}

// Waiting reports whether the session's last request waits (a blocking
// command, a script). When the wait has been answered it appends the reply
// to W, ends the wait and reports false; cancelled then says whether
// CancelWait ended it, W holding nothing new. Call it only from a goroutine
// that owns the session.
func (s *Session) Waiting() (waiting, cancelled bool) {
	switch s.blocked.Load() {
	case blockNone:
		return false, false
	case blockWaiting:
		return true, false
	}
	r := s.blockReply
	s.blockReply = nil
	s.blocked.Store(blockNone)
	if r == nil {
		return false, true
	}
	s.W.Raw(r)
	return false, false
}

// Answered reports, from any goroutine, whether the session's wait has
// been answered and waits for Waiting to collect the reply.
func (s *Session) Answered() bool { return s.blocked.Load() == blockServed }

// CancelWait ends the session's wait in a blocking command as CLIENT
// UNBLOCK does, and reports whether it did: false when the session waits
// for nothing, or its wait was already answered. A script cannot be
// cancelled. Any goroutine may call it; the session's Conn.Wake follows,
// and Waiting then reports cancelled.
func (s *Session) CancelWait() bool {
	reg := &s.srv.blocking
	reg.mu.Lock()
	w := reg.sessions[s]
	reg.mu.Unlock()
	if w == nil {
		return false
	}
	return s.srv.endWait(w, nil)
}

// KillScript stops the script the session's last request runs (EVAL,
// FCALL and their kin), as SCRIPT KILL or FUNCTION KILL would: a script
// that has not written stops at its next instruction and its request
// answers "ERR Script killed by user…"; one that has written cannot be
// stopped (Redis's -UNKILLABLE) and runs to its end. It reports whether
// the session runs a script now and whether it was stopped. Call it from
// the goroutine that started the request (the script runs on another), or
// one ordered after it.
func (s *Session) KillScript() (running, killed bool) {
	run := s.srv.scripts.running.Load()
	if run == nil || s.scriptSess == nil || run.s != s.scriptSess {
		return false, false
	}
	return true, run.kill()
}

// ScriptKilled reports whether reply is the error reply of a script that
// KillScript (or SCRIPT KILL) stopped.
func ScriptKilled(reply []byte) bool {
	return len(reply) > len(errScriptKilled) && reply[0] == '-' && string(reply[1:1+len(errScriptKilled)]) == errScriptKilled
}

// ExecTransaction runs cmds atomically, as MULTI, the commands, then EXEC
// would on the session, and appends one reply: EXEC's array of their
// replies, or the error of the first command refused while queueing (an
// unknown command, wrong arity, a scope refusal: nothing runs then). The
// caller refuses stateful commands (Stateful) first: a command that MULTI
// does not queue would run at once.
func (s *Session) ExecTransaction(cmds [][][]byte) {
	start := len(s.W.B)
	s.multi = &multiState{}
	s.multiLen.Store(1)
	for _, args := range cmds {
		n := len(s.W.B)
		if len(args) == 0 {
			continue
		}
		s.exec(args)
		if s.multi == nil || s.multi.failed {
			// Keep this error alone as the reply.
			s.W.B = append(s.W.B[:start], s.W.B[n:]...)
			s.multi = nil
			s.multiLen.Store(0)
			return
		}
		s.W.B = s.W.B[:n] // +QUEUED
	}
	s.Exec(execArgs)
}

// execArgs is the request EXEC.
var execArgs = [][]byte{[]byte("exec")}
