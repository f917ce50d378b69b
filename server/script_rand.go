package server

import (
	"math"
	"strconv"
	"strings"
	"sync"

	lua "github.com/yuin/gopher-lua"
)

// luaRand is the scripts' math.random, Redis's: the 48-bit linear
// congruential generator of lrand48 (Redis's rand.c), one for the whole
// engine as Redis has one Lua state, so that math.randomseed(n) followed
// by math.random() gives the same numbers as on redis-server.
type luaRand struct {
	mu sync.Mutex
	x  uint64 // the 48-bit state
}

const (
	lrandInit = 0x1234ABCD330E // lrand48's state before any seed
	lrandMax  = math.MaxInt32  // Redis's REDIS_LRAND48_MAX
)

// next advances the generator and returns its next 31-bit number.
func (r *luaRand) next() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.x == 0 {
		r.x = lrandInit
	}
	r.x = (0x5DEECE66D*r.x + 0xB) & (1<<48 - 1)
	return int64(r.x >> 17)
}

// seed is srand48: the seed's 32 bits above lrand48's fixed low word.
func (r *luaRand) seed(n int32) {
	r.mu.Lock()
	r.x = uint64(uint32(n))<<16 | 0x330E
	r.mu.Unlock()
}

// open replaces math.random and math.randomseed of the library table m.
func (r *luaRand) open(L *lua.LState, m *lua.LTable) {
	m.RawSetString("random", L.NewFunction(func(L *lua.LState) int {
		f := float64(r.next()%lrandMax) / lrandMax
		switch L.GetTop() {
		case 0:
			L.Push(lua.LNumber(f))
		case 1:
			u := luaCheckInt(L, 1, "random")
			if u < 1 {
				L.ArgError(1, "interval is empty")
			}
			L.Push(lua.LNumber(math.Floor(f*float64(u)) + 1))
		case 2:
			l, u := luaCheckInt(L, 1, "random"), luaCheckInt(L, 2, "random")
			if l > u {
				L.ArgError(2, "interval is empty")
			}
			L.Push(lua.LNumber(math.Floor(f*float64(u-l+1)) + float64(l)))
		default:
			L.RaiseError("wrong number of arguments")
		}
		return 1
	}))
	m.RawSetString("randomseed", L.NewFunction(func(L *lua.LState) int {
		r.seed(int32(luaCheckInt(L, 1, "randomseed")))
		return 0
	}))
}

// luaCheckInt is luaL_checkint: argument n as an integer, a number or a
// numeric string truncated, else an argument error.
func luaCheckInt(L *lua.LState, n int, fn string) int64 {
	v := L.Get(n)
	if s, ok := v.(lua.LString); ok {
		t := strings.TrimSpace(string(s))
		f, err := strconv.ParseFloat(t, 64)
		if err != nil {
			i, ierr := strconv.ParseInt(t, 0, 64)
			if ierr != nil {
				L.ArgError(n, "number expected, got string")
			}
			f = float64(i)
		}
		v = lua.LNumber(f)
	}
	f, ok := v.(lua.LNumber)
	if !ok {
		got := "no value"
		if n <= L.GetTop() {
			got = v.Type().String()
		}
		L.ArgError(n, "number expected, got "+got)
	}
	return int64(f)
}

// luaNumberText formats a number as Lua 5.1's tostring does ("%.14g").
func luaNumberText(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', 14, 64)
}
