package server

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
)

func keyCommands() []*Command {
	k1, kall := keysIn("", 1, 1), keysIn("", 1, -1)
	return []*Command{
		kall(&Command{Name: "del", Arity: -2, Flags: FlagWrite, Group: "generic", KeySpecs: "RM delete", Since: "1.0.0", Syntax: "key [key ...]", Summary: "Deletes one or more keys.", Categories: "keyspace write slow", Handler: cmdDel}),
		kall(&Command{Name: "unlink", Arity: -2, Flags: FlagWrite | FlagFast, Group: "generic", KeySpecs: "RM delete", Since: "4.0.0", Syntax: "key [key ...]", Summary: "Asynchronously deletes one or more keys.", Categories: "keyspace write fast", Handler: cmdUnlink}),
		kall(&Command{Name: "exists", Arity: -2, Flags: FlagReadonly | FlagFast, Group: "generic", KeySpecs: "RO", Since: "1.0.0", Syntax: "key [key ...]", Summary: "Determines whether one or more keys exist.", Categories: "keyspace read fast", Handler: cmdExists}),
		kall(&Command{Name: "touch", Arity: -2, Flags: FlagReadonly | FlagFast, Group: "generic", KeySpecs: "RO", Since: "3.2.1", Syntax: "key [key ...]", Summary: "Returns the number of existing keys out of those specified after updating the time they were last accessed.", Categories: "keyspace read fast", Handler: cmdTouch}),
		k1(&Command{Name: "type", Arity: 2, Flags: FlagReadonly | FlagFast, Group: "generic", KeySpecs: "RO", Since: "1.0.0", Syntax: "key", Summary: "Determines the type of value stored at a key.", Categories: "keyspace read fast", Handler: cmdType}),
		k1(&Command{Name: "expire", Arity: -3, Flags: FlagWrite | FlagFast, Group: "generic", KeySpecs: "RW update", Since: "1.0.0", Syntax: "key seconds [NX | XX | GT | LT]", Summary: "Sets the expiration time of a key in seconds.", Categories: "keyspace write fast", Handler: expireCmd(1000, false)}),
		k1(&Command{Name: "pexpire", Arity: -3, Flags: FlagWrite | FlagFast, Group: "generic", KeySpecs: "RW update", Since: "2.6.0", Syntax: "key milliseconds [NX | XX | GT | LT]", Summary: "Sets the expiration time of a key in milliseconds.", Categories: "keyspace write fast", Handler: expireCmd(1, false)}),
		k1(&Command{Name: "expireat", Arity: -3, Flags: FlagWrite | FlagFast, Group: "generic", KeySpecs: "RW update", Since: "1.2.0", Syntax: "key unix-time-seconds [NX | XX | GT | LT]", Summary: "Sets the expiration time of a key to a Unix timestamp.", Categories: "keyspace write fast", Handler: expireCmd(1000, true)}),
		k1(&Command{Name: "pexpireat", Arity: -3, Flags: FlagWrite | FlagFast, Group: "generic", KeySpecs: "RW update", Since: "2.6.0", Syntax: "key unix-time-milliseconds [NX | XX | GT | LT]", Summary: "Sets the expiration time of a key to a Unix milliseconds timestamp.", Categories: "keyspace write fast", Handler: expireCmd(1, true)}),
		k1(&Command{Name: "ttl", Arity: 2, Flags: FlagReadonly | FlagFast, Group: "generic", Since: "1.0.0", Syntax: "key", Summary: "Returns the expiration time in seconds of a key.", Categories: "keyspace read fast", Handler: ttlCmd(false, false)}),
		k1(&Command{Name: "pttl", Arity: 2, Flags: FlagReadonly | FlagFast, Group: "generic", Since: "2.6.0", Syntax: "key", Summary: "Returns the expiration time in milliseconds of a key.", Categories: "keyspace read fast", Handler: ttlCmd(true, false)}),
		k1(&Command{Name: "expiretime", Arity: 2, Flags: FlagReadonly | FlagFast, Group: "generic", Since: "7.0.0", Syntax: "key", Summary: "Returns the expiration time of a key as a Unix timestamp.", Categories: "keyspace read fast", Handler: ttlCmd(false, true)}),
		k1(&Command{Name: "pexpiretime", Arity: 2, Flags: FlagReadonly | FlagFast, Group: "generic", Since: "7.0.0", Syntax: "key", Summary: "Returns the expiration time of a key as a Unix milliseconds timestamp.", Categories: "keyspace read fast", Handler: ttlCmd(true, true)}),
		k1(&Command{Name: "persist", Arity: 2, Flags: FlagWrite | FlagFast, Group: "generic", KeySpecs: "RW update", Since: "2.2.0", Syntax: "key", Summary: "Removes the expiration time of a key.", Categories: "keyspace write fast", Handler: cmdPersist}),
		{Name: "keys", Arity: 2, Flags: FlagReadonly | FlagAllKeys | FlagDangerous, Group: "generic", Since: "1.0.0", Syntax: "pattern", Summary: "Returns all key names that match a pattern.", Categories: "keyspace read slow dangerous", Handler: cmdKeys},
		{Name: "scan", Arity: -2, Flags: FlagReadonly | FlagAllKeys, Group: "generic", Since: "2.8.0", Syntax: "cursor [MATCH pattern] [COUNT count] [TYPE type]", Summary: "Iterates over the key names in the database.", Categories: "keyspace read slow", Handler: cmdScan},
		{Name: "randomkey", Arity: 1, Flags: FlagReadonly | FlagAllKeys, Group: "generic", Since: "1.0.0", Summary: "Returns a random key name from the database.", Categories: "keyspace read slow", Handler: cmdRandomKey},
		{Name: "rename", Arity: 3, Flags: FlagWrite, FirstKey: 1, LastKey: 2, Step: 1, Relocates: RelocRename, Group: "generic", KeySpecs: "RW access delete; OW update", Since: "1.0.0", Syntax: "key newkey", Summary: "Renames a key and overwrites the destination.", Categories: "keyspace write slow", Handler: renameCmd(false)},
		{Name: "renamenx", Arity: 3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 2, Step: 1, Group: "generic", KeySpecs: "RW access delete; OW insert", Since: "1.0.0", Syntax: "key newkey", Summary: "Renames a key only when the target key name doesn't exist.", Categories: "keyspace write fast", Handler: renameCmd(true)},
		{Name: "copy", Arity: -3, Flags: FlagWrite | FlagDenyOOM | FlagAllDBs, FirstKey: 1, LastKey: 2, Step: 1, DBArgs: dbOption("db", 3), Relocates: RelocCopy, Group: "generic", KeySpecs: "RO access; OW update", Since: "6.2.0", Syntax: "source destination [DB destination-db] [REPLACE]", Summary: "Copies the value of a key to a new key.", Categories: "keyspace write slow", Handler: cmdCopy},
		k1(&Command{Name: "move", Arity: 3, Flags: FlagWrite | FlagFast | FlagAllDBs, DBArgs: dbsAt(2, 2), Relocates: RelocMove, Group: "generic", Since: "1.0.0", Syntax: "key db", Summary: "Moves a key to another database.", Categories: "keyspace write fast", Handler: cmdMove}),
	}
}

