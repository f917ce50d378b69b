package sync

import (
	"cmp"
	"errors"
	"slices"
	gosync "sync"
	"sync/atomic"
)

// The protocol's per-connection limits (SPEC section 8).
const (
	// MaxQueryKeys is the most keys a live query's initial state may hold.
	MaxQueryKeys = 10000
	// MaxQueries is the most live queries one connection may hold.
	MaxQueries = 64
	// MaxWatched is the most keys one connection may watch.
	MaxWatched = 1024
)

// Limit errors returned by the Router.
var (
	ErrTooManyQueries = errors.New("too many live queries")
	ErrTooManyWatched = errors.New("too many watched keys")
)

// Pusher delivers frames outside the request/reply cycle; the server's
// transport connections implement it. b holds one or more complete RESP
// values (a message-oriented transport sends each as its own message).
// Push must not block and must not keep b after it returns.
type Pusher interface {
	Push(b []byte)
}

// Sub is one connection's sync state: its SYNC patterns, live queries,
// watched keys and, in strict mode, its token scope. Its registrations are
// changed only through the Router, which guards them.
type Sub struct {
	// Conn receives the connection's pushes.
	Conn Pusher
	// Owner is the connection's session, for the caller to recognize the
	// writer of an effect.
	Owner any

	id      uint64
	scope   *Scope
	syncs   []reg
	queries []reg
	watched map[reg]struct{}
}

// reg is one registration: a pattern or key in a database.
type reg struct {
	db int
	s  string
}

// Kind says why a connection hears of a write; a Hit may carry both.
type Kind uint8

const (
	// Mutation: the key is in the connection's SYNC scope or matches one of
	// its live queries; it gets the replayable effect as a push.
	Mutation Kind = 1 << iota
	// Keychange: the key is watched or matches a live query; it gets a
	// ["keychange", key, value] frame.
	Keychange
)

// Hit is one connection interested in a routed key.
type Hit struct {
	Sub  *Sub
	Kind Kind
}

// Router finds, for a written key, every connection that must hear of it.
// It is safe for concurrent use: routing takes a read lock, registration a
// write lock. Routing a key costs a trie walk per database index, not a
// match per connection or per pattern.
type Router struct {
	mu     gosync.RWMutex
	dbs    []*dbRoutes
	active atomic.Int64 // registrations; Route does nothing while 0
	nextID atomic.Uint64
}

// dbRoutes are one database's registrations.
type dbRoutes struct {
	syncs   Index[*Sub]
	queries Index[*Sub]
	watched map[string][]*Sub
	// members counts each Sub's SYNC patterns and live queries here: the
	// connections that get mutation pushes for some key of the database.
	members map[*Sub]int
}

// NewRouter returns a router for databases numbered 0 to dbs-1.
func NewRouter(dbs int) *Router {
	r := &Router{dbs: make([]*dbRoutes, dbs)}
	for i := range r.dbs {
		r.dbs[i] = &dbRoutes{watched: make(map[string][]*Sub), members: make(map[*Sub]int)}
	}
	return r
}

// NewSub returns an empty Sub for a connection delivering through c.
func (r *Router) NewSub(c Pusher, owner any) *Sub {
	return &Sub{Conn: c, Owner: owner, id: r.nextID.Add(1)}
}

// Active reports whether any connection has registered anything. The
// effect hook checks it first so that a server without sync clients pays
// one atomic load per write.
func (r *Router) Active() bool { return r.active.Load() > 0 }

func (r *Router) db(i int) *dbRoutes {
	if i < 0 || i >= len(r.dbs) {
		return nil
	}
	return r.dbs[i]
}

func (d *dbRoutes) join(s *Sub) { d.members[s]++ }

func (d *dbRoutes) leave(s *Sub) {
	if d.members[s]--; d.members[s] <= 0 {
		delete(d.members, s)
	}
}

// SetSync replaces the connection's SYNC patterns by patterns in database
// db and its scope by scope (nil: open mode, no filtering).
func (r *Router) SetSync(s *Sub, db int, patterns []string, scope *Scope) {
	d := r.db(db)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range s.syncs {
		od := r.dbs[g.db]
		if od.syncs.Remove(g.s, s) {
			od.leave(s)
			r.active.Add(-1)
		}
	}
	s.syncs = s.syncs[:0]
	s.scope = scope
	if d == nil {
		return
	}
	for _, p := range patterns {
		if d.syncs.Add(p, s) {
			d.join(s)
			r.active.Add(1)
			s.syncs = append(s.syncs, reg{db, p})
		}
	}
}

