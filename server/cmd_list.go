package server

import (
	"sync/atomic"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
)

// List-only error texts.
const (
	errIndexRange     = "ERR index out of range"
	errRankZero       = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"
	errCountNegative  = "ERR COUNT can't be negative"
	errMaxlenNegative = "ERR MAXLEN can't be negative"
)

// listCommands are the list commands, blocking pops included.
func listCommands() []*Command {
	k1, k2 := keysIn("list", 1, 1), keysIn("list", 1, 2)
	const pushCx = "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments."
	return []*Command{
		k1(&Command{Name: "lpush", Arity: -3, Flags: FlagWrite | FlagDenyOOM | FlagFast | FlagSized, KeySpecs: "RW insert", Since: "1.0.0", Syntax: "key element [element ...]", Summary: "Prepends one or more elements to a list. Creates the key if it doesn't exist.", Complexity: pushCx, Categories: "write list fast", Handler: pushCmd(true, false)}),
		k1(&Command{Name: "rpush", Arity: -3, Flags: FlagWrite | FlagDenyOOM | FlagFast | FlagSized, KeySpecs: "RW insert", Since: "1.0.0", Syntax: "key element [element ...]", Summary: "Appends one or more elements to a list. Creates the key if it doesn't exist.", Complexity: pushCx, Categories: "write list fast", Handler: pushCmd(false, false)}),
		k1(&Command{Name: "lpushx", Arity: -3, Flags: FlagWrite | FlagDenyOOM | FlagFast | FlagSized, KeySpecs: "RW insert", Since: "2.2.0", Syntax: "key element [element ...]", Summary: "Prepends one or more elements to a list only when the list exists.", Complexity: pushCx, Categories: "write list fast", Handler: pushCmd(true, true)}),
		k1(&Command{Name: "rpushx", Arity: -3, Flags: FlagWrite | FlagDenyOOM | FlagFast | FlagSized, KeySpecs: "RW insert", Since: "2.2.0", Syntax: "key element [element ...]", Summary: "Appends an element to a list only when the list exists.", Complexity: pushCx, Categories: "write list fast", Handler: pushCmd(false, true)}),
		k1(&Command{Name: "lpop", Arity: -2, Flags: FlagWrite | FlagFast, KeySpecs: "RW access delete", Since: "1.0.0", Syntax: "key [count]", Summary: "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.", Complexity: "O(N) where N is the number of elements returned", Categories: "write list fast", Handler: popCmd("lpop", true)}),
		k1(&Command{Name: "rpop", Arity: -2, Flags: FlagWrite | FlagFast, KeySpecs: "RW access delete", Since: "1.0.0", Syntax: "key [count]", Summary: "Returns and removes the last elements of a list. Deletes the list if the last element was popped.", Complexity: "O(N) where N is the number of elements returned", Categories: "write list fast", Handler: popCmd("rpop", false)}),
		k1(&Command{Name: "llen", Arity: 2, Flags: FlagReadonly | FlagFast, KeySpecs: "RO", Since: "1.0.0", Syntax: "key", Summary: "Returns the length of a list.", Complexity: "O(1)", Categories: "read list fast", Handler: cmdLLen}),
		k1(&Command{Name: "lrange", Arity: 4, Flags: FlagReadonly, Since: "1.0.0", Syntax: "key start stop", Summary: "Returns a range of elements from a list.", Complexity: "O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range.", Categories: "read list slow", Handler: cmdLRange}),
		k1(&Command{Name: "lindex", Arity: 3, Flags: FlagReadonly, Since: "1.0.0", Syntax: "key index", Summary: "Returns an element from a list by its index.", Complexity: "O(N) where N is the number of elements to traverse to get to the element at index. This makes asking for the first or the last element of the list O(1).", Categories: "read list slow", Handler: cmdLIndex}),
		k1(&Command{Name: "lset", Arity: 4, Flags: FlagWrite | FlagDenyOOM, KeySpecs: "RW update", Since: "1.0.0", Syntax: "key index element", Summary: "Sets the value of an element in a list by its index.", Complexity: "O(N) where N is the length of the list. Setting either the first or the last element of the list is O(1).", Categories: "write list slow", Handler: cmdLSet}),
		k1(&Command{Name: "lrem", Arity: 4, Flags: FlagWrite, KeySpecs: "RW delete", Since: "1.0.0", Syntax: "key count element", Summary: "Removes elements from a list. Deletes the list if the last element was removed.", Complexity: "O(N+M) where N is the length of the list and M is the number of elements removed.", Categories: "write list slow", Handler: cmdLRem}),
		k1(&Command{Name: "ltrim", Arity: 4, Flags: FlagWrite, KeySpecs: "RW delete", Since: "1.0.0", Syntax: "key start stop", Summary: "Removes elements from both ends a list. Deletes the list if all elements were trimmed.", Complexity: "O(N) where N is the number of elements to be removed by the operation.", Categories: "write list slow", Handler: cmdLTrim}),
		k1(&Command{Name: "linsert", Arity: 5, Flags: FlagWrite | FlagDenyOOM, KeySpecs: "RW insert", Since: "2.2.0", Syntax: "key (BEFORE | AFTER) pivot element", Summary: "Inserts an element before or after another element in a list.", Complexity: "O(N) where N is the number of elements to traverse before seeing the value pivot. This means that inserting somewhere on the left end on the list (head) can be considered O(1) and inserting somewhere on the right end (tail) is O(N).", Categories: "write list slow", Handler: cmdLInsert}),
		k1(&Command{Name: "lpos", Arity: -3, Flags: FlagReadonly, Since: "6.0.6", Syntax: "key element [RANK rank] [COUNT num-matches] [MAXLEN len]", Summary: "Returns the index of matching elements in a list.", Complexity: "O(N) where N is the number of elements in the list, for the average case. When searching for elements near the head or the tail of the list, or when the MAXLEN option is provided, the command may run in constant time.", Categories: "read list slow", Handler: cmdLPos}),
		k2(&Command{Name: "lmove", Arity: 5, Flags: FlagWrite | FlagDenyOOM, KeySpecs: "RW access delete; RW insert", Since: "6.2.0", Syntax: "source destination (LEFT | RIGHT) (LEFT | RIGHT)", Summary: "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.", Complexity: "O(1)", Categories: "write list slow", Handler: cmdLMove}),
		k2(&Command{Name: "rpoplpush", Arity: 3, Flags: FlagWrite | FlagDenyOOM, KeySpecs: "RW access delete; RW insert", Since: "1.2.0", Syntax: "source destination", Summary: "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.", Complexity: "O(1)", Categories: "write list slow", Handler: cmdRPopLPush}),
		{Name: "lmpop", Arity: -4, Flags: FlagWrite | FlagMovableKeys, Keys: mpopKeys(1), Group: "list", KeySpecs: "RW access delete", Since: "7.0.0", Syntax: "numkeys key [key ...] (LEFT | RIGHT) [COUNT count]", Summary: "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.", Complexity: "O(N+M) where N is the number of provided keys and M is the number of elements returned.", Categories: "write list slow", Handler: mpopCmd(false)},
		{Name: "blpop", Arity: -3, Flags: FlagWrite | FlagNoScript | FlagBlocking, FirstKey: 1, LastKey: -2, Step: 1, Group: "list", KeySpecs: "RW access delete", Since: "2.0.0", Syntax: "key [key ...] timeout", Summary: "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", Complexity: "O(N) where N is the number of provided keys.", Categories: "write list slow blocking", Handler: bpopCmd(true)},
		{Name: "brpop", Arity: -3, Flags: FlagWrite | FlagNoScript | FlagBlocking, FirstKey: 1, LastKey: -2, Step: 1, Group: "list", KeySpecs: "RW access delete", Since: "2.0.0", Syntax: "key [key ...] timeout", Summary: "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", Complexity: "O(N) where N is the number of provided keys.", Categories: "write list slow blocking", Handler: bpopCmd(false)},
		k2(&Command{Name: "blmove", Arity: 6, Flags: FlagWrite | FlagDenyOOM | FlagNoScript | FlagBlocking, KeySpecs: "RW access delete; RW insert", Since: "6.2.0", Syntax: "source destination (LEFT | RIGHT) (LEFT | RIGHT) timeout", Summary: "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.", Complexity: "O(1)", Categories: "write list slow blocking", Handler: cmdBLMove}),
		k2(&Command{Name: "brpoplpush", Arity: 4, Flags: FlagWrite | FlagDenyOOM | FlagNoScript | FlagBlocking, KeySpecs: "RW access delete; RW insert", Since: "2.2.0", Syntax: "source destination timeout", Summary: "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.", Complexity: "O(1)", Categories: "write list slow blocking", Handler: cmdBRPopLPush}),
		{Name: "blmpop", Arity: -5, Flags: FlagWrite | FlagMovableKeys | FlagBlocking, Keys: mpopKeys(2), Group: "list", KeySpecs: "RW access delete", Since: "7.0.0", Syntax: "timeout numkeys key [key ...] (LEFT | RIGHT) [COUNT count]", Summary: "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", Complexity: "O(N+M) where N is the number of provided keys and M is the number of elements returned.", Categories: "write list slow blocking", Handler: mpopCmd(true)},
	}
}

