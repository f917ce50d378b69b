package rdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
)

// The compact encodings Redis stores inside a string: listpack, ziplist,
// intset and zipmap. Each decoder appends the elements to out (integers
// formatted as text into *ibuf) and checks every length against the blob,
// so a damaged blob is an error, never a read past its end.

// lpEntry decodes the listpack entry at b[off:]: a string (s) or an
// integer (v, isInt), and the offset of the next entry. The entry's
// back-length must match its size.
func lpEntry(b []byte, off int) (s []byte, v int64, isInt bool, next int, err error) {
	if off >= len(b) {
		return nil, 0, false, 0, errors.New("listpack entry past the end")
	}
	c := b[off]
	size := 0 // encoding and data
	need := func(n int) bool { return off+n <= len(b) }
	switch {
	case c&0x80 == 0:
		v, isInt, size = int64(c&0x7f), true, 1
	case c&0xc0 == 0x80:
		n := int(c & 0x3f)
		size = 1 + n
		if !need(size) {
			return nil, 0, false, 0, errors.New("listpack string past the end")
		}
		s = b[off+1 : off+size]
	case c&0xe0 == 0xc0:
		if !need(2) {
			return nil, 0, false, 0, errors.New("listpack integer past the end")
		}
		u := uint64(c&0x1f)<<8 | uint64(b[off+1])
		v, isInt, size = int64(u<<51)>>51, true, 2
	case c&0xf0 == 0xe0:
		if !need(2) {
			return nil, 0, false, 0, errors.New("listpack string past the end")
		}
		n := int(c&0x0f)<<8 | int(b[off+1])
		size = 2 + n
		if !need(size) {
			return nil, 0, false, 0, errors.New("listpack string past the end")
		}
		s = b[off+2 : off+size]
	case c == 0xf0:
		if !need(5) {
			return nil, 0, false, 0, errors.New("listpack string past the end")
		}
		n := binary.LittleEndian.Uint32(b[off+1:])
		if uint64(n) > uint64(len(b)-off-5) {
			return nil, 0, false, 0, errors.New("listpack string past the end")
		}
		size = 5 + int(n)
		s = b[off+5 : off+size]
	case c >= 0xf1 && c <= 0xf4:
		w := [...]int{2, 3, 4, 8}[c-0xf1]
		size = 1 + w
		if !need(size) {
			return nil, 0, false, 0, errors.New("listpack integer past the end")
		}
		var u uint64
		for i := w - 1; i >= 0; i-- {
			u = u<<8 | uint64(b[off+1+i])
		}
		shift := uint(64 - 8*w)
		v, isInt = int64(u<<shift)>>shift, true
	default:
		return nil, 0, false, 0, fmt.Errorf("invalid listpack encoding byte 0x%02x", c)
	}
	bl := lpBacklenSize(size)
	if !need(size + bl) {
		return nil, 0, false, 0, errors.New("listpack back-length past the end")
	}
	// The back-length is read from its last byte backwards, 7 bits a byte.
	var got uint64
	end := off + size + bl - 1
	for i, shift := end, uint(0); i >= off+size; i, shift = i-1, shift+7 {
		got |= uint64(b[i]&0x7f) << shift
	}
	if got != uint64(size) {
		return nil, 0, false, 0, errors.New("listpack back-length does not match its entry")
	}
	return s, v, isInt, off + size + bl, nil
}

// lpBacklenSize is the size of the back-length of an entry of l bytes.
func lpBacklenSize(l int) int {
	switch {
	case l < 128:
		return 1
	case l < 16384:
		return 2
	case l < 2097152:
		return 3
	case l < 268435456:
		return 4
	}
	return 5
}

// lpCheck checks a listpack's header and terminator and returns the offset
// of its first entry.
func lpCheck(b []byte) (int, error) {
	if len(b) < 7 {
		return 0, errors.New("listpack shorter than its header")
	}
	if int(binary.LittleEndian.Uint32(b)) != len(b) {
		return 0, fmt.Errorf("listpack header says %d bytes, the string has %d", binary.LittleEndian.Uint32(b), len(b))
	}
	if b[len(b)-1] != 0xff {
		return 0, errors.New("listpack without its terminator")
	}
	return 6, nil
}

// listpackElems appends the elements of listpack b to out.
func listpackElems(b []byte, out [][]byte, ibuf *[]byte) ([][]byte, error) {
	off, err := lpCheck(b)
	if err != nil {
		return out, err
	}
	want := int(binary.LittleEndian.Uint16(b[4:]))
	n := 0
	for off < len(b)-1 {
		s, v, isInt, next, err := lpEntry(b[:len(b)-1], off)
		if err != nil {
			return out, err
		}
		out = append(out, intText(s, v, isInt, ibuf))
		off = next
		n++
	}
	if want != 0xffff && want != n {
		return out, fmt.Errorf("listpack header counts %d elements, it holds %d", want, n)
	}
	return out, nil
}

// intText returns s, or v as text in *ibuf when isInt.
func intText(s []byte, v int64, isInt bool, ibuf *[]byte) []byte {
	if !isInt {
		return s
	}
	i := len(*ibuf)
	*ibuf = strconv.AppendInt(*ibuf, v, 10)
	return (*ibuf)[i:len(*ibuf):len(*ibuf)]
}