// Scope returns the connection's token scope, nil in open mode.
func (r *Router) Scope(s *Sub) *Scope {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return s.scope
}

// AddQuery registers the live query pattern in database db. It reports
// false when the connection already has it, and ErrTooManyQueries when it
// holds MaxQueries already.
func (r *Router) AddQuery(s *Sub, db int, pattern string) (bool, error) {
	d := r.db(db)
	r.mu.Lock()
	defer r.mu.Unlock()
	if d == nil {
		return false, nil
	}
	if slices.Contains(s.queries, reg{db, pattern}) {
		return false, nil
	}
	if len(s.queries) >= MaxQueries {
		return false, ErrTooManyQueries
	}
	d.queries.Add(pattern, s)
	d.join(s)
	r.active.Add(1)
	s.queries = append(s.queries, reg{db, pattern})
	return true, nil
}

// QueryRoom reports whether the connection may register pattern in db:
// it has it already or holds fewer than MaxQueries.
func (r *Router) QueryRoom(s *Sub, db int, pattern string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(s.queries) < MaxQueries || slices.Contains(s.queries, reg{db, pattern})
}

// RemoveQuery unregisters a live query and reports whether it existed.
func (r *Router) RemoveQuery(s *Sub, db int, pattern string) bool {
	d := r.db(db)
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.Index(s.queries, reg{db, pattern})
	if d == nil || i < 0 {
		return false
	}
	s.queries = slices.Delete(s.queries, i, i+1)
	d.queries.Remove(pattern, s)
	d.leave(s)
	r.active.Add(-1)
	return true
}

// Watch adds keys of database db to the connection's watched keys and
// returns how many it watches. Adding them all would pass MaxWatched: it
// adds none and returns ErrTooManyWatched.
func (r *Router) Watch(s *Sub, db int, keys [][]byte) (int, error) {
	d := r.db(db)
	r.mu.Lock()
	defer r.mu.Unlock()
	if d == nil {
		return len(s.watched), nil
	}
	fresh := 0
	seen := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		if _, dup := seen[string(k)]; dup {
			continue
		}
		seen[string(k)] = struct{}{}
		if _, ok := s.watched[reg{db, string(k)}]; !ok {
			fresh++
		}
	}
	if len(s.watched)+fresh > MaxWatched {
		return len(s.watched), ErrTooManyWatched
	}
	if s.watched == nil {
		s.watched = make(map[reg]struct{})
	}
	for k := range seen {
		g := reg{db, k}
		if _, ok := s.watched[g]; ok {
			continue
		}
		s.watched[g] = struct{}{}
		d.watched[k] = append(d.watched[k], s)
		r.active.Add(1)
	}
	return len(s.watched), nil
}

// Unwatch removes keys of database db from the connection's watched keys,
// or every watched key when keys is empty, and returns how many are left.
func (r *Router) Unwatch(s *Sub, db int, keys [][]byte) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(keys) == 0 {
		for g := range s.watched {
			r.unwatch(s, g)
		}
		return 0
	}
	for _, k := range keys {
		g := reg{db, string(k)}
		if _, ok := s.watched[g]; ok {
			r.unwatch(s, g)
		}
	}
	return len(s.watched)
}

// unwatch drops one watched key; the caller holds mu.
func (r *Router) unwatch(s *Sub, g reg) {
	delete(s.watched, g)
	d := r.dbs[g.db]
	subs := d.watched[g.s]
	if i := slices.Index(subs, s); i >= 0 {
		subs = slices.Delete(subs, i, i+1)
	}
	if len(subs) == 0 {
		delete(d.watched, g.s)
	} else {
		d.watched[g.s] = subs
	}
	r.active.Add(-1)
}

// Counts returns the connection's number of SYNC patterns, live queries and
// watched keys.
func (r *Router) Counts(s *Sub) (syncs, queries, watched int) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(s.syncs), len(s.queries), len(s.watched)
}