// mpopKeys returns the key finder of LMPOP (numkeys at 1) and BLMPOP (at
// 2). A bad numkeys yields no keys; the command then fails before it
// touches any.
func mpopKeys(at int) func(args [][]byte) [][]byte {
	return func(args [][]byte) [][]byte {
		if at >= len(args) {
			return nil
		}
		n, ok := resp.ParseInt(args[at])
		if !ok || n <= 0 {
			return nil
		}
		first := at + 1
		if n > int64(len(args)-first) {
			n = int64(len(args) - first)
		}
		return args[first : first+int(n)]
	}
}

// lookupList returns key's list, nil when the key is absent; wrong reports
// (and replies to) a value of another type.
func (s *Session) lookupList(key []byte) (l *keyspace.List, wrong bool) {
	e, wrong := s.lookupType(key, keyspace.TypeList)
	if e == nil {
		return nil, wrong
	}
	return e.Obj.(*keyspace.List), false
}

// readList is lookupList for read-only commands: it counts keyspace hits
// and misses as Redis's lookupKeyRead does.
func (s *Session) readList(key []byte) (l *keyspace.List, wrong bool) {
	l, wrong = s.lookupList(key)
	if l == nil && !wrong {
		s.srv.keyMisses.Add(1)
		s.notify(notifyKeyMiss, "keymiss", key)
	} else {
		s.srv.keyHits.Add(1)
	}
	return l, wrong
}

