package client

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// StreamID is a stream entry id: milliseconds and a sequence number.
type StreamID struct{ Ms, Seq uint64 }

// MinStreamID and MaxStreamID are the smallest and largest ids, "-" and
// "+" in a range.
var (
	MinStreamID = StreamID{}
	MaxStreamID = StreamID{math.MaxUint64, math.MaxUint64}
)

// ParseStreamID parses "ms-seq" or "ms" (sequence 0); "-" and "+" are
// MinStreamID and MaxStreamID.
func ParseStreamID(s string) (StreamID, error) {
	switch s {
	case "-":
		return MinStreamID, nil
	case "+":
		return MaxStreamID, nil
	}
	ms, seq, dash := strings.Cut(s, "-")
	a, err := strconv.ParseUint(ms, 10, 64)
	if err != nil {
		return StreamID{}, fmt.Errorf("invalid stream id %q", s)
	}
	var b uint64
	if dash {
		if b, err = strconv.ParseUint(seq, 10, 64); err != nil {
			return StreamID{}, fmt.Errorf("invalid stream id %q", s)
		}
	}
	return StreamID{a, b}, nil
}

// Compare returns -1, 0 or 1 as a is before, equal to or after b.
func (a StreamID) Compare(b StreamID) int {
	switch {
	case a.Ms != b.Ms:
		if a.Ms < b.Ms {
			return -1
		}
		return 1
	case a.Seq != b.Seq:
		if a.Seq < b.Seq {
			return -1
		}
		return 1
	}
	return 0
}

// IsZero reports whether a is 0-0.
func (a StreamID) IsZero() bool { return a == StreamID{} }

// String returns "ms-seq".
func (a StreamID) String() string {
	return strconv.FormatUint(a.Ms, 10) + "-" + strconv.FormatUint(a.Seq, 10)
}

// StreamEntry is one entry of a stream: its id and its fields and values,
// alternating (field, value, field, value, …) in the order they were
// added.
type StreamEntry struct {
	ID     StreamID
	Fields [][]byte
}

// StreamPending is a pending entry of a consumer group: delivered to
// Consumer and not yet acknowledged.
type StreamPending struct {
	ID            StreamID
	Consumer      string
	DeliveryTime  int64 // Unix ms of the last delivery, the server's clock
	DeliveryCount uint64
}

// StreamGroup is a consumer group.
type StreamGroup struct {
	Name        string
	LastID      StreamID        // the last id delivered
	EntriesRead int64           // the logical read counter of LastID, -1 when unknown
	Consumers   []string        // sorted
	Pending     []StreamPending // sorted by id
}

// Stream is a stream key's local value: its entries in id order, its
// counters and its consumer groups. The consumers' seen and idle times are
// not replicated: a replica knows only the delivery times of pending
// entries.
type Stream struct {
	Entries      []StreamEntry
	LastID       StreamID       // the last id added (XADD, XSETID)
	EntriesAdded uint64         // every entry ever added
	MaxDeletedID StreamID       // the largest id XDEL removed
	Groups       []*StreamGroup // sorted by name
}

// Len returns the number of entries.
func (s *Stream) Len() int { return len(s.Entries) }

// Clone returns an independent deep copy of s.
func (s *Stream) Clone() *Stream {
	c := &Stream{LastID: s.LastID, EntriesAdded: s.EntriesAdded, MaxDeletedID: s.MaxDeletedID}
	c.Entries = make([]StreamEntry, len(s.Entries))
	for i, e := range s.Entries {
		c.Entries[i] = StreamEntry{ID: e.ID, Fields: cloneFields(e.Fields)}
	}
	c.Groups = make([]*StreamGroup, len(s.Groups))
	for i, g := range s.Groups {
		ng := *g
		ng.Consumers = slices.Clone(g.Consumers)
		ng.Pending = slices.Clone(g.Pending)
		c.Groups[i] = &ng
	}
	return c
}

func cloneFields(fv [][]byte) [][]byte {
	out := make([][]byte, len(fv))
	for i, f := range fv {
		out[i] = bytes.Clone(f)
	}
	return out
}

// Range returns the entries with ids from start to end inclusive, at most
// count of them (0 or less: all), in id order, or from end down to start
// when rev is set, as XRANGE and XREVRANGE reply them. The entries share
// their storage with s.
func (s *Stream) Range(start, end StreamID, count int, rev bool) []StreamEntry {
	lo, _ := s.search(start)
	hi, found := s.search(end)
	if found {
		hi++
	}
	if lo >= hi {
		return nil
	}
	out := slices.Clone(s.Entries[lo:hi])
	if rev {
		slices.Reverse(out)
	}
	if count > 0 && len(out) > count {
		out = out[:count]
	}
	return out
}

