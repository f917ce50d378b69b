package keyspace

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"sync/atomic"
)

// Used memory.
//
// Every entry in a shard's map counts its estimated size in the shard's
// used bytes and in the keyspace's total (Used), maintained as entries come
// and go (Set, Load, ReplaceString, Delete, expiry, Clear, Swap) and as
// they change in place (Account, which the server calls on every key a
// write command touched). The figure is an estimate of what the Go heap
// holds for the entry, not a reading of the heap: it follows the dataset
// exactly, so what eviction removes is what it frees, and it is not moved
// by garbage waiting for the collector.
//
// The estimate (SizeOf) is the allocations the entry makes, each rounded
// up as the allocator's size classes round it (the Entry with its key and
// inline value, a value's buffer of its own or the value's MemoryUsage,
// the table slot of the key and the map slot of its expiry), times
// heapFactor: the collector lets the heap
// grow past the live data before it runs (GOGC=50, recached's setting),
// and the resident memory a key costs includes that share. heapFactor is
// calibrated so that Used grows as the process's RSS grows while keys are
// added (README, "Memory").

// heapFactor is the resident bytes per estimated live byte: measured
// while a million keys of 16 or 100 bytes were added to recached under
// GOGC=50 (README, "Memory"), RSS grew by 1.05x the allocations counted
// here, for the collector's headroom and the allocator's partly filled
// spans. Under eviction, garbage piles up faster; the Go memory limit that
// follows maxmemory (cmd/recached) keeps the process near it.
const heapFactor = 1.1

// mapSlot is a swiss-table slot of the expiry map, map[string]int64 (a
// 16-byte string header, 8 bytes of value, a control byte) divided by the
// tables' typical load.
const mapSlot = 36

// tableSlot is a slot of a shard's table (table.go), 9 bytes, divided by
// its typical load.
const tableSlot = 13

// allocSize rounds n up roughly as Go's size classes do: to 8 or 16 bytes
// below 128, then to an eighth of the power of two below it.
func allocSize(n int) int64 {
	switch {
	case n <= 0:
		return 0
	case n <= 8:
		return 8
	case n <= 128:
		return int64(n+15) &^ 15
	}
	step := 1 << (bits.Len(uint(n)) - 4)
	return int64(n+step-1) &^ int64(step-1)
}

// SizeOf estimates the resident bytes the entry of key takes, as used
// memory counts it.
func SizeOf(e *Entry) int64 {
	n := tableSlot + e.allocBytes()
	if e.flags&flagExpires != 0 {
		n += mapSlot
	}
	switch o := e.Obj.(type) {
	case nil:
		if !e.inlineStr() {
			n += allocSize(cap(e.Str))
		}
	case *Stream:
		n += o.sizeEstimate()
	default:
		n += o.MemoryUsage()
	}
	return int64(float64(n) * heapFactor)
}

// sizeEstimate is Stream.MemoryUsage in O(nodes' fields + groups)
// instead of O(nodes): every node is taken to be the mean of the first and
// the last, so that accounting an XADD to a long stream stays cheap.
func (s *Stream) sizeEstimate() int64 {
	node := func(nd *streamNode) int64 {
		n := 96 + int64(cap(nd.data))
		for _, f := range nd.fields {
			n += 24 + int64(cap(f))
		}
		return n
	}
	n := int64(96)
	if k := len(s.nodes); k > 0 {
		n += (node(s.nodes[0]) + node(s.nodes[k-1])) / 2 * int64(k)
	}
	for _, g := range s.groups {
		n += 96 + int64(len(g.Name)) + int64(g.pel.Len())*(48+16)
		for _, c := range g.consumers {
			n += 64 + int64(len(c.Name)) + int64(c.pel.Len())*8
		}
	}
	return n
}

// encodeSize packs a size into 16 bits: a 5-bit exponent e and an 11-bit
// mantissa m standing for m<<e, rounded up, so that a size up to 4 TB is
// kept within 0.1%. What a shard counts is always the decoded value, so
// its sums stay exact.
func encodeSize(n int64) uint16 {
	if n < 1<<11 {
		return uint16(max(n, 0))
	}
	e := bits.Len64(uint64(n)) - 11
	m := (uint64(n) + 1<<e - 1) >> e
	if m == 1<<11 {
		m >>= 1
		e++
	}
	if e > 31 {
		return math.MaxUint16
	}
	return uint16(e)<<11 | uint16(m)
}

// decodeSize is encodeSize's inverse.
func decodeSize(v uint16) int64 { return int64(v&(1<<11-1)) << (v >> 11) }

// Used returns the used memory of the whole keyspace: the sum of every
// entry's size.
func (ks *Keyspace) Used() int64 {
	var n int64
	for i := range ks.usedByDB {
		n += ks.usedByDB[i].Load()
	}
	return n
}

