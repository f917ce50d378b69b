package server

import (
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
	lua "github.com/yuin/gopher-lua"
)

// maxmemory and eviction, as Redis does them (evict.c).
//
// used memory is the keyspace's count of its entries' estimated sizes
// (keyspace/memory.go) plus usedBase for the server's own structures: the
// figure INFO's used_memory shows, MEMORY USAGE reads key by key, and
// eviction compares with maxmemory. Before every command, when maxmemory is
// set and used memory is over it, the policy's keys are evicted until it is
// under again, for at most the time maxmemory-eviction-tenacity allows
// (then the server goes on evicting in the background and the command
// runs). When nothing can be evicted (noeviction, or no key the policy may
// take), commands that may grow memory (denyoom) are refused with -OOM.
//
// The LRU, LFU and TTL policies sample maxmemory-samples keys of each
// database per round into a pool of the 16 best candidates kept across
// calls, and evict the best; the random policies evict a random key. Every
// evicted key is a DEL effect through the one effect publisher (the log,
// sync pushes, WATCH), an "evicted" keyspace event and one evicted_keys.

// usedBase is what used memory counts besides the keyspace: the command
// table, the empty databases and the runtime, about what an empty server's
// heap holds.
const usedBase = 1 << 20

// evictPoolSize is Redis's EVPOOL_SIZE.
const evictPoolSize = 16

// The maxmemory policies, in maxmemory-policy's words.
const (
	policyNoEviction = iota
	policyAllKeysLRU
	policyAllKeysLFU
	policyAllKeysRandom
	policyVolatileLRU
	policyVolatileLFU
	policyVolatileRandom
	policyVolatileTTL
)

var policyNames = [...]string{"noeviction", "allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"}

func policyByName(name string) int {
	for i, n := range policyNames {
		if n == name {
			return i
		}
	}
	return policyNoEviction
}

func policyVolatile(p int) bool { return p >= policyVolatileLRU }
func policyLFU(p int) bool      { return p == policyAllKeysLFU || p == policyVolatileLFU }

// errOOM is Redis's reply to a denyoom command when memory cannot be
// freed.
const errOOM = "OOM command not allowed when used memory > 'maxmemory'."

// memoryState is the server's maxmemory settings and eviction state.
type memoryState struct {
	limit    atomic.Uint64 // maxmemory; 0 is no limit
	policy   atomic.Int32
	samples  atomic.Int32
	tenacity atomic.Int32
	evicted  atomic.Int64 // evicted_keys
	// lazyFreed is lazyfreed_objects; lazyUserDel and lazyUserFlush are
	// lazyfree-lazy-user-del and -flush (lazyfree.go).
	lazyFreed     atomic.Int64
	lazyUserDel   atomic.Bool
	lazyUserFlush atomic.Bool
	peak          atomic.Int64 // used_memory_peak
	// onLimit, when set (by main), hears of every new maxmemory: it makes
	// the Go runtime's memory limit follow it.
	onLimit func(limit uint64)

	mu     sync.Mutex // one eviction at a time; guards what follows
	pool   [evictPoolSize]candidate
	n      int // candidates in pool, best last
	nextDB int // the random policies' next database
	// fills counts evictions since the pool was last filled.
	fills int
	// eff and args are evictKey's effect, and key the key evictRandom
	// evicts, reused.
	eff  Effect
	args [2][]byte
	key  []byte
}

// poolRefill is how many evictions one filling of the pool serves: each
// filling samples poolRefill*maxmemory-samples keys of a database, so that
// on average an eviction samples maxmemory-samples keys as in Redis, while
// the cost of starting a walk of a map (most of a sample's cost in Go) is
// paid once per poolRefill evictions.
const poolRefill = 4

// candidate is a key of the eviction pool: its score (higher is evicted
// first), and its access time when sampled (a key used since is skipped).
// key is a copy, in a buffer the pool reuses: the keyspace recycles the
// entries it evicts, bytes of their keys included.
type candidate struct {
	score uint64
	db    int
	shard int
	atime uint32
	key   []byte
}

// initMemory sets the eviction defaults and the configuration's maxmemory
// and policy.
func (srv *Server) initMemory() {
	m := &srv.mem
	m.samples.Store(5)
	m.tenacity.Store(10)
	m.policy.Store(int32(policyByName(srv.cfg.MaxMemoryPolicy)))
	m.limit.Store(srv.cfg.MaxMemory)
	srv.ks.SetLFU(policyLFU(int(m.policy.Load())), 10, 1)
}