// Drop removes every registration of the connection and its scope.
func (r *Router) Drop(s *Sub) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range s.syncs {
		if d := r.dbs[g.db]; d.syncs.Remove(g.s, s) {
			d.leave(s)
			r.active.Add(-1)
		}
	}
	for _, g := range s.queries {
		d := r.dbs[g.db]
		d.queries.Remove(g.s, s)
		d.leave(s)
		r.active.Add(-1)
	}
	for g := range s.watched {
		r.unwatch(s, g)
	}
	s.syncs, s.queries, s.scope = nil, nil, nil
}

// Route appends to hits every connection interested in key of database
// db, once each, with the kinds of frames it must get, and returns the
// extended slice. A connection with a token scope hears only of keys in
// that scope.
func (r *Router) Route(db int, key []byte, hits []Hit) []Hit {
	if r.active.Load() == 0 {
		return hits
	}
	d := r.db(db)
	if d == nil {
		return hits
	}
	start := len(hits)
	// groups counts the value lists hits came from: one list never holds
	// a connection twice, so a single group needs no merging.
	groups := 0
	r.mu.RLock()
	if d.syncs.Len() > 0 {
		d.syncs.Match(key, func(e *Entry[*Sub]) bool {
			groups++
			for _, s := range e.Values {
				hits = append(hits, Hit{s, Mutation})
			}
			return true
		})
	}
	if d.queries.Len() > 0 {
		d.queries.Match(key, func(e *Entry[*Sub]) bool {
			groups++
			for _, s := range e.Values {
				if s.scope == nil || s.scope.Match(key) {
					hits = append(hits, Hit{s, Mutation | Keychange})
				}
			}
			return true
		})
	}
	if len(d.watched) > 0 {
		if ws := d.watched[string(key)]; len(ws) > 0 {
			groups++
			for _, s := range ws {
				if s.scope == nil || s.scope.Match(key) {
					hits = append(hits, Hit{s, Keychange})
				}
			}
		}
	}
	r.mu.RUnlock()
	if groups < 2 {
		return hits
	}
	return append(hits[:start], mergeHits(hits[start:])...)
}

// mergeHits orders hits by connection and merges each connection's hits
// into one, in place.
func mergeHits(h []Hit) []Hit {
	if len(h) < 2 {
		return h
	}
	slices.SortFunc(h, func(a, b Hit) int { return cmp.Compare(a.Sub.id, b.Sub.id) })
	out := h[:1]
	for _, x := range h[1:] {
		if last := &out[len(out)-1]; last.Sub == x.Sub {
			last.Kind |= x.Kind
			continue
		}
		out = append(out, x)
	}
	return out
}

// Members appends to dst every connection that gets mutation pushes for
// some key of database db (a SYNC pattern or live query there), ordered.
func (r *Router) Members(db int, dst []*Sub) []*Sub {
	d := r.db(db)
	if d == nil {
		return dst
	}
	start := len(dst)
	r.mu.RLock()
	for s := range d.members {
		dst = append(dst, s)
	}
	r.mu.RUnlock()
	slices.SortFunc(dst[start:], func(a, b *Sub) int { return cmp.Compare(a.id, b.id) })
	return dst
}

// Watched calls fn for every watched key of database db with the
// connections watching it that may see it (their scope allows it). It holds
// the read lock during the calls: fn must not call back into the Router.
func (r *Router) Watched(db int, fn func(key string, subs []*Sub)) {
	d := r.db(db)
	if d == nil {
		return
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	var subs []*Sub
	for k, ws := range d.watched {
		subs = subs[:0]
		for _, s := range ws {
			if s.scope == nil || s.scope.Match([]byte(k)) {
				subs = append(subs, s)
			}
		}
		if len(subs) > 0 {
			fn(k, subs)
		}
	}
}

// SortHits orders hits by connection, as needed to merge the hits of two
// keys (RENAME's source and destination) connection by connection.
func SortHits(h []Hit) {
	slices.SortFunc(h, func(a, b Hit) int { return cmp.Compare(a.Sub.id, b.Sub.id) })
}

// Before reports whether a sorts before b in SortHits order.
func Before(a, b *Sub) bool { return a.id < b.id }
