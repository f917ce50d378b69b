package lualib

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// OpenBit registers the global table bit (LuaBitOp 1.0.2: tobit, tohex,
// bnot, band, bor, bxor, lshift, rshift, arshift, rol, ror, bswap), which
// operates on 32-bit integers and returns signed 32-bit results.
func OpenBit(L *lua.LState) {
	register(L, "bit", map[string]lua.LGFunction{
		"tobit":   func(L *lua.LState) int { return bitReturn(L, bitArg(L, 1)) },
		"bnot":    func(L *lua.LState) int { return bitReturn(L, ^bitArg(L, 1)) },
		"band":    bitFold(func(a, b uint32) uint32 { return a & b }),
		"bor":     bitFold(func(a, b uint32) uint32 { return a | b }),
		"bxor":    bitFold(func(a, b uint32) uint32 { return a ^ b }),
		"lshift":  bitShift(func(b, n uint32) uint32 { return b << n }),
		"rshift":  bitShift(func(b, n uint32) uint32 { return b >> n }),
		"arshift": bitShift(func(b, n uint32) uint32 { return uint32(int32(b) >> n) }),
		"rol":     bitShift(func(b, n uint32) uint32 { return b<<n | b>>(32-n) }),
		"ror":     bitShift(func(b, n uint32) uint32 { return b<<(32-n) | b>>n }),
		"bswap": func(L *lua.LState) int {
			b := bitArg(L, 1)
			return bitReturn(L, b>>24|b>>8&0xff00|(b&0xff00)<<8|b<<24)
		},
		"tohex": bitToHex,
	})
}

// bitArg is LuaBitOp's barg for Lua 5.1: the number (or numeric string)
// at n, rounded to an integer and reduced modulo 2^32 by adding 2^52+2^51
// and keeping the low 32 bits of the double.
func bitArg(L *lua.LState, n int) uint32 {
	var f float64
	ok := true
	switch x := arg(L, n).(type) {
	case lua.LNumber:
		f = float64(x)
	case lua.LString:
		f, ok = stringToNumber(string(x))
	default:
		ok = false
	}
	if !ok {
		f = 0
	}
	b := uint32(math.Float64bits(f + 6755399441055744.0))
	if b == 0 && !ok {
		argError(L, n, "number expected, got "+typeName(L, n))
	}
	return b
}

func bitReturn(L *lua.LState, b uint32) int {
	L.Push(lua.LNumber(int32(b)))
	return 1
}

func bitFold(op func(a, b uint32) uint32) lua.LGFunction {
	return func(L *lua.LState) int {
		b := bitArg(L, 1)
		for i := L.GetTop(); i > 1; i-- {
			b = op(b, bitArg(L, i))
		}
		return bitReturn(L, b)
	}
}

func bitShift(op func(b, n uint32) uint32) lua.LGFunction {
	return func(L *lua.LState) int {
		b := bitArg(L, 1)
		n := bitArg(L, 2) & 31
		return bitReturn(L, op(b, n))
	}
}

// bitToHex is bit.tohex(x [, n]): the low n hex digits of x (8 by
// default), upper case when n is negative.
func bitToHex(L *lua.LState) int {
	b := bitArg(L, 1)
	n := int32(8)
	if L.GetTop() >= 2 {
		n = int32(bitArg(L, 2))
	}
	digits := "0123456789abcdef"
	if n == math.MinInt32 {
		n = math.MinInt32 + 1
	}
	if n < 0 {
		n = -n
		digits = "0123456789ABCDEF"
	}
	if n > 8 {
		n = 8
	}
	buf := make([]byte, n)
	for i := int(n) - 1; i >= 0; i-- {
		buf[i] = digits[b&15]
		b >>= 4
	}
	L.Push(lua.LString(buf))
	return 1
}
