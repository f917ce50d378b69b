package server

import (
	"math"
	"math/rand/v2"
	"sync/atomic"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
)

// HyperLogLogs are string values in Redis's own representation
// (keyspace/hll.go): they persist, sync and replicate as strings, and every
// change is the effect SET key <new bytes> KEEPTTL.

// HyperLogLog error texts, Redis's.
const (
	errNotHLL     = "WRONGTYPE Key is not a valid HyperLogLog string value."
	errInvalidHLL = "INVALIDOBJ Corrupted HLL object detected"
)

func hllCommands() []*Command {
	k1 := keysIn("hyperloglog", 1, 1)
	return []*Command{
		k1(&Command{Name: "pfadd", Arity: -2, Flags: FlagWrite | FlagDenyOOM | FlagFast, KeySpecs: "RW insert", Since: "2.8.9", Syntax: "key [element [element ...]]", Summary: "Adds elements to a HyperLogLog key. Creates the key if it doesn't exist.", Complexity: "O(1) to add every element.", Categories: "write hyperloglog fast", Handler: cmdPFAdd}),
		{Name: "pfcount", Arity: -2, Flags: FlagReadonly | FlagMayReplicate, FirstKey: 1, LastKey: -1, Step: 1, Group: "hyperloglog", KeySpecs: "RW access", Since: "2.8.9", Syntax: "key [key ...]", Summary: "Returns the approximated cardinality of the set(s) observed by the HyperLogLog key(s).", Complexity: "O(1) with a very small average constant time when called with a single key. O(N) with N being the number of keys, and much bigger constant times, when called with multiple keys.", Categories: "read hyperloglog slow", Handler: cmdPFCount},
		{Name: "pfmerge", Arity: -2, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: -1, Step: 1, Group: "hyperloglog", KeySpecs: "RW access insert; RO access", Since: "2.8.9", Syntax: "destkey [sourcekey [sourcekey ...]]", Summary: "Merges one or more HyperLogLog values into a single key.", Complexity: "O(N) to merge N HyperLogLogs, but with high constant times.", Categories: "write hyperloglog slow", Handler: cmdPFMerge},
		{Name: "pfdebug", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagAdmin, FirstKey: 2, LastKey: 2, Step: 1, Group: "hyperloglog", KeySpecs: "RW access", Since: "2.8.9", Syntax: "subcommand key", Summary: "Internal commands for debugging HyperLogLog values.", Complexity: "N/A", Categories: "write hyperloglog admin slow dangerous", Handler: cmdPFDebug},
		{Name: "pfselftest", Arity: 1, Flags: FlagAdmin, Group: "hyperloglog", Since: "2.8.9", Syntax: "", Summary: "An internal command for testing HyperLogLog values.", Complexity: "N/A", Categories: "hyperloglog admin slow dangerous", Handler: cmdPFSelfTest},
	}
}

// applyHLLSparseMax makes hll-sparse-max-bytes the bound PFADD reads, once
// per command, without parsing the parameter's text.
var applyHLLSparseMax = applyInt(func(l *liveConfig) *atomic.Int64 { return &l.hllSparseMax })

// hllSparseMax returns hll-sparse-max-bytes.
func (srv *Server) hllSparseMax() int {
	return int(min(srv.live.hllSparseMax.Load(), math.MaxInt32))
}

// lookupHLL returns key's entry, nil when absent; bad reports (and replies
// to) a value that is not a string or not a HyperLogLog.
func (s *Session) lookupHLL(key []byte) (e *keyspace.Entry, bad bool) {
	e, wrong := s.lookupString(key)
	if wrong {
		return nil, true
	}
	if e != nil && !keyspace.IsHLL(e.Str) {
		s.W.Error(errNotHLL)
		return nil, true
	}
	return e, false
}

// storeHLL makes b key's value: into e, or a new entry when e is nil. Like
// Redis's unshared string, the value's encoding is raw from then on.
func (s *Session) storeHLL(key []byte, e *keyspace.Entry, b []byte) *keyspace.Entry {
	if e == nil {
		e = s.db.Set(key, &keyspace.Entry{Atime: s.srv.ks.Clock()})
	}
	e.Str = b
	e.MarkRaw()
	return e
}

func cmdPFAdd(s *Session) {
	key := s.Args[1]
	e, bad := s.lookupHLL(key)
	if bad {
		return
	}
	updated := false
	var b []byte
	if e == nil {
		// A new key's HyperLogLog is built in the session's scratch
		// space, after what the command keeps there, and copied once,
		// at its size, into the new entry.
		start := len(s.scratch)
		s.scratch = keyspace.AppendNewHLL(s.scratch)
		b, updated = s.scratch[start:], true
		s.scratch = s.scratch[:start]
	} else {
		b = e.Str
	}
	sparseMax := -1
	corrupt := false
	for _, ele := range s.Args[2:] {
		if sparseMax < 0 && keyspace.HLLIsSparse(b) {
			sparseMax = s.srv.hllSparseMax()
		}
		var r keyspace.HLLResult
		b, r = keyspace.HLLAdd(b, ele, sparseMax)
		if r == keyspace.HLLCorrupt {
			corrupt = true
			break
		}
		if r == keyspace.HLLChanged {
			updated = true
		}
	}
	if !updated {
		if e != nil {
			e.MarkRaw()
		}
		if corrupt {
			s.W.Error(errInvalidHLL)
		} else {
			s.W.Int(0)
		}
		return
	}
	if !corrupt {
		keyspace.HLLInvalidate(b)
	}
	// A corrupt HyperLogLog keeps the registers set before the error, as
	// in Redis; the effect carries them so that replicas agree.
	if e == nil {
		e = s.db.ReplaceString(key, nil, b, true) // one map access: the lookup found none
		e.MarkRaw()
	} else {
		e = s.storeHLL(key, e, b)
	}
	s.emit(bSET, key, e.Str, bKEEPTTL)
	if corrupt {
		s.W.Error(errInvalidHLL)
		return
	}
	s.notify(notifyString, "pfadd", key)
	s.W.Int(1)
}

