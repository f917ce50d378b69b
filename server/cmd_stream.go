package server

// Streams: XADD, XRANGE, XREVRANGE, XLEN, XDEL, XTRIM, XREAD, XREADGROUP,
// XGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM, XINFO and XSETID, with Redis
// 7.0's replies and errors (t_stream.c).
//
// Every change is reported as the effects Redis propagates to replicas:
// XADD with the id the server chose and its trimming made exact (MAXLEN =
// or MINID = the result), a delivery to a consumer group (XREADGROUP,
// XCLAIM, XAUTOCLAIM) as XCLAIM … TIME RETRYCOUNT FORCE JUSTID LASTID per
// entry followed by XGROUP SETID … ENTRIESREAD when the group's last id
// moved, and XGROUP CREATECONSUMER when a consumer is created implicitly.

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
)

// Stream error texts.
const (
	errStreamID        = "ERR Invalid stream ID specified as stream command argument"
	errStreamIDSmaller = "ERR The ID specified in XADD is equal or smaller than the target stream top item"
	errStreamIDZero    = "ERR The ID specified in XADD must be greater than 0-0"
	errStreamExhausted = "ERR The stream has exhausted the last possible ID, unable to add more items"
	errStreamTooLarge  = "ERR Elements are too large to be stored"
	errStreamStart     = "ERR invalid start ID for the interval"
	errStreamEnd       = "ERR invalid end ID for the interval"
	errTrimBoth        = "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"
	errXGroupNoKey     = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."
	errBusyGroup       = "BUSYGROUP Consumer Group name already exists"
	errMsTimeout       = "ERR timeout is not an integer or out of range"
	errTimeoutRange    = "ERR timeout is out of range"
	errXReadUnblocked  = "UNBLOCKED the stream key no longer exists"
	errXReadNoGroup    = "NOGROUP the consumer group this client was blocked on no longer exists"
)

// xreadBlockedCount is the COUNT of a blocked XREAD given none.
const xreadBlockedCount = 1000

// The CONFIG parameters that shape a stream's nodes.
var (
	streamNodeMaxBytesParam   = paramTable.lookup("stream-node-max-bytes")
	streamNodeMaxEntriesParam = paramTable.lookup("stream-node-max-entries")
)

func streamCommands() []*Command {
	k1 := keysIn("stream", 1, 1)
	k2 := keysIn("", 2, 2)
	return []*Command{
		k1(&Command{Name: "xadd", Arity: -5, Flags: FlagWrite | FlagDenyOOM | FlagFast, KeySpecs: "RW update", Since: "5.0.0", Syntax: "key [NOMKSTREAM] [(MAXLEN | MINID) [= | ~] threshold [LIMIT count]] (* | id) field value [field value ...]", Summary: "Appends a new message to a stream. Creates the key if it doesn't exist.", Complexity: "O(1) when adding a new entry, O(N) when trimming where N being the number of entries evicted.", Categories: "write stream fast", Handler: cmdXAdd}),
		k1(&Command{Name: "xrange", Arity: -4, Flags: FlagReadonly, Since: "5.0.0", Syntax: "key start end [COUNT count]", Summary: "Returns the messages from a stream within a range of IDs.", Complexity: "O(N) with N being the number of elements being returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).", Categories: "read stream slow", Handler: xrangeCmd(false)}),
		k1(&Command{Name: "xrevrange", Arity: -4, Flags: FlagReadonly, Since: "5.0.0", Syntax: "key end start [COUNT count]", Summary: "Returns the messages from a stream within a range of IDs in reverse order.", Complexity: "O(N) with N being the number of elements returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).", Categories: "read stream slow", Handler: xrangeCmd(true)}),
		k1(&Command{Name: "xlen", Arity: 2, Flags: FlagReadonly | FlagFast, KeySpecs: "RO", Since: "5.0.0", Syntax: "key", Summary: "Return the number of messages in a stream.", Complexity: "O(1)", Categories: "read stream fast", Handler: cmdXLen}),
		k1(&Command{Name: "xdel", Arity: -3, Flags: FlagWrite | FlagFast, KeySpecs: "RW delete", Since: "5.0.0", Syntax: "key id [id ...]", Summary: "Returns the number of messages after removing them from a stream.", Complexity: "O(1) for each single item to delete in the stream, regardless of the stream size.", Categories: "write stream fast", Handler: cmdXDel}),
		k1(&Command{Name: "xtrim", Arity: -4, Flags: FlagWrite, KeySpecs: "RW delete", Since: "5.0.0", Syntax: "key (MAXLEN | MINID) [= | ~] threshold [LIMIT count]", Summary: "Deletes messages from the beginning of a stream.", Complexity: "O(N), with N being the number of evicted entries. Constant times are very small however, since entries are organized in macro nodes containing multiple entries that can be released with a single deallocation.", Categories: "write stream slow", Handler: cmdXTrim}),
		{Name: "xread", Arity: -4, Flags: FlagReadonly | FlagBlocking | FlagMovableKeys, Keys: xreadKeys, Group: "stream", Since: "5.0.0", Syntax: "[COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]", Summary: "Returns messages from multiple streams with IDs greater than the ones requested. Blocks until a message is available otherwise.", Categories: "read stream slow blocking", Handler: xreadCmd(false)},
		{Name: "xreadgroup", Arity: -7, Flags: FlagWrite | FlagBlocking | FlagMovableKeys, Keys: xreadKeys, Group: "stream", KeySpecs: "RO access", Since: "5.0.0", Syntax: "GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS key [key ...] id [id ...]", Summary: "Returns new or historical messages from a stream for a consumer in a group. Blocks until a message is available otherwise.", Categories: "write stream slow blocking", Handler: xreadCmd(true)},
		{Name: "xgroup", Arity: -2, Group: "stream", Since: "5.0.0", Summary: "A container for consumer groups commands.", Categories: "slow", Subs: []*Command{
			k2(&Command{Name: "create", Arity: -5, Flags: FlagWrite | FlagDenyOOM, KeySpecs: "RW insert", Since: "5.0.0", Syntax: "key group (id | $) [MKSTREAM] [ENTRIESREAD entries-read]", Summary: "Creates a consumer group.", Complexity: "O(1)", Categories: "write stream slow", Handler: cmdXGroupCreate}),
			k2(&Command{Name: "setid", Arity: -5, Flags: FlagWrite, KeySpecs: "RW update", Since: "5.0.0", Syntax: "key group (id | $) [ENTRIESREAD entries-read]", Summary: "Sets the last-delivered ID of a consumer group.", Complexity: "O(1)", Categories: "write stream slow", Handler: cmdXGroupSetID}),
			k2(&Command{Name: "destroy", Arity: 4, Flags: FlagWrite, KeySpecs: "RW delete", Since: "5.0.0", Syntax: "key group", Summary: "Destroys a consumer group.", Complexity: "O(N) where N is the number of entries in the group's pending entries list (PEL).", Categories: "write stream slow", Handler: cmdXGroupDestroy}),
			k2(&Command{Name: "createconsumer", Arity: 5, Flags: FlagWrite | FlagDenyOOM, KeySpecs: "RW insert", Since: "6.2.0", Syntax: "key group consumer", Summary: "Creates a consumer in a consumer group.", Complexity: "O(1)", Categories: "write stream slow", Handler: cmdXGroupCreateConsumer}),
			k2(&Command{Name: "delconsumer", Arity: 5, Flags: FlagWrite, KeySpecs: "RW delete", Since: "5.0.0", Syntax: "key group consumer", Summary: "Deletes a consumer from a consumer group.", Complexity: "O(1)", Categories: "write stream slow", Handler: cmdXGroupDelConsumer}),
			{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, Since: "5.0.0", Summary: "Returns helpful text about the different subcommands.", Complexity: "O(1)", Categories: "stream slow", Handler: cmdXGroupHelp},
		}},
		k1(&Command{Name: "xack", Arity: -4, Flags: FlagWrite | FlagFast, KeySpecs: "RW update", Since: "5.0.0", Syntax: "key group id [id ...]", Summary: "Returns the number of messages that were successfully acknowledged by the consumer group member of a stream.", Complexity: "O(1) for each message ID processed.", Categories: "write stream fast", Handler: cmdXAck}),
		k1(&Command{Name: "xpending", Arity: -3, Flags: FlagReadonly, Since: "5.0.0", Syntax: "key group [[IDLE min-idle-time] start end count [consumer]]", Summary: "Returns the information and entries from a stream consumer group's pending entries list.", Complexity: "O(N) with N being the number of elements returned, so asking for a small fixed number of entries per call is O(1). O(M), where M is the total number of entries scanned when used with the IDLE filter. When the command returns just the summary and the list of consumers is small, it runs in O(1) time; otherwise, an additional O(N) time for iterating every consumer.", Categories: "read stream slow", Handler: cmdXPending}),
		k1(&Command{Name: "xclaim", Arity: -6, Flags: FlagWrite | FlagFast, KeySpecs: "RW update", Since: "5.0.0", Syntax: "key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-time-milliseconds] [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid]", Summary: "Changes, or acquires, ownership of a message in a consumer group, as if the message was delivered a consumer group member.", Complexity: "O(log N) with N being the number of messages in the PEL of the consumer group.", Categories: "write stream fast", Handler: cmdXClaim}),
		k1(&Command{Name: "xautoclaim", Arity: -6, Flags: FlagWrite | FlagFast, KeySpecs: "RW delete", Since: "6.2.0", Syntax: "key group consumer min-idle-time start [COUNT count] [JUSTID]", Summary: "Changes, or acquires, ownership of messages in a consumer group, as if the messages were delivered to as consumer group member.", Complexity: "O(1) if COUNT is small.", Categories: "write stream fast", Handler: cmdXAutoClaim}),
		{Name: "xinfo", Arity: -2, Group: "stream", Since: "5.0.0", Summary: "A container for stream introspection commands.", Categories: "slow", Subs: []*Command{
			k2(&Command{Name: "stream", Arity: -3, Flags: FlagReadonly, Since: "5.0.0", Syntax: "key [FULL [COUNT count]]", Summary: "Returns information about a stream.", Complexity: "O(1)", Categories: "read stream slow", Handler: cmdXInfoStream}),
			k2(&Command{Name: "groups", Arity: 3, Flags: FlagReadonly, Since: "5.0.0", Syntax: "key", Summary: "Returns a list of the consumer groups of a stream.", Complexity: "O(1)", Categories: "read stream slow", Handler: cmdXInfoGroups}),
			k2(&Command{Name: "consumers", Arity: 4, Flags: FlagReadonly, Since: "5.0.0", Syntax: "key group", Summary: "Returns a list of the consumers in a consumer group.", Complexity: "O(1)", Categories: "read stream slow", Handler: cmdXInfoConsumers}),
			{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, Since: "5.0.0", Summary: "Returns helpful text about the different subcommands.", Complexity: "O(1)", Categories: "stream slow", Handler: cmdXInfoHelp},
		}},
		k1(&Command{Name: "xsetid", Arity: -3, Flags: FlagWrite | FlagDenyOOM | FlagFast, KeySpecs: "RW update", Since: "5.0.0", Syntax: "key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]", Summary: "An internal command for replicating stream values.", Complexity: "O(1)", Categories: "write stream fast", Handler: cmdXSetID}),
	}
}