// SetMemoryLimitHook installs fn to hear of every maxmemory, the current
// one at once: cmd/recached makes the Go runtime's memory limit follow it
// (debug.SetMemoryLimit is process-wide, so the engine does not call it).
func (srv *Server) SetMemoryLimitHook(fn func(limit uint64)) {
	srv.cfgMu.Lock()
	srv.mem.onLimit = fn
	srv.cfgMu.Unlock()
	fn(srv.mem.limit.Load())
}

// UsedMemory is used_memory: usedBase plus every entry's size.
func (srv *Server) UsedMemory() uint64 { return uint64(usedBase + srv.ks.Used()) }

// applyMaxMemory makes CONFIG SET maxmemory take effect: the limit is set
// and, as in Redis, keys are evicted at once when the dataset is over it.
// The caller holds cfgMu.
func (srv *Server) applyMaxMemory() {
	srv.mem.limit.Store(srv.cfg.MaxMemory)
	if srv.mem.onLimit != nil {
		srv.mem.onLimit(srv.cfg.MaxMemory)
	}
	srv.performEvictions()
}

// applyPolicy makes CONFIG SET maxmemory-policy take effect.
func (srv *Server) applyPolicy() {
	p := policyByName(srv.cfg.MaxMemoryPolicy)
	srv.mem.mu.Lock()
	srv.mem.n = 0 // the pool's scores were the old policy's
	srv.mem.policy.Store(int32(p))
	srv.mem.mu.Unlock()
	srv.ks.SetLFU(policyLFU(p), srv.lfuParam("lfu-log-factor", 10), srv.lfuParam("lfu-decay-time", 1))
}