// ziplistElems appends the elements of ziplist b to out. A ziplist is
// zlbytes (4), zltail (4), zllen (2), entries, 0xff; an entry is the
// previous entry's length (1 byte, or 0xfe and 4 bytes), an encoding and
// the data.
func ziplistElems(b []byte, out [][]byte, ibuf *[]byte) ([][]byte, error) {
	if len(b) < 11 {
		return out, errors.New("ziplist shorter than its header")
	}
	if int(binary.LittleEndian.Uint32(b)) != len(b) {
		return out, fmt.Errorf("ziplist header says %d bytes, the string has %d", binary.LittleEndian.Uint32(b), len(b))
	}
	if b[len(b)-1] != 0xff {
		return out, errors.New("ziplist without its terminator")
	}
	want := int(binary.LittleEndian.Uint16(b[8:]))
	end := len(b) - 1
	off, n, prev := 10, 0, 0
	for off < end {
		start := off
		var plen int
		if b[off] < 0xfe {
			plen = int(b[off])
			off++
		} else if b[off] == 0xfe && off+5 <= end {
			plen = int(binary.LittleEndian.Uint32(b[off+1:]))
			off += 5
		} else {
			return out, errors.New("invalid ziplist previous-entry length")
		}
		if plen != prev {
			return out, errors.New("ziplist previous-entry length does not match")
		}
		if off >= end {
			return out, errors.New("ziplist entry past the end")
		}
		c := b[off]
		var s []byte
		var v int64
		isInt := true
		switch {
		case c>>6 == 0:
			l := int(c & 0x3f)
			if off+1+l > end {
				return out, errors.New("ziplist string past the end")
			}
			s, isInt = b[off+1:off+1+l], false
			off += 1 + l
		case c>>6 == 1:
			if off+2 > end {
				return out, errors.New("ziplist string past the end")
			}
			l := int(c&0x3f)<<8 | int(b[off+1])
			if off+2+l > end {
				return out, errors.New("ziplist string past the end")
			}
			s, isInt = b[off+2:off+2+l], false
			off += 2 + l
		case c == 0x80:
			if off+5 > end {
				return out, errors.New("ziplist string past the end")
			}
			l := binary.BigEndian.Uint32(b[off+1:])
			if uint64(l) > uint64(end-off-5) {
				return out, errors.New("ziplist string past the end")
			}
			s, isInt = b[off+5:off+5+int(l)], false
			off += 5 + int(l)
		case c >= 0xf1 && c <= 0xfd:
			v = int64(c&0x0f) - 1
			off++
		default:
			var w int
			switch c {
			case 0xc0:
				w = 2
			case 0xd0:
				w = 4
			case 0xe0:
				w = 8
			case 0xf0:
				w = 3
			case 0xfe:
				w = 1
			default:
				return out, fmt.Errorf("invalid ziplist encoding byte 0x%02x", c)
			}
			if off+1+w > end {
				return out, errors.New("ziplist integer past the end")
			}
			var u uint64
			for i := w - 1; i >= 0; i-- {
				u = u<<8 | uint64(b[off+1+i])
			}
			shift := uint(64 - 8*w)
			v = int64(u<<shift) >> shift
			off += 1 + w
		}
		out = append(out, intText(s, v, isInt, ibuf))
		prev = off - start
		n++
	}
	if want != 0xffff && want != n {
		return out, fmt.Errorf("ziplist header counts %d elements, it holds %d", want, n)
	}
	return out, nil
}

// intsetElems appends the members of intset b: encoding (2, 4 or 8, the
// width of each member), count, then the members in increasing order,
// little endian.
func intsetElems(b []byte, out [][]byte, ibuf *[]byte) ([][]byte, error) {
	if len(b) < 8 {
		return out, errors.New("intset shorter than its header")
	}
	w := int(binary.LittleEndian.Uint32(b))
	n := uint64(binary.LittleEndian.Uint32(b[4:]))
	if w != 2 && w != 4 && w != 8 {
		return out, fmt.Errorf("intset of invalid width %d", w)
	}
	if uint64(len(b)-8) != n*uint64(w) {
		return out, fmt.Errorf("intset of %d members of %d bytes in %d bytes", n, w, len(b)-8)
	}
	var last int64
	for i := 0; i < int(n); i++ {
		p := b[8+i*w:]
		var v int64
		switch w {
		case 2:
			v = int64(int16(binary.LittleEndian.Uint16(p)))
		case 4:
			v = int64(int32(binary.LittleEndian.Uint32(p)))
		default:
			v = int64(binary.LittleEndian.Uint64(p))
		}
		if i > 0 && v <= last {
			return out, errors.New("intset members out of order")
		}
		last = v
		out = append(out, intText(nil, v, true, ibuf))
	}
	return out, nil
}

// zipmapElems appends the fields and values of zipmap b (Redis 2.x small
// hashes): a count byte, then per pair the field's length and bytes, the
// value's length, a count of free bytes, the value and the free bytes,
// ended by 0xff. A length is one byte below 254, else 254 and 4 bytes.
func zipmapElems(b []byte, out [][]byte) ([][]byte, error) {
	if len(b) < 2 || b[len(b)-1] != 0xff {
		return out, errors.New("zipmap without its terminator")
	}
	end := len(b) - 1
	off := 1
	readLen := func() (int, bool) {
		if off >= end {
			return 0, false
		}
		if b[off] < 254 {
			off++
			return int(b[off-1]), true
		}
		if b[off] != 254 || off+5 > end {
			return 0, false
		}
		l := binary.LittleEndian.Uint32(b[off+1:])
		off += 5
		return int(l), uint64(l) <= uint64(end-off)
	}
	for off < end {
		l, ok := readLen()
		if !ok || off+l > end {
			return out, errors.New("zipmap field past the end")
		}
		out = append(out, b[off:off+l])
		off += l
		l, ok = readLen()
		if !ok || off+1 > end {
			return out, errors.New("zipmap value past the end")
		}
		free := int(b[off])
		off++
		if off+l+free > end {
			return out, errors.New("zipmap value past the end")
		}
		out = append(out, b[off:off+l])
		off += l + free
	}
	return out, nil
}
