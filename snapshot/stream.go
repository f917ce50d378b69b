package snapshot

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/recached/recached/server/keyspace"
)

// Node limits a loaded stream is packed with: Redis's defaults for
// stream-node-max-bytes and stream-node-max-entries.
const (
	loadNodeMaxBytes   = 4096
	loadNodeMaxEntries = 100
)

// encodeStream writes a stream value (FORMAT.md, tag 7):
//
//	[last-ms, last-seq, first-ms, first-seq, max-deleted-ms, max-deleted-seq,
//	 entries-added, entries, groups]
//
// entries is an array of [ms, seq, field, value, …] in id order; groups an
// array of [name, last-ms, last-seq, entries-read, consumers, pending] with
// consumers an array of [name, seen-time-ms] in name order and pending an
// array of [ms, seq, delivery-time-ms, delivery-count, consumer-name] in id
// order.
func encodeStream(enc *msgpack.Encoder, o keyspace.Object) error {
	st, ok := o.(*keyspace.Stream)
	if !ok {
		return fmt.Errorf("snapshot: stream value of type %T", o)
	}
	var err error
	put := func(e error) {
		if err == nil {
			err = e
		}
	}
	put(enc.EncodeArrayLen(9))
	for _, id := range []keyspace.StreamID{st.LastID, st.FirstID, st.MaxDeletedID} {
		put(enc.EncodeUint(id.Ms))
		put(enc.EncodeUint(id.Seq))
	}
	put(enc.EncodeUint(st.EntriesAdded))
	put(enc.EncodeArrayLen(st.Len()))
	seen := 0
	st.Range(keyspace.StreamID{}, keyspace.MaxStreamID, false, func(id keyspace.StreamID, fv [][]byte) bool {
		seen++
		put(enc.EncodeArrayLen(2 + len(fv)))
		put(enc.EncodeUint(id.Ms))
		put(enc.EncodeUint(id.Seq))
		for _, b := range fv {
			put(encodeBin(enc, b))
		}
		return err == nil
	})
	if err == nil && seen != st.Len() {
		return fmt.Errorf("snapshot: stream reported %d entries but ranged over %d", st.Len(), seen)
	}
	groups := st.Groups()
	put(enc.EncodeArrayLen(len(groups)))
	for _, g := range groups {
		put(enc.EncodeArrayLen(6))
		put(encodeBin(enc, g.Name))
		put(enc.EncodeUint(g.LastID.Ms))
		put(enc.EncodeUint(g.LastID.Seq))
		put(enc.EncodeInt(g.EntriesRead))
		put(enc.EncodeArrayLen(len(g.Consumers())))
		for _, c := range g.Consumers() {
			put(enc.EncodeArrayLen(2))
			put(encodeBin(enc, c.Name))
			put(enc.EncodeInt(c.SeenTime))
		}
		put(enc.EncodeArrayLen(len(g.Pending())))
		for _, n := range g.Pending() {
			put(enc.EncodeArrayLen(5))
			put(enc.EncodeUint(n.ID.Ms))
			put(enc.EncodeUint(n.ID.Seq))
			put(enc.EncodeInt(n.DeliveryTime))
			put(enc.EncodeUint(n.DeliveryCount))
			var name []byte
			if n.Consumer != nil {
				name = n.Consumer.Name
			}
			put(encodeBin(enc, name))
		}
	}
	return err
}

// streamID reads two unsigned integers as an id.
func (r *Reader) streamID(what string) (keyspace.StreamID, error) {
	ms, err := r.dec.DecodeUint64()
	if err != nil {
		return keyspace.StreamID{}, r.fail("bad "+what, err)
	}
	seq, err := r.dec.DecodeUint64()
	if err != nil {
		return keyspace.StreamID{}, r.fail("bad "+what, err)
	}
	return keyspace.StreamID{Ms: ms, Seq: seq}, nil
}

// tuple reads an array header that must count n elements, what naming it
// in errors.
func (r *Reader) tuple(what string, n int) error {
	m, err := r.arrayLen(what, 1)
	if err != nil {
		return err
	}
	if m != n {
		return r.corrupt(fmt.Sprintf("%s with %d elements", what, m))
	}
	return nil
}