// lfuParam reads an LFU parameter's current value. The caller holds cfgMu.
func (srv *Server) lfuParam(name string, def int) int {
	if v, ok := srv.params[name]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

// applyLFU makes CONFIG SET lfu-log-factor and lfu-decay-time take effect.
// The caller holds cfgMu, and the new value is in params.
func (srv *Server) applyLFU() {
	p := int(srv.mem.policy.Load())
	srv.ks.SetLFU(policyLFU(p), srv.lfuParam("lfu-log-factor", 10), srv.lfuParam("lfu-decay-time", 1))
}

// atoi32 reads a checked integer parameter's value.
func atoi32(v string) int32 {
	n, _ := resp.ParseInt(v)
	return int32(n)
}

// The results of performEvictions.
const (
	evictOK      = iota // used memory is within maxmemory
	evictRunning        // over, still evicting (in the background)
	evictFail           // over, and nothing the policy may evict
)

// evictionTimeLimit is how long one call may evict, from
// maxmemory-eviction-tenacity as Redis's evictionTimeLimitUs: 50 us per
// step up to 10, then 15% more per step, no limit at 100.
func evictionTimeLimit(tenacity int) time.Duration {
	switch {
	case tenacity <= 10:
		return time.Duration(50*tenacity) * time.Microsecond
	case tenacity < 100:
		return time.Duration(500*math.Pow(1.15, float64(tenacity-10))) * time.Microsecond
	}
	return time.Duration(math.MaxInt64)
}

// performEvictions evicts keys while used memory is over maxmemory, for at
// most the tenacity's time, as Redis's performEvictions. It takes shard
// locks one at a time, so the caller must hold none.
func (srv *Server) performEvictions() int {
	m := &srv.mem
	limit := m.limit.Load()
	if limit == 0 {
		return evictOK
	}
	// Used memory is a sum over the databases: read once a step.
	used := srv.ks.Used()
	if uint64(usedBase+used) <= limit {
		return evictOK
	}
	policy := int(m.policy.Load())
	if policy == policyNoEviction {
		return evictFail
	}
	if !m.mu.TryLock() {
		// Another session is evicting; this command does not wait.
		return evictRunning
	}
	defer m.mu.Unlock()
	budget := evictionTimeLimit(int(m.tenacity.Load()))
	// Most calls evict a key or two: the clock is read from the 16th on,
	// so the time limit counts from there.
	var start time.Time
	for n := 1; uint64(usedBase+used) > limit; n++ {
		if used == 0 || !srv.evictOne(policy) {
			return evictFail
		}
		switch {
		case n == 16:
			start = time.Now()
		case n%16 == 0 && time.Since(start) > budget:
			return evictRunning // the next command, or Run, goes on
		}
		used = srv.ks.Used()
	}
	return evictOK
}

// evictInBackground goes on evicting when memory is still over maxmemory
// with no command coming to do it (Redis's evictionTimeProc): Run calls it
// every tick, and it evicts for up to 10 ms in tenacity-sized slices.
func (srv *Server) evictInBackground() {
	start := time.Now()
	for srv.performEvictions() == evictRunning && time.Since(start) < 10*time.Millisecond {
	}
	srv.Commit()
}

// evictOne evicts one key the policy picks and reports whether there was
// one. The caller holds mem.mu.
func (srv *Server) evictOne(policy int) bool {
	if policy == policyAllKeysRandom || policy == policyVolatileRandom {
		return srv.evictRandom(policyVolatile(policy))
	}
	m := &srv.mem
	for round := 0; round < 64; round++ {
		if m.n == 0 || m.fills >= poolRefill {
			m.fills = 0
			if srv.populatePool(policy) == 0 && m.n == 0 {
				return false
			}
		}
		m.fills++
		for m.n > 0 {
			m.n--
			// The candidate stays in place, its key buffer kept for
			// the next poolInsert.
			if srv.evictCandidate(&m.pool[m.n], policy) {
				return true
			}
		}
	}
	return false
}

// populatePool samples maxmemory-samples keys of one shard of every
// database into the pool, as Redis's evictionPoolPopulate samples each
// database, and returns how many keys it looked at.
func (srv *Server) populatePool(policy int) int {
	samples := int(srv.mem.samples.Load()) * poolRefill
	volatile := policyVolatile(policy)
	total := 0
	for _, db := range srv.ks.DBs {
		if db.UsedAll() == 0 {
			continue
		}
		start := rand.IntN(keyspace.NumShards)
		for j := 0; j < keyspace.NumShards; j++ {
			i := (start + j) % keyspace.NumShards
			sh := db.Shard(i)
			sh.Lock()
			n := db.Sample(i, volatile, samples, func(k string, e *keyspace.Entry, at int64) {
				srv.poolInsert(srv.score(policy, e, at), db.Index, i, e.Atime, k)
			})
			sh.Unlock()
			if n > 0 {
				total += n
				break
			}
		}
	}
	return total
}

// score is how much a key deserves eviction under the policy: its idle
// time (LRU), 255 less its access frequency (LFU), or how soon it expires
// (TTL).
func (srv *Server) score(policy int, e *keyspace.Entry, at int64) uint64 {
	switch policy {
	case policyAllKeysLFU, policyVolatileLFU:
		return 255 - uint64(srv.ks.Freq(e))
	case policyVolatileTTL:
		return math.MaxUint64 - uint64(at)
	}
	return uint64(srv.ks.Idle(e))
}

// poolInsert adds a candidate in score order, best last, dropping the
// worst when the pool is full; its key is copied into the buffer of the
// slot that falls out of the pool. A key sampled twice may sit in the
// pool twice, as in Redis: the second copy finds it gone and is skipped.
func (srv *Server) poolInsert(score uint64, db, shard int, atime uint32, key string) {
	m := &srv.mem
	k := 0
	for k < m.n && m.pool[k].score < score {
		k++
	}
	var buf []byte
	switch {
	case m.n < evictPoolSize:
		buf = m.pool[m.n].key
		copy(m.pool[k+1:m.n+1], m.pool[k:m.n])
		m.n++
	case k == 0:
		return // worse than every candidate of a full pool
	default:
		// Drop the worst (first) to make room below k.
		k--
		buf = m.pool[0].key
		copy(m.pool[:k], m.pool[1:k+1])
	}
	m.pool[k] = candidate{score: score, db: db, shard: shard, atime: atime, key: append(buf[:0], key...)}
}

// evictCandidate evicts a pool candidate if it is still there, still
// fits the policy (a volatile policy needs its time to live) and was not
// used since it was sampled.
func (srv *Server) evictCandidate(c *candidate, policy int) bool {
	db := srv.ks.DBs[c.db]
	sh := db.Shard(c.shard)
	sh.Lock()
	defer sh.Unlock()
	volatile := policyVolatile(policy)
	return srv.evictKey(db, c.shard, c.key, func(e *keyspace.Entry) bool {
		return e.Atime != c.atime || (volatile && !e.HasExpiry())
	})
}

// evictRandom evicts a random key (with a time to live when volatile) of
// the next database that has one.
func (srv *Server) evictRandom(volatile bool) bool {
	m := &srv.mem
	for d := 0; d < len(srv.ks.DBs); d++ {
		db := srv.ks.DBs[m.nextDB]
		m.nextDB = (m.nextDB + 1) % len(srv.ks.DBs)
		if db.UsedAll() == 0 {
			continue
		}
		start := rand.IntN(keyspace.NumShards)
		for j := 0; j < keyspace.NumShards; j++ {
			i := (start + j) % keyspace.NumShards
			sh := db.Shard(i)
			sh.Lock()
			if db.Sample(i, volatile, 1, func(k string, _ *keyspace.Entry, _ int64) { m.key = append(m.key[:0], k...) }) > 0 {
				srv.evictKey(db, i, m.key, nil)
				sh.Unlock()
				return true
			}
			sh.Unlock()
		}
	}
	return false
}

// evictKey removes key from shard i of db, which the caller has locked,
// unless keep holds it back (DB.Evict), and reports it: a DEL effect, the
// "evicted" event, evicted_keys. key is the caller's copy, not the
// entry's bytes, which the keyspace may recycle. The caller holds mem.mu,
// which guards the reused effect.
func (srv *Server) evictKey(db *keyspace.DB, i int, key []byte, keep func(*keyspace.Entry) bool) bool {
	if !db.Evict(i, key, keep) {
		return false
	}
	m := &srv.mem
	m.evicted.Add(1)
	m.args = [2][]byte{bDEL, key}
	m.eff = Effect{Kind: EffectExpired, DB: db.Index, Key: key, Args: m.args[:]}
	srv.publish(&m.eff)
	srv.notifyServer(notifyEvicted, "evicted", db.Index, key)
	return true
}

// admitMemory runs before a command when maxmemory is set: it evicts as
// needed and refuses, with -OOM, a command that may grow memory when
// nothing could be evicted, as Redis's processCommand does. Inside MULTI
// every command but EXEC, DISCARD, QUIT and RESET counts as growing memory
// (queueing takes memory); EXEC is refused when a queued command is
// denyoom. It records the result for scripts (s.oom): a script without
// allow-oom may not run a denyoom command as its first write.
func (s *Session) admitMemory(cmd *Command) bool {
	oom := s.srv.performEvictions() == evictFail
	s.oom = oom
	if !oom {
		return true
	}
	cmd, _ = s.wrapped(cmd, s.Args)
	deny := cmd.Flags&FlagDenyOOM != 0
	switch cmd.Name {
	case "exec":
		if s.multi != nil {
			for _, q := range s.multi.cmds {
				deny = deny || q.cmd.Flags&FlagDenyOOM != 0
			}
		}
		if deny {
			s.abortExec(cmd, errOOM)
			return false
		}
	case "discard", "quit", "reset":
	default:
		deny = deny || s.multi != nil
	}
	if deny {
		s.reject(cmd, errOOM)
		return false
	}
	return true
}

// scriptOOM reports whether a script that declared flags must be refused
// before it runs: out of memory, without allow-oom or no-writes (Redis
// makes such an EVAL or FCALL denyoom).
func (s *Session) scriptOOM(flags scriptFlags) bool {
	return s.oom && s.srv.mem.limit.Load() != 0 && flags&(scriptAllowOOM|scriptNoWrites) == 0
}

// memoryTick is Run's maxmemory work every tick: used_memory_peak and
// background eviction.
func (srv *Server) memoryTick() {
	if srv.mem.limit.Load() != 0 && srv.UsedMemory() > srv.mem.limit.Load() {
		srv.evictInBackground()
	}
	srv.notePeak()
}

// notePeak records used_memory_peak.
func (srv *Server) notePeak() {
	u := int64(srv.UsedMemory())
	for {
		p := srv.mem.peak.Load()
		if u <= p || srv.mem.peak.CompareAndSwap(p, u) {
			return
		}
	}
}

// accountKeys brings the used memory of a write command's keys up to date
// after it ran: values change in place (HSET, LPUSH, APPEND), and the
// keyspace hears only of entries coming and going.
func (s *Session) accountKeys(cmd *Command) {
	db := s.srv.ks.DBs[s.DBIndex]
	s.acctKeys = cmd.KeyArgs(s.acctKeys[:0], s.Args)
	for _, k := range s.acctKeys {
		db.Account(k)
	}
}

// oomError is a script's denyoom call refused for memory (Redis's
// scriptVerifyOOM): a rejected call of the command, its error counted in
// INFO errorstats now and marked so that the script's reply of it does not
// count it again; raised by redis.call, returned by redis.pcall.
func (st *luaState) oomError(L *lua.LState, cmd *Command, raise bool) int {
	cmd.stats.rejected.Add(1)
	st.run.s.srv.countError([]byte("-" + errOOM + "\r\n"))
	t := L.NewTable()
	t.RawSetString("err", lua.LString(errOOM))
	t.RawSetString(errStatsCounted, lua.LTrue)
	if raise {
		L.Error(t, 0)
	}
	L.Push(t)
	return 1
}
