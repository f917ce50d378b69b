package rdb

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
)

// dec reads RDB primitives from an in-memory input. Its error is sticky:
// after the first failure every read returns a zero value and d.err stays
// the first error, so decoding code checks d.err where it matters (before
// using a value, in loop conditions) instead of after every read. Every
// length is checked against the bytes that remain before anything is
// allocated for it.
type dec struct {
	b    []byte
	off  int
	name string
	err  error
	// arena holds the bytes of keys and small strings kept by the
	// keyspace: one allocation serves many keys. A decoder of one value
	// (RESTORE) has none (chunked false): its strings get their own
	// allocation rather than pin a whole chunk.
	arena   []byte
	chunked bool
	// ibuf holds integers formatted as text for one collection at a time,
	// elems the elements of one compact encoding.
	ibuf  []byte
	elems [][]byte
}

// arena sizes: values larger than arenaMax get their own allocation.
const (
	arenaChunk = 64 << 10
	arenaMax   = 1 << 10
)

func (d *dec) failAt(off int, format string, args ...any) {
	if d.err == nil {
		d.err = &CorruptError{Name: d.name, Offset: int64(off), Msg: fmt.Sprintf(format, args...)}
	}
}

func (d *dec) fail(format string, args ...any) { d.failAt(d.off, format, args...) }

func (d *dec) remaining() int { return len(d.b) - d.off }

// take returns the next n bytes of the input, a view, not a copy.
func (d *dec) take(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > d.remaining() {
		d.fail("%s of %d bytes runs past the end of the input (%d bytes left)", what, n, d.remaining())
		return nil
	}
	p := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return p
}

func (d *dec) byte(what string) byte {
	p := d.take(1, what)
	if p == nil {
		return 0
	}
	return p[0]
}

func (d *dec) u32(what string) uint32 {
	p := d.take(4, what)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(p)
}

func (d *dec) u64(what string) uint64 {
	p := d.take(8, what)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(p)
}

// length reads a length; encoded reports a special string encoding, whose
// kind is then the returned value.
func (d *dec) length(what string) (n uint64, encoded bool) {
	start := d.off
	b := d.byte(what)
	if d.err != nil {
		return 0, false
	}
	switch b >> 6 {
	case len6:
		return uint64(b & 0x3f), false
	case len14:
		c := d.byte(what)
		return uint64(b&0x3f)<<8 | uint64(c), false
	case lenEnc:
		return uint64(b & 0x3f), true
	}
	switch b {
	case len32:
		p := d.take(4, what)
		if p == nil {
			return 0, false
		}
		return uint64(binary.BigEndian.Uint32(p)), false
	case len64:
		p := d.take(8, what)
		if p == nil {
			return 0, false
		}
		return binary.BigEndian.Uint64(p), false
	}
	d.failAt(start, "unknown length encoding 0x%02x in %s", b, what)
	return 0, false
}

// plainLen reads a length that may not be a string encoding.
func (d *dec) plainLen(what string) uint64 {
	start := d.off
	n, enc := d.length(what)
	if enc {
		d.failAt(start, "%s has a string encoding", what)
		return 0
	}
	return n
}

// count reads the number of items of a collection, each at least per
// bytes long, so that a count the input cannot hold fails before any
// allocation.
func (d *dec) count(what string, per int) int {
	start := d.off
	n := d.plainLen(what)
	if d.err != nil {
		return 0
	}
	if n > uint64(d.remaining()/per) {
		d.failAt(start, "%s of %d items cannot fit in the %d bytes left", what, n, d.remaining())
		return 0
	}
	return int(n)
}

