package server

// ringIndex finds a stripe's channels by the hash of their names: open
// addressing with linear probing over 8-byte slots, each the hash's upper
// 32 bits (the tag, which also picks the slot) and the channel's entry.
// A lookup touches one cache line for the tag and the channel's entry
// only when the tag matches, where a Go map of uint64 costs two or three
// misses on a large history; and it holds no pointer.
type ringIndex struct {
	slots []indexSlot
	used  int // slots taken: one per channel
}

// indexSlot is one slot; entry is the channel's entry plus one, zero for
// an empty slot.
type indexSlot struct {
	tag   uint32
	entry int32
}

// tagOf returns the tag of a channel name's hash. The stripe is chosen by
// the low bits, so the tag uses the others.
func tagOf(hc uint64) uint32 { return uint32(hc >> 32) }

// find returns the entry with tag for which match is true, or noChan.
func (x *ringIndex) find(tag uint32, match func(int32) bool) int32 {
	if len(x.slots) == 0 {
		return noChan
	}
	mask := uint32(len(x.slots) - 1)
	for p := tag & mask; ; p = (p + 1) & mask {
		s := x.slots[p]
		if s.entry == 0 {
			return noChan
		}
		if s.tag == tag && match(s.entry-1) {
			return s.entry - 1
		}
	}
}

// insert adds entry under tag, growing the table past three quarters full.
func (x *ringIndex) insert(tag uint32, entry int32) {
	if (x.used+1)*4 > len(x.slots)*3 {
		x.grow()
	}
	x.put(indexSlot{tag, entry + 1})
	x.used++
}

// put places s in its first free slot from its home.
func (x *ringIndex) put(s indexSlot) {
	mask := uint32(len(x.slots) - 1)
	p := s.tag & mask
	for x.slots[p].entry != 0 {
		p = (p + 1) & mask
	}
	x.slots[p] = s
}

func (x *ringIndex) grow() {
	old := x.slots
	x.slots = make([]indexSlot, max(16, 2*len(old)))
	for _, s := range old {
		if s.entry != 0 {
			x.put(s)
		}
	}
}

// remove deletes entry, which is under tag, moving back the slots after
// it that would no longer be found (backward-shift deletion).
func (x *ringIndex) remove(tag uint32, entry int32) {
	mask := uint32(len(x.slots) - 1)
	p := tag & mask
	for x.slots[p].entry != entry+1 {
		p = (p + 1) & mask
	}
	x.used--
	for {
		x.slots[p] = indexSlot{}
		q := p
		for {
			q = (q + 1) & mask
			s := x.slots[q]
			if s.entry == 0 {
				return
			}
			// s stays unless its home is cyclically outside (p, q].
			home := s.tag & mask
			if (q-home)&mask >= (q-p)&mask {
				x.slots[p] = s
				p = q
				break
			}
		}
	}
}
