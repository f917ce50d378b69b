package rdb

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/recached/recached/server/keyspace"
)

// AppendValue appends the RDB serialization of e's value to b and returns
// it with the value's RDB type (the byte that precedes a key in a file and
// starts a DUMP payload). Small collections use the listpack and intset
// encodings, as Redis 7.0 does below its default thresholds.
func AppendValue(b []byte, e *keyspace.Entry) ([]byte, byte, error) {
	switch o := e.Obj.(type) {
	case nil:
		return appendString(b, e.Str, true), TypeString, nil
	case *keyspace.List:
		return appendList(b, o), TypeListQuicklist2, nil
	case *keyspace.Set:
		return appendSet(b, o)
	case *keyspace.Hash:
		return appendHash(b, o)
	case *keyspace.ZSet:
		return appendZSet(b, o)
	case *keyspace.Stream:
		return appendStream(b, o), TypeStreamListpack2, nil
	}
	return b, 0, ErrUnsupported{Type: e.Type()}
}

// lpWriter builds a listpack.
type lpWriter struct {
	b []byte
	n int
}

func (l *lpWriter) reset() { l.b, l.n = append(l.b[:0], 0, 0, 0, 0, 0, 0), 0 }

// size is the listpack's size once finished.
func (l *lpWriter) size() int { return len(l.b) + 1 }

// finish ends the listpack and returns it; it is valid until reset.
func (l *lpWriter) finish() []byte {
	l.b = append(l.b, 0xff)
	binary.LittleEndian.PutUint32(l.b, uint32(len(l.b)))
	binary.LittleEndian.PutUint16(l.b[4:], uint16(min(l.n, 0xffff)))
	return l.b
}

func (l *lpWriter) backlen(size int) {
	switch bl := lpBacklenSize(size); bl {
	case 1:
		l.b = append(l.b, byte(size))
	default:
		for i := bl - 1; i >= 0; i-- {
			c := byte(size >> (7 * i) & 0x7f)
			if i < bl-1 {
				c |= 0x80
			}
			l.b = append(l.b, c)
		}
	}
}

// int appends an integer in its smallest listpack encoding.
func (l *lpWriter) int(v int64) {
	l.n++
	start := len(l.b)
	switch {
	case v >= 0 && v <= 127:
		l.b = append(l.b, byte(v))
	case v >= -4096 && v <= 4095:
		u := uint16(v) & 0x1fff
		l.b = append(l.b, 0xc0|byte(u>>8), byte(u))
	case v >= math.MinInt16 && v <= math.MaxInt16:
		l.b = binary.LittleEndian.AppendUint16(append(l.b, 0xf1), uint16(v))
	case v >= -1<<23 && v < 1<<23:
		u := uint32(v)
		l.b = append(l.b, 0xf2, byte(u), byte(u>>8), byte(u>>16))
	case v >= math.MinInt32 && v <= math.MaxInt32:
		l.b = binary.LittleEndian.AppendUint32(append(l.b, 0xf3), uint32(v))
	default:
		l.b = binary.LittleEndian.AppendUint64(append(l.b, 0xf4), uint64(v))
	}
	l.backlen(len(l.b) - start)
}

// str appends s, as an integer when it is the canonical text of one (as
// Redis's lpAppend does).
func (l *lpWriter) str(s []byte) {
	if v, ok := canonicalInt(s); ok {
		l.int(v)
		return
	}
	l.n++
	start := len(l.b)
	switch n := len(s); {
	case n < 64:
		l.b = append(l.b, 0x80|byte(n))
	case n < 4096:
		l.b = append(l.b, 0xe0|byte(n>>8), byte(n))
	default:
		l.b = binary.LittleEndian.AppendUint32(append(l.b, 0xf0), uint32(n))
	}
	l.b = append(l.b, s...)
	l.backlen(len(l.b) - start)
}

