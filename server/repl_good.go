package server

import (
	"strings"
	"time"
)

// min-replicas-to-write and min-replicas-max-lag (old names
// min-slaves-*), as Redis 7.0 applies them. A replica is good while it is
// online and its last REPLCONF ACK is at most min-replicas-max-lag seconds
// old. The good replicas are counted when a replica comes online or goes
// away, when min-replicas-max-lag changes and once a second (replCron),
// the moments Redis's refreshGoodSlavesCount runs. While both parameters
// are non-zero, the server is a primary and fewer than
// min-replicas-to-write replicas are good, writes of clients are refused
// with -NOREPLICAS:
//
//   - a command that writes, judged as Redis's processCommand judges it:
//     a write command, a DEDUP-wrapped write (refused before its mark
//     moves), a script that declared flags without no-writes (EVAL with
//     #!lua, FCALL), and EXEC of a transaction that queued one of those,
//     which is aborted with -EXECABORT; a write queued in MULTI is
//     refused when queued and poisons the transaction;
//   - in a script that declared flags and may write, at its start (it
//     may be queued in a transaction checked when the replicas were
//     still there); in a script without flags, at its first write: once
//     a script has written, it runs to its end.
//
// The check is in the engine's dispatch (exec), after the memory check,
// as in Redis, so every transport gets it. The log's replay at start and
// the master's stream on a replica are never refused.

const errNoReplicas = "NOREPLICAS Not enough good replicas to write."

// applyMinReplicas and applyMinReplicasLag are the apply functions of
// min-replicas-to-write and min-replicas-max-lag. They run under cfgMu,
// which replState.mu is taken outside of (INFO replication reads
// parameters with it held): the count for a new lag is made by the act
// function, refreshGood, once cfgMu is released.
func applyMinReplicas(srv *Server, v string) {
	srv.repl.minWrite.Store(int64(atoi32(v)))
}

func applyMinReplicasLag(srv *Server, v string) {
	srv.repl.minLag.Store(int64(atoi32(v)))
}

// minReplicasLagParam is min-replicas-max-lag: applied under cfgMu,
// the good replicas recounted after.
func minReplicasLagParam() *configParam {
	p := withApply(intParam("min-replicas-max-lag", "min-slaves-max-lag", 0, 0, maxInt32, 10), applyMinReplicasLag)
	p.act = actMinReplicasLag
	return p
}

// actMinReplicasLag recounts the good replicas with the new lag.
func actMinReplicasLag(srv *Server, _ string) error {
	r := &srv.repl
	r.mu.Lock()
	r.refreshGoodLocked(time.Now().Unix())
	r.mu.Unlock()
	return nil
}

// refreshGoodLocked counts the good replicas at now (unix seconds); the
// caller holds r.mu. The count is kept whatever the parameters, so that
// setting min-replicas-to-write acts at once.
func (r *replState) refreshGoodLocked(now int64) {
	lag := r.minLag.Load()
	n := int64(0)
	for _, l := range r.replicas {
		if l.state == "online" && !l.hello.rdbOnly && now-l.ackTime <= lag {
			n++
		}
	}
	r.good.Store(n)
}

// minReplicasOn reports whether both parameters are set, when INFO shows
// min_slaves_good_slaves.
func (r *replState) minReplicasOn() bool {
	return r.minWrite.Load() != 0 && r.minLag.Load() != 0
}

// lacksReplicas reports whether writes are refused now: Redis's
// checkGoodReplicasStatus, false.
func (srv *Server) lacksReplicas() bool {
	r := &srv.repl
	n := r.minWrite.Load()
	return n != 0 && r.minLag.Load() != 0 && !srv.isReplica() && r.good.Load() < n
}

// scriptLacksReplicas reports whether a script of s that may write is
// refused -NOREPLICAS now (not when replaying the log).
func (s *Session) scriptLacksReplicas() bool {
	return (s.conn != nil || s.scriptOf != nil) && s.srv.lacksReplicas()
}

// refusesNoReplicas is exec's check, once min-replicas-to-write is set:
// it replies -NOREPLICAS (EXEC: -EXECABORT, the transaction discarded)
// and returns true when cmd writes and too few replicas are good.
func (s *Session) refusesNoReplicas(cmd *Command) bool {
	if !s.scriptLacksReplicas() {
		return false // enough replicas, or the log's replay
	}
	if cmd.Name == "exec" && s.multi != nil {
		for _, q := range s.multi.cmds {
			if s.declaresWrite(q.cmd, q.args) {
				s.abortExec(cmd, errNoReplicas)
				return true
			}
		}
		return false
	}
	if s.declaresWrite(cmd, s.Args) {
		s.reject(cmd, errNoReplicas)
		return true
	}
	return false
}

// abortExec refuses EXEC before it runs, as Redis's execCommandAbort: the
// transaction is discarded and the error names the reason.
func (s *Session) abortExec(cmd *Command, msg string) {
	s.multi = nil
	s.multiLen.Store(0)
	s.unwatchAll()
	s.reject(cmd, "EXECABORT Transaction discarded because of: "+msg)
}

// declaresWrite reports whether cmd run with args is a write command as
// Redis's processCommand sees it: a command flagged write, the command a
// DEDUP wraps, or a script whose declared flags (a #!lua line, a
// function's flags) do not say no-writes. A script without flags is not:
// its writes are checked as they run.
func (s *Session) declaresWrite(cmd *Command, args [][]byte) bool {
	cmd, args = s.wrapped(cmd, args)
	switch {
	case cmd.Flags&FlagWrite != 0:
		return true
	case cmd.Flags&FlagRunsScript != 0:
		flags, ok := s.srv.declaredScriptFlags(cmd, args)
		return ok && flags&scriptShebang != 0 && flags&scriptNoWrites == 0
	}
	return false
}

// declaredScriptFlags returns the flags a script command runs with, as
// Redis's evalGetCommandFlags and fcallGetCommandFlags find them: the
// #!lua line of EVAL's body, the cached script of EVALSHA, the function
// of FCALL (whose flags always count as declared: scriptShebang is set).
// ok is false when there is no script to read them from (an unknown sha
// or function, a shebang that does not parse).
func (srv *Server) declaredScriptFlags(cmd *Command, args [][]byte) (scriptFlags, bool) {
	if len(args) < 2 {
		return 0, false
	}
	e := &srv.scripts
	switch strings.TrimSuffix(cmd.Name, "_ro") {
	case "eval":
		flags, _, err := parseShebang(string(args[1]))
		return flags, err == ""
	case "evalsha":
		if sc := e.lookup(args[1]); sc != nil {
			return sc.flags, true
		}
	case "fcall":
		e.mu.Lock()
		f := e.funcs[strings.ToLower(string(args[1]))]
		e.mu.Unlock()
		if f != nil {
			return f.flags | scriptShebang, true
		}
	}
	return 0, false
}