// applyListMaxListpackSize makes list-max-listpack-size the fill of the
// lists created from then on, as Redis sets a quicklist's fill when it
// creates it.
var applyListMaxListpackSize = applyInt(func(l *liveConfig) *atomic.Int64 { return &l.listFill })

// listFill returns list-max-listpack-size: what bounds the nodes of a new
// list.
func (s *Session) listFill() int { return int(s.srv.live.listFill.Load()) }

// newList stores an empty list under key and returns it.
func (s *Session) newList(key []byte) *keyspace.List {
	l := keyspace.NewList(s.listFill())
	s.db.SetObject(key, l)
	return l
}

// listWhere parses LEFT or RIGHT; front reports LEFT.
func listWhere(b []byte) (front, ok bool) {
	switch {
	case resp.EqualFold(b, "left"):
		return true, true
	case resp.EqualFold(b, "right"):
		return false, true
	}
	return false, false
}

// moveWheres parses the wherefrom and whereto of LMOVE and BLMOVE
// (args[3] and args[4]), replying on error.
func (s *Session) moveWheres() (front, toFront, ok bool) {
	front, ok1 := listWhere(s.Args[3])
	toFront, ok2 := listWhere(s.Args[4])
	if !ok1 || !ok2 {
		s.W.Error(errSyntax)
		return false, false, false
	}
	return front, toFront, true
}