// appendList writes a quicklist of listpack nodes of at most 8 KB (a
// larger element gets a node of its own).
func appendList(b []byte, l *keyspace.List) []byte {
	var nodes [][]byte
	var lp lpWriter
	lp.reset()
	l.Range(func(v []byte) bool {
		if lp.n > 0 && lp.size()+len(v)+11 > listNodeBytes {
			nodes = append(nodes, append([]byte(nil), lp.finish()...))
			lp.reset()
		}
		lp.str(v)
		return true
	})
	if lp.n > 0 {
		nodes = append(nodes, lp.finish())
	}
	b = appendLen(b, uint64(len(nodes)))
	for _, n := range nodes {
		b = appendLen(b, containerPacked)
		b = appendString(b, n, true)
	}
	return b
}

// appendSet writes an intset set in Redis's intset layout, which is its
// own, else the plain encoding, as Redis writes each encoding.
func appendSet(b []byte, s *keyspace.Set) ([]byte, byte, error) {
	if w, data, ok := s.Intset(); ok {
		blob := make([]byte, 8, 8+len(data))
		binary.LittleEndian.PutUint32(blob, uint32(w))
		binary.LittleEndian.PutUint32(blob[4:], uint32(len(data)/w))
		blob = append(blob, data...)
		return appendString(b, blob, true), TypeSetIntset, nil
	}
	b = appendLen(b, uint64(s.Len()))
	s.Range(func(m []byte) bool {
		b = appendString(b, m, true)
		return true
	})
	return b, TypeSet, nil
}

// appendHash writes a packed hash as a listpack of fields and values and a
// hash table in the plain encoding, as Redis writes each encoding.
func appendHash(b []byte, h *keyspace.Hash) ([]byte, byte, error) {
	if h.Encoding() == "listpack" {
		var lp lpWriter
		lp.reset()
		h.Range(func(f, v []byte) bool {
			lp.str(f)
			lp.str(v)
			return true
		})
		return appendString(b, lp.finish(), true), TypeHashListpack, nil
	}
	b = appendLen(b, uint64(h.Len()))
	h.Range(func(f, v []byte) bool {
		b = appendString(b, f, true)
		b = appendString(b, v, true)
		return true
	})
	return b, TypeHash, nil
}

// appendZSet writes a listpack of members and scores in score order when
// small, else members with binary scores.
func appendZSet(b []byte, z *keyspace.ZSet) ([]byte, byte, error) {
	small := z.Len() <= maxListpackEntries
	if small {
		z.Range(func(m []byte, _ float64) bool {
			small = len(m) <= maxListpackValue
			return small
		})
	}
	if small {
		var lp lpWriter
		lp.reset()
		var num []byte
		z.Range(func(m []byte, score float64) bool {
			lp.str(m)
			num = appendScore(num[:0], score)
			lp.str(num)
			return true
		})
		return appendString(b, lp.finish(), true), TypeZSetListpack, nil
	}
	b = appendLen(b, uint64(z.Len()))
	z.Range(func(m []byte, score float64) bool {
		b = appendString(b, m, true)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(score))
		return true
	})
	return b, TypeZSet2, nil
}

// appendScore formats a score as Redis's d2string does for listpacks:
// integers as integers, infinities as inf and -inf, else the shortest
// text that reads back as the same double.
func appendScore(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	case f == math.Trunc(f) && math.Abs(f) < 1<<53:
		return strconv.AppendInt(b, int64(f), 10)
	}
	return strconv.AppendFloat(b, f, 'g', 17, 64)
}

