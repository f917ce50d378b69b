package server_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// notifyScript is a sequence of writes covering every keyspace event
// recached publishes, with the classes on ("KEAn": every class, both
// channel kinds, and new keys). "!sleep MS" waits.
var notifyScript = [][]string{
	// strings
	{"SET", "foo", "bar"},
	{"SET", "foo", "bar2", "EX", "100"},
	{"SET", "foo", "bar3", "KEEPTTL"},
	{"SETEX", "ex", "100", "v"},
	{"PSETEX", "pex", "100000", "v"},
	{"SETNX", "nx", "v"},
	{"SETNX", "nx", "v"},
	{"GETSET", "foo", "v3"},
	{"MSET", "m1", "a", "m2", "b"},
	{"MSETNX", "m3", "a"},
	{"APPEND", "foo", "xx"},
	{"APPEND", "app", "new"},
	{"SETRANGE", "foo", "1", "zz"},
	{"SETRANGE", "sr", "3", "abc"},
	{"INCR", "n"},
	{"INCRBY", "n", "5"},
	{"DECR", "n"},
	{"DECRBY", "n", "2"},
	{"INCRBYFLOAT", "f", "1.5"},
	{"GETEX", "ex", "PERSIST"},
	{"GETEX", "pex", "PX", "50000"},
	{"GETDEL", "m1"},
	// generic
	{"EXPIRE", "foo", "100"},
	{"PEXPIRE", "foo", "100000"},
	{"EXPIREAT", "foo", "99999999999"},
	{"PERSIST", "foo"},
	{"PERSIST", "foo"},
	{"EXPIRE", "nx", "0"},
	{"RENAME", "foo", "foo2"},
	{"SET", "other", "x"},
	{"RENAME", "foo2", "other"},
	{"RENAMENX", "other", "foo3"},
	{"COPY", "foo3", "cp"},
	{"COPY", "foo3", "cp", "REPLACE"},
	{"COPY", "foo3", "cpdb", "DB", "2"},
	{"MOVE", "cp", "1"},
	{"DEL", "foo3", "nosuch", "m2"},
	{"UNLINK", "m3"},
	{"SET", "e1", "v", "PX", "30"},
	{"!sleep", "200"},
	{"GET", "e1"},
	// bits and HyperLogLogs
	{"SETBIT", "bits", "7", "1"},
	{"SETBIT", "bits", "7", "1"},
	{"BITFIELD", "bf", "SET", "u8", "0", "255"},
	{"BITOP", "OR", "dest", "bits", "bf"},
	{"BITOP", "AND", "dest", "nosuch1", "nosuch2"},
	{"PFADD", "hll", "a", "b", "c"},
	{"PFADD", "hll", "a"},
	{"PFMERGE", "hll2", "hll"},
	// lists
	{"LPUSH", "l", "a", "b", "c"},
	{"RPUSH", "l", "d"},
	{"LPUSHX", "l", "z"},
	{"RPUSHX", "nolist", "z"},
	{"LINSERT", "l", "BEFORE", "a", "q"},
	{"LINSERT", "l", "BEFORE", "nosuch", "q"},
	{"LSET", "l", "0", "w"},
	{"LREM", "l", "1", "q"},
	{"LTRIM", "l", "0", "10"},
	{"LPOP", "l"},
	{"RPOP", "l"},
	{"LMOVE", "l", "l2", "LEFT", "RIGHT"},
	{"RPOPLPUSH", "l", "l2"},
	{"LMOVE", "l2", "l2", "LEFT", "RIGHT"},
	{"RPUSH", "l", "x", "y"},
	{"LMPOP", "1", "l", "LEFT", "COUNT", "10"},
	{"RPUSH", "l", "x"},
	{"LTRIM", "l", "1", "0"},
	{"SORT", "l2", "ALPHA", "STORE", "ls"},
	{"BLPOP", "l2", "0"},
	// sets
	{"SADD", "s", "a", "b", "c", "d"},
	{"SADD", "s", "a"},
	{"SREM", "s", "a"},
	{"SREM", "s", "nosuch"},
	{"SPOP", "s"},
	{"SPOP", "s", "1"},
	{"SADD", "s3", "x", "y"},
	{"SMOVE", "s3", "s2", "x"},
	{"SMOVE", "s3", "s2", "y"},
	{"SINTERSTORE", "si", "s", "s2"},
	{"SUNIONSTORE", "su", "s", "s2"},
	{"SDIFFSTORE", "sd", "s", "s2"},
	{"SINTERSTORE", "su", "nosuch"},
	{"SPOP", "s", "10"},
	// hashes
	{"HSET", "h", "a", "1", "b", "2"},
	{"HMSET", "h", "a", "1"},
	{"HSETNX", "h", "c", "3"},
	{"HSETNX", "h", "c", "3"},
	{"HINCRBY", "h", "a", "5"},
	{"HINCRBYFLOAT", "h", "b", "1.5"},
	{"HDEL", "h", "a", "nosuch"},
	{"HDEL", "h", "b", "c"},
	// sorted sets
	{"ZADD", "z", "1", "a", "2", "b", "3", "c"},
	{"ZADD", "z", "1", "a"},
	{"ZADD", "z", "INCR", "1", "a"},
	{"ZINCRBY", "z", "2", "b"},
	{"ZREM", "z", "c"},
	{"ZADD", "z", "4", "d", "5", "e", "6", "f"},
	{"ZREMRANGEBYSCORE", "z", "4", "4"},
	{"ZREMRANGEBYSCORE", "z", "100", "200"},
	{"ZREMRANGEBYRANK", "z", "0", "0"},
	{"ZADD", "zl", "0", "a", "0", "b", "0", "c", "0", "d"},
	{"ZREMRANGEBYLEX", "zl", "[a", "[a"},
	{"ZPOPMIN", "z"},
	{"BZPOPMIN", "z", "0"},
	{"ZADD", "z", "1", "a", "2", "b"},
	{"ZPOPMAX", "z"},
	{"ZUNIONSTORE", "zu", "1", "zl"},
	{"ZINTERSTORE", "zi", "1", "zl"},
	{"ZDIFFSTORE", "zd", "1", "zl"},
	{"ZRANGESTORE", "zr", "zl", "0", "-1"},
	{"ZINTERSTORE", "zi", "1", "nosuch"},
	{"ZMPOP", "1", "zl", "MIN", "COUNT", "10"},
	{"ZPOPMAX", "z", "10"},
	{"GEOADD", "g", "13.361389", "38.115556", "Palermo"},
	{"GEOSEARCHSTORE", "gs", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"},
	{"GEORADIUS", "g", "15", "37", "200", "km", "STORE", "gr"},
	// streams
	{"XADD", "x", "1-1", "f", "v"},
	{"XADD", "x", "MAXLEN", "1", "2-1", "f", "v"},
	{"XADD", "x", "MAXLEN", "5", "2-2", "f", "v"},
	{"XTRIM", "x", "MAXLEN", "0"},
	{"XTRIM", "x", "MAXLEN", "0"},
	{"XADD", "x", "3-1", "f", "v"},
	{"XDEL", "x", "3-1"},
	{"XDEL", "x", "3-1"},
	{"XSETID", "x", "5-0"},
	{"XGROUP", "CREATE", "x", "g", "$"},
	{"XGROUP", "CREATE", "x2", "g", "$", "MKSTREAM"},
	{"XGROUP", "SETID", "x", "g", "0"},
	{"XGROUP", "CREATECONSUMER", "x", "g", "c1"},
	{"XGROUP", "CREATECONSUMER", "x", "g", "c1"},
	{"XADD", "x", "6-1", "f", "v"},
	{"XREADGROUP", "GROUP", "g", "c2", "STREAMS", "x", ">"},
	{"XCLAIM", "x", "g", "c3", "0", "6-1"},
	{"XAUTOCLAIM", "x", "g", "c4", "0", "0"},
	{"XACK", "x", "g", "6-1"},
	{"XGROUP", "DELCONSUMER", "x", "g", "c1"},
	{"XGROUP", "DELCONSUMER", "x", "g", "nosuch"},
	{"XGROUP", "DESTROY", "x", "g"},
	// a transaction, in order
	{"MULTI"},
	{"SET", "t", "1"},
	{"INCR", "t"},
	{"DEL", "t"},
	{"EXEC"},
	// other databases
	{"SELECT", "3"},
	{"SET", "d3", "v"},
	{"SELECT", "0"},
	// no event
	{"FLUSHALL"},
}

// notifications runs notifyScript against addr with a subscriber in
// protocol proto on '__key*__:*' and returns the messages it received, one
// "channel payload" line each, in order.
func notifications(t *testing.T, addr string, proto int, classes string, script [][]string) []string {
	t.Helper()
	w := servertest.Dial(t, addr)
	sub := servertest.Dial(t, addr)
	servertest.MustDo(t, w, "CONFIG", "SET", "notify-keyspace-events", classes)
	if proto == 3 {
		servertest.MustDo(t, sub, "HELLO", "3")
	}
	servertest.MustDo(t, sub, "PSUBSCRIBE", "__key*__:*")
	servertest.MustDo(t, sub, "SUBSCRIBE", "end")
	for _, cmd := range script {
		if cmd[0] == "!sleep" {
			var ms int
			fmt.Sscan(cmd[1], &ms)
			time.Sleep(time.Duration(ms) * time.Millisecond)
			continue
		}
		if _, err := w.Do(cmd...); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	servertest.MustDo(t, w, "PUBLISH", "end", "end")
	var got []string
	for i := 0; i < 10000; i++ {
		rep, err := sub.Read()
		if err != nil {
			t.Fatalf("reading notifications: %v (after %q)", err, got)
		}
		els, err := servertest.Elements(rep)
		if err != nil || len(els) < 3 {
			t.Fatalf("not a message: %q", rep)
		}
		if string(bulk(els[0])) == "message" {
			return got
		}
		got = append(got, string(bulk(els[2]))+" "+string(bulk(els[3])))
	}
	t.Fatal("no end message")
	return nil
}

// bulk returns a bulk string reply's content.
func bulk(b []byte) []byte {
	s := string(b)
	if i := strings.Index(s, "\r\n"); i >= 0 && (s[0] == '$' || s[0] == '+') {
		s = s[i+2:]
		return []byte(strings.TrimSuffix(s, "\r\n"))
	}
	return b
}

// TestKeyspaceNotificationsAgainstRedis compares the exact notification
// stream (channel and message, in order) of recached and redis-server for
// a sequence of writes producing every event, in RESP2 and RESP3.
func TestKeyspaceNotificationsAgainstRedis(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	redisAddr := servertest.StartRedis(t)
	ourAddr, _ := servertest.StartRecached(t, server.DefaultConfig())
	// Key misses (m, outside A) of the reads that count keyspace_misses.
	misses := [][]string{{"GET", "nosuch"}, {"SET", "k", "v"}, {"GET", "k"}, {"LRANGE", "nosuch", "0", "-1"}, {"LINDEX", "nosuch", "0"}, {"LLEN", "nosuch"}, {"RPUSH", "l", "a"}, {"LLEN", "l"}}
	for _, tc := range []struct {
		proto   int
		classes string
		script  [][]string
		min     int
	}{
		{2, "KEAn", notifyScript, 100},
		{3, "KEAn", notifyScript, 100},
		{2, "Em", misses, 4},
		{3, "Km", misses, 4},
	} {
		t.Run(fmt.Sprintf("RESP%d-%s", tc.proto, tc.classes), func(t *testing.T) {
			want := notifications(t, redisAddr, tc.proto, tc.classes, tc.script)
			got := notifications(t, ourAddr, tc.proto, tc.classes, tc.script)
			t.Logf("%d notifications", len(want))
			if len(want) < tc.min {
				t.Fatalf("redis-server sent only %d notifications: %q", len(want), want)
			}
			for i := 0; i < max(len(want), len(got)); i++ {
				var w, g string
				if i < len(want) {
					w = want[i]
				}
				if i < len(got) {
					g = got[i]
				}
				if w != g {
					t.Fatalf("notification %d: recached %q, redis-server %q\nredis-server: %q\nrecached:     %q", i, g, w, want[max(0, i-3):min(len(want), i+3)], got[max(0, i-3):min(len(got), i+3)])
				}
			}
		})
	}
}

// TestKeyspaceEventsConfig checks CONFIG GET's rendering of the classes
// and that notifications stop when the parameter is emptied.
func TestKeyspaceEventsConfig(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	c := servertest.Dial(t, addr)
	for _, tc := range []struct{ set, get string }{
		{"gKE", "gKE"},
		{"$lshzxeKE", "$lshzxeKE"},
		{"KA", "AK"},
		{"EA", "AE"},
		{"KEAn", "AKE"},
		{"Exn", "xnE"},
		{"tmd", "tdm"},
		{"", ""},
	} {
		servertest.MustDo(t, c, "CONFIG", "SET", "notify-keyspace-events", tc.set)
		rep, _ := c.Do("CONFIG", "GET", "notify-keyspace-events")
		els, _ := servertest.Elements(rep)
		if len(els) != 2 || string(bulk(els[1])) != tc.get {
			t.Errorf("CONFIG SET %q: CONFIG GET %q, want %q", tc.set, rep, tc.get)
		}
	}
	sub := servertest.Dial(t, addr)
	servertest.MustDo(t, sub, "PSUBSCRIBE", "*")
	servertest.MustDo(t, c, "SET", "off", "1")
	servertest.MustDo(t, c, "PUBLISH", "x", "y")
	rep, err := sub.Read()
	if err != nil || !strings.Contains(string(rep), "x\r\n$1\r\ny") {
		t.Fatalf("with notifications off the first message is %q, %v; want PUBLISH's", rep, err)
	}
}

// TestKeyspaceNotificationsWithClientReply compares, byte for byte, what a
// RESP3 connection receives from recached and redis-server while CLIENT
// REPLY turns its replies off, skips one or turns them back on: the
// replies go, subscribe confirmations and messages (keyspace events of its
// own writes among them) still arrive, in order.
func TestKeyspaceNotificationsWithClientReply(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	script := [][]string{
		{"HELLO", "3"},
		{"CONFIG", "SET", "notify-keyspace-events", "KEA"},
		{"CLIENT", "REPLY", "OFF"},
		{"SUBSCRIBE", "ch"},
		{"PSUBSCRIBE", "__keyspace@0__:*"},
		{"SET", "k", "v"},
		{"PUBLISH", "ch", "m1"},
		{"CLIENT", "REPLY", "SKIP"},
		{"ECHO", "off"},
		{"CLIENT", "REPLY", "ON"},
		{"ECHO", "on"},
		{"CLIENT", "REPLY", "SKIP"},
		{"ECHO", "skipped"},
		{"LPUSH", "l", "a"},
		{"CLIENT", "REPLY", "SKIP"},
		{"RPOP", "l"},
		{"CLIENT", "REPLY", "BAD"},
		{"CLIENT", "REPLY", "OFF"},
		{"UNSUBSCRIBE", "ch"},
		{"RESET"},
		{"ECHO", "end"},
	}
	run := func(addr string) string {
		c := servertest.Dial(t, addr)
		var req []byte
		for _, cmd := range script {
			req = append(req, servertest.Encode(cmd...)...)
		}
		if err := c.Send(req); err != nil {
			t.Fatal(err)
		}
		var got []string
		for i := 0; i < 100; i++ {
			rep, err := c.Read()
			if err != nil {
				t.Fatalf("after %q: %v", got, err)
			}
			if strings.HasPrefix(string(rep), "%") || strings.HasPrefix(string(rep), "|") {
				rep = []byte("<map>") // HELLO's server details differ
			}
			got = append(got, string(rep))
			if string(rep) == "$3\r\nend\r\n" {
				return strings.Join(got, "")
			}
		}
		t.Fatalf("no end reply: %q", got)
		return ""
	}
	want := run(servertest.StartRedis(t))
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	if got := run(addr); got != want {
		t.Errorf("recached sent\n%q\nredis-server sent\n%q", got, want)
	}
}

// TestKeyspaceNotificationsToWriter runs notifyScript on a RESP3
// connection subscribed to its own keyspace events and compares, command
// by command, the replies and the pushes it receives with redis-server's.
// Where the pushes fall relative to the reply is not compared: Redis 7.0
// writes them wherever the command's code publishes, even between the
// elements of an aggregate reply, while recached writes them before or
// after the whole reply.
func TestKeyspaceNotificationsToWriter(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	pushRE := regexp.MustCompile(`>4\r\n\$8\r\npmessage\r\n\$10\r\n__key\*__:\*\r\n\$\d+\r\n[^\r]*\r\n\$\d+\r\n[^\r]*\r\n`)
	run := func(addr string) []string {
		c := servertest.Dial(t, addr)
		servertest.MustDo(t, c, "HELLO", "3")
		servertest.MustDo(t, c, "CONFIG", "SET", "notify-keyspace-events", "KEAn")
		servertest.MustDo(t, c, "PSUBSCRIBE", "__key*__:*")
		var out []string
		inMulti := false
		for _, cmd := range notifyScript {
			if cmd[0] == "!sleep" {
				var ms int
				fmt.Sscan(cmd[1], &ms)
				time.Sleep(time.Duration(ms) * time.Millisecond)
				continue
			}
			if cmd[0] == "MULTI" || inMulti && cmd[0] != "EXEC" {
				// Queued: one reply each, no push.
				inMulti = true
				out = append(out, strings.Join(cmd, " ")+": "+servertest.MustDo(t, c, cmd...))
				continue
			}
			inMulti = false
			if err := c.Send(append(servertest.Encode(cmd...), servertest.Encode("PING")...)); err != nil {
				t.Fatal(err)
			}
			var raw string
			for i := 0; ; i++ {
				rep, err := c.Read()
				if err != nil || i > 1000 {
					t.Fatalf("%v: %v", cmd, err)
				}
				if string(rep) == "+PONG\r\n" {
					break
				}
				raw += string(rep)
			}
			pushes := pushRE.FindAllString(raw, -1)
			reply := pushRE.ReplaceAllString(raw, "")
			if cmd[0] == "SPOP" {
				reply = "<random>"
			}
			out = append(out, fmt.Sprintf("%s: reply %q pushes %q", strings.Join(cmd, " "), reply, pushes))
		}
		return out
	}
	want := run(servertest.StartRedis(t))
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	got := run(addr)
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Errorf("recached\n%s\nredis-server\n%s", got[i], want[i])
		}
	}
}

