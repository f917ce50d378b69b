package lualib

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// msgpackMaxNesting is the depth at which cmsgpack.pack encodes tables as
// nil (LUACMSGPACK_MAX_NESTING).
const msgpackMaxNesting = 16

// OpenCMsgpack registers the global table cmsgpack (lua-cmsgpack 0.4.0:
// pack, unpack, unpack_one, unpack_limit, _NAME, _VERSION, _COPYRIGHT,
// _DESCRIPTION).
func OpenCMsgpack(L *lua.LState) {
	tb := register(L, "cmsgpack", map[string]lua.LGFunction{
		"pack":   msgpackPack,
		"unpack": func(L *lua.LState) int { return msgpackUnpack(L, 0, 0) },
		"unpack_one": func(L *lua.LState) int {
			offset := optInteger(L, 2, 0)
			L.SetTop(1)
			return msgpackUnpack(L, 1, offset)
		},
		"unpack_limit": func(L *lua.LState) int {
			limit := toInteger(checkNumber(L, 2))
			offset := optInteger(L, 3, 0)
			L.SetTop(1)
			return msgpackUnpack(L, limit, offset)
		},
	})
	tb.RawSetString("_NAME", lua.LString("cmsgpack"))
	tb.RawSetString("_VERSION", lua.LString("lua-cmsgpack 0.4.0"))
	tb.RawSetString("_COPYRIGHT", lua.LString("Copyright (C) 2012, Salvatore Sanfilippo"))
	tb.RawSetString("_DESCRIPTION", lua.LString("MessagePack C implementation for Lua"))
}

// msgpackPack is cmsgpack.pack(...): the concatenated encodings of its
// arguments.
func msgpackPack(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		argError(L, 0, "MessagePack pack needs input.")
	}
	var buf []byte
	for i := 1; i <= n; i++ {
		buf = msgpackAppend(L, buf, arg(L, i), 0)
	}
	L.Push(lua.LString(buf))
	return 1
}

func appendBE(buf []byte, v uint64, n int) []byte {
	for i := n - 1; i >= 0; i-- {
		buf = append(buf, byte(v>>(8*i)))
	}
	return buf
}

// msgpackHeader appends a header for n items: the fix form below fixMax
// with fix|n, else code16 or code32 with the length.
func msgpackHeader(buf []byte, n uint64, fixMax uint64, fix, code16, code32 byte) []byte {
	switch {
	case n <= fixMax:
		return append(buf, fix|byte(n))
	case n <= 0xffff:
		return appendBE(append(buf, code16), n, 2)
	}
	return appendBE(append(buf, code32), n, 4)
}

func msgpackAppendInt(buf []byte, n int64) []byte {
	if n >= 0 {
		switch {
		case n <= 127:
			return append(buf, byte(n))
		case n <= 0xff:
			return append(buf, 0xcc, byte(n))
		case n <= 0xffff:
			return appendBE(append(buf, 0xcd), uint64(n), 2)
		case n <= 0xffffffff:
			return appendBE(append(buf, 0xce), uint64(n), 4)
		}
		return appendBE(append(buf, 0xcf), uint64(n), 8)
	}
	switch {
	case n >= -32:
		return append(buf, byte(n))
	case n >= -128:
		return append(buf, 0xd0, byte(n))
	case n >= -32768:
		return appendBE(append(buf, 0xd1), uint64(n), 2)
	case n >= -2147483648:
		return appendBE(append(buf, 0xd2), uint64(n), 4)
	}
	return appendBE(append(buf, 0xd3), uint64(n), 8)
}

