package server

import (
	"math"
	"strconv"
	"strings"
	"testing"

	recsync "github.com/recached/recached/sync"
	lua "github.com/yuin/gopher-lua"
)

// TestScriptEffects checks that a script's writes reach the effect
// publisher as the effects of the commands it called, never as the script,
// and that a script failing half way keeps the writes it made.
func TestScriptEffects(t *testing.T) {
	r := newEffectRecorder(t)
	direct := newEffectRecorder(t)
	_, want := direct.run("INCR", "n")
	_, w2 := direct.run("RPUSH", "l", "a", "b")
	want = append(want, w2...)
	_, w3 := direct.run("HSET", "h", "f", "v")
	want = append(want, w3...)

	reply, got := r.run("EVAL", "redis.call('incr', KEYS[1]) redis.call('rpush', KEYS[2], 'a', 'b') redis.call('get', 'n') return redis.call('hset', 'h', 'f', 'v')", "2", "n", "l")
	if reply != ":1\r\n" {
		t.Fatalf("EVAL: %q", reply)
	}
	checkEffects(t, []string{"EVAL"}, got, want)

	// A script failing half way keeps its writes and their effects.
	_, want = direct.run("INCR", "n")
	reply, got = r.run("EVAL", "redis.call('incr', 'n') redis.call('incr', 'l') redis.call('incr', 'n')", "0")
	if !strings.HasPrefix(reply, "-WRONGTYPE") || !strings.HasSuffix(reply, "on @user_script:1.\r\n") {
		t.Fatalf("failing EVAL: %q", reply)
	}
	checkEffects(t, []string{"EVAL failing"}, got, want)
	if got := run(r.s, "GET", "n"); got != bulk("2") {
		t.Fatalf("GET n after the failing script: %q", got)
	}
	// A read-only script emits nothing.
	if _, got := r.run("EVAL_RO", "return redis.call('get', 'n')", "0"); len(got) != 0 {
		t.Fatalf("EVAL_RO effects: %q", got)
	}
}

// TestScriptScope checks strict sync scopes: KEYS out of the scope refuse
// the script before it runs, and an undeclared out-of-scope key in a
// redis.call aborts the script with -NOPERM, even under redis.pcall, with
// nothing written: the keys the script wrote before are as they were
// (values and times to live) and no effect was published. A script of a
// scoped session that fails otherwise keeps its writes, as Redis's do.
func TestScriptScope(t *testing.T) {
	r := newEffectRecorder(t)
	r.s.setScope(recsync.NewScope([]string{"user:1:*"}))
	tests := []struct {
		name    string
		args    []string
		reply   string
		effects [][]string
	}{
		{"declared in scope", []string{"EVAL", "return redis.call('set', KEYS[1], 'v')", "1", "user:1:a"}, "+OK\r\n",
			[][]string{{"SET", "user:1:a", "v"}}},
		{"declared out of scope", []string{"EVAL", "return redis.call('set', 'user:1:b', 'v')", "1", "other"}, "-" + errScopeKey + "\r\n", nil},
		{"undeclared out of scope", []string{"EVAL", "redis.call('set', 'user:1:c', 'v') redis.call('set', 'other', 'v') redis.call('set', 'user:1:d', 'v')", "0"}, "-" + errScopeKey + "\r\n", nil},
		{"overwrites undone", []string{"EVAL", "redis.call('set', KEYS[1], 'changed') redis.call('persist', KEYS[2]) redis.call('del', KEYS[3]) redis.call('rpush', KEYS[3], 'z') redis.call('hset', KEYS[4], 'f', 'changed') redis.call('incr', 'other')", "4", "user:1:a", "user:1:ttl", "user:1:list", "user:1:hash"}, "-" + errScopeKey + "\r\n", nil},
		{"failing otherwise keeps its writes", []string{"EVAL", "redis.call('set', 'user:1:g', 'v') redis.call('incr', 'user:1:hash')", "0"}, "",
			[][]string{{"SET", "user:1:g", "v"}}},
		{"under pcall", []string{"EVAL", "redis.pcall('get', 'other') redis.call('set', 'user:1:e', 'v')", "0"}, "-" + errScopeKey + "\r\n", nil},
		{"caught by a Lua pcall", []string{"EVAL", "pcall(redis.call, 'get', 'other') redis.call('set', 'user:1:f', 'v')", "0"}, "-" + errScopeKey + "\r\n", nil},
	}
	for _, cmd := range [][]string{{"SET", "user:1:ttl", "t", "EX", "1000"}, {"RPUSH", "user:1:list", "x", "y"}, {"HSET", "user:1:hash", "f", "v"}} {
		run(r.s, cmd...)
	}
	r.s.setScope(recsync.NewScope([]string{"user:1:*"}))
	for _, tc := range tests {
		reply, got := r.run(tc.args...)
		if tc.reply != "" && reply != tc.reply || tc.reply == "" && !strings.HasPrefix(reply, "-WRONGTYPE") {
			t.Errorf("%s: reply %q, want %q", tc.name, reply, tc.reply)
		}
		checkEffects(t, []string{tc.name}, got, tc.effects)
	}
	r.s.setScope(nil)
	for _, k := range []string{"other", "user:1:b", "user:1:c", "user:1:d", "user:1:e", "user:1:f"} {
		if got := run(r.s, "EXISTS", k); got != ":0\r\n" {
			t.Errorf("%s was written: EXISTS %q", k, got)
		}
	}
	for _, c := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"GET", "user:1:a"}, bulk("v")},
		{[]string{"GET", "user:1:g"}, bulk("v")},
		{[]string{"LRANGE", "user:1:list", "0", "-1"}, "*2\r\n$1\r\nx\r\n$1\r\ny\r\n"},
		{[]string{"HGET", "user:1:hash", "f"}, bulk("v")},
		{[]string{"GET", "user:1:ttl"}, bulk("t")},
	} {
		if got := run(r.s, c.cmd...); got != c.want {
			t.Errorf("%q = %q, want %q", c.cmd, got, c.want)
		}
	}
	if got := run(r.s, "TTL", "user:1:ttl"); got == ":-1\r\n" || got == ":-2\r\n" {
		t.Errorf("user:1:ttl lost its time to live: TTL %q", got)
	}
}

