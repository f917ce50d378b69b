package server

import (
	"github.com/recached/recached/server/keyspace"
)

// scriptHold keeps a scoped session's script from showing anything before
// it ends (strict sync mode, SPEC section 4): a redis.call naming a key
// outside the token's scope aborts the script with -NOPERM, and the writes
// the script made before it must then be as if never made. So while a
// scoped session's script runs, its effects and keyspace events are held
// here instead of published, and the first write to each key saves the
// key's value and time to live. A script that ends (with a reply or with
// any other error, keeping its writes as Redis does) publishes what was
// held, in order, still under its locks; one aborted by the scope puts the
// saved keys back and drops what was held, so the append-only log, the
// replication stream, sync pushes, WATCH, blocked clients and keyspace
// notifications never hear of its writes.
//
// Sessions without a scope run scripts unheld: their effects are published
// as the commands run, and a failing script keeps its writes.
type scriptHold struct {
	emitted uint64 // the session's count of effects when the script started
	held    []heldItem
	saved   map[string]savedKey
	order   [][]byte // saved keys in the order first written
}

// heldItem is one held publication: an effect, or a keyspace event.
type heldItem struct {
	eff   *Effect
	event string
	flags uint32
	db    int
	key   []byte
}

// savedKey is a key as it was before the script first wrote it.
type savedKey struct {
	e      *keyspace.Entry // nil: the key did not exist
	at     int64
	expire bool
}

// holdEffect keeps a copy of e, which is only valid during the call.
func (h *scriptHold) holdEffect(e *Effect) {
	c := *e
	c.Key = append([]byte(nil), e.Key...)
	c.Args = make([][]byte, len(e.Args))
	for i, a := range e.Args {
		c.Args[i] = append([]byte(nil), a...)
	}
	c.ClientID = append([]byte(nil), e.ClientID...)
	if e.ClientID == nil {
		c.ClientID = nil
	}
	h.held = append(h.held, heldItem{eff: &c})
}

// holdEvent keeps a keyspace event for publishKeyEvent.
func (h *scriptHold) holdEvent(flags uint32, event string, db int, key []byte) {
	h.held = append(h.held, heldItem{event: event, flags: flags, db: db, key: append([]byte(nil), key...)})
}

// save records, before cmd runs, the keys it may write that the script
// has not written yet. It reports false when a key's value cannot be
// copied (the write then cannot be undone).
func (h *scriptHold) save(s *Session, cmd *Command) bool {
	for _, k := range cmd.KeyArgs(nil, s.Args) {
		if _, ok := h.saved[string(k)]; ok {
			continue
		}
		var sk savedKey
		if e := s.db.Lookup(k); e != nil {
			if sk.e = copyEntry(e); sk.e == nil {
				return false
			}
			sk.e.Atime = e.Atime
			sk.at, sk.expire = s.db.Expiry(k)
		}
		if h.saved == nil {
			h.saved = make(map[string]savedKey)
		}
		k = append([]byte(nil), k...)
		h.saved[string(k)] = sk
		h.order = append(h.order, k)
	}
	return true
}

// undo puts every saved key back as it was and drops what was held: the
// session emitted nothing (a DEDUP mark around the script is then logged
// alone).
func (h *scriptHold) undo(s *Session) {
	s.emitted = h.emitted
	for _, k := range h.order {
		sk := h.saved[string(k)]
		s.db.Delete(k)
		if sk.e != nil {
			s.db.Set(k, sk.e)
			if sk.expire {
				s.db.SetExpiry(k, sk.at)
			}
		}
	}
	h.held = nil
}

// release publishes what was held, in the order it happened.
func (h *scriptHold) release(s *Session) {
	for _, it := range h.held {
		if it.eff != nil {
			s.srv.publish(it.eff)
			continue
		}
		s.srv.publishKeyEvent(s, it.flags, it.event, it.db, it.key)
	}
	h.held = nil
}
