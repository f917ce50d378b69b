package server

import (
	"bytes"
	"slices"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
)

const errSortScores = "ERR One or more scores can't be converted into double"

func sortCommands() []*Command {
	return []*Command{
		{Name: "sort", Arity: -2, Flags: FlagWrite | FlagDenyOOM | FlagMovableKeys, FirstKey: 1, LastKey: 1, Step: 1, Keys: sortKeys, PatternKeys: sortPatterns(false), Group: "generic", KeySpecs: "RO access; OW update", Since: "1.0.0", Syntax: "key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] [ASC | DESC] [ALPHA] [STORE destination]", Summary: "Sorts the elements in a list, a set, or a sorted set, optionally storing the result.", Complexity: "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).", Categories: "write set sortedset list slow dangerous", Handler: func(s *Session) { s.sort(false) }},
		{Name: "sort_ro", Arity: -2, Flags: FlagReadonly | FlagMovableKeys, FirstKey: 1, LastKey: 1, Step: 1, PatternKeys: sortPatterns(true), Group: "generic", Since: "7.0.0", Syntax: "key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] [ASC | DESC] [ALPHA]", Summary: "Returns the sorted elements of a list, a set, or a sorted set.", Complexity: "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).", Categories: "read set sortedset list slow dangerous", Handler: func(s *Session) { s.sort(true) }},
	}
}

// sortKeys gives SORT's keys as Redis's sortGetKeys does: the sorted key,
// then the destination of the last STORE.
func sortKeys(args [][]byte) [][]byte {
	if len(args) < 2 {
		return nil
	}
	keys := [][]byte{args[1]}
	store := -1
	for i := 2; i < len(args); i++ {
		switch {
		case resp.EqualFold(args[i], "limit"):
			i += 2
		case resp.EqualFold(args[i], "get"), resp.EqualFold(args[i], "by"):
			i++
		case resp.EqualFold(args[i], "store") && i+1 < len(args):
			store = i + 1
		}
	}
	if store > 0 {
		keys = append(keys, args[store])
	}
	return keys
}

// sortPatterns returns SORT's PatternKeys: whether a BY pattern has a '*'
// (a BY without one sorts nothing) or a GET names anything but '#'. It
// walks the options as the command parses them.
func sortPatterns(readonly bool) func(args [][]byte) bool {
	return func(args [][]byte) bool {
		for j := 2; j < len(args); j++ {
			left := len(args) - j - 1
			a := args[j]
			switch {
			case resp.EqualFold(a, "asc"), resp.EqualFold(a, "desc"), resp.EqualFold(a, "alpha"):
			case resp.EqualFold(a, "limit") && left >= 2:
				j += 2
			case !readonly && resp.EqualFold(a, "store") && left >= 1:
				j++
			case resp.EqualFold(a, "by") && left >= 1:
				if bytes.IndexByte(args[j+1], '*') >= 0 {
					return true
				}
				j++
			case resp.EqualFold(a, "get") && left >= 1:
				if string(args[j+1]) != "#" {
					return true
				}
				j++
			default:
				return false // a syntax error: nothing is read
			}
		}
		return false
	}
}

// sortItem is one element being sorted.
type sortItem struct {
	elem  []byte
	score float64
	by    []byte // the BY value of an ALPHA sort; nil when absent
}