// popCountArg parses the optional count (args[2]) of LPOP, RPOP, SPOP,
// ZPOPMIN and ZPOPMAX: -1 when absent, and not negative.
func (s *Session) popCountArg() (int64, bool) {
	if len(s.Args) < 3 {
		return -1, true
	}
	return s.nonNegArg(2, errMustBePositive)
}

// parseMPop parses "numkeys key [key ...] where [COUNT count]" from
// args[numIdx] on, the arguments of LMPOP, BLMPOP and ZMPOP, replying on
// error. where reads the end to pop from (LEFT or RIGHT, MIN or MAX);
// count is 1 when not given.
func (s *Session) parseMPop(numIdx int, where func([]byte) (bool, bool)) (keys [][]byte, end bool, count int64, ok bool) {
	numkeys, ok := resp.ParseInt(s.Args[numIdx])
	if !ok || numkeys < 1 {
		s.W.Error(errNumkeysZero)
		return nil, false, 0, false
	}
	if numkeys > int64(len(s.Args)-numIdx-2) {
		s.W.Error(errSyntax)
		return nil, false, 0, false
	}
	whereIdx := numIdx + int(numkeys) + 1
	if end, ok = where(s.Args[whereIdx]); !ok {
		s.W.Error(errSyntax)
		return nil, false, 0, false
	}
	count = -1
	for j := whereIdx + 1; j < len(s.Args); j++ {
		if count == -1 && resp.EqualFold(s.Args[j], "count") && j+1 < len(s.Args) {
			j++
			n, ok := resp.ParseInt(s.Args[j])
			if !ok || n < 1 {
				s.W.Error(errCountPositive)
				return nil, false, 0, false
			}
			count = n
			continue
		}
		s.W.Error(errSyntax)
		return nil, false, 0, false
	}
	if count == -1 {
		count = 1
	}
	return s.Args[numIdx+1 : whereIdx], end, count, true
}

func whereWord(front bool) []byte {
	if front {
		return bLEFT
	}
	return bRIGHT
}

// pushCmd builds LPUSH, RPUSH (front chooses the end) and their X forms,
// which push only onto an existing list.
func pushCmd(front, onlyExisting bool) Handler {
	name := bRPUSH
	switch {
	case front && onlyExisting:
		name = bLPUSHX
	case front:
		name = bLPUSH
	case onlyExisting:
		name = bRPUSHX
	}
	return func(s *Session) {
		key := s.Args[1]
		e, wrong := s.lookupWrite(key, keyspace.TypeList)
		if wrong {
			return
		}
		var l *keyspace.List
		if e != nil {
			l = e.Obj.(*keyspace.List)
		} else {
			if onlyExisting {
				s.W.Int(0)
				return
			}
			l = s.newList(key)
		}
		l.PushAll(front, s.Args[2:])
		s.accountWrite(key, e)
		s.emitNamed(name, s.Args[1:])
		s.W.Int(int64(l.Len()))
		// Redis replies first: a subscribed writer gets the reply, then the event.
		if front {
			s.notify(notifyList, "lpush", key)
		} else {
			s.notify(notifyList, "rpush", key)
		}
	}
}

