package rdb

import (
	"github.com/recached/recached/server/keyspace"
)

// Node limits a loaded stream is packed with: Redis's defaults for
// stream-node-max-bytes and stream-node-max-entries.
const (
	nodeMaxBytes   = 4096
	nodeMaxEntries = 100
)

// lpCursor reads the elements of a stream node's listpack one at a time.
type lpCursor struct {
	b   []byte // the listpack without its terminator
	off int
	err string
}

func (c *lpCursor) more() bool { return c.err == "" && c.off < len(c.b) }

func (c *lpCursor) next() (s []byte, v int64, isInt bool) {
	if c.err != "" {
		return nil, 0, false
	}
	if c.off >= len(c.b) {
		c.err = "stream listpack ends inside an entry"
		return nil, 0, false
	}
	s, v, isInt, next, err := lpEntry(c.b, c.off)
	if err != nil {
		c.err = err.Error()
		return nil, 0, false
	}
	c.off = next
	return s, v, isInt
}

func (c *lpCursor) int(what string) int64 {
	_, v, isInt := c.next()
	if c.err == "" && !isInt {
		c.err = "stream " + what + " is not an integer"
	}
	return v
}

// bytes returns an element as text (an integer formatted into *ibuf).
func (c *lpCursor) bytes(ibuf *[]byte) []byte {
	s, v, isInt := c.next()
	return intText(s, v, isInt, ibuf)
}

// stream reads a stream: its listpack nodes, counters and consumer groups
// (types 15, 19 and 21 differ in the counters and consumer fields).
func (d *dec) stream(t byte) keyspace.Object {
	st := keyspace.NewStream()
	nodes := d.count("stream nodes", 2)
	var fields, fv [][]byte
	var live uint64
	for i := 0; i < nodes && d.err == nil; i++ {
		start := d.off
		key := d.str("stream node key")
		if d.err == nil && len(key) != 16 {
			d.failAt(start, "stream node key of %d bytes", len(key))
		}
		master := streamID16(key)
		key = nil
		lpStart := d.off
		lp := d.str("stream node listpack")
		if d.err != nil {
			break
		}
		if _, err := lpCheck(lp); err != nil {
			d.failAt(lpStart, "stream node: %v", err)
			break
		}
		c := &lpCursor{b: lp[6 : len(lp)-1]}
		if !c.more() {
			d.failAt(lpStart, "empty listpack inside a stream")
			break
		}
		d.ibuf = d.ibuf[:0]
		c.int("entry count")
		c.int("deleted count")
		nf := c.int("master field count")
		if c.err == "" && (nf < 0 || nf > int64(len(c.b))) {
			c.err = "bad stream master field count"
		}
		fields = fields[:0]
		for j := int64(0); j < nf && c.err == ""; j++ {
			fields = append(fields, c.bytes(&d.ibuf))
		}
		if c.int("master terminator") != 0 && c.err == "" {
			c.err = "stream master entry without its terminator"
		}
		for c.more() {
			flags := c.int("entry flags")
			ms := c.int("entry ms delta")
			seq := c.int("entry seq delta")
			id := keyspace.StreamID{Ms: master.Ms + uint64(ms), Seq: master.Seq + uint64(seq)}
			fv = fv[:0]
			if flags&streamSameFields != 0 {
				for _, f := range fields {
					fv = append(fv, f, c.bytes(&d.ibuf))
				}
			} else {
				n := c.int("entry field count")
				if c.err == "" && (n < 0 || n > int64(len(c.b))) {
					c.err = "bad stream entry field count"
				}
				for j := int64(0); j < n && c.err == ""; j++ {
					fv = append(fv, c.bytes(&d.ibuf), c.bytes(&d.ibuf))
				}
			}
			c.int("entry element count")
			if c.err != "" {
				break
			}
			if len(fv) == 0 {
				c.err = "stream entry without fields"
				break
			}
			if flags&streamDeleted != 0 {
				continue
			}
			if st.Len() > 0 && id.Compare(st.LastID) <= 0 {
				c.err = "stream entry " + id.String() + " out of order"
				break
			}
			st.Append(id, fv, nodeMaxBytes, nodeMaxEntries)
			live++
		}
		if c.err != "" {
			d.failAt(lpStart, "stream node: %s", c.err)
		}
		d.ibuf = d.ibuf[:0]
	}
	start := d.off
	length := d.plainLen("stream length")
	last := keyspace.StreamID{Ms: d.plainLen("stream last id"), Seq: d.plainLen("stream last id")}
	first := st.FirstID
	var maxDel keyspace.StreamID
	added := length
	if t >= TypeStreamListpack2 {
		first = keyspace.StreamID{Ms: d.plainLen("stream first id"), Seq: d.plainLen("stream first id")}
		maxDel = keyspace.StreamID{Ms: d.plainLen("stream max deleted id"), Seq: d.plainLen("stream max deleted id")}
		added = d.plainLen("stream entries added")
	}
	if d.err != nil {
		return nil
	}
	if length != live {
		d.failAt(start, "stream length %d but %d entries", length, live)
		return nil
	}
	if live > 0 && st.LastID.Compare(last) > 0 {
		d.failAt(start, "stream entry %s after the last id %s", st.LastID, last)
		return nil
	}
	st.LastID, st.FirstID, st.MaxDeletedID, st.EntriesAdded = last, first, maxDel, added
	d.groups(t, st)
	if d.err != nil {
		return nil
	}
	return st
}

