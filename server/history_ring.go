package server

import (
	"encoding/binary"
	"time"

	"github.com/recached/recached/snapshot"
)

// A channel's history is held in one byte slice, its ring: the channel's
// name, then the encoded messages, oldest first. A channel with a history
// thus costs the garbage collector one pointer-free object, where a
// message object per publication cost a million channels a pause-long
// scan, and a publication on a known channel allocates nothing.
//
// A message is encoded as uvarint(len(body)) then body:
//
//	time    8 bytes, unix ns, little endian
//	flags   1 byte: ringRealtime, ringHasName, ringHasData
//	payload uvarint length and bytes (absent for a realtime message,
//	        whose payload is rendered again from its fields)
//	realtime only: connection id, then name (ringHasName), then data
//	        (ringHasData), each a uvarint length and bytes
//
// A message is appended past the end and the oldest is dropped by moving
// start. A ring that is full moves its live messages down over the dropped
// ones, or is copied to a new slice when that leaves too little room or
// too much. While a save holds views of the rings (history.copyLocked),
// no ring is moved in place: bytes below a ring's length then stay as they
// were, and the views valid after the stripe locks are released.

const (
	ringRealtime = 1 << iota
	ringHasName
	ringHasData
)

// chanRing is one channel's history. Its links are entries of its stripe,
// noChan for none.
type chanRing struct {
	// ring is the name, dropped messages, then the live ones from start.
	ring    []byte
	nameLen int32
	start   int32
	n       int32 // live messages
	last    int64 // unix ns of the newest message
	// prev and next order the stripe's channels by last publication;
	// next also chains the unused entries.
	prev, next int32
}

// name returns the channel's name, a view of the ring.
func (c *chanRing) name() []byte { return c.ring[:c.nameLen:c.nameLen] }

// records returns the live messages' encoding, a view of the ring.
func (c *chanRing) records() []byte { return c.ring[c.start:len(c.ring):len(c.ring)] }

// recordSize returns the size of r's body.
func recordSize(r *snapshot.History) int {
	n := 8 + 1
	if !r.Realtime {
		return n + uvarintLen(len(r.Payload)) + len(r.Payload)
	}
	n += uvarintLen(len(r.ConnectionID)) + len(r.ConnectionID)
	if r.HasName {
		n += uvarintLen(len(r.Name)) + len(r.Name)
	}
	if r.Data != nil {
		n += uvarintLen(len(r.Data)) + len(r.Data)
	}
	return n
}

// appendRecord appends r's encoding, whose body is size bytes.
func appendRecord(b []byte, r *snapshot.History, size int) []byte {
	b = binary.AppendUvarint(b, uint64(size))
	b = binary.LittleEndian.AppendUint64(b, uint64(r.Time))
	if !r.Realtime {
		b = append(b, 0)
		return appendField(b, r.Payload)
	}
	flags := byte(ringRealtime)
	if r.HasName {
		flags |= ringHasName
	}
	if r.Data != nil {
		flags |= ringHasData
	}
	b = append(b, flags)
	b = appendField(b, r.ConnectionID)
	if r.HasName {
		b = appendField(b, r.Name)
	}
	if r.Data != nil {
		b = appendField(b, r.Data)
	}
	return b
}

// appendField appends f with its uvarint length.
func appendField[T string | []byte](b []byte, f T) []byte {
	return append(binary.AppendUvarint(b, uint64(len(f))), f...)
}

// uvarintLen returns the size of n's uvarint encoding.
func uvarintLen(n int) int {
	l := 1
	for ; n >= 0x80; n >>= 7 {
		l++
	}
	return l
}