// popOne removes one element from key's list l, deleting the key when the
// list empties, and emits the pop. The element is the caller's.
func (s *Session) popOne(key []byte, l *keyspace.List, front bool) []byte {
	var v []byte
	if front {
		v = l.PopFront()
	} else {
		v = l.PopBack()
	}
	if l.Len() == 0 {
		s.db.Delete(key)
	}
	s.emitPop(key, front, 1)
	s.notifyPop(key, front, l.Len() == 0)
	return v
}

// notifyPop publishes the events of a pop from key's list: lpop or rpop,
// then del when the pop emptied it.
func (s *Session) notifyPop(key []byte, front, emptied bool) {
	if front {
		s.notify(notifyList, "lpop", key)
	} else {
		s.notify(notifyList, "rpop", key)
	}
	if emptied {
		s.notify(notifyGeneric, "del", key)
	}
}

// emitPop emits LPOP key n or RPOP key n.
func (s *Session) emitPop(key []byte, front bool, n int) {
	name := bRPOP
	if front {
		name = bLPOP
	}
	s.emit(name, key, s.itoa(int64(n)))
}

// popMany removes up to count elements from key's list l and writes them to
// w as an array, deleting the key when the list empties.
func (s *Session) popMany(w *resp.Writer, key []byte, l *keyspace.List, front bool, count int64) {
	n := l.Len()
	if count < int64(n) {
		n = int(count)
	}
	w.Array(n)
	for i := 0; i < n; i++ {
		if front {
			w.Bulk(l.PopFront())
		} else {
			w.Bulk(l.PopBack())
		}
	}
	if l.Len() == 0 {
		s.db.Delete(key)
	}
	s.emitPop(key, front, n)
	s.notifyPop(key, front, l.Len() == 0)
}

// popWithKey is the reply of BLPOP and BRPOP: [key, element].
func (s *Session) popWithKey(w *resp.Writer, key []byte, l *keyspace.List, front bool) {
	w.Array(2)
	w.Bulk(key)
	w.Bulk(s.popOne(key, l, front))
}

// mpopWithKey is the reply of LMPOP and BLMPOP: [key, [elements…]].
func (s *Session) mpopWithKey(w *resp.Writer, key []byte, l *keyspace.List, front bool, count int64) {
	w.Array(2)
	w.Bulk(key)
	s.popMany(w, key, l, front, count)
}

// popCmd builds LPOP and RPOP; name is the command for the arity error.
func popCmd(name string, front bool) Handler {
	return func(s *Session) {
		if len(s.Args) > 3 {
			s.W.Error("ERR wrong number of arguments for '" + name + "' command")
			return
		}
		count, ok := s.popCountArg()
		if !ok {
			return
		}
		key := s.Args[1]
		l, wrong := s.lookupList(key)
		if wrong {
			return
		}
		if l == nil {
			if count >= 0 {
				s.W.NullArray()
			} else {
				s.W.Null()
			}
			return
		}
		if count < 0 {
			s.W.Bulk(s.popOne(key, l, front))
			return
		}
		if count == 0 {
			s.W.Array(0)
			return
		}
		s.popMany(&s.W, key, l, front, count)
	}
}

func cmdLLen(s *Session) {
	l, wrong := s.readList(s.Args[1])
	if wrong {
		return
	}
	if l == nil {
		s.W.Int(0)
		return
	}
	s.W.Int(int64(l.Len()))
}

// indexRange converts the start and stop indexes of LRANGE, LTRIM, ZRANGE
// and ZREMRANGEBYRANK (negative ones count from the end) to a valid
// inclusive range of n elements; ok is false when the range is empty.
func indexRange(start, stop int64, n int) (int, int, bool) {
	ln := int64(n)
	if start < 0 {
		start += ln
	}
	if stop < 0 {
		stop += ln
	}
	if start < 0 {
		start = 0
	}
	if start > stop || start >= ln {
		return 0, 0, false
	}
	if stop >= ln {
		stop = ln - 1
	}
	return int(start), int(stop), true
}

