package lualib_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	lua "github.com/yuin/gopher-lua"

	"github.com/recached/recached/server/lualib"
	"github.com/recached/recached/server/servertest"
)

// startRedis runs redis-server and returns a client of it.
func startRedis(t *testing.T) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: servertest.StartRedis(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// redisEval runs src with ARGV args through EVAL on redis-server, the
// result rendered as eval renders gopher-lua's.
func redisEval(ctx context.Context, rdb *redis.Client, src string, args ...any) string {
	v, err := rdb.Eval(ctx, src, nil, args...).Result()
	if err != nil {
		return "ERR " + err.Error()
	}
	return fmt.Sprint(v)
}

// TestLibCasesRedis runs libCases through EVAL on redis-server: together
// with TestLibCases, a differential test of the libraries.
func TestLibCasesRedis(t *testing.T) {
	rdb := startRedis(t)
	ctx := context.Background()
	lualib.LibCases(func(name, src, want string) {
		t.Run(name, func(t *testing.T) {
			if got := redisEval(ctx, rdb, lualib.ShowPrelude+src); got != want {
				t.Errorf("%s\nredis-server %q\n        want %q", src, got, want)
			}
		})
	})
}

// randomInput returns a random string for the library under test, drawn
// from alphabet with probability 3/4 so that inputs are often near valid.
func randomInput(r *rand.Rand, alphabet []string) string {
	var b strings.Builder
	n := r.IntN(12)
	for range n {
		if r.IntN(4) == 0 {
			b.WriteByte(byte(r.IntN(256)))
		} else {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
	}
	return b.String()
}

// randomNumber returns a number string biased toward edge cases of
// formatting, rounding and 32/64-bit conversions.
func randomNumber(r *rand.Rand) string {
	switch r.IntN(6) {
	case 0:
		return fmt.Sprint(r.Int64N(1<<40) - 1<<39)
	case 1:
		return fmt.Sprintf("%.17g", r.NormFloat64()*math.Pow(10, float64(r.IntN(40)-20)))
	case 2:
		// Any finite double: gopher-lua's tonumber does not parse nan or
		// inf as Lua 5.1's strtod does.
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			f = math.MaxFloat64
		}
		return fmt.Sprintf("%.17g", f)
	case 3:
		return fmt.Sprintf("%.1f", float64(r.IntN(9))-4+0.5)
	case 4:
		return fmt.Sprint(math.Ldexp(1, r.IntN(130)) + float64(r.IntN(3)-1))
	}
	return fmt.Sprint(-math.Ldexp(1, r.IntN(70)))
}

// luaString returns a Lua string literal of s.
func luaString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == ' ' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "\\%03d", c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// randomValue returns a Lua expression of a random value whose encodings
// do not depend on table iteration order: arrays, sparse arrays and
// tables of one key, nested up to depth.
func randomValue(r *rand.Rand, depth int) string {
	k := r.IntN(10)
	if depth == 0 {
		k %= 5
	}
	switch k {
	case 0, 1:
		return randomNumber(r)
	case 2:
		return luaString(randomInput(r, []string{"a", "\"", "\\", "/", "\x7f", "\x00", "\n", "é", "0"}))
	case 3:
		return []string{"true", "false", "cjson.null", "{}"}[r.IntN(4)]
	case 4:
		return fmt.Sprint(r.IntN(1000))
	case 5, 6:
		n := r.IntN(5)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = randomValue(r, depth-1)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case 7:
		return fmt.Sprintf("{[%d] = %s, [%d] = %s}", 1+r.IntN(3), randomValue(r, depth-1), 4+r.IntN(30), randomValue(r, depth-1))
	case 8:
		return fmt.Sprintf("{[%s] = %s}", luaString(randomInput(r, []string{"k", "1", "\""})), randomValue(r, depth-1))
	}
	return fmt.Sprintf("{[%s] = %s}", randomNumber(r), randomValue(r, depth-1))
}

// diffScripts are scripts of one argument, run on random arguments in
// redis-server and in gopher-lua; the results must be the same. An
// argument replaces INPUT in the script when it has one (then every
// argument is a different script), else it is ARGV[1].
var diffScripts = []struct {
	name  string
	src   string
	input func(r *rand.Rand) string
}{
	{"cjson.decode", `return try(cjson.decode, ARGV[1])`, func(r *rand.Rand) string {
		return randomInput(r, []string{"[", "]", "{", "}", ",", ":", `"`, `\`, "u", "d83d", "de00", "00e9", "1", "0", "-", "+", ".", "e", "E", "x", "true", "false", "null", "nan", "inf", "Infinity", " ", "\n", "\x00", `"a"`, "0x1f", "p3", "1e400"})
	}},
	{"cjson.encode-number", `local n = tonumber(ARGV[1]) return try(cjson.encode, {n, -n, n / 3, n * 1e-7})`, randomNumber},
	{"cjson.encode-string", `return try(cjson.encode, {ARGV[1]})`, func(r *rand.Rand) string {
		return randomInput(r, []string{"a", "\"", "\\", "/", "\x7f", "\x00", "\n", "é"})
	}},
	{"cjson.encode-value", `return try(cjson.encode, INPUT)`, func(r *rand.Rand) string { return randomValue(r, 4) }},
	{"cjson.encode-roundtrip", `local ok, s = pcall(cjson.encode, INPUT) if not ok then return s end return try(cjson.decode, s)`, func(r *rand.Rand) string { return randomValue(r, 4) }},
	{"cmsgpack.pack-value", `local ok, s = pcall(cmsgpack.pack, INPUT) if not ok then return s end return hex(s) .. ' ' .. try(cmsgpack.unpack, s)`, func(r *rand.Rand) string { return randomValue(r, 4) }},
	{"cmsgpack.unpack", `return try(cmsgpack.unpack, ARGV[1])`, func(r *rand.Rand) string {
		return randomInput(r, []string{"\x91", "\x81", "\x92", "\xa1a", "\xc0", "\xc2", "\xc3", "\xcc", "\xcd", "\xce", "\xcf", "\xd0", "\xd1", "\xd2", "\xd3", "\xca", "\xcb", "\xd9", "\xda", "\xdb", "\xdc\x00", "\xdd\x00\x00\x00", "\xde\x00", "\xdf\x00\x00\x00", "\x01", "\x7f", "\xff", "\x00"})
	}},
	{"cmsgpack.pack-number", `local n = tonumber(ARGV[1]) return hex(cmsgpack.pack(n, -n, n / 3, n * 1e-7, {n}))`, randomNumber},
	{"cmsgpack.unpack_limit", `local s = cmsgpack.pack(1, "a", {2}, 3.5) local l, o = string.byte(ARGV[1] .. "\0\0", 1, 2) return try(cmsgpack.unpack_limit, s, l % 6, o % 12)`, func(r *rand.Rand) string {
		return string([]byte{byte(r.IntN(256)), byte(r.IntN(256))})
	}},
	{"bit", `local n = tonumber(ARGV[1]) return show(bit.tobit(n), bit.tohex(n), bit.bnot(n), bit.band(n, 0x7fff), bit.bor(n, 1), bit.bxor(n, -1), bit.lshift(1, n), bit.rshift(n, 3), bit.arshift(n, 7), bit.rol(n, n), bit.ror(n, 5), bit.bswap(n), bit.tohex(n, n))`, randomNumber},
	{"struct.pack", `local n = tonumber(ARGV[1]) return try(function() return hex(struct.pack('>i <h b B H !4 i3 I l L T d f', n, n, n, n, n, n, n, n, n, n, n, n)) end)`, randomNumber},
	{"struct.unpack", `local f, d = ARGV[1]:match('^(.-)|(.*)$') return try(struct.unpack, f, d)`, func(r *rand.Rand) string {
		f := randomInput(r, []string{"b", "B", "h", "H", "i", "I", "i3", "I5", "l", "L", "T", "f", "d", "s", "c", "c2", "c0", "x", "<", ">", "!", "!2", " "})
		return strings.ReplaceAll(f, "|", "") + "|" + randomInput(r, []string{"\x00", "\x01", "\xff", "ab", "\x80"})
	}},
}

// TestDifferentialRandom runs diffScripts on seeded random arguments in
// redis-server and in gopher-lua with OpenAll.
func TestDifferentialRandom(t *testing.T) {
	rdb := startRedis(t)
	ctx := context.Background()
	for _, ds := range diffScripts {
		t.Run(ds.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(len(ds.name))))
			L := lualib.NewState(t)
			failures := 0
			for i := 0; i < 300 && failures < 5; i++ {
				in := ds.input(r)
				src, args := ds.src, []any{in}
				if strings.Contains(src, "INPUT") {
					src, args = strings.ReplaceAll(src, "INPUT", in), nil
				}
				argv := L.NewTable()
				for _, a := range args {
					argv.Append(lua.LString(a.(string)))
				}
				L.SetGlobal("ARGV", argv)
				want := redisEval(ctx, rdb, lualib.ShowPrelude+src, args...)
				if got := lualib.Eval(t, L, lualib.ShowPrelude+src); got != want {
					t.Errorf("input %q\n      got %q\nredis-server %q", in, got, want)
					failures++
				}
			}
		})
	}
}
