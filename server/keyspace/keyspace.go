// Package keyspace holds recached's data: numbered databases, each split into
// a fixed power-of-two number of shards with one lock per shard.
//
// Code that runs a command locks every shard the command's keys hash to
// before it touches them; the accessors here assume that and do no locking
// of their own. Lock order: see server/LOCKS.md.
package keyspace

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// NumShards is the number of shards per database, a power of two.
const NumShards = 64

// Type is a value's data type, as TYPE names it.
type Type uint8

// The data types. The numbering is internal; the snapshot format keeps its
// own append-only tags.
const (
	TypeString Type = iota
	TypeList
	TypeSet
	TypeZSet
	TypeHash
	TypeJSON
	TypeRateLimit
	TypeStream
)

var typeNames = [...]string{"string", "list", "set", "zset", "hash", "json", "ratelimit", "stream"}

// String returns the name TYPE replies with.
func (t Type) String() string { return typeNames[t] }

// Object is a non-string value: a hash, list, set, sorted set, ….
type Object interface {
	// Type reports the value's data type.
	Type() Type
	// MemoryUsage estimates the bytes the value occupies (SizeOf,
	// MEMORY USAGE).
	MemoryUsage() int64
}

// Entry is one key's value. A string value lives in Str with Obj nil; any
// other type lives in Obj. A stored entry holds its key too (entry.go):
// it is never copied by value, and the entry to keep using after Set is
// the one Set returns.
type Entry struct {
	Str []byte
	Obj Object
	// Atime is the last access in hundredths of a second since the
	// keyspace started (AccessClock): the LRU clock, and the LFU counter's
	// last decrement time. Set, Load and ReplaceString stamp new entries.
	Atime uint32
	flags uint8
	// freq is the LFU counter (Redis's 8-bit logarithmic counter), kept
	// only under an LFU policy (memory.go).
	freq uint8
	// size is what the entry counts in the used memory, encoded
	// (memory.go); 0 for an entry not in a map. Three fields share the
	// padding after Atime so that an Entry stays 48 bytes.
	size uint16
}

const (
	flagExpires = 1 << iota
	flagRaw     // a string changed in place (APPEND, SETRANGE, SETBIT, …)
	flagNoInt   // a string stored as text even when it reads as an integer
	flagInline  // the key follows the Entry in its allocation (entry.go)
	flagExtKey  // the key is in a string after the Entry (entry.go)
	// flagKeyShared marks an entry whose key string (which shares its
	// bytes) was handed out of the keyspace: it is never recycled
	// (entry.go).
	flagKeyShared
	// flagPacked marks an entry holding its key and a Set with its
	// intset, the key's length in the Str field (entry.go).
	flagPacked
)

// Type returns the entry's data type.
func (e *Entry) Type() Type {
	if e.Obj == nil {
		return TypeString
	}
	return e.Obj.Type()
}

// MarkRaw records that a string value was changed in place, which Redis
// stores in its "raw" encoding whatever the value.
func (e *Entry) MarkRaw() { e.flags |= flagRaw }

// MarkNoInt records that a string was stored as text (INCRBYFLOAT), which
// Redis keeps "embstr" even when it reads as an integer.
func (e *Entry) MarkNoInt() { e.flags |= flagNoInt }

// StrEncoding names a string value's encoding as Redis 7.0 would report it
// for the same history: "int", "embstr" or "raw".
func (e *Entry) StrEncoding(isInt func([]byte) bool) string {
	switch {
	case e.flags&flagRaw != 0:
		return "raw"
	case e.flags&flagNoInt == 0 && len(e.Str) <= 20 && isInt(e.Str):
		return "int"
	case len(e.Str) <= 44:
		return "embstr"
	}
	return "raw"
}

// HasExpiry reports whether the key has a time to live.
func (e *Entry) HasExpiry() bool { return e.flags&flagExpires != 0 }

// Shard is one lock's worth of keys.
type Shard struct {
	mu  sync.Mutex
	t   table
	exp map[string]int64 // absolute expiry in unix milliseconds
	// used is the sum of the shard's entry sizes (memory.go).
	used int64
}

// Lock locks the shard.
func (s *Shard) Lock() { s.mu.Lock() }

// Unlock unlocks the shard.
func (s *Shard) Unlock() { s.mu.Unlock() }