func cmdLRange(s *Session) {
	start, ok := s.intArg(2)
	if !ok {
		return
	}
	stop, ok := s.intArg(3)
	if !ok {
		return
	}
	l, wrong := s.readList(s.Args[1])
	if wrong {
		return
	}
	if l == nil {
		s.W.Array(0)
		return
	}
	from, to, ok := indexRange(start, stop, l.Len())
	if !ok {
		s.W.Array(0)
		return
	}
	s.W.Array(to - from + 1)
	c := l.Cursor(from)
	for i := from; i <= to; i++ {
		s.W.Bulk(c.Next())
	}
}

// listIndex converts an LINDEX/LSET index to a position in a list of n
// elements; ok is false when it is out of range.
func listIndex(i int64, n int) (int, bool) {
	if i < 0 {
		i += int64(n)
	}
	if i < 0 || i >= int64(n) {
		return 0, false
	}
	return int(i), true
}

func cmdLIndex(s *Session) {
	l, wrong := s.readList(s.Args[1])
	if wrong {
		return
	}
	if l == nil {
		s.W.Null()
		return
	}
	idx, ok := s.intArg(2)
	if !ok {
		return
	}
	i, ok := listIndex(idx, l.Len())
	if !ok {
		s.W.Null()
		return
	}
	s.W.Bulk(l.At(i))
}

func cmdLSet(s *Session) {
	key := s.Args[1]
	l, wrong := s.lookupList(key)
	if wrong {
		return
	}
	if l == nil {
		s.W.Error(errNoSuchKey)
		return
	}
	idx, ok := s.intArg(2)
	if !ok {
		return
	}
	i, ok := listIndex(idx, l.Len())
	if !ok {
		s.W.Error(errIndexRange)
		return
	}
	l.Set(i, s.Args[3])
	s.emitNamed(bLSET, s.Args[1:])
	s.W.OK()
	s.notify(notifyList, "lset", key)
}

func cmdLRem(s *Session) {
	count, ok := s.intArg(2)
	if !ok {
		return
	}
	key := s.Args[1]
	l, wrong := s.lookupList(key)
	if wrong {
		return
	}
	if l == nil {
		s.W.Int(0)
		return
	}
	n := l.Remove(count, s.Args[3])
	if n > 0 {
		if l.Len() == 0 {
			s.db.Delete(key)
		}
		s.emitNamed(bLREM, s.Args[1:])
		s.notify(notifyList, "lrem", key)
		if l.Len() == 0 {
			s.notify(notifyGeneric, "del", key)
		}
	}
	s.W.Int(n)
}

func cmdLTrim(s *Session) {
	start, ok := s.intArg(2)
	if !ok {
		return
	}
	stop, ok := s.intArg(3)
	if !ok {
		return
	}
	key := s.Args[1]
	l, wrong := s.lookupList(key)
	if wrong {
		return
	}
	if l == nil {
		s.W.OK()
		return
	}
	from, to, ok := indexRange(start, stop, l.Len())
	switch {
	case !ok:
		l.Clear()
		s.db.Delete(key)
		s.emitNamed(bLTRIM, s.Args[1:])
		s.notify(notifyList, "ltrim", key)
		s.notify(notifyGeneric, "del", key)
	case from > 0 || to < l.Len()-1:
		l.Trim(from, to)
		s.emitNamed(bLTRIM, s.Args[1:])
		s.notify(notifyList, "ltrim", key)
	default:
		s.notify(notifyList, "ltrim", key)
	}
	s.W.OK()
}