// stream reads a stream value; entries out of order, an id past the last
// generated one, groups or consumers twice, a pending entry of an unknown
// consumer or twice are corruption. An empty stream is valid, as in Redis.
func (r *Reader) stream() (keyspace.Object, error) {
	err := r.tuple("stream", 9)
	if err != nil {
		return nil, err
	}
	var ids [3]keyspace.StreamID
	for i, what := range []string{"stream last id", "stream first id", "stream max deleted id"} {
		if ids[i], err = r.streamID(what); err != nil {
			return nil, err
		}
	}
	added, err := r.dec.DecodeUint64()
	if err != nil {
		return nil, r.fail("bad stream entries-added", err)
	}
	ne, err := r.arrayLen("stream entries", 1)
	if err != nil {
		return nil, err
	}
	st := keyspace.NewStream()
	var fv [][]byte
	for i := 0; i < ne; i++ {
		m, err := r.arrayLen("stream entry", 1)
		if err != nil {
			return nil, err
		}
		if m < 4 || m%2 != 0 {
			return nil, r.corrupt(fmt.Sprintf("stream entry with %d elements", m))
		}
		id, err := r.streamID("stream entry id")
		if err != nil {
			return nil, err
		}
		if id.Compare(st.LastID) <= 0 || id.Compare(ids[0]) > 0 {
			return nil, r.corrupt("stream entry id " + id.String() + " out of order")
		}
		fv = fv[:0]
		for j := 2; j < m; j++ {
			b, err := r.bin("stream field or value")
			if err != nil {
				return nil, err
			}
			fv = append(fv, b)
		}
		st.Append(id, fv, loadNodeMaxBytes, loadNodeMaxEntries)
	}
	if uint64(ne) > added {
		return nil, r.corrupt(fmt.Sprintf("stream of %d entries has entries-added %d", ne, added))
	}
	st.LastID, st.FirstID, st.MaxDeletedID, st.EntriesAdded = ids[0], ids[1], ids[2], added
	ng, err := r.arrayLen("stream groups", 1)
	if err != nil {
		return nil, err
	}
	for i := 0; i < ng; i++ {
		if err := r.tuple("stream group", 6); err != nil {
			return nil, err
		}
		name, err := r.bin("stream group name")
		if err != nil {
			return nil, err
		}
		last, err := r.streamID("stream group last id")
		if err != nil {
			return nil, err
		}
		read, err := r.dec.DecodeInt64()
		if err != nil || read < -1 {
			return nil, r.fail("bad stream group entries-read", err)
		}
		g := st.CreateGroup(name, last, read)
		if g == nil {
			return nil, r.corrupt("duplicate stream group")
		}
		nc, err := r.arrayLen("stream consumers", 1)
		if err != nil {
			return nil, err
		}
		for j := 0; j < nc; j++ {
			if err := r.tuple("stream consumer", 2); err != nil {
				return nil, err
			}
			cname, err := r.bin("stream consumer name")
			if err != nil {
				return nil, err
			}
			seen, err := r.dec.DecodeInt64()
			if err != nil {
				return nil, r.fail("bad stream consumer seen-time", err)
			}
			if g.CreateConsumer(cname, seen) == nil {
				return nil, r.corrupt("duplicate stream consumer")
			}
		}
		np, err := r.arrayLen("stream pending entries", 1)
		if err != nil {
			return nil, err
		}
		for j := 0; j < np; j++ {
			if err := r.tuple("stream pending entry", 5); err != nil {
				return nil, err
			}
			id, err := r.streamID("stream pending entry id")
			if err != nil {
				return nil, err
			}
			at, err := r.dec.DecodeInt64()
			if err != nil {
				return nil, r.fail("bad stream pending delivery time", err)
			}
			count, err := r.dec.DecodeUint64()
			if err != nil {
				return nil, r.fail("bad stream pending delivery count", err)
			}
			cname, err := r.bin("stream pending consumer")
			if err != nil {
				return nil, err
			}
			c := g.Consumer(cname)
			if c == nil {
				return nil, r.corrupt("stream pending entry of an unknown consumer")
			}
			if g.NACK(id) != nil {
				return nil, r.corrupt("duplicate stream pending entry")
			}
			nack := g.Claim(id, nil, c)
			nack.DeliveryTime, nack.DeliveryCount = at, count
		}
	}
	return st, nil
}