// TestScriptDedup checks that DEDUP <client> <id> EVALSHA runs the script
// once: a replay answers +DUP and writes nothing, and the script's effects
// carry the mark.
func TestScriptDedup(t *testing.T) {
	r := newEffectRecorder(t)
	var marks []string
	r.srv.AddHook(func(e *Effect) { marks = append(marks, string(e.ClientID)) })
	sha := run(r.s, "SCRIPT", "LOAD", "return redis.call('incr', KEYS[1])")
	sha = strings.TrimSuffix(sha[strings.IndexByte(sha, '\n')+1:], "\r\n")
	steps := []effectStep{
		{args: []string{"DEDUP", "c1", "1", "EVALSHA", sha, "1", "n"}, reply: ":1\r\n", effects: [][]string{{"SET", "n", "1", "KEEPTTL"}}},
		{args: []string{"DEDUP", "c1", "1", "EVALSHA", sha, "1", "n"}, reply: "+DUP\r\n"},
		{args: []string{"DEDUP", "c1", "2", "EVALSHA", sha, "1", "n"}, reply: ":2\r\n", effects: [][]string{{"SET", "n", "2", "KEEPTTL"}}},
		{args: []string{"DEDUP", "c1", "2", "EVALSHA", sha, "1", "n"}, reply: "+DUP\r\n"},
	}
	direct := newEffectRecorder(t)
	for i := range steps {
		if steps[i].effects != nil {
			_, steps[i].effects = direct.run("INCR", "n")
		}
	}
	runSteps(t, r, steps)
	for _, m := range marks {
		if m != "c1" {
			t.Errorf("effect with mark %q, want c1", m)
		}
	}
	if len(marks) != 2 {
		t.Errorf("%d effects, want 2", len(marks))
	}
}

// BenchmarkEvalsha measures EVALSHA of a one-INCR script run inline (no
// transport): the locks, the interpreter and the conversions.
func BenchmarkEvalsha(b *testing.B) {
	s := plainSession(b)
	sha := run(s, "SCRIPT", "LOAD", "return redis.call('incr', KEYS[1])")
	sha = strings.TrimSuffix(sha[strings.IndexByte(sha, '\n')+1:], "\r\n")
	args := toArgs("EVALSHA", sha, "1", "k")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		s.W.B = s.W.B[:0]
		s.Exec(args)
	}
}

