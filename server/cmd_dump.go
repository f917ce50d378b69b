package server

import (
	"bufio"
	"errors"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
	"github.com/recached/recached/snapshot/rdb"
)

// DUMP and RESTORE speak Redis's payload format (package snapshot/rdb): a
// DUMP from redis-server RESTOREs here and the reverse.
func dumpCommands() []*Command {
	return []*Command{
		{Name: "dump", Arity: 2, Flags: FlagReadonly, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "2.6.0", Syntax: "key",
			Summary: "Returns a serialized representation of the value stored at a key.", Complexity: "O(1) to access the key and additional O(N*M) to serialize it, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1).",
			Categories: "keyspace read slow", Handler: cmdDump},
		{Name: "restore", Arity: -4, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", KeySpecs: "OW update", Since: "2.6.0",
			Syntax:  "key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]",
			Summary: "Creates a key from the serialized representation of a value.", Complexity: "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).",
			Categories: "keyspace write slow dangerous", Handler: cmdRestore},
		{Name: "migrate", Arity: -6, Flags: FlagWrite | FlagMovableKeys, FirstKey: 3, LastKey: 3, Step: 1, Keys: migrateKeys, Group: "generic", KeySpecs: "RW access delete; RW access delete incomplete", Since: "2.6.0",
			Syntax:  "host port key|\"\" destination-db timeout [COPY] [REPLACE] [AUTH password | AUTH2 username password] [KEYS key [key ...]]",
			Summary: "Atomically transfers a key from one Redis instance to another.", Complexity: "This command actually executes a DUMP+DEL in the source instance, and a RESTORE in the target instance. See the pages of these commands for time complexity. Also an O(N) data transfer between the two instances is performed.",
			Categories: "keyspace write slow dangerous", Handler: cmdMigrate},
	}
}

func cmdDump(s *Session) {
	e := s.db.Lookup(s.Args[1])
	if e == nil {
		s.W.Null()
		return
	}
	p, err := rdb.Dump(e)
	if err != nil {
		s.W.Error("ERR DUMP of a " + e.Type().String() + " value is not supported")
		return
	}
	s.W.Bulk(p)
}

// cmdRestore checks its arguments in Redis's order: options, then an
// existing key (BUSYKEY), the TTL, the payload's footer, its value.
func cmdRestore(s *Session) {
	key := s.Args[1]
	replace, absttl := false, false
	idle, freq := int64(-1), int64(-1)
	for j := 4; j < len(s.Args); j++ {
		more := j+1 < len(s.Args)
		switch a := s.Args[j]; {
		case resp.EqualFold(a, "replace"):
			replace = true
		case resp.EqualFold(a, "absttl"):
			absttl = true
		case resp.EqualFold(a, "idletime") && more && freq == -1:
			v, ok := resp.ParseInt(s.Args[j+1])
			if !ok {
				s.W.Error(errNotInt)
				return
			}
			if v < 0 {
				s.W.Error("ERR Invalid IDLETIME value, must be >= 0")
				return
			}
			idle = v
			j++
		case resp.EqualFold(a, "freq") && more && idle == -1:
			v, ok := resp.ParseInt(s.Args[j+1])
			if !ok {
				s.W.Error(errNotInt)
				return
			}
			if v < 0 || v > 255 {
				s.W.Error("ERR Invalid FREQ value, must be >= 0 and <= 255")
				return
			}
			freq = v
			j++
		default:
			s.W.Error(errSyntax)
			return
		}
	}
	if !replace && s.db.Lookup(key) != nil {
		s.W.Error("BUSYKEY Target key name already exists.")
		return
	}
	ttl, ok := resp.ParseInt(s.Args[2])
	if !ok {
		s.W.Error(errNotInt)
		return
	}
	if ttl < 0 {
		s.W.Error("ERR Invalid TTL value, must be >= 0")
		return
	}
	v, err := rdb.CheckPayload(s.Args[3])
	if err != nil {
		s.W.Error(err.Error())
		return
	}
	e, err := rdb.DecodeValue(v)
	if err != nil {
		s.W.Error("ERR Bad data format")
		return
	}
	s.srv.ks.FitEncoding(e)
	deleted := false
	if replace {
		deleted = s.db.Delete(key)
	}
	if ttl > 0 && !absttl {
		ttl += s.srv.ks.Now()
	}
	if ttl > 0 && ttl <= s.srv.ks.Now() {
		// Already expired: the key is only deleted, as in Redis.
		if deleted {
			s.emit(bDEL, key)
		}
		s.W.OK()
		if deleted {
			s.notify(notifyGeneric, "del", key)
		}
		return
	}
	e = s.db.Set(key, e)
	if ttl > 0 {
		s.db.SetExpiry(key, ttl)
	}
	ks := s.srv.ks
	if idle >= 0 {
		ks.SetIdle(e, uint32(min(idle, math.MaxUint32/20)*10)) // tenths of a second
	} else {
		ks.Touch(e)
	}
	if freq >= 0 {
		ks.SetFreq(e, uint8(freq))
	}
	s.emitRestored(key, e, ttl)
	s.W.OK()
	s.notify(notifyGeneric, "restore", key)
}