// str reads a string. The result is a view of the input, of the integer
// buffer or of a fresh decompression buffer: callers that keep it copy it
// (the keyspace's constructors do).
func (d *dec) str(what string) []byte {
	start := d.off
	n, enc := d.length(what)
	if d.err != nil {
		return nil
	}
	if !enc {
		if n > uint64(d.remaining()) {
			d.failAt(start, "%s of %d bytes runs past the end of the input (%d bytes left)", what, n, d.remaining())
			return nil
		}
		return d.take(int(n), what)
	}
	var v int64
	switch n {
	case encInt8:
		v = int64(int8(d.byte(what)))
	case encInt16:
		p := d.take(2, what)
		if p != nil {
			v = int64(int16(binary.LittleEndian.Uint16(p)))
		}
	case encInt32:
		v = int64(int32(d.u32(what)))
	case encLZF:
		return d.lzf(what, false)
	default:
		d.failAt(start, "unknown string encoding %d in %s", n, what)
		return nil
	}
	if d.err != nil {
		return nil
	}
	i := len(d.ibuf)
	d.ibuf = strconv.AppendInt(d.ibuf, v, 10)
	return d.ibuf[i:len(d.ibuf):len(d.ibuf)]
}

// keptStr reads a string that the keyspace keeps as it is (a key, a
// string value): it lands in the arena or an allocation of its own with
// one copy, and an LZF-compressed one is decompressed straight there.
func (d *dec) keptStr(what string) []byte {
	if d.err == nil && d.off < len(d.b) && d.b[d.off] == lenEnc<<6|encLZF {
		d.off++
		return d.lzf(what, true)
	}
	return d.keep(d.str(what))
}

// lzf reads an LZF-compressed string: compressed length, length, data.
// It decompresses into a fresh buffer, or, when kept, into the space
// keep would copy it to.
func (d *dec) lzf(what string, kept bool) []byte {
	start := d.off
	clen := d.plainLen(what + " compressed length")
	ulen := d.plainLen(what + " length")
	if d.err != nil {
		return nil
	}
	if clen > uint64(d.remaining()) {
		d.failAt(start, "compressed %s of %d bytes runs past the end of the input (%d bytes left)", what, clen, d.remaining())
		return nil
	}
	if ulen > clen*lzfMaxRatio+8 {
		d.failAt(start, "compressed %s of %d bytes cannot expand to %d bytes", what, clen, ulen)
		return nil
	}
	src := d.take(int(clen), what)
	var dst []byte
	if kept {
		dst = d.alloc(int(ulen))
	} else {
		dst = make([]byte, ulen)
	}
	if err := lzfDecompress(src, dst); err != nil {
		d.failAt(start, "%s: %v", what, err)
		return nil
	}
	return dst
}

// keep returns a copy of b that the keyspace may keep: small ones share the
// decoder's arena.
func (d *dec) keep(b []byte) []byte {
	p := d.alloc(len(b))
	copy(p, b)
	return p
}

// alloc returns n bytes the keyspace may keep: from the decoder's arena
// when small, else an allocation of their own.
func (d *dec) alloc(n int) []byte {
	if n > arenaMax || !d.chunked {
		return make([]byte, n)
	}
	if len(d.arena)+n > cap(d.arena) {
		d.arena = make([]byte, 0, arenaChunk)
	}
	i := len(d.arena)
	d.arena = d.arena[:i+n]
	return d.arena[i : i+n : i+n]
}

// stringDouble reads a score of the original ZSET type: a length byte
// (253 NaN, 254 +inf, 255 -inf) and the number as text.
func (d *dec) stringDouble(what string) float64 {
	start := d.off
	n := d.byte(what)
	switch n {
	case 253:
		return math.NaN()
	case 254:
		return math.Inf(1)
	case 255:
		return math.Inf(-1)
	}
	p := d.take(int(n), what)
	if d.err != nil {
		return 0
	}
	f, err := strconv.ParseFloat(string(p), 64)
	if err != nil {
		d.failAt(start, "%s %q is not a number", what, p)
	}
	return f
}

// binaryDouble reads a little-endian IEEE 754 double.
func (d *dec) binaryDouble(what string) float64 {
	return math.Float64frombits(d.u64(what))
}