func (s *Stream) search(id StreamID) (int, bool) {
	return slices.BinarySearchFunc(s.Entries, id, func(e StreamEntry, id StreamID) int { return e.ID.Compare(id) })
}

func (s *Stream) has(id StreamID) bool {
	_, ok := s.search(id)
	return ok
}

// Group returns the consumer group name, or nil.
func (s *Stream) Group(name string) *StreamGroup {
	if i, ok := s.searchGroup(name); ok {
		return s.Groups[i]
	}
	return nil
}

func (s *Stream) searchGroup(name string) (int, bool) {
	return slices.BinarySearchFunc(s.Groups, name, func(g *StreamGroup, name string) int { return strings.Compare(g.Name, name) })
}

func (g *StreamGroup) searchPending(id StreamID) (int, bool) {
	return slices.BinarySearchFunc(g.Pending, id, func(p StreamPending, id StreamID) int { return p.ID.Compare(id) })
}

// PendingOf returns the pending entries of consumer, in id order.
func (g *StreamGroup) PendingOf(consumer string) []StreamPending {
	var out []StreamPending
	for _, p := range g.Pending {
		if p.Consumer == consumer {
			out = append(out, p)
		}
	}
	return out
}

func (g *StreamGroup) addConsumer(name string) {
	if i, ok := slices.BinarySearch(g.Consumers, name); !ok {
		g.Consumers = slices.Insert(g.Consumers, i, name)
	}
}

func (g *StreamGroup) ack(id StreamID) {
	if i, ok := g.searchPending(id); ok {
		g.Pending = slices.Delete(g.Pending, i, i+1)
	}
}

// trim removes entries from the head as an exact MAXLEN n or MINID id
// does.
func (s *Stream) trim(byID bool, maxLen uint64, minID StreamID) {
	n := 0
	if byID {
		n, _ = s.search(minID)
	} else if uint64(len(s.Entries)) > maxLen {
		n = len(s.Entries) - int(maxLen)
	}
	if n > 0 {
		s.Entries = slices.Delete(s.Entries, 0, n)
	}
}

var errStreamEffect = errors.New("malformed stream effect")

// ApplyStreamEffect applies a stream effect, the elements of a mutation
// push (sync/TYPES.md), to s, the key's current stream (nil when it has
// none): XADD, XTRIM, XDEL, XSETID, XACK, XCLAIM and XGROUP CREATE, SETID,
// DESTROY, CREATECONSUMER and DELCONSUMER. s is changed in place; the
// result is the stream afterwards (nil when there is still none). now is
// the time, in Unix ms, of an XCLAIM without TIME. An effect that does not
// fit s (an XADD id not after the last id, a group that does not exist) or
// is malformed is an error and may have changed nothing.
func ApplyStreamEffect(s *Stream, args [][]byte, now int64) (*Stream, error) {
	if len(args) < 2 {
		return s, errStreamEffect
	}
	switch upper(args[0]) {
	case "XADD":
		return s.xadd(args[1:])
	case "XTRIM":
		if s == nil {
			return nil, nil
		}
		byID, maxLen, minID, rest, err := parseExactTrim(args[2:])
		if err != nil || len(rest) != 0 {
			return s, errStreamEffect
		}
		s.trim(byID, maxLen, minID)
		return s, nil
	case "XDEL":
		ids, err := parseIDs(args[2:])
		if err != nil || s == nil {
			return s, err
		}
		for _, id := range ids {
			if i, ok := s.search(id); ok {
				s.Entries = slices.Delete(s.Entries, i, i+1)
				if id.Compare(s.MaxDeletedID) > 0 {
					s.MaxDeletedID = id
				}
			}
		}
		return s, nil
	case "XSETID":
		return s, s.xsetid(args[2:])
	case "XACK":
		if len(args) < 3 {
			return s, errStreamEffect
		}
		ids, err := parseIDs(args[3:])
		if err != nil || s == nil {
			return s, err
		}
		if g := s.Group(string(args[2])); g != nil {
			for _, id := range ids {
				g.ack(id)
			}
		}
		return s, nil
	case "XCLAIM":
		return s, s.xclaim(args[2:], now)
	case "XGROUP":
		return s.xgroup(args[1:])
	}
	return s, fmt.Errorf("%q is not a stream effect", args[0])
}