// pending is a group's pending entry before a consumer claims it.
type pending struct {
	at    int64
	count uint64
	owner *keyspace.StreamConsumer
}

// groups reads a stream's consumer groups, their pending entries and
// their consumers, each of whose pending ids must be one of its group's.
func (d *dec) groups(t byte, st *keyspace.Stream) {
	n := d.count("stream groups", 3)
	for i := 0; i < n && d.err == nil; i++ {
		start := d.off
		name := d.str("stream group name")
		last := keyspace.StreamID{Ms: d.plainLen("stream group last id"), Seq: d.plainLen("stream group last id")}
		var read int64
		if t >= TypeStreamListpack2 {
			read = int64(d.plainLen("stream group entries read"))
		} else {
			read = st.EstimateDistance(last)
		}
		if d.err != nil {
			return
		}
		g := st.CreateGroup(name, last, read)
		if g == nil {
			d.failAt(start, "duplicate stream group %q", name)
			return
		}
		np := d.count("stream group pending entries", 16+8+1)
		pel := make(map[keyspace.StreamID]*pending, min(np, 1<<12))
		order := make([]keyspace.StreamID, 0, min(np, 1<<12))
		for j := 0; j < np && d.err == nil; j++ {
			pstart := d.off
			id := streamID16(d.take(16, "pending entry id"))
			p := &pending{at: int64(d.u64("pending delivery time")), count: d.plainLen("pending delivery count")}
			if d.err != nil {
				return
			}
			if pel[id] != nil {
				d.failAt(pstart, "duplicate pending entry %s", id)
				return
			}
			pel[id] = p
			order = append(order, id)
		}
		nc := d.count("stream consumers", 10)
		for j := 0; j < nc && d.err == nil; j++ {
			cstart := d.off
			cname := d.str("stream consumer name")
			seen := int64(d.u64("stream consumer seen time"))
			if t >= TypeStreamListpack3 {
				d.u64("stream consumer active time")
			}
			if d.err != nil {
				return
			}
			c := g.CreateConsumer(cname, seen)
			if c == nil {
				d.failAt(cstart, "duplicate stream consumer %q", cname)
				return
			}
			m := d.count("stream consumer pending entries", 16)
			for k := 0; k < m && d.err == nil; k++ {
				pstart := d.off
				id := streamID16(d.take(16, "consumer pending id"))
				if d.err != nil {
					return
				}
				p := pel[id]
				if p == nil || p.owner != nil {
					d.failAt(pstart, "consumer pending entry %s is not one of its group's", id)
					return
				}
				p.owner = c
			}
		}
		// Claimed in the group's order (increasing ids), every pending
		// list grows at its end.
		for _, id := range order {
			p := pel[id]
			if p.owner == nil {
				d.failAt(start, "pending entry %s of group %q has no consumer", id, name)
				return
			}
			nack := g.Claim(id, nil, p.owner)
			nack.DeliveryTime, nack.DeliveryCount = p.at, p.count
		}
	}
}