func msgpackAppend(L *lua.LState, buf []byte, v lua.LValue, level int) []byte {
	switch x := v.(type) {
	case lua.LString:
		n := uint64(len(x))
		switch {
		case n < 32:
			buf = append(buf, 0xa0|byte(n))
		case n <= 0xff:
			buf = append(buf, 0xd9, byte(n))
		case n <= 0xffff:
			buf = appendBE(append(buf, 0xda), n, 2)
		default:
			buf = appendBE(append(buf, 0xdb), n, 4)
		}
		return append(buf, x...)
	case lua.LBool:
		if x {
			return append(buf, 0xc3)
		}
		return append(buf, 0xc2)
	case lua.LNumber:
		f := float64(x)
		if !math.IsInf(f, 0) && f >= -9223372036854775808.0 && f < 9223372036854775808.0 && math.Trunc(f) == f {
			return msgpackAppendInt(buf, int64(f))
		}
		if f32 := float32(f); float64(f32) == f {
			return appendBE(append(buf, 0xca), uint64(math.Float32bits(f32)), 4)
		}
		return appendBE(append(buf, 0xcb), math.Float64bits(f), 8)
	case *lua.LTable:
		if level == msgpackMaxNesting {
			return append(buf, 0xc0)
		}
		if msgpackIsArray(x) {
			n := x.Len()
			buf = msgpackHeader(buf, uint64(n), 15, 0x90, 0xdc, 0xdd)
			for i := 1; i <= n; i++ {
				buf = msgpackAppend(L, buf, L.GetTable(x, lua.LNumber(i)), level+1)
			}
			return buf
		}
		count := 0
		for k, _ := x.Next(lua.LNil); k != lua.LNil; k, _ = x.Next(k) {
			count++
		}
		buf = msgpackHeader(buf, uint64(count), 15, 0x80, 0xde, 0xdf)
		for k, val := x.Next(lua.LNil); k != lua.LNil; k, val = x.Next(k) {
			buf = msgpackAppend(L, buf, k, level+1)
			buf = msgpackAppend(L, buf, val, level+1)
		}
		return buf
	}
	return append(buf, 0xc0)
}

// msgpackIsArray is table_is_an_array: every key a positive integer that
// fits an int and the largest equal to the number of keys.
func msgpackIsArray(t *lua.LTable) bool {
	count, maxKey := 0, 0.0
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		n, ok := k.(lua.LNumber)
		f := float64(n)
		if !ok || f <= 0 || f > math.MaxInt32 || math.Trunc(f) != f {
			return false
		}
		maxKey = max(maxKey, f)
		count++
	}
	return maxKey == float64(count)
}

// Decoding errors of lua-cmsgpack's cursor.
const (
	msgpackOK = iota
	msgpackEOF
	msgpackBadFormat
)

// msgpackDecoder decodes values from data, building tables directly.
type msgpackDecoder struct {
	L    *lua.LState
	data string
	pos  int
	err  int
	// slots counts the Lua stack slots lua-cmsgpack would be using (the
	// input, the values decoded so far, open tables and their pending
	// keys), which Lua 5.1 limits to luaMaxCStack.
	slots int
}

// checkStack is luaL_checkstack(L, 1, msg).
func (d *msgpackDecoder) checkStack(msg string) {
	if d.slots+1 > luaMaxCStack {
		raise(d.L, "stack overflow (%s)", msg)
	}
}

func (d *msgpackDecoder) need(n uint64) bool {
	if uint64(len(d.data)-d.pos) < n {
		d.err = msgpackEOF
		return false
	}
	return true
}

func (d *msgpackDecoder) uintAt(off, n int) uint64 {
	return getUint(d.data[d.pos+off:d.pos+off+n], false)
}

// integer converts an unsigned value as lua_pushunsigned on 64 bits does
// (through int64).
func integer(u uint64) lua.LValue { return lua.LNumber(float64(int64(u))) }

// decode is mp_decode_to_lua_type: one value, or LNil with d.err set.
// The value takes a stack slot, that the caller releases.
func (d *msgpackDecoder) decode() lua.LValue {
	if !d.need(1) {
		return lua.LNil
	}
	d.checkStack("too many return values at once; use unpack_one or unpack_limit instead.")
	if c := d.data[d.pos]; (c >= 0xdc && c <= 0xdf) || c&0xe0 == 0x80 {
		return d.decodeValue() // a table, counted when created
	}
	v := d.decodeValue()
	d.slots++
	return v
}

