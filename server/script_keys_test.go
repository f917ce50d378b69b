package server

import (
	"strings"
	"testing"

	"github.com/yuin/gopher-lua/parse"
)

// TestDeclaredKeysOnly checks the proof that lets a script lock only its
// declared keys' shards: it holds for code whose every key argument is
// KEYS[…], and fails for any way the code could reach another key.
func TestDeclaredKeysOnly(t *testing.T) {
	tbl := newTable()
	tests := []struct {
		code string
		want bool
	}{
		{"return redis.call('incr', KEYS[1])", true},
		{"return redis.pcall('INCR', KEYS[1])", true},
		{"redis.call('set', KEYS[1], ARGV[1]) return redis.call('get', KEYS[2])", true},
		{"local n = tonumber(redis.call('get', KEYS[1]) or '0') if n > 3 then redis.call('del', KEYS[1], KEYS[2]) end return n", true},
		{"for i = 1, #KEYS do redis.call('incr', KEYS[i]) end", true},
		{"local function f(k) return redis.call('get', KEYS[k]) end return f(1)", true},
		{"return redis.call('mset', KEYS[1], 'a', KEYS[2], 'b')", true},
		{"return redis.call('ping')", true},
		{"return redis.call('object', 'encoding', KEYS[1])", true},
		{"return redis.status_reply(redis.sha1hex('x'))", true},
		{"return redis.call('nosuchcommand', 'k')", true},
		{"return {KEYS[1], ARGV[1], #KEYS}", true},

		{"return redis.call('incr', 'n')", false},                             // a literal key
		{"return redis.call('incr', ARGV[1])", false},                         // a key from ARGV
		{"local k = KEYS[1] return redis.call('incr', k)", false},             // not written KEYS[…]
		{"KEYS[1] = 'other' return redis.call('incr', KEYS[1])", false},       // KEYS changed
		{"table.insert(KEYS, 'x') return redis.call('incr', KEYS[2])", false}, // KEYS passed
		{"local t = KEYS return redis.call('incr', t[1])", false},
		{"local c = redis.call return c('incr', 'n')", false}, // redis.call aliased
		{"local r = redis return r.call('incr', 'n')", false},
		{"return pcall(redis.call, 'incr', 'n')", false},
		{"local redis = {call = function() end} return redis.call('incr', KEYS[1])", false},
		{"local KEYS = {'other'} return redis.call('incr', KEYS[1])", false},
		{"return redis['call']('incr', 'n')", false},
		{"return redis.call(ARGV[1], KEYS[1])", false},                  // the command unknown
		{"return redis.call('del', unpack(KEYS))", false},               // keys by expansion
		{"return redis.call('mget', KEYS[1], f())", false},              // argument count unknown
		{"return redis.call('keys', '*')", false},                       // the whole database
		{"return redis.call('scan', 0)", false},                         // the whole database
		{"return redis.call('copy', KEYS[1], KEYS[2], 'db', 1)", false}, // another database
		{"return redis.call('sort', KEYS[1], 'by', 'w_*')", false},      // pattern keys
		{"return redis.call('eval', 'return 1', 0)", false},             // movable keys
		{"return _G.redis.call('incr', 'n')", false},
		{"return loadstring('return redis.call(\"incr\", \"n\")')()", false},
		{"return rawget(_G, 'redis').call('incr', 'n')", false},
		{"function redis.call() end", false},
		{"return redis.call('xinfo', ARGV[1], KEYS[1])", false}, // subcommand unknown
	}
	for _, tc := range tests {
		chunk, err := parse.Parse(strings.NewReader(tc.code), "t")
		if err != nil {
			t.Fatalf("%s: %v", tc.code, err)
		}
		if got := declaredKeysOnly(chunk, tbl); got != tc.want {
			t.Errorf("declaredKeysOnly(%s) = %v, want %v", tc.code, got, tc.want)
		}
	}
}

// FuzzDeclaredKeysOnly runs the proof over any code gopher-lua parses: it
// never panics or loops, and gives the same answer every time (it keeps no
// state between scripts).
func FuzzDeclaredKeysOnly(f *testing.F) {
	for _, code := range []string{
		"return redis.call('incr', KEYS[1])",
		"for i = 1, #KEYS do redis.call('del', KEYS[i]) end",
		"local function f(k) return redis.pcall('get', KEYS[k]) end return f(1)",
		"local t = {a = KEYS[1], [2] = ARGV[1]} return redis.call('mset', KEYS[1], t.a)",
		"while true do if redis.call('exists', KEYS[1]) == 1 then break end end",
		"repeat local x = -#KEYS .. 'a' until not x",
		"function t:m(a, ...) return ... end goto x ::x::",
		"local r = redis return r.call('incr', 'n')",
	} {
		f.Add(code)
	}
	tbl := newTable()
	f.Fuzz(func(t *testing.T, code string) {
		chunk, err := parse.Parse(strings.NewReader(code), "t")
		if err != nil {
			return
		}
		// No input makes the check panic, and the answer depends on the
		// code alone: a second parse of it gets the same one.
		again, err := parse.Parse(strings.NewReader(code), "t")
		if err != nil {
			t.Fatalf("%q parsed once, then failed: %v", code, err)
		}
		if declaredKeysOnly(chunk, tbl) != declaredKeysOnly(again, tbl) {
			t.Fatalf("two answers for %q", code)
		}
	})
}