// cmdDel is DEL, which frees lazily under lazyfree-lazy-user-del.
func cmdDel(s *Session) { deleteKeys(s, s.srv.mem.lazyUserDel.Load()) }

// cmdUnlink is UNLINK: DEL that always frees lazily.
func cmdUnlink(s *Session) { deleteKeys(s, true) }

// deleteKeys deletes the command's keys and answers how many there were;
// lazy counts the values Redis would free in the background.
func deleteKeys(s *Session, lazy bool) {
	n := 0
	for _, k := range s.Args[1:] {
		if lazy {
			s.noteLazyDel(k)
		}
		if s.db.Delete(k) {
			n++
			s.emit(bDEL, k)
			s.notify(notifyGeneric, "del", k)
		}
	}
	s.W.Int(int64(n))
}

func cmdExists(s *Session) {
	n := 0
	for _, k := range s.Args[1:] {
		if s.db.LookupNoTouch(k) != nil {
			n++
		}
	}
	s.W.Int(int64(n))
}

// cmdTouch is TOUCH: EXISTS that counts as a use of every key found.
func cmdTouch(s *Session) {
	n := 0
	for _, k := range s.Args[1:] {
		if s.db.Lookup(k) != nil {
			n++
		}
	}
	s.W.Int(int64(n))
}