// emitRestored reports a restored key as the effects that re-create it:
// DEL, then the value built with the catalogue's verbs, then its expiry.
// A stream is re-created entry by entry, with its counters, groups,
// consumers and pending entries (consumers' seen times are the replay's).
func (s *Session) emitRestored(key []byte, e *keyspace.Entry, at int64) {
	s.emit(bDEL, key)
	b := func(v string) []byte { return []byte(v) }
	switch o := e.Obj.(type) {
	case nil:
		s.emit(bSET, key, e.Str)
	case *keyspace.List:
		eff := [][]byte{bRPUSH, key}
		o.Range(func(v []byte) bool { eff = append(eff, v); return true })
		s.emit(eff...)
	case *keyspace.Set:
		eff := [][]byte{bSADD, key}
		o.Range(func(v []byte) bool { eff = append(eff, append([]byte(nil), v...)); return true })
		s.emit(eff...)
	case *keyspace.Hash:
		eff := [][]byte{bHSET, key}
		o.Range(func(f, v []byte) bool { eff = append(eff, append([]byte(nil), f...), v); return true })
		s.emit(eff...)
	case *keyspace.ZSet:
		eff := [][]byte{bZADD, key}
		o.Range(func(m []byte, score float64) bool {
			var sc string
			switch {
			case math.IsInf(score, 1):
				sc = "+inf"
			case math.IsInf(score, -1):
				sc = "-inf"
			default:
				sc = strconv.FormatFloat(score, 'g', 17, 64)
			}
			eff = append(eff, b(sc), append([]byte(nil), m...))
			return true
		})
		s.emit(eff...)
	case *keyspace.Stream:
		s.emitStream(key, o)
	}
	if at > 0 {
		s.emit(bPEXPIREAT, key, s.itoa(at))
	}
}

// emitStream re-creates a stream: XADD of every entry (or of one entry
// deleted again when the stream is empty), XSETID with its counters, then
// every group, consumer and pending entry.
func (s *Session) emitStream(key []byte, st *keyspace.Stream) {
	id := func(x keyspace.StreamID) []byte { return []byte(x.String()) }
	n := 0
	st.Range(keyspace.StreamID{}, keyspace.MaxStreamID, false, func(x keyspace.StreamID, fv [][]byte) bool {
		eff := append([][]byte{bXADD, key, id(x)}, fv...)
		s.emit(eff...)
		n++
		return true
	})
	if n == 0 {
		s.emit(bXADD, key, id(st.LastID), bZero, bZero)
		s.emit(bXDEL, key, id(st.LastID))
	}
	s.emit(bXSETID, key, id(st.LastID), bENTRIESADDED, s.utoa(st.EntriesAdded), bMAXDELETEDID, id(st.MaxDeletedID))
	for _, g := range st.Groups() {
		s.emitKey(key, bXGROUP, bCREATE, key, g.Name, id(g.LastID), bENTRIESREAD, s.itoa(g.EntriesRead))
		for _, c := range g.Consumers() {
			s.emitKey(key, bXGROUP, bCREATECONSUMER, key, g.Name, c.Name)
		}
		for _, p := range g.Pending() {
			s.emitClaim(key, g, p.Consumer.Name, p.ID, p)
		}
	}
}

