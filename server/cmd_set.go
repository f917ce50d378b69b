package server

import (
	"math"
	"math/rand/v2"
	"sort"
	"sync/atomic"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
)

func setCommands() []*Command {
	k1, kall := keysIn("set", 1, 1), keysIn("set", 1, -1)
	return []*Command{
		k1(&Command{Name: "sadd", Arity: -3, Flags: FlagWrite | FlagDenyOOM | FlagFast | FlagSized, KeySpecs: "RW insert", Since: "1.0.0", Syntax: "key member [member ...]", Summary: "Adds one or more members to a set. Creates the key if it doesn't exist.", Complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.", Categories: "write set fast", Handler: cmdSAdd}),
		k1(&Command{Name: "srem", Arity: -3, Flags: FlagWrite | FlagFast, KeySpecs: "RW delete", Since: "1.0.0", Syntax: "key member [member ...]", Summary: "Removes one or more members from a set. Deletes the set if the last member was removed.", Complexity: "O(N) where N is the number of members to be removed.", Categories: "write set fast", Handler: cmdSRem}),
		k1(&Command{Name: "smembers", Arity: 2, Flags: FlagReadonly, Since: "1.0.0", Syntax: "key", Summary: "Returns all members of a set.", Complexity: "O(N) where N is the set cardinality.", Categories: "read set slow", Handler: cmdSMembers}),
		k1(&Command{Name: "sismember", Arity: 3, Flags: FlagReadonly | FlagFast, KeySpecs: "RO", Since: "1.0.0", Syntax: "key member", Summary: "Determines whether a member belongs to a set.", Complexity: "O(1)", Categories: "read set fast", Handler: hasCmd(keyspace.TypeSet)}),
		k1(&Command{Name: "smismember", Arity: -3, Flags: FlagReadonly | FlagFast, Since: "6.2.0", Syntax: "key member [member ...]", Summary: "Determines whether multiple members belong to a set.", Complexity: "O(N) where N is the number of elements being checked for membership", Categories: "read set fast", Handler: cmdSMIsMember}),
		k1(&Command{Name: "scard", Arity: 2, Flags: FlagReadonly | FlagFast, KeySpecs: "RO", Since: "1.0.0", Syntax: "key", Summary: "Returns the number of members in a set.", Complexity: "O(1)", Categories: "read set fast", Handler: lenCmd(keyspace.TypeSet)}),
		k1(&Command{Name: "spop", Arity: -2, Flags: FlagWrite | FlagFast, KeySpecs: "RW access delete", Since: "1.0.0", Syntax: "key [count]", Summary: "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.", Complexity: "Without the count argument O(1), otherwise O(N) where N is the value of the passed count.", Categories: "write set fast", Handler: cmdSPop}),
		k1(&Command{Name: "srandmember", Arity: -2, Flags: FlagReadonly, Since: "1.0.0", Syntax: "key [count]", Summary: "Get one or multiple random members from a set", Complexity: "Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.", Categories: "read set slow", Handler: cmdSRandMember}),
		{Name: "smove", Arity: 4, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 2, Step: 1, Group: "set", KeySpecs: "RW access delete; RW insert", Since: "1.0.0", Syntax: "source destination member", Summary: "Moves a member from one set to another.", Complexity: "O(1)", Categories: "write set fast", Handler: cmdSMove},
		kall(&Command{Name: "sunion", Arity: -2, Flags: FlagReadonly, Since: "1.0.0", Syntax: "key [key ...]", Summary: "Returns the union of multiple sets.", Complexity: "O(N) where N is the total number of elements in all given sets.", Categories: "read set slow", Handler: setOpCmd(setUnion, false)}),
		kall(&Command{Name: "sinter", Arity: -2, Flags: FlagReadonly, Since: "1.0.0", Syntax: "key [key ...]", Summary: "Returns the intersect of multiple sets.", Complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.", Categories: "read set slow", Handler: setOpCmd(setInter, false)}),
		kall(&Command{Name: "sdiff", Arity: -2, Flags: FlagReadonly, Since: "1.0.0", Syntax: "key [key ...]", Summary: "Returns the difference of multiple sets.", Complexity: "O(N) where N is the total number of elements in all given sets.", Categories: "read set slow", Handler: setOpCmd(setDiff, false)}),
		kall(&Command{Name: "sunionstore", Arity: -3, Flags: FlagWrite | FlagDenyOOM, KeySpecs: "OW update; RO access", Since: "1.0.0", Syntax: "destination key [key ...]", Summary: "Stores the union of multiple sets in a key.", Complexity: "O(N) where N is the total number of elements in all given sets.", Categories: "write set slow", Handler: setOpCmd(setUnion, true)}),
		kall(&Command{Name: "sinterstore", Arity: -3, Flags: FlagWrite | FlagDenyOOM, KeySpecs: "RW update; RO access", Since: "1.0.0", Syntax: "destination key [key ...]", Summary: "Stores the intersect of multiple sets in a key.", Complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.", Categories: "write set slow", Handler: setOpCmd(setInter, true)}),
		kall(&Command{Name: "sdiffstore", Arity: -3, Flags: FlagWrite | FlagDenyOOM, KeySpecs: "OW update; RO access", Since: "1.0.0", Syntax: "destination key [key ...]", Summary: "Stores the difference of multiple sets in a key.", Complexity: "O(N) where N is the total number of elements in all given sets.", Categories: "write set slow", Handler: setOpCmd(setDiff, true)}),
		{Name: "sintercard", Arity: -3, Flags: FlagReadonly | FlagMovableKeys, Keys: sintercardKeys, Group: "set", Since: "7.0.0", Syntax: "numkeys key [key ...] [LIMIT limit]", Summary: "Returns the number of members of the intersect of multiple sets.", Complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.", Categories: "read set slow", Handler: cmdSInterCard},
		k1(&Command{Name: "sscan", Arity: -3, Flags: FlagReadonly, Since: "2.8.0", Syntax: "key cursor [MATCH pattern] [COUNT count]", Summary: "Iterates over members of a set.", Complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.", Categories: "read set slow", Handler: cmdSScan}),
	}
}

// applySetMaxIntset makes set-max-intset-entries act on the sets that
// commands write.
var applySetMaxIntset = applyInt(func(l *liveConfig) *atomic.Int64 { return &l.setMaxIntset })

// maxIntset returns set-max-intset-entries: the most members a set of
// integers holds in the intset encoding.
func (s *Session) maxIntset() int {
	return int(min(s.srv.live.setMaxIntset.Load(), math.MaxInt32))
}

// lookupSet returns key's set, nil when the key is absent; wrong reports
// (and replies to) a value of another type.
func (s *Session) lookupSet(key []byte) (set *keyspace.Set, wrong bool) {
	e, wrong := s.lookupType(key, keyspace.TypeSet)
	if e == nil {
		return nil, wrong
	}
	return e.Obj.(*keyspace.Set), false
}

func cmdSAdd(s *Session) {
	key := s.Args[1]
	e, wrong := s.lookupWrite(key, keyspace.TypeSet)
	if wrong {
		return
	}
	limit := s.maxIntset()
	var set *keyspace.Set
	if e != nil {
		set = e.Obj.(*keyspace.Set)
	} else {
		set = s.db.AddSet(key, s.Args[2:], limit)
	}
	eff := s.effectArgs(bSADD, key)
	set.Grow(s.Args[2:], limit)
	for _, m := range s.Args[2:] {
		if set.Add(m, limit) {
			eff = append(eff, m)
		}
	}
	added := len(eff) - 2
	if added > 0 {
		s.accountWrite(key, e)
		s.emitBuilt(eff)
		s.notify(notifySet, "sadd", key)
	}
	s.W.Int(int64(added))
}

func cmdSRem(s *Session) {
	key := s.Args[1]
	set, wrong := s.lookupSet(key)
	if wrong {
		return
	}
	if set == nil {
		s.W.Int(0)
		return
	}
	s.removeMembers(bSREM, key, notifySet, "srem", set.Remove, set.Len)
}

// writeSet replies with every member of set (nil: empty) as a set.
func (s *Session) writeSet(set *keyspace.Set) {
	if set == nil {
		s.W.Set(0)
		return
	}
	n := set.Len()
	s.W.Set(n)
	var buf [24]byte
	for i := 0; i < n; i++ {
		s.W.Bulk(set.AppendAt(buf[:0], i))
	}
}

func cmdSMembers(s *Session) {
	set, wrong := s.lookupSet(s.Args[1])
	if wrong {
		return
	}
	s.writeSet(set)
}

func cmdSMIsMember(s *Session) {
	set, wrong := s.lookupSet(s.Args[1])
	if wrong {
		return
	}
	members := s.Args[2:]
	s.W.Array(len(members))
	for _, m := range members {
		if set != nil && set.Has(m) {
			s.W.Int(1)
		} else {
			s.W.Int(0)
		}
	}
}

func cmdSPop(s *Session) {
	if len(s.Args) > 3 {
		s.W.Error(errSyntax)
		return
	}
	key := s.Args[1]
	if len(s.Args) == 2 {
		set, wrong := s.lookupSet(key)
		if wrong {
			return
		}
		if set == nil {
			s.W.Null()
			return
		}
		m := set.RemoveAt(rand.IntN(set.Len()))
		if set.Len() == 0 {
			s.db.Delete(key)
		}
		bm := []byte(m)
		s.emit(bSREM, key, bm)
		s.notify(notifySet, "spop", key)
		s.W.Bulk(bm)
		if set.Len() == 0 {
			s.notify(notifyGeneric, "del", key)
		}
		return
	}
	count, ok := s.popCountArg()
	if !ok {
		return
	}
	set, wrong := s.lookupSet(key)
	if wrong {
		return
	}
	if set == nil || count == 0 {
		s.W.Set(0)
		return
	}
	n := int64(set.Len())
	if count > n {
		count = n
	}
	eff := make([][]byte, 2, 2+count)
	eff[0], eff[1] = bSREM, key
	s.W.Set(int(count))
	for i := int64(0); i < count; i++ {
		m := set.RemoveAt(rand.IntN(set.Len()))
		s.W.BulkString(m)
		eff = append(eff, []byte(m))
	}
	if set.Len() == 0 {
		s.db.Delete(key)
	} else if (n-count)*spopMoveStrategyMul <= count {
		// Redis pops most of a set by building a new one from the members
		// it leaves, which is an intset again if they allow it.
		set.Repack(s.maxIntset())
	}
	s.emit(eff...)
	s.notifySPop(key, set.Len() == 0)
}

// spopMoveStrategyMul is Redis's SPOP_MOVE_STRATEGY_MUL: SPOP with a count
// rebuilds the set from the members it leaves when they are at most a
// fifth of the count.
const spopMoveStrategyMul = 5

// notifySPop publishes SPOP's events: spop, then del when it emptied key.
func (s *Session) notifySPop(key []byte, emptied bool) {
	s.notify(notifySet, "spop", key)
	if emptied {
		s.notify(notifyGeneric, "del", key)
	}
}

func cmdSRandMember(s *Session) {
	if len(s.Args) > 3 {
		s.W.Error(errSyntax)
		return
	}
	key := s.Args[1]
	if len(s.Args) == 2 {
		set, wrong := s.lookupSet(key)
		if wrong {
			return
		}
		if set == nil {
			s.W.Null()
			return
		}
		s.W.BulkString(set.At(rand.IntN(set.Len())))
		return
	}
	l, ok := s.parseRandCount(2)
	if !ok {
		return
	}
	set, wrong := s.lookupSet(key)
	if wrong {
		return
	}
	if set == nil || l == 0 {
		s.W.Array(0)
		return
	}
	header := func(count int) { s.W.Array(count) }
	var buf [24]byte
	write := func(i int) { s.W.Bulk(set.AppendAt(buf[:0], i)) }
	s.writeRandom(l, set.Len(), set.MemoryUsage(), header, write)
}

func cmdSMove(s *Session) {
	srcKey, dstKey, m := s.Args[1], s.Args[2], s.Args[3]
	srcEntry := s.db.Lookup(srcKey)
	dstEntry := s.db.Lookup(dstKey)
	if srcEntry == nil {
		s.W.Int(0)
		return
	}
	if srcEntry.Type() != keyspace.TypeSet || (dstEntry != nil && dstEntry.Type() != keyspace.TypeSet) {
		s.W.Error(errWrongType)
		return
	}
	src := srcEntry.Obj.(*keyspace.Set)
	if srcEntry == dstEntry {
		if src.Has(m) {
			s.W.Int(1)
		} else {
			s.W.Int(0)
		}
		return
	}
	if !src.Remove(m) {
		s.W.Int(0)
		return
	}
	if src.Len() == 0 {
		s.db.Delete(srcKey)
	}
	s.emit(bSREM, srcKey, m)
	s.notify(notifySet, "srem", srcKey)
	if src.Len() == 0 {
		s.notify(notifyGeneric, "del", srcKey)
	}
	var dst *keyspace.Set
	if dstEntry == nil {
		dst = s.db.AddSet(dstKey, nil, 0)
	} else {
		dst = dstEntry.Obj.(*keyspace.Set)
	}
	// A member dst holds already leaves dst unchanged: no effect, so that
	// its watchers' transactions still run, as in Redis.
	if dst.Add(m, s.maxIntset()) {
		s.emit(bSADD, dstKey, m)
		s.notify(notifySet, "sadd", dstKey)
	}
	s.W.Int(1)
}

// setOp is a set algebra operation.
type setOp int

const (
	setUnion setOp = iota
	setInter
	setDiff
)

// setOperands returns the sets named by keys, nil for an absent key. It
// replies WRONGTYPE and returns false if any key holds another type, as
// Redis 7.0 checks every key before computing.
func (s *Session) setOperands(keys [][]byte) ([]*keyspace.Set, bool) {
	sets := make([]*keyspace.Set, len(keys))
	for i, k := range keys {
		set, wrong := s.lookupSet(k)
		if wrong {
			return nil, false
		}
		sets[i] = set
	}
	return sets, true
}

// computeSetOp returns the result of op over sets (nil entries are empty
// sets) as a new set that shares the operands' member strings, in the
// encoding Redis 7.0 gives it with set-max-intset-entries maxIntset.
func computeSetOp(op setOp, sets []*keyspace.Set, maxIntset int) *keyspace.Set {
	res := keyspace.NewSet()
	switch op {
	case setUnion:
		for _, set := range sets {
			if set == nil {
				continue
			}
			for i := 0; i < set.Len(); i++ {
				res.AddString(set.At(i), maxIntset)
			}
		}
	case setInter:
		for _, set := range sets {
			if set == nil {
				return res
			}
		}
		// Walk the smallest set and probe the others, smallest first.
		sorted := append([]*keyspace.Set(nil), sets...)
		sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Len() < sorted[j].Len() })
		first := sorted[0]
		for i := 0; i < first.Len(); i++ {
			m := first.At(i)
			if inAll(m, sorted[1:]) {
				res.AddString(m, maxIntset)
			}
		}
	case setDiff:
		first := sets[0]
		if first == nil {
			return res
		}
		for i := 0; i < first.Len(); i++ {
			m := first.At(i)
			found := false
			for _, other := range sets[1:] {
				if other != nil && other.HasString(m) {
					found = true
					break
				}
			}
			if !found {
				res.AddString(m, maxIntset)
			}
		}
		if diffCopiesFirst(sets) && !fitsIntset(first, maxIntset) {
			res.ConvertToHashtable()
		}
	}
	return res
}

// diffCopiesFirst reports whether Redis 7.0 computes the difference of sets
// with its second algorithm, which copies the first set into the result
// and then removes the others' members: when that is less work than
// probing every other set for each member of the first (the first
// algorithm, whose work Redis halves in the comparison).
func diffCopiesFirst(sets []*keyspace.Set) bool {
	var one, two int
	for _, set := range sets {
		if set != nil {
			one += sets[0].Len()
			two += set.Len()
		}
	}
	return one/2 > two
}

// fitsIntset reports whether every member of set could be in an intset of
// at most maxIntset members: whether a copy of it would be an intset.
func fitsIntset(set *keyspace.Set, maxIntset int) bool {
	if set.Len() > maxIntset {
		return false
	}
	if set.Encoding() == "intset" {
		return true
	}
	ok := true
	set.Range(func(m []byte) bool {
		_, ok = resp.ParseInt(m)
		return ok
	})
	return ok
}

// inAll reports whether m is a member of every set.
func inAll(m string, sets []*keyspace.Set) bool {
	for _, set := range sets {
		if !set.HasString(m) {
			return false
		}
	}
	return true
}

// setOpCmd builds SUNION, SINTER and SDIFF, and with store their STORE
// forms, which replace the destination (args[1]) with the result, or delete
// it when the result is empty.
func setOpCmd(op setOp, store bool) Handler {
	return func(s *Session) {
		keys := s.Args[1:]
		if store {
			keys = s.Args[2:]
		}
		sets, ok := s.setOperands(keys)
		if !ok {
			return
		}
		res := computeSetOp(op, sets, s.maxIntset())
		if !store {
			s.writeSet(res)
			return
		}
		dst := s.Args[1]
		n := res.Len()
		if n == 0 {
			deleted := s.db.Delete(dst)
			if deleted {
				s.emit(bDEL, dst)
			}
			s.W.Int(0)
			if deleted {
				s.notify(notifyGeneric, "del", dst)
			}
			return
		}
		s.db.SetObject(dst, res)
		s.emit(bDEL, dst)
		eff := make([][]byte, 2, 2+n)
		eff[0], eff[1] = bSADD, dst
		for i := 0; i < n; i++ {
			eff = append(eff, []byte(res.At(i)))
		}
		s.emit(eff...)
		s.W.Int(int64(n))
		s.notify(notifySet, setStoreEvents[op], dst)
	}
}

// setStoreEvents are the keyspace events of the STORE forms, by operation.
var setStoreEvents = [...]string{setUnion: "sunionstore", setInter: "sinterstore", setDiff: "sdiffstore"}

// sintercardKeys returns SINTERCARD's keys: numkeys of them after the
// numkeys argument, none when numkeys is not valid (the command then fails
// without touching a key).
func sintercardKeys(args [][]byte) [][]byte {
	if len(args) < 3 {
		return nil
	}
	n, ok := resp.ParseInt(args[1])
	if !ok || n < 1 || n > int64(len(args)-2) {
		return nil
	}
	return args[2 : 2+n]
}

func cmdSInterCard(s *Session) {
	numkeys, ok := resp.ParseInt(s.Args[1])
	if !ok || numkeys < 1 {
		s.W.Error(errNumkeysZero)
		return
	}
	if numkeys > int64(len(s.Args)-2) {
		s.W.Error(errNumkeysArgs)
		return
	}
	end := 2 + int(numkeys)
	limit := int64(0)
	for j := end; j < len(s.Args); j++ {
		if !resp.EqualFold(s.Args[j], "limit") || j+1 >= len(s.Args) {
			s.W.Error(errSyntax)
			return
		}
		j++
		l, ok := s.nonNegArg(j, errLimitNegative)
		if !ok {
			return
		}
		limit = l
	}
	sets, ok := s.setOperands(s.Args[2:end])
	if !ok {
		return
	}
	for _, set := range sets {
		if set == nil {
			s.W.Int(0)
			return
		}
	}
	sort.SliceStable(sets, func(i, j int) bool { return sets[i].Len() < sets[j].Len() })
	first := sets[0]
	var card int64
	for i := 0; i < first.Len(); i++ {
		if inAll(first.At(i), sets[1:]) {
			card++
			if card == limit {
				break
			}
		}
	}
	s.W.Int(card)
}

func cmdSScan(s *Session) {
	e, cursor, o, ok := s.scanStart(keyspace.TypeSet)
	if !ok {
		return
	}
	set := e.Obj.(*keyspace.Set)
	var elems [][]byte
	visit := func(m string) {
		if o.match == "" || keyspace.Match(o.match, m) {
			elems = append(elems, []byte(m))
		}
	}
	next := set.Scan(cursor, o.count, visit)
	s.writeScanReply(next, elems)
}
