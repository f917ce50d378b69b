package server_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// configProbeValues are the values CONFIG SET tries on every parameter:
// good ones for some kinds, bad ones for the others, edge cases of the
// number and memory readers.
var configProbeValues = []string{
	"", "abc", "-1", "0", "1", "2", "100", "65536", "yes", "NO", "1kb", "1mb", "2GB", "10%", "-5%",
	"99999999999999999999", "0x10", "1.5", " 1", "KEA", "normal 1mb 2mb 3", "pubsub 0 0 0 replica 1 1 1",
	"900 1 300 10", "50 99.9", "systemd", "allkeys-lru", "notice", "save", "nosave force", "0 200 800",
}

// configProbeSkip are the parameters the probe leaves out: those recached
// fixes at start (listeners; TestConfigSetFixed covers them), the log
// mode (each switch writes a snapshot; TestConfigSetAppendOnly covers it),
// those whose change would disturb the probe itself (requirepass, a
// watchdog), and recached's own.
var configProbeSkip = map[string]bool{
	"port": true, "bind": true, "appendonly": true, "ws-port": true,
	"requirepass": true, "watchdog-period": true, "tls-port": true, "unixsocket": true,
	// Redis lets CONFIG SET move the cluster and TLS listeners.
	"cluster-port": true,
}

// TestConfigSetEveryParameterAgainstRedis sets every parameter redis-server
// lists to each probe value on both servers and compares the replies and
// the value CONFIG GET shows after it, then restores the value.
func TestConfigSetEveryParameterAgainstRedis(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	redisAddr := servertest.StartRedis(t)
	oursAddr, _ := servertest.StartRecached(t, server.DefaultConfig())
	redis, ours := configAll(t, redisAddr), configAll(t, oursAddr)
	rc, oc := servertest.Dial(t, redisAddr), servertest.Dial(t, oursAddr)
	var names []string
	for name := range redis {
		if !configProbeSkip[name] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		for _, v := range configProbeValues {
			want := servertest.MustDo(t, rc, "CONFIG", "SET", name, v)
			got := servertest.MustDo(t, oc, "CONFIG", "SET", name, v)
			if got != want {
				t.Errorf("CONFIG SET %s %q: recached %q, redis-server %q", name, v, got, want)
			}
			if want != "+OK\r\n" && got != "+OK\r\n" {
				continue // refused by both: nothing changed
			}
			wantGet := servertest.MustDo(t, rc, "CONFIG", "GET", name)
			gotGet := servertest.MustDo(t, oc, "CONFIG", "GET", name)
			if gotGet != wantGet && name != "proto-max-bulk-len" {
				t.Errorf("CONFIG GET %s after %q: recached %q, redis-server %q", name, v, gotGet, wantGet)
			}
			if got := servertest.MustDo(t, rc, "CONFIG", "SET", name, redis[name]); got != "+OK\r\n" {
				t.Fatalf("restoring %s on redis-server: %q", name, got)
			}
			if got := servertest.MustDo(t, oc, "CONFIG", "SET", name, ours[name]); got != "+OK\r\n" {
				t.Fatalf("restoring %s on recached: %q", name, got)
			}
		}
	}
	// Several at once: atomic, the first failure in argument order.
	for _, args := range [][]string{
		{"timeout", "5", "hz", "abc"},
		{"timeout", "5", "timeout", "6"},
		{"timeout", "5", "TIMEOUT", "6"},
		{"hash-max-ziplist-entries", "5", "hash-max-listpack-entries", "6"},
		{"timeout", "5", "daemonize", "no"},
		{"timeout", "5", "nosuch", "1"},
		{"timeout", "5", "hz", "20", "maxclients", "500"},
	} {
		cmd := append([]string{"CONFIG", "SET"}, args...)
		want, got := servertest.MustDo(t, rc, cmd...), servertest.MustDo(t, oc, cmd...)
		if got != want {
			t.Errorf("%q: recached %q, redis-server %q", args, got, want)
		}
		for _, n := range []string{"timeout", "hz", "maxclients", "hash-max-listpack-entries"} {
			w, g := servertest.MustDo(t, rc, "CONFIG", "GET", n), servertest.MustDo(t, oc, "CONFIG", "GET", n)
			if g != w {
				t.Errorf("after %q, %s: recached %q, redis-server %q", args, n, g, w)
			}
		}
	}
	// CONFIG GET with several patterns, sorted (both answer in their
	// tables' orders).
	for _, pats := range [][]string{{"*max*", "timeout"}, {"hz", "h*", "*z"}, {"nosuch", "tcp-*", "TCP-KEEPALIVE"}} {
		cmd := append([]string{"CONFIG", "GET"}, pats...)
		// proto-max-bulk-len's default is 64 MB in recached, 512 MB in Redis.
		w := pairsOf(t, strings.Replace(servertest.MustDo(t, rc, cmd...), "$9\r\n536870912\r\n", "$8\r\n67108864\r\n", 1))
		g := pairsOf(t, servertest.MustDo(t, oc, cmd...))
		if strings.Join(g, "\n") != strings.Join(w, "\n") {
			t.Errorf("CONFIG GET %q: recached %q, redis-server %q", pats, g, w)
		}
	}
}

// pairsOf returns a CONFIG GET reply's name/value pairs, sorted.
func pairsOf(t *testing.T, rep string) []string {
	t.Helper()
	els, err := servertest.Elements([]byte(rep))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := 0; i+1 < len(els); i += 2 {
		out = append(out, bulkText(els[i])+" "+bulkText(els[i+1]))
	}
	sort.Strings(out)
	return out
}
