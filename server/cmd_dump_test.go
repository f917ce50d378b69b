package server_test

import (
	"bytes"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// dumpFill makes one key of every type and encoding in the current
// database of c.
func dumpFill(t *testing.T, c *servertest.Client) []string {
	t.Helper()
	cmds := [][]string{
		{"SET", "s:int", "12345"}, {"SET", "s:str", "hello"}, {"SET", "s:long", strings.Repeat("abc", 100)},
		{"RPUSH", "l:small", "a", "1", "-70000"},
		{"SADD", "set:int", "1", "2", "-3"}, {"SADD", "set:str", "a", "b"},
		{"HSET", "h:small", "f", "v", "n", "1"}, {"HSET", "h:large", "f", strings.Repeat("v", 100)},
		{"ZADD", "z:small", "1", "a", "2.5", "b", "-inf", "c"}, {"ZADD", "z:large", "1", strings.Repeat("m", 100)},
		{"XADD", "st", "1-1", "f", "v"}, {"XADD", "st", "2-1", "f", "w", "g", "x"},
		{"XGROUP", "CREATE", "st", "g", "0"}, {"XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "st", ">"},
		{"PFADD", "hll", "a", "b"},
	}
	for i := 0; i < 200; i++ {
		cmds = append(cmds, []string{"RPUSH", "l:large", fmt.Sprint("element", i)}, []string{"SADD", "set:large", fmt.Sprint("m", i)},
			[]string{"ZADD", "z:many", fmt.Sprint(i), fmt.Sprint("m", i)}, []string{"HSET", "h:many", fmt.Sprint("f", i), fmt.Sprint(i)})
	}
	for _, a := range cmds {
		servertest.MustDo(t, c, a...)
	}
	return []string{"s:int", "s:str", "s:long", "l:small", "l:large", "set:int", "set:str", "set:large", "h:small", "h:large", "h:many", "z:small", "z:large", "z:many", "st", "hll"}
}

// readKey reads a key's value through commands whose replies both servers
// give byte for byte.
func readKey(t *testing.T, c *servertest.Client, key string) string {
	t.Helper()
	typ := servertest.MustDo(t, c, "TYPE", key)
	var args []string
	switch strings.TrimSpace(strings.TrimPrefix(typ, "+")) {
	case "string":
		args = []string{"GET", key}
	case "list":
		args = []string{"LRANGE", key, "0", "-1"}
	case "set":
		args = []string{"SORT", key, "ALPHA"}
	case "hash":
		args = []string{"HGETALL", key}
	case "zset":
		args = []string{"ZRANGE", key, "0", "-1", "WITHSCORES"}
	case "stream":
		return servertest.MustDo(t, c, "XRANGE", key, "-", "+") + servertest.MustDo(t, c, "XPENDING", key, "g") + servertest.MustDo(t, c, "XINFO", "GROUPS", key)
	default:
		t.Fatalf("%s: type %q", key, typ)
	}
	out := servertest.MustDo(t, c, args...)
	if args[0] == "HGETALL" {
		// Field order is an encoding detail: compare the sorted pairs.
		return servertest.MustDo(t, c, "HLEN", key) + sortedLines(out)
	}
	return typ + out
}

func sortedLines(s string) string {
	l := strings.Split(s, "\r\n")
	var pairs []string
	for i := 1; i+3 < len(l); i += 4 {
		pairs = append(pairs, strings.Join(l[i:i+4], "|"))
	}
	return strings.Join(slices.Sorted(slices.Values(pairs)), "\n")
}

// TestDumpRestoreWithRedis moves every key from redis-server to recached
// with DUMP and RESTORE, and back, comparing the values.
func TestDumpRestoreWithRedis(t *testing.T) {
	redis := servertest.Dial(t, servertest.StartRedis(t))
	addr, _ := servertest.StartRecached(t, server.Config{})
	rc := servertest.Dial(t, addr)
	keys := dumpFill(t, redis)
	back := servertest.Dial(t, servertest.StartRedis(t))
	for _, k := range keys {
		p, err := redis.Do("DUMP", k)
		if err != nil {
			t.Fatal(err)
		}
		payload := dumpBulk(t, p)
		if r := servertest.MustDo(t, rc, "RESTORE", k, "0", payload); r != "+OK\r\n" {
			t.Fatalf("RESTORE %s from redis-server: %q", k, r)
		}
		if g, w := readKey(t, rc, k), readKey(t, redis, k); g != w {
			t.Errorf("%s restored from redis-server:\n got %q\nwant %q", k, g, w)
		}
		p, err = rc.Do("DUMP", k)
		if err != nil {
			t.Fatal(err)
		}
		if r := servertest.MustDo(t, back, "RESTORE", k, "0", dumpBulk(t, p)); r != "+OK\r\n" {
			t.Fatalf("RESTORE %s from recached into redis-server: %q", k, r)
		}
		if g, w := readKey(t, back, k), readKey(t, redis, k); g != w {
			t.Errorf("%s restored from recached:\n got %q\nwant %q", k, g, w)
		}
	}
}

// dumpBulk returns the payload of a bulk string reply.
func dumpBulk(t *testing.T, reply []byte) string {
	t.Helper()
	i := bytes.Index(reply, []byte("\r\n"))
	if reply[0] != '$' || i < 0 {
		t.Fatalf("not a bulk reply: %q", reply)
	}
	return string(reply[i+2 : len(reply)-2])
}

// TestRestoreErrors compares RESTORE's replies with redis-server's, case
// by case.
func TestRestoreErrors(t *testing.T) {
	redis := servertest.Dial(t, servertest.StartRedis(t))
	addr, _ := servertest.StartRecached(t, server.Config{})
	rc := servertest.Dial(t, addr)
	servertest.MustDo(t, redis, "SET", "src", "value")
	payload := dumpBulk(t, []byte(servertest.MustDo(t, redis, "DUMP", "src")))
	flipped := []byte(payload)
	flipped[1] ^= 1
	for _, args := range [][]string{
		{"SET", "busy", "x"},
		{"RESTORE", "busy", "0", payload},
		{"RESTORE", "busy", "0", payload, "REPLACE"},
		{"GET", "busy"},
		{"RESTORE", "k", "0", string(flipped)},
		{"RESTORE", "k", "0", "short"},
		{"RESTORE", "k", "-1", payload},
		{"RESTORE", "k", "x", payload},
		{"RESTORE", "k", "0", payload, "BOGUS"},
		{"RESTORE", "k", "0", payload, "IDLETIME", "-1"},
		{"RESTORE", "k", "0", payload, "IDLETIME", "x"},
		{"RESTORE", "k", "0", payload, "FREQ", "256"},
		{"RESTORE", "k", "0", payload, "FREQ", "10", "IDLETIME", "10"},
		{"RESTORE", "k", "0", payload, "IDLETIME", "1000"},
		{"OBJECT", "IDLETIME", "k"},
		{"RESTORE", "k2", "1", payload, "ABSTTL"},
		{"EXISTS", "k2"},
		{"RESTORE", "k3", "100000", payload},
		{"TTL", "k3"},
		{"RESTORE", "k4", "0", "\x00\x00"},
		{"DUMP", "nosuchkey"},
	} {
		g := servertest.MustDo(t, rc, args...)
		w := servertest.MustDo(t, redis, args...)
		if g != w {
			t.Errorf("%q:\n got %q\nwant %q", args[:min(len(args), 2)], g, w)
		}
	}
}

// TestMigrateWithRedis runs the same MIGRATEs from redis-server and from
// recached, each to a target redis-server of its own, and compares the
// replies and what the sources and targets then hold; then redis-server
// migrates into recached.
func TestMigrateWithRedis(t *testing.T) {
	type side struct {
		src          *servertest.Client
		target, auth string // host:port of the targets without and with a password
		tc, ta       *servertest.Client
	}
	addr, _ := servertest.StartRecached(t, server.Config{})
	var sides []side
	for _, src := range []string{servertest.StartRedis(t), addr} {
		tgt := servertest.StartRedis(t)
		auth := servertest.StartRedis(t, "--requirepass", "pw")
		ta := servertest.Dial(t, auth)
		servertest.MustDo(t, ta, "AUTH", "pw")
		sides = append(sides, side{servertest.Dial(t, src), tgt, auth, servertest.Dial(t, tgt), ta})
	}
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().String()
	}()
	hp := func(a string) []string { h, p, _ := net.SplitHostPort(a); return []string{h, p} }
	for _, c := range []struct {
		name   string
		target string // "plain", "auth" or "closed"
		args   []string
	}{
		{"move", "plain", []string{"a", "0", "1000"}},
		{"copy with ttl", "plain", []string{"b", "0", "1000", "COPY"}},
		{"busy key", "plain", []string{"b", "0", "1000"}},
		{"replace", "plain", []string{"b", "0", "1000", "REPLACE"}},
		{"keys", "plain", []string{"", "0", "1000", "KEYS", "l", "nosuch", "h"}},
		{"no key", "plain", []string{"nosuch", "0", "1000"}},
		{"keys with a key", "plain", []string{"x", "0", "1000", "KEYS", "c"}},
		{"other db", "plain", []string{"c", "3", "1000"}},
		{"wrong password", "auth", []string{"d", "0", "1000", "AUTH", "bad"}},
		{"no password", "auth", []string{"d", "0", "1000"}},
		{"password", "auth", []string{"d", "0", "1000", "AUTH", "pw"}},
		{"auth2", "auth", []string{"e", "0", "1000", "AUTH2", "default", "pw"}},
		{"auth without value", "auth", []string{"e", "0", "1000", "AUTH"}},
		{"bad timeout", "plain", []string{"e", "0", "x"}},
		{"bad db", "plain", []string{"e", "y", "1000"}},
		{"syntax", "plain", []string{"e", "0", "1000", "BOGUS"}},
		{"refused", "closed", []string{"e", "0", "100"}},
	} {
		var replies, states []string
		for _, sd := range sides {
			for _, a := range [][]string{
				{"SET", "a", "1"}, {"SET", "b", "2", "EX", "1000"}, {"SET", "c", "3"}, {"SET", "d", "4"}, {"SET", "e", "5"},
				{"DEL", "l", "h"}, {"RPUSH", "l", "x", "y"}, {"HSET", "h", "f", "v"},
			} {
				servertest.MustDo(t, sd.src, a...)
			}
			target := map[string]string{"plain": sd.target, "auth": sd.auth, "closed": closed}[c.target]
			replies = append(replies, servertest.MustDo(t, sd.src, append(append([]string{"MIGRATE"}, hp(target)...), c.args...)...))
			var st strings.Builder
			for _, k := range []string{"a", "b", "c", "d", "e", "l", "h"} {
				st.WriteString(k + " src:" + servertest.MustDo(t, sd.src, "EXISTS", k))
				for _, tc := range []*servertest.Client{sd.tc, sd.ta} {
					st.WriteString(" target:" + servertest.MustDo(t, tc, "EXISTS", k))
				}
				st.WriteString("\n")
			}
			st.WriteString("db3 c:" + servertest.MustDo(t, sd.tc, "SELECT", "3") + servertest.MustDo(t, sd.tc, "EXISTS", "c") + servertest.MustDo(t, sd.tc, "SELECT", "0"))
			st.WriteString("ttl b>0:" + fmt.Sprint(servertest.MustDo(t, sd.tc, "TTL", "b") > ":0"))
			states = append(states, st.String())
		}
		if replies[0] != replies[1] {
			t.Errorf("%s: recached replied %q, redis-server %q", c.name, replies[1], replies[0])
		}
		if states[0] != states[1] {
			t.Errorf("%s: after the migrate, recached side:\n%s\nredis-server side:\n%s", c.name, states[1], states[0])
		}
	}
	// redis-server migrates into recached.
	redis := servertest.Dial(t, servertest.StartRedis(t))
	rc := servertest.Dial(t, addr)
	servertest.MustDo(t, redis, "RPUSH", "into", "1", "2", "3")
	if r := servertest.MustDo(t, redis, append(append([]string{"MIGRATE"}, hp(addr)...), "into", "0", "1000")...); r != "+OK\r\n" {
		t.Fatalf("MIGRATE into recached: %q", r)
	}
	if r := servertest.MustDo(t, rc, "LRANGE", "into", "0", "-1"); r != "*3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n" {
		t.Errorf("migrated into recached: %q", r)
	}
	if r := servertest.MustDo(t, rc, "INFO", "stats"); !strings.Contains(r, "migrate_cached_sockets:") {
		t.Errorf("INFO stats has no migrate_cached_sockets")
	}
}
