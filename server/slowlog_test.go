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
