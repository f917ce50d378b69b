package keyspace

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strconv"

	"github.com/recached/recached/resp"
)

// StreamID is a stream entry's id: milliseconds and a sequence number.
type StreamID struct{ Ms, Seq uint64 }

// MaxStreamID is the largest id, "+" in a range.
var MaxStreamID = StreamID{math.MaxUint64, math.MaxUint64}

// Compare returns -1, 0 or 1 as a is before, equal to or after b.
func (a StreamID) Compare(b StreamID) int {
	switch {
	case a.Ms < b.Ms:
		return -1
	case a.Ms > b.Ms:
		return 1
	case a.Seq < b.Seq:
		return -1
	case a.Seq > b.Seq:
		return 1
	}
	return 0
}

// IsZero reports whether id is 0-0.
func (a StreamID) IsZero() bool { return a.Ms == 0 && a.Seq == 0 }

// Next returns the id after a; ok is false when a is the largest id.
func (a StreamID) Next() (StreamID, bool) {
	switch {
	case a.Seq < math.MaxUint64:
		return StreamID{a.Ms, a.Seq + 1}, true
	case a.Ms < math.MaxUint64:
		return StreamID{a.Ms + 1, 0}, true
	}
	return StreamID{}, false
}

// Prev returns the id before a; ok is false when a is 0-0.
func (a StreamID) Prev() (StreamID, bool) {
	switch {
	case a.Seq > 0:
		return StreamID{a.Ms, a.Seq - 1}, true
	case a.Ms > 0:
		return StreamID{a.Ms - 1, math.MaxUint64}, true
	}
	return MaxStreamID, false
}

// Append appends the id as "ms-seq".
func (a StreamID) Append(b []byte) []byte {
	b = strconv.AppendUint(b, a.Ms, 10)
	b = append(b, '-')
	return strconv.AppendUint(b, a.Seq, 10)
}

// String returns the id as "ms-seq".
func (a StreamID) String() string { return string(a.Append(nil)) }

func (a StreamID) key() [16]byte {
	var k [16]byte
	binary.BigEndian.PutUint64(k[:8], a.Ms)
	binary.BigEndian.PutUint64(k[8:], a.Seq)
	return k
}

// ParseStreamID parses an id as Redis's streamGenericParseIDOrReply does:
// "ms-seq", or "ms" with the sequence missingSeq; "-" and "+" are the
// smallest and largest ids unless strict is set. With seqStar, "ms-*" is
// accepted and seqGiven reports whether the sequence was given.
func ParseStreamID(b []byte, missingSeq uint64, strict, seqStar bool) (id StreamID, seqGiven, ok bool) {
	if len(b) > 127 {
		return id, false, false
	}
	if len(b) == 1 && (b[0] == '-' || b[0] == '+') {
		if strict {
			return id, false, false
		}
		if b[0] == '-' {
			return StreamID{}, true, true
		}
		return MaxStreamID, true, true
	}
	seqGiven = true
	msPart, seqPart, dash := bytes.Cut(b, []byte{'-'})
	ms, ok := parseULL(msPart)
	if !ok {
		return id, false, false
	}
	seq := missingSeq
	if dash {
		if seqStar && len(seqPart) == 1 && seqPart[0] == '*' {
			seq, seqGiven = 0, false
		} else if seq, ok = parseULL(seqPart); !ok {
			return id, false, false
		}
	}
	return StreamID{ms, seq}, seqGiven, true
}

