package lualib

import (
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// newState returns a fresh gopher-lua state with the standard libraries
// and OpenAll, closed when the test ends.
func newState(tb testing.TB) *lua.LState {
	tb.Helper()
	// The registry may grow, as the scripting engine's states do, so that
	// unpack can return as many values as Redis's Lua stack holds.
	L := lua.NewState(lua.Options{RegistrySize: 1024 * 20, RegistryMaxSize: 1024 * 1024, RegistryGrowStep: 1024})
	tb.Cleanup(L.Close)
	OpenAll(L)
	return L
}

// eval runs the chunk src and returns its single result rendered as
// Redis's EVAL would render a string (other results via tostring), or the
// error message prefixed with "ERR ".
func eval(tb testing.TB, L *lua.LState, src string) string {
	tb.Helper()
	fn, err := L.Load(strings.NewReader(src), "@user_script")
	if err != nil {
		tb.Fatalf("compile %q: %v", src, err)
	}
	L.Push(fn)
	if err := L.PCall(0, 1, nil); err != nil {
		if e, ok := err.(*lua.ApiError); ok {
			return "ERR " + e.Object.String()
		}
		return "ERR " + err.Error()
	}
	v := L.Get(-1)
	L.Pop(1)
	return lua.LVAsString(L.ToStringMeta(v))
}

// luaCase is a chunk and the result Redis 7.0 gives for it (captured from
// redis-server 7.0.15, or copied from its tests/unit/scripting.tcl).
type luaCase struct {
	name string
	src  string
	want string
}

// TestLibCases runs libCases in gopher-lua with OpenAll and compares each
// result with redis-server's.
func TestLibCases(t *testing.T) {
	for _, tc := range libCases {
		t.Run(tc.name, func(t *testing.T) {
			L := newState(t)
			if got := eval(t, L, showPrelude+tc.src); got != tc.want {
				t.Errorf("%s\n got %q\nwant %q", tc.src, got, tc.want)
			}
		})
	}
}
