package server

import (
	"bytes"
	"testing"
)

// FuzzBacklog writes chunks into a small backlog and checks, after each,
// the held range and every readable suffix against the stream kept whole,
// then a resize to another size.
func FuzzBacklog(f *testing.F) {
	f.Add(uint8(7), uint8(3), []byte("hello, replication stream"), uint8(5))
	f.Add(uint8(1), uint8(1), []byte("ab"), uint8(2))
	f.Add(uint8(16), uint8(40), bytes.Repeat([]byte("x"), 100), uint8(3))
	f.Fuzz(func(t *testing.T, size, chunk uint8, data []byte, newSize uint8) {
		sz, ch := int64(size%32)+1, int(chunk%50)+1
		start := int64(len(data)%5) * 3 // the offset the backlog starts after
		bl := newBacklog(sz, start+1)
		var whole []byte // whole[i] is stream offset start+1+i
		for len(data) > 0 {
			n := min(ch, len(data))
			bl.write(data[:n])
			whole = append(whole, data[:n]...)
			data = data[n:]
			checkBacklog(t, bl, start, whole)
		}
		nb := bl.resized(int64(newSize%32) + 1)
		checkBacklog(t, nb, start, whole)
	})
}

// checkBacklog compares bl with the stream whole that began after offset
// start.
func checkBacklog(t *testing.T, bl *backlog, start int64, whole []byte) {
	t.Helper()
	end := start + int64(len(whole)) + 1 // the next offset
	if bl.first+bl.histlen != end {
		t.Fatalf("first %d + histlen %d != next offset %d", bl.first, bl.histlen, end)
	}
	if bl.histlen > int64(len(bl.buf)) || bl.histlen > int64(len(whole)) {
		t.Fatalf("histlen %d, size %d, written %d", bl.histlen, len(bl.buf), len(whole))
	}
	for off := bl.first - 1; off <= end+1; off++ {
		want := off >= bl.first && off <= end
		if bl.holds(off) != want {
			t.Fatalf("holds(%d) = %v, range [%d, %d]", off, !want, bl.first, end)
		}
		if want {
			if got := bl.from(off); !bytes.Equal(got, whole[off-start-1:]) {
				t.Fatalf("from(%d) = %q, want %q", off, got, whole[off-start-1:])
			}
		}
	}
}

// FuzzParseMark: a message that parses as a mark formats to one that
// parses the same; every mark formatted parses back.
func FuzzParseMark(f *testing.F) {
	f.Add([]byte("recached-dedup 7 client"), uint64(7), []byte("client"))
	f.Add([]byte("recached-dedup x y"), uint64(0), []byte("a b"))
	f.Add([]byte("hello"), uint64(1<<63), []byte{0, 255})
	f.Fuzz(func(t *testing.T, msg []byte, id uint64, cid []byte) {
		if c, n, ok := parseMark(msg); ok {
			c2, n2, ok2 := parseMark(appendMarkMsg(&Effect{ClientID: c, WireID: n}))
			if !ok2 || n2 != n || !bytes.Equal(c2, c) {
				t.Fatalf("%q parsed to %d %q, which does not parse back (%v %d %q)", msg, n, c, ok2, n2, c2)
			}
		}
		if len(cid) == 0 || len(cid) > 64 {
			return
		}
		e := &Effect{ClientID: cid, WireID: id}
		c, n, ok := parseMark(appendMarkMsg(e))
		if !ok || n != id || !bytes.Equal(c, cid) {
			t.Fatalf("mark %d %q came back as %v %d %q", id, cid, ok, n, c)
		}
	})
}