// TestScriptSelect checks SELECT inside scripts: a script naming SELECT
// locks every database and runs in the one it selects, leaving the
// caller's; a SELECT the code hides runs only towards a higher database,
// which lock order lets the script lock then.
func TestScriptSelect(t *testing.T) {
	s := plainSession(t)
	tests := []struct {
		db    string
		args  []string
		reply string
	}{
		{"0", []string{"EVAL", "redis.call('select', 1) redis.call('set', 'a', '1') return redis.call('get', 'a')", "0"}, bulk("1")},
		{"0", []string{"EVAL", "redis.call('SEL' .. 'ECT', 2) return redis.call('set', 'b', '2')", "0"}, "+OK\r\n"},
		{"3", []string{"EVAL", "return redis.pcall('SEL' .. 'ECT', 1)", "0"}, "-ERR SELECT from a script to a database it has not locked: name SELECT in the script's code\r\n"},
		{"3", []string{"EVAL", "redis.call('select', 1) return redis.call('get', 'a')", "0"}, bulk("1")},
	}
	for _, tc := range tests {
		run(s, "SELECT", tc.db)
		if got := run(s, tc.args...); got != tc.reply {
			t.Errorf("%q in db %s: %q, want %q", tc.args, tc.db, got, tc.reply)
		}
		if s.DBIndex != int(tc.db[0]-'0') || s.lockDB != 0 {
			t.Errorf("%q: db %d, locks %b after the script", tc.args, s.DBIndex, s.lockDB)
		}
	}
	for _, c := range []struct{ db, key, want string }{{"0", "a", "$-1\r\n"}, {"1", "a", bulk("1")}, {"2", "b", bulk("2")}} {
		run(s, "SELECT", c.db)
		if got := run(s, "GET", c.key); got != c.want {
			t.Errorf("GET %s in db %s: %q, want %q", c.key, c.db, got, c.want)
		}
	}
}

// TestScriptHugeUnpack checks that a script overflowing the interpreter's
// stack gets an error and leaves the session and the server serving: the
// next script runs, and the session's commands lock again.
func TestScriptHugeUnpack(t *testing.T) {
	s := plainSession(t)
	for _, cmd := range []string{"EVAL", "FCALL"} {
		args := []string{"EVAL", "local t = {} for i = 1, 300000 do t[i] = i end return #{unpack(t)}", "0"}
		if cmd == "FCALL" {
			run(s, "FUNCTION", "LOAD", "#!lua name=big\nredis.register_function('big', function() local t = {} for i = 1, 300000 do t[i] = i end return #{unpack(t)} end)\nredis.register_function('small', function() return 1 end)")
			args = []string{"FCALL", "big", "0"}
		}
		if r := run(s, args...); r[0] != '-' {
			t.Errorf("%s of a huge unpack: %q", cmd, r)
		}
		if s.inExec || s.lockDB != 0 {
			t.Fatalf("%s: session left in a script's state", cmd)
		}
	}
	if r := run(s, "EVAL", "return 1", "0"); r != ":1\r\n" {
		t.Errorf("EVAL after: %q", r)
	}
	if r := run(s, "FCALL", "small", "0"); r != ":1\r\n" {
		t.Errorf("FCALL after: %q", r)
	}
}

// TestLuaInteger checks that an integer reply reaches Lua as its number,
// on both sides of the boxed small integers, and that a small one costs
// no allocation.
func TestLuaInteger(t *testing.T) {
	for _, n := range []int64{math.MinInt64, -1000, -2, -1, 0, 1, 7, 1021, 1022, 1023, 1 << 40, math.MaxInt64} {
		if v := luaInteger(n); v != lua.LNumber(n) {
			t.Errorf("luaInteger(%d) = %v", n, v)
		}
		line := ":" + strconv.FormatInt(n, 10) + "\r\n"
		if v := quickLua([]byte(line)); v != lua.LNumber(n) {
			t.Errorf("quickLua(%q) = %v", line, v)
		}
	}
	for _, line := range []string{":-1\r\n", ":0\r\n", ":1\r\n", ":1022\r\n"} {
		b := []byte(line)
		if a := testing.AllocsPerRun(100, func() { quickLua(b) }); a != 0 {
			t.Errorf("quickLua(%q): %v allocations", line, a)
		}
	}
}
