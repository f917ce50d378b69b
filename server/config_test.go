package server_test

import (
	"strings"
	"testing"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// configAll reads CONFIG GET * from addr as a map.
func configAll(t *testing.T, addr string) map[string]string {
	t.Helper()
	rep, err := servertest.Dial(t, addr).Do("CONFIG", "GET", "*")
	if err != nil {
		t.Fatal(err)
	}
	els, err := servertest.Elements(rep)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for i := 0; i+1 < len(els); i += 2 {
		m[bulkText(els[i])] = bulkText(els[i+1])
	}
	return m
}

// bulkText is the text of an encoded bulk string ("$3\r\nabc\r\n").
func bulkText(b []byte) string {
	s := string(b)
	if i := strings.Index(s, "\r\n"); i >= 0 && strings.HasPrefix(s, "$") {
		return strings.TrimSuffix(s[i+2:], "\r\n")
	}
	return s
}

// TestConfigAgainstRedis compares CONFIG GET * of a fresh redis-server and
// a fresh recached: the same names (recached adds ws-port) with the same
// defaults, except where the test servers start with their own values.
func TestConfigAgainstRedis(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	redis := configAll(t, servertest.StartRedis(t))
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	ours := configAll(t, addr)
	// Set by the test servers' command lines, or recached's own choice.
	skip := map[string]bool{"port": true, "dir": true, "bind": true, "save": true, "appendonly": true, "proto-max-bulk-len": true, "ws-port": true}
	for name, v := range redis {
		got, ok := ours[name]
		switch {
		case !ok:
			t.Errorf("%s: redis-server has it, recached does not", name)
		case !skip[name] && got != v:
			t.Errorf("%s: recached %q, redis-server %q", name, got, v)
		}
	}
	for name := range ours {
		if _, ok := redis[name]; !ok && name != "ws-port" {
			t.Errorf("%s: recached has it, redis-server does not", name)
		}
	}
	if len(redis) < 150 {
		t.Fatalf("CONFIG GET * of redis-server: only %d parameters", len(redis))
	}
}

// TestConfigSetFixed checks the parameters recached fixes at start: CONFIG
// SET takes their current value (as the Redis suite's CONFIG sanity does
// with every parameter) and refuses any other, changing nothing.
func TestConfigSetFixed(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	c := servertest.Dial(t, addr)
	cur := configAll(t, addr)
	for _, name := range []string{"ws-port"} {
		other := "1"
		steps := []struct {
			args []string
			want string
		}{
			{[]string{"CONFIG", "SET", name, cur[name]}, "+OK\r\n"},
			{[]string{"CONFIG", "SET", "maxmemory", "7", name, other}, "-ERR CONFIG SET failed (possibly related to argument '" + name + "') - can't set immutable config\r\n"},
			{[]string{"CONFIG", "GET", "maxmemory"}, "*2\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n"},
		}
		for _, st := range steps {
			if got, err := c.Do(st.args...); err != nil || string(got) != st.want {
				t.Fatalf("%q: %q %v, want %q", st.args, got, err, st.want)
			}
		}
	}
}