// parseULL is Redis's string2ull: a strict integer, else what C's strtoull
// reads when it consumes the whole text without overflow.
func parseULL(b []byte) (uint64, bool) {
	if n, ok := resp.ParseInt(b); ok {
		return uint64(n), n >= 0
	}
	i := 0
	for i < len(b) && (b[i] == ' ' || (b[i] >= '\t' && b[i] <= '\r')) {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	if i == len(b) {
		return 0, false
	}
	var v uint64
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (math.MaxUint64-uint64(c-'0'))/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// Stream entry flags, as in Redis's listpack entries.
const (
	entryDeleted    = 1
	entrySameFields = 2
)

// StreamListpackMax bounds the bytes of one node, and of one entry's fields
// and values together (Redis's STREAM_LISTPACK_MAX_SIZE).
const StreamListpackMax = 1 << 30

// streamNode is a run of consecutive entries packed in one byte slice, the
// equivalent of one of Redis's listpacks: every entry's id is a delta from
// the node's master id and an entry with the master entry's field names
// stores only its values.
//
// An entry is: flags (1 byte), the zigzag varint deltas of ms and seq, then
// unless entrySameFields the varint field count and the fields, then the
// values, each as a varint length and the bytes.
type streamNode struct {
	master StreamID
	fields [][]byte // the master entry's field names
	data   []byte
	live   int // entries not deleted
	dead   int // entries flagged deleted
	// lastOff is the offset of the last entry in data.
	lastOff int
	// lpBytes is the size Redis's listpack for the same entries would have,
	// which decides, like in Redis, when a new node starts.
	lpBytes int
}

// Stream is a stream value: entries in nodes sorted by master id, plus the
// stream's counters and its consumer groups.
type Stream struct {
	nodes        []*streamNode
	length       uint64
	LastID       StreamID // the last id generated
	FirstID      StreamID // the first live entry's id, 0-0 when empty
	MaxDeletedID StreamID // the largest id deleted
	EntriesAdded uint64   // every entry ever added
	groups       []*StreamGroup
	fv           [][]byte // scratch for iteration
	// seek remembers where the last forward Range stopped, so that a read
	// resuming after it (a consumer group's ">") starts there rather than
	// at its node's first entry.
	seek streamSeek
}

// streamSeek is a position in a node: every entry before off in node has
// an id not after prev.
type streamSeek struct {
	node *streamNode
	off  int
	prev StreamID
}

// NewStream returns an empty stream.
func NewStream() *Stream { return &Stream{} }

// Type reports TypeStream.
func (s *Stream) Type() Type { return TypeStream }

// Encoding reports "stream".
func (s *Stream) Encoding() string { return "stream" }

// Len returns the number of entries.
func (s *Stream) Len() int { return int(s.length) }

// Nodes returns the number of nodes (XINFO's radix-tree-keys).
func (s *Stream) Nodes() int { return len(s.nodes) }

// MemoryUsage estimates the bytes the stream takes.
func (s *Stream) MemoryUsage() int64 {
	n := int64(96)
	for _, nd := range s.nodes {
		n += 96 + int64(cap(nd.data))
		for _, f := range nd.fields {
			n += 24 + int64(cap(f))
		}
	}
	for _, g := range s.groups {
		n += 96 + int64(len(g.Name)) + int64(g.pel.Len())*(48+16)
		for _, c := range g.consumers {
			n += 64 + int64(len(c.Name)) + int64(c.pel.Len())*8
		}
	}
	return n
}

// lpIntSize is the bytes a listpack takes for an integer element.
func lpIntSize(v int64) int {
	var enc int
	switch {
	case v >= 0 && v <= 127:
		enc = 1
	case v >= -4096 && v <= 4095:
		enc = 2
	case v >= math.MinInt16 && v <= math.MaxInt16:
		enc = 3
	case v >= -1<<23 && v < 1<<23:
		enc = 4
	case v >= math.MinInt32 && v <= math.MaxInt32:
		enc = 5
	default:
		enc = 9
	}
	return enc + lpBacklen(enc)
}

// lpStrSize is the bytes a listpack takes for a string element, which it
// stores as an integer when the text is one.
func lpStrSize(b []byte) int {
	if v, ok := resp.ParseInt(b); ok {
		return lpIntSize(v)
	}
	var enc int
	switch n := len(b); {
	case n < 64:
		enc = 1 + n
	case n < 4096:
		enc = 2 + n
	default:
		enc = 5 + n
	}
	return enc + lpBacklen(enc)
}

func lpBacklen(l int) int {
	switch {
	case l <= 127:
		return 1
	case l < 16383:
		return 2
	case l < 2097151:
		return 3
	case l < 268435455:
		return 4
	}
	return 5
}

func zigzag(v uint64) uint64   { return uint64(int64(v)<<1) ^ uint64(int64(v)>>63) }
func unzigzag(v uint64) uint64 { return (v >> 1) ^ -(v & 1) }

// setCounts changes a node's live and dead counts, keeping lpBytes right.
func (n *streamNode) setCounts(live, dead int) {
	n.lpBytes += lpIntSize(int64(live)) - lpIntSize(int64(n.live)) + lpIntSize(int64(dead)) - lpIntSize(int64(n.dead))
	n.live, n.dead = live, dead
}

// header decodes the flags and id of the entry at off and returns the
// offset of its content.
func (n *streamNode) header(off int) (flags byte, id StreamID, next int) {
	d := n.data
	flags = d[off]
	off++
	dm, k := binary.Uvarint(d[off:])
	off += k
	ds, k := binary.Uvarint(d[off:])
	off += k
	return flags, StreamID{n.master.Ms + unzigzag(dm), n.master.Seq + unzigzag(ds)}, off
}

// entry decodes the entry at off: its flags, id and fields and values
// (alternating, appended to fv[:0]), and the offset of the next entry.
func (n *streamNode) entry(off int, fv [][]byte) (flags byte, id StreamID, out [][]byte, next int) {
	d := n.data
	flags, id, off = n.header(off)
	read := func() []byte {
		l, k := binary.Uvarint(d[off:])
		off += k
		b := d[off : off+int(l) : off+int(l)]
		off += int(l)
		return b
	}
	out = fv[:0]
	if flags&entrySameFields != 0 {
		for _, f := range n.fields {
			out = append(out, f, read())
		}
	} else {
		nf, k := binary.Uvarint(d[off:])
		off += k
		for i := uint64(0); i < nf; i++ {
			f := read()
			out = append(out, f, read())
		}
	}
	return flags, id, out, off
}

// skip returns the flags and id of the entry at off and the next offset,
// without decoding its content.
func (n *streamNode) skip(off int) (flags byte, id StreamID, next int) {
	d := n.data
	flags, id, off = n.header(off)
	skipOne := func() {
		l, k := binary.Uvarint(d[off:])
		off += k + int(l)
	}
	if flags&entrySameFields != 0 {
		for range n.fields {
			skipOne()
		}
	} else {
		nf, k := binary.Uvarint(d[off:])
		off += k
		for i := uint64(0); i < 2*nf; i++ {
			skipOne()
		}
	}
	return flags, id, off
}

// lastID returns the id of the node's last entry, deleted or not.
func (n *streamNode) lastID() StreamID {
	var id StreamID
	for off := 0; off < len(n.data); {
		_, id, off = n.skip(off)
	}
	return id
}

// Append adds an entry with id, which the caller has checked is after
// LastID, and fields and values fv (alternating). A new node starts when
// the last one has maxEntries entries (0: no bound) or would pass maxBytes,
// as Redis's stream-node-max-entries and stream-node-max-bytes decide.
func (s *Stream) Append(id StreamID, fv [][]byte, maxBytes, maxEntries int64) {
	numFields := len(fv) / 2
	tot := 0
	for _, b := range fv {
		tot += len(b)
	}
	if maxBytes <= 0 || maxBytes > StreamListpackMax {
		maxBytes = StreamListpackMax
	}
	var n *streamNode
	if len(s.nodes) > 0 {
		n = s.nodes[len(s.nodes)-1]
		if int64(n.lpBytes+tot) >= maxBytes || (maxEntries > 0 && int64(n.live+n.dead) >= maxEntries) {
			n.data = slices.Clip(n.data)
			n = nil
		}
	}
	same := false
	if n == nil {
		n = &streamNode{master: id, fields: make([][]byte, numFields)}
		n.lpBytes = 7 + lpIntSize(0) + lpIntSize(0) + lpIntSize(int64(numFields)) + lpIntSize(0)
		for i := range n.fields {
			n.fields[i] = append([]byte(nil), fv[2*i]...)
			n.lpBytes += lpStrSize(fv[2*i])
		}
		s.nodes = append(s.nodes, n)
		same = true
	} else if len(n.fields) == numFields {
		same = true
		for i, f := range n.fields {
			if !bytes.Equal(f, fv[2*i]) {
				same = false
				break
			}
		}
	}
	n.setCounts(n.live+1, n.dead)
	flags := byte(0)
	if same {
		flags = entrySameFields
	}
	dm, ds := id.Ms-n.master.Ms, id.Seq-n.master.Seq
	n.lastOff = len(n.data)
	d := append(n.data, flags)
	d = binary.AppendUvarint(d, zigzag(dm))
	d = binary.AppendUvarint(d, zigzag(ds))
	lp := lpIntSize(int64(flags)) + lpIntSize(int64(dm)) + lpIntSize(int64(ds))
	count := 3 + numFields
	if !same {
		d = binary.AppendUvarint(d, uint64(numFields))
		lp += lpIntSize(int64(numFields))
		count += numFields + 1
	}
	for i := 0; i < numFields; i++ {
		if !same {
			d = binary.AppendUvarint(d, uint64(len(fv[2*i])))
			d = append(d, fv[2*i]...)
			lp += lpStrSize(fv[2*i])
		}
		d = binary.AppendUvarint(d, uint64(len(fv[2*i+1])))
		d = append(d, fv[2*i+1]...)
		lp += lpStrSize(fv[2*i+1])
	}
	n.data = d
	n.lpBytes += lp + lpIntSize(int64(count))
	s.length++
	s.EntriesAdded++
	s.LastID = id
	if s.length == 1 {
		s.FirstID = id
	}
}

// nodeFor returns the index of the node that may hold id: the last whose
// master id is not after id, or 0.
func (s *Stream) nodeFor(id StreamID) int {
	i, found := slices.BinarySearchFunc(s.nodes, id, func(n *streamNode, id StreamID) int { return n.master.Compare(id) })
	if found {
		return i
	}
	return max(i-1, 0)
}

// Range calls fn for every live entry from start to end inclusive, in id
// order or, with rev, in reverse, until fn returns false. fv, the fields
// and values alternating, is only valid during the call.
func (s *Stream) Range(start, end StreamID, rev bool, fn func(id StreamID, fv [][]byte) bool) {
	if start.Compare(end) > 0 || len(s.nodes) == 0 {
		return
	}
	if !rev {
		first := s.nodeFor(start)
		off := 0
		if sk := s.seek; sk.node == s.nodes[first] && sk.prev.Compare(start) < 0 {
			off = sk.off
		}
		s.seek = streamSeek{}
		for i := first; i < len(s.nodes); i, off = i+1, 0 {
			n := s.nodes[i]
			if n.master.Compare(end) > 0 {
				return
			}
			for off < len(n.data) {
				flags, id, _ := n.header(off)
				if flags&entryDeleted != 0 || id.Compare(start) < 0 {
					_, _, off = n.skip(off)
					continue
				}
				if id.Compare(end) > 0 {
					return
				}
				_, _, s.fv, off = n.entry(off, s.fv)
				if !fn(id, s.fv) {
					s.seek = streamSeek{node: n, off: off, prev: id}
					return
				}
			}
		}
		return
	}
	var offs []int
	for i := s.nodeFor(end); i >= 0; i-- {
		n := s.nodes[i]
		offs = offs[:0]
		for off := 0; off < len(n.data); {
			offs = append(offs, off)
			_, _, off = n.skip(off)
		}
		for j := len(offs) - 1; j >= 0; j-- {
			var flags byte
			var id StreamID
			flags, id, s.fv, _ = n.entry(offs[j], s.fv)
			if flags&entryDeleted != 0 || id.Compare(end) > 0 {
				continue
			}
			if id.Compare(start) < 0 || !fn(id, s.fv) {
				return
			}
		}
	}
}

// Get calls fn with the fields and values of the live entry id and reports
// whether there is one.
func (s *Stream) Get(id StreamID, fn func(fv [][]byte)) bool {
	found := false
	s.Range(id, id, false, func(_ StreamID, fv [][]byte) bool {
		found = true
		if fn != nil {
			fn(fv)
		}
		return false
	})
	return found
}

// Exists reports whether id is a live entry.
func (s *Stream) Exists(id StreamID) bool { return s.Get(id, nil) }

// Delete flags the live entry id deleted, removing its node once no live
// entry remains in it, and reports whether there was one. It does not
// update FirstID or MaxDeletedID (see DeleteIDs).
func (s *Stream) Delete(id StreamID) bool {
	if len(s.nodes) == 0 {
		return false
	}
	i := s.nodeFor(id)
	n := s.nodes[i]
	for off := 0; off < len(n.data); {
		flags, eid, next := n.skip(off)
		c := eid.Compare(id)
		if c > 0 {
			return false
		}
		if c == 0 {
			if flags&entryDeleted != 0 {
				return false
			}
			s.length--
			if n.live == 1 {
				s.nodes = slices.Delete(s.nodes, i, i+1)
				return true
			}
			n.data[off] |= entryDeleted
			n.setCounts(n.live-1, n.dead+1)
			return true
		}
		off = next
	}
	return false
}

// DeleteIDs is XDEL: it deletes each live entry of ids, updating FirstID and
// MaxDeletedID, and returns the ids it deleted.
func (s *Stream) DeleteIDs(ids []StreamID) []StreamID {
	var deleted []StreamID
	first := false
	for _, id := range ids {
		if !s.Delete(id) {
			continue
		}
		if id == s.FirstID {
			first = true
		}
		if id.Compare(s.MaxDeletedID) > 0 {
			s.MaxDeletedID = id
		}
		deleted = append(deleted, id)
	}
	if len(deleted) > 0 {
		if s.length == 0 {
			s.FirstID = StreamID{}
		} else if first {
			s.FirstID, _ = s.Edge(true)
		}
	}
	return deleted
}

// Edge returns the first (or last) live entry's id; ok is false when the
// stream has none.
func (s *Stream) Edge(first bool) (id StreamID, ok bool) {
	if !first && len(s.nodes) > 0 {
		// The last entry of the last node is the usual answer.
		n := s.nodes[len(s.nodes)-1]
		if flags, id, _ := n.header(n.lastOff); flags&entryDeleted == 0 {
			return id, true
		}
	}
	s.Range(StreamID{}, MaxStreamID, !first, func(eid StreamID, _ [][]byte) bool {
		id, ok = eid, true
		return false
	})
	return id, ok
}

// FirstEntryID returns the first entry's id, a deleted one included, or
// MaxStreamID when the stream has no nodes (streamGetEdgeID without
// skipping tombstones).
func (s *Stream) FirstEntryID() StreamID {
	if len(s.nodes) == 0 {
		return MaxStreamID
	}
	_, id, _ := s.nodes[0].skip(0)
	return id
}

// TrimArgs is how XADD and XTRIM trim a stream.
type TrimArgs struct {
	ByID   bool     // MINID rather than MAXLEN
	MaxLen uint64   // MAXLEN: keep at most this many entries
	MinID  StreamID // MINID: keep no entry before this id
	Approx bool     // remove whole nodes only
	Limit  int64    // remove at most this many entries, 0 for no bound
}

// Trim removes entries from the head of the stream as args say and returns
// how many it removed, as Redis's streamTrim does.
func (s *Stream) Trim(args TrimArgs) int64 {
	var deleted int64
	for len(s.nodes) > 0 {
		if !args.ByID && s.length <= args.MaxLen {
			break
		}
		n := s.nodes[0]
		entries := int64(n.live)
		if args.Limit > 0 && deleted+entries > args.Limit {
			break
		}
		var remove bool
		if !args.ByID {
			remove = s.length-uint64(entries) >= args.MaxLen
		} else {
			remove = n.lastID().Compare(args.MinID) < 0
		}
		if remove {
			s.nodes = slices.Delete(s.nodes, 0, 1)
			s.length -= uint64(entries)
			deleted += entries
			continue
		}
		if args.Approx {
			break
		}
		var fromNode int
		for off := 0; off < len(n.data); {
			flags, id, next := n.skip(off)
			var stop bool
			if !args.ByID {
				stop = s.length <= args.MaxLen
			} else {
				stop = id.Compare(args.MinID) >= 0
			}
			if stop {
				break
			}
			if flags&entryDeleted == 0 {
				n.data[off] |= entryDeleted
				fromNode++
				s.length--
			}
			off = next
		}
		deleted += int64(fromNode)
		n.setCounts(n.live-fromNode, n.dead+fromNode)
		break
	}
	if s.length == 0 {
		s.FirstID = StreamID{}
	} else if deleted > 0 {
		s.FirstID, _ = s.Edge(true)
	}
	return deleted
}

// RadixNodes returns the number of nodes Redis's radix tree would have for
// the stream's node keys (XINFO's radix-tree-nodes).
func (s *Stream) RadixNodes() int {
	if len(s.nodes) == 0 {
		return 1
	}
	keys := make([][16]byte, len(s.nodes))
	for i, n := range s.nodes {
		keys[i] = n.master.key()
	}
	return raxCount(keys, 0)
}

// raxCount counts the radix tree nodes below and including the one at depth
// for sorted keys sharing their first depth bytes.
func raxCount(keys [][16]byte, depth int) int {
	if depth == 16 {
		return 1
	}
	d := depth
	for d < 16 && keys[0][d] == keys[len(keys)-1][d] {
		d++
	}
	if d > depth {
		// A compressed node over the shared bytes, then its child.
		return 1 + raxCount(keys, d)
	}
	count := 1
	for i := 0; i < len(keys); {
		j := i + 1
		for j < len(keys) && keys[j][depth] == keys[i][depth] {
			j++
		}
		count += raxCount(keys[i:j], depth+1)
		i = j
	}
	return count
}

// RangeHasTombstones reports whether a deleted entry may lie between start
// and end (streamRangeHasTombstones).
func (s *Stream) RangeHasTombstones(start, end StreamID) bool {
	if s.length == 0 || s.MaxDeletedID.IsZero() {
		return false
	}
	if s.FirstID.Compare(s.MaxDeletedID) > 0 {
		return false
	}
	return start.Compare(s.MaxDeletedID) <= 0 && s.MaxDeletedID.Compare(end) <= 0
}

// EstimateDistance returns id's logical read counter, its distance from the
// first entry ever added, or -1 when it cannot be known
// (streamEstimateDistanceFromFirstEverEntry).
func (s *Stream) EstimateDistance(id StreamID) int64 {
	if s.EntriesAdded == 0 {
		return 0
	}
	if s.length == 0 && id.Compare(s.LastID) < 1 {
		return int64(s.EntriesAdded)
	}
	switch c := id.Compare(s.LastID); {
	case c == 0:
		return int64(s.EntriesAdded)
	case c > 0:
		return -1
	}
	if s.MaxDeletedID.IsZero() || s.MaxDeletedID.Compare(s.FirstID) < 0 {
		switch id.Compare(s.FirstID) {
		case -1:
			return int64(s.EntriesAdded - s.length)
		case 0:
			return int64(s.EntriesAdded - s.length + 1)
		}
	}
	return -1
}

// Lag returns the number of entries the group has yet to read, ok false
// when it cannot be known (streamReplyWithCGLag).
func (s *Stream) Lag(g *StreamGroup) (int64, bool) {
	if s.EntriesAdded == 0 {
		return 0, true
	}
	if g.EntriesRead != -1 && !s.RangeHasTombstones(g.LastID, MaxStreamID) {
		return int64(s.EntriesAdded) - g.EntriesRead, true
	}
	if read := s.EstimateDistance(g.LastID); read != -1 {
		return int64(s.EntriesAdded) - read, true
	}
	return 0, false
}

// StreamGroup is a consumer group.
type StreamGroup struct {
	Name   []byte
	LastID StreamID // the last id delivered
	// EntriesRead is the logical read counter of LastID, -1 when unknown.
	EntriesRead int64
	pel         pel
	consumers   []*StreamConsumer // sorted by name
}

// StreamConsumer is one consumer of a group.
type StreamConsumer struct {
	Name     []byte
	SeenTime int64 // unix ms of its last activity
	pel      pel
}

// StreamNACK is a pending entry: delivered, not yet acknowledged.
type StreamNACK struct {
	ID            StreamID
	DeliveryTime  int64 // unix ms of the last delivery
	DeliveryCount uint64
	Consumer      *StreamConsumer
}

// pel is a pending entries list sorted by id: the entries are
// buf[head:], the slots before head freed by removals at the front (the
// oldest entry, the usual one to acknowledge), which cost O(1) and are
// reclaimed when the list grows or half of buf is free.
type pel struct {
	buf  []*StreamNACK
	head int
}

// items returns the pending entries in id order.
func (p *pel) items() []*StreamNACK { return p.buf[p.head:] }

func (p *pel) search(id StreamID) (int, bool) {
	return slices.BinarySearchFunc(p.items(), id, func(n *StreamNACK, id StreamID) int { return n.ID.Compare(id) })
}

func (p *pel) get(id StreamID) *StreamNACK {
	if i, ok := p.search(id); ok {
		return p.buf[p.head+i]
	}
	return nil
}

// compact moves the entries to the front of buf.
func (p *pel) compact() {
	n := copy(p.buf, p.buf[p.head:])
	clear(p.buf[n:])
	p.buf, p.head = p.buf[:n], 0
}

func (p *pel) insert(n *StreamNACK) {
	items := p.items()
	if len(items) == 0 || items[len(items)-1].ID.Compare(n.ID) < 0 {
		if len(p.buf) == cap(p.buf) && p.head > 0 {
			p.compact()
		}
		p.buf = append(p.buf, n)
		return
	}
	i, ok := p.search(n.ID)
	if ok {
		p.buf[p.head+i] = n
		return
	}
	p.buf = slices.Insert(p.buf, p.head+i, n)
}

func (p *pel) remove(id StreamID) {
	i, ok := p.search(id)
	if !ok {
		return
	}
	if i > 0 {
		p.buf = slices.Delete(p.buf, p.head+i, p.head+i+1)
		return
	}
	p.buf[p.head] = nil
	p.head++
	switch {
	case p.head == len(p.buf):
		p.buf, p.head = p.buf[:0], 0
	case p.head > len(p.buf)/2:
		p.compact()
	}
}

// Len returns the number of pending entries.
func (p *pel) Len() int { return len(p.buf) - p.head }

// from returns the position of the first entry at or after id.
func (p *pel) from(id StreamID) int {
	i, _ := p.search(id)
	return i
}

// Groups returns the consumer groups in name order; the caller must not
// change the slice.
func (s *Stream) Groups() []*StreamGroup { return s.groups }

func (s *Stream) searchGroup(name []byte) (int, bool) {
	return slices.BinarySearchFunc(s.groups, name, func(g *StreamGroup, name []byte) int { return bytes.Compare(g.Name, name) })
}

// Group returns the group name, or nil.
func (s *Stream) Group(name []byte) *StreamGroup {
	if i, ok := s.searchGroup(name); ok {
		return s.groups[i]
	}
	return nil
}

// CreateGroup adds a group, or returns nil when one of that name exists.
func (s *Stream) CreateGroup(name []byte, last StreamID, entriesRead int64) *StreamGroup {
	i, ok := s.searchGroup(name)
	if ok {
		return nil
	}
	g := &StreamGroup{Name: append([]byte(nil), name...), LastID: last, EntriesRead: entriesRead}
	s.groups = slices.Insert(s.groups, i, g)
	return g
}

// DestroyGroup removes the group name and reports whether it existed.
func (s *Stream) DestroyGroup(name []byte) bool {
	i, ok := s.searchGroup(name)
	if ok {
		s.groups = slices.Delete(s.groups, i, i+1)
	}
	return ok
}

// Pending returns the group's pending entries in id order; the caller must
// not change the slice.
func (g *StreamGroup) Pending() []*StreamNACK { return g.pel.items() }

// PendingFrom returns the position of the first pending entry at or after
// id in Pending.
func (g *StreamGroup) PendingFrom(id StreamID) int { return g.pel.from(id) }

// NACK returns the pending entry id, or nil.
func (g *StreamGroup) NACK(id StreamID) *StreamNACK { return g.pel.get(id) }

// Consumers returns the group's consumers in name order; the caller must
// not change the slice.
func (g *StreamGroup) Consumers() []*StreamConsumer { return g.consumers }

func (g *StreamGroup) searchConsumer(name []byte) (int, bool) {
	return slices.BinarySearchFunc(g.consumers, name, func(c *StreamConsumer, name []byte) int { return bytes.Compare(c.Name, name) })
}

// Consumer returns the consumer name, or nil.
func (g *StreamGroup) Consumer(name []byte) *StreamConsumer {
	if i, ok := g.searchConsumer(name); ok {
		return g.consumers[i]
	}
	return nil
}

// CreateConsumer adds a consumer seen at now, or returns nil when one of
// that name exists.
func (g *StreamGroup) CreateConsumer(name []byte, now int64) *StreamConsumer {
	i, ok := g.searchConsumer(name)
	if ok {
		return nil
	}
	c := &StreamConsumer{Name: append([]byte(nil), name...), SeenTime: now}
	g.consumers = slices.Insert(g.consumers, i, c)
	return c
}

// DeleteConsumer removes c and its pending entries and returns how many
// entries it had pending.
func (g *StreamGroup) DeleteConsumer(c *StreamConsumer) int {
	n := c.pel.Len()
	for _, nack := range c.pel.items() {
		g.pel.remove(nack.ID)
	}
	if i, ok := g.searchConsumer(c.Name); ok {
		g.consumers = slices.Delete(g.consumers, i, i+1)
	}
	return n
}

// Pending returns the consumer's pending entries in id order; the caller
// must not change the slice.
func (c *StreamConsumer) Pending() []*StreamNACK { return c.pel.items() }

// PendingFrom returns the position of the first of the consumer's pending
// entries at or after id.
func (c *StreamConsumer) PendingFrom(id StreamID) int { return c.pel.from(id) }

// Deliver records the delivery of id to c at now: a new pending entry, or
// an existing one moved to c with its count reset to 1.
func (g *StreamGroup) Deliver(id StreamID, c *StreamConsumer, now int64) *StreamNACK {
	if n := g.pel.get(id); n != nil {
		if n.Consumer != nil {
			n.Consumer.pel.remove(id)
		}
		n.Consumer, n.DeliveryTime, n.DeliveryCount = c, now, 1
		c.pel.insert(n)
		return n
	}
	n := &StreamNACK{ID: id, DeliveryTime: now, DeliveryCount: 1, Consumer: c}
	g.pel.insert(n)
	c.pel.insert(n)
	return n
}

// Ack removes the pending entry id and reports whether there was one.
func (g *StreamGroup) Ack(id StreamID) bool {
	n := g.pel.get(id)
	if n == nil {
		return false
	}
	g.pel.remove(id)
	if n.Consumer != nil {
		n.Consumer.pel.remove(id)
	}
	return true
}

// Claim makes c the owner of the pending entry n (created for id when n is
// nil, as XCLAIM FORCE does) and returns it.
func (g *StreamGroup) Claim(id StreamID, n *StreamNACK, c *StreamConsumer) *StreamNACK {
	if n == nil {
		n = &StreamNACK{ID: id}
		g.pel.insert(n)
	}
	if n.Consumer != c {
		if n.Consumer != nil {
			n.Consumer.pel.remove(id)
		}
		n.Consumer = c
		c.pel.insert(n)
	}
	return n
}

// Copy returns a deep copy of the stream (COPY).
func (s *Stream) Copy() Object {
	c := &Stream{length: s.length, LastID: s.LastID, FirstID: s.FirstID, MaxDeletedID: s.MaxDeletedID, EntriesAdded: s.EntriesAdded}
	c.nodes = make([]*streamNode, len(s.nodes))
	for i, n := range s.nodes {
		m := *n
		m.data = slices.Clone(n.data)
		m.fields = make([][]byte, len(n.fields))
		for j, f := range n.fields {
			m.fields[j] = slices.Clone(f)
		}
		c.nodes[i] = &m
	}
	for _, g := range s.groups {
		ng := c.CreateGroup(g.Name, g.LastID, g.EntriesRead)
		byName := make(map[*StreamConsumer]*StreamConsumer, len(g.consumers))
		for _, con := range g.consumers {
			byName[con] = ng.CreateConsumer(con.Name, con.SeenTime)
		}
		for _, n := range g.pel.items() {
			nn := &StreamNACK{ID: n.ID, DeliveryTime: n.DeliveryTime, DeliveryCount: n.DeliveryCount, Consumer: byName[n.Consumer]}
			ng.pel.insert(nn)
			if nn.Consumer != nil {
				nn.Consumer.pel.insert(nn)
			}
		}
	}
	return c
}
