package server

import (
	"bytes"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/recached/recached/resp"
)

// Client-side caching (CLIENT TRACKING), as Redis 7.0 does it. In the
// default mode the server remembers, for each key a read-only command of a
// tracking client returned, the ids of those clients; the first change to
// the key (any write, expiry, eviction, FLUSHDB/FLUSHALL) sends each of
// them one invalidation and forgets them. In BCAST mode a client names key
// prefixes instead and hears of every change under them, batched per
// command. The changes come from the one effect publisher, the same events
// as sync pushes, the log and WATCH.
//
// Like Redis's, the table is keyed by key name alone, whatever the
// database, and holds client ids that are dropped lazily: a client that
// turns tracking off or disconnects leaves its ids until the keys change.

// trackingChannel is where RESP2 clients that others redirect their
// invalidations to receive them, subscribed.
const trackingChannel = "__redis__:invalidate"

// tracker is a session's CLIENT TRACKING state. Its options are fixed once
// it is published (Session.trk); CLIENT TRACKING ON replaces it.
type tracker struct {
	bcast, optin, optout, noloop bool
	redirect                     int64 // the client receiving the invalidations, 0 for the session itself
	prefixes                     []string

	// caching is CLIENT CACHING YES (OPTIN) or NO (OPTOUT) for the next
	// command; scriptRead is set when a script run by the session called
	// a read-only command. Both belong to the session's goroutine.
	caching, scriptRead bool

	// mu guards the fields below, which other sessions' writes reach.
	mu sync.Mutex
	// depth counts the commands of the session running now (an EXEC and
	// the commands it runs); invalidations for the session itself that
	// happen meanwhile wait in pending and follow its reply, as in Redis.
	depth   int
	pending [][]byte
	broken  bool // the redirect client was gone when an invalidation was due
}

// trackingTable is the server's side of client-side caching.
type trackingTable struct {
	mu       sync.Mutex
	keys     map[string]map[int64]struct{}
	items    int // ids across keys (tracking_total_items)
	prefixes map[string]*bcastPrefix
	// effort grows while trimming to tracking-table-max-keys falls short,
	// as Redis's timeout counter does.
	effort int

	// active is set while there is anything to invalidate: the effect hook
	// returns at once otherwise.
	active  atomic.Bool
	dirty   atomic.Bool  // some prefix has changed keys to broadcast
	clients atomic.Int64 // sessions with tracking on (tracking_clients)
	maxKeys atomic.Int64 // tracking-table-max-keys, 0 for no limit
}

// bcastPrefix is one BCAST prefix: its clients and the keys changed under
// it since the last broadcast, each with the id of the client that changed
// it (0 for expiry), so NOLOOP clients can skip their own.
type bcastPrefix struct {
	clients map[*Session]struct{}
	changed map[string]int64
}

func (t *trackingTable) refreshActive() {
	t.active.Store(len(t.keys) > 0 || len(t.prefixes) > 0)
}

// enableTracking turns tracking on for s with tr's options (CLIENT
// TRACKING ON), keeping the prefixes s already broadcasts for.
func (srv *Server) enableTracking(s *Session, tr *tracker) {
	t := &srv.tracking
	old := s.trk.Load()
	if old == nil {
		t.clients.Add(1)
	}
	if tr.bcast {
		if old != nil {
			tr.prefixes = append(append([]string(nil), old.prefixes...), tr.prefixes...)
		}
		if len(tr.prefixes) == 0 {
			tr.prefixes = []string{""}
		}
		tr.prefixes = dedupeStrings(tr.prefixes)
		t.mu.Lock()
		if t.prefixes == nil {
			t.prefixes = make(map[string]*bcastPrefix)
		}
		for _, p := range tr.prefixes {
			bp := t.prefixes[p]
			if bp == nil {
				bp = &bcastPrefix{clients: make(map[*Session]struct{}), changed: make(map[string]int64)}
				t.prefixes[p] = bp
			}
			bp.clients[s] = struct{}{}
		}
		t.refreshActive()
		t.mu.Unlock()
	}
	s.trk.Store(tr)
}

