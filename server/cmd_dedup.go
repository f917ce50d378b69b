package server

import (
	"strconv"

	"github.com/recached/recached/dedup"
)

// dedupCommands is DEDUP, the exactly-once wrapper of the sync protocol.
func dedupCommands() []*Command {
	return []*Command{
		{Name: "dedup", Arity: -4, Flags: FlagMovableKeys | FlagFast | FlagConnection | FlagClientOwned, Wraps: 3, Group: "sync", Since: "1.0.0",
			Syntax:  "client-id wire-id command [arg ...]",
			Summary: "Runs a write at most once per client id and wire id: ids at or below the client's high-water mark reply +DUP.", Categories: "write fast",
			Handler: cmdDedup},
	}
}

// cmdDedup admits or refuses a wrapped command by its client's mark. The
// dispatcher has already locked the shards the wrapped command touches
// (Command.Wraps), so the mark check and the command are one step for every
// other client.
func cmdDedup(s *Session) {
	cid, wid := s.Args[1], s.Args[2]
	if len(cid) == 0 || len(cid) > dedup.MaxClientID {
		s.W.Error("ERR DEDUP client id must be 1 to 64 bytes")
		return
	}
	id, err := strconv.ParseUint(string(wid), 10, 64)
	if err != nil || (len(wid) > 1 && wid[0] == '0') || wid[0] == '+' {
		s.W.Error("ERR DEDUP wire id must be a decimal unsigned 64-bit integer")
		return
	}
	if inner := s.lookup(s.Args[3], true); inner != nil && (inner.Flags&FlagConnection != 0 || inner.Wraps > 0) {
		s.W.Error("ERR DEDUP cannot wrap '" + inner.Name + "': it is connection-scoped and must run on every replay")
		return
	}
	if s.inDedup {
		s.W.Error("ERR DEDUP cannot be nested")
		return
	}
	args := s.Args[3:]
	s.inDedup, s.dedupClient, s.dedupWire = true, cid, id
	var cmd *Command
	if s.scope != nil {
		// A scoped connection raises a mark only with a command it may
		// run: the wrapped command's checks (scope included) come first,
		// and a refusal is the reply with no mark moved.
		if cmd = s.prepare(args); cmd == nil {
			s.inDedup = false
			return
		}
	}
	if !s.srv.dedup.AdmitAt(cid, id, s.srv.coarseNow.Load()) {
		s.inDedup = false
		s.W.Simple("DUP")
		return
	}
	if s.scope == nil {
		cmd = s.prepare(args)
	}
	emitted := s.emitted
	s.replWrap.Add(1)
	if cmd != nil {
		s.callLocked(cmd)
	}
	s.replMarked = false
	if s.replWrap.Add(-1) == 0 {
		s.srv.endUnit(s) // the log's and the replication stream's unit (persist_unit.go)
	}
	s.inDedup = false
	if s.emitted == emitted {
		// The wrapped command changed nothing (it failed, or was a read):
		// the raised mark still has to reach the append-only log.
		s.emitMark(cid, id)
	}
}

// Dedup returns the server's exactly-once marks.
func (srv *Server) Dedup() *dedup.Table { return srv.dedup }