// DB is one numbered database.
type DB struct {
	Index int
	ks    *Keyspace
	// used is the sum of the shards' used (memory.go), the database's
	// element of the keyspace's usedByDB.
	used   *atomic.Int64
	shards [NumShards]Shard
}

// ExpireFunc is called, under the key's shard lock, when a key is found
// expired and deleted, so that the deletion becomes an effect like any write.
type ExpireFunc func(db int, key string)

// Keyspace is every database of one server.
type Keyspace struct {
	DBs      []*DB
	seed     maphash.Seed
	start    time.Time
	onExpire ExpireFunc
	// clock is AccessClock's hundredths of a second.
	clock atomic.Uint32
	// lfu is on under an LFU maxmemory policy, with its parameters
	// (memory.go).
	lfu lfuConfig
	// Now returns the current time in unix milliseconds; tests replace it.
	Now func() int64
	// hold keeps keys whose time to live has passed (HoldExpiry), and so
	// does replica (ReplicaExpiry).
	hold, replica atomic.Bool
	// hashLimits are the listpack thresholds of hashes (hash.go).
	hashLimits hashLimits
	// zsetLimits are those of sorted sets (zset.go).
	zsetLimits zsetLimits
	// usedByDB is every database's used, side by side so that Used,
	// which eviction reads before every command, reads a line or two.
	usedByDB []atomic.Int64
	// spare is the evicted entries kept for reuse, and recycling is set
	// once the first is kept (entry.go).
	spare     entryPools
	recycling atomic.Bool
}

// HoldExpiry makes lookups report keys whose time to live has passed as
// absent without deleting them, or ends that: the dataset stays as it is
// during CLIENT PAUSE, as in Redis, and the keys expire after it.
func (ks *Keyspace) HoldExpiry(on bool) { ks.hold.Store(on) }

// ReplicaExpiry is HoldExpiry for a replica, which does not expire keys
// itself: its master's DELs remove them (Delete). It is independent of
// HoldExpiry, which CLIENT PAUSE turns on and off.
func (ks *Keyspace) ReplicaExpiry(on bool) { ks.replica.Store(on) }

// held reports whether keys past their time to live stay in place.
func (ks *Keyspace) held() bool { return ks.hold.Load() || ks.replica.Load() }

// New returns a keyspace with n empty databases. onExpire, if not nil, hears
// of every key removed because its time to live ran out.
func New(n int, onExpire ExpireFunc) *Keyspace {
	ks := &Keyspace{
		seed:     maphash.MakeSeed(),
		start:    time.Now(),
		onExpire: onExpire,
		Now:      func() int64 { return time.Now().UnixMilli() },
	}
	ks.usedByDB = make([]atomic.Int64, n)
	for i := 0; i < n; i++ {
		db := &DB{Index: i, ks: ks, used: &ks.usedByDB[i]}
		for j := range db.shards {
			db.shards[j].exp = make(map[string]int64)
		}
		ks.DBs = append(ks.DBs, db)
	}
	return ks
}

// ShardOf returns the shard index of key.
func (ks *Keyspace) ShardOf(key []byte) int { return ShardOfHash(ks.Hash(key)) }

// Hash returns the hash of key that places it in its shard and in the
// shard's table, the same in every database. A caller that has locked the
// key's shard by it passes it to LookupHashed, so that the key is hashed
// once per command.
func (ks *Keyspace) Hash(key []byte) uint64 { return maphash.Bytes(ks.seed, key) }

// ShardOfHash returns the shard index of a key of hash h (Hash).
func ShardOfHash(h uint64) int { return int(h & (NumShards - 1)) }

// locate returns key's shard and hash.
func (db *DB) locate(key []byte) (*Shard, uint64) {
	h := db.ks.Hash(key)
	return &db.shards[ShardOfHash(h)], h
}

// hashString is the hash of key for the table of its shard.
func (db *DB) hashString(key string) uint64 { return maphash.String(db.ks.seed, key) }

// Clock returns seconds since the keyspace started, as of the last Tick.
// It is cheap enough to read on every request.
func (ks *Keyspace) Clock() uint32 { return ks.clock.Load() / 100 }