func parseIDs(args [][]byte) ([]StreamID, error) {
	ids := make([]StreamID, len(args))
	for i, a := range args {
		id, err := ParseStreamID(string(a))
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	return ids, nil
}

// parseExactTrim parses MAXLEN|MINID [=] threshold at the start of args,
// the only trim effects carry; rest is what follows.
func parseExactTrim(args [][]byte) (byID bool, maxLen uint64, minID StreamID, rest [][]byte, err error) {
	if len(args) < 2 {
		return false, 0, StreamID{}, nil, errStreamEffect
	}
	verb := upper(args[0])
	if verb != "MAXLEN" && verb != "MINID" {
		return false, 0, StreamID{}, nil, errStreamEffect
	}
	args = args[1:]
	if string(args[0]) == "=" {
		args = args[1:]
	}
	if len(args) == 0 {
		return false, 0, StreamID{}, nil, errStreamEffect
	}
	if verb == "MINID" {
		minID, err = ParseStreamID(string(args[0]))
		return true, 0, minID, args[1:], err
	}
	maxLen, err = strconv.ParseUint(string(args[0]), 10, 64)
	return false, maxLen, StreamID{}, args[1:], err
}

// xadd applies XADD key [NOMKSTREAM] [MAXLEN|MINID = threshold] id field
// value …
func (s *Stream) xadd(args [][]byte) (*Stream, error) {
	args = args[1:] // the key
	noMk := false
	byID, trim := false, false
	var maxLen uint64
	var minID StreamID
	for len(args) > 0 {
		switch w := upper(args[0]); w {
		case "NOMKSTREAM":
			noMk = true
			args = args[1:]
			continue
		case "MAXLEN", "MINID":
			var err error
			byID, maxLen, minID, args, err = parseExactTrim(args)
			if err != nil {
				return s, err
			}
			trim = true
			continue
		}
		break
	}
	if len(args) < 3 || len(args)%2 == 0 {
		return s, errStreamEffect
	}
	id, err := ParseStreamID(string(args[0]))
	if err != nil {
		return s, err
	}
	if s == nil {
		if noMk {
			return nil, nil
		}
		s = &Stream{}
	}
	if id.Compare(s.LastID) <= 0 {
		return s, fmt.Errorf("XADD id %s is not after the stream's last id %s", id, s.LastID)
	}
	s.Entries = append(s.Entries, StreamEntry{ID: id, Fields: cloneFields(args[1:])})
	s.LastID = id
	s.EntriesAdded++
	if trim {
		s.trim(byID, maxLen, minID)
	}
	return s, nil
}

// xsetid applies XSETID key id [ENTRIESADDED n] [MAXDELETEDID id].
func (s *Stream) xsetid(args [][]byte) error {
	if s == nil || len(args) < 1 || len(args)%2 == 0 {
		return errStreamEffect
	}
	id, err := ParseStreamID(string(args[0]))
	if err != nil {
		return err
	}
	added, maxDel := int64(-1), StreamID{}
	for i := 1; i+1 < len(args); i += 2 {
		switch upper(args[i]) {
		case "ENTRIESADDED":
			if added, err = strconv.ParseInt(string(args[i+1]), 10, 64); err != nil || added < 0 {
				return errStreamEffect
			}
		case "MAXDELETEDID":
			if maxDel, err = ParseStreamID(string(args[i+1])); err != nil {
				return err
			}
		default:
			return errStreamEffect
		}
	}
	s.LastID = id
	if added >= 0 {
		s.EntriesAdded = uint64(added)
	}
	if !maxDel.IsZero() {
		s.MaxDeletedID = maxDel
	}
	return nil
}

// xclaim applies XCLAIM key group consumer min-idle id … [IDLE ms] [TIME
// ms] [RETRYCOUNT n] [FORCE] [JUSTID] [LASTID id] as the server does: an
// id whose entry is gone leaves the group's pending entries, the others
// (when pending, or with FORCE) become the consumer's with the delivery
// time and count given. The server's effects carry TIME and RETRYCOUNT,
// which the replica takes as they are.
func (s *Stream) xclaim(args [][]byte, now int64) error {
	if s == nil || len(args) < 4 {
		return errStreamEffect
	}
	g := s.Group(string(args[0]))
	if g == nil {
		return fmt.Errorf("no consumer group %q", args[0])
	}
	consumer := string(args[1])
	minIdle, err := strconv.ParseInt(string(args[2]), 10, 64)
	if err != nil {
		return errStreamEffect
	}
	var ids []StreamID
	j := 3
	for ; j < len(args); j++ {
		id, err := ParseStreamID(string(args[j]))
		if err != nil {
			break
		}
		ids = append(ids, id)
	}
	delivery, retry := now, int64(-1)
	force, justID := false, false
	var lastID StreamID
	for ; j < len(args); j++ {
		opt := upper(args[j])
		switch opt {
		case "FORCE":
			force = true
			continue
		case "JUSTID":
			justID = true
			continue
		}
		if j+1 >= len(args) {
			return errStreamEffect
		}
		j++
		switch opt {
		case "IDLE", "TIME", "RETRYCOUNT":
			n, err := strconv.ParseInt(string(args[j]), 10, 64)
			if err != nil {
				return errStreamEffect
			}
			switch opt {
			case "IDLE":
				delivery = now - n
			case "TIME":
				delivery = n
			default:
				retry = n
			}
		case "LASTID":
			if lastID, err = ParseStreamID(string(args[j])); err != nil {
				return err
			}
		default:
			return errStreamEffect
		}
	}
	if lastID.Compare(g.LastID) > 0 {
		g.LastID = lastID
	}
	for _, id := range ids {
		i, pending := g.searchPending(id)
		if !s.has(id) {
			if pending {
				g.Pending = slices.Delete(g.Pending, i, i+1)
			}
			continue
		}
		if !pending {
			if !force {
				continue
			}
			g.Pending = slices.Insert(g.Pending, i, StreamPending{ID: id})
		} else if minIdle != 0 && now-g.Pending[i].DeliveryTime < minIdle {
			continue
		}
		g.addConsumer(consumer)
		p := &g.Pending[i]
		p.Consumer = consumer
		p.DeliveryTime = delivery
		switch {
		case retry >= 0:
			p.DeliveryCount = uint64(retry)
		case !justID:
			p.DeliveryCount++
		}
	}
	return nil
}

// xgroup applies XGROUP CREATE | SETID | DESTROY | CREATECONSUMER |
// DELCONSUMER key group ….
func (s *Stream) xgroup(args [][]byte) (*Stream, error) {
	if len(args) < 3 {
		return s, errStreamEffect
	}
	sub, name, rest := upper(args[0]), string(args[2]), args[3:]
	switch sub {
	case "CREATE", "SETID":
		if len(rest) < 1 {
			return s, errStreamEffect
		}
		mk, read := false, int64(-1)
		for i := 1; i < len(rest); i++ {
			switch upper(rest[i]) {
			case "MKSTREAM":
				mk = sub == "CREATE"
				if !mk {
					return s, errStreamEffect
				}
			case "ENTRIESREAD":
				if i+1 >= len(rest) {
					return s, errStreamEffect
				}
				i++
				n, err := strconv.ParseInt(string(rest[i]), 10, 64)
				if err != nil || n < -1 {
					return s, errStreamEffect
				}
				read = n
			default:
				return s, errStreamEffect
			}
		}
		if s == nil {
			if !mk {
				return nil, errors.New("XGROUP on a key that holds no stream")
			}
			s = &Stream{}
		}
		var id StreamID
		if string(rest[0]) == "$" {
			id = s.LastID
		} else {
			var err error
			if id, err = ParseStreamID(string(rest[0])); err != nil {
				return s, err
			}
		}
		i, found := s.searchGroup(name)
		if sub == "CREATE" {
			if found {
				return s, fmt.Errorf("consumer group %q exists", name)
			}
			s.Groups = slices.Insert(s.Groups, i, &StreamGroup{Name: name, LastID: id, EntriesRead: read})
			return s, nil
		}
		if !found {
			return s, fmt.Errorf("no consumer group %q", name)
		}
		s.Groups[i].LastID, s.Groups[i].EntriesRead = id, read
		return s, nil
	case "DESTROY":
		if s == nil || len(rest) != 0 {
			return s, errStreamEffect
		}
		if i, ok := s.searchGroup(name); ok {
			s.Groups = slices.Delete(s.Groups, i, i+1)
		}
		return s, nil
	case "CREATECONSUMER", "DELCONSUMER":
		if s == nil || len(rest) != 1 {
			return s, errStreamEffect
		}
		g := s.Group(name)
		if g == nil {
			return s, fmt.Errorf("no consumer group %q", name)
		}
		c := string(rest[0])
		if sub == "CREATECONSUMER" {
			g.addConsumer(c)
			return s, nil
		}
		if i, ok := slices.BinarySearch(g.Consumers, c); ok {
			g.Consumers = slices.Delete(g.Consumers, i, i+1)
			g.Pending = slices.DeleteFunc(g.Pending, func(p StreamPending) bool { return p.Consumer == c })
		}
		return s, nil
	}
	return s, errStreamEffect
}