// sort runs SORT and SORT_RO.
func (s *Session) sort(readonly bool) {
	args := s.Args
	var desc, alpha, dontSort bool
	limitStart, limitCount := int64(0), int64(-1)
	var sortBy, storeKey []byte
	var gets [][]byte
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		a := args[j]
		switch {
		case resp.EqualFold(a, "asc"):
			desc = false
		case resp.EqualFold(a, "desc"):
			desc = true
		case resp.EqualFold(a, "alpha"):
			alpha = true
		case resp.EqualFold(a, "limit") && left >= 2:
			st, ok1 := resp.ParseInt(args[j+1])
			ct, ok2 := resp.ParseInt(args[j+2])
			if !ok1 || !ok2 {
				s.W.Error(errNotInt)
				return
			}
			limitStart, limitCount = st, ct
			j += 2
		case !readonly && resp.EqualFold(a, "store") && left >= 1:
			storeKey = args[j+1]
			j++
		case resp.EqualFold(a, "by") && left >= 1:
			sortBy = args[j+1]
			// A constant BY sorts nothing and looks nothing up.
			dontSort = bytes.IndexByte(sortBy, '*') < 0
			j++
		case resp.EqualFold(a, "get") && left >= 1:
			gets = append(gets, args[j+1])
			j++
		default:
			s.W.Error(errSyntax)
			return
		}
	}
	e := s.db.Lookup(args[1])
	if e != nil {
		switch e.Type() {
		case keyspace.TypeSet, keyspace.TypeList, keyspace.TypeZSet:
		default:
			s.W.Error(errWrongType)
			return
		}
	}
	// An unsorted set has no order of its own: a stored result, or one a
	// script gets, is sorted as ALPHA so that it is deterministic, as
	// Redis does.
	if dontSort && e != nil && e.Type() == keyspace.TypeSet && (storeKey != nil || s.inScript) {
		dontSort, alpha, sortBy = false, true, nil
	}
	n := 0
	if e != nil {
		n = e.Obj.(interface{ Len() int }).Len()
	}
	start := min(max(limitStart, 0), int64(n))
	count := min(max(limitCount, -1), int64(n))
	end := int64(n) - 1
	if count >= 0 {
		end = start + count - 1
	}
	if start >= int64(n) {
		start, end = int64(n)-1, int64(n)-2
	}
	end = min(end, int64(n)-1)

	items := s.sortLoad(e, dontSort, desc, &start, &end)
	if !dontSort {
		if !s.sortScore(items, sortBy, alpha) {
			s.W.Error(errSortScores)
			return
		}
		slices.SortStableFunc(items, func(x, y sortItem) int {
			c := sortCompare(&x, &y, alpha, sortBy != nil)
			if desc {
				return -c
			}
			return c
		})
	}
	var out []sortItem
	if end >= start {
		out = items[start : end+1]
	}
	if storeKey == nil {
		if len(gets) == 0 {
			s.W.Array(len(out))
		} else {
			s.W.Array(len(out) * len(gets))
		}
		for _, it := range out {
			if len(gets) == 0 {
				s.W.Bulk(it.elem)
			}
			for _, g := range gets {
				if v, ok := s.sortLookup(g, it.elem); ok {
					s.W.Bulk(v)
				} else {
					s.W.Null()
				}
			}
		}
		return
	}
	l := keyspace.NewList(s.listFill())
	for _, it := range out {
		if len(gets) == 0 {
			l.PushBack(it.elem)
		}
		for _, g := range gets {
			v, _ := s.sortLookup(g, it.elem)
			l.PushBack(v)
		}
	}
	s.sortStore(storeKey, l)
}

// sortLoad returns the elements to sort. A list or sorted set that is not
// sorted (a constant BY) yields only the LIMIT range, in its order (reversed
// by DESC), and start and end are moved to index it.
func (s *Session) sortLoad(e *keyspace.Entry, dontSort, desc bool, start, end *int64) []sortItem {
	if e == nil {
		return nil
	}
	var items []sortItem
	switch o := e.Obj.(type) {
	case *keyspace.List:
		if dontSort {
			return listRange(o, desc, start, end)
		}
		items = make([]sortItem, 0, o.Len())
		o.Range(func(v []byte) bool {
			items = append(items, sortItem{elem: v})
			return true
		})
	case *keyspace.Set:
		items = make([]sortItem, 0, o.Len())
		o.Range(func(v []byte) bool {
			items = append(items, sortItem{elem: bytes.Clone(v)})
			return true
		})
	case *keyspace.ZSet:
		if dontSort {
			return sortRange(o.Len(), desc, start, end, func(i int) []byte { return []byte(o.ByRank(i).Member()) })
		}
		items = make([]sortItem, 0, o.Len())
		o.Range(func(m []byte, _ float64) bool {
			items = append(items, sortItem{elem: bytes.Clone(m)})
			return true
		})
	}
	return items
}