// AccessClock returns the clock entries' Atime holds: hundredths of a
// second since the keyspace started, as of the last Tick, fine enough for
// LRU eviction to tell apart keys written a moment apart. A uint32 of them
// lasts 497 days; idle times are differences, so only a key idle longer
// than that is misjudged (as fresh).
func (ks *Keyspace) AccessClock() uint32 { return ks.clock.Load() }

// Tick advances the clocks; the server calls it every 10 ms.
func (ks *Keyspace) Tick() { ks.clock.Store(uint32(time.Since(ks.start) / (10 * time.Millisecond))) }

// Shard returns shard i of the database.
func (db *DB) Shard(i int) *Shard { return &db.shards[i] }

func (db *DB) shardFor(key []byte) *Shard { return &db.shards[db.ks.ShardOf(key)] }

// Lookup returns the live entry of key, or nil. A key whose time to live has
// passed is deleted on the way (lazy expiry).
func (db *DB) Lookup(key []byte) *Entry {
	s, h := db.locate(key)
	e := db.lookupIn(s, key, h)
	if e != nil {
		db.ks.touch(e)
	}
	return e
}

// LookupHashed is Lookup for a key whose hash h (Hash) the caller has.
func (db *DB) LookupHashed(key []byte, h uint64) *Entry {
	e := db.lookupIn(&db.shards[ShardOfHash(h)], key, h)
	if e != nil {
		db.ks.touch(e)
	}
	return e
}

// LookupNoTouch is Lookup without updating the key's access time or
// frequency, as Redis's LOOKUP_NOTOUCH: TTL, TYPE and EXISTS do not count
// as uses of the key for OBJECT IDLETIME and eviction.
func (db *DB) LookupNoTouch(key []byte) *Entry {
	s, h := db.locate(key)
	return db.lookupIn(s, key, h)
}

// lookupIn is LookupNoTouch of key, of hash h, in its shard s.
func (db *DB) lookupIn(s *Shard, key []byte, h uint64) *Entry {
	i := s.t.find(bytesView(key), h)
	if i < 0 {
		return nil
	}
	e := s.t.at(i)
	if e.flags&flagExpires != 0 && s.exp[string(key)] <= db.ks.Now() {
		if !db.ks.held() {
			db.expireAt(s, i)
		}
		return nil
	}
	return e
}

// Peek is Lookup without deleting an expired key: it reports an expired key
// as absent. Read-only scans use it.
func (db *DB) Peek(key []byte) *Entry {
	s, h := db.locate(key)
	e := s.t.get(bytesView(key), h)
	if e == nil {
		return nil
	}
	if e.flags&flagExpires != 0 && s.exp[string(key)] <= db.ks.Now() {
		return nil
	}
	return e
}

// expireAt deletes the expired entry in slot i of s.
func (db *DB) expireAt(s *Shard, i int) {
	e := s.t.at(i)
	key := e.key()
	db.release(s, e)
	s.t.remove(i, db.ks.seed)
	delete(s.exp, key)
	if db.ks.onExpire != nil {
		db.ks.onExpire(db.Index, key)
	}
}

// Set stores e under key, replacing any value and clearing its expiry, and
// returns the entry stored: e itself when it already holds key, else a
// copy of it that does (entry.go), which the caller uses from then on.
func (db *DB) Set(key []byte, e *Entry) *Entry {
	s, h := db.locate(key)
	e = keyed(bytesView(key), e, false)
	e.flags &^= flagExpires
	if i := s.t.find(bytesView(key), h); i >= 0 {
		old := s.t.at(i)
		if old.flags&flagExpires != 0 {
			delete(s.exp, string(key))
		}
		if old != e {
			db.release(s, old)
			s.t.put(i, e)
			db.admit(s, e, old)
		} else {
			db.account(s, e)
		}
		return e
	}
	s.t.insert(e, h, db.ks.seed)
	db.admit(s, e, nil)
	return e
}

// SetObject stores obj, a new value of any type but string, under key
// (replacing what it held, without a time to live) and returns the entry,
// as Set does with a new Entry holding obj.
func (db *DB) SetObject(key []byte, obj Object) *Entry {
	e, _ := allocEntry(key, 0)
	e.Obj = obj
	return db.Set(key, e)
}