// disableTracking turns tracking off for s (CLIENT TRACKING OFF, RESET,
// disconnect).
func (srv *Server) disableTracking(s *Session) {
	old := s.trk.Swap(nil)
	if old == nil {
		return
	}
	t := &srv.tracking
	t.clients.Add(-1)
	if len(old.prefixes) == 0 {
		return
	}
	t.mu.Lock()
	for _, p := range old.prefixes {
		if bp := t.prefixes[p]; bp != nil {
			delete(bp.clients, s)
			if len(bp.clients) == 0 {
				delete(t.prefixes, p)
			}
		}
	}
	t.refreshActive()
	t.mu.Unlock()
}

func dedupeStrings(in []string) []string {
	sort.Strings(in)
	out := in[:0]
	for i, v := range in {
		if i == 0 || v != in[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// trackCommand runs after each command of a session with tracking on: it
// remembers the keys a read-only command (or a script that called one)
// returned, and clears CLIENT CACHING after the command it applied to.
func (s *Session) trackCommand(tr *tracker, cmd *Command) {
	if s.inScript {
		// A command a script calls: the script's own keys are tracked
		// once it ends, if it read anything.
		if cmd.Flags&FlagReadonly != 0 {
			tr.scriptRead = true
		}
		return
	}
	read := cmd.Flags&FlagReadonly != 0 && cmd.Flags&(FlagRunsScript|FlagPubSub) == 0
	if cmd.Flags&FlagRunsScript != 0 {
		read, tr.scriptRead = tr.scriptRead, false
	}
	if read && !tr.bcast && (tr.optin == tr.caching || !tr.optin && !tr.optout) {
		var buf [8][]byte
		if keys := cmd.KeyArgs(buf[:0], s.Args); len(keys) > 0 {
			s.srv.tracking.remember(s.srv, s.ID, keys)
		}
	}
	if s.multi == nil && !s.inExec && cmd.Name != "client|caching" {
		tr.caching = false
	}
}

// endTracked ends a command of a session with tracking on (callLocked):
// the keys it read are remembered, the BCAST changes it made are sent and
// the invalidations for the session that arrived meanwhile follow its
// reply, kept by CLIENT REPLY OFF as every push is.
func (s *Session) endTracked(tr *tracker, cmd *Command) {
	s.trackCommand(tr, cmd)
	if !s.inExec && !s.inScript {
		s.srv.broadcastTracking()
	}
	if out := tr.leave(); out != nil {
		n := len(s.W.B)
		s.W.Raw(out)
		s.markPush(n)
	}
}

// remember records that client id may cache keys.
func (t *trackingTable) remember(srv *Server, id int64, keys [][]byte) {
	t.mu.Lock()
	if t.keys == nil {
		t.keys = make(map[string]map[int64]struct{})
	}
	for _, k := range keys {
		ids := t.keys[string(k)]
		if ids == nil {
			ids = make(map[int64]struct{}, 1)
			t.keys[string(k)] = ids
		}
		if _, ok := ids[id]; !ok {
			ids[id] = struct{}{}
			t.items++
		}
	}
	t.active.Store(true)
	t.mu.Unlock()
	srv.trimTracking()
}

// trimTracking forgets random keys, invalidating them for their clients,
// while the table holds more than tracking-table-max-keys, with the
// growing effort Redis's trackingLimitUsedSlots makes.
func (srv *Server) trimTracking() {
	t := &srv.tracking
	max := int(t.maxKeys.Load())
	if max <= 0 {
		return
	}
	t.mu.Lock()
	if len(t.keys) <= max {
		t.effort = 0
		t.mu.Unlock()
		return
	}
	effort := 100 * (t.effort + 1)
	var victims []string
	for k := range t.keys { // map order is random enough
		if effort == 0 || len(t.keys)-len(victims) <= max {
			break
		}
		victims = append(victims, k)
		effort--
	}
	if len(t.keys)-len(victims) > max {
		t.effort++
	} else {
		t.effort = 0
	}
	t.mu.Unlock()
	for _, k := range victims {
		srv.invalidateKey([]byte(k), nil, false)
	}
}

// on reports whether some client tracks keys: publish then calls
// invalidateEffect.
func (t *trackingTable) on() bool { return t.active.Load() || t.clients.Load() != 0 }

// invalidateEffect is the effect hook while tracking is on: it
// invalidates the keys an effect changed.
func (t *trackingTable) invalidateEffect(srv *Server, e *Effect) {
	switch e.Kind {
	case EffectDB:
		if len(e.Args) > 0 {
			switch strings.ToLower(string(e.Args[0])) {
			case "flushdb", "flushall":
				srv.invalidateAll(e.Origin)
			}
		}
		return
	case EffectKey, EffectExpired:
	default:
		return
	}
	srv.invalidateKey(e.Key, e.Origin, true)
	if e.Kind != EffectKey || len(e.Args) < 3 {
		return
	}
	if cmd := srv.table.Lookup(e.Args[0]); cmd != nil {
		switch cmd.Relocates {
		case RelocRename, RelocCopy:
			srv.invalidateKey(e.Args[2], e.Origin, true)
		}
	}
}

// invalidateKey tells the clients that may cache key that it changed.
// origin is the session whose command changed it, nil for expiry and for
// keys the table itself drops; bcast is false for the latter, which did not
// change.
func (srv *Server) invalidateKey(key []byte, origin *Session, bcast bool) {
	t := &srv.tracking
	var originID int64
	if origin != nil {
		originID = origin.ID
	}
	t.mu.Lock()
	if bcast {
		for p, bp := range t.prefixes {
			if bytes.HasPrefix(key, []byte(p)) {
				bp.changed[string(key)] = originID
				t.dirty.Store(true)
			}
		}
	}
	ids := t.keys[string(key)]
	if ids != nil {
		delete(t.keys, string(key))
		t.items -= len(ids)
		t.refreshActive()
	}
	t.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	msg := invalidateArray([][]byte{key})
	for id := range ids {
		target := srv.clientByID(id)
		if target == nil {
			continue
		}
		tr := target.trk.Load()
		// A script's session is a copy of its connection's, with its id.
		if tr == nil || tr.bcast || tr.noloop && origin != nil && target.ID == origin.ID {
			continue
		}
		srv.sendInvalidation(target, tr, msg)
	}
}

// invalidateAll sends every tracking client the null invalidation of
// FLUSHDB and FLUSHALL and empties the table, as Redis does.
func (srv *Server) invalidateAll(origin *Session) {
	t := &srv.tracking
	t.mu.Lock()
	t.keys, t.items = nil, 0
	t.refreshActive()
	t.mu.Unlock()
	if t.clients.Load() == 0 {
		return
	}
	for _, s := range srv.sessions() {
		if tr := s.trk.Load(); tr != nil {
			srv.sendInvalidation(s, tr, nil)
		}
	}
}

// broadcastTracking sends the keys changed under each BCAST prefix since
// the last broadcast to the prefix's clients, one message per prefix,
// leaving out for NOLOOP clients the keys they changed themselves.
func (srv *Server) broadcastTracking() {
	t := &srv.tracking
	if !t.dirty.Swap(false) {
		return
	}
	type send struct {
		s   *Session
		tr  *tracker
		msg []byte
	}
	var out []send
	t.mu.Lock()
	// Prefixes in order, as Redis walks its radix tree of them: a command
	// that changed keys under two prefixes sends their messages so.
	var names []string
	for p, bp := range t.prefixes {
		if len(bp.changed) > 0 {
			names = append(names, p)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		bp := t.prefixes[name]
		keys := make([]string, 0, len(bp.changed))
		for k := range bp.changed {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var all []byte
		for s := range bp.clients {
			tr := s.trk.Load()
			if tr == nil {
				continue
			}
			if !tr.noloop {
				if all == nil {
					all = invalidateArray(stringsToBytes(keys, nil, 0))
				}
				out = append(out, send{s, tr, all})
				continue
			}
			if own := stringsToBytes(keys, bp.changed, s.ID); len(own) > 0 {
				out = append(out, send{s, tr, invalidateArray(own)})
			}
		}
		clear(bp.changed)
	}
	t.mu.Unlock()
	for _, x := range out {
		srv.sendInvalidation(x.s, x.tr, x.msg)
	}
}

// stringsToBytes converts keys, leaving out those changed[k] == skip when
// skip is set.
func stringsToBytes(keys []string, changed map[string]int64, skip int64) [][]byte {
	out := make([][]byte, 0, len(keys))
	for _, k := range keys {
		if skip != 0 && changed[k] == skip {
			continue
		}
		out = append(out, []byte(k))
	}
	return out
}

// invalidateArray is the RESP array of keys an invalidation carries.
func invalidateArray(keys [][]byte) []byte {
	w := resp.Writer{Proto: 2}
	w.Array(len(keys))
	for _, k := range keys {
		w.Bulk(k)
	}
	return w.B
}

// sendInvalidation delivers an invalidation to the client tracking s, or
// the client s redirects to: keys is the RESP array of keys, nil for the
// null of a flush. A RESP3 client gets an invalidate push, a RESP2 one it
// redirects to gets a message on __redis__:invalidate while subscribed;
// a RESP2 client without redirection gets nothing, as in Redis. When the
// redirect client is gone, a RESP3 s gets tracking-redir-broken.
func (srv *Server) sendInvalidation(s *Session, tr *tracker, keys []byte) {
	dst := s
	if tr.redirect != 0 {
		dst = srv.clientByID(tr.redirect)
		if dst == nil {
			tr.mu.Lock()
			tr.broken = true
			tr.mu.Unlock()
			if s.proto.Load() == 3 {
				w := resp.Writer{Proto: 3}
				w.Push(2)
				w.BulkString("tracking-redir-broken")
				w.Int(tr.redirect)
				srv.deliverTracking(s, w.B)
			}
			return
		}
	}
	w := resp.Writer{Proto: int(dst.proto.Load())}
	if dst.WS {
		w.Proto = 3 // the bridge's sessions take pushes
	}
	switch {
	case w.Proto == 3:
		w.Push(2)
		w.BulkString("invalidate")
	case tr.redirect != 0 && dst.ps.counts[kindChannel].Load()+dst.ps.counts[kindPattern].Load()+dst.ps.counts[kindShard].Load() > 0:
		w.Push(3)
		w.BulkString("message")
		w.BulkString(trackingChannel)
	default:
		return
	}
	if keys == nil {
		w.Null()
	} else {
		w.Raw(keys)
	}
	srv.deliverTracking(dst, w.B)
}

// deliverTracking hands msg to dst: after the reply of the command dst is
// running now, or at once.
func (srv *Server) deliverTracking(dst *Session, msg []byte) {
	if tr := dst.trk.Load(); tr != nil {
		tr.mu.Lock()
		if tr.depth > 0 {
			tr.pending = append(tr.pending, msg)
			tr.mu.Unlock()
			return
		}
		tr.mu.Unlock()
	}
	if dst.conn != nil {
		dst.conn.Push(msg)
	}
}

// enter and leave bracket a command of the tracking session; leave returns
// the invalidations that arrived meanwhile, once the outermost command
// ends.
func (tr *tracker) enter() {
	tr.mu.Lock()
	tr.depth++
	tr.mu.Unlock()
}

func (tr *tracker) leave() []byte {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.depth--
	if tr.depth > 0 || len(tr.pending) == 0 {
		return nil
	}
	var out []byte
	for _, m := range tr.pending {
		out = append(out, m...)
	}
	tr.pending = tr.pending[:0]
	return out
}

// clientByID returns the connected session with id, or nil.
func (srv *Server) clientByID(id int64) *Session {
	srv.clientsMu.Lock()
	defer srv.clientsMu.Unlock()
	return srv.clients[id]
}

// trackingInfo returns INFO's tracking fields.
func (srv *Server) trackingInfo() (clients int64, keys, items, prefixes int) {
	t := &srv.tracking
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.clients.Load(), len(t.keys), t.items, len(t.prefixes)
}
