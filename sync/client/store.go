package client

import (
	"bytes"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/recached/recached/resp"
	recsync "github.com/recached/recached/sync"
)

// Type is the type of a key in the local store.
type Type uint8

// The types a local key may have. TypeOther is a server type the store
// keeps only the marker and expiry time of (ratelimit): Value.Marker names
// it. TypeJSON and TypeStream came after TypeOther, so that no earlier
// number changed.
const (
	TypeNone Type = iota
	TypeString
	TypeHash
	TypeList
	TypeSet
	TypeZSet
	TypeOther
	TypeJSON
	TypeStream
)

var typeNames = [...]string{"none", "string", "hash", "list", "set", "zset", "other", "json", "stream"}

// String returns the type's name as the server's TYPE command spells it.
func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "unknown"
}

// Value is a copy of one key's local value. Type is TypeNone for a key that
// does not exist (a deletion, in a callback).
type Value struct {
	Type Type
	// Marker is the server's type name: "string", "hash", …, "json", or
	// the name of a type the store does not model ("ratelimit").
	Marker string
	Str    []byte              // TypeString
	Hash   map[string][]byte   // TypeHash
	List   [][]byte            // TypeList
	Set    map[string]struct{} // TypeSet
	ZSet   map[string]float64  // TypeZSet
	// JSON is a json key's document as compact JSON text (TypeJSON); nil
	// while only its marker is known, before its content arrives.
	JSON []byte
	// Stream is a stream key's entries, counters and consumer groups
	// (TypeStream), a copy; nil while only its marker is known.
	Stream *Stream
	// ExpireAt is the key's expiry time in Unix milliseconds, 0 for none,
	// as far as the pushes this client received tell.
	ExpireAt int64
}

// entry is one key's value in the store.
type entry struct {
	typ      Type
	marker   string
	str      []byte
	hash     map[string][]byte
	list     [][]byte
	set      map[string]struct{}
	zset     map[string]float64
	json     *recsync.JSON // nil: the content has not arrived yet
	stream   *Stream       // nil: the content has not arrived yet
	expireAt int64
}

func newEntry(t Type) *entry {
	e := &entry{typ: t, marker: t.String()}
	switch t {
	case TypeHash:
		e.hash = make(map[string][]byte)
	case TypeSet:
		e.set = make(map[string]struct{})
	case TypeZSet:
		e.zset = make(map[string]float64)
	}
	return e
}

// empty reports whether a collection has no elements left (Redis deletes
// such keys).
func (e *entry) empty() bool {
	switch e.typ {
	case TypeHash:
		return len(e.hash) == 0
	case TypeList:
		return len(e.list) == 0
	case TypeSet:
		return len(e.set) == 0
	case TypeZSet:
		return len(e.zset) == 0
	}
	return false
}

func (e *entry) value() Value {
	v := Value{Type: e.typ, Marker: e.marker, ExpireAt: e.expireAt}
	switch e.typ {
	case TypeString:
		v.Str = bytes.Clone(e.str)
		if v.Str == nil {
			v.Str = []byte{}
		}
	case TypeHash:
		v.Hash = make(map[string][]byte, len(e.hash))
		for f, x := range e.hash {
			v.Hash[f] = bytes.Clone(x)
		}
	case TypeList:
		v.List = make([][]byte, len(e.list))
		for i, x := range e.list {
			v.List[i] = bytes.Clone(x)
		}
	case TypeSet:
		v.Set = maps.Clone(e.set)
	case TypeZSet:
		v.ZSet = maps.Clone(e.zset)
	case TypeJSON:
		if e.json != nil {
			v.JSON = e.json.Text()
		}
	case TypeStream:
		if e.stream != nil {
			v.Stream = e.stream.Clone()
		}
	}
	return v
}

// Store is a client's local replica of the keys it syncs: strings, hashes,
// lists, sets, sorted sets, json documents and streams (entries, counters,
// consumer groups and their pending entries) with their expiry times, and
// the markers of ratelimit keys. It is updated from
// qstate and keychange frames and by applying mutation pushes, whose
// effects are the replayable commands the server reports for every write.
// It is safe for concurrent use.
type Store struct {
	mu   sync.RWMutex
	keys map[string]*entry
	now  func() time.Time
}