// LibraryCodes returns the code of every function library, in name order:
// what an RDB file's FUNCTION2 records hold.
func (srv *Server) LibraryCodes() []string {
	var out []string
	for _, l := range srv.scripts.sortedLibs() {
		out = append(out, l.code)
	}
	return out
}

// migrateKeys returns MIGRATE's keys: its key argument, or with an empty
// one the arguments after KEYS (skipping AUTH's and AUTH2's values, as
// Redis's migrateGetKeys does).
func migrateKeys(args [][]byte) [][]byte {
	for i := 6; i < len(args); i++ {
		switch {
		case resp.EqualFold(args[i], "auth"):
			i++
		case resp.EqualFold(args[i], "auth2"):
			i += 2
		case resp.EqualFold(args[i], "keys"):
			if len(args[3]) > 0 {
				return nil // refused: KEYS wants an empty key argument
			}
			return args[i+1:]
		}
	}
	if len(args) > 3 && len(args[3]) > 0 {
		return args[3:4]
	}
	return nil
}

// migrateCache keeps MIGRATE's connections to target servers, as Redis
// does: one per host:port, at most migrateCacheMax, each closed after 10
// seconds unused (INFO's migrate_cached_sockets counts them).
type migrateCache struct {
	mu    sync.Mutex
	conns map[string]*migrateConn
}

// migrateConn is one cached connection and the database it last selected.
type migrateConn struct {
	c      net.Conn
	r      *bufio.Reader
	lastDB int
	timer  *time.Timer
	// busy is set while a MIGRATE uses it, so that the idle timer leaves
	// it open.
	busy bool
}

const (
	migrateCacheMax  = 64
	migrateCacheIdle = 10 * time.Second
)

// get returns the cached connection to addr, or dials one.
func (m *migrateCache) get(addr string, timeout time.Duration) (*migrateConn, bool, error) {
	m.mu.Lock()
	if mc := m.conns[addr]; mc != nil && !mc.busy {
		mc.busy = true
		mc.timer.Stop()
		m.mu.Unlock()
		return mc, true, nil
	}
	m.mu.Unlock()
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, false, err
	}
	mc := &migrateConn{c: c, r: bufio.NewReader(c), lastDB: -1, busy: true}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conns == nil {
		m.conns = make(map[string]*migrateConn)
	}
	if old := m.conns[addr]; old != nil || len(m.conns) >= migrateCacheMax {
		// The slot is taken (or the cache full): this one is not cached.
		return mc, false, nil
	}
	m.conns[addr] = mc
	mc.timer = time.AfterFunc(migrateCacheIdle, func() { m.expire(addr, mc) })
	mc.timer.Stop()
	return mc, false, nil
}

// put returns a connection after use; a failed one (ok false) is closed.
func (m *migrateCache) put(addr string, mc *migrateConn, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cached := m.conns[addr] == mc
	if !ok || !cached {
		mc.c.Close()
		if cached {
			delete(m.conns, addr)
		}
		return
	}
	mc.busy = false
	mc.timer.Reset(migrateCacheIdle)
}

func (m *migrateCache) expire(addr string, mc *migrateConn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conns[addr] == mc && !mc.busy {
		mc.c.Close()
		delete(m.conns, addr)
	}
}

// Len returns the number of cached connections.
func (m *migrateCache) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.conns)
}

