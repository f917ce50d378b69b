package server_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// TestErrorStatsMatchRedis runs the same failing commands on redis-server
// and recached and compares what INFO errorstats, total_error_replies and
// the commands' failed_calls and rejected_calls say afterwards.
func TestErrorStatsMatchRedis(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	cases := []struct {
		name  string
		cmds  [][]string
		stats []string // commandstats entries compared
	}{
		{"unknown command", [][]string{{"asdf"}}, nil},
		{"wrong arity", [][]string{{"set", "k"}, {"set", "k1", "v1"}}, []string{"set"}},
		{"wrongtype", [][]string{{"set", "s", "v"}, {"lpush", "s", "x"}}, []string{"lpush"}},
		{"auth without password", [][]string{{"auth", "k"}}, []string{"auth"}},
		{"failed inside exec", [][]string{{"multi"}, {"set", "a", "b"}, {"auth", "a"}, {"exec"}, {"exec"}}, []string{"set", "auth", "exec"}},
		{"rejected inside multi", [][]string{{"multi"}, {"set"}, {"exec"}}, []string{"set", "multi", "exec"}},
		{"noscript", [][]string{{"evalsha", "NotValidShaSUM", "0"}}, []string{"evalsha"}},
		{"nogroup", [][]string{{"xadd", "st", "*", "f", "v"}, {"xgroup", "createconsumer", "st", "g", "c"}}, []string{"xgroup|createconsumer"}},
		{"pcall in script", [][]string{{"eval", "redis.pcall('xgroup', 'createconsumer', 's1', 'g', 'c') return", "0"}}, []string{"eval", "xgroup|createconsumer"}},
		{"raised in script", [][]string{{"set", "s", "v"}, {"eval", "return redis.call('lpush', KEYS[1], 'x')", "1", "s"}}, []string{"eval", "lpush"}},
		{"pcall error returned", [][]string{{"set", "s", "v"}, {"eval", "return redis.pcall('lpush', KEYS[1], 'x')", "1", "s"}}, []string{"eval", "lpush"}},
		{"error_reply", [][]string{{"eval", "return redis.error_reply('MYCODE something')", "0"}, {"eval", "return redis.error_reply('oneword')", "0"}}, []string{"eval"}},
		{"script syntax", [][]string{{"eval", "return +", "0"}}, []string{"eval"}},
	}
	redisAddr := servertest.StartRedis(t)
	recAddr, _ := servertest.StartRecached(t, server.DefaultConfig())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got [2]string
			for i, addr := range []string{redisAddr, recAddr} {
				c := servertest.Dial(t, addr)
				servertest.MustDo(t, c, "flushall")
				servertest.MustDo(t, c, "config", "resetstat")
				for _, args := range tc.cmds {
					if _, err := c.Do(args...); err != nil {
						t.Fatal(err)
					}
				}
				got[i] = errorStatsSummary(t, c, tc.stats)
			}
			if got[0] != got[1] {
				t.Errorf("redis-server:\n%s\nrecached:\n%s", got[0], got[1])
			}
		})
	}
}

var cmdstatFailures = regexp.MustCompile(`calls=(\d+),.*rejected_calls=(\d+),failed_calls=(\d+)`)

// errorStatsSummary is the errorstats section, total_error_replies and
// the calls/rejected/failed counts of the named commands.
func errorStatsSummary(t *testing.T, c *servertest.Client, cmds []string) string {
	t.Helper()
	var b strings.Builder
	for _, line := range strings.Split(servertest.MustDo(t, c, "info", "errorstats"), "\r\n") {
		if strings.HasPrefix(line, "errorstat_") {
			b.WriteString(line + "\n")
		}
	}
	for _, line := range strings.Split(servertest.MustDo(t, c, "info", "stats"), "\r\n") {
		if strings.HasPrefix(line, "total_error_replies:") {
			b.WriteString(line + "\n")
		}
	}
	info := servertest.MustDo(t, c, "info", "commandstats")
	for _, name := range cmds {
		m := regexp.MustCompile(`cmdstat_` + regexp.QuoteMeta(name) + `:([^\r]*)`).FindStringSubmatch(info)
		line := name + ": none"
		if m != nil {
			if f := cmdstatFailures.FindStringSubmatch(m[1]); f != nil {
				line = name + ": calls=" + f[1] + " rejected=" + f[2] + " failed=" + f[3]
			}
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// TestBlockedErrorStatsMatchRedis checks the accounting of blocked
// commands that end with an error: XREADGROUP whose group is destroyed and
// BLPOP released by CLIENT UNBLOCK ... ERROR.
func TestBlockedErrorStatsMatchRedis(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	cases := []struct {
		name    string
		setup   [][]string
		block   []string
		release func(t *testing.T, c *servertest.Client, blockedID string)
		stats   []string
	}{
		{"xgroup destroy", [][]string{{"xgroup", "create", "st", "g", "$", "mkstream"}},
			[]string{"xreadgroup", "group", "g", "alice", "block", "0", "streams", "st", ">"},
			func(t *testing.T, c *servertest.Client, _ string) {
				servertest.MustDo(t, c, "xgroup", "destroy", "st", "g")
			},
			[]string{"xreadgroup"}},
		{"client unblock error", nil,
			[]string{"blpop", "list", "0"},
			func(t *testing.T, c *servertest.Client, id string) {
				servertest.MustDo(t, c, "client", "unblock", id, "error")
			},
			[]string{"blpop"}},
	}
	redisAddr := servertest.StartRedis(t)
	recAddr, _ := servertest.StartRecached(t, server.DefaultConfig())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got [2]string
			for i, addr := range []string{redisAddr, recAddr} {
				c, bc := servertest.Dial(t, addr), servertest.Dial(t, addr)
				servertest.MustDo(t, c, "flushall")
				for _, args := range tc.setup {
					servertest.MustDo(t, c, args...)
				}
				id := strings.TrimSpace(strings.TrimPrefix(servertest.MustDo(t, bc, "client", "id"), ":"))
				servertest.MustDo(t, c, "config", "resetstat")
				if err := bc.Send(servertest.Encode(tc.block...)); err != nil {
					t.Fatal(err)
				}
				waitBlocked(t, c, 1)
				tc.release(t, c, id)
				rep, err := bc.Read()
				if err != nil || !strings.HasPrefix(string(rep), "-") {
					t.Fatalf("blocked command answered %q, %v; want an error", rep, err)
				}
				got[i] = errorStatsSummary(t, c, tc.stats)
			}
			if got[0] != got[1] {
				t.Errorf("redis-server:\n%s\nrecached:\n%s", got[0], got[1])
			}
		})
	}
}

// waitBlocked polls INFO clients until n clients are blocked.
func waitBlocked(t *testing.T, c *servertest.Client, n int) {
	t.Helper()
	want := "blocked_clients:" + strconv.Itoa(n) + "\r\n"
	for i := 0; i < 1000; i++ {
		if strings.Contains(servertest.MustDo(t, c, "info", "clients"), want) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no %d blocked clients after 5 s", n)
}