// UsedAll returns the used memory of the database, every shard's.
func (db *DB) UsedAll() int64 { return db.used.Load() }

// SizeOfEntry returns what the entry counts in the used memory now.
func SizeOfEntry(e *Entry) int64 { return decodeSize(e.size) }

// admit counts a new entry of shard s and stamps its access time; old,
// when not nil, is the entry it replaces (already released), whose LFU
// counter it inherits as Redis's dbOverwrite keeps it.
func (db *DB) admit(s *Shard, e *Entry, old *Entry) {
	e.Atime = db.ks.clock.Load()
	e.freq = lfuInitVal
	if old != nil && db.ks.lfu.on.Load() {
		e.freq = old.freq
	}
	e.size = 0
	db.account(s, e)
}

// account brings the entry's counted size up to date.
func (db *DB) account(s *Shard, e *Entry) {
	v := encodeSize(SizeOf(e))
	if v == e.size {
		return
	}
	d := decodeSize(v) - decodeSize(e.size)
	e.size = v
	s.used += d
	db.used.Add(d)
}

// release uncounts an entry leaving shard s.
func (db *DB) release(s *Shard, e *Entry) {
	if e == nil || e.size == 0 {
		return
	}
	d := decodeSize(e.size)
	e.size = 0
	s.used -= d
	db.used.Add(-d)
}

// Account brings the used memory of key up to date after a write changed
// its value in place, and returns the entry's size (0 when the key does
// not exist). The caller holds the key's shard lock.
func (db *DB) Account(key []byte) int64 {
	s, h := db.locate(key)
	e := s.t.get(bytesView(key), h)
	if e == nil {
		return 0
	}
	db.account(s, e)
	return decodeSize(e.size)
}

// AccountIn is Account for e, the live entry of a key of shard i (which
// ShardOfHash names): it counts the size of a value a write changed in
// place without looking the key up again. The size is O(1) to compute for
// every type (SizeOf). The caller holds shard i's lock and has not
// deleted the key since its lookup.
func (db *DB) AccountIn(i int, e *Entry) { db.account(&db.shards[i], e) }

// Used returns the used memory of shard i. The caller holds its lock.
func (db *DB) Used(i int) int64 { return db.shards[i].used }

// Sample calls fn for up to n keys of shard i, which the caller has
// locked, read from a random place of its table: of every key, or with
// volatile of the keys with a time to live (from a random place of the
// expiry map, where Go starts each walk), with their expiry (0 for none).
// Consecutive keys from there are a sample as Redis's dictGetSomeKeys
// takes one. It returns how many keys it passed to fn. A key passed to fn
// is valid only until fn returns (it shares its entry's bytes, which an
// eviction may recycle): fn copies it to keep it.
//
// Reading a sampled entry is a cache miss: the entries are taken from the
// table first, then read in a loop of independent loads that the
// processor overlaps, and only then passed to fn, instead of paying each
// miss in turn between the steps of the walk.
func (db *DB) Sample(i int, volatile bool, n int, fn func(key string, e *Entry, at int64)) int {
	s := &db.shards[i]
	var buf [sampleBatch]sampled
	total := 0
	for total < n {
		got := db.sampleKeys(s, volatile, buf[:min(n-total, sampleBatch)])
		for j := range buf[:got] {
			c := &buf[j]
			c.flags = c.e.flags
			c.key = c.e.key()
		}
		for j := range buf[:got] {
			c := &buf[j]
			if !volatile && c.flags&flagExpires != 0 {
				c.at = s.exp[c.key]
			}
			fn(c.key, c.e, c.at)
			*c = sampled{}
		}
		total += got
		if got < sampleBatch {
			break
		}
	}
	return total
}

// sampleBatch is how many keys Sample takes from a map at a time.
const sampleBatch = 32

// sampled is an entry Sample took, with its key and flags once read.
type sampled struct {
	key   string
	e     *Entry
	at    int64
	flags uint8
}

// sampleKeys fills buf with entries of s from a random place of its table
// (with volatile, keys of its expiry map) without reading the entries,
// and returns how many it took.
func (db *DB) sampleKeys(s *Shard, volatile bool, buf []sampled) int {
	got := 0
	if volatile {
		for k, at := range s.exp {
			if got == len(buf) {
				break
			}
			if e := s.t.get(k, db.hashString(k)); e != nil {
				buf[got] = sampled{key: k, e: e, at: at}
				got++
			}
		}
		return got
	}
	s.t.each(true, func(e *Entry) bool {
		buf[got] = sampled{e: e}
		got++
		return got < len(buf)
	})
	return got
}