// TestKeyspaceNotificationsBlockedPops compares the events of pops served
// to blocked clients (BLPOP, BLMOVE, BZPOPMIN) with redis-server's: the
// push that wakes them, then the pop, then del when it emptied the key.
func TestKeyspaceNotificationsBlockedPops(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	steps := []struct {
		block []string // sent by the waiter, which blocks
		write []string // then by the writer, which serves it
	}{
		{[]string{"BLPOP", "bl", "0"}, []string{"LPUSH", "bl", "a"}},
		{[]string{"BLPOP", "bl", "0"}, []string{"RPUSH", "bl", "a", "b"}},
		{[]string{"BLMOVE", "src", "dst", "LEFT", "RIGHT", "0"}, []string{"RPUSH", "src", "x"}},
		{[]string{"BZPOPMIN", "bz", "0"}, []string{"ZADD", "bz", "1", "a"}},
		{[]string{"BLMPOP", "0", "1", "bm", "RIGHT", "COUNT", "5"}, []string{"RPUSH", "bm", "1", "2"}},
	}
	run := func(addr string) []string {
		w := servertest.Dial(t, addr)
		waiter := servertest.Dial(t, addr)
		sub := servertest.Dial(t, addr)
		servertest.MustDo(t, w, "CONFIG", "SET", "notify-keyspace-events", "KEAn")
		servertest.MustDo(t, sub, "PSUBSCRIBE", "__key*__:*")
		servertest.MustDo(t, sub, "SUBSCRIBE", "end")
		for _, st := range steps {
			if err := waiter.Send(servertest.Encode(st.block...)); err != nil {
				t.Fatal(err)
			}
			// The waiter is blocked once the server counts it.
			for i := 0; ; i++ {
				info := servertest.MustDo(t, w, "INFO", "clients")
				if strings.Contains(info, "blocked_clients:1\r\n") {
					break
				}
				if i > 500 {
					t.Fatalf("%v did not block", st.block)
				}
				time.Sleep(2 * time.Millisecond)
			}
			servertest.MustDo(t, w, st.write...)
			if _, err := waiter.Read(); err != nil {
				t.Fatal(err)
			}
		}
		servertest.MustDo(t, w, "PUBLISH", "end", "end")
		var got []string
		for i := 0; i < 1000; i++ {
			rep, err := sub.Read()
			if err != nil {
				t.Fatalf("after %q: %v", got, err)
			}
			els, _ := servertest.Elements(rep)
			if string(bulk(els[0])) == "message" {
				return got
			}
			got = append(got, string(bulk(els[2]))+" "+string(bulk(els[3])))
		}
		t.Fatal("no end message")
		return nil
	}
	want := run(servertest.StartRedis(t))
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	if got := run(addr); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("recached:\n%s\nredis-server:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