// AddSet stores a new empty set under key (replacing what it held,
// without a time to live) and returns it. The set is kept in its entry
// (entry.go): a set stored with SetObject or Set is not. When members, to
// be added next, are integers that make an intset of at most maxIntset
// values, its room for them is kept in the entry too (allocPacked).
func (db *DB) AddSet(key []byte, members [][]byte, maxIntset int) *Set {
	if e := allocPacked(key, intsetRoom(members, maxIntset)); e != nil {
		db.Set(key, e)
		return e.Obj.(*Set)
	}
	return addInside[Set](db, key)
}

// AddHash is AddSet for a hash.
func (db *DB) AddHash(key []byte) *Hash { return addInside[Hash](db, key) }

// AddZSet is AddSet for a sorted set.
func (db *DB) AddZSet(key []byte) *ZSet { return addInside[ZSet](db, key) }

// addInside stores a new empty value of type T under key, kept in its
// entry's Str field (entry.go), and returns it.
func addInside[T any, PT interface {
	*T
	Object
}](db *DB, key []byte) PT {
	e, _ := allocEntry(key, 0)
	v := PT((*T)(unsafe.Pointer(&e.Str)))
	e.Obj = v
	db.Set(key, e)
	return v
}

// Reserve sizes the empty shards of the database for about n keys in all,
// so that a loader filling it does not grow the tables step by step.
func (db *DB) Reserve(n int) {
	per := n/NumShards + n/NumShards/8 + 1
	for i := range db.shards {
		if t := &db.shards[i].t; t.n == 0 {
			t.reserve(per, db.ks.seed)
		}
	}
}

// Load stores e under key k, with expiry at (unix ms, 0 for none), for a
// loader filling an empty database. A key already there is overwritten
// uncounted and Load reports false, which a loader takes as a corrupt
// file (a duplicated key stops Redis's load too), so the database must
// then be discarded.
func (db *DB) Load(k string, e *Entry, at int64) bool {
	h := db.hashString(k)
	s := &db.shards[h&(NumShards-1)]
	e = keyed(k, e, true)
	e.embed()
	if i := s.t.find(k, h); i >= 0 {
		s.t.put(i, e)
		return false
	}
	s.t.insert(e, h, db.ks.seed)
	e.flags &^= flagExpires
	if at != 0 {
		e.flags |= flagExpires
		s.exp[e.key()] = at
	}
	db.admit(s, e, nil)
	return true
}

// SetString stores a string value under key, reusing the existing entry and
// its buffer when it has one. It keeps the time to live when keepTTL is set.
// The value is copied.
func (db *DB) SetString(key, val []byte, keepTTL bool) *Entry {
	s, h := db.locate(key)
	return db.ReplaceString(key, s.t.get(bytesView(key), h), val, keepTTL)
}

// ReplaceString is SetString for a caller that has just looked the key up:
// cur is its entry (nil when absent), which saves a second table lookup.
func (db *DB) ReplaceString(key []byte, cur *Entry, val []byte, keepTTL bool) *Entry {
	e := cur
	if e == nil {
		s, h := db.locate(key)
		e = db.ks.newStringEntry(key, val)
		if db.ks.held() && s.t.get(bytesView(key), h) != nil {
			// An expired key kept by HoldExpiry: replace it properly.
			return db.Set(key, e)
		}
		s.t.insert(e, h, db.ks.seed)
		db.admit(s, e, nil)
		return e
	}
	if e.flags&flagPacked != 0 {
		// Its Str field is taken (entry.go): a new entry.
		at, ok := db.Expiry(key)
		e = db.Set(key, db.ks.newStringEntry(key, val))
		if keepTTL && ok {
			db.SetExpiry(key, at)
		}
		return e
	}
	c, obj, exp := cap(e.Str), e.Obj, e.flags&flagExpires
	switch {
	case e.Obj == nil && cap(e.Str) >= len(val) && (cap(e.Str) <= 2*len(val)+16 || e.inlineStr()):
		e.Str = append(e.Str[:0], val...)
	case e.flags&flagInline != 0 && len(val) <= maxInline:
		// Back into the entry's own room when it has enough.
		if room := e.room(); cap(room) >= len(val) {
			e.Str = append(room, val...)
			break
		}
		fallthrough
	default:
		e.Str = append(make([]byte, 0, len(val)), val...)
	}
	e.Obj = nil
	e.flags &^= flagRaw | flagNoInt
	if !keepTTL && e.flags&flagExpires != 0 {
		e.flags &^= flagExpires
		delete(db.shardFor(key).exp, string(key))
	}
	if obj != nil || cap(e.Str) != c || e.flags&flagExpires != exp {
		db.account(db.shardFor(key), e)
	}
	return e
}

