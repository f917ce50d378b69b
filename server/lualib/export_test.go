package lualib

import (
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// Exports for the external tests of package lualib_test, which can import
// servertest (the server package imports this one).
var (
	ShowPrelude = showPrelude
	NewState    = func(tb testing.TB) *lua.LState { return newState(tb) }
	Eval        = func(tb testing.TB, L *lua.LState, src string) string { return eval(tb, L, src) }
)

// LibCases calls f with the name, chunk and Redis's result of each libCase.
func LibCases(f func(name, src, want string)) {
	for _, tc := range libCases {
		f(tc.name, tc.src, tc.want)
	}
}
