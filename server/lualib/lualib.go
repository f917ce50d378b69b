// Package lualib implements, for gopher-lua, the Lua libraries Redis 7.0
// loads into its scripting environment: cjson (lua-cjson 2.1), cmsgpack
// (lua-cmsgpack 0.4.0), bit (LuaBitOp 1.0.2) and struct (Roberto
// Ierusalimschy's struct library). Results, encodings and error messages
// follow the C libraries Redis vendors in deps/lua/src.
//
// Errors are raised as Lua errors without position information, as the C
// functions raise them, so pcall(cjson.decode, "x") returns the same
// message in recached and in Redis.
package lualib

import (
	"fmt"
	"math"
	"strconv"

	lua "github.com/yuin/gopher-lua"
)

// luaMaxCStack is Lua 5.1's LUAI_MAXCSTACK: the stack slots a C function
// may use, which bounds the nesting the C libraries accept.
const luaMaxCStack = 8000

// OpenAll registers the four libraries as the global tables cjson,
// cmsgpack, bit and struct, as Redis does when it creates its Lua state.
func OpenAll(L *lua.LState) {
	OpenCJSON(L)
	OpenCMsgpack(L)
	OpenBit(L)
	OpenStruct(L)
}

// register builds a table of funcs, sets it as the global name and returns it.
func register(L *lua.LState, name string, funcs map[string]lua.LGFunction) *lua.LTable {
	tb := L.NewTable()
	for k, f := range funcs {
		tb.RawSetString(k, L.NewFunction(f))
	}
	L.SetGlobal(name, tb)
	return tb
}

// raise raises msg as a Lua error with no position prefix, like luaL_error
// called from a C function.
func raise(L *lua.LState, format string, args ...any) {
	L.Error(lua.LString(fmt.Sprintf(format, args...)), 0)
}

// argError raises Lua 5.1's "bad argument" error for argument n of the
// running Go function, named as its caller called it ('?' when the name is
// unknown, as through pcall).
func argError(L *lua.LState, n int, msg string) {
	name := "?"
	if dbg, ok := L.GetStack(0); ok {
		if _, err := L.GetInfo("n", dbg, lua.LNil); err == nil && dbg.Name != "" && dbg.Name[0] != '(' && dbg.Name[0] != '<' {
			name = dbg.Name
		}
	}
	raise(L, "bad argument #%d to '%s' (%s)", n, name, msg)
}

// typeName returns Lua 5.1's name of v's type as luaL_typename prints it.
func typeName(L *lua.LState, n int) string {
	if n > L.GetTop() {
		return "no value"
	}
	return L.Get(n).Type().String()
}

// checkNumber is luaL_checknumber: argument n must be a number or a string
// convertible to one.
func checkNumber(L *lua.LState, n int) float64 {
	v := L.Get(n)
	switch x := v.(type) {
	case lua.LNumber:
		return float64(x)
	case lua.LString:
		if f, ok := stringToNumber(string(x)); ok {
			return f
		}
	}
	argError(L, n, "number expected, got "+typeName(L, n))
	return 0
}

// optInteger is luaL_optinteger: absent or nil gives def, otherwise the
// number truncated toward zero.
func optInteger(L *lua.LState, n int, def int64) int64 {
	if n > L.GetTop() || L.Get(n) == lua.LNil {
		return def
	}
	return toInteger(checkNumber(L, n))
}

// checkString is luaL_checklstring: a string, or a number converted to one.
func checkString(L *lua.LState, n int) string {
	switch x := L.Get(n).(type) {
	case lua.LString:
		return string(x)
	case lua.LNumber:
		return formatG(float64(x), 14)
	}
	argError(L, n, "string expected, got "+typeName(L, n))
	return ""
}

// toInteger converts a Lua number to lua_Integer as Lua 5.1 on amd64 does
// (truncation; out of range values give the minimum int64, like cvttsd2si).
func toInteger(f float64) int64 {
	if f != f || f >= 9223372036854775808.0 || f < -9223372036854775808.0 {
		return -9223372036854775808
	}
	return int64(f)
}

// stringToNumber is Lua 5.1's string to number coercion (lua_str2number
// via strtod, or a hexadecimal integer), surrounded by optional spaces.
func stringToNumber(s string) (float64, bool) {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	f, n := strtod(s[i:])
	if n == 0 {
		return 0, false
	}
	i += n
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return f, i == len(s)
}

// formatG formats f as C's printf("%.<prec>g") does with glibc.
func formatG(f float64, prec int) string {
	switch {
	case math.IsNaN(f):
		if math.Signbit(f) {
			return "-nan"
		}
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', prec, 64)
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}