func cmdLInsert(s *Session) {
	var after bool
	switch {
	case resp.EqualFold(s.Args[2], "after"):
		after = true
	case resp.EqualFold(s.Args[2], "before"):
	default:
		s.W.Error(errSyntax)
		return
	}
	key := s.Args[1]
	l, wrong := s.lookupList(key)
	if wrong {
		return
	}
	if l == nil {
		s.W.Int(0)
		return
	}
	pivot := s.Args[3]
	at := -1
	l.Iter(0, false, func(i int, v []byte) bool {
		if string(v) == string(pivot) {
			at = i
		}
		return at < 0
	})
	if at >= 0 {
		if after {
			at++
		}
		l.Insert(at, s.Args[4])
		s.emitNamed(bLINSERT, s.Args[1:])
		s.notify(notifyList, "linsert", key)
		s.W.Int(int64(l.Len()))
		return
	}
	s.W.Int(-1)
}

func cmdLPos(s *Session) {
	rank, count, maxlen := int64(1), int64(-1), int64(0)
	for j := 3; j < len(s.Args); j++ {
		more := j+1 < len(s.Args)
		switch {
		case resp.EqualFold(s.Args[j], "rank") && more:
			j++
			n, ok := s.intArg(j)
			if !ok {
				return
			}
			if n == 0 {
				s.W.Error(errRankZero)
				return
			}
			rank = n
		case resp.EqualFold(s.Args[j], "count") && more:
			j++
			n, ok := s.nonNegArg(j, errCountNegative)
			if !ok {
				return
			}
			count = n
		case resp.EqualFold(s.Args[j], "maxlen") && more:
			j++
			n, ok := s.nonNegArg(j, errMaxlenNegative)
			if !ok {
				return
			}
			maxlen = n
		default:
			s.W.Error(errSyntax)
			return
		}
	}
	fromTail := false
	if rank < 0 {
		// The minimum int64 stays negative, as in Redis: every match
		// then counts.
		rank = -rank
		fromTail = true
	}
	l, wrong := s.readList(s.Args[1])
	if wrong {
		return
	}
	if l == nil {
		if count != -1 {
			s.W.Array(0)
		} else {
			s.W.Null()
		}
		return
	}
	elem := s.Args[2]
	n := l.Len()
	var found []int64
	var matches int64
	start := 0
	if fromTail {
		start = n - 1
	}
	var idx int64
	l.Iter(start, fromTail, func(pos int, v []byte) bool {
		if maxlen != 0 && idx >= maxlen {
			return false
		}
		idx++
		if string(v) != string(elem) {
			return true
		}
		matches++
		if matches < rank {
			return true
		}
		found = append(found, int64(pos))
		return count > 0 && matches-rank+1 < count || count == 0
	})
	if count == -1 && len(found) > 0 {
		s.W.Int(found[0])
		return
	}
	if count == -1 {
		s.W.Null()
		return
	}
	s.W.Array(len(found))
	for _, p := range found {
		s.W.Int(p)
	}
}

// moveOne pops an element off src's list sl and pushes it onto dst, whose
// entry de (nil when absent) the caller has checked is a list, creating
// dst when needed. It emits the pop and the push (one LMOVE when src and
// dst are the same key) and returns the element, valid until the lists
// change again.
func (s *Session) moveOne(src []byte, sl *keyspace.List, dst []byte, de *keyspace.Entry, front, toFront bool) []byte {
	var v []byte
	if front {
		v = sl.PopFront()
	} else {
		v = sl.PopBack()
	}
	if string(src) == string(dst) {
		if toFront {
			sl.PushFront(v)
		} else {
			sl.PushBack(v)
		}
		s.emit(bLMOVE, src, dst, whereWord(front), whereWord(toFront))
		s.notifyMove(src, dst, front, toFront, false, false)
		return v
	}
	emptied := sl.Len() == 0
	if emptied {
		s.db.Delete(src)
	}
	s.emitPop(src, front, 1)
	var dl *keyspace.List
	if de == nil {
		dl = s.newList(dst)
	} else {
		dl = de.Obj.(*keyspace.List)
	}
	name := bRPUSH
	if toFront {
		name = bLPUSH
		dl.PushFront(v)
	} else {
		dl.PushBack(v)
	}
	s.emit(name, dst, v)
	s.notifyMove(src, dst, front, toFront, emptied, de == nil)
	return v
}

