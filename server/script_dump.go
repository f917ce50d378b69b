package server

import (
	"encoding/binary"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// string.dump and binary chunks.
//
// Redis's Lua dumps a function as a Lua 5.1 binary chunk and, since 7.0,
// refuses to load one: loadstring reads a chunk starting with ESC as source
// text, which fails at its first byte. Scripts therefore never get a
// dumped function back; what they can rely on is that string.dump returns
// a string in the binary-chunk layout and that loading it fails with Lua's
// message. gopher-lua has no string.dump and a different parse error, so
// both are provided here: the dump is gopher-lua's prototype written in
// Lua 5.1's chunk layout (its instructions are gopher-lua's, which no Lua
// 5.1 runs), and loadstring refuses binary chunks as Redis's Lua does.

// luaSignature starts every Lua binary chunk.
const luaSignature = "\x1bLua"

// openDump installs string.dump and wraps loadstring of the globals.
func openDump(L *lua.LState, globals *lua.LTable) {
	if str, ok := globals.RawGetString("string").(*lua.LTable); ok {
		str.RawSetString("dump", L.NewFunction(luaDump))
	}
	loadstring := globals.RawGetString("loadstring")
	globals.RawSetString("loadstring", L.NewFunction(func(L *lua.LState) int {
		if s, ok := L.Get(1).(lua.LString); ok && strings.HasPrefix(string(s), "\x1b") {
			L.Push(lua.LNil)
			L.Push(lua.LString(chunkID(L.OptString(2, string(s))) + ":1: unexpected symbol near 'char(27)'"))
			return 2
		}
		L.Insert(loadstring, 1)
		L.Call(L.GetTop()-1, lua.MultRet)
		return L.GetTop()
	}))
}

// chunkID is Lua 5.1's name of a chunk loaded from a string in messages:
// [string "<its first line>"], cut at a NUL as C cuts it and shortened
// with "..." past 43 bytes.
func chunkID(source string) string {
	if i := strings.IndexByte(source, 0); i >= 0 {
		source = source[:i]
	}
	n := strings.IndexAny(source, "\n\r")
	if n < 0 {
		n = len(source)
	}
	if n > 43 {
		n = 43
	}
	if n < len(source) {
		return `[string "` + source[:n] + `..."]`
	}
	return `[string "` + source + `"]`
}

// luaDump is string.dump(f): f's prototype as a Lua 5.1 binary chunk.
func luaDump(L *lua.LState) int {
	fn, ok := L.Get(1).(*lua.LFunction)
	if !ok {
		L.ArgError(1, "function expected")
		return 0
	}
	if fn.IsG || fn.Proto == nil {
		L.RaiseError("unable to dump given function")
		return 0
	}
	// The header of a chunk from a 64-bit little-endian Lua 5.1:
	// version 5.1, official format, then the sizes of int, size_t,
	// Instruction and lua_Number, and 0 for floating-point numbers.
	b := []byte(luaSignature + "\x51\x00\x01\x04\x08\x04\x08\x00")
	b = dumpProto(b, fn.Proto, "")
	L.Push(lua.LString(b))
	return 1
}

// dumpProto appends p in Lua 5.1's function layout. A nested function's
// source is left out when it is its parent's, as Lua leaves it out.
func dumpProto(b []byte, p *lua.FunctionProto, parent string) []byte {
	source := "@" + p.SourceName
	if source == parent {
		b = dumpString(b, "", true)
	} else {
		b = dumpString(b, source, false)
	}
	b = dumpInt(b, p.LineDefined)
	b = dumpInt(b, p.LastLineDefined)
	b = append(b, p.NumUpvalues, p.NumParameters, p.IsVarArg, p.NumUsedRegisters)
	b = dumpInt(b, len(p.Code))
	for _, inst := range p.Code {
		b = binary.LittleEndian.AppendUint32(b, inst)
	}
	b = dumpInt(b, len(p.Constants))
	for _, k := range p.Constants {
		switch v := k.(type) {
		case lua.LBool:
			b = append(b, 1, 0)
			if v {
				b[len(b)-1] = 1
			}
		case lua.LNumber:
			b = append(b, 3)
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(v)))
		case lua.LString:
			b = append(b, 4)
			b = dumpString(b, string(v), false)
		default:
			b = append(b, 0)
		}
	}
	b = dumpInt(b, len(p.FunctionPrototypes))
	for _, sub := range p.FunctionPrototypes {
		b = dumpProto(b, sub, source)
	}
	b = dumpInt(b, len(p.DbgSourcePositions))
	for _, line := range p.DbgSourcePositions {
		b = dumpInt(b, line)
	}
	b = dumpInt(b, len(p.DbgLocals))
	for _, l := range p.DbgLocals {
		b = dumpString(b, l.Name, false)
		b = dumpInt(b, l.StartPc)
		b = dumpInt(b, l.EndPc)
	}
	b = dumpInt(b, len(p.DbgUpvalues))
	for _, name := range p.DbgUpvalues {
		b = dumpString(b, name, false)
	}
	return b
}

// dumpInt appends a 4-byte int.
func dumpInt(b []byte, n int) []byte {
	return binary.LittleEndian.AppendUint32(b, uint32(int32(n)))
}

// dumpString appends a Lua string: its size_t length counting a final
// NUL, the bytes and the NUL; a missing string has length 0.
func dumpString(b []byte, s string, missing bool) []byte {
	if missing {
		return binary.LittleEndian.AppendUint64(b, 0)
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(len(s)+1))
	b = append(b, s...)
	return append(b, 0)
}
