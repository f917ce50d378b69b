package server

import (
	"math"
	"strconv"

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
		{Name: "restore", Arity: -4, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "2.6.0",
			Syntax:  "key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]",
			Summary: "Creates a key from the serialized representation of a value.", Complexity: "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).",
			Categories: "keyspace write slow dangerous", Handler: cmdRestore},
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
	s.db.Set(key, e)
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