// xreadKeys returns the keys of XREAD and XREADGROUP: the first half of
// what follows STREAMS.
func xreadKeys(args [][]byte) [][]byte {
	for i := 1; i < len(args); i++ {
		if resp.EqualFold(args[i], "streams") {
			rest := args[i+1:]
			if len(rest)%2 != 0 {
				return nil
			}
			return rest[:len(rest)/2]
		}
	}
	return nil
}

// streamNodeLimits returns stream-node-max-bytes and
// stream-node-max-entries.
func (srv *Server) streamNodeLimits() (maxBytes, maxEntries int64) {
	maxBytes, maxEntries = 4096, 100
	srv.cfgMu.RLock()
	defer srv.cfgMu.RUnlock()
	if p := streamNodeMaxBytesParam; p != nil {
		if n, err := strconv.ParseInt(srv.paramValue(p), 10, 64); err == nil {
			maxBytes = n
		}
	}
	if p := streamNodeMaxEntriesParam; p != nil {
		if n, err := strconv.ParseInt(srv.paramValue(p), 10, 64); err == nil {
			maxEntries = n
		}
	}
	return maxBytes, maxEntries
}

// lookupStream returns key's stream, nil when the key is absent; wrong
// reports (and replies to) a value of another type.
func (s *Session) lookupStream(key []byte) (st *keyspace.Stream, wrong bool) {
	e, wrong := s.lookupType(key, keyspace.TypeStream)
	if e == nil {
		return nil, wrong
	}
	return e.Obj.(*keyspace.Stream), false
}

// streamIDArg parses b as a stream id (see keyspace.ParseStreamID),
// replying with Redis's error when it is not one.
func (s *Session) streamIDArg(b []byte, missingSeq uint64, strict bool) (keyspace.StreamID, bool) {
	id, _, ok := keyspace.ParseStreamID(b, missingSeq, strict, false)
	if !ok {
		s.W.Error(errStreamID)
	}
	return id, ok
}

// intervalArg parses a range bound: an id, or "(" and an id for an
// exclusive bound, which it moves one step inwards (after start, before
// end); it replies with Redis's error on failure.
func (s *Session) intervalArg(b []byte, end bool) (keyspace.StreamID, bool) {
	missing := uint64(0)
	if end {
		missing = math.MaxUint64
	}
	if len(b) > 1 && b[0] == '(' {
		id, ok := s.streamIDArg(b[1:], missing, true)
		if !ok {
			return id, false
		}
		var moved bool
		if end {
			id, moved = id.Prev()
		} else {
			id, moved = id.Next()
		}
		if !moved {
			if end {
				s.W.Error(errStreamEnd)
			} else {
				s.W.Error(errStreamStart)
			}
			return id, false
		}
		return id, true
	}
	return s.streamIDArg(b, missing, false)
}

// idBytes formats id into the session's scratch space, valid until the
// command ends.
func (s *Session) idBytes(id keyspace.StreamID) []byte {
	start := len(s.scratch)
	s.scratch = id.Append(s.scratch)
	return s.scratch[start:len(s.scratch):len(s.scratch)]
}

// writeID writes id as a bulk string.
func writeID(w *resp.Writer, id keyspace.StreamID) {
	var buf [48]byte
	w.Bulk(id.Append(buf[:0]))
}

// writeEntry writes one entry: [id, [field, value, …]].
func writeEntry(w *resp.Writer, id keyspace.StreamID, fv [][]byte) {
	w.Array(2)
	writeID(w, id)
	w.Array(len(fv))
	for _, b := range fv {
		w.Bulk(b)
	}
}

// writeRange writes the live entries from start to end (at most count, 0
// for all) as an array and returns how many it wrote.
func writeRange(w *resp.Writer, st *keyspace.Stream, start, end keyspace.StreamID, count int64, rev bool) int64 {
	mark := len(w.B)
	n := int64(0)
	st.Range(start, end, rev, func(id keyspace.StreamID, fv [][]byte) bool {
		writeEntry(w, id, fv)
		n++
		return count == 0 || n < count
	})
	insertHeader(w, mark, '*', int(n))
	return n
}

// insertHeader inserts at mark, where w's elements written since begin,
// the header of kind ('*', '%') announcing n of them: a reply whose length
// is known only once written goes straight into w, without a second
// buffer to allocate and copy.
func insertHeader(w *resp.Writer, mark int, kind byte, n int) {
	var buf [24]byte
	w.B = slices.Insert(w.B, mark, resp.AppendHeader(buf[:0], kind, n)...)
}

// trimSpec is the parsed trimming of XADD or XTRIM.
type trimSpec struct {
	strategy   int // 0 none, 1 MAXLEN, 2 MINID
	args       keyspace.TrimArgs
	arg        []byte // the threshold as given
	limitGiven bool
}

