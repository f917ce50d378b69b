package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// TestClientPause holds writes under CLIENT PAUSE WRITE while reads and a
// read-only transaction go on, runs the held writes in order at UNPAUSE,
// and ends a pause by its timeout.
func TestClientPause(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	admin, reader := servertest.Dial(t, addr), servertest.Dial(t, addr)
	servertest.MustDo(t, admin, "set", "k", "v0")
	if got := servertest.MustDo(t, admin, "client", "pause", "60000", "write"); got != "+OK\r\n" {
		t.Fatalf("CLIENT PAUSE: %q", got)
	}
	writers := make([]*servertest.Client, 3)
	for i := range writers {
		writers[i] = servertest.Dial(t, addr)
		if err := writers[i].Send(servertest.Encode("append", "k", string(rune('a'+i)))); err != nil {
			t.Fatal(err)
		}
		waitBlocked(t, admin, i+1)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"get", "k"}, "$2\r\nv0\r\n"},
		{[]string{"set", "x"}, "-ERR wrong number of arguments for 'set' command\r\n"},
	}
	for _, c := range cases {
		if got := servertest.MustDo(t, reader, c.args...); got != c.want {
			t.Errorf("%q during the pause: %q, want %q", c.args, got, c.want)
		}
	}
	servertest.MustDo(t, reader, "multi")
	servertest.MustDo(t, reader, "get", "k")
	if got := servertest.MustDo(t, reader, "exec"); got != "*1\r\n$2\r\nv0\r\n" {
		t.Errorf("read-only EXEC during the pause: %q", got)
	}
	servertest.MustDo(t, admin, "client", "unpause")
	for i, w := range writers {
		if rep, err := w.Read(); err != nil || rep[0] != ':' {
			t.Fatalf("held APPEND %d: %q, %v", i, rep, err)
		}
	}
	if got := servertest.MustDo(t, admin, "get", "k"); got != "$5\r\nv0abc\r\n" {
		t.Errorf("after UNPAUSE: %q, want the held writes in order", got)
	}
	if got := servertest.MustDo(t, admin, "info", "clients"); !strings.Contains(got, "blocked_clients:0\r\n") {
		t.Errorf("blocked clients left after UNPAUSE: %q", got)
	}
	// A pause ends by itself.
	servertest.MustDo(t, admin, "client", "pause", "50", "all")
	if got := servertest.MustDo(t, reader, "incr", "n"); got != ":1\r\n" {
		t.Errorf("INCR after a 50 ms pause: %q", got)
	}
	for _, bad := range [][]string{{"client", "pause", "-1"}, {"client", "pause", "x"}, {"client", "pause", "10", "maybe"}} {
		if got := servertest.MustDo(t, admin, bad...); !strings.HasPrefix(got, "-ERR") {
			t.Errorf("%q: %q, want an error", bad, got)
		}
	}
}

// TestPauseHoldsPassiveExpiry: during CLIENT PAUSE WRITE a key whose time
// to live has passed reads as absent but stays (DBSIZE counts it, no
// expired_keys), and expires once the pause ends, as on redis-server.
func TestPauseHoldsPassiveExpiry(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	run := func(addr string) []string {
		c := servertest.Dial(t, addr)
		expired := func() string {
			info := servertest.MustDo(t, c, "info", "stats")
			i := strings.Index(info, "expired_keys:")
			return info[i : i+strings.Index(info[i:], "\r")]
		}
		servertest.MustDo(t, c, "flushall")
		servertest.MustDo(t, c, "config", "resetstat")
		servertest.MustDo(t, c, "set", "a", "1", "px", "20")
		servertest.MustDo(t, c, "set", "b", "1", "px", "20")
		servertest.MustDo(t, c, "client", "pause", "60000", "write")
		// Both keys must have run out: on a loaded machine b, set a few
		// milliseconds after a, can still be live when a is not.
		for i := 0; servertest.MustDo(t, c, "get", "a") != "$-1\r\n" || servertest.MustDo(t, c, "get", "b") != "$-1\r\n"; i++ {
			if i == 1000 {
				t.Fatalf("%s: a and b never read as expired", addr)
			}
			time.Sleep(5 * time.Millisecond) // the time to live running out
		}
		out := []string{expired(), servertest.MustDo(t, c, "dbsize"), servertest.MustDo(t, c, "exists", "a")}
		servertest.MustDo(t, c, "client", "unpause")
		out = append(out, servertest.MustDo(t, c, "get", "a"), servertest.MustDo(t, c, "get", "b"), expired(), servertest.MustDo(t, c, "dbsize"))
		return out
	}
	want, got := run(servertest.StartRedis(t)), run(addr)
	if strings.Join(want, "|") != strings.Join(got, "|") {
		t.Errorf("redis-server %q\nrecached     %q", want, got)
	}
}