// Delete removes key and reports whether it existed (expired keys count as
// absent). A key past its time to live that a hold kept is removed too:
// on a replica that is the master's DEL of an expired key.
func (db *DB) Delete(key []byte) bool {
	live := db.Lookup(key) != nil
	s, h := db.locate(key)
	if i := s.t.find(bytesView(key), h); i >= 0 {
		db.release(s, s.t.at(i))
		s.t.remove(i, db.ks.seed)
		delete(s.exp, string(key))
	}
	return live
}

// SetExpiry sets key's absolute expiry (unix ms). The key must exist.
func (db *DB) SetExpiry(key []byte, at int64) {
	s, h := db.locate(key)
	e := s.t.get(bytesView(key), h)
	if e == nil {
		return
	}
	if e.flags&flagExpires == 0 {
		e.flags |= flagExpires
		db.account(s, e)
	}
	s.exp[e.key()] = at
}

// Persist removes key's time to live and reports whether it had one.
func (db *DB) Persist(key []byte) bool {
	s, h := db.locate(key)
	e := s.t.get(bytesView(key), h)
	if e == nil || e.flags&flagExpires == 0 {
		return false
	}
	e.flags &^= flagExpires
	delete(s.exp, string(key))
	db.account(s, e)
	return true
}

// Expiry returns key's absolute expiry in unix ms and whether it has one.
func (db *DB) Expiry(key []byte) (int64, bool) {
	s, h := db.locate(key)
	e := s.t.get(bytesView(key), h)
	if e == nil || e.flags&flagExpires == 0 {
		return 0, false
	}
	return s.exp[string(key)], true
}

// Len returns the number of keys in shard i, expired ones not yet removed
// included.
func (db *DB) Len(i int) int { return db.shards[i].t.n }

// Expires returns the number of keys with a time to live in shard i.
func (db *DB) Expires(i int) int { return len(db.shards[i].exp) }

// Range calls fn for every live key of shard i until fn returns false. fn
// may delete keys but not add any, and may keep the keys.
func (db *DB) Range(i int, fn func(key string, e *Entry) bool) {
	s := &db.shards[i]
	now := int64(0)
	s.t.each(false, func(e *Entry) bool {
		k := e.key()
		e.flags |= flagKeyShared
		if e.flags&flagExpires != 0 {
			if now == 0 {
				now = db.ks.Now()
			}
			if s.exp[k] <= now {
				return true
			}
		}
		return fn(k, e)
	})
}

// Keys returns the live keys of shard i in table order.
func (db *DB) Keys(i int) []string {
	var keys []string
	db.Range(i, func(k string, _ *Entry) bool {
		keys = append(keys, k)
		return true
	})
	return keys
}

// Clear empties shard i.
func (db *DB) Clear(i int) {
	db.used.Add(-db.shards[i].used)
	db.shards[i].used = 0
	db.shards[i].t = table{}
	db.shards[i].exp = make(map[string]int64)
}

// Swap exchanges the contents of two databases. The caller holds every
// shard lock of both.
func Swap(a, b *DB) {
	for i := range a.shards {
		a.shards[i].t, b.shards[i].t = b.shards[i].t, a.shards[i].t
		a.shards[i].exp, b.shards[i].exp = b.shards[i].exp, a.shards[i].exp
		a.shards[i].used, b.shards[i].used = b.shards[i].used, a.shards[i].used
	}
	u := a.used.Load()
	a.used.Store(b.used.Load())
	b.used.Store(u)
}

// ExpireSample deletes up to limit expired keys of shard i, which the caller
// has locked, and returns how many keys with a time to live it looked at and
// how many it deleted. It is the active half of expiry.
func (db *DB) ExpireSample(i, limit int) (seen, deleted int) {
	s := &db.shards[i]
	if len(s.exp) == 0 {
		return 0, 0
	}
	now := db.ks.Now()
	for k, at := range s.exp {
		if seen >= limit {
			break
		}
		seen++
		if at <= now {
			db.expireAt(s, s.t.find(k, db.hashString(k)))
			deleted++
		}
	}
	return seen, deleted
}
