package server

import (
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
)

// Hash-only error texts.
const (
	errHashNotInt   = "ERR hash value is not an integer"
	errHashNotFloat = "ERR hash value is not a float"
	errIncrNaN      = "ERR value is NaN or Infinity"
)

// maxRandReply bounds the estimated size of a random-sampling reply with a
// negative count (HRANDFIELD, SRANDMEMBER, ZRANDMEMBER), which may repeat
// elements without end: past it the command is refused rather than
// building a reply the server cannot hold, as Redis would.
const maxRandReply = 1 << 30

func hashCommands() []*Command {
	k1 := keysIn("hash", 1, 1)
	return []*Command{
		k1(&Command{Name: "hset", Arity: -4, Flags: FlagWrite | FlagDenyOOM | FlagFast | FlagSized, KeySpecs: "RW update", Since: "2.0.0", Syntax: "key field value [field value ...]", Summary: "Creates or modifies the value of a field in a hash.", Complexity: "O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.", Categories: "write hash fast", Handler: hsetCmd("hset", false)}),
		k1(&Command{Name: "hmset", Arity: -4, Flags: FlagWrite | FlagDenyOOM | FlagFast | FlagSized, KeySpecs: "RW update", Since: "2.0.0", Syntax: "key field value [field value ...]", Summary: "Sets the values of multiple fields.", Complexity: "O(N) where N is the number of fields being set.", Categories: "write hash fast", Handler: hsetCmd("hmset", true)}),
		k1(&Command{Name: "hsetnx", Arity: 4, Flags: FlagWrite | FlagDenyOOM | FlagFast | FlagSized, KeySpecs: "RW insert", Since: "2.0.0", Syntax: "key field value", Summary: "Sets the value of a field in a hash only when the field doesn't exist.", Complexity: "O(1)", Categories: "write hash fast", Handler: cmdHSetNX}),
		k1(&Command{Name: "hget", Arity: 3, Flags: FlagReadonly | FlagFast, Since: "2.0.0", Syntax: "key field", Summary: "Returns the value of a field in a hash.", Complexity: "O(1)", Categories: "read hash fast", Handler: cmdHGet}),
		k1(&Command{Name: "hmget", Arity: -3, Flags: FlagReadonly | FlagFast, Since: "2.0.0", Syntax: "key field [field ...]", Summary: "Returns the values of all fields in a hash.", Complexity: "O(N) where N is the number of fields being requested.", Categories: "read hash fast", Handler: cmdHMGet}),
		k1(&Command{Name: "hgetall", Arity: 2, Flags: FlagReadonly, Since: "2.0.0", Syntax: "key", Summary: "Returns all fields and values in a hash.", Complexity: "O(N) where N is the size of the hash.", Categories: "read hash slow", Handler: hgetallCmd(true, true)}),
		k1(&Command{Name: "hkeys", Arity: 2, Flags: FlagReadonly, Since: "2.0.0", Syntax: "key", Summary: "Returns all fields in a hash.", Complexity: "O(N) where N is the size of the hash.", Categories: "read hash slow", Handler: hgetallCmd(true, false)}),
		k1(&Command{Name: "hvals", Arity: 2, Flags: FlagReadonly, Since: "2.0.0", Syntax: "key", Summary: "Returns all values in a hash.", Complexity: "O(N) where N is the size of the hash.", Categories: "read hash slow", Handler: hgetallCmd(false, true)}),
		k1(&Command{Name: "hdel", Arity: -3, Flags: FlagWrite | FlagFast, KeySpecs: "RW delete", Since: "2.0.0", Syntax: "key field [field ...]", Summary: "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.", Complexity: "O(N) where N is the number of fields to be removed.", Categories: "write hash fast", Handler: cmdHDel}),
		k1(&Command{Name: "hexists", Arity: 3, Flags: FlagReadonly | FlagFast, KeySpecs: "RO", Since: "2.0.0", Syntax: "key field", Summary: "Determines whether a field exists in a hash.", Complexity: "O(1)", Categories: "read hash fast", Handler: hasCmd(keyspace.TypeHash)}),
		k1(&Command{Name: "hlen", Arity: 2, Flags: FlagReadonly | FlagFast, KeySpecs: "RO", Since: "2.0.0", Syntax: "key", Summary: "Returns the number of fields in a hash.", Complexity: "O(1)", Categories: "read hash fast", Handler: lenCmd(keyspace.TypeHash)}),
		k1(&Command{Name: "hstrlen", Arity: 3, Flags: FlagReadonly | FlagFast, KeySpecs: "RO", Since: "3.2.0", Syntax: "key field", Summary: "Returns the length of the value of a field.", Complexity: "O(1)", Categories: "read hash fast", Handler: cmdHStrlen}),
		k1(&Command{Name: "hincrby", Arity: 4, Flags: FlagWrite | FlagDenyOOM | FlagFast, Since: "2.0.0", Syntax: "key field increment", Summary: "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.", Complexity: "O(1)", Categories: "write hash fast", Handler: cmdHIncrBy}),
		k1(&Command{Name: "hincrbyfloat", Arity: 4, Flags: FlagWrite | FlagDenyOOM | FlagFast, Since: "2.6.0", Syntax: "key field increment", Summary: "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.", Complexity: "O(1)", Categories: "write hash fast", Handler: cmdHIncrByFloat}),
		k1(&Command{Name: "hrandfield", Arity: -2, Flags: FlagReadonly, Since: "6.2.0", Syntax: "key [count [WITHVALUES]]", Summary: "Returns one or more random fields from a hash.", Complexity: "O(N) where N is the number of fields returned", Categories: "read hash slow", Handler: cmdHRandField}),
		k1(&Command{Name: "hscan", Arity: -3, Flags: FlagReadonly, Since: "2.8.0", Syntax: "key cursor [MATCH pattern] [COUNT count]", Summary: "Iterates over fields and values of a hash.", Complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.", Categories: "read hash slow", Handler: cmdHScan}),
	}
}

// applyHashLimits makes hash-max-listpack-entries and
// hash-max-listpack-value take effect. The caller holds cfgMu, and the new
// value is in params.
func applyHashLimits(srv *Server, _ string) {
	def := keyspace.DefaultHashLimits()
	srv.ks.SetHashLimits(keyspace.HashLimits{
		Entries: srv.intParam("hash-max-listpack-entries", def.Entries),
		Value:   srv.intParam("hash-max-listpack-value", def.Value),
	})
}

// lookupHash returns key's hash, nil when the key is absent; wrong reports
// (and replies to) a value of another type.
func (s *Session) lookupHash(key []byte) (h *keyspace.Hash, wrong bool) {
	e, wrong := s.lookupType(key, keyspace.TypeHash)
	return entryHash(e), wrong
}

// entryHash returns the hash e holds, nil for no entry.
func entryHash(e *keyspace.Entry) *keyspace.Hash {
	if e == nil {
		return nil
	}
	return e.Obj.(*keyspace.Hash)
}

// hashToWrite returns key's hash h, or a new empty one stored under key
// when h is nil.
func (s *Session) hashToWrite(key []byte, h *keyspace.Hash) *keyspace.Hash {
	if h == nil {
		h = s.db.AddHash(key)
	}
	return h
}

// removeMembers removes each of args[2:] from key's value with remove,
// deletes key once size reports the value empty, emits name key <the
// members removed>, publishes event of class (then del when key went) and
// replies with their number: HDEL, SREM and ZREM.
func (s *Session) removeMembers(name, key []byte, class uint32, event string, remove func([]byte) bool, size func() int) {
	eff := s.effectArgs(name, key)
	for _, m := range s.Args[2:] {
		if remove(m) {
			eff = append(eff, m)
		}
	}
	removed := len(eff) - 2
	if removed > 0 {
		emptied := size() == 0
		if emptied {
			s.db.Delete(key)
		}
		s.emitBuilt(eff)
		s.notify(class, event, key)
		if emptied {
			s.notify(notifyGeneric, "del", key)
		}
	}
	s.W.Int(int64(removed))
}

// hsetCmd builds HSET (the number of new fields) and HMSET (+OK); name is
// the command for the arity error.
func hsetCmd(name string, hmset bool) Handler {
	return func(s *Session) {
		if len(s.Args)%2 == 1 {
			s.W.Error("ERR wrong number of arguments for '" + name + "' command")
			return
		}
		key := s.Args[1]
		e, wrong := s.lookupWrite(key, keyspace.TypeHash)
		if wrong {
			return
		}
		h := s.hashToWrite(key, entryHash(e))
		created := h.SetPairs(s.Args[2:], s.srv.ks.HashLimits())
		s.accountWrite(key, e)
		s.emitNamed(bHSET, s.Args[1:])
		if hmset {
			s.W.OK()
		} else {
			s.W.Int(int64(created))
		}
		s.notify(notifyHash, "hset", key)
	}
}

func cmdHSetNX(s *Session) {
	key, field, val := s.Args[1], s.Args[2], s.Args[3]
	e, wrong := s.lookupWrite(key, keyspace.TypeHash)
	if wrong {
		return
	}
	h := entryHash(e)
	if h != nil && h.Has(field) {
		s.W.Int(0)
		return
	}
	h = s.hashToWrite(key, h)
	h.SetWith(field, val, s.srv.ks.HashLimits())
	s.accountWrite(key, e)
	s.emit(bHSET, key, field, val)
	s.W.Int(1)
	s.notify(notifyHash, "hset", key)
}

func cmdHGet(s *Session) {
	h, wrong := s.lookupHash(s.Args[1])
	if wrong {
		return
	}
	if h == nil {
		s.W.Null()
		return
	}
	v, ok := h.Get(s.Args[2])
	if !ok {
		s.W.Null()
		return
	}
	s.W.Bulk(v)
}

func cmdHMGet(s *Session) {
	h, wrong := s.lookupHash(s.Args[1])
	if wrong {
		return
	}
	fields := s.Args[2:]
	s.W.Array(len(fields))
	for _, f := range fields {
		if h == nil {
			s.W.Null()
			continue
		}
		if v, ok := h.Get(f); ok {
			s.W.Bulk(v)
		} else {
			s.W.Null()
		}
	}
}

// hgetallCmd builds HGETALL (a map), HKEYS and HVALS (arrays).
func hgetallCmd(fields, values bool) Handler {
	return func(s *Session) {
		h, wrong := s.lookupHash(s.Args[1])
		if wrong {
			return
		}
		n := 0
		if h != nil {
			n = h.Len()
		}
		if fields && values {
			s.W.Map(n)
		} else {
			s.W.Array(n)
		}
		if h == nil {
			return
		}
		h.Range(func(f, v []byte) bool {
			if fields {
				s.W.Bulk(f)
			}
			if values {
				s.W.Bulk(v)
			}
			return true
		})
	}
}

func cmdHDel(s *Session) {
	key := s.Args[1]
	h, wrong := s.lookupHash(key)
	if wrong {
		return
	}
	if h == nil {
		s.W.Int(0)
		return
	}
	s.removeMembers(bHDEL, key, notifyHash, "hdel", h.Delete, h.Len)
}

// hasCmd builds HEXISTS and SISMEMBER: 1 when key's value, of type t,
// has the field or member args[2]; 0 otherwise.
func hasCmd(t keyspace.Type) Handler {
	return func(s *Session) {
		e, wrong := s.lookupType(s.Args[1], t)
		switch {
		case wrong:
		case e != nil && e.Obj.(interface{ Has([]byte) bool }).Has(s.Args[2]):
			s.W.Int(1)
		default:
			s.W.Int(0)
		}
	}
}

// lenCmd builds HLEN, SCARD and ZCARD: the number of elements of key's
// value, of type t; 0 when the key is absent.
func lenCmd(t keyspace.Type) Handler {
	return func(s *Session) {
		e, wrong := s.lookupType(s.Args[1], t)
		switch {
		case wrong:
		case e == nil:
			s.W.Int(0)
		default:
			s.W.Int(int64(e.Obj.(interface{ Len() int }).Len()))
		}
	}
}

func cmdHStrlen(s *Session) {
	h, wrong := s.lookupHash(s.Args[1])
	if wrong {
		return
	}
	if h == nil {
		s.W.Int(0)
		return
	}
	v, _ := h.Get(s.Args[2])
	s.W.Int(int64(len(v)))
}

func cmdHIncrBy(s *Session) {
	by, ok := s.intArg(3)
	if !ok {
		return
	}
	key, field := s.Args[1], s.Args[2]
	h, wrong := s.lookupHash(key)
	if wrong {
		return
	}
	var old []byte
	exists := false
	if h != nil {
		old, exists = h.Get(field)
	}
	cur, ok := s.incrInt(old, exists, by, errHashNotInt)
	if !ok {
		return
	}
	h = s.hashToWrite(key, h)
	var buf [20]byte
	h.SetWith(field, strconv.AppendInt(buf[:0], cur, 10), s.srv.ks.HashLimits())
	// The effect carries the stored copy, so buf stays on the stack.
	v, _ := h.Get(field)
	s.emit(bHSET, key, field, v)
	s.W.Int(cur)
	s.notify(notifyHash, "hincrby", key)
}

func cmdHIncrByFloat(s *Session) {
	if _, plain := parseLDFast(s.Args[3]); !plain {
		// The increment is checked before the key, as Redis does.
		by, ok := parseLongDouble(s.Args[3])
		if !ok {
			s.W.Error(errNotFloat)
			return
		}
		if by.IsInf() {
			s.W.Error(errIncrNaN)
			return
		}
	}
	key, field := s.Args[1], s.Args[2]
	h, wrong := s.lookupHash(key)
	if wrong {
		return
	}
	var cur []byte
	hasCur := false
	if h != nil {
		cur, hasCur = h.Get(field)
	}
	v, fail := s.incrFloat(hasCur, cur, s.Args[3])
	switch fail {
	case incrFloatBadValue:
		s.W.Error(errHashNotFloat)
		return
	case incrFloatBadIncrement: // checked above
		s.W.Error(errNotFloat)
		return
	case incrFloatNotFinite:
		s.W.Error(errNaN)
		return
	}
	h = s.hashToWrite(key, h)
	h.SetWith(field, v, s.srv.ks.HashLimits())
	s.emit(bHSET, key, field, v)
	s.W.Bulk(v)
	s.notify(notifyHash, "hincrbyfloat", key)
}

// parseRandCount parses the count of HRANDFIELD, SRANDMEMBER and
// ZRANDMEMBER: any integer but math.MinInt64, whose negation Redis cannot
// represent.
func (s *Session) parseRandCount(i int) (int64, bool) {
	n, ok := s.intArg(i)
	if !ok {
		return 0, false
	}
	if n == math.MinInt64 {
		s.W.Error(errRandCountRange)
		return 0, false
	}
	return n, true
}

// randCountArgs parses "count [option]" of HRANDFIELD (option
// "withvalues") and ZRANDMEMBER ("withscores"), replying on error. With
// the option, a count whose double overflows is out of range.
func (s *Session) randCountArgs(option string) (count int64, with, ok bool) {
	count, ok = s.parseRandCount(2)
	if !ok {
		return 0, false, false
	}
	if len(s.Args) > 4 || (len(s.Args) == 4 && !resp.EqualFold(s.Args[3], option)) {
		s.W.Error(errSyntax)
		return 0, false, false
	}
	with = len(s.Args) == 4
	if with && (count < -math.MaxInt64/2 || count > math.MaxInt64/2) {
		s.W.Error(errValueRange)
		return 0, false, false
	}
	return count, with, true
}

// writeRandRepeats writes count independent random picks among n elements
// taking about mem bytes, repeats allowed: the reply of HRANDFIELD,
// SRANDMEMBER and ZRANDMEMBER to a negative count (or a count of 1).
// header opens the reply for a number of picks; write writes the element
// at a position. A reply too large to build is refused.
func (s *Session) writeRandRepeats(count uint64, n int, mem int64, header, write func(int)) {
	if randReplyTooBig(count, n, mem) {
		s.W.Error(errValueRange)
		return
	}
	header(int(count))
	for ; count > 0; count-- {
		write(rand.IntN(n))
	}
}

// writeRandom writes the reply of HRANDFIELD or SRANDMEMBER with a count l
// (not 0) over n elements taking about mem bytes: -l picks with repeats
// for a negative l, every element once when l covers them, l distinct
// ones otherwise. header and write are as for writeRandRepeats.
func (s *Session) writeRandom(l int64, n int, mem int64, header, write func(int)) {
	switch {
	case l < 0 || l == 1:
		s.writeRandRepeats(absCount(l), n, mem, header, write)
	case l >= int64(n):
		header(n)
		for i := 0; i < n; i++ {
			write(i)
		}
	default:
		picks := pickDistinct(n, int(l))
		header(len(picks))
		for _, i := range picks {
			write(i)
		}
	}
}

// absCount returns |l| for a count other than math.MinInt64.
func absCount(l int64) uint64 {
	if l < 0 {
		return uint64(-l)
	}
	return uint64(l)
}

// randReplyTooBig reports whether count random picks from a value of n
// elements taking about mem bytes would make a reply too large to build.
func randReplyTooBig(count uint64, n int, mem int64) bool {
	per := uint64(mem)/uint64(n) + 1
	return count > maxRandReply/per
}

// pickDistinct returns count distinct random positions in [0, n), for
// 0 < count < n, in O(count) expected time and space when count is at most
// half of n, and O(n) otherwise.
func pickDistinct(n, count int) []int {
	out := make([]int, 0, count)
	if count <= n/2 {
		seen := make(map[int]struct{}, count)
		for len(out) < count {
			i := rand.IntN(n)
			if _, dup := seen[i]; dup {
				continue
			}
			seen[i] = struct{}{}
			out = append(out, i)
		}
		return out
	}
	// Pick the positions to leave out instead, then keep the others.
	skip := make(map[int]struct{}, n-count)
	for len(skip) < n-count {
		skip[rand.IntN(n)] = struct{}{}
	}
	for i := 0; i < n; i++ {
		if _, ok := skip[i]; !ok {
			out = append(out, i)
		}
	}
	return out
}

func cmdHRandField(s *Session) {
	key := s.Args[1]
	if len(s.Args) == 2 {
		h, wrong := s.lookupHash(key)
		if wrong {
			return
		}
		if h == nil {
			s.W.Null()
			return
		}
		f, _ := h.At(rand.IntN(h.Len()))
		s.W.Bulk(f)
		return
	}
	l, withValues, ok := s.randCountArgs("withvalues")
	if !ok {
		return
	}
	h, wrong := s.lookupHash(key)
	if wrong {
		return
	}
	if h == nil || l == 0 {
		s.W.Array(0)
		return
	}
	// Each pick is the field, or in RESP3 with values a [field, value]
	// pair, or in RESP2 the flat field and value.
	header := func(count int) { s.pairHeader(count, withValues) }
	at := h.At
	if h.Encoding() == "listpack" {
		// Positions in a listpack are found by walking it: walk it once.
		var pairs [][2][]byte
		h.Range(func(f, v []byte) bool { pairs = append(pairs, [2][]byte{f, v}); return true })
		at = func(i int) ([]byte, []byte) { return pairs[i][0], pairs[i][1] }
	}
	write := func(i int) {
		f, v := at(i)
		if withValues && s.W.Proto == 3 {
			s.W.Array(2)
		}
		s.W.Bulk(f)
		if withValues {
			s.W.Bulk(v)
		}
	}
	s.writeRandom(l, h.Len(), h.MemoryUsage(), header, write)
}

// writeScanReply writes a *SCAN reply: the next cursor and the elements.
func (s *Session) writeScanReply(cursor uint64, elems [][]byte) {
	var buf [20]byte
	s.W.Array(2)
	s.W.Bulk(strconv.AppendUint(buf[:0], cursor, 10))
	s.W.Array(len(elems))
	for _, e := range elems {
		s.W.Bulk(e)
	}
}

// scanStart starts HSCAN, SSCAN and ZSCAN key cursor [options]: it parses
// the cursor, looks the key up as a value of type t and parses the options;
// a missing key gets the empty last page. When ok is false it has replied.
func (s *Session) scanStart(t keyspace.Type) (e *keyspace.Entry, cursor uint64, o scanOpts, ok bool) {
	if cursor, ok = s.parseCursor(s.Args[2]); !ok {
		return nil, 0, o, false
	}
	e, wrong := s.lookupType(s.Args[1], t)
	if wrong {
		return nil, 0, o, false
	}
	if e == nil {
		s.writeScanReply(0, nil)
		return nil, 0, o, false
	}
	o, ok = s.parseScan(3, false)
	return e, cursor, o, ok
}

func cmdHScan(s *Session) {
	e, cursor, o, ok := s.scanStart(keyspace.TypeHash)
	if !ok {
		return
	}
	h := e.Obj.(*keyspace.Hash)
	var elems [][]byte
	visit := func(f, v []byte) {
		if o.match == "" || keyspace.Match(o.match, string(f)) {
			elems = append(elems, f, v)
		}
	}
	next := h.Scan(cursor, o.count, visit)
	s.writeScanReply(next, elems)
}
