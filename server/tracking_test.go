package server_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// trackStep is one command of a client-side caching scenario: conn runs
// args, where "@name" is replaced by connection name's client id.
type trackStep struct {
	conn string
	args []string
}

func st(conn string, args ...string) trackStep { return trackStep{conn, args} }

// TestTrackingMatchesRedis runs client-side caching scenarios on
// redis-server and recached with several connections and compares, step
// by step, every byte each connection receives: replies, invalidate
// pushes, __redis__:invalidate messages, and their order.
func TestTrackingMatchesRedis(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	subscribe := st("rd", "subscribe", "__redis__:invalidate")
	cases := []struct {
		name  string
		steps []trackStep
	}{
		{"resp3 default mode", []trackStep{
			st("r", "hello", "3"), st("r", "client", "tracking", "on"),
			st("sg", "set", "k", "1"), st("r", "get", "k"), st("sg", "set", "k", "2"), st("sg", "set", "k", "3"),
			st("r", "mget", "a", "b"), st("sg", "mset", "a", "1", "b", "2"),
		}},
		{"redirect to a resp2 subscriber", []trackStep{
			subscribe, st("r", "client", "tracking", "on", "redirect", "@rd"),
			st("sg", "set", "a", "1"), st("sg", "set", "b", "1"), st("r", "get", "a"),
			st("sg", "incr", "b"), st("sg", "incr", "a"), st("r", "client", "getredir"),
			st("r", "client", "trackinginfo"), st("r", "client", "tracking", "off"), st("r", "client", "getredir"),
		}},
		{"bcast prefixes batched per command", []trackStep{
			subscribe, st("r", "client", "tracking", "on", "bcast", "redirect", "@rd", "prefix", "a:", "prefix", "b:"),
			st("r", "multi"), st("r", "incr", "a:1"), st("r", "incr", "a:2"), st("r", "incr", "b:1"), st("r", "incr", "c:1"), st("r", "exec"),
			st("r", "client", "tracking", "on", "bcast", "redirect", "@rd", "prefix", "c:"), st("sg", "set", "c:9", "x"),
			st("r", "client", "trackinginfo"),
		}},
		{"noloop", []trackStep{
			subscribe, st("r", "client", "tracking", "on", "redirect", "@rd", "noloop"),
			st("r", "mget", "o1", "loop", "o2"), st("sg", "set", "o1", "1"), st("r", "set", "loop", "1"), st("sg", "set", "o2", "1"),
			st("r", "client", "tracking", "off"), st("r", "client", "tracking", "on", "bcast", "redirect", "@rd", "noloop"),
			st("sg", "set", "x1", "1"), st("r", "set", "x2", "1"), st("r", "mset", "x3", "1", "x4", "2"),
		}},
		{"optin and optout", []trackStep{
			st("r", "hello", "3"), st("r", "client", "tracking", "on", "optin"),
			st("r", "get", "k1"), st("sg", "set", "k1", "1"),
			st("r", "client", "caching", "yes"), st("r", "get", "k1"), st("r", "client", "trackinginfo"), st("sg", "set", "k1", "2"),
			st("r", "client", "caching", "no"), st("r", "client", "tracking", "on", "optout"),
			st("r", "client", "tracking", "off"), st("r", "client", "tracking", "on", "optout"),
			st("r", "get", "k2"), st("sg", "set", "k2", "1"), st("r", "client", "caching", "no"), st("r", "get", "k2"), st("sg", "set", "k2", "2"),
		}},
		{"own writes after the reply", []trackStep{
			st("r", "hello", "3"), st("r", "client", "tracking", "on"),
			st("r", "hset", "h", "f", "1"), st("r", "hget", "h", "f"), st("r", "hdel", "h", "f"),
			st("r", "mset", "a", "1", "b", "2"), st("r", "get", "a"), st("r", "multi"), st("r", "incr", "a"), st("r", "get", "b"), st("r", "exec"),
			st("r", "get", "a"), st("r", "rename", "a", "z"), st("r", "get", "z"), st("r", "flushdb"),
		}},
		{"flushall", []trackStep{
			subscribe, st("r", "client", "tracking", "on", "redirect", "@rd"), st("r", "get", "k"), st("sg", "flushall"),
			st("sg", "info", "stats"),
		}},
		{"scripts track their declared keys when they read", []trackStep{
			st("r", "hello", "3"), st("r", "client", "tracking", "on"),
			st("r", "eval", "redis.call('set', 'k3', 'x')", "2", "k1", "k2"), st("sg", "mset", "k1", "1", "k2", "1"),
			st("r", "eval", "redis.call('get', 'k3')", "2", "k1", "k2"), st("sg", "mset", "k2", "2", "k1", "2"),
		}},
		{"errors", []trackStep{
			st("r", "client", "tracking", "on", "bcast", "prefix", "foobar", "prefix", "foo"),
			st("r", "client", "tracking", "on", "bcast", "prefix", "foo", "prefix", "bar"),
			st("r", "client", "tracking", "on", "bcast", "prefix", "fo"),
			st("r", "client", "tracking", "on"), st("r", "client", "tracking", "on", "prefix", "p"),
			st("r", "client", "tracking", "off"), st("r", "client", "tracking", "on", "optin", "optout"),
			st("r", "client", "tracking", "on", "bcast", "optin"), st("r", "client", "tracking", "on", "redirect", "999999"),
			st("r", "client", "tracking", "on", "bogus"), st("r", "client", "tracking", "maybe"),
			st("r", "client", "caching", "yes"), st("r", "client", "tracking", "on", "optin"), st("r", "client", "caching", "no"),
			st("r", "client", "caching", "maybe"), st("r", "client", "tracking", "on", "optout"),
		}},
	}
	redisAddr := servertest.StartRedis(t)
	recAddr, _ := servertest.StartRecached(t, server.DefaultConfig())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			redis := runTracking(t, redisAddr, tc.steps)
			rec := runTracking(t, recAddr, tc.steps)
			for i := range tc.steps {
				if redis[i] != rec[i] {
					t.Errorf("step %d %v:\nredis-server %q\nrecached     %q", i, tc.steps[i], redis[i], rec[i])
				}
			}
		})
	}
}

