package server_test

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// TestScriptAtomic runs read-modify-write scripts (GET, then SET of the
// value plus one, on a key the script does not declare) from several
// connections while others INCR the same counter and readers check a pair
// of keys a script moves together: no update is lost and no reader sees the
// pair differ.
func TestScriptAtomic(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	const scripters, incrs, rounds = 4, 2, 200
	const bump = "local v = tonumber(redis.call('get', 'n') or '0') redis.call('set', 'n', v + 1) " +
		"redis.call('incr', 'a') redis.call('incr', 'b') return v + 1"
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan string, 16)
	for i := 0; i < scripters+incrs; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := servertest.Dial(t, addr)
			for j := 0; j < rounds; j++ {
				args := []string{"INCR", "n"}
				if i < scripters {
					args = []string{"EVAL", bump, "0"}
				}
				if rep, err := c.Do(args...); err != nil || rep[0] != ':' {
					errs <- args[0] + ": " + string(rep)
					return
				}
			}
		}(i)
	}
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		c := servertest.Dial(t, addr)
		for {
			select {
			case <-stop:
				return
			default:
			}
			rep, err := c.Do("MGET", "a", "b")
			if err != nil {
				errs <- err.Error()
				return
			}
			if el, _ := servertest.Elements(rep); len(el) != 2 || string(el[0]) != string(el[1]) {
				errs <- "MGET a b: " + string(rep)
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	c := servertest.Dial(t, addr)
	want := strconv.Itoa((scripters + incrs) * rounds)
	if got := servertest.MustDo(t, c, "GET", "n"); got != "$"+strconv.Itoa(len(want))+"\r\n"+want+"\r\n" {
		t.Fatalf("GET n = %q, want %s", got, want)
	}
}

// TestScriptBusy checks busy-reply-threshold: past it, other connections
// (on the same event loop) get -BUSY, SCRIPT KILL stops a read-only script
// that loops forever, one that wrote is -UNKILLABLE and SHUTDOWN NOSAVE
// stops it; the server then serves again.
func TestScriptBusy(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	c := servertest.Dial(t, addr)
	servertest.MustDo(t, c, "CONFIG", "SET", "busy-reply-threshold", "50")
	tests := []struct {
		name, script string
		kill         []string
		killReply    string
	}{
		{"read-only loop", "local i = 0 while true do i = i + 1 end", []string{"SCRIPT", "KILL"}, "+OK\r\n"},
		{"writer", "redis.call('set', 'x', '1') while true do end", []string{"SCRIPT", "KILL"}, "-UNKILLABLE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := servertest.Dial(t, addr)
			if err := sc.Send(servertest.Encode("EVAL", tc.script, "0")); err != nil {
				t.Fatal(err)
			}
			other := servertest.Dial(t, addr)
			deadline := time.Now().Add(10 * time.Second)
			for {
				rep := servertest.MustDo(t, other, "PING")
				if strings.HasPrefix(rep, "-BUSY Redis is busy running a script.") {
					break
				}
				if rep != "+PONG\r\n" || time.Now().After(deadline) {
					t.Fatalf("PING while the script runs: %q", rep)
				}
			}
			if rep := servertest.MustDo(t, other, tc.kill...); !strings.HasPrefix(rep, tc.killReply) {
				t.Fatalf("%q: %q, want %q", tc.kill, rep, tc.killReply)
			}
			if tc.killReply != "+OK\r\n" {
				// SHUTDOWN NOSAVE stops even a script that wrote. The
				// test's server does not exit on it.
				if err := other.Send(servertest.Encode("SHUTDOWN", "NOSAVE")); err != nil {
					t.Fatal(err)
				}
			}
			rep, err := sc.Read()
			if err != nil || !strings.HasPrefix(string(rep), "-ERR Script killed by user with SCRIPT KILL... script: ") {
				t.Fatalf("the script's reply: %q %v", rep, err)
			}
			if rep := servertest.MustDo(t, sc, "PING"); rep != "+PONG\r\n" {
				t.Fatalf("PING after the script: %q", rep)
			}
		})
	}
	if rep := servertest.MustDo(t, c, "GET", "x"); rep != "$1\r\n1\r\n" {
		t.Fatalf("the unkillable script's write: %q", rep)
	}
	if rep := servertest.MustDo(t, c, "SCRIPT", "KILL"); rep != "-NOTBUSY No scripts in execution right now.\r\n" {
		t.Fatalf("SCRIPT KILL with no script: %q", rep)
	}
}

