package server

// Transactions in the append-only log. The effects of an EXEC, of a
// script (EVAL, FCALL) and of a DEDUP-wrapped command are logged as one
// unit: each is a record tagged with the unit's number, and a last record
// ends the unit once the command is done, before its shards are unlocked.
// Replay applies a unit's effects only when it reads that end, so a crash
// in the middle of a transaction (a Commit from another connection, or
// the everysec flush, wrote its first effects and the process died before
// the rest) leaves none of it, as Redis drops a MULTI without its EXEC at
// the end of its AOF. A client was never told such a transaction ran: its
// reply follows the Commit that writes the end.
//
// Effects of other connections logged between a unit's records are not
// part of it and are replayed where they stand: they touch keys the
// unit's command does not hold, so applying the unit at its end instead
// of spread around them gives the same data. Waiters a transaction wakes
// are served after it has released its locks, hence after its end.
//
// Numbers come from persister.units, which a start moves past every
// number its logs hold, so that a unit a crash left open is never joined
// by a later one's end.

// logUnitOf returns the log unit of effect e: the transaction number of
// the wrapped command running in e's session, drawn at its first effect,
// or 0 when e stands alone.
func logUnitOf(e *Effect) uint64 {
	if e.Kind == EffectMark {
		return 0
	}
	o := e.unitOwner()
	if o == nil || o.replWrap.Load() == 0 {
		return 0
	}
	if o.logUnit == 0 {
		o.logUnit = o.srv.persist.units.Add(1)
	}
	return o.logUnit
}

// unitOwner returns the session whose wrapped command (EXEC, script,
// DEDUP) e belongs to: the script's caller for a command a script ran,
// else e's origin (nil for an expiry or eviction).
func (e *Effect) unitOwner() *Session {
	if o := e.Origin; o != nil && o.scriptOf != nil {
		return o.scriptOf
	}
	return e.Origin
}

// endUnit ends the transaction of s's wrapped command, once the outermost
// one is done and before its shards are unlocked: the log's unit, and the
// replication stream's (endReplUnit).
func (srv *Server) endUnit(s *Session) {
	if s.logUnit != 0 {
		if l := srv.persist.log.Load(); l != nil {
			l.AppendUnitEnd(s.logUnit)
		}
		s.logUnit = 0
	}
	srv.endReplUnit(s)
}