// NewStore returns an empty store; now is its clock for expiry (nil: the
// system clock).
func NewStore(now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{keys: make(map[string]*entry), now: now}
}

func (st *Store) nowMs() int64 { return st.now().UnixMilli() }

// live returns key's entry, or nil when it is absent or expired; an
// expired entry is removed. The caller holds the write lock.
func (st *Store) live(key string) *entry {
	e := st.keys[key]
	if e != nil && e.expireAt > 0 && e.expireAt <= st.nowMs() {
		delete(st.keys, key)
		return nil
	}
	return e
}

// Get returns a copy of key's value; ok is false when the key is absent or
// its expiry time has passed.
func (st *Store) Get(key string) (v Value, ok bool) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	e := st.keys[key]
	if e == nil || e.expireAt > 0 && e.expireAt <= st.nowMs() {
		return Value{}, false
	}
	return e.value(), true
}

// Keys returns the live keys matching the glob pattern, sorted.
func (st *Store) Keys(pattern string) []string {
	st.mu.RLock()
	defer st.mu.RUnlock()
	now := st.nowMs()
	var out []string
	for k, e := range st.keys {
		if (e.expireAt == 0 || e.expireAt > now) && recsync.Match(pattern, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// Len returns the number of keys held, expired ones not yet removed
// included.
func (st *Store) Len() int {
	st.mu.RLock()
	defer st.mu.RUnlock()
	return len(st.keys)
}

// SetState sets key from a qstate or keychange value: a bulk string makes
// it that string (keeping the expiry time known for it), a nil deletes it,
// and a type marker (a simple string: "hash", "list", …) makes it an empty
// value of that type unless it already has that type: the content travels
// in the mutation pushes that follow. It reports whether the local value
// changed.
func (st *Store) SetState(key string, v resp.Value) bool {
	return st.setState(key, v, true)
}

// hydrate sets key from a value of a qstate reply: as SetState, except
// that a string forgets the expiry time known for it. The server follows
// the qstate with PEXPIREAT key <ms> for every key with a time to live, so
// a string without one has none (it may have been persisted while this
// client was away).
func (st *Store) hydrate(key string, v resp.Value) bool {
	return st.setState(key, v, false)
}

func (st *Store) setState(key string, v resp.Value, keepTTL bool) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	e := st.live(key)
	switch {
	case v.Null:
		if e == nil {
			return false
		}
		delete(st.keys, key)
		return true
	case v.Kind == '$':
		if e != nil && e.typ == TypeString && bytes.Equal(e.str, v.Str) {
			if keepTTL || e.expireAt == 0 {
				return false
			}
			e.expireAt = 0
			return true
		}
		ne := newEntry(TypeString)
		ne.str = bytes.Clone(v.Str)
		if e != nil && keepTTL {
			ne.expireAt = e.expireAt
		}
		st.keys[key] = ne
		return true
	case v.Kind == '+':
		marker := string(v.Str)
		t := typeOf(marker)
		if t == TypeString {
			return false // a string is always sent as its value
		}
		if e != nil && e.marker == marker {
			return false
		}
		ne := newEntry(t)
		ne.marker = marker
		if t == TypeList {
			ne.list = [][]byte{}
		}
		st.keys[key] = ne
		return true
	}
	return false
}

// typeOf returns the local type of a server type marker: TypeOther for a
// type the store does not model.
func typeOf(marker string) Type {
	for i, n := range typeNames {
		if n == marker && Type(i) != TypeOther {
			return Type(i)
		}
	}
	return TypeOther
}

// Retain removes, without reporting them, the keys for which keep returns
// false (keys no live query or scope covers any more).
func (st *Store) Retain(keep func(key string) bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for k := range st.keys {
		if !keep(k) {
			delete(st.keys, k)
		}
	}
}

// removeMatching deletes the keys matching pattern that listed does not
// hold, and returns them.
func (st *Store) removeMatching(pattern string, listed map[string]bool) []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	var gone []string
	for k := range st.keys {
		if !listed[k] && recsync.Match(pattern, k) {
			delete(st.keys, k)
			gone = append(gone, k)
		}
	}
	slices.Sort(gone)
	return gone
}

// Apply applies one effect, the elements of a mutation push: the
// replayable command the server reports for a write (SPEC section 4). It
// returns the keys whose value changed and whether the effect was
// understood; an effect it does not know, or whose arguments are
// malformed, changes nothing.
//
// Effects reproduce the server's state when applied to the state the
// server had. Where the local value disagrees (a type the store did not
// know the key had), the effect wins: the key takes the effect's type.
func (st *Store) Apply(args [][]byte) (changed []string, ok bool) {
	if len(args) == 0 {
		return nil, false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	name := upper(args[0])
	if name == "FLUSHDB" || name == "FLUSHALL" {
		if len(args) != 1 && !(len(args) == 2 && (eqUpper(args[1], "ASYNC") || eqUpper(args[1], "SYNC"))) {
			return nil, false
		}
		for k := range st.keys {
			changed = append(changed, k)
		}
		slices.Sort(changed)
		clear(st.keys)
		return changed, true
	}
	if len(args) < 2 {
		return nil, false
	}
	if name == "XGROUP" {
		if len(args) < 3 {
			return nil, false
		}
		return st.applyStream(string(args[2]), args)
	}
	key := string(args[1])
	rest := args[2:]
	ok = true
	switch name {
	case "SET":
		ok = st.set(key, rest)
	case "DEL", "UNLINK":
		for _, k := range args[1:] {
			if st.live(string(k)) != nil {
				delete(st.keys, string(k))
				changed = append(changed, string(k))
			}
		}
		return changed, true
	case "PEXPIREAT":
		ok = st.pexpireat(key, rest)
	case "PERSIST":
		ok = len(rest) == 0
		if e := st.live(key); ok && e != nil {
			e.expireAt = 0
		}
	case "SETBIT":
		ok = st.setbit(key, rest)
	case "HSET", "HMSET":
		ok = st.hset(key, rest)
	case "HDEL":
		ok = st.hdel(key, rest)
	case "LPUSH", "RPUSH":
		ok = st.push(key, rest, name == "LPUSH")
	case "LPUSHX", "RPUSHX":
		if e := st.live(key); e == nil || e.typ != TypeList {
			ok = len(rest) > 0
			break
		}
		ok = st.push(key, rest, name == "LPUSHX")
	case "LPOP", "RPOP":
		ok = st.pop(key, rest, name == "LPOP")
	case "LSET":
		ok = st.lset(key, rest)
	case "LREM":
		ok = st.lrem(key, rest)
	case "LTRIM":
		ok = st.ltrim(key, rest)
	case "LINSERT":
		ok = st.linsert(key, rest)
	case "LMOVE", "RPOPLPUSH":
		var dst string
		dst, ok = st.lmove(name, key, rest)
		if ok {
			changed = append(changed, key)
			if dst != key {
				changed = append(changed, dst)
			}
			return changed, true
		}
	case "SADD":
		ok = st.sadd(key, rest)
	case "SREM":
		ok = st.srem(key, rest)
	case "ZADD":
		ok = st.zadd(key, rest)
	case "ZREM":
		ok = st.zrem(key, rest)
	case "JSET", "JMERGE", "JDEL":
		ok = st.applyJSON(key, name, rest)
	case "RLSET":
		ok = st.rlset(key, rest)
	case "XADD", "XTRIM", "XDEL", "XSETID", "XACK", "XCLAIM":
		return st.applyStream(key, args)
	case "RENAME":
		if len(rest) != 1 {
			return nil, false
		}
		return st.rename(key, string(rest[0])), true
	case "COPY":
		dst, ok := st.copy(key, rest)
		if !ok {
			return nil, false
		}
		return []string{dst}, true
	case "MOVE":
		if len(rest) != 1 {
			return nil, false
		}
		if db, err := strconv.Atoi(string(rest[0])); err != nil || db == 0 {
			return nil, err == nil
		}
		// Moved to another database: gone from the one this client syncs.
		if st.live(key) == nil {
			return nil, true
		}
		delete(st.keys, key)
		return []string{key}, true
	default:
		return nil, false
	}
	if !ok {
		return nil, false
	}
	return []string{key}, true
}

// upper returns b in upper case as a string.
func upper(b []byte) string {
	for _, c := range b {
		if c >= 'a' && c <= 'z' {
			return string(bytes.ToUpper(b))
		}
	}
	return string(b)
}

// eqUpper compares b, case-insensitively, with the upper-case s.
func eqUpper(b []byte, s string) bool {
	return len(b) == len(s) && upper(b) == s
}

// typed returns key's entry of type t: the live one when it has that type,
// else a new empty one replacing whatever was there.
func (st *Store) typed(key string, t Type) *entry {
	e := st.live(key)
	if e == nil || e.typ != t {
		e = newEntry(t)
		st.keys[key] = e
	}
	return e
}

// settle deletes key when its collection became empty.
func (st *Store) settle(key string, e *entry) {
	if e.empty() {
		delete(st.keys, key)
	}
}

func (st *Store) set(key string, rest [][]byte) bool {
	if len(rest) == 0 {
		return false
	}
	old := st.live(key)
	var at int64
	keep := false
	opts := rest[1:]
	switch {
	case len(opts) == 0:
	case len(opts) == 1 && eqUpper(opts[0], "KEEPTTL"):
		keep = true
	case len(opts) == 2:
		n, err := strconv.ParseInt(string(opts[1]), 10, 64)
		if err != nil {
			return false
		}
		switch upper(opts[0]) {
		case "PXAT":
			at = n
		case "EXAT":
			at = n * 1000
		case "PX":
			at = st.nowMs() + n
		case "EX":
			at = st.nowMs() + n*1000
		default:
			return false
		}
		if at <= 0 {
			at = 1 // already expired: any past time will do
		}
	default:
		return false
	}
	e := newEntry(TypeString)
	e.str = bytes.Clone(rest[0])
	if keep && old != nil {
		e.expireAt = old.expireAt
	} else {
		e.expireAt = at
	}
	st.keys[key] = e
	return true
}

func (st *Store) pexpireat(key string, rest [][]byte) bool {
	if len(rest) != 1 {
		return false
	}
	at, err := strconv.ParseInt(string(rest[0]), 10, 64)
	if err != nil {
		return false
	}
	e := st.live(key)
	if e == nil {
		return true
	}
	if at <= st.nowMs() {
		delete(st.keys, key)
		return true
	}
	e.expireAt = at
	return true
}

func (st *Store) setbit(key string, rest [][]byte) bool {
	if len(rest) != 2 {
		return false
	}
	off, err := strconv.ParseUint(string(rest[0]), 10, 32)
	if err != nil || len(rest[1]) != 1 || rest[1][0] != '0' && rest[1][0] != '1' {
		return false
	}
	e := st.live(key)
	if e == nil || e.typ != TypeString {
		e = newEntry(TypeString)
		st.keys[key] = e
	}
	i := int(off / 8)
	if i >= len(e.str) {
		e.str = append(e.str, make([]byte, i+1-len(e.str))...)
	}
	mask := byte(0x80) >> (off % 8)
	if rest[1][0] == '1' {
		e.str[i] |= mask
	} else {
		e.str[i] &^= mask
	}
	return true
}

func (st *Store) hset(key string, rest [][]byte) bool {
	if len(rest) == 0 || len(rest)%2 != 0 {
		return false
	}
	e := st.typed(key, TypeHash)
	for i := 0; i < len(rest); i += 2 {
		e.hash[string(rest[i])] = bytes.Clone(rest[i+1])
	}
	return true
}

func (st *Store) hdel(key string, rest [][]byte) bool {
	if len(rest) == 0 {
		return false
	}
	e := st.live(key)
	if e == nil || e.typ != TypeHash {
		return true
	}
	for _, f := range rest {
		delete(e.hash, string(f))
	}
	st.settle(key, e)
	return true
}

func (st *Store) push(key string, rest [][]byte, left bool) bool {
	if len(rest) == 0 {
		return false
	}
	e := st.typed(key, TypeList)
	for _, v := range rest {
		if left {
			e.list = slices.Insert(e.list, 0, bytes.Clone(v))
		} else {
			e.list = append(e.list, bytes.Clone(v))
		}
	}
	return true
}

func (st *Store) pop(key string, rest [][]byte, left bool) bool {
	count := 1
	switch len(rest) {
	case 0:
	case 1:
		n, err := strconv.Atoi(string(rest[0]))
		if err != nil || n < 0 {
			return false
		}
		count = n
	default:
		return false
	}
	e := st.live(key)
	if e == nil || e.typ != TypeList {
		return true
	}
	count = min(count, len(e.list))
	if left {
		e.list = slices.Delete(e.list, 0, count)
	} else {
		e.list = e.list[:len(e.list)-count]
	}
	st.settle(key, e)
	return true
}

// listIndex resolves a Redis list index (negative counts from the end).
func listIndex(arg []byte, n int) (int, bool) {
	i, err := strconv.Atoi(string(arg))
	if err != nil {
		return 0, false
	}
	if i < 0 {
		i += n
	}
	return i, true
}

func (st *Store) lset(key string, rest [][]byte) bool {
	if len(rest) != 2 {
		return false
	}
	e := st.live(key)
	if e == nil || e.typ != TypeList {
		return false // the server's LSET needs an existing list
	}
	i, ok := listIndex(rest[0], len(e.list))
	if !ok || i < 0 || i >= len(e.list) {
		return false
	}
	e.list[i] = bytes.Clone(rest[1])
	return true
}

func (st *Store) lrem(key string, rest [][]byte) bool {
	if len(rest) != 2 {
		return false
	}
	count, err := strconv.Atoi(string(rest[0]))
	if err != nil {
		return false
	}
	e := st.live(key)
	if e == nil || e.typ != TypeList {
		return true
	}
	v := rest[1]
	removed := 0
	if count >= 0 {
		out := e.list[:0]
		for _, x := range e.list {
			if bytes.Equal(x, v) && (count == 0 || removed < count) {
				removed++
				continue
			}
			out = append(out, x)
		}
		clear(e.list[len(out):])
		e.list = out
	} else {
		for i := len(e.list) - 1; i >= 0 && removed < -count; i-- {
			if bytes.Equal(e.list[i], v) {
				e.list = slices.Delete(e.list, i, i+1)
				removed++
			}
		}
	}
	st.settle(key, e)
	return true
}

func (st *Store) ltrim(key string, rest [][]byte) bool {
	if len(rest) != 2 {
		return false
	}
	e := st.live(key)
	n := 0
	if e != nil && e.typ == TypeList {
		n = len(e.list)
	}
	start, ok1 := listIndex(rest[0], n)
	stop, ok2 := listIndex(rest[1], n)
	if !ok1 || !ok2 {
		return false
	}
	if e == nil || e.typ != TypeList {
		return true
	}
	start = max(start, 0)
	if start > stop || start >= n {
		delete(st.keys, key)
		return true
	}
	stop = min(stop, n-1)
	e.list = slices.Clone(e.list[start : stop+1])
	return true
}

func (st *Store) linsert(key string, rest [][]byte) bool {
	if len(rest) != 3 {
		return false
	}
	var after bool
	switch upper(rest[0]) {
	case "BEFORE":
	case "AFTER":
		after = true
	default:
		return false
	}
	e := st.live(key)
	if e == nil || e.typ != TypeList {
		return true
	}
	for i, x := range e.list {
		if bytes.Equal(x, rest[1]) {
			if after {
				i++
			}
			e.list = slices.Insert(e.list, i, bytes.Clone(rest[2]))
			break
		}
	}
	return true
}

// lmove applies LMOVE src dst LEFT|RIGHT LEFT|RIGHT (and RPOPLPUSH src dst)
// and returns dst.
func (st *Store) lmove(name, src string, rest [][]byte) (string, bool) {
	var fromLeft, toLeft bool
	switch {
	case name == "RPOPLPUSH" && len(rest) == 1:
		toLeft = true
	case name == "LMOVE" && len(rest) == 3:
		for i, p := range []*bool{&fromLeft, &toLeft} {
			switch upper(rest[1+i]) {
			case "LEFT":
				*p = true
			case "RIGHT":
			default:
				return "", false
			}
		}
	default:
		return "", false
	}
	dst := string(rest[0])
	e := st.live(src)
	if e == nil || e.typ != TypeList || len(e.list) == 0 {
		return dst, true
	}
	var v []byte
	if fromLeft {
		v = e.list[0]
		e.list = slices.Delete(e.list, 0, 1)
	} else {
		v = e.list[len(e.list)-1]
		e.list = e.list[:len(e.list)-1]
	}
	st.settle(src, e)
	d := st.typed(dst, TypeList)
	if toLeft {
		d.list = slices.Insert(d.list, 0, v)
	} else {
		d.list = append(d.list, v)
	}
	return dst, true
}

func (st *Store) sadd(key string, rest [][]byte) bool {
	if len(rest) == 0 {
		return false
	}
	e := st.typed(key, TypeSet)
	for _, m := range rest {
		e.set[string(m)] = struct{}{}
	}
	return true
}

func (st *Store) srem(key string, rest [][]byte) bool {
	if len(rest) == 0 {
		return false
	}
	e := st.live(key)
	if e == nil || e.typ != TypeSet {
		return true
	}
	for _, m := range rest {
		delete(e.set, string(m))
	}
	st.settle(key, e)
	return true
}

func (st *Store) zadd(key string, rest [][]byte) bool {
	if len(rest) == 0 || len(rest)%2 != 0 {
		return false
	}
	scores := make([]float64, len(rest)/2)
	for i := range scores {
		f, err := strconv.ParseFloat(string(rest[2*i]), 64)
		if err != nil || f != f {
			return false
		}
		scores[i] = f
	}
	e := st.typed(key, TypeZSet)
	for i, f := range scores {
		e.zset[string(rest[2*i+1])] = f
	}
	return true
}

func (st *Store) zrem(key string, rest [][]byte) bool {
	if len(rest) == 0 {
		return false
	}
	e := st.live(key)
	if e == nil || e.typ != TypeZSet {
		return true
	}
	for _, m := range rest {
		delete(e.zset, string(m))
	}
	st.settle(key, e)
	return true
}

// rename moves src's value and expiry to dst. A source the store does not
// hold leaves dst unknown: it is dropped rather than kept stale.
func (st *Store) rename(src, dst string) []string {
	if src == dst {
		return nil
	}
	e := st.live(src)
	if e == nil {
		if st.live(dst) == nil {
			return nil
		}
		delete(st.keys, dst)
		return []string{dst}
	}
	delete(st.keys, src)
	st.keys[dst] = e
	return []string{src, dst}
}

// copy applies COPY src dst [DB n] [REPLACE]: a copy into another database
// does not concern this client.
func (st *Store) copy(src string, rest [][]byte) (string, bool) {
	if len(rest) == 0 {
		return "", false
	}
	dst := string(rest[0])
	replace := false
	db := 0
	for i := 1; i < len(rest); i++ {
		switch upper(rest[i]) {
		case "REPLACE":
			replace = true
		case "DB":
			if i+1 >= len(rest) {
				return "", false
			}
			n, err := strconv.Atoi(string(rest[i+1]))
			if err != nil {
				return "", false
			}
			db = n
			i++
		default:
			return "", false
		}
	}
	if db != 0 {
		return dst, true
	}
	e := st.live(src)
	if e == nil || (!replace && st.live(dst) != nil) {
		return dst, true
	}
	c := &entry{typ: e.typ, marker: e.marker, expireAt: e.expireAt}
	if e.typ == TypeJSON {
		if e.json != nil {
			c.json = recsync.CopyJSON(e.json)
		}
	} else {
		v := e.value()
		c.str, c.hash, c.list, c.set, c.zset, c.stream = v.Str, v.Hash, v.List, v.Set, v.ZSet, v.Stream
	}
	st.keys[dst] = c
	return dst, true
}

// applyJSON applies a json effect (JSET key path value, JMERGE key path
// patch, JDEL key path) with the server's own semantics. A key that was
// json keeps its expiry time; one of another type is replaced. An effect
// that does not fit the local document is not understood and changes
// nothing; so is one below the root of a document whose content has not
// arrived (only its marker is known).
func (st *Store) applyJSON(key, name string, rest [][]byte) bool {
	e := st.live(key)
	var cur *recsync.JSON
	wasJSON := e != nil && e.typ == TypeJSON
	if wasJSON {
		cur = e.json
		if cur == nil && name == "JDEL" && len(rest) == 1 && !isRootPath(rest[0]) {
			return false
		}
	}
	doc, err := recsync.ApplyJSONEffect(cur, name, rest)
	if err != nil {
		return false
	}
	if doc == nil {
		if e != nil {
			delete(st.keys, key)
		}
		return true
	}
	if !wasJSON {
		e = newEntry(TypeJSON)
		st.keys[key] = e
	}
	e.json = doc
	return true
}

// isRootPath reports whether a json path names the whole document.
func isRootPath(p []byte) bool {
	return len(p) == 1 && (p[0] == '$' || p[0] == '.')
}

// rlset applies RLSET key tat interval max_burst [PXAT ms]: the key becomes
// a ratelimit key with that expiry time (none without PXAT). The store
// keeps only its marker: the limiter's state is not modeled.
func (st *Store) rlset(key string, rest [][]byte) bool {
	if len(rest) != 3 && !(len(rest) == 5 && eqUpper(rest[3], "PXAT")) {
		return false
	}
	for _, a := range rest[:3] {
		if _, err := strconv.ParseInt(string(a), 10, 64); err != nil {
			return false
		}
	}
	var at int64
	if len(rest) == 5 {
		n, err := strconv.ParseInt(string(rest[4]), 10, 64)
		if err != nil || n <= 0 {
			return false
		}
		if n <= st.nowMs() {
			delete(st.keys, key)
			return true
		}
		at = n
	}
	e := newEntry(TypeOther)
	e.marker = "ratelimit"
	e.expireAt = at
	st.keys[key] = e
	return true
}

// JGet returns the compact JSON text of the value at path (JSONPath, "$"
// for the whole document) in key's document, as the server's JGET key path
// replies it. ok is false when the key is absent or expired, is not a json
// key, has no content yet (only its marker arrived), or holds no value at
// path. err, when the document is there, is the server's error for a
// malformed path or one that goes through a value that is not the
// container it needs.
func (st *Store) JGet(key, path string) (text []byte, ok bool, err error) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	e := st.keys[key]
	if e == nil || e.typ != TypeJSON || e.json == nil || e.expireAt > 0 && e.expireAt <= st.nowMs() {
		return nil, false, nil
	}
	return recsync.JSONAt(e.json, path)
}

// applyStream applies a stream effect (sync/TYPES.md) to key with the
// server's semantics: a key of another type is replaced by the stream the
// effect creates, and one that creates none (XTRIM of a missing key)
// changes nothing. An effect that does not fit the local stream is not
// understood; it may have changed part of the stream, which the caller
// should then re-subscribe to.
func (st *Store) applyStream(key string, args [][]byte) ([]string, bool) {
	e := st.live(key)
	var cur *Stream
	if e != nil && e.typ == TypeStream {
		cur = e.stream
	}
	s, err := ApplyStreamEffect(cur, args, st.nowMs())
	if s != nil && s != cur {
		exp := int64(0)
		if e != nil && e.typ == TypeStream {
			exp = e.expireAt
		}
		e = newEntry(TypeStream)
		e.stream, e.expireAt = s, exp
		st.keys[key] = e
	}
	if err != nil {
		return nil, false
	}
	if s == nil {
		return nil, true
	}
	return []string{key}, true
}

// XRange returns key's entries with ids from start to end inclusive
// (MinStreamID and MaxStreamID for "-" and "+"), at most count of them (0
// or less: all), as XRANGE replies them; XRevRange's order when rev is
// set. ok is false when the key is absent or expired, is not a stream, or
// its content has not arrived yet. The entries are copies.
func (st *Store) XRange(key string, start, end StreamID, count int, rev bool) (entries []StreamEntry, ok bool) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	s := st.streamLocked(key)
	if s == nil {
		return nil, false
	}
	entries = s.Range(start, end, count, rev)
	for i := range entries {
		entries[i].Fields = cloneFields(entries[i].Fields)
	}
	return entries, true
}

// XLen returns the number of entries of key's stream, 0 when it has none
// (XLEN).
func (st *Store) XLen(key string) int {
	st.mu.RLock()
	defer st.mu.RUnlock()
	if s := st.streamLocked(key); s != nil {
		return s.Len()
	}
	return 0
}

// Stream returns a copy of key's stream: entries, counters, consumer
// groups, consumers and pending entries (what XINFO STREAM FULL and
// XPENDING report, idle times aside). ok is false as for XRange.
func (st *Store) Stream(key string) (s *Stream, ok bool) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	if s := st.streamLocked(key); s != nil {
		return s.Clone(), true
	}
	return nil, false
}

// streamLocked returns key's live stream, nil when it has none. The caller
// holds the lock.
func (st *Store) streamLocked(key string) *Stream {
	e := st.keys[key]
	if e == nil || e.typ != TypeStream || e.expireAt > 0 && e.expireAt <= st.nowMs() {
		return nil
	}
	return e.stream
}