// TestScriptPipeline sends scripts and plain commands in one write, a slow
// script among them: every reply comes in order, the slow script's after
// it detached past busy-reply-threshold, and the pipeline goes on after it.
func TestScriptPipeline(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	c := servertest.Dial(t, addr)
	servertest.MustDo(t, c, "CONFIG", "SET", "busy-reply-threshold", "20")
	sha := strings.TrimSpace(strings.Split(servertest.MustDo(t, c, "SCRIPT", "LOAD", "return redis.call('incr', KEYS[1])"), "\r\n")[1])
	const slow = "local t = redis.call('time') local s = t[1] * 1000000 + t[2] " +
		"while true do local n = redis.call('time') if n[1] * 1000000 + n[2] - s > 100000 then break end end return 'slow'"
	var b []byte
	var want []string
	n := 0
	for i := 1; i <= 60; i++ {
		switch {
		case i == 30:
			b = append(b, servertest.Encode("EVAL", slow, "0")...)
			want = append(want, "$4\r\nslow\r\n")
		case i%2 == 0:
			n++
			b = append(b, servertest.Encode("EVALSHA", sha, "1", "n")...)
			want = append(want, ":"+strconv.Itoa(n)+"\r\n")
		default:
			b = append(b, servertest.Encode("EVAL", "return ARGV[1]", "0", strconv.Itoa(i))...)
			want = append(want, "$"+strconv.Itoa(len(strconv.Itoa(i)))+"\r\n"+strconv.Itoa(i)+"\r\n")
		}
	}
	if err := c.Send(b); err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		got, err := c.Read()
		if err != nil {
			t.Fatalf("reply %d: %v", i+1, err)
		}
		if string(got) != w {
			t.Fatalf("reply %d: %q, want %q", i+1, got, w)
		}
	}
}

// TestScriptPipelineMixed sends, in one write, runs of scripts broken by
// plain commands, a SCRIPT FLUSH (an EVALSHA after it is NOSCRIPT, one
// repeated before it is not) and a script error: the script worker runs
// the scripts that follow one in the input, and every reply still comes in
// order.
func TestScriptPipelineMixed(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	c := servertest.Dial(t, addr)
	sha := strings.TrimSpace(strings.Split(servertest.MustDo(t, c, "SCRIPT", "LOAD", "return redis.call('incr', KEYS[1])"), "\r\n")[1])
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"EVALSHA", sha, "1", "n"}, ":1\r\n"},
		{[]string{"EVALSHA", strings.ToUpper(sha), "1", "n"}, ":2\r\n"},
		{[]string{"INCR", "n"}, ":3\r\n"},
		{[]string{"EVAL", "return redis.call('incr', KEYS[1])", "1", "n"}, ":4\r\n"},
		{[]string{"EVAL", "return redis.call('get', KEYS[1])", "1", "n"}, "$1\r\n4\r\n"},
		{[]string{"EVAL", "return redis.call('incr', 'n')", "0"}, ":5\r\n"}, // undeclared: the whole database
		{[]string{"EVAL", "return redis.call('nosuch')", "0"}, "-ERR Unknown Redis command called from script script: "},
		{[]string{"EVALSHA", sha, "1", "n"}, ":6\r\n"},
		{[]string{"SCRIPT", "FLUSH"}, "+OK\r\n"},
		{[]string{"EVALSHA", sha, "1", "n"}, "-NOSCRIPT No matching script. Please use EVAL.\r\n"},
		{[]string{"GET", "n"}, "$1\r\n6\r\n"},
		{[]string{"EVAL", "return redis.call('incr', KEYS[1])", "1", "n"}, ":7\r\n"},
		{[]string{"EVALSHA", sha, "1", "n"}, ":8\r\n"}, // loaded again by the EVAL
		{[]string{"EVAL", "return 1", "x"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"EVALSHA", sha, "1", "n"}, ":9\r\n"},
	}
	var b []byte
	for _, st := range steps {
		b = append(b, servertest.Encode(st.args...)...)
	}
	if err := c.Send(b); err != nil {
		t.Fatal(err)
	}
	for i, st := range steps {
		got, err := c.Read()
		if err != nil {
			t.Fatalf("reply %d (%q): %v", i+1, st.args, err)
		}
		if !strings.HasPrefix(string(got), st.want) {
			t.Fatalf("reply %d (%q): %q, want %q", i+1, st.args, got, st.want)
		}
	}
}