// notifyMove publishes LMOVE's events in Redis's order: new when dst was
// created (said here, since a served BLMOVE knows no absent keys), the push
// onto dst, the pop from src, del when src emptied.
func (s *Session) notifyMove(src, dst []byte, front, toFront, emptied, created bool) {
	if created {
		s.notifyNew(s.DBIndex, dst)
	}
	if toFront {
		s.notify(notifyList, "lpush", dst)
	} else {
		s.notify(notifyList, "rpush", dst)
	}
	s.notifyPop(src, front, emptied)
}

// lmove runs LMOVE (and RPOPLPUSH) on the session's reply writer.
func (s *Session) lmove(front, toFront bool) {
	src, dst := s.Args[1], s.Args[2]
	sl, wrong := s.lookupList(src)
	if wrong {
		return
	}
	if sl == nil {
		s.W.Null()
		return
	}
	de, wrong := s.lookupType(dst, keyspace.TypeList)
	if wrong {
		return
	}
	s.W.Bulk(s.moveOne(src, sl, dst, de, front, toFront))
}

func cmdLMove(s *Session) {
	front, toFront, ok := s.moveWheres()
	if !ok {
		return
	}
	s.lmove(front, toFront)
}

func cmdRPopLPush(s *Session) { s.lmove(false, true) }

// mpopCmd builds LMPOP and, with block, BLMPOP.
func mpopCmd(block bool) Handler {
	return func(s *Session) {
		numIdx := 1
		if block {
			numIdx = 2
		}
		keys, front, count, ok := s.parseMPop(numIdx, listWhere)
		if !ok {
			return
		}
		var ms int64
		if block {
			if ms, ok = s.timeoutArg(1); !ok {
				return
			}
		}
		for _, key := range keys {
			l, wrong := s.lookupList(key)
			if wrong {
				return
			}
			if l != nil {
				s.mpopWithKey(&s.W, key, l, front, count)
				return
			}
		}
		if !block || !s.canBlock() {
			s.W.NullArray()
			return
		}
		s.block(&waiter{kind: waitMPop, front: front, count: count}, keys, ms)
	}
}

// bpopCmd builds BLPOP and BRPOP.
func bpopCmd(front bool) Handler {
	return func(s *Session) {
		ms, ok := s.timeoutArg(len(s.Args) - 1)
		if !ok {
			return
		}
		keys := s.Args[1 : len(s.Args)-1]
		for _, key := range keys {
			l, wrong := s.lookupList(key)
			if wrong {
				return
			}
			if l != nil {
				s.popWithKey(&s.W, key, l, front)
				return
			}
		}
		if !s.canBlock() {
			s.W.NullArray()
			return
		}
		s.block(&waiter{kind: waitPop, front: front}, keys, ms)
	}
}

// blmove runs BLMOVE and BRPOPLPUSH once their arguments are parsed.
func (s *Session) blmove(front, toFront bool, ms int64) {
	src := s.Args[1]
	sl, wrong := s.lookupList(src)
	if wrong {
		return
	}
	if sl != nil {
		s.lmove(front, toFront)
		return
	}
	if !s.canBlock() {
		s.W.Null()
		return
	}
	dst := append([]byte(nil), s.Args[2]...)
	s.block(&waiter{kind: waitMove, front: front, toFront: toFront, dst: dst}, s.Args[1:2], ms)
}

func cmdBLMove(s *Session) {
	front, toFront, ok := s.moveWheres()
	if !ok {
		return
	}
	ms, ok := s.timeoutArg(5)
	if !ok {
		return
	}
	s.blmove(front, toFront, ms)
}

func cmdBRPopLPush(s *Session) {
	ms, ok := s.timeoutArg(3)
	if !ok {
		return
	}
	s.blmove(false, true, ms)
}