func cmdType(s *Session) {
	e := s.db.LookupNoTouch(s.Args[1])
	if e == nil {
		s.W.Simple("none")
		return
	}
	s.W.Simple(e.Type().String())
}

// expireCmd builds EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT: unit is the
// milliseconds per argument unit, abs whether the argument is a timestamp.
func expireCmd(unit int64, abs bool) Handler {
	return func(s *Session) {
		var nx, xx, gt, lt bool
		for _, o := range s.Args[3:] {
			switch {
			case resp.EqualFold(o, "nx"):
				nx = true
			case resp.EqualFold(o, "xx"):
				xx = true
			case resp.EqualFold(o, "gt"):
				gt = true
			case resp.EqualFold(o, "lt"):
				lt = true
			default:
				s.W.Error(fmt.Sprintf("ERR Unsupported option %s", o))
				return
			}
		}
		if nx && (xx || gt || lt) {
			s.W.Error("ERR NX and XX, GT or LT options at the same time are not compatible")
			return
		}
		if gt && lt {
			s.W.Error("ERR GT and LT options at the same time are not compatible")
			return
		}
		when, ok := s.intArg(2)
		if !ok {
			return
		}
		name := s.lastCmd.Load().Name
		if when > math.MaxInt64/unit || when < math.MinInt64/unit {
			s.W.Error(fmt.Sprintf(errInvalidExpire, name))
			return
		}
		when *= unit
		now := s.srv.ks.Now()
		if !abs {
			if keyspace.AddOverflows(now, when) {
				s.W.Error(fmt.Sprintf(errInvalidExpire, name))
				return
			}
			when += now
		}
		key := s.Args[1]
		if s.db.Lookup(key) == nil {
			s.W.Int(0)
			return
		}
		cur, has := s.db.Expiry(key)
		switch {
		case nx && has, xx && !has:
			s.W.Int(0)
			return
		case gt && (!has || when <= cur):
			s.W.Int(0)
			return
		case lt && has && when >= cur:
			s.W.Int(0)
			return
		}
		if when <= now {
			s.db.Delete(key)
			s.emit(bDEL, key)
			s.notify(notifyGeneric, "del", key)
			s.W.Int(1)
			return
		}
		s.db.SetExpiry(key, when)
		s.emit(bPEXPIREAT, key, s.itoa(when))
		s.notify(notifyGeneric, "expire", key)
		s.W.Int(1)
	}
}

// ttlCmd builds TTL, PTTL, EXPIRETIME and PEXPIRETIME.
func ttlCmd(ms, abs bool) Handler {
	return func(s *Session) {
		if s.db.LookupNoTouch(s.Args[1]) == nil {
			s.W.Int(-2)
			return
		}
		at, has := s.db.Expiry(s.Args[1])
		if !has {
			s.W.Int(-1)
			return
		}
		v := at
		if !abs {
			v = at - s.srv.ks.Now()
			if v < 0 {
				v = 0
			}
			if !ms {
				v = (v + 500) / 1000
			}
		} else if !ms {
			v = (at + 500) / 1000
		}
		s.W.Int(v)
	}
}

func cmdPersist(s *Session) {
	if s.db.Lookup(s.Args[1]) == nil || !s.db.Persist(s.Args[1]) {
		s.W.Int(0)
		return
	}
	s.emit(bPERSIST, s.Args[1])
	s.notify(notifyGeneric, "persist", s.Args[1])
	s.W.Int(1)
}

func cmdKeys(s *Session) {
	pat := string(s.Args[1])
	var keys []string
	for i := 0; i < keyspace.NumShards; i++ {
		s.db.Range(i, func(k string, _ *keyspace.Entry) bool {
			if pat == "*" || keyspace.Match(pat, k) {
				keys = append(keys, k)
			}
			return true
		})
	}
	s.W.Array(len(keys))
	for _, k := range keys {
		s.W.BulkString(k)
	}
}

// scanOpts are SCAN's MATCH, COUNT and TYPE options, shared by HSCAN, SSCAN
// and ZSCAN.
type scanOpts struct {
	match string
	count int
	typ   string
}

