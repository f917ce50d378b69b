package server

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
	recsync "github.com/recached/recached/sync"
)

// syncCommands are the sync protocol's commands (SPEC section 4). They are
// connection-scoped (never wrapped by DEDUP) and take patterns, not keys,
// so their table entries carry no key spec; scope checks know KWATCH's
// arguments are keys.
func syncCommands() []*Command {
	conn := FlagConnection | FlagNoScript | FlagClientOwned | FlagStateful
	return []*Command{
		{Name: "sync", Arity: -1, Flags: conn | FlagFast | FlagStale, Group: "connection", Since: "7.0.0", Syntax: "[TOKEN token | pattern [pattern ...]]", Summary: "Sets the connection's sync scope: the keys whose writes it receives as pushes; with no argument, Redis's replication SYNC.", Categories: "fast connection", Handler: cmdSync},
		{Name: "qsub", Arity: 2, Flags: conn | FlagReadonly | FlagAllKeys | FlagNoMulti | FlagFiltered, Group: "connection", Since: "7.0.0", Syntax: "pattern", Summary: "Registers a live query and returns the current state of the keys it matches.", Categories: "read slow connection", Handler: cmdQSub},
		{Name: "qunsub", Arity: 2, Flags: conn | FlagFast | FlagStale, Group: "connection", Since: "7.0.0", Syntax: "pattern", Summary: "Removes a live query.", Categories: "fast connection", Handler: cmdQUnsub},
		{Name: "kwatch", Arity: -2, Flags: conn | FlagFast | FlagStale, FirstKey: 1, LastKey: -1, Step: 1, Group: "connection", Since: "7.0.0", Syntax: "key [key ...]", Summary: "Watches keys: their changes arrive as keychange pushes.", Categories: "fast connection", Handler: cmdKWatch},
		{Name: "kunwatch", Arity: -1, Flags: conn | FlagFast | FlagStale, Group: "connection", Since: "7.0.0", Syntax: "[key [key ...]]", Summary: "Stops watching keys, or every key.", Categories: "fast connection", Handler: cmdKUnwatch},
	}
}

// cmdSync is SYNC TOKEN <token> (strict scoping) or SYNC <pattern…> (open
// mode). Either replaces the connection's scope; a refused SYNC keeps it.
// SYNC with no argument is Redis's replication command.
func cmdSync(s *Session) {
	if len(s.Args) == 1 {
		// Redis's SYNC (repl_primary.go): the whole dataset, so never for
		// a scoped or browser connection, and only for a user PSYNC is
		// allowed to.
		if s.scope != nil || s.WS {
			s.W.Error("ERR wrong number of arguments for 'sync' command")
			return
		}
		if p := s.lookup([]byte("psync"), false); p != nil && !s.aclAllows(s.user.Load().state(), p) {
			return
		}
		s.srv.replSync(s, "", 0, false)
		return
	}
	sy := s.srv.syncer
	args := s.Args[1:]
	if resp.EqualFold(args[0], "token") && len(args) > 1 {
		if len(args) != 2 {
			s.W.Error(errSyntax)
			return
		}
		if sy.secret == nil {
			s.W.Error(errNoTokenSecret)
			return
		}
		now := time.UnixMilli(s.srv.ks.Now())
		patterns, _, err := recsync.VerifyToken(sy.secret, string(args[1]), now)
		switch err {
		case nil:
		case recsync.ErrTokenExpired:
			s.W.Error(errTokenExpired)
			return
		default:
			s.W.Error(errInvalidToken)
			return
		}
		scope := recsync.NewScope(patterns)
		sy.router.SetSync(s.syncSub(), s.DBIndex, patterns, scope)
		s.setScope(scope)
		s.W.OK()
		return
	}
	if sy.secret != nil {
		s.W.Error(errOpenSync)
		return
	}
	patterns := make([]string, len(args))
	for i, a := range args {
		patterns[i] = string(a)
	}
	sy.router.SetSync(s.syncSub(), s.DBIndex, patterns, s.scope)
	s.W.OK()
}

// cmdQSub registers a live query and replies ["qstate", pattern, k1, v1, …]
// followed, key by key in the state's order, by the pushes that hydrate a
// non-string key (DEL, then its content) and, for a key with a time to
// live, PEXPIREAT key <unix-ms>. They are written behind the reply in the
// connection's own output, so no push overtakes the qstate. Dispatch holds
// every shard of the database (FlagAllKeys), so the state and the
// registration are one atomic step: every later write reaches the query.
func cmdQSub(s *Session) {
	if s.multi != nil {
		s.W.Error(errQSubInMulti)
		return
	}
	sy := s.srv.syncer
	sub := s.syncSub()
	pattern := string(s.Args[1])
	if !sy.router.QueryRoom(sub, s.DBIndex, pattern) {
		s.W.Error(errTooManyQueries)
		return
	}
	type kv struct {
		key string
		e   *keyspace.Entry
	}
	var found []kv
	for i := 0; i < keyspace.NumShards && len(found) <= recsync.MaxQueryKeys; i++ {
		s.db.Range(i, func(k string, e *keyspace.Entry) bool {
			if keyspace.Match(pattern, k) && (s.scope == nil || s.scope.Match([]byte(k))) {
				found = append(found, kv{k, e})
			}
			return len(found) <= recsync.MaxQueryKeys
		})
	}
	if len(found) > recsync.MaxQueryKeys {
		s.W.Error(errQueryTooBig)
		return
	}
	if _, err := sy.router.AddQuery(sub, s.DBIndex, pattern); err != nil {
		s.W.Error(errTooManyQueries)
		return
	}
	slices.SortFunc(found, func(a, b kv) int { return strings.Compare(a.key, b.key) })
	s.W.Array(2 + 2*len(found))
	s.W.BulkString("qstate")
	s.W.BulkString(pattern)
	for _, f := range found {
		s.W.BulkString(f.key)
		s.W.B = appendValue(s.W.B, f.e)
	}
	var num [20]byte
	for _, f := range found {
		if f.e.Obj == nil && !f.e.HasExpiry() {
			continue
		}
		key := []byte(f.key)
		if f.e.Obj != nil {
			s.W.B = resp.AppendPush(s.W.B, bDEL, key)
			s.W.B = appendContent(s.W.B, key, f.e)
		}
		if at, ok := s.db.Expiry(key); ok {
			s.W.B = resp.AppendPush(s.W.B, bPEXPIREAT, key, strconv.AppendInt(num[:0], at, 10))
		}
	}
}

// cmdQUnsub removes a live query: :1 when it existed, :0 otherwise.
func cmdQUnsub(s *Session) {
	if s.sub == nil || !s.srv.syncer.router.RemoveQuery(s.sub, s.DBIndex, string(s.Args[1])) {
		s.W.Int(0)
		return
	}
	s.W.Int(1)
}

// cmdKWatch watches keys and replies with the number watched.
func cmdKWatch(s *Session) {
	n, err := s.srv.syncer.router.Watch(s.syncSub(), s.DBIndex, s.Args[1:])
	if err != nil {
		s.W.Error(errTooManyWatched)
		return
	}
	s.W.Int(int64(n))
}

// cmdKUnwatch stops watching the keys given, or all, and replies with the
// number still watched.
func cmdKUnwatch(s *Session) {
	if s.sub == nil {
		s.W.Int(0)
		return
	}
	s.W.Int(int64(s.srv.syncer.router.Unwatch(s.sub, s.DBIndex, s.Args[1:])))
}
