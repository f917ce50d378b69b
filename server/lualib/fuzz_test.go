package lualib

import (
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// callLib calls the global library function lib.fn with args in L and
// fails the test on anything but a result or an ordinary Lua error with a
// string message: a Go panic inside the library surfaces in gopher-lua as
// an ApiErrorPanic.
func callLib(t *testing.T, L *lua.LState, lib, fn string, args ...lua.LValue) {
	t.Helper()
	f := L.GetField(L.GetGlobal(lib), fn)
	top := L.GetTop()
	err := L.CallByParam(lua.P{Fn: f, NRet: lua.MultRet, Protect: true}, args...)
	L.SetTop(top)
	if err == nil {
		return
	}
	apiErr, ok := err.(*lua.ApiError)
	if !ok || apiErr.Type != lua.ApiErrorRun {
		t.Fatalf("%s.%s(%q): not a Lua error: %v", lib, fn, args, err)
	}
	if _, ok := apiErr.Object.(lua.LString); !ok {
		t.Fatalf("%s.%s(%q): error is a %s, not a message", lib, fn, args, apiErr.Object.Type())
	}
}

// FuzzCJSONDecode checks that cjson.decode never panics: any input gives
// a value or a Lua error, and a decoded value encodes again (or fails to,
// for numbers JSON cannot hold) without panicking.
func FuzzCJSONDecode(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}],"c":"\u00e9\ud83d\ude00"}`, "[0x1p3, -Infinity, nan]", `"\ud800"`, "[[[[[[[[", "\x00\x00", "1e400", `{"a"`, strings.Repeat("[", 5000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		L := newState(t)
		callLib(t, L, "cjson", "decode", lua.LString(s))
		if err := L.DoString(`local ok, v = pcall(cjson.decode, ...) if ok then pcall(cjson.encode, v) end`); err != nil {
			t.Fatalf("decode then encode %q: %v", s, err)
		}
	})
}

// FuzzCMsgpackUnpack checks that cmsgpack.unpack, unpack_one and
// unpack_limit never panic on arbitrary bytes, and that what unpack
// decodes packs again.
func FuzzCMsgpackUnpack(f *testing.F) {
	for _, s := range []string{"\x93\x01\xa1a\xc0", "\x82\xa1a\x01\xa1b\x92\xc3\xc2", "\xdd\xff\xff\xff\xff", "\xdb\x7f\xff\xff\xff", "\xcf\xff\xff\xff\xff\xff\xff\xff\xff", "\x81\xc0\x01", strings.Repeat("\x91", 5000)} {
		f.Add(s, uint8(1), uint8(0))
	}
	f.Fuzz(func(t *testing.T, s string, limit, offset uint8) {
		L := newState(t)
		callLib(t, L, "cmsgpack", "unpack", lua.LString(s))
		callLib(t, L, "cmsgpack", "unpack_one", lua.LString(s), lua.LNumber(offset))
		callLib(t, L, "cmsgpack", "unpack_limit", lua.LString(s), lua.LNumber(limit), lua.LNumber(offset))
		L.SetGlobal("input", lua.LString(s))
		if err := L.DoString(`local r = {pcall(cmsgpack.unpack, input)} if r[1] and #r > 1 then cmsgpack.pack(unpack(r, 2)) end`); err != nil {
			t.Fatalf("unpack then pack %q: %v", s, err)
		}
	})
}

// FuzzStruct checks that struct.pack, unpack and size never panic on
// arbitrary formats and data.
func FuzzStruct(f *testing.F) {
	for _, s := range []string{">!4 i3 b c0 s d f", "i33", "!3", "c99999999999", "<I8 l L T x"} {
		f.Add(s, "\x01\x02\x03\x00abc\x00\xff\xff\xff\xff\xff\xff\xff\xff", 1.5)
	}
	f.Fuzz(func(t *testing.T, format, data string, n float64) {
		L := newState(t)
		callLib(t, L, "struct", "size", lua.LString(format))
		callLib(t, L, "struct", "unpack", lua.LString(format), lua.LString(data))
		callLib(t, L, "struct", "unpack", lua.LString(format), lua.LString(data), lua.LNumber(n))
		callLib(t, L, "struct", "pack", lua.LString(format), lua.LNumber(n), lua.LString(data), lua.LNumber(n), lua.LString(data))
	})
}
