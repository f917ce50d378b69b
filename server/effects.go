package server

import "strconv"

// Effect is the replayable form of one change to one key: the command that,
// applied to a copy of the key's previous state, reproduces the server's new
// state (SPEC section 4). INCR k yields SET k <value> KEEPTTL, EXPIRE yields
// PEXPIREAT, an expired key yields DEL.
//
// Every write reports its effects through Session.emit, and nothing else
// learns of writes: sync pushes, the append-only log, WATCH and the dirty
// counter are all EffectHooks.
type Effect struct {
	DB     int
	Key    []byte
	Args   [][]byte
	Origin *Session // the writing session; nil for expiry
	// ClientID and WireID are the DEDUP mark the change was made under
	// (ClientID nil when it was not DEDUP-wrapped). The append-only log
	// stores them with the change, so that replaying the change restores
	// the mark with it and a replayed write is never applied twice. A mark
	// raised by a command that changed nothing arrives as the effect
	// DEDUP <client-id> <wire-id> with a nil Key.
	ClientID []byte
	WireID   uint64
}

// EffectHook hears of every effect. It is called with the key's shard locked,
// in the order the changes were applied, so it must not block or call back
// into the keyspace. Args are only valid during the call.
type EffectHook func(e *Effect)

// emit reports one effect of the running command on key. The arguments are
// copied into the session's scratch space, so the call does not allocate.
func (s *Session) emit(args ...[]byte) {
	s.srv.dirty.Add(1)
	s.emitted++
	if len(s.srv.hooks) == 0 {
		return
	}
	s.eff.Args = append(s.eff.Args[:0], args...)
	s.eff.DB = s.DBIndex
	s.eff.Key = args[1]
	s.eff.Origin = s
	s.eff.ClientID, s.eff.WireID = nil, 0
	if s.inDedup {
		s.eff.ClientID, s.eff.WireID = s.dedupClient, s.dedupWire
	}
	for _, h := range s.srv.hooks {
		h(&s.eff)
	}
}

// onExpire turns a key found expired into a DEL effect. The keyspace calls it
// under the key's shard lock.
func (srv *Server) onExpire(db int, key string) {
	srv.dirty.Add(1)
	srv.expiredKeys.Add(1)
	if len(srv.hooks) == 0 {
		return
	}
	k := []byte(key)
	e := &Effect{DB: db, Key: k, Args: [][]byte{[]byte("DEL"), k}}
	for _, h := range srv.hooks {
		h(e)
	}
}

// emitDB reports an effect on a whole database (FLUSHDB, SWAPDB): Key is nil.
func (s *Session) emitDB(db int, args ...string) {
	s.srv.dirty.Add(1)
	s.emitted++
	if len(s.srv.hooks) == 0 {
		return
	}
	e := &Effect{DB: db, Origin: s}
	for _, a := range args {
		e.Args = append(e.Args, []byte(a))
	}
	for _, h := range s.srv.hooks {
		h(e)
	}
}

// itoa formats n into the session's scratch space and returns the digits,
// valid until the command ends. Effects built from it do not allocate.
func (s *Session) itoa(n int64) []byte {
	start := len(s.scratch)
	s.scratch = strconv.AppendInt(s.scratch, n, 10)
	return s.scratch[start:len(s.scratch):len(s.scratch)]
}

// utoa is itoa for unsigned numbers.
func (s *Session) utoa(n uint64) []byte {
	start := len(s.scratch)
	s.scratch = strconv.AppendUint(s.scratch, n, 10)
	return s.scratch[start:len(s.scratch):len(s.scratch)]
}
