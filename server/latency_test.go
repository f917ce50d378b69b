package server_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// TestDiagMatchesRedis runs ROLE, WAIT, LOLWUT, LATENCY and DEBUG on
// redis-server and recached, both started with enable-debug-command yes,
// and compares the replies after blanking what differs by nature
// (addresses, times, measured latencies, LRU clocks).
func TestDiagMatchesRedis(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	steps := [][]string{
		{"role"}, {"wait", "0", "0"}, {"wait", "1", "20"}, {"wait", "x", "0"}, {"wait", "0", "-1"}, {"wait", "0", "x"},
		{"lolwut"}, {"lolwut", "version", "x"},
		{"latency", "help"}, {"latency", "help", "x"}, {"latency", "doctor"},
		{"latency", "latest"}, {"latency", "history", "command"}, {"latency", "reset"},
		{"latency", "reset", "blabla"}, {"latency", "graph", "command"}, {"latency", "nosuch"},
		{"config", "resetstat"}, {"set", "a", "1"}, {"set", "a", "2"},
		{"latency", "histogram", "blabla"},
		{"config", "set", "latency-monitor-threshold", "100"},
		{"debug", "sleep", "0.15"}, {"latency", "doctor"},
		{"latency", "reset"}, {"latency", "latest"},
		{"config", "set", "latency-monitor-threshold", "0"},
		{"set", "k", "hello"}, {"debug", "object", "k"}, {"debug", "object", "nokey"},
		{"debug", "set-active-expire", "0"}, {"debug", "set-active-expire", "1"},
		{"debug", "quicklist-packed-threshold", "100"}, {"debug", "nosuchsub"},
		{"debug", "sleep", "0"}, {"debug", "change-repl-id"},
		{"debug", "reload", "bogus"}, {"rpush", "rl", "a", "b"}, {"hset", "rh", "f", "v"}, {"debug", "reload"},
		{"lrange", "rl", "0", "-1"}, {"hgetall", "rh"}, {"debug", "reload", "merge", "noflush"}, {"dbsize"},
		{"debug", "reload", "nosave"}, {"get", "k"},
	}
	blank := []*regexp.Regexp{
		regexp.MustCompile(`Value at:0x[0-9a-f]+`),
		regexp.MustCompile(`lru:\d+ lru_seconds_idle:\d+`),
	}
	cfg := server.DefaultConfig()
	cfg.Params = map[string]string{"enable-debug-command": "yes"}
	cfg.Dir = t.TempDir() // where DEBUG RELOAD saves
	rec, _ := servertest.StartRecached(t, cfg)
	var got [2][]string
	for i, a := range []string{servertest.StartRedis(t, "--enable-debug-command", "yes"), rec} {
		c := servertest.Dial(t, a)
		for _, args := range steps {
			r := servertest.MustDo(t, c, args...)
			for _, re := range blank {
				r = re.ReplaceAllString(r, "X")
			}
			got[i] = append(got[i], r)
		}
	}
	for i, args := range steps {
		if spike := "I have observed latency spikes"; strings.Contains(got[0][i], spike) {
			// With events, the doctor's report is free text on both.
			if !strings.Contains(got[1][i], spike) || !strings.Contains(got[1][i], "command") {
				t.Errorf("%q: report without the command event:\nredis-server %q\nrecached     %q", args, got[0][i], got[1][i])
			}
			continue
		}
		if got[0][i] != got[1][i] {
			t.Errorf("%q:\nredis-server %q\nrecached     %q", args, got[0][i], got[1][i])
		}
	}
}

// TestDebugDisabled: without enable-debug-command DEBUG is refused with
// Redis 7.0's text, and "local" admits a loopback client.
func TestDebugDisabled(t *testing.T) {
	for _, tc := range []struct {
		mode, want string
	}{
		{"", "-ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.\r\n"},
		{"local", "+OK\r\n"},
		{"yes", "+OK\r\n"},
	} {
		cfg := server.DefaultConfig()
		if tc.mode != "" {
			cfg.Params = map[string]string{"enable-debug-command": tc.mode}
		}
		rec, _ := servertest.StartRecached(t, cfg)
		c := servertest.Dial(t, rec)
		if got := servertest.MustDo(t, c, "debug", "sleep", "0"); got != tc.want {
			t.Errorf("enable-debug-command %q: %q, want %q", tc.mode, got, tc.want)
		}
	}
}

// TestLatencyHistogram: every call counts, the histogram's cumulative
// counts end at the calls recorded, subcommands are named parent|sub.
func TestLatencyHistogram(t *testing.T) {
	rec, _ := servertest.StartRecached(t, server.DefaultConfig())
	c := servertest.Dial(t, rec)
	servertest.MustDo(t, c, "config", "resetstat")
	servertest.MustDo(t, c, "set", "a", "1")
	servertest.MustDo(t, c, "set", "a", "2")
	servertest.MustDo(t, c, "client", "id")
	for _, tc := range []struct {
		args []string
		want *regexp.Regexp
	}{
		{[]string{"set"}, regexp.MustCompile(`^\*2\r\n\$3\r\nset\r\n\*4\r\n\$5\r\ncalls\r\n:2\r\n\$14\r\nhistogram_usec\r\n\*\d+\r\n(:\d+\r\n)+$`)},
		{[]string{"client"}, regexp.MustCompile(`^\*2\r\n\$9\r\nclient\|id\r\n\*4\r\n\$5\r\ncalls\r\n:1\r\n`)},
		{[]string{"blabla"}, regexp.MustCompile(`^\*0\r\n$`)},
	} {
		got := servertest.MustDo(t, c, append([]string{"latency", "histogram"}, tc.args...)...)
		if !tc.want.MatchString(got) {
			t.Errorf("LATENCY HISTOGRAM %q: %q", tc.args, got)
		}
	}
}