// TestScriptDeclaredKeysAtomic runs scripts that touch only their declared
// keys (which lock only those keys' shards) next to scripts that touch an
// undeclared one (the whole database), plain INCRs and readers: every
// script still runs as a unit, no update is lost, no reader sees a pair of
// keys the scripts move together differ.
func TestScriptDeclaredKeysAtomic(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.Loops = 4 // connections on several event loops, running at once
	addr, _ := servertest.StartRecached(t, cfg)
	const workers, rounds = 6, 200
	const pair = "local v = tonumber(redis.call('get', KEYS[1]) or '0') redis.call('set', KEYS[1], v + 1) " +
		"redis.call('incr', KEYS[2]) redis.call('incr', KEYS[3]) return v + 1"
	const wide = "local v = tonumber(redis.call('get', 'n') or '0') redis.call('set', 'n', v + 1) " +
		"redis.call('incr', 'a') redis.call('incr', 'b') return v + 1"
	var wg sync.WaitGroup
	errs := make(chan string, workers+1)
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := servertest.Dial(t, addr)
			for j := 0; j < rounds; j++ {
				var args []string
				switch i % 3 {
				case 0:
					args = []string{"EVAL", pair, "3", "n", "a", "b"}
				case 1:
					args = []string{"EVAL", wide, "0"}
				default:
					args = []string{"MULTI"}
				}
				if args[0] == "MULTI" {
					// INCR n, a and b together, as a transaction.
					for _, a := range [][]string{{"MULTI"}, {"INCR", "n"}, {"INCR", "a"}, {"INCR", "b"}} {
						servertest.MustDo(t, c, a...)
					}
					if rep := servertest.MustDo(t, c, "EXEC"); !strings.HasPrefix(rep, "*3\r\n") {
						errs <- "EXEC: " + rep
						return
					}
					continue
				}
				if rep, err := c.Do(args...); err != nil || rep[0] != ':' {
					errs <- args[1] + ": " + string(rep)
					return
				}
			}
		}(i)
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		c := servertest.Dial(t, addr)
		for {
			select {
			case <-stop:
				return
			default:
			}
			rep, err := c.Do("EVAL_RO", "return {redis.call('get', KEYS[1]), redis.call('get', KEYS[2]), redis.call('get', KEYS[3])}", "3", "n", "a", "b")
			if err != nil {
				errs <- err.Error()
				return
			}
			if el, _ := servertest.Elements(rep); len(el) == 3 && (string(el[0]) != string(el[1]) || string(el[1]) != string(el[2])) {
				errs <- "n a b: " + string(rep)
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	c := servertest.Dial(t, addr)
	want := strconv.Itoa(workers * rounds)
	for _, k := range []string{"n", "a", "b"} {
		if got := servertest.MustDo(t, c, "GET", k); got != "$"+strconv.Itoa(len(want))+"\r\n"+want+"\r\n" {
			t.Fatalf("GET %s = %q, want %s", k, got, want)
		}
	}
}

// TestScriptRejectedCallsMatchRedis runs scripts whose redis.call is
// refused before the command runs (a write from a read-only script, a
// command not allowed from scripts, wrong arity, an unknown command), under
// redis.call and redis.pcall, and redis.acl_check_cmd as a limited user,
// against redis-server and recached: the replies, INFO errorstats and the
// refused command's commandstats line agree.
func TestScriptRejectedCallsMatchRedis(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	ours, _ := servertest.StartRecached(t, server.DefaultConfig())
	addrs := []string{servertest.StartRedis(t), ours}
	tests := []struct {
		name  string
		args  []string
		stats []string // the commandstats whose lines are compared
	}{
		{"write from eval_ro", []string{"EVAL_RO", "return redis.call('set', KEYS[1], 'y')", "1", "x"}, []string{"set", "eval_ro"}},
		{"pcall write from eval_ro", []string{"EVAL_RO", "local t = redis.pcall('set', KEYS[1], 'y') return t['err']", "1", "x"}, []string{"set", "eval_ro"}},
		{"not allowed", []string{"EVAL", "return redis.pcall('multi')", "0"}, []string{"multi", "eval"}},
		{"arity", []string{"EVAL", "return redis.call('get')", "0"}, []string{"get", "eval"}},
		{"pcall arity", []string{"EVAL", "redis.pcall('get') return 1", "0"}, []string{"get", "eval"}},
		{"unknown", []string{"EVAL", "redis.pcall('nosuch') return 2", "0"}, []string{"eval"}},
		{"acl check", []string{"EVAL", "return {redis.acl_check_cmd('set', 'xx', 1), redis.acl_check_cmd('hset', 'xx', 'f', 1), redis.acl_check_cmd('set', 'yy', 1)}", "0"}, []string{"eval"}},
		{"acl check invalid", []string{"EVAL", "return redis.acl_check_cmd('invalid-cmd', 'arg')", "0"}, []string{"eval"}},
	}
	field := func(info, name string) string {
		for _, l := range strings.Split(info, "\r\n") {
			if strings.HasPrefix(l, name) {
				// Durations differ between servers; the counts do not.
				var kept []string
				for _, f := range strings.Split(l, ",") {
					if !strings.HasPrefix(f, "usec") {
						kept = append(kept, f)
					}
				}
				return strings.Join(kept, ",")
			}
		}
		return ""
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got [2][]string
			for i, addr := range addrs {
				c, bob := servertest.Dial(t, addr), servertest.Dial(t, addr)
				servertest.MustDo(t, c, "ACL", "SETUSER", "bob", "on", ">123", "+@scripting", "+set", "~x*")
				servertest.MustDo(t, bob, "AUTH", "bob", "123")
				servertest.MustDo(t, c, "CONFIG", "RESETSTAT")
				// The script's SHA1 and line end an error: the same.
				got[i] = append(got[i], servertest.MustDo(t, bob, tc.args...))
				info := servertest.MustDo(t, c, "INFO", "errorstats")
				got[i] = append(got[i], field(info, "errorstat_ERR"))
				info = servertest.MustDo(t, c, "INFO", "stats")
				got[i] = append(got[i], field(info, "total_error_replies"))
				info = servertest.MustDo(t, c, "INFO", "commandstats")
				for _, name := range tc.stats {
					got[i] = append(got[i], field(info, "cmdstat_"+name+":"))
				}
			}
			if got[0][2] == "" {
				t.Fatalf("no total_error_replies in INFO: %q", got[0])
			}
			for j := range got[0] {
				if got[0][j] != got[1][j] {
					t.Errorf("%q: redis-server %q, recached %q", tc.args, got[0][j], got[1][j])
				}
			}
		})
	}
}