// parseScan reads the options starting at args[i], replying on error.
func (s *Session) parseScan(i int, allowType bool) (scanOpts, bool) {
	o := scanOpts{count: 10}
	for ; i < len(s.Args); i += 2 {
		if i+1 >= len(s.Args) {
			s.W.Error(errSyntax)
			return o, false
		}
		switch {
		case resp.EqualFold(s.Args[i], "match"):
			o.match = string(s.Args[i+1])
		case resp.EqualFold(s.Args[i], "count"):
			n, ok := s.intArg(i + 1)
			if !ok {
				return o, false
			}
			if n < 1 {
				s.W.Error(errSyntax)
				return o, false
			}
			o.count = int(min(n, 1<<30))
		case allowType && resp.EqualFold(s.Args[i], "type"):
			o.typ = string(s.Args[i+1])
		default:
			s.W.Error(errSyntax)
			return o, false
		}
	}
	return o, true
}

// parseCursor reads a SCAN cursor as Redis does with strtoul: an optional
// sign (a negative cursor wraps around), decimal digits, no leading space,
// nothing after; the empty string is cursor 0. It replies on error.
func (s *Session) parseCursor(b []byte) (uint64, bool) {
	if len(b) > 0 && isSpaceByte(b[0]) {
		s.W.Error("ERR invalid cursor")
		return 0, false
	}
	neg := false
	d := b
	if len(d) > 0 && (d[0] == '+' || d[0] == '-') {
		neg = d[0] == '-'
		d = d[1:]
	}
	if len(d) == 0 && len(b) > 0 {
		// "+" or "-" alone: strtoul reads nothing and stops at the sign.
		s.W.Error("ERR invalid cursor")
		return 0, false
	}
	var c uint64
	for _, ch := range d {
		if ch < '0' || ch > '9' || c > (math.MaxUint64-uint64(ch-'0'))/10 {
			s.W.Error("ERR invalid cursor")
			return 0, false
		}
		c = c*10 + uint64(ch-'0')
	}
	if neg {
		c = -c
	}
	return c, true
}

// cmdScan walks the database shard by shard: the cursor is the next shard
// to visit, so every key present for the whole iteration is returned once.
func cmdScan(s *Session) {
	cur, ok := s.parseCursor(s.Args[1])
	if !ok {
		return
	}
	o, ok := s.parseScan(2, true)
	if !ok {
		return
	}
	var keys []string
	i := keyspace.NumShards // a cursor no SCAN returned ends the walk
	if cur < keyspace.NumShards {
		i = int(cur)
	}
	for ; i < keyspace.NumShards && len(keys) < o.count; i++ {
		s.db.Range(i, func(k string, e *keyspace.Entry) bool {
			if o.match != "" && !keyspace.Match(o.match, k) {
				return true
			}
			if o.typ != "" && !resp.EqualFold([]byte(o.typ), e.Type().String()) {
				return true
			}
			keys = append(keys, k)
			return true
		})
	}
	if i >= keyspace.NumShards {
		i = 0
	}
	s.W.Array(2)
	s.W.BulkString(strconv.Itoa(i))
	s.W.Array(len(keys))
	for _, k := range keys {
		s.W.BulkString(k)
	}
}

func cmdRandomKey(s *Session) {
	start := rand.IntN(keyspace.NumShards)
	for j := 0; j < keyspace.NumShards; j++ {
		i := (start + j) % keyspace.NumShards
		n := s.db.Len(i)
		if n == 0 {
			continue
		}
		skip := rand.IntN(n)
		var pick string
		found := false
		s.db.Range(i, func(k string, _ *keyspace.Entry) bool {
			pick, found = k, true
			skip--
			return skip >= 0
		})
		if found {
			s.W.BulkString(pick)
			return
		}
	}
	s.W.Null()
}

func renameCmd(nx bool) Handler {
	return func(s *Session) {
		src, dst := s.Args[1], s.Args[2]
		e := s.db.Lookup(src)
		if e == nil {
			s.W.Error(errNoSuchKey)
			return
		}
		if string(src) == string(dst) {
			if nx {
				s.W.Int(0)
			} else {
				s.W.OK()
			}
			return
		}
		if nx && s.db.Lookup(dst) != nil {
			s.W.Int(0)
			return
		}
		at, has := s.db.Expiry(src)
		s.db.Delete(src)
		s.db.Delete(dst)
		s.db.Set(dst, e)
		if has {
			s.db.SetExpiry(dst, at)
		}
		s.emit(bRENAME, src, dst)
		s.notifyNew(s.DBIndex, dst)
		s.notify(notifyGeneric, "rename_from", src)
		s.notify(notifyGeneric, "rename_to", dst)
		if nx {
			s.W.Int(1)
		} else {
			s.W.OK()
		}
	}
}

