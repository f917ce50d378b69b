package server

// newBacklog returns an empty backlog of size bytes whose next byte is
// stream offset next.
func newBacklog(size int64, next int64) *backlog {
	if size < 1 {
		size = 1
	}
	return &backlog{buf: make([]byte, size), first: next}
}

// write appends b, the stream bytes from offset first+histlen on,
// dropping the oldest bytes past the backlog's size.
func (bl *backlog) write(b []byte) {
	size := int64(len(bl.buf))
	end := bl.first + bl.histlen // offset of the next byte
	if int64(len(b)) >= size {
		// Only the last size bytes stay.
		skip := int64(len(b)) - size
		end += skip
		b = b[skip:]
	}
	for len(b) > 0 {
		pos := (end - 1) % size
		n := copy(bl.buf[pos:], b)
		b = b[n:]
		end += int64(n)
	}
	bl.histlen = min(end-bl.first, size)
	bl.first = end - bl.histlen
}

// holds reports whether a replica that wants the stream from offset off
// on (the offset after the last byte it has, plus one) can be served from
// the backlog: off is between the oldest byte held and the next one.
func (bl *backlog) holds(off int64) bool {
	return off >= bl.first && off <= bl.first+bl.histlen
}

// from returns a copy of the bytes from offset off to the end; holds(off)
// must be true.
func (bl *backlog) from(off int64) []byte {
	size := int64(len(bl.buf))
	n := bl.first + bl.histlen - off
	out := make([]byte, 0, n)
	for n > 0 {
		pos := (off - 1) % size
		chunk := min(n, size-pos)
		out = append(out, bl.buf[pos:pos+chunk]...)
		off += chunk
		n -= chunk
	}
	return out
}

// resized returns a backlog of size bytes holding as much of bl's end as
// fits.
func (bl *backlog) resized(size int64) *backlog {
	keep := min(bl.histlen, size)
	start := bl.first + bl.histlen - keep
	nb := newBacklog(size, start)
	nb.write(bl.from(start))
	return nb
}