// appendStream writes a stream as type 19 (Redis 7.0): listpack nodes of
// up to 100 entries and about 4 KB keyed by their master id, the counters,
// then the consumer groups with their pending entries and consumers.
func appendStream(b []byte, st *keyspace.Stream) []byte {
	type node struct {
		master keyspace.StreamID
		lp     []byte
	}
	var nodes []node
	var lp lpWriter
	var master keyspace.StreamID
	var fields [][]byte
	entries := 0
	end := func() {
		if entries == 0 {
			return
		}
		// The master entry's live count is written at the start; it was
		// reserved as a 4-byte integer and is patched here.
		p := lp.b[6:]
		binary.LittleEndian.PutUint32(p[1:], uint32(entries))
		nodes = append(nodes, node{master, append([]byte(nil), lp.finish()...)})
		entries = 0
	}
	st.Range(keyspace.StreamID{}, keyspace.MaxStreamID, false, func(id keyspace.StreamID, fv [][]byte) bool {
		if entries >= nodeMaxEntries || (entries > 0 && lp.size() >= nodeMaxBytes) {
			end()
		}
		nf := len(fv) / 2
		if entries == 0 {
			master = id
			lp.reset()
			// count (a fixed-width int32, patched by end), deleted,
			// master field count, the fields, the master terminator.
			lp.n++
			lp.b = append(lp.b, 0xf3, 0, 0, 0, 0)
			lp.backlen(5)
			lp.int(0)
			lp.int(int64(nf))
			fields = fields[:0]
			for i := 0; i < nf; i++ {
				lp.str(fv[2*i])
				fields = append(fields, append([]byte(nil), fv[2*i]...))
			}
			lp.int(0)
		}
		same := nf == len(fields)
		for i := 0; same && i < nf; i++ {
			same = string(fields[i]) == string(fv[2*i])
		}
		flags := int64(0)
		if same {
			flags = streamSameFields
		}
		lp.int(flags)
		lp.int(int64(id.Ms - master.Ms))
		lp.int(int64(id.Seq - master.Seq))
		if same {
			for i := 0; i < nf; i++ {
				lp.str(fv[2*i+1])
			}
			lp.int(int64(3 + nf))
		} else {
			lp.int(int64(nf))
			for _, v := range fv {
				lp.str(v)
			}
			lp.int(int64(4 + 2*nf))
		}
		entries++
		return true
	})
	end()
	b = appendLen(b, uint64(len(nodes)))
	var key [16]byte
	for _, n := range nodes {
		binary.BigEndian.PutUint64(key[:], n.master.Ms)
		binary.BigEndian.PutUint64(key[8:], n.master.Seq)
		b = appendString(b, key[:], false)
		b = appendString(b, n.lp, true)
	}
	b = appendLen(b, uint64(st.Len()))
	for _, id := range []keyspace.StreamID{st.LastID, st.FirstID, st.MaxDeletedID} {
		b = appendLen(b, id.Ms)
		b = appendLen(b, id.Seq)
	}
	b = appendLen(b, st.EntriesAdded)
	groups := st.Groups()
	b = appendLen(b, uint64(len(groups)))
	for _, g := range groups {
		b = appendString(b, g.Name, false)
		b = appendLen(b, g.LastID.Ms)
		b = appendLen(b, g.LastID.Seq)
		b = appendLen(b, uint64(g.EntriesRead))
		pel := g.Pending()
		b = appendLen(b, uint64(len(pel)))
		for _, n := range pel {
			b = appendRawID(b, n.ID)
			b = binary.LittleEndian.AppendUint64(b, uint64(n.DeliveryTime))
			b = appendLen(b, n.DeliveryCount)
		}
		cs := g.Consumers()
		b = appendLen(b, uint64(len(cs)))
		for _, c := range cs {
			b = appendString(b, c.Name, false)
			b = binary.LittleEndian.AppendUint64(b, uint64(c.SeenTime))
			cp := c.Pending()
			b = appendLen(b, uint64(len(cp)))
			for _, n := range cp {
				b = appendRawID(b, n.ID)
			}
		}
	}
	return b
}

func appendRawID(b []byte, id keyspace.StreamID) []byte {
	b = binary.BigEndian.AppendUint64(b, id.Ms)
	return binary.BigEndian.AppendUint64(b, id.Seq)
}