// Evict removes key from shard i, which the caller has locked, whatever
// its expiry, unless keep (when not nil) holds its entry back, and reports
// whether it did. The server turns it into a DEL effect. The entry may be
// recycled (entry.go), so the caller must not keep it.
func (db *DB) Evict(i int, key []byte, keep func(e *Entry) bool) bool {
	s := &db.shards[i]
	j := s.t.find(bytesView(key), db.hashString(bytesView(key)))
	if j < 0 {
		return false
	}
	e := s.t.at(j)
	if keep != nil && keep(e) {
		return false
	}
	db.release(s, e)
	s.t.remove(j, db.ks.seed)
	if e.flags&flagExpires != 0 {
		delete(s.exp, bytesView(key))
	}
	db.ks.spare.put(e)
	if !db.ks.recycling.Load() {
		db.ks.recycling.Store(true)
	}
	return true
}

// LFU: Redis's logarithmic access counter. A new key starts at
// lfuInitVal so that it is not evicted before it had a chance to be used;
// each access increments the counter with a probability that falls as it
// grows (lfu-log-factor), and each lfu-decay-time minutes without access
// take one from it.

// lfuInitVal is Redis's LFU_INIT_VAL.
const lfuInitVal = 5

// lfuConfig is the LFU settings, read on every access.
type lfuConfig struct {
	on        atomic.Bool
	logFactor atomic.Int32
	decay     atomic.Int32 // minutes per decrement; 0 never decays
}

// SetLFU turns access-frequency counting on or off (it is on under the
// allkeys-lfu and volatile-lfu policies) and sets lfu-log-factor and
// lfu-decay-time.
func (ks *Keyspace) SetLFU(on bool, logFactor, decayMinutes int) {
	ks.lfu.logFactor.Store(int32(logFactor))
	ks.lfu.decay.Store(int32(decayMinutes))
	ks.lfu.on.Store(on)
}

// touch records an access to e.
func (ks *Keyspace) touch(e *Entry) {
	now := ks.clock.Load()
	if ks.lfu.on.Load() {
		e.freq = ks.lfuIncr(ks.lfuDecayed(e, now))
	}
	e.Atime = now
}

// Touch records an access to e as a lookup does (TOUCH, RESTORE's
// IDLETIME and FREQ set these afterwards).
func (ks *Keyspace) Touch(e *Entry) { ks.touch(e) }

// lfuDecayed returns e's counter less one per lfu-decay-time minutes since
// its last access, as Redis's LFUDecrAndReturn.
func (ks *Keyspace) lfuDecayed(e *Entry, now uint32) uint8 {
	c := e.freq
	d := ks.lfu.decay.Load()
	if d <= 0 {
		return c
	}
	periods := (now - e.Atime) / 6000 / uint32(d)
	if periods >= uint32(c) {
		return 0
	}
	return c - uint8(periods)
}

// lfuIncr is Redis's LFULogIncr: one more with probability
// 1/((c-lfuInitVal)*lfu-log-factor+1).
func (ks *Keyspace) lfuIncr(c uint8) uint8 {
	if c == 255 {
		return c
	}
	base := float64(c) - lfuInitVal
	if base < 0 {
		base = 0
	}
	if rand.Float64() < 1/(base*float64(ks.lfu.logFactor.Load())+1) {
		c++
	}
	return c
}

// Freq returns e's LFU counter as of now, decayed, without counting an
// access (OBJECT FREQ).
func (ks *Keyspace) Freq(e *Entry) uint8 { return ks.lfuDecayed(e, ks.clock.Load()) }

// SetFreq sets e's LFU counter (RESTORE … FREQ).
func (ks *Keyspace) SetFreq(e *Entry, f uint8) { e.freq = f }

// Idle returns how long e has not been accessed, in hundredths of a
// second.
func (ks *Keyspace) Idle(e *Entry) uint32 { return ks.clock.Load() - e.Atime }

// SetIdle backdates e's last access by idle tenths of a second (RESTORE
// … IDLETIME), at most half the clock's range (248 days).
func (ks *Keyspace) SetIdle(e *Entry, idle uint32) {
	e.Atime = ks.clock.Load() - uint32(min(uint64(idle)*10, 1<<31))
}

// FreeEffort is how many allocations freeing e's value takes, as Redis's
// lazyfreeGetFreeEffort counts them: a hash table's or skip list's
// elements, a list's nodes, a stream's nodes plus, per consumer group,
// one and the first group's pending entries; 1 for a string or a compact
// encoding.
// Redis frees a value off its event loop (lazyfreed_objects) when the
// effort is over 64.
func FreeEffort(e *Entry) int {
	switch o := e.Obj.(type) {
	case *List:
		return max(len(o.nodes), 1)
	case *Set:
		if o.Encoding() == "hashtable" {
			return o.Len()
		}
	case *Hash:
		if o.Encoding() == "hashtable" {
			return o.Len()
		}
	case *ZSet:
		if o.Encoding() == "skiplist" {
			return o.Len()
		}
	case *Stream:
		n := len(o.nodes)
		if len(o.groups) > 0 {
			n += len(o.groups) * (1 + o.groups[0].pel.Len())
		}
		return n
	}
	return 1
}