// cmdMigrate moves (or with COPY copies) keys to another server with
// RESTORE, waiting for its replies like Redis, which blocks while it does.
func cmdMigrate(s *Session) {
	a := s.Args
	copyKeys, replace := false, false
	var user, pass []byte
	auth := false
	keys := a[3:4]
	for j := 6; j < len(a); j++ {
		more := len(a) - j - 1
		switch {
		case resp.EqualFold(a[j], "copy"):
			copyKeys = true
		case resp.EqualFold(a[j], "replace"):
			replace = true
		case resp.EqualFold(a[j], "auth"):
			if more < 1 {
				s.W.Error(errSyntax)
				return
			}
			j++
			auth, user, pass = true, nil, a[j]
		case resp.EqualFold(a[j], "auth2"):
			if more < 2 {
				s.W.Error(errSyntax)
				return
			}
			auth, user, pass = true, a[j+1], a[j+2]
			j += 2
		case resp.EqualFold(a[j], "keys"):
			if len(a[3]) != 0 {
				s.W.Error("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
				return
			}
			keys = a[j+1:]
			j = len(a)
		default:
			s.W.Error(errSyntax)
			return
		}
	}
	timeout, ok1 := resp.ParseInt(a[5])
	db, ok2 := resp.ParseInt(a[4])
	if !ok1 || !ok2 {
		s.W.Error(errNotInt)
		return
	}
	if timeout <= 0 {
		timeout = 1000
	}
	// The keys that exist, with their payloads and time to live.
	type item struct {
		key, payload []byte
		ttl          int64
	}
	var items []item
	now := s.srv.ks.Now()
	for _, k := range keys {
		e := s.db.Lookup(k)
		if e == nil {
			continue
		}
		p, err := rdb.Dump(e)
		if err != nil {
			s.W.Error("ERR DUMP of a " + e.Type().String() + " value is not supported")
			return
		}
		var ttl int64
		if at, has := s.db.Expiry(k); has {
			ttl = max(at-now, 1)
		}
		items = append(items, item{k, p, ttl})
	}
	if len(items) == 0 {
		s.W.Simple("NOKEY")
		return
	}
	addr := net.JoinHostPort(string(a[1]), string(a[2]))
	d := time.Duration(timeout) * time.Millisecond
	for attempt := 0; ; attempt++ {
		mc, reused, err := s.srv.migrate.get(addr, d)
		if err != nil {
			// Redis connects without blocking, so a refused connection
			// shows when it first writes.
			if errors.Is(err, syscall.ECONNREFUSED) {
				s.W.Error("IOERR error or timeout writing to target instance")
			} else {
				s.W.Error("IOERR error or timeout connecting to the client")
			}
			return
		}
		var out []byte
		if auth {
			if user != nil {
				out = resp.AppendCommand(out, []byte("AUTH"), user, pass)
			} else {
				out = resp.AppendCommand(out, []byte("AUTH"), pass)
			}
		}
		sel := mc.lastDB != int(db)
		if sel {
			out = resp.AppendCommand(out, []byte("SELECT"), []byte(strconv.FormatInt(db, 10)))
		}
		for _, it := range items {
			args := [][]byte{[]byte("RESTORE"), it.key, []byte(strconv.FormatInt(it.ttl, 10)), it.payload}
			if replace {
				args = append(args, bREPLACE)
			}
			out = resp.AppendCommand(out, args...)
		}
		mc.c.SetDeadline(time.Now().Add(d))
		if _, err := mc.c.Write(out); err != nil {
			s.srv.migrate.put(addr, mc, false)
			if reused && attempt == 0 {
				continue // a cached connection the target closed: once more
			}
			s.W.Error("IOERR error or timeout writing to target instance")
			return
		}
		var errReply string
		readErr := false
		line := func() string {
			l, err := mc.r.ReadString('\n')
			if err != nil {
				readErr = true
				return ""
			}
			return strings.TrimRight(l, "\r\n")
		}
		if auth {
			if l := line(); strings.HasPrefix(l, "-") && errReply == "" {
				errReply = l[1:]
			}
		}
		if sel && !readErr {
			if l := line(); strings.HasPrefix(l, "-") && errReply == "" {
				errReply = l[1:]
			}
		}
		var moved [][]byte
		n := 0
		for _, it := range items {
			if readErr {
				break
			}
			l := line()
			if readErr {
				break
			}
			n++
			if strings.HasPrefix(l, "-") {
				if errReply == "" {
					errReply = l[1:]
				}
				continue
			}
			moved = append(moved, it.key)
		}
		if readErr && n == 0 && errReply == "" && reused && attempt == 0 {
			s.srv.migrate.put(addr, mc, false)
			continue
		}
		if errReply != "" || readErr {
			mc.lastDB = -1
		} else {
			mc.lastDB = int(db)
		}
		s.srv.migrate.put(addr, mc, !readErr)
		if !copyKeys {
			for _, k := range moved {
				if s.db.Delete(k) {
					s.emit(bDEL, k)
					s.notify(notifyGeneric, "del", k)
				}
			}
		}
		switch {
		case errReply != "":
			s.W.Error("ERR Target instance replied with error: " + errReply)
		case readErr:
			s.W.Error("IOERR error or timeout reading to target instance")
		default:
			s.W.OK()
		}
		return
	}
}