// xaddSpec is the parsed XADD.
type xaddSpec struct {
	trim       trimSpec
	noMkStream bool
	idGiven    bool
	seqGiven   bool
	id         keyspace.StreamID
	idPos      int
}

// parseTrim parses the options of XADD (xadd set) or XTRIM from s.Args[2],
// as Redis's streamParseAddOrTrimArgsOrReply does, replying on failure.
func (s *Session) parseTrim(xadd bool, nodeEntries int64) (x xaddSpec, ok bool) {
	a := s.Args
	i := 2
	t := &x.trim
	for ; i < len(a); i++ {
		more := len(a) - 1 - i
		opt := a[i]
		switch {
		case xadd && len(opt) == 1 && opt[0] == '*':
			x.idPos = i
			goto done
		case (resp.EqualFold(opt, "maxlen") || resp.EqualFold(opt, "minid")) && more > 0:
			byID := resp.EqualFold(opt, "minid")
			if t.strategy != 0 {
				s.W.Error(errTrimBoth)
				return x, false
			}
			t.args.Approx = false
			if next := a[i+1]; more >= 2 && len(next) == 1 && (next[0] == '~' || next[0] == '=') {
				t.args.Approx = next[0] == '~'
				i++
			}
			if byID {
				id, ok := s.streamIDArg(a[i+1], 0, true)
				if !ok {
					return x, false
				}
				t.args.ByID, t.args.MinID, t.strategy = true, id, 2
			} else {
				n, ok := s.intArg(i + 1)
				if !ok {
					return x, false
				}
				if n < 0 {
					s.W.Error("ERR The MAXLEN argument must be >= 0.")
					return x, false
				}
				t.args.MaxLen, t.strategy = uint64(n), 1
			}
			i++
			t.arg = a[i]
		case resp.EqualFold(opt, "limit") && more > 0:
			n, ok := s.intArg(i + 1)
			if !ok {
				return x, false
			}
			if n < 0 {
				s.W.Error("ERR The LIMIT argument must be >= 0.")
				return x, false
			}
			t.args.Limit, t.limitGiven = n, true
			i++
		case xadd && resp.EqualFold(opt, "nomkstream"):
			x.noMkStream = true
		case xadd:
			id, seqGiven, ok := keyspace.ParseStreamID(opt, 0, true, true)
			if !ok {
				s.W.Error(errStreamID)
				return x, false
			}
			x.id, x.seqGiven, x.idGiven, x.idPos = id, seqGiven, true, i
			goto done
		default:
			s.W.Error(errSyntax)
			return x, false
		}
	}
	x.idPos = i
done:
	if t.args.Limit != 0 && t.strategy == 0 {
		s.W.Error("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
		return x, false
	}
	if !xadd && t.strategy == 0 {
		s.W.Error("ERR syntax error, XTRIM must be called with a trimming strategy")
		return x, false
	}
	if t.limitGiven {
		if !t.args.Approx {
			s.W.Error("ERR syntax error, LIMIT cannot be used without the special ~ option")
			return x, false
		}
	} else if t.args.Approx {
		t.args.Limit = min(max(100*nodeEntries, 0), 1000000)
		if t.args.Limit <= 0 {
			t.args.Limit = 10000
		}
	} else {
		t.args.Limit = 0
	}
	return x, true
}

// trimEffect returns the exact threshold that reproduces the trim st has
// just had: the one given, or for an approximate trim the resulting length
// (MAXLEN) or first entry (MINID).
func (s *Session) trimEffect(t *trimSpec, st *keyspace.Stream) (verb, threshold []byte) {
	if t.strategy == 2 {
		verb = bMINID
		if t.args.Approx {
			return verb, s.idBytes(st.FirstEntryID())
		}
		return verb, s.idBytes(t.args.MinID)
	}
	verb = bMAXLEN
	if t.args.Approx {
		return verb, s.utoa(uint64(st.Len()))
	}
	return verb, s.utoa(t.args.MaxLen)
}

func cmdXAdd(s *Session) {
	maxBytes, maxEntries := s.srv.streamNodeLimits()
	x, ok := s.parseTrim(true, maxEntries)
	if !ok {
		return
	}
	fieldPos := x.idPos + 1
	if n := len(s.Args) - fieldPos; n < 2 || n%2 == 1 {
		s.W.Error("ERR wrong number of arguments for 'xadd' command")
		return
	}
	if x.idGiven && x.seqGiven && x.id.IsZero() {
		s.W.Error(errStreamIDZero)
		return
	}
	key := s.Args[1]
	st, wrong := s.lookupStream(key)
	if wrong {
		return
	}
	if st == nil {
		if x.noMkStream {
			s.W.Null()
			return
		}
	} else if st.LastID == keyspace.MaxStreamID {
		s.W.Error(errStreamExhausted)
		return
	}
	var last keyspace.StreamID
	if st != nil {
		last = st.LastID
	}
	var id keyspace.StreamID
	switch {
	case x.idGiven && x.seqGiven:
		id = x.id
	case x.idGiven:
		id = x.id
		if last.Ms == x.id.Ms {
			if last.Seq == math.MaxUint64 {
				// Redis's streamAppendItem fails here without setting
				// errno, which XADD reports as this.
				s.W.Error(errStreamTooLarge)
				return
			}
			id = keyspace.StreamID{Ms: last.Ms, Seq: last.Seq + 1}
		}
	default:
		if now := uint64(s.srv.ks.Now()); now > last.Ms {
			id = keyspace.StreamID{Ms: now}
		} else {
			id, _ = last.Next()
		}
	}
	if id.Compare(last) <= 0 {
		s.W.Error(errStreamIDSmaller)
		return
	}
	fv := s.Args[fieldPos:]
	tot := 0
	for _, b := range fv {
		tot += len(b)
	}
	if tot > keyspace.StreamListpackMax {
		s.W.Error(errStreamTooLarge)
		return
	}
	if st == nil {
		st = keyspace.NewStream()
		s.db.SetObject(key, st)
	}
	st.Append(id, fv, maxBytes, maxEntries)
	idb := s.idBytes(id)
	s.W.Bulk(idb)
	var buf [16][]byte
	eff := append(buf[:0], bXADD, key)
	trimmed := int64(0)
	if x.trim.strategy != 0 {
		trimmed = st.Trim(x.trim.args)
		verb, th := s.trimEffect(&x.trim, st)
		eff = append(eff, verb, bEquals, th)
	}
	eff = append(eff, idb)
	s.emit(append(eff, fv...)...)
	s.notify(notifyStream, "xadd", key)
	if trimmed > 0 {
		s.notify(notifyStream, "xtrim", key)
	}
}

func cmdXTrim(s *Session) {
	_, maxEntries := s.srv.streamNodeLimits()
	x, ok := s.parseTrim(false, maxEntries)
	if !ok {
		return
	}
	key := s.Args[1]
	st := s.streamOrZero(key)
	if st == nil {
		return
	}
	n := st.Trim(x.trim.args)
	if n > 0 {
		verb, th := s.trimEffect(&x.trim, st)
		s.emit(bXTRIM, key, verb, bEquals, th)
		s.notify(notifyStream, "xtrim", key)
	}
	s.W.Int(n)
}

func xrangeCmd(rev bool) Handler {
	return func(s *Session) {
		startArg, endArg := s.Args[2], s.Args[3]
		if rev {
			startArg, endArg = endArg, startArg
		}
		start, ok := s.intervalArg(startArg, false)
		if !ok {
			return
		}
		end, ok := s.intervalArg(endArg, true)
		if !ok {
			return
		}
		count := int64(-1)
		for j := 4; j < len(s.Args); j++ {
			if resp.EqualFold(s.Args[j], "count") && j+1 < len(s.Args) {
				n, ok := s.intArg(j + 1)
				if !ok {
					return
				}
				count = max(n, 0)
				j++
				continue
			}
			s.W.Error(errSyntax)
			return
		}
		st, wrong := s.lookupStream(s.Args[1])
		if wrong {
			return
		}
		if st == nil {
			s.W.Array(0)
			return
		}
		if count == 0 {
			s.W.NullArray()
			return
		}
		writeRange(&s.W, st, start, end, max(count, 0), rev)
	}
}

func cmdXLen(s *Session) {
	if st := s.streamOrZero(s.Args[1]); st != nil {
		s.W.Int(int64(st.Len()))
	}
}

// streamOrZero returns key's stream; for an absent key it replies 0 and
// returns nil, as for a value of another type (replying WRONGTYPE).
func (s *Session) streamOrZero(key []byte) *keyspace.Stream {
	st, wrong := s.lookupStream(key)
	if st == nil && !wrong {
		s.W.Int(0)
	}
	return st
}

// parseIDs parses s.Args[from:] as strict ids, replying on failure.
func (s *Session) parseIDs(from int, buf []keyspace.StreamID) ([]keyspace.StreamID, bool) {
	ids := buf[:0]
	for _, a := range s.Args[from:] {
		id, ok := s.streamIDArg(a, 0, true)
		if !ok {
			return nil, false
		}
		ids = append(ids, id)
	}
	return ids, true
}

func cmdXDel(s *Session) {
	key := s.Args[1]
	st := s.streamOrZero(key)
	if st == nil {
		return
	}
	ids, ok := s.parseIDs(2, nil)
	if !ok {
		return
	}
	deleted := st.DeleteIDs(ids)
	if len(deleted) > 0 {
		eff := [][]byte{bXDEL, key}
		for _, id := range deleted {
			eff = append(eff, s.idBytes(id))
		}
		s.emit(eff...)
		s.notify(notifyStream, "xdel", key)
	}
	s.W.Int(int64(len(deleted)))
}

// msTimeoutArg parses a BLOCK timeout in milliseconds, replying with
// Redis's errors; 0 means forever.
func (s *Session) msTimeoutArg(b []byte) (int64, bool) {
	n, ok := resp.ParseInt(b)
	if !ok {
		s.W.Error(errMsTimeout)
		return 0, false
	}
	if n < 0 {
		s.W.Error(errNegTimeout)
		return 0, false
	}
	if n > 0 && n > math.MaxInt64-s.srv.ks.Now() {
		s.W.Error(errTimeoutRange)
		return 0, false
	}
	return n, true
}

// streamWait is what a blocked XREAD or XREADGROUP waits for.
type streamWait struct {
	ids      map[string]keyspace.StreamID // per key, the id to read after
	count    int64
	group    []byte // XREADGROUP: the group and consumer
	consumer []byte
	noack    bool
}

// groupRead is one XREADGROUP read of one key.
type groupRead struct {
	key      []byte
	g        *keyspace.StreamGroup
	consumer []byte
	noack    bool
}

// xreadCmd builds XREAD and XREADGROUP.
func xreadCmd(group bool) Handler {
	return func(s *Session) {
		a := s.Args
		timeout := int64(-1)
		var count int64
		streamsArg := 0
		var groupName, consumer []byte
		noack := false
		for i := 1; i < len(a); i++ {
			more := len(a) - i - 1
			switch o := a[i]; {
			case resp.EqualFold(o, "block") && more > 0:
				i++
				ms, ok := s.msTimeoutArg(a[i])
				if !ok {
					return
				}
				timeout = ms
			case resp.EqualFold(o, "count") && more > 0:
				i++
				n, ok := s.intArg(i)
				if !ok {
					return
				}
				count = max(n, 0)
			case resp.EqualFold(o, "streams") && more > 0:
				streamsArg = i + 1
				if (len(a)-streamsArg)%2 != 0 {
					s.W.Error("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.")
					return
				}
				i = len(a)
			case resp.EqualFold(o, "group") && more >= 2:
				if !group {
					s.W.Error("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
					return
				}
				groupName, consumer = a[i+1], a[i+2]
				i += 2
			case resp.EqualFold(o, "noack"):
				if !group {
					s.W.Error("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
					return
				}
				noack = true
			default:
				s.W.Error(errSyntax)
				return
			}
		}
		if streamsArg == 0 {
			s.W.Error(errSyntax)
			return
		}
		if group && groupName == nil {
			s.W.Error("ERR Missing GROUP option for XREADGROUP")
			return
		}
		n := (len(a) - streamsArg) / 2
		keys := a[streamsArg : streamsArg+n]
		ids := make([]keyspace.StreamID, n)
		gtMax := make([]bool, n) // ">"
		groups := make([]*keyspace.StreamGroup, n)
		for i := 0; i < n; i++ {
			key, arg := keys[i], a[streamsArg+n+i]
			st, g, wrong := s.lookupGroup(key, groupName)
			if wrong {
				return
			}
			if group {
				if g == nil {
					s.W.Error(fmt.Sprintf("NOGROUP No such key '%s' or consumer group '%s' in XREADGROUP with GROUP option", key, groupName))
					return
				}
				groups[i] = g
			}
			switch {
			case len(arg) == 1 && arg[0] == '$':
				if group {
					s.W.Error("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.")
					return
				}
				if st != nil {
					ids[i] = st.LastID
				}
			case len(arg) == 1 && arg[0] == '>':
				if !group {
					s.W.Error("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")
					return
				}
				gtMax[i] = true
			default:
				id, ok := s.streamIDArg(arg, 0, true)
				if !ok {
					return
				}
				ids[i] = id
			}
		}
		// The reply goes straight into s.W, its header inserted once the
		// streams served are counted, unless a consumer is to be created:
		// the keyspace notification of that may be a push to this very
		// client, which must not land inside the reply.
		body := &s.W
		var sep resp.Writer
		if group && !consumersExist(groups, consumer) {
			sep.Proto = s.W.Proto
			body = &sep
		}
		mark := len(body.B)
		served := 0
		for i := 0; i < n; i++ {
			st, _ := s.lookupStream(keys[i])
			if st == nil {
				continue
			}
			gt := ids[i]
			history := false
			serve := false
			if group {
				if !gtMax[i] {
					serve, history = true, true
				} else if st.Len() > 0 {
					if maxID, _ := st.Edge(false); maxID.Compare(groups[i].LastID) > 0 {
						serve, gt = true, groups[i].LastID
					}
				}
			} else if st.Len() > 0 {
				if maxID, _ := st.Edge(false); maxID.Compare(gt) > 0 {
					serve = true
				}
			}
			if !serve {
				continue
			}
			served++
			if body.Proto == 2 {
				body.Array(2)
			}
			body.Bulk(keys[i])
			start, _ := gt.Next()
			if group {
				gr := groupRead{key: keys[i], g: groups[i], consumer: consumer, noack: noack}
				if history {
					s.readHistory(body, st, &gr, start, count)
				} else {
					s.readGroup(body, st, &gr, start, count)
				}
			} else {
				writeRange(body, st, start, keyspace.MaxStreamID, count, false)
			}
		}
		if served > 0 {
			kind := byte('*')
			if s.W.Proto != 2 {
				kind = '%'
			}
			insertHeader(body, mark, kind, served)
			if body != &s.W {
				s.W.Raw(body.B)
			}
			return
		}
		if timeout == -1 || !s.canBlock() {
			s.W.NullArray()
			return
		}
		sw := &streamWait{ids: make(map[string]keyspace.StreamID, n), count: count}
		if sw.count == 0 {
			sw.count = xreadBlockedCount
		}
		for i, k := range keys {
			if _, dup := sw.ids[string(k)]; !dup {
				sw.ids[string(k)] = ids[i]
			}
		}
		if group {
			sw.group = append([]byte(nil), groupName...)
			sw.consumer = append([]byte(nil), consumer...)
			sw.noack = noack
		}
		s.block(&waiter{kind: waitStream, stream: sw}, keys, timeout)
	}
}

// consumersExist reports whether each group has a consumer of that name.
func consumersExist(groups []*keyspace.StreamGroup, consumer []byte) bool {
	for _, g := range groups {
		if g.Consumer(consumer) == nil {
			return false
		}
	}
	return true
}

// groupConsumer returns gr's consumer, created (and reported) if need be,
// its seen time refreshed.
func (s *Session) groupConsumer(gr *groupRead) *keyspace.StreamConsumer {
	now := s.srv.ks.Now()
	if c := gr.g.Consumer(gr.consumer); c != nil {
		c.SeenTime = now
		return c
	}
	c := gr.g.CreateConsumer(gr.consumer, now)
	s.emitKey(gr.key, bXGROUP, bCREATECONSUMER, gr.key, gr.g.Name, c.Name)
	s.notify(notifyStream, "xgroup-createconsumer", gr.key)
	return c
}

// emitClaim reports a pending entry's state as the XCLAIM that recreates
// it.
func (s *Session) emitClaim(key []byte, g *keyspace.StreamGroup, consumer []byte, id keyspace.StreamID, n *keyspace.StreamNACK) {
	s.emit(bXCLAIM, key, g.Name, consumer, bZero, s.idBytes(id), bTIME, s.itoa(n.DeliveryTime),
		bRETRYCOUNT, s.utoa(n.DeliveryCount), bFORCE, bJUSTID, bLASTID, s.idBytes(g.LastID))
}

// emitGroupID reports a group's last id and read counter.
func (s *Session) emitGroupID(key []byte, g *keyspace.StreamGroup) {
	s.emitKey(key, bXGROUP, bSETID, key, g.Name, s.idBytes(g.LastID), bENTRIESREAD, s.itoa(g.EntriesRead))
}

// readGroup delivers to gr's consumer the entries from start on (at most
// count, 0 for all), as Redis's streamReplyWithRange does with a group:
// the group's last id and read counter advance and, unless NOACK, each
// entry becomes pending for the consumer.
func (s *Session) readGroup(w *resp.Writer, st *keyspace.Stream, gr *groupRead, start keyspace.StreamID, count int64) {
	c := s.groupConsumer(gr)
	g := gr.g
	now := s.srv.ks.Now()
	mark := len(w.B)
	var idBuf [16]keyspace.StreamID
	ids := idBuf[:0]
	moved := false
	st.Range(start, keyspace.MaxStreamID, false, func(id keyspace.StreamID, fv [][]byte) bool {
		if id.Compare(g.LastID) > 0 {
			if g.EntriesRead != -1 && !st.RangeHasTombstones(id, keyspace.MaxStreamID) {
				g.EntriesRead++
			} else if st.EntriesAdded > 0 {
				g.EntriesRead = st.EstimateDistance(id)
			}
			g.LastID = id
			moved = true
		}
		writeEntry(w, id, fv)
		ids = append(ids, id)
		return count == 0 || int64(len(ids)) < count
	})
	if !gr.noack {
		for _, id := range ids {
			n := g.Deliver(id, c, now)
			s.emitClaim(gr.key, g, c.Name, id, n)
		}
	}
	if moved {
		s.emitGroupID(gr.key, g)
	}
	insertHeader(w, mark, '*', len(ids))
}

// readHistory replies with gr's consumer's pending entries from start on
// (at most count), counting a new delivery of each that still exists.
func (s *Session) readHistory(w *resp.Writer, st *keyspace.Stream, gr *groupRead, start keyspace.StreamID, count int64) {
	c := s.groupConsumer(gr)
	now := s.srv.ks.Now()
	pending := c.Pending()
	mark := len(w.B)
	n := 0
	var redelivered []*keyspace.StreamNACK
	for i := c.PendingFrom(start); i < len(pending) && (count == 0 || int64(n) < count); i++ {
		nack := pending[i]
		found := st.Get(nack.ID, func(fv [][]byte) { writeEntry(w, nack.ID, fv) })
		if !found {
			w.Array(2)
			writeID(w, nack.ID)
			w.NullArray()
		} else {
			nack.DeliveryTime = now
			nack.DeliveryCount++
			redelivered = append(redelivered, nack)
		}
		n++
	}
	for _, nack := range redelivered {
		s.emitClaim(gr.key, gr.g, c.Name, nack.ID, nack)
	}
	insertHeader(w, mark, '*', n)
}

// serveStream answers w, a blocked XREAD or XREADGROUP, from the stream at
// k if it has entries after the waiter's id, under k's shard lock; a
// XREADGROUP whose key or group is gone is answered with an error.
func (srv *Server) serveStream(w *waiter, k blockKey) serveResult {
	db := srv.ks.DBs[k.db]
	key := []byte(k.key)
	sh := db.Shard(srv.ks.ShardOf(key))
	sh.Lock()
	defer sh.Unlock()
	if !srv.persistReady() {
		return serveEmpty
	}
	sw := w.stream
	e := db.Lookup(key)
	var st *keyspace.Stream
	if e != nil && e.Type() == keyspace.TypeStream {
		st = e.Obj.(*keyspace.Stream)
	}
	var wr resp.Writer
	wr.Proto = w.proto
	var g *keyspace.StreamGroup
	gt := sw.ids[k.key]
	switch {
	case st == nil && sw.group == nil:
		return serveEmpty
	case st == nil:
		wr.Error(errXReadUnblocked)
	default:
		if sw.group != nil {
			if g = st.Group(sw.group); g == nil {
				wr.Error(errXReadNoGroup)
				break
			}
			gt = g.LastID
		}
		if st.LastID.Compare(gt) <= 0 {
			return serveEmpty
		}
	}
	if !srv.claimServe(w) {
		return serveLost
	}
	srv.preimage(k.db, key)
	if len(wr.B) > 0 {
		srv.countBlockedError(w.s, wr.B)
	} else {
		if wr.Proto == 2 {
			wr.Array(1)
			wr.Array(2)
		} else {
			wr.Map(1)
		}
		wr.Bulk(key)
		start, _ := gt.Next()
		s := w.s
		s.scratch = s.scratch[:0]
		if g != nil {
			s.readGroup(&wr, st, &groupRead{key: key, g: g, consumer: sw.consumer, noack: sw.noack}, start, sw.count)
		} else {
			writeRange(&wr, st, start, keyspace.MaxStreamID, sw.count, false)
		}
	}
	w.reply = wr.B
	srv.doneServe(w)
	return serveDone
}

// xgroupTarget looks up the key and group of an XGROUP subcommand,
// replying with Redis's errors: the key must exist (unless mkstream) and,
// when needGroup, the group too.
func (s *Session) xgroupTarget(mkstream, needGroup bool) (st *keyspace.Stream, g *keyspace.StreamGroup, ok bool) {
	st, wrong := s.lookupStream(s.Args[2])
	if wrong {
		return nil, nil, false
	}
	if !mkstream {
		if st == nil {
			s.W.Error(errXGroupNoKey)
			return nil, nil, false
		}
		g = st.Group(s.Args[3])
		if g == nil && needGroup {
			s.W.Error(fmt.Sprintf("NOGROUP No such consumer group '%s' for key name '%s'", s.Args[3], s.Args[2]))
			return nil, nil, false
		}
	}
	return st, g, true
}

// subSyntaxError is Redis's addReplySubcommandSyntaxError.
func (s *Session) subSyntaxError() {
	s.W.Error(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%.128s'. Try %s HELP.", s.Args[1], strings.ToUpper(string(s.Args[0]))))
}

// xgroupOptions parses the MKSTREAM (create only) and ENTRIESREAD options
// of XGROUP CREATE and SETID.
func (s *Session) xgroupOptions(create bool) (mkstream bool, entriesRead int64, ok bool) {
	entriesRead = -1
	for i := 5; i < len(s.Args); {
		switch {
		case create && resp.EqualFold(s.Args[i], "mkstream"):
			mkstream = true
			i++
		case resp.EqualFold(s.Args[i], "entriesread") && i+1 < len(s.Args):
			n, ok := s.intArg(i + 1)
			if !ok {
				return false, 0, false
			}
			if n < 0 && n != -1 {
				s.W.Error("ERR value for ENTRIESREAD must be positive or -1")
				return false, 0, false
			}
			entriesRead = n
			i += 2
		default:
			s.subSyntaxError()
			return false, 0, false
		}
	}
	return mkstream, entriesRead, true
}

func cmdXGroupCreate(s *Session) {
	mkstream, entriesRead, ok := s.xgroupOptions(true)
	if !ok {
		return
	}
	st, _, ok := s.xgroupTarget(mkstream, false)
	if !ok {
		return
	}
	if len(s.Args) > 8 {
		s.subSyntaxError()
		return
	}
	key := s.Args[2]
	var id keyspace.StreamID
	if a := s.Args[4]; len(a) == 1 && a[0] == '$' {
		if st != nil {
			id = st.LastID
		}
	} else if id, ok = s.streamIDArg(a, 0, true); !ok {
		return
	}
	created := false
	if st == nil {
		st = keyspace.NewStream()
		s.db.SetObject(key, st)
		created = true
	}
	g := st.CreateGroup(s.Args[3], id, entriesRead)
	if g == nil {
		s.W.Error(errBusyGroup)
		return
	}
	eff := [][]byte{bXGROUP, bCREATE, key, g.Name, s.idBytes(id)}
	if created {
		eff = append(eff, bMKSTREAM)
	}
	s.emitKey(key, append(eff, bENTRIESREAD, s.itoa(entriesRead))...)
	s.W.OK()
	s.notify(notifyStream, "xgroup-create", key)
}

func cmdXGroupSetID(s *Session) {
	_, entriesRead, ok := s.xgroupOptions(false)
	if !ok {
		return
	}
	st, g, ok := s.xgroupTarget(false, true)
	if !ok {
		return
	}
	if len(s.Args) != 5 && len(s.Args) != 7 {
		s.subSyntaxError()
		return
	}
	var id keyspace.StreamID
	if a := s.Args[4]; len(a) == 1 && a[0] == '$' {
		id = st.LastID
	} else if id, ok = s.streamIDArg(a, 0, false); !ok {
		return
	}
	g.LastID, g.EntriesRead = id, entriesRead
	s.emitGroupID(s.Args[2], g)
	s.W.OK()
	s.notify(notifyStream, "xgroup-setid", s.Args[2])
}

func cmdXGroupDestroy(s *Session) {
	st, g, ok := s.xgroupTarget(false, false)
	if !ok {
		return
	}
	if g == nil {
		s.W.Int(0)
		return
	}
	st.DestroyGroup(g.Name)
	s.emitKey(s.Args[2], bXGROUP, bDESTROY, s.Args[2], s.Args[3])
	s.W.Int(1)
	s.notify(notifyStream, "xgroup-destroy", s.Args[2])
}

func cmdXGroupCreateConsumer(s *Session) {
	_, g, ok := s.xgroupTarget(false, true)
	if !ok {
		return
	}
	if g.CreateConsumer(s.Args[4], s.srv.ks.Now()) == nil {
		s.W.Int(0)
		return
	}
	s.emitKey(s.Args[2], bXGROUP, bCREATECONSUMER, s.Args[2], s.Args[3], s.Args[4])
	s.notify(notifyStream, "xgroup-createconsumer", s.Args[2])
	s.W.Int(1)
}

func cmdXGroupDelConsumer(s *Session) {
	_, g, ok := s.xgroupTarget(false, true)
	if !ok {
		return
	}
	c := g.Consumer(s.Args[4])
	if c == nil {
		s.W.Int(0)
		return
	}
	n := g.DeleteConsumer(c)
	s.emitKey(s.Args[2], bXGROUP, bDELCONSUMER, s.Args[2], s.Args[3], s.Args[4])
	s.notify(notifyStream, "xgroup-delconsumer", s.Args[2])
	s.W.Int(int64(n))
}

func cmdXGroupHelp(s *Session) {
	help(s, "XGROUP",
		"CREATE <key> <groupname> <id|$> [option]",
		"    Create a new consumer group. Options are:",
		"    * MKSTREAM",
		"      Create the empty stream if it does not exist.",
		"    * ENTRIESREAD entries_read",
		"      Set the group's entries_read counter (internal use).",
		"CREATECONSUMER <key> <groupname> <consumer>",
		"    Create a new consumer in the specified group.",
		"DELCONSUMER <key> <groupname> <consumer>",
		"    Remove the specified consumer.",
		"DESTROY <key> <groupname>",
		"    Remove the specified group.",
		"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
		"    Set the current group ID and entries_read counter.")
}

func cmdXSetID(s *Session) {
	key := s.Args[1]
	id, ok := s.streamIDArg(s.Args[2], 0, true)
	if !ok {
		return
	}
	entriesAdded := int64(-1)
	var maxDel keyspace.StreamID
	for i := 3; i < len(s.Args); i += 2 {
		more := len(s.Args) - 1 - i
		switch {
		case resp.EqualFold(s.Args[i], "entriesadded") && more > 0:
			n, ok := s.intArg(i + 1)
			if !ok {
				return
			}
			if n < 0 {
				s.W.Error("ERR entries_added must be positive")
				return
			}
			entriesAdded = n
		case resp.EqualFold(s.Args[i], "maxdeletedid") && more > 0:
			if maxDel, ok = s.streamIDArg(s.Args[i+1], 0, true); !ok {
				return
			}
			if id.Compare(maxDel) < 0 {
				s.W.Error("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
				return
			}
		default:
			s.W.Error(errSyntax)
			return
		}
	}
	st, wrong := s.lookupStream(key)
	if wrong {
		return
	}
	if st == nil {
		s.W.Error(errNoSuchKey)
		return
	}
	if st.Len() > 0 {
		if maxID, _ := st.Edge(false); id.Compare(maxID) < 0 {
			s.W.Error("ERR The ID specified in XSETID is smaller than the target stream top item")
			return
		}
		if entriesAdded != -1 && uint64(st.Len()) > uint64(entriesAdded) {
			s.W.Error("ERR The entries_added specified in XSETID is smaller than the target stream length")
			return
		}
	}
	st.LastID = id
	eff := [][]byte{bXSETID, key, s.idBytes(id)}
	if entriesAdded != -1 {
		st.EntriesAdded = uint64(entriesAdded)
		eff = append(eff, bENTRIESADDED, s.itoa(entriesAdded))
	}
	if !maxDel.IsZero() {
		st.MaxDeletedID = maxDel
		eff = append(eff, bMAXDELETEDID, s.idBytes(maxDel))
	}
	s.emit(eff...)
	s.W.OK()
	s.notify(notifyStream, "xsetid", key)
}

func cmdXAck(s *Session) {
	key := s.Args[1]
	_, g, wrong := s.lookupGroup(key, s.Args[2])
	if wrong {
		return
	}
	if g == nil {
		s.W.Int(0)
		return
	}
	var idBuf [4]keyspace.StreamID
	ids, ok := s.parseIDs(3, idBuf[:0])
	if !ok {
		return
	}
	var effBuf [8][]byte
	eff := append(effBuf[:0], bXACK, key, g.Name)
	for _, id := range ids {
		if g.Ack(id) {
			eff = append(eff, s.idBytes(id))
		}
	}
	if len(eff) > 3 {
		s.emit(eff...)
	}
	s.W.Int(int64(len(eff) - 3))
}

// lookupGroup returns key's stream and its group named group, g nil when
// either is missing; wrong reports (and replies to) a value of another
// type.
func (s *Session) lookupGroup(key, group []byte) (st *keyspace.Stream, g *keyspace.StreamGroup, wrong bool) {
	st, wrong = s.lookupStream(key)
	if st != nil {
		g = st.Group(group)
	}
	return st, g, wrong
}

// groupArg returns key's stream and its group named group; when either is
// missing it replies with Redis's NOGROUP error, and with WRONGTYPE for a
// value of another type, and ok is false.
func (s *Session) groupArg(key, group []byte) (st *keyspace.Stream, g *keyspace.StreamGroup, ok bool) {
	st, g, wrong := s.lookupGroup(key, group)
	if wrong {
		return nil, nil, false
	}
	if g == nil {
		s.W.Error(fmt.Sprintf("NOGROUP No such key '%s' or consumer group '%s'", key, group))
		return nil, nil, false
	}
	return st, g, true
}

func cmdXPending(s *Session) {
	a := s.Args
	if len(a) != 3 && (len(a) < 6 || len(a) > 9) {
		s.W.Error(errSyntax)
		return
	}
	var start, end keyspace.StreamID
	var count, minIdle int64
	var consumer []byte
	if len(a) >= 6 {
		si := 3
		if resp.EqualFold(a[3], "idle") {
			n, ok := s.intArg(4)
			if !ok {
				return
			}
			minIdle = n
			if len(a) < 8 {
				s.W.Error(errSyntax)
				return
			}
			si += 2
		}
		n, ok := s.intArg(si + 2)
		if !ok {
			return
		}
		count = max(n, 0)
		if start, ok = s.intervalArg(a[si], false); !ok {
			return
		}
		if end, ok = s.intervalArg(a[si+1], true); !ok {
			return
		}
		if si+3 < len(a) {
			consumer = a[si+3]
		}
	}
	_, g, ok := s.groupArg(a[1], a[2])
	if !ok {
		return
	}
	pending := g.Pending()
	if len(a) == 3 {
		s.W.Array(4)
		s.W.Int(int64(len(pending)))
		if len(pending) == 0 {
			s.W.Null()
			s.W.Null()
			s.W.NullArray()
			return
		}
		writeID(&s.W, pending[0].ID)
		writeID(&s.W, pending[len(pending)-1].ID)
		n := 0
		for _, c := range g.Consumers() {
			if len(c.Pending()) > 0 {
				n++
			}
		}
		s.W.Array(n)
		for _, c := range g.Consumers() {
			if p := len(c.Pending()); p > 0 {
				s.W.Array(2)
				s.W.Bulk(c.Name)
				s.W.BulkInt(int64(p))
			}
		}
		return
	}
	from := g.PendingFrom(start)
	if consumer != nil {
		c := g.Consumer(consumer)
		if c == nil {
			s.W.Array(0)
			return
		}
		pending, from = c.Pending(), c.PendingFrom(start)
	}
	now := s.srv.ks.Now()
	var body resp.Writer
	body.Proto = s.W.Proto
	n := 0
	for i := from; count > 0 && i < len(pending) && pending[i].ID.Compare(end) <= 0; i++ {
		nack := pending[i]
		if minIdle != 0 && now-nack.DeliveryTime < minIdle {
			continue
		}
		n++
		count--
		body.Array(4)
		writeID(&body, nack.ID)
		body.Bulk(nack.Consumer.Name)
		body.Int(max(now-nack.DeliveryTime, 0))
		body.Int(int64(nack.DeliveryCount))
	}
	s.W.Array(n)
	s.W.Raw(body.B)
}

// claimer gives pending entries of a group to one consumer, for XCLAIM
// and XAUTOCLAIM, writing each entry it claims (only its id with JUSTID)
// to body.
type claimer struct {
	s      *Session
	st     *keyspace.Stream
	gr     groupRead
	c      *keyspace.StreamConsumer // looked up or created on the first claim
	justID bool
	body   resp.Writer
	n      int // how many entries body holds
}

// claim gives nack, the pending entry of id, to the consumer, delivered at
// delivery, its delivery count set to retry (when not negative) or, unless
// JUSTID, counted up; it reports the claim.
func (cl *claimer) claim(id keyspace.StreamID, nack *keyspace.StreamNACK, delivery, retry int64) {
	if cl.c == nil {
		cl.c = cl.s.groupConsumer(&cl.gr)
	}
	cl.gr.g.Claim(id, nack, cl.c)
	nack.DeliveryTime = delivery
	if retry >= 0 {
		nack.DeliveryCount = uint64(retry)
	} else if !cl.justID {
		nack.DeliveryCount++
	}
	if cl.justID {
		writeID(&cl.body, id)
	} else {
		cl.st.Get(id, func(fv [][]byte) { writeEntry(&cl.body, id, fv) })
	}
	cl.n++
	cl.s.emitClaim(cl.gr.key, cl.gr.g, cl.c.Name, id, nack)
}

// drop acknowledges nack, the pending entry of id whose entry is gone,
// reporting its last state first.
func (cl *claimer) drop(id keyspace.StreamID, nack *keyspace.StreamNACK) {
	cl.s.emitClaim(cl.gr.key, cl.gr.g, nack.Consumer.Name, id, nack)
	cl.gr.g.Ack(id)
}

func cmdXClaim(s *Session) {
	a := s.Args
	key := a[1]
	st, g, ok := s.groupArg(key, a[2])
	if !ok {
		return
	}
	minIdle, ok := resp.ParseInt(a[4])
	if !ok {
		s.W.Error("ERR Invalid min-idle-time argument for XCLAIM")
		return
	}
	minIdle = max(minIdle, 0)
	var ids []keyspace.StreamID
	j := 5
	for ; j < len(a); j++ {
		id, _, ok := keyspace.ParseStreamID(a[j], 0, true, false)
		if !ok {
			break
		}
		ids = append(ids, id)
	}
	now := s.srv.ks.Now()
	retry := int64(-1)
	delivery := int64(-1)
	force, justID := false, false
	var lastID keyspace.StreamID
	// intOpt moves j onto the argument of the option name and parses it,
	// replying with Redis's error when it is no integer.
	intOpt := func(name string) (int64, bool) {
		j++
		n, ok := resp.ParseInt(a[j])
		if !ok {
			s.W.Error("ERR Invalid " + name + " option argument for XCLAIM")
		}
		return n, ok
	}
	for ; j < len(a); j++ {
		more := len(a) - 1 - j
		opt := a[j]
		switch {
		case resp.EqualFold(opt, "force"):
			force = true
		case resp.EqualFold(opt, "justid"):
			justID = true
		case resp.EqualFold(opt, "idle") && more > 0:
			n, ok := intOpt("IDLE")
			if !ok {
				return
			}
			delivery = now - n
		case resp.EqualFold(opt, "time") && more > 0:
			if delivery, ok = intOpt("TIME"); !ok {
				return
			}
		case resp.EqualFold(opt, "retrycount") && more > 0:
			if retry, ok = intOpt("RETRYCOUNT"); !ok {
				return
			}
		case resp.EqualFold(opt, "lastid") && more > 0:
			j++
			if lastID, ok = s.streamIDArg(a[j], 0, true); !ok {
				return
			}
		default:
			s.W.Error(fmt.Sprintf("ERR Unrecognized XCLAIM option '%s'", opt))
			return
		}
	}
	moved := false
	if lastID.Compare(g.LastID) > 0 {
		g.LastID = lastID
		moved = true
	}
	// A time in the future is now, as in Redis. While the log is replayed
	// the keyspace's clock is stopped (persist.go), so the wall clock
	// bounds the time instead: the TIME of a logged XCLAIM is kept.
	if limit := max(now, time.Now().UnixMilli()); delivery == -1 || delivery < 0 || delivery > limit {
		delivery = now
	}
	cl := claimer{s: s, st: st, gr: groupRead{key: key, g: g, consumer: a[3]}, justID: justID}
	cl.body.Proto = s.W.Proto
	for _, id := range ids {
		nack := g.NACK(id)
		if !st.Exists(id) {
			if nack != nil {
				cl.drop(id, nack)
			}
			continue
		}
		if force && nack == nil {
			nack = g.Claim(id, nil, nil)
		} else if nack == nil {
			continue
		} else if nack.Consumer != nil && minIdle != 0 && now-nack.DeliveryTime < minIdle {
			continue
		}
		cl.claim(id, nack, delivery, retry)
	}
	if moved {
		s.emitGroupID(key, g)
	}
	s.W.Array(cl.n)
	s.W.Raw(cl.body.B)
}

func cmdXAutoClaim(s *Session) {
	a := s.Args
	key := a[1]
	minIdle, ok := resp.ParseInt(a[4])
	if !ok {
		s.W.Error("ERR Invalid min-idle-time argument for XAUTOCLAIM")
		return
	}
	minIdle = max(minIdle, 0)
	start, ok := s.intervalArg(a[5], false)
	if !ok {
		return
	}
	count := int64(100)
	justID := false
	for j := 6; j < len(a); j++ {
		more := len(a) - 1 - j
		switch {
		case resp.EqualFold(a[j], "count") && more > 0:
			n, ok := resp.ParseInt(a[j+1])
			if !ok || n < 1 || n > math.MaxInt64/16 {
				s.W.Error("ERR COUNT must be > 0")
				return
			}
			count = n
			j++
		case resp.EqualFold(a[j], "justid"):
			justID = true
		default:
			s.W.Error(errSyntax)
			return
		}
	}
	st, g, ok := s.groupArg(key, a[2])
	if !ok {
		return
	}
	attempts := count * 10
	now := s.srv.ks.Now()
	cl := claimer{s: s, st: st, gr: groupRead{key: key, g: g, consumer: a[3]}, justID: justID}
	cl.body.Proto = s.W.Proto
	var deleted []keyspace.StreamID
	i := g.PendingFrom(start)
	for attempts > 0 && count > 0 {
		attempts--
		pending := g.Pending()
		if i >= len(pending) {
			break
		}
		nack := pending[i]
		id := nack.ID
		if !st.Exists(id) {
			cl.drop(id, nack)
			deleted = append(deleted, id)
			count--
			continue
		}
		i++
		if minIdle != 0 && now-nack.DeliveryTime < minIdle {
			continue
		}
		cl.claim(id, nack, now, -1)
		count--
	}
	var next keyspace.StreamID
	if pending := g.Pending(); i < len(pending) {
		next = pending[i].ID
	}
	s.W.Array(3)
	writeID(&s.W, next)
	s.W.Array(cl.n)
	s.W.Raw(cl.body.B)
	s.W.Array(len(deleted))
	for _, id := range deleted {
		writeID(&s.W, id)
	}
}

// xinfoStream looks up XINFO's key, replying when it is absent or not a
// stream.
func (s *Session) xinfoStream() *keyspace.Stream {
	st, wrong := s.lookupStream(s.Args[2])
	if wrong {
		return nil
	}
	if st == nil {
		s.W.Error(errNoSuchKey)
	}
	return st
}

// writeGroupPosition writes XINFO's last-delivered-id, entries-read and
// lag fields of a group, a null for a read counter or lag that is unknown.
func writeGroupPosition(w *resp.Writer, st *keyspace.Stream, g *keyspace.StreamGroup) {
	w.BulkString("last-delivered-id")
	writeID(w, g.LastID)
	w.BulkString("entries-read")
	if g.EntriesRead != -1 {
		w.Int(g.EntriesRead)
	} else {
		w.Null()
	}
	w.BulkString("lag")
	if lag, ok := st.Lag(g); ok {
		w.Int(lag)
	} else {
		w.Null()
	}
}

func cmdXInfoStream(s *Session) {
	st := s.xinfoStream()
	if st == nil {
		return
	}
	opts := s.Args[3:]
	full := len(opts) > 0
	count := int64(10)
	if full {
		if (len(opts) != 1 && len(opts) != 3) || !resp.EqualFold(opts[0], "full") {
			s.subSyntaxError()
			return
		}
		if len(opts) == 3 {
			if !resp.EqualFold(opts[1], "count") {
				s.subSyntaxError()
				return
			}
			n, ok := s.intArg(5)
			if !ok {
				return
			}
			count = n
			if count < 0 {
				count = 10
			}
		}
	}
	w := &s.W
	if full {
		w.Map(9)
	} else {
		w.Map(10)
	}
	w.BulkString("length")
	w.Int(int64(st.Len()))
	w.BulkString("radix-tree-keys")
	w.Int(int64(st.Nodes()))
	w.BulkString("radix-tree-nodes")
	w.Int(int64(st.RadixNodes()))
	w.BulkString("last-generated-id")
	writeID(w, st.LastID)
	w.BulkString("max-deleted-entry-id")
	writeID(w, st.MaxDeletedID)
	w.BulkString("entries-added")
	w.Int(int64(st.EntriesAdded))
	w.BulkString("recorded-first-entry-id")
	writeID(w, st.FirstID)
	if !full {
		w.BulkString("groups")
		w.Int(int64(len(st.Groups())))
		for _, rev := range []bool{false, true} {
			if rev {
				w.BulkString("last-entry")
			} else {
				w.BulkString("first-entry")
			}
			found := false
			st.Range(keyspace.StreamID{}, keyspace.MaxStreamID, rev, func(id keyspace.StreamID, fv [][]byte) bool {
				writeEntry(w, id, fv)
				found = true
				return false
			})
			if !found {
				w.Null()
			}
		}
		return
	}
	w.BulkString("entries")
	writeRange(w, st, keyspace.StreamID{}, keyspace.MaxStreamID, count, false)
	w.BulkString("groups")
	w.Array(len(st.Groups()))
	limit := func(n int) int {
		if count == 0 {
			return n
		}
		return min(n, int(count))
	}
	for _, g := range st.Groups() {
		w.Map(7)
		w.BulkString("name")
		w.Bulk(g.Name)
		writeGroupPosition(w, st, g)
		pending := g.Pending()
		w.BulkString("pel-count")
		w.Int(int64(len(pending)))
		w.BulkString("pending")
		w.Array(limit(len(pending)))
		for _, n := range pending[:limit(len(pending))] {
			w.Array(4)
			writeID(w, n.ID)
			w.Bulk(n.Consumer.Name)
			w.Int(n.DeliveryTime)
			w.Int(int64(n.DeliveryCount))
		}
		w.BulkString("consumers")
		w.Array(len(g.Consumers()))
		for _, c := range g.Consumers() {
			w.Map(4)
			w.BulkString("name")
			w.Bulk(c.Name)
			w.BulkString("seen-time")
			w.Int(c.SeenTime)
			cp := c.Pending()
			w.BulkString("pel-count")
			w.Int(int64(len(cp)))
			w.BulkString("pending")
			w.Array(limit(len(cp)))
			for _, n := range cp[:limit(len(cp))] {
				w.Array(3)
				writeID(w, n.ID)
				w.Int(n.DeliveryTime)
				w.Int(int64(n.DeliveryCount))
			}
		}
	}
}

func cmdXInfoGroups(s *Session) {
	st := s.xinfoStream()
	if st == nil {
		return
	}
	w := &s.W
	w.Array(len(st.Groups()))
	for _, g := range st.Groups() {
		w.Map(6)
		w.BulkString("name")
		w.Bulk(g.Name)
		w.BulkString("consumers")
		w.Int(int64(len(g.Consumers())))
		w.BulkString("pending")
		w.Int(int64(len(g.Pending())))
		writeGroupPosition(w, st, g)
	}
}

func cmdXInfoConsumers(s *Session) {
	st := s.xinfoStream()
	if st == nil {
		return
	}
	g := st.Group(s.Args[3])
	if g == nil {
		s.W.Error(fmt.Sprintf("NOGROUP No such consumer group '%s' for key name '%s'", s.Args[3], s.Args[2]))
		return
	}
	now := s.srv.ks.Now()
	w := &s.W
	w.Array(len(g.Consumers()))
	for _, c := range g.Consumers() {
		w.Map(3)
		w.BulkString("name")
		w.Bulk(c.Name)
		w.BulkString("pending")
		w.Int(int64(len(c.Pending())))
		w.BulkString("idle")
		w.Int(max(now-c.SeenTime, 0))
	}
}

func cmdXInfoHelp(s *Session) {
	help(s, "XINFO",
		"CONSUMERS <key> <groupname>",
		"    Show consumers of <groupname>.",
		"GROUPS <key>",
		"    Show the stream consumer groups.",
		"STREAM <key> [FULL [COUNT <count>]",
		"    Show information about the stream.")
}