// add appends r to the ring, dropping the oldest message of a full one. A
// new channel's ring is nil, with nameLen and start the length of its
// name, r.Channel. inPlace says the ring may be compacted in place.
func (c *chanRing) add(r *snapshot.History, inPlace bool) {
	if c.n == HistoryLimit {
		_, next := nextRecord(c.ring[c.start:])
		c.start = int32(len(c.ring) - len(next))
		c.n--
	}
	body := recordSize(r)
	size := uvarintLen(body) + body
	live := len(c.ring) - int(c.start)
	dead := int(c.start - c.nameLen)
	need := int(c.nameLen) + live + size
	switch {
	case c.ring == nil:
		c.ring = make([]byte, c.nameLen, int(c.nameLen)+size)
		copy(c.ring, r.Channel)
	case len(c.ring)+size <= cap(c.ring) && dead <= live+4096:
	case inPlace && need <= cap(c.ring) && cap(c.ring) <= 2*need+4096:
		copy(c.ring[c.nameLen:], c.ring[c.start:])
		c.ring, c.start = c.ring[:int(c.nameLen)+live], c.nameLen
	default:
		// A new slice, with half again the room it needs.
		ring := make([]byte, int(c.nameLen)+live, need+need/2)
		copy(ring, c.ring[:c.nameLen])
		copy(ring[c.nameLen:], c.ring[c.start:])
		c.ring, c.start = ring, c.nameLen
	}
	c.ring = appendRecord(c.ring, r, body)
	c.n++
	c.last = r.Time
}

// nextRecord splits the first record's body off b. b holds whole records,
// as the ring does.
func nextRecord(b []byte) (body, rest []byte) {
	n, w := binary.Uvarint(b)
	end := w + int(n)
	return b[w:end], b[end:]
}

// decodeRecord fills r from a record's body. r's byte slices are views of
// body, but for a realtime message's payload, rendered anew; name is the
// channel's name.
func decodeRecord(body, name []byte, r *snapshot.History) {
	*r = snapshot.History{Channel: name, Time: int64(binary.LittleEndian.Uint64(body))}
	flags := body[8]
	body = body[9:]
	if flags&ringRealtime == 0 {
		r.Payload, _ = field(body)
		return
	}
	r.Realtime = true
	var f []byte
	f, body = field(body)
	r.ConnectionID = string(f)
	if flags&ringHasName != 0 {
		f, body = field(body)
		r.Name, r.HasName = string(f), true
	}
	if flags&ringHasData != 0 {
		r.Data, _ = field(body)
	}
	m := RealtimeMeta{Name: r.Name, HasName: r.HasName, Data: r.Data, ConnectionID: r.ConnectionID}
	r.Payload = appendRealtimeJSON(nil, &m, time.Unix(0, r.Time).UnixMilli())
}

// field splits one uvarint-prefixed field off b.
func field(b []byte) (f, rest []byte) {
	n, w := binary.Uvarint(b)
	end := w + int(n)
	return b[w:end:end], b[end:]
}

// eachRecord calls fn with every record of recs, oldest first, decoded
// into one reused History.
func eachRecord(name, recs []byte, fn func(*snapshot.History)) {
	var r snapshot.History
	for len(recs) > 0 {
		var body []byte
		body, recs = nextRecord(recs)
		decodeRecord(body, name, &r)
		fn(&r)
	}
}

// busMessageOf rebuilds a recorded message with its own copies of its
// bytes, for a rewind, which may keep it.
func busMessageOf(r *snapshot.History) *BusMessage {
	bm := newBusMessage(r.Channel, r.Payload)
	bm.Time = time.Unix(0, r.Time)
	if r.Realtime {
		m := &RealtimeMeta{Name: r.Name, HasName: r.HasName, ConnectionID: r.ConnectionID}
		if r.Data != nil {
			m.Data = append(make([]byte, 0, len(r.Data)), r.Data...)
		}
		bm.Realtime = m
	}
	return bm
}

// historyRecord is a publication accepted at t as the history, the
// snapshot and the log keep it: RESP's payload, or bm's realtime fields.
func historyRecord(ch, payload []byte, t time.Time, bm *BusMessage) snapshot.History {
	r := snapshot.History{Channel: ch, Time: t.UnixNano(), Payload: payload}
	if bm != nil && bm.Realtime != nil {
		m := bm.Realtime
		r.Realtime = true
		r.ConnectionID, r.Name, r.HasName, r.Data = m.ConnectionID, m.Name, m.HasName, m.Data
	}
	return r
}
