package server_test

import (
	"bytes"
	"fmt"
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
