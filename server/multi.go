package server

import (
	"sync"
	"sync/atomic"
)

// multiState is an open MULTI: the queued commands and whether queueing
// failed (EXECABORT).
type multiState struct {
	cmds   []queuedCmd
	failed bool
}

type queuedCmd struct {
	cmd  *Command
	args [][]byte
}

// queue adds the checked command to the open transaction, copying its
// arguments out of the transport's buffer.
func (s *Session) queue(cmd *Command) {
	args := make([][]byte, len(s.Args))
	for i, a := range s.Args {
		args[i] = append([]byte(nil), a...)
	}
	s.multi.cmds = append(s.multi.cmds, queuedCmd{cmd, args})
	s.multiLen.Add(1)
	s.W.Simple("QUEUED")
}

func cmdMulti(s *Session) {
	if s.multi != nil {
		s.W.Error(errNestedMulti)
		return
	}
	s.multi = &multiState{}
	s.multiLen.Store(1)
	s.W.OK()
}

func cmdDiscard(s *Session) {
	if s.multi == nil {
		s.W.Error(errDiscardNoMulti)
		return
	}
	s.multi = nil
	s.multiLen.Store(0)
	s.unwatchAll()
	s.W.OK()
}

// cmdExec runs the queued commands atomically: it locks the union of every
// shard they touch (and those of watched keys), checks WATCH under those
// locks, then runs each command without releasing them.
func cmdExec(s *Session) {
	m := s.multi
	if m == nil {
		s.W.Error(errExecNoMulti)
		return
	}
	s.multi = nil
	s.multiLen.Store(0)
	if m.failed {
		s.unwatchAll()
		s.W.Error(errExecAbort)
		return
	}
	db := s.DBIndex
	for _, q := range m.cmds {
		s.addLocks(q.cmd, q.args, db)
		if q.cmd.Name == "select" {
			if n, e := parseDBIndex(q.args[1], len(s.srv.ks.DBs)); e == "" {
				db = n
			}
		}
	}
	if s.watch != nil {
		for _, k := range s.watch.keys {
			s.masks[k.db] |= 1 << s.srv.ks.ShardOf([]byte(k.key))
			s.lockDB |= 1 << k.db
		}
	}
	s.lock()
	if s.watchDirty() {
		s.unlock()
		s.unwatchAll()
		s.W.NullArray()
		return
	}
	s.unwatchAll()
	s.inExec = true
	// The replicas get the transaction's effects as one MULTI … EXEC
	// (repl_dedup.go).
	s.replWrap.Add(1)
	s.W.Array(len(m.cmds))
	for _, q := range m.cmds {
		s.Args = q.args
		// The user's rules may have changed since the command was queued.
		if st := s.user.Load().limits.Load(); st != nil && !s.aclAllowsQueued(st, q.cmd) {
			continue
		}
		s.call(q.cmd)
	}
	if s.replWrap.Add(-1) == 0 {
		s.srv.endUnit(s)
	}
	s.inExec = false
	s.unlock()
	for _, fn := range s.afterExec {
		fn()
	}
	s.afterExec = nil
}

// watchState is the keys a session watches and whether one was touched.
type watchState struct {
	keys  []watchedKey
	dirty bool
}

type watchedKey struct {
	db      int
	key     string
	expired bool // absent or already expired when watched
}

// watchRegistry maps watched keys to the sessions watching them, so that the
// effect hook can invalidate transactions.
type watchRegistry struct {
	n    atomic.Int64 // watched keys, so that writes skip the lock when none
	mu   sync.Mutex
	keys map[watchedKey]map[*Session]struct{}
}

func cmdWatch(s *Session) {
	if s.multi != nil {
		s.W.Error(errWatchInMulti)
		return
	}
	reg := s.srv.watchReg()
	for _, a := range s.Args[1:] {
		k := watchedKey{db: s.DBIndex, key: string(a)}
		if s.watch == nil {
			s.watch = &watchState{}
		}
		dup := false
		for _, w := range s.watch.keys {
			if w.db == k.db && w.key == k.key {
				dup = true
			}
		}
		if dup {
			continue
		}
		k.expired = s.db.Peek(a) == nil
		s.watch.keys = append(s.watch.keys, k)
		reg.mu.Lock()
		id := watchedKey{db: k.db, key: k.key}
		set := reg.keys[id]
		if set == nil {
			set = make(map[*Session]struct{})
			reg.keys[id] = set
		}
		set[s] = struct{}{}
		reg.n.Add(1)
		reg.mu.Unlock()
	}
	s.W.OK()
}

func cmdUnwatch(s *Session) {
	s.unwatchAll()
	s.W.OK()
}

// watchDirty reports whether a watched key changed, or expired, since WATCH.
// The caller holds the watched keys' shard locks.
func (s *Session) watchDirty() bool {
	if s.watch == nil {
		return false
	}
	reg := s.srv.watchReg()
	reg.mu.Lock()
	dirty := s.watch.dirty
	reg.mu.Unlock()
	if dirty {
		return true
	}
	for _, k := range s.watch.keys {
		if !k.expired && s.srv.ks.DBs[k.db].Peek([]byte(k.key)) == nil {
			return true
		}
	}
	return false
}

func (s *Session) unwatchAll() {
	if s.watch == nil {
		return
	}
	reg := s.srv.watchReg()
	reg.mu.Lock()
	for _, k := range s.watch.keys {
		id := watchedKey{db: k.db, key: k.key}
		if set := reg.keys[id]; set != nil {
			delete(set, s)
			reg.n.Add(-1)
			if len(set) == 0 {
				delete(reg.keys, id)
			}
		}
	}
	reg.mu.Unlock()
	s.watch = nil
}

// touch marks every session watching key in db dirty.
func (reg *watchRegistry) touch(db int, key []byte) {
	if reg.n.Load() != 0 {
		reg.touchWatched(db, key)
	}
}

// touchWatched is touch while some key is watched.
func (reg *watchRegistry) touchWatched(db int, key []byte) {
	reg.mu.Lock()
	if len(reg.keys) > 0 {
		for sess := range reg.keys[watchedKey{db: db, key: string(key)}] {
			sess.watch.dirty = true
		}
	}
	reg.mu.Unlock()
}

// touchDB marks dirty every session watching a key of db that exists now
// (FLUSHDB, FLUSHALL, SWAPDB). The caller holds the database's locks.
func (srv *Server) touchDB(db int) {
	reg := srv.watchReg()
	reg.mu.Lock()
	for k, set := range reg.keys {
		if k.db == db && srv.ks.DBs[db].Peek([]byte(k.key)) != nil {
			for sess := range set {
				sess.watch.dirty = true
			}
		}
	}
	reg.mu.Unlock()
}