func (d *msgpackDecoder) decodeValue() lua.LValue {
	c := d.data[d.pos]
	switch c {
	case 0xcc, 0xcd, 0xce, 0xcf:
		n := 1 << (c - 0xcc)
		if !d.need(uint64(1 + n)) {
			return lua.LNil
		}
		v := d.uintAt(1, n)
		d.pos += 1 + n
		return integer(v)
	case 0xd0, 0xd1, 0xd2, 0xd3:
		n := 1 << (c - 0xd0)
		if !d.need(uint64(1 + n)) {
			return lua.LNil
		}
		v := d.uintAt(1, n)
		d.pos += 1 + n
		shift := 64 - 8*n
		return lua.LNumber(float64(int64(v<<shift) >> shift))
	case 0xc0:
		d.pos++
		return lua.LNil
	case 0xc3:
		d.pos++
		return lua.LTrue
	case 0xc2:
		d.pos++
		return lua.LFalse
	case 0xca:
		if !d.need(5) {
			return lua.LNil
		}
		v := math.Float32frombits(uint32(d.uintAt(1, 4)))
		d.pos += 5
		return lua.LNumber(v)
	case 0xcb:
		if !d.need(9) {
			return lua.LNil
		}
		v := math.Float64frombits(d.uintAt(1, 8))
		d.pos += 9
		return lua.LNumber(v)
	case 0xd9, 0xda, 0xdb:
		n := 1 << (c - 0xd9)
		if !d.need(uint64(1 + n)) {
			return lua.LNil
		}
		l := d.uintAt(1, n)
		if !d.need(uint64(1+n) + l) {
			return lua.LNil
		}
		s := d.data[d.pos+1+n : d.pos+1+n+int(l)]
		d.pos += 1 + n + int(l)
		return lua.LString(s)
	case 0xdc, 0xdd, 0xde, 0xdf:
		n := 2
		if c == 0xdd || c == 0xdf {
			n = 4
		}
		if !d.need(uint64(1 + n)) {
			return lua.LNil
		}
		l := d.uintAt(1, n)
		d.pos += 1 + n
		if c <= 0xdd {
			return d.array(l)
		}
		return d.hash(l)
	}
	switch {
	case c&0x80 == 0:
		d.pos++
		return lua.LNumber(c)
	case c&0xe0 == 0xe0:
		d.pos++
		return lua.LNumber(int8(c))
	case c&0xe0 == 0xa0:
		l := int(c & 0x1f)
		if !d.need(uint64(1 + l)) {
			return lua.LNil
		}
		s := d.data[d.pos+1 : d.pos+1+l]
		d.pos += 1 + l
		return lua.LString(s)
	case c&0xf0 == 0x90:
		d.pos++
		return d.array(uint64(c & 0xf))
	case c&0xf0 == 0x80:
		d.pos++
		return d.hash(uint64(c & 0xf))
	}
	d.err = msgpackBadFormat
	return lua.LNil
}

// sizeHint bounds a decoded length by what the remaining input can hold,
// each element taking at least per bytes.
func (d *msgpackDecoder) sizeHint(n uint64, per int) int {
	return int(min(n, uint64((len(d.data)-d.pos)/per)))
}

func (d *msgpackDecoder) array(n uint64) lua.LValue {
	t := d.L.CreateTable(d.sizeHint(n, 1), 0)
	d.slots++
	for i := uint64(1); i <= n; i++ {
		d.checkStack("in function mp_decode_to_lua_array")
		d.slots++ // the index
		v := d.decode()
		if d.err != msgpackOK {
			return t
		}
		t.RawSet(lua.LNumber(i), v)
		d.slots -= 2
	}
	return t
}

func (d *msgpackDecoder) hash(n uint64) lua.LValue {
	t := d.L.CreateTable(0, d.sizeHint(n, 2))
	d.slots++
	for ; n > 0; n-- {
		k := d.decode()
		if d.err != msgpackOK {
			return t
		}
		v := d.decode()
		if d.err != msgpackOK {
			return t
		}
		switch kk := k.(type) {
		case *lua.LNilType:
			raise(d.L, "table index is nil")
		case lua.LNumber:
			if math.IsNaN(float64(kk)) {
				raise(d.L, "table index is NaN")
			}
		}
		t.RawSet(k, v)
		d.slots -= 2
	}
	return t
}

// msgpackUnpack is mp_unpack_full: decode up to limit values from offset
// (all values when both are 0); with a limit or offset the next offset,
// -1 at the end of the input, comes first.
func msgpackUnpack(L *lua.LState, limit, offset int64) int {
	s := checkString(L, 1)
	decodeAll := limit == 0 && offset == 0
	if offset < 0 || limit < 0 {
		raise(L, "Invalid request to unpack with offset of %d and limit of %d.", int32(offset), int32(len(s)))
	}
	if offset > int64(len(s)) {
		raise(L, "Start offset %d greater than input length %d.", int32(offset), int32(len(s)))
	}
	if decodeAll {
		limit = math.MaxInt32
	}
	d := &msgpackDecoder{L: L, data: s, pos: int(offset), slots: 1}
	var out []lua.LValue
	for cnt := int64(0); d.pos < len(s) && cnt < limit; cnt++ {
		v := d.decode()
		switch d.err {
		case msgpackEOF:
			raise(L, "Missing bytes in input.")
		case msgpackBadFormat:
			raise(L, "Bad data format in input.")
		}
		out = append(out, v)
	}
	if !decodeAll {
		next := lua.LNumber(d.pos)
		if d.pos == len(s) {
			next = -1
		}
		L.Push(next)
	}
	for _, v := range out {
		L.Push(v)
	}
	if decodeAll {
		return len(out)
	}
	return len(out) + 1
}