func cmdPFCount(s *Session) {
	if len(s.Args) > 2 {
		var max [keyspace.HLLRegisters]uint8
		for _, k := range s.Args[1:] {
			e, bad := s.lookupHLL(k)
			if bad {
				return
			}
			if e != nil && !keyspace.HLLMerge(&max, e.Str) {
				s.W.Error(errInvalidHLL)
				return
			}
		}
		s.W.Int(int64(keyspace.HLLCountRegisters(&max)))
		return
	}
	key := s.Args[1]
	e, bad := s.lookupHLL(key)
	if bad {
		return
	}
	if e == nil {
		s.W.Int(0)
		return
	}
	e.MarkRaw()
	if card, ok := keyspace.HLLCached(e.Str); ok {
		s.W.Int(int64(card))
		return
	}
	card, ok := keyspace.HLLCount(e.Str)
	if !ok {
		s.W.Error(errInvalidHLL)
		return
	}
	// Caching the cardinality changes the string: PFCOUNT is a read that
	// writes, as in Redis, so it keeps the snapshot's pre-image first.
	if !s.srv.persist.beforeWrite(s, s.lastCmd.Load()) {
		return
	}
	keyspace.HLLSetCached(e.Str, card)
	s.emit(bSET, key, e.Str, bKEEPTTL)
	s.W.Int(int64(card))
}

func cmdPFMerge(s *Session) {
	var max [keyspace.HLLRegisters]uint8
	dense := false
	for _, k := range s.Args[1:] {
		e, bad := s.lookupHLL(k)
		if bad {
			return
		}
		if e == nil {
			continue
		}
		if !keyspace.HLLIsSparse(e.Str) {
			dense = true
		}
		if !keyspace.HLLMerge(&max, e.Str) {
			s.W.Error(errInvalidHLL)
			return
		}
	}
	key := s.Args[1]
	e := s.db.Lookup(key)
	var b []byte
	if e == nil {
		b = keyspace.NewHLL()
	} else {
		b = e.Str
	}
	if dense {
		var ok bool
		if b, ok = keyspace.HLLToDense(b); !ok {
			s.W.Error(errInvalidHLL)
			return
		}
	}
	sparseMax := 0
	if keyspace.HLLIsSparse(b) {
		sparseMax = s.srv.hllSparseMax()
	}
	b = keyspace.HLLRaise(b, &max, sparseMax)
	keyspace.HLLInvalidate(b)
	e = s.storeHLL(key, e, b)
	s.emit(bSET, key, e.Str, bKEEPTTL)
	s.notify(notifyString, "pfadd", key)
	s.W.OK()
}

func cmdPFDebug(s *Session) {
	sub, key := s.Args[1], s.Args[2]
	e, bad := s.lookupHLL(key)
	if bad {
		return
	}
	if e == nil {
		s.W.Error("ERR The specified key does not exist")
		return
	}
	e.MarkRaw()
	// toDense converts a sparse value, reporting whether it did; false
	// with a reply written when the value is corrupt.
	toDense := func() (converted, ok bool) {
		if !keyspace.HLLIsSparse(e.Str) {
			return false, true
		}
		d, ok := keyspace.HLLToDense(e.Str)
		if !ok {
			s.W.Error(errInvalidHLL)
			return false, false
		}
		s.storeHLL(key, e, d)
		s.emit(bSET, key, e.Str, bKEEPTTL)
		return true, true
	}
	switch {
	case resp.EqualFold(sub, "getreg"):
		if _, ok := toDense(); !ok {
			return
		}
		s.W.Array(keyspace.HLLRegisters)
		for i := 0; i < keyspace.HLLRegisters; i++ {
			s.W.Int(int64(keyspace.HLLRegister(e.Str, i)))
		}
	case resp.EqualFold(sub, "decode"):
		if !keyspace.HLLIsSparse(e.Str) {
			s.W.Error("ERR HLL encoding is not sparse")
			return
		}
		s.W.BulkString(keyspace.HLLDecode(e.Str))
	case resp.EqualFold(sub, "encoding"):
		if keyspace.HLLIsSparse(e.Str) {
			s.W.Simple("sparse")
		} else {
			s.W.Simple("dense")
		}
	case resp.EqualFold(sub, "todense"):
		converted, ok := toDense()
		if !ok {
			return
		}
		if converted {
			s.W.Int(1)
		} else {
			s.W.Int(0)
		}
	default:
		s.W.Error("ERR Unknown PFDEBUG subcommand '" + string(sub) + "'")
	}
}

func cmdPFSelfTest(s *Session) {
	if err := keyspace.HLLSelfTest(s.srv.hllSparseMax(), rand.Uint64()); err != nil {
		s.W.Error(err.Error())
		return
	}
	s.W.OK()
}
