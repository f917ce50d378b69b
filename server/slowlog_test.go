package server_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// TestSlowlogMatchesRedis logs every command (slowlog-log-slower-than 0)
// on redis-server and recached and compares SLOWLOG's replies with the
// ids, times, durations and client addresses blanked: which commands are
// logged, how their arguments are trimmed and redacted, the limits.
func TestSlowlogMatchesRedis(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	long := strings.Repeat("A", 129)
	many := []string{"sadd", "set"}
	for i := 3; i <= 33; i++ {
		many = append(many, strings.Repeat("x", i%5+1))
	}
	steps := [][]string{
		{"config", "set", "slowlog-log-slower-than", "0"}, {"slowlog", "reset"},
		{"client", "setname", "tester"}, {"set", "k", "v"}, {"sadd", "s", "foo", long}, many,
		{"multi"}, {"incr", "n"}, {"lpush", "l", "a"}, {"exec"},
		{"config", "set", "masterauth", "secret"}, {"config", "set", "masterauth", ""},
		{"eval", "return redis.call('get', 'k')", "0"},
		{"slowlog", "get"}, {"slowlog", "len"}, {"slowlog", "get", "2"}, {"slowlog", "get", "0"},
		{"slowlog", "get", "-2"}, {"slowlog", "get", "x"},
		{"config", "set", "slowlog-max-len", "3"}, {"slowlog", "len"}, {"set", "a", "1"}, {"slowlog", "get", "-1"},
		{"config", "set", "slowlog-log-slower-than", "-1"}, {"slowlog", "reset"}, {"ping"}, {"slowlog", "len"},
		{"config", "set", "slowlog-log-slower-than", "10000"}, {"config", "set", "slowlog-max-len", "128"},
	}
	blank := regexp.MustCompile(`(\*6\r\n):\d+\r\n:\d+\r\n:\d+\r\n`)
	addr := regexp.MustCompile(`\$\d+\r\n127\.0\.0\.1:\d+\r\n`)
	rec, _ := servertest.StartRecached(t, server.DefaultConfig())
	var got [2][]string
	for i, a := range []string{servertest.StartRedis(t), rec} {
		c := servertest.Dial(t, a)
		for _, args := range steps {
			rep, err := c.Do(args...)
			if err != nil {
				t.Fatal(err)
			}
			r := blank.ReplaceAllString(string(rep), "$1ID TIME USEC\r\n")
			got[i] = append(got[i], addr.ReplaceAllString(r, "ADDR\r\n"))
		}
	}
	for i := range steps {
		if got[0][i] != got[1][i] {
			t.Errorf("%q:\nredis-server %q\nrecached     %q", steps[i], got[0][i], got[1][i])
		}
	}
}

// TestSlowlogBlockedCommands: a blocking command is logged when its wait
// is served, not when it blocks, with the arguments it was sent (BLPOP
// served by a later push inside a transaction, BLMOVE served), and not at
// all when it times out (BLPOP) or CLIENT UNBLOCK ends it (BRPOP), as on
// redis-server 7.0.
func TestSlowlogBlockedCommands(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	rec, _ := servertest.StartRecached(t, server.DefaultConfig())
	names := regexp.MustCompile(`\*6\r\n:\d+\r\n:\d+\r\n:\d+\r\n((?:\*\d+\r\n)?(?:\$\d+\r\n[^\r]*\r\n)+?)\$\d+\r\n127\.0\.0\.1:\d+`)
	run := func(addr string) string {
		c, b := servertest.Dial(t, addr), servertest.Dial(t, addr)
		servertest.MustDo(t, c, "flushall")
		servertest.MustDo(t, c, "config", "set", "slowlog-log-slower-than", "0")
		defer servertest.MustDo(t, c, "config", "set", "slowlog-log-slower-than", "10000")
		servertest.MustDo(t, c, "slowlog", "reset")
		id := strings.TrimSpace(strings.TrimPrefix(servertest.MustDo(t, b, "client", "id"), ":"))
		steps := []struct {
			blocked []string
			then    [][]string
		}{
			{[]string{"blpop", "l", "0"}, [][]string{{"multi"}, {"lpush", "l", "foo"}, {"slowlog", "reset"}, {"exec"}}},
			{[]string{"blmove", "src", "dst", "left", "right", "0"}, [][]string{{"rpush", "src", "x"}}},
			{[]string{"blpop", "none", "0.01"}, nil},
			{[]string{"brpop", "none", "0"}, [][]string{{"client", "unblock", id}}},
		}
		for _, st := range steps {
			if err := b.Send(servertest.Encode(st.blocked...)); err != nil {
				t.Fatal(err)
			}
			if st.then != nil {
				waitBlocked(t, c, 1)
			}
			for _, args := range st.then {
				servertest.MustDo(t, c, args...)
			}
			if _, err := b.Read(); err != nil {
				t.Fatal(err)
			}
		}
		var out []string
		for _, m := range names.FindAllStringSubmatch(servertest.MustDo(t, c, "slowlog", "get", "-1"), -1) {
			switch {
			case strings.Contains(m[1], "$4\r\ninfo\r\n"): // waitBlocked's polls
			case strings.Contains(m[1], "$7\r\nunblock\r\n"):
				out = append(out, "client unblock")
			default:
				out = append(out, m[1])
			}
		}
		return strings.Join(out, " | ")
	}
	if want, got := run(servertest.StartRedis(t)), run(rec); want != got {
		t.Errorf("SLOWLOG GET:\nredis-server %q\nrecached     %q", want, got)
	}
}
