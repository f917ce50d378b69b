// Package lualib implements, for gopher-lua, the Lua libraries Redis 7.0
// loads into its scripting environment: cjson (lua-cjson 2.1), cmsgpack
// (lua-cmsgpack 0.4.0), bit (LuaBitOp 1.0.2) and struct (Roberto
// Ierusalimschy's struct library). Results, encodings and error messages
// follow the C libraries Redis vendors in deps/lua/src.
//
// Errors are raised as the C functions raise them with luaL_error: with
// the position of a calling Lua function, without one when called from
// pcall, so error messages are the same in recached and in Redis.
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

// raise raises a Lua error as luaL_error does in a C function: the message
// is prefixed with the position of the caller when the caller is a Lua
// function ("user_script:1: ..."), and not when it is a Go function such
// as pcall.
func raise(L *lua.LState, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if dbg, ok := L.GetStack(1); ok {
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err == nil && dbg.CurrentLine > 0 {
			src := dbg.Source
			if src != "" && (src[0] == '@' || src[0] == '=') {
				src = src[1:]
			}
			msg = fmt.Sprintf("%s:%d: %s", src, dbg.CurrentLine, msg)
		}
	}
	L.Error(lua.LString(msg), 0)
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

// arg returns argument n, nil when there are fewer arguments.
func arg(L *lua.LState, n int) lua.LValue {
	if n < 1 || n > L.GetTop() {
		return lua.LNil
	}
	return L.Get(n)
}

// typeName returns Lua 5.1's name of v's type as luaL_typename prints it.
func typeName(L *lua.LState, n int) string {
	if n < 1 || n > L.GetTop() {
		return "no value"
	}
	return L.Get(n).Type().String()
}

// checkNumber is luaL_checknumber: argument n must be a number or a string
// convertible to one.
func checkNumber(L *lua.LState, n int) float64 {
	switch x := arg(L, n).(type) {
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
	if arg(L, n) == lua.LNil {
		return def
	}
	return toInteger(checkNumber(L, n))
}

// checkString is luaL_checklstring: a string, or a number converted to one.
func checkString(L *lua.LState, n int) string {
	switch x := arg(L, n).(type) {
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
