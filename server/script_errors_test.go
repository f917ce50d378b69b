package server

import (
	"strings"
	"testing"
)

// TestLuaFaultText checks what pcall catches in the sandbox: Lua 5.1's
// text where the value's name can be told for certain, and gopher-lua's
// own text where its debug information cannot tell (a local in a nested
// block), never a wrong name. The texts Redis also prints are compared
// with redis-server in difftest/testdata/script_errors.txt.
func TestLuaFaultText(t *testing.T) {
	for _, tc := range []struct {
		code, want string
	}{
		{"local f; f()", "attempt to call local 'f' (a nil value)"},
		{"local t = {}; t.x.y = 1", "attempt to index field 'x' (a nil value)"},
		{"local up; local function g() up() end g()", "attempt to call upvalue 'up' (a nil value)"},
		{"local a = 1 do local b = 2 end local c; c()", "attempt to call a non-function object"},
		{"local a = 1 do local b; b() end", "attempt to call a non-function object"},
		{"for _, v in ipairs({1}) do local q = v.x end", "attempt to index a non-table object(number) with key 'x'"},
		{"error('attempt to call a non-function object')", "attempt to call a non-function object"},
		{"local x = {} .. 'a'", "attempt to concatenate a table value"},
		{"for i = 1, 'x' do end", "'for' limit must be a number"},
		{"return 1 < {}", "attempt to compare number with table"},
		{"return 'a' < 'b' < 'c'", "attempt to compare boolean with string"},
	} {
		st := newLuaState(&luaRand{})
		L := st.L
		L.Env = st.globals
		err := L.DoString("local ok, err = pcall(function() " + tc.code + " end) return err")
		if err != nil {
			t.Fatalf("%s: %v", tc.code, err)
		}
		got := L.Get(-1).String()
		if _, text, _ := strings.Cut(got, ": "); text != tc.want {
			t.Errorf("%s: got %q, want %q", tc.code, got, tc.want)
		}
		L.Close()
	}
}

// TestStringDump checks string.dump's chunk: Lua 5.1's header, and a chunk
// loadstring refuses as Redis's Lua does.
func TestStringDump(t *testing.T) {
	st := newLuaState(&luaRand{})
	defer st.L.Close()
	L := st.L
	L.Env = st.globals
	if err := L.DoString(`local d = string.dump(function(a) local x = a .. 'y' return x end)
		local f, err = loadstring(d)
		return d, tostring(f), err`); err != nil {
		t.Fatal(err)
	}
	d, f, msg := L.Get(-3).String(), L.Get(-2).String(), L.Get(-1).String()
	if !strings.HasPrefix(d, "\x1bLuaQ\x00\x01\x04\x08\x04\x08\x00") || !strings.Contains(d, "@<string>") {
		t.Errorf("dump %q", d)
	}
	if f != "nil" || msg != `[string "`+"\x1bLuaQ"+`"]:1: unexpected symbol near 'char(27)'` {
		t.Errorf("loadstring: %s %q", f, msg)
	}
}