// runTracking runs steps on fresh connections to addr and returns, for
// each step, what every connection received by the end of it, client ids
// written as @name. After each step every connection is sent PING with a
// marker, and read up to its reply, so that pushes caused by the step have
// arrived.
func runTracking(t *testing.T, addr string, steps []trackStep) []string {
	t.Helper()
	conns := map[string]*servertest.Client{}
	ids := map[string]string{}
	var names []string
	for _, s := range steps {
		if conns[s.conn] == nil {
			c := servertest.Dial(t, addr)
			conns[s.conn] = c
			ids[s.conn] = strings.Trim(servertest.MustDo(t, c, "client", "id"), ":\r\n")
			names = append(names, s.conn)
		}
	}
	if conns["sg"] == nil {
		conns["sg"] = servertest.Dial(t, addr)
		names = append(names, "sg")
	}
	servertest.MustDo(t, conns["sg"], "flushall")
	out := make([]string, len(steps))
	inMulti := map[string]bool{}
	for i, s := range steps {
		args := append([]string(nil), s.args...)
		for j, a := range args {
			if strings.HasPrefix(a, "@") {
				args[j] = ids[a[1:]]
			}
		}
		if err := conns[s.conn].Send(servertest.Encode(args...)); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		switch strings.ToLower(s.args[0]) {
		case "multi":
			inMulti[s.conn] = true
		case "exec", "discard":
			inMulti[s.conn] = false
		}
		// The step's own connection first: once its reply is in, Redis
		// has sent the step's broadcasts (before its event loop sleeps).
		order := append([]string{s.conn}, names...)
		for k, name := range order {
			if k > 0 && name == s.conn {
				continue
			}
			marker := fmt.Sprintf("marker-%d", i)
			c := conns[name]
			if inMulti[name] {
				// A PING would be queued: the step's reply is QUEUED.
				rep, err := c.Read()
				if err != nil {
					t.Fatal(err)
				}
				b.WriteString(name + " " + string(rep) + "\n")
				continue
			}
			if err := c.Send(servertest.Encode("ping", marker)); err != nil {
				t.Fatal(err)
			}
			for n := 0; ; n++ {
				rep, err := c.Read()
				if err != nil || n > 1000 {
					t.Fatalf("%s: reading up to %s: %v", name, marker, err)
				}
				if strings.Contains(string(rep), marker) {
					break
				}
				b.WriteString(name + " " + normalizeIDs(string(rep), ids) + "\n")
			}
		}
		out[i] = b.String()
	}
	return out
}

var helloID = regexp.MustCompile(`\$2\r\nid\r\n:\d+\r\n`)

// normalizeIDs writes client ids as names in the replies that carry them,
// and keeps only INFO's tracking fields.
func normalizeIDs(rep string, ids map[string]string) string {
	if !strings.HasPrefix(rep, ":") && !strings.Contains(rep, "redirect") && !strings.Contains(rep, "tracking-redir-broken") && !strings.Contains(rep, "standalone") {
		if !strings.Contains(rep, "# Stats") {
			return rep
		}
	}
	if strings.Contains(rep, "# Stats") {
		var keep []string
		for _, l := range strings.Split(rep, "\r\n") {
			if strings.HasPrefix(l, "tracking_") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, ",")
	}
	if strings.Contains(rep, "standalone") {
		return helloID.ReplaceAllString(rep, "$$2\r\nid\r\n:ID\r\n")
	}
	for name, id := range ids {
		if _, err := strconv.Atoi(id); err == nil {
			rep = strings.ReplaceAll(rep, ":"+id+"\r\n", ":@"+name+"\r\n")
		}
	}
	return rep
}