// copier is implemented by object types that can be deep-copied (COPY).
type copier interface {
	Copy() keyspace.Object
}

func copyEntry(e *keyspace.Entry) *keyspace.Entry {
	if e.Obj == nil {
		return &keyspace.Entry{Str: append([]byte(nil), e.Str...)}
	}
	if c, ok := e.Obj.(copier); ok {
		return &keyspace.Entry{Obj: c.Copy()}
	}
	return nil
}

func cmdCopy(s *Session) {
	src, dst := s.Args[1], s.Args[2]
	dstDB := s.db
	replace := false
	for i := 3; i < len(s.Args); i++ {
		switch {
		case resp.EqualFold(s.Args[i], "replace"):
			replace = true
		case resp.EqualFold(s.Args[i], "db") && i+1 < len(s.Args):
			n, ok := s.dbArg(i + 1)
			if !ok {
				return
			}
			dstDB = s.srv.ks.DBs[n]
			i++
		default:
			s.W.Error(errSyntax)
			return
		}
	}
	if dstDB == s.db && string(src) == string(dst) {
		s.W.Error(errSameObject)
		return
	}
	e := s.db.Lookup(src)
	if e == nil {
		s.W.Int(0)
		return
	}
	if dstDB.Lookup(dst) != nil {
		if !replace {
			s.W.Int(0)
			return
		}
		dstDB.Delete(dst)
	}
	c := copyEntry(e)
	if c == nil {
		s.W.Error("ERR this type cannot be copied")
		return
	}
	c.Atime = e.Atime
	dstDB.Set(dst, c)
	if at, has := s.db.Expiry(src); has {
		dstDB.SetExpiry(dst, at)
	}
	s.emit(bCOPY, src, dst, bDB, s.itoa(int64(dstDB.Index)), bREPLACE)
	s.notifyNew(dstDB.Index, dst)
	s.notifyDB(notifyGeneric, "copy_to", dstDB.Index, dst)
	s.W.Int(1)
}

// errIntRange32 is Redis's reply to an integer argument outside a C int.
const errIntRange32 = "ERR value is out of range, value must between -2147483648 and 2147483647"

// parseDBIndex reads b as a database index among ndb databases, as Redis
// reads the index of SELECT, MOVE, COPY ... DB and SWAPDB (string2ll, then a
// C int, then the range of databases). It returns the index, or the error to
// reply. It is the only parser of database indexes: EXEC plans its locks
// with it, so a queued SELECT moves the lock plan exactly when it will move
// the session.
func parseDBIndex(b []byte, ndb int) (int, string) {
	n, ok := resp.ParseInt(b)
	switch {
	case !ok:
		return 0, errNotInt
	case n < math.MinInt32 || n > math.MaxInt32:
		return 0, errIntRange32
	case n < 0 || n >= int64(ndb):
		return 0, errDBIndex
	}
	return int(n), ""
}

// dbArg parses args[i] as a database index of SELECT, MOVE or COPY,
// replying on error.
func (s *Session) dbArg(i int) (int, bool) {
	n, e := parseDBIndex(s.Args[i], len(s.srv.ks.DBs))
	if e != "" {
		s.W.Error(e)
		return 0, false
	}
	return n, true
}

func cmdMove(s *Session) {
	n, ok := s.dbArg(2)
	if !ok {
		return
	}
	if n == s.DBIndex {
		s.W.Error(errSameObject)
		return
	}
	key := s.Args[1]
	e := s.db.Lookup(key)
	if e == nil {
		s.W.Int(0)
		return
	}
	dst := s.srv.ks.DBs[n]
	if dst.Lookup(key) != nil {
		s.W.Int(0)
		return
	}
	at, has := s.db.Expiry(key)
	s.db.Delete(key)
	dst.Set(key, e)
	if has {
		dst.SetExpiry(key, at)
	}
	s.emit(bMOVE, key, s.Args[2])
	s.notifyNew(n, key)
	s.notify(notifyGeneric, "move_from", key)
	s.notifyDB(notifyGeneric, "move_to", n, key)
	s.W.Int(1)
}