// sortRange returns the elements start to end of a list or sorted set of n
// elements, in its order (reversed by desc), at(i) being element i, and
// moves start and end to index the result.
func sortRange(n int, desc bool, start, end *int64, at func(i int) []byte) []sortItem {
	var items []sortItem
	if *end >= *start {
		for i := *start; i <= *end; i++ {
			j := int(i)
			if desc {
				j = n - 1 - j
			}
			items = append(items, sortItem{elem: at(j)})
		}
		*end -= *start
		*start = 0
	}
	return items
}

// listRange is sortRange for a list, walked once instead of indexed.
func listRange(l *keyspace.List, desc bool, start, end *int64) []sortItem {
	if *end < *start {
		return nil
	}
	first, count := int(*start), int(*end-*start+1)
	if desc {
		first = l.Len() - 1 - first
	}
	items := make([]sortItem, 0, count)
	l.Iter(first, desc, func(_ int, v []byte) bool {
		items = append(items, sortItem{elem: v})
		return len(items) < count
	})
	*end -= *start
	*start = 0
	return items
}

// sortScore sets the sort keys: the BY values (the elements themselves
// without BY), parsed as numbers unless alpha. It reports false when a
// value is no number.
func (s *Session) sortScore(items []sortItem, sortBy []byte, alpha bool) bool {
	ok := true
	for i := range items {
		it := &items[i]
		v := it.elem
		if sortBy != nil {
			var found bool
			if v, found = s.sortLookup(sortBy, it.elem); !found {
				continue
			}
		}
		if alpha {
			if sortBy != nil {
				it.by = v
			}
			continue
		}
		// strtod must read the whole value (up to a NUL byte).
		f, n, erange := zstrtod(v)
		if (n < len(v) && v[n] != 0) || erange || f != f {
			ok = false
		}
		it.score = f
	}
	return ok
}

// sortCompare orders two elements as Redis's sortCompare, before DESC.
func sortCompare(x, y *sortItem, alpha, byPattern bool) int {
	switch {
	case !alpha:
		if c := cmpFloat(x.score, y.score); c != 0 {
			return c
		}
		return bytes.Compare(x.elem, y.elem)
	case byPattern:
		switch {
		case x.by == nil && y.by == nil:
			return 0
		case x.by == nil:
			return -1
		case y.by == nil:
			return 1
		}
		return bytes.Compare(x.by, y.by)
	}
	return bytes.Compare(x.elem, y.elem)
}

// sortLookup returns the value a BY or GET pattern names for elem: elem
// itself for "#"; else the first '*' replaced by elem names a string key,
// or, with "->field" after the '*', a hash key's field. A pattern without
// '*', a missing key or field, or a value of another type finds nothing.
func (s *Session) sortLookup(pattern, elem []byte) ([]byte, bool) {
	if string(pattern) == "#" {
		return elem, true
	}
	star := bytes.IndexByte(pattern, '*')
	if star < 0 {
		return nil, false
	}
	postfix, field := pattern[star+1:], []byte(nil)
	if f := bytes.Index(postfix, []byte("->")); f >= 0 && f+2 < len(postfix) {
		postfix, field = postfix[:f], postfix[f+2:]
	}
	key := make([]byte, 0, star+len(elem)+len(postfix))
	key = append(append(append(key, pattern[:star]...), elem...), postfix...)
	e := s.db.Lookup(key)
	if e == nil {
		return nil, false
	}
	if field != nil {
		h, ok := e.Obj.(*keyspace.Hash)
		if !ok {
			return nil, false
		}
		return h.Get(field)
	}
	if e.Obj != nil {
		return nil, false
	}
	return e.Str, true
}

// sortStore replaces dst with the list l and replies with its length; an
// empty result deletes dst. The effects re-create dst: DEL, then RPUSH of
// the elements.
func (s *Session) sortStore(dst []byte, l *keyspace.List) {
	if l.Len() == 0 {
		s.zstoreEmpty(dst)
		return
	}
	s.db.Set(dst, &keyspace.Entry{Obj: l, Atime: s.srv.ks.Clock()})
	s.emit(bDEL, dst)
	eff := make([][]byte, 0, 2+l.Len())
	eff = append(eff, bRPUSH, dst)
	l.Range(func(v []byte) bool {
		eff = append(eff, v)
		return true
	})
	s.emit(eff...)
	s.notify(notifyList, "sortstore", dst)
	s.W.Int(int64(l.Len()))
}
