package lualib

import (
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Layout of Redis's amd64 build, which the struct formats follow.
const (
	structMaxIntSize = 32 // largest i/I size
	structMaxAlign   = 8  // default of '!'
	structLittle     = true
)

// OpenStruct registers the global table struct (pack, unpack and size of
// Roberto Ierusalimschy's struct library, with Redis's unpack offset
// check). Formats: > < ! (endianness, alignment), b B h H l L T i[n] I[n]
// (integers), f d (floats), c[n] (fixed string), s (zero-terminated
// string), x (padding byte), space (ignored).
func OpenStruct(L *lua.LState) {
	register(L, "struct", map[string]lua.LGFunction{
		"pack":   structPack,
		"unpack": structUnpack,
		"size":   structSize,
	})
}

// structHeader is the state of a format: endianness and maximum alignment.
type structHeader struct {
	little bool
	align  int
}

// structFormat walks a format string.
type structFormat struct {
	L   *lua.LState
	fmt string
	pos int
}

// number is getnum: the decimal number at the cursor, or def.
func (f *structFormat) number(def int) int {
	if f.pos >= len(f.fmt) || !isDigit(f.fmt[f.pos]) {
		return def
	}
	a := 0
	for f.pos < len(f.fmt) && isDigit(f.fmt[f.pos]) {
		d := int(f.fmt[f.pos] - '0')
		if a > math.MaxInt32/10 || a*10 > math.MaxInt32-d {
			raise(f.L, "integral size overflow")
		}
		a = a*10 + d
		f.pos++
	}
	return a
}

// size is optsize: the size of option opt, reading its count if any.
func (f *structFormat) size(opt byte) int {
	switch opt {
	case 'B', 'b':
		return 1
	case 'H', 'h':
		return 2
	case 'L', 'l', 'T', 'd':
		return 8
	case 'f':
		return 4
	case 'x':
		return 1
	case 'c':
		return f.number(1)
	case 'i', 'I':
		sz := f.number(4)
		if sz > structMaxIntSize {
			raise(f.L, "integral size %d is larger than limit of %d", sz, structMaxIntSize)
		}
		return sz
	}
	return 0
}

// toAlign is gettoalign: padding before an element of size at offset n.
func toAlign(n int, h *structHeader, opt byte, size int) int {
	if size == 0 || opt == 'c' {
		return 0
	}
	if size > h.align {
		size = h.align
	}
	return (size - (n & (size - 1))) & (size - 1)
}

// control is controloptions: endianness, alignment and spaces.
func (f *structFormat) control(opt byte, h *structHeader) {
	switch opt {
	case ' ':
	case '>':
		h.little = false
	case '<':
		h.little = true
	case '!':
		a := f.number(structMaxAlign)
		if a <= 0 || a&(a-1) != 0 {
			raise(f.L, "alignment %d is not a power of 2", a)
		}
		h.align = a
	default:
		argError(f.L, 1, "invalid format option '"+string([]byte{opt})+"'")
	}
}

func putUint(buf []byte, v uint64, size int, little bool) []byte {
	b := make([]byte, size)
	for i := 0; i < size; i++ {
		k := size - 1 - i
		if little {
			k = i
		}
		b[k] = byte(v)
		v >>= 8
	}
	return append(buf, b...)
}

// structPack is struct.pack(fmt, ...).
func structPack(L *lua.LState) int {
	f := &structFormat{L: L, fmt: checkString(L, 1)}
	h := structHeader{little: structLittle, align: 1}
	arg := 2
	L.Push(lua.LNil) // as the C library's marker: a missing argument is nil
	var buf []byte
	for f.pos < len(f.fmt) && f.fmt[f.pos] != 0 {
		opt := f.fmt[f.pos]
		f.pos++
		size := f.size(opt)
		for n := toAlign(len(buf), &h, opt, size); n > 0; n-- {
			buf = append(buf, 0)
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			n := checkNumber(L, arg)
			arg++
			buf = putUint(buf, cUint64(n), size, h.little)
		case 'x':
			buf = append(buf, 0)
		case 'f':
			buf = putUint(buf, uint64(math.Float32bits(float32(checkNumber(L, arg)))), 4, h.little)
			arg++
		case 'd':
			buf = putUint(buf, math.Float64bits(checkNumber(L, arg)), 8, h.little)
			arg++
		case 'c', 's':
			s := checkString(L, arg)
			arg++
			if size == 0 {
				size = len(s)
			}
			if len(s) < size {
				argError(L, arg, "string too short")
			}
			buf = append(buf, s[:size]...)
			if opt == 's' {
				buf = append(buf, 0)
			}
		default:
			f.control(opt, &h)
		}
	}
	L.Push(lua.LString(buf))
	return 1
}

// cUint64 converts a number to an unsigned 64-bit integer as the C
// conversions of Redis's amd64 build do (the signed conversion below 2^63,
// the unsigned one above): NaN gives 2^63, values from 2^64 give 0.
func cUint64(n float64) uint64 {
	switch {
	case n < 9223372036854775808.0:
		return uint64(toInteger(n))
	case n != n:
		return 1 << 63
	case n >= 18446744073709551616.0:
		return 0
	}
	return uint64(n-9223372036854775808.0) | 1<<63
}

func getUint(b string, little bool) uint64 {
	var v uint64
	for i := range len(b) {
		k := i
		if little {
			k = len(b) - 1 - i
		}
		v = v<<8 | uint64(b[k])
	}
	return v
}

// structUnpack is struct.unpack(fmt, data [, pos]): the values and the
// position after them.
func structUnpack(L *lua.LState) int {
	f := &structFormat{L: L, fmt: checkString(L, 1)}
	data := checkString(L, 2)
	start := optInteger(L, 3, 1)
	if start <= 0 {
		argError(L, 3, "offset must be 1 or greater")
	}
	pos := uint64(start - 1)
	ld := uint64(len(data))
	h := structHeader{little: structLittle, align: 1}
	var out []lua.LValue
	for f.pos < len(f.fmt) && f.fmt[f.pos] != 0 {
		opt := f.fmt[f.pos]
		f.pos++
		size := uint64(f.size(opt))
		pos += uint64(toAlign(int(pos), &h, opt, int(size)))
		if size > ld || pos > ld-size {
			argError(L, 2, "data string too short")
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			v := getUint(data[pos:pos+size], h.little)
			if opt >= 'a' { // signed
				if size*8 < 64 {
					mask := ^uint64(0) << (size*8 - 1)
					if v&mask != 0 {
						v |= mask
					}
				}
				out = append(out, lua.LNumber(float64(int64(v))))
			} else {
				out = append(out, lua.LNumber(float64(v)))
			}
		case 'x':
		case 'f':
			out = append(out, lua.LNumber(math.Float32frombits(uint32(getUint(data[pos:pos+4], h.little)))))
		case 'd':
			out = append(out, lua.LNumber(math.Float64frombits(getUint(data[pos:pos+8], h.little))))
		case 'c':
			if size == 0 {
				var prev lua.LNumber
				ok := false
				if len(out) > 0 {
					prev, ok = out[len(out)-1].(lua.LNumber)
				}
				if !ok {
					raise(L, "format 'c0' needs a previous size")
				}
				out = out[:len(out)-1]
				size = cUint64(float64(prev))
				if size > ld || pos > ld-size {
					argError(L, 2, "data string too short")
				}
			}
			out = append(out, lua.LString(data[pos:pos+size]))
		case 's':
			e := strings.IndexByte(data[pos:], 0)
			if e < 0 {
				raise(L, "unfinished string in data")
			}
			size = uint64(e) + 1
			out = append(out, lua.LString(data[pos:pos+uint64(e)]))
		default:
			f.control(opt, &h)
		}
		pos += size
	}
	for _, v := range out {
		L.Push(v)
	}
	L.Push(lua.LNumber(pos + 1))
	return len(out) + 1
}

// structSize is struct.size(fmt): the packed size of a fixed-size format.
func structSize(L *lua.LState) int {
	f := &structFormat{L: L, fmt: checkString(L, 1)}
	h := structHeader{little: structLittle, align: 1}
	pos := 0
	for f.pos < len(f.fmt) && f.fmt[f.pos] != 0 {
		opt := f.fmt[f.pos]
		f.pos++
		size := f.size(opt)
		pos += toAlign(pos, &h, opt, size)
		if opt == 's' {
			argError(L, 1, "option 's' has no fixed size")
		} else if opt == 'c' && size == 0 {
			argError(L, 1, "option 'c0' has no fixed size")
		}
		if !isAlnum(opt) {
			f.control(opt, &h)
		}
		pos += size
	}
	L.Push(lua.LNumber(pos))
	return 1
}
