package server

import (
	"bytes"
	"strconv"

	"github.com/recached/recached/dedup"
	"github.com/recached/recached/resp"
)

// Transactions in the replication stream. The effects of an EXEC, of a
// script (EVAL, FCALL) and of a DEDUP-wrapped command reach the replicas
// as one MULTI … EXEC, as Redis 7.0 propagates a transaction or a script,
// so that a replica applies them atomically. The unit opens at the
// command's first effect (a command that changes nothing sends nothing)
// and closes when the outermost of these commands ends, before its shards
// are unlocked; Redis leaves a single propagated write bare, recached
// wraps it too, which changes nothing for the replica. A replica moves its
// offset only at EXEC, so a link cut inside a unit makes it drop the part
// it received, and the primary sends the whole unit again
// (repl_replica_link.go).
//
// DEDUP marks. A DEDUP-wrapped write reaches the replicas as one
// transaction holding the mark and the change:
//
//	MULTI
//	PING "recached-dedup <wire-id> <client-id>"
//	<the write's effects>
//	EXEC
//
// and a wrapped command that changed nothing as the PING alone. PING with
// a message is a command every Redis server knows, allowed inside MULTI
// and without effect, so a redis-server replica applies the write and
// ignores the mark, and the stream's bytes, hence the offsets, are the
// same for every replica. No client can forge a mark: PING from a client
// is not a write and never enters the stream. A recached replica's master
// session raises the mark when it runs that PING (applyStreamMark), in
// the same EXEC as the change it covers; like a Redis replica, it moves
// its replication offset only at EXEC, so a link cut in the middle of the
// transaction makes the primary send the whole of it again (+CONTINUE
// from the offset before MULTI), never the change without its mark.
//
// The guarantee: a write acknowledged by the primary after WAIT 1 (or
// more) returned at least 1 is on a replica together with its mark, so
// after a failover to that replica a replayed write answers +DUP. Without
// WAIT, a write acknowledged just before the primary died may not have
// reached any replica; its replay then applies it, once, on the new
// primary: exactly once still holds for it, but only because neither
// the write nor the mark survived.
//
// Effects from other clients published while a transaction is open land
// in it (the stream is one sequence in the order changes were applied;
// they touch other shards, since the unit's command holds its own); they
// are applied in the same EXEC, which changes nothing in the result.

// markPrefix opens the PING message that carries a mark.
const markPrefix = "recached-dedup "

// appendMark appends, for a marked effect of session o, the stream's
// transaction's MULTI (unless one is open) and the mark's PING, once per
// DEDUP command; the caller holds r.mu. A mark with no change
// (EffectMark) is the PING alone, inside a transaction when one is open.
func (r *replState) appendMark(b []byte, e *Effect, o *Session) []byte {
	if e.Kind == EffectMark {
		return appendMarkPing(b, e) // after the command: no EXEC to wait for
	}
	if o == nil || o.replMarked {
		return b // this command's mark is in the transaction already
	}
	b = r.openUnit(b, o)
	o.replMarked = true
	return appendMarkPing(b, e)
}

// openUnit makes session o hold the stream's transaction, appending MULTI
// when none is open; the caller holds r.mu. endReplUnit lets it go.
func (r *replState) openUnit(b []byte, o *Session) []byte {
	if o.replUnit {
		return b
	}
	if r.unit == 0 {
		b = resp.AppendCommand(b, bMULTI)
	}
	r.unit++
	o.replUnit = true
	return b
}

var (
	bMULTI = []byte("MULTI")
	bEXEC  = []byte("EXEC")
	bPING  = []byte("PING")
)

// appendMarkPing appends the PING that carries e's mark.
func appendMarkPing(b []byte, e *Effect) []byte {
	return resp.AppendCommand(b, bPING, appendMarkMsg(e))
}

// appendMarkMsg is the mark's PING message.
func appendMarkMsg(e *Effect) []byte {
	msg := strconv.AppendUint([]byte(markPrefix), e.WireID, 10)
	return append(append(msg, ' '), e.ClientID...)
}

// endReplUnit closes, when s's command opened or joined the stream's
// transaction, its part of it: EXEC once every command in it has ended.
// The command calls it before its shards are unlocked.
func (srv *Server) endReplUnit(s *Session) {
	if !s.replUnit {
		return
	}
	r := &srv.repl
	r.mu.Lock()
	s.replUnit = false
	if r.unit > 0 {
		r.unit--
		if r.unit == 0 && r.backlog != nil {
			r.feedLocked(resp.AppendCommand(nil, bEXEC))
			s.woff.Store(r.offset)
		}
	}
	r.mu.Unlock()
}

// applyStreamMark raises the DEDUP mark a PING of the master's stream
// carries (a recached replica's master session); other messages are
// ordinary PINGs.
func (s *Session) applyStreamMark(msg []byte) {
	cid, id, ok := parseMark(msg)
	if !ok {
		return
	}
	if s.srv.dedup.AdmitAt(cid, id, s.srv.coarseNow.Load()) {
		s.emitMark(cid, id) // the replica's own log keeps it
	}
}

// parseMark reads a mark's PING message: the wire id and a copy of the
// client id; ok is false for any other message.
func parseMark(msg []byte) (cid []byte, id uint64, ok bool) {
	rest, ok := bytes.CutPrefix(msg, []byte(markPrefix))
	if !ok {
		return nil, 0, false
	}
	wire, c, ok := bytes.Cut(rest, []byte(" "))
	id, err := strconv.ParseUint(string(wire), 10, 64)
	if !ok || err != nil || len(c) == 0 || len(c) > dedup.MaxClientID {
		return nil, 0, false
	}
	return bytes.Clone(c), id, true
}
