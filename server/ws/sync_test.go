package ws_test

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/server"
	recsync "github.com/recached/recached/sync"
)

// TestMutationPushes checks that writes by other connections reach a SYNCed
// WebSocket client as the effects' pushes, that keys out of its scope do
// not, and that the writer never hears of its own writes.
func TestMutationPushes(t *testing.T) {
	e := start(t, server.Config{})
	a := e.dial(t)
	b := e.dial(t)
	tc := e.tcpClient(t)
	a.expect("+OK\r\n", "SYNC", "user:*", "room:1")
	b.expect("+OK\r\n", "SYNC", "user:*")

	tcpDo(t, tc, "SET", "user:1", "alice")
	tcpDo(t, tc, "SET", "other", "x")
	tcpDo(t, tc, "SET", "room:1", "r")
	tcpDo(t, tc, "INCR", "user:n")
	tcpDo(t, tc, "PEXPIREAT", "user:1", "99999999999999")
	tcpDo(t, tc, "PERSIST", "user:1")
	tcpDo(t, tc, "DEL", "user:1", "other")
	for _, want := range []string{
		push("SET", "user:1", "alice"),
		push("SET", "room:1", "r"),
		push("SET", "user:n", "1", "KEEPTTL"),
		push("PEXPIREAT", "user:1", "99999999999999"),
		push("PERSIST", "user:1"),
		push("DEL", "user:1"),
	} {
		if got := a.read(); got != want {
			t.Fatalf("a: got %q, want %q", got, want)
		}
	}
	a.noFrame()
	for _, want := range []string{
		push("SET", "user:1", "alice"),
		push("SET", "user:n", "1", "KEEPTTL"),
		push("PEXPIREAT", "user:1", "99999999999999"),
		push("PERSIST", "user:1"),
		push("DEL", "user:1"),
	} {
		if got := b.read(); got != want {
			t.Fatalf("b: got %q, want %q", got, want)
		}
	}
	b.noFrame()

	// b writes: a hears of it, b does not.
	b.expect("+OK\r\n", "SET", "user:2", "bob")
	if got := a.read(); got != push("SET", "user:2", "bob") {
		t.Fatalf("a after b's write: %q", got)
	}
	b.noFrame()

	// A new SYNC replaces the scope.
	a.expect("+OK\r\n", "SYNC", "room:*")
	tcpDo(t, tc, "SET", "user:3", "c")
	tcpDo(t, tc, "SET", "room:2", "d")
	if got := a.read(); got != push("SET", "room:2", "d") {
		t.Fatalf("a after re-SYNC: %q", got)
	}
	a.noFrame()

	// Expiry pushes DEL.
	tcpDo(t, tc, "SET", "room:tmp", "x", "PX", "30")
	if got := a.read(); !strings.HasPrefix(got, ">5\r\n"+bulk("SET")+bulk("room:tmp")+bulk("x")+bulk("PXAT")) {
		t.Fatalf("a: SET with PX: %q", got)
	}
	if got := a.read(); got != push("DEL", "room:tmp") {
		t.Fatalf("a after expiry: %q", got)
	}
}

// TestSyncOnTCP checks that a RESP connection can SYNC too and receives the
// same push frames.
func TestSyncOnTCP(t *testing.T) {
	e := start(t, server.Config{})
	sub := e.tcpClient(t)
	w := e.dial(t)
	if got := tcpDo(t, sub, "SYNC", "k*"); got != "+OK\r\n" {
		t.Fatalf("SYNC on TCP: %q", got)
	}
	w.expect("+OK\r\n", "SET", "k1", "v")
	got, err := sub.Read()
	if err != nil || string(got) != push("SET", "k1", "v") {
		t.Fatalf("TCP push: %q, %v", got, err)
	}
	if got := tcpDo(t, sub, "KWATCH", "k1"); got != ":1\r\n" {
		t.Fatalf("KWATCH on TCP: %q", got)
	}
	w.expect(":1\r\n", "DEL", "k1")
	for _, want := range []string{push("DEL", "k1"), keychange("k1", "$-1\r\n")} {
		if got, err := sub.Read(); err != nil || string(got) != want {
			t.Fatalf("TCP: %q, %v; want %q", got, err, want)
		}
	}
}

// TestTokens covers SYNC TOKEN: valid, padded, malformed, wrong signature,
// expired; a refused token keeps the previous scope.
func TestTokens(t *testing.T) {
	const secret = "s3cret"
	e := start(t, server.Config{TokenSecret: secret})
	sign := func(expiry int64, patterns ...string) string {
		tok, err := recsync.SignToken([]byte(secret), patterns, expiry)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	good := sign(0, "user:1:*", "chan:*")
	body, sig, _ := strings.Cut(good, ".")
	pad := func(s string) string { return s + strings.Repeat("=", (4-len(s)%4)%4) }
	other := sign(time.Now().Add(time.Hour).Unix(), "room:*")
	forged, _ := recsync.SignToken([]byte("wrong"), []string{"*"}, 0)
	c := e.dial(t)
	tests := []struct {
		token string
		want  string
	}{
		{"", "-NOPERM invalid token\r\n"},
		{"garbage", "-NOPERM invalid token\r\n"},
		{body + "." + sig[:10], "-NOPERM invalid token\r\n"},
		{forged, "-NOPERM invalid token\r\n"},
		{base64.RawURLEncoding.EncodeToString([]byte("*")) + "." + sig, "-NOPERM invalid token\r\n"},
		{sign(time.Now().Add(-time.Minute).Unix(), "user:1:*"), "-NOPERM token expired\r\n"},
		{good, "+OK\r\n"},
		{pad(body) + "." + pad(sig), "+OK\r\n"},
		{"bad.token", "-NOPERM invalid token\r\n"},
		{sign(1, "room:*"), "-NOPERM token expired\r\n"},
	}
	for _, tc := range tests {
		c.expect(tc.want, "SYNC", "TOKEN", tc.token)
	}
	// The refused tokens left the good token's scope in place.
	c.expect("+OK\r\n", "SET", "user:1:name", "x")
	c.expect("-NOPERM this user has no permissions to access one of the keys used as arguments\r\n", "SET", "room:1", "x")
	// A credential swap: the new token's scope replaces the old.
	c.expect("+OK\r\n", "SYNC", "TOKEN", other)
	c.expect("+OK\r\n", "SET", "room:1", "x")
	c.expect("-NOPERM this user has no permissions to access one of the keys used as arguments\r\n", "GET", "user:1:name")
	c.expect("-ERR syntax error\r\n", "SYNC", "TOKEN", good, "extra")
}

// TestStrictMode checks the scope rules of a server with a token secret.
func TestStrictMode(t *testing.T) {
	const secret = "k"
	e := start(t, server.Config{TokenSecret: secret})
	tok, _ := recsync.SignToken([]byte(secret), []string{"in:*", "chan:*"}, 0)
	const noToken = "-NOPERM this connection has no scope: send SYNC TOKEN <token> first\r\n"
	const outKey = "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n"
	const outChan = "-NOPERM this user has no permissions to access one of the channels used as arguments\r\n"

	// Before a token: no key-bearing command, no open-mode SYNC.
	c := e.dial(t)
	c.expect("+PONG\r\n", "PING")
	c.expect(noToken, "GET", "in:1")
	c.expect(noToken, "QSUB", "in:*")
	c.expect(noToken, "KWATCH", "in:1")
	c.expect(noToken, "SUBSCRIBE", "chan:1")
	c.expect(noToken, "PUBLISH", "chan:1", "x")
	c.expect(noToken, "SCAN", "0")
	c.expect("-NOPERM open-mode SYNC is disabled on this server: send SYNC TOKEN <token>\r\n", "SYNC", "in:*")

	// With the token: keys and channels must be in scope.
	c.expect("+OK\r\n", "SYNC", "TOKEN", tok)
	c.expect("+OK\r\n", "SET", "in:1", "v")
	c.expect(outKey, "SET", "out:1", "v")
	c.expect(outKey, "MSET", "in:2", "a", "out:2", "b")
	c.expect(outKey, "RENAME", "in:1", "out:1")
	c.expect(outKey, "KWATCH", "in:1", "out:1")
	c.expect(":1\r\n", "KWATCH", "in:1")
	c.expect("-NOPERM this command reads the whole keyspace, which a scoped connection may not do\r\n", "SCAN", "0")
	c.expect(outChan, "SUBSCRIBE", "chan:1", "news")
	c.expect(outChan, "PUBLISH", "news", "x")
	c.expect(":0\r\n", "PUBLISH", "chan:1", "x")
	c.expect("-NOPERM open-mode SYNC is disabled on this server: send SYNC TOKEN <token>\r\n", "SYNC", "*")

	// Nothing of the refused MSET ran; the trusted TCP port is unchecked.
	tc := e.tcpClient(t)
	if got := tcpDo(t, tc, "MGET", "in:2", "out:2"); got != "*2\r\n$-1\r\n$-1\r\n" {
		t.Fatalf("MGET after a refused MSET = %q", got)
	}
	if got := tcpDo(t, tc, "SET", "out:9", "x"); got != "+OK\r\n" {
		t.Fatalf("TCP SET out of any scope = %q", got)
	}
	// A TCP connection that presents a token is checked too.
	if got := tcpDo(t, tc, "SYNC", "TOKEN", tok); got != "+OK\r\n" {
		t.Fatalf("TCP SYNC TOKEN = %q", got)
	}
	if got := tcpDo(t, tc, "GET", "out:9"); got != outKey {
		t.Fatalf("TCP GET out of scope after SYNC TOKEN = %q", got)
	}

	// Pushes reach the scoped client only for keys in scope; a transaction
	// with an out-of-scope command is aborted.
	w := e.tcpClient(t)
	tcpDo(t, w, "SET", "out:3", "x")
	tcpDo(t, w, "SET", "in:3", "y")
	if got := c.read(); got != push("SET", "in:3", "y") {
		t.Fatalf("scoped push: %q", got)
	}
	c.noFrame()
	c.expect("+OK\r\n", "MULTI")
	c.expect(outKey, "GET", "out:3")
	c.expect("-EXECABORT Transaction discarded because of previous errors.\r\n", "EXEC")

	// RESET forgets the token: the connection is scope-less again.
	c.expect("+RESET\r\n", "RESET")
	c.expect(noToken, "GET", "in:1")
}

// TestQSub covers live queries: the qstate reply, hydration pushes, the
// limits, re-registration, QUNSUB and keychange pushes.
func TestQSub(t *testing.T) {
	e := start(t, server.Config{})
	tc := e.tcpClient(t)
	c := e.dial(t)
	tcpDo(t, tc, "MSET", "q:a", "1", "q:b", "2", "x:c", "3")
	want := "*6\r\n" + bulk("qstate") + bulk("q:*") + bulk("q:a") + bulk("1") + bulk("q:b") + bulk("2")
	c.expect(want, "QSUB", "q:*")
	// A live query brings mutation pushes and keychanges.
	tcpDo(t, tc, "SET", "q:a", "10")
	for _, w := range []string{push("SET", "q:a", "10"), keychange("q:a", bulk("10"))} {
		if got := c.read(); got != w {
			t.Fatalf("got %q, want %q", got, w)
		}
	}
	tcpDo(t, tc, "DEL", "q:b")
	for _, w := range []string{push("DEL", "q:b"), keychange("q:b", "$-1\r\n")} {
		if got := c.read(); got != w {
			t.Fatalf("got %q, want %q", got, w)
		}
	}
	// The writer gets neither.
	c.expect("+OK\r\n", "SET", "q:z", "self")
	c.noFrame()
	// Re-QSUB re-sends the state; RESP2 and RESP3 alike get an array.
	c.do("HELLO", "3")
	want = "*6\r\n" + bulk("qstate") + bulk("q:*") + bulk("q:a") + bulk("10") + bulk("q:z") + bulk("self")
	c.expect(want, "QSUB", "q:*")
	c.expect(":1\r\n", "QUNSUB", "q:*")
	c.expect(":0\r\n", "QUNSUB", "q:*")
	tcpDo(t, tc, "SET", "q:a", "11")
	c.noFrame()

	// Non-string keys: a marker in qstate, then DEL + content pushes.
	if e.srv.Table().Lookup([]byte("hset")) != nil {
		tcpDo(t, tc, "HSET", "h:1", "f", "v")
		got := c.do("QSUB", "h:*")
		if got != "*4\r\n"+bulk("qstate")+bulk("h:*")+bulk("h:1")+"+hash\r\n" {
			t.Fatalf("QSUB of a hash: %q", got)
		}
		for _, w := range []string{push("DEL", "h:1"), push("HSET", "h:1", "f", "v")} {
			if got := c.read(); got != w {
				t.Fatalf("hydration: got %q, want %q", got, w)
			}
		}
		tcpDo(t, tc, "HSET", "h:1", "g", "w")
		for _, w := range []string{push("HSET", "h:1", "g", "w"), keychange("h:1", "+hash\r\n")} {
			if got := c.read(); got != w {
				t.Fatalf("hash write: got %q, want %q", got, w)
			}
		}
		c.expect(":1\r\n", "QUNSUB", "h:*")
	}

	// At most 64 live queries.
	for i := 0; i < recsync.MaxQueries; i++ {
		got := c.do("QSUB", fmt.Sprintf("none:%d:*", i))
		if !strings.HasPrefix(got, "*2\r\n") {
			t.Fatalf("QSUB %d: %q", i, got)
		}
	}
	c.expect("-ERR too many live queries: at most 64 per connection\r\n", "QSUB", "one:more")
	if got := c.do("QSUB", "none:0:*"); !strings.HasPrefix(got, "*2\r\n") {
		t.Fatalf("re-QSUB at the limit: %q", got)
	}
	c.expect(":1\r\n", "QUNSUB", "none:0:*")

	// More than 10 000 matching keys: an error and nothing registered.
	args := []string{"MSET"}
	for i := 0; i <= recsync.MaxQueryKeys; i++ {
		args = append(args, "big:"+strconv.Itoa(i), "v")
	}
	tcpDo(t, tc, args...)
	c.expect("-ERR live query matches more than 10000 keys\r\n", "QSUB", "big:*")
	c.expect(":0\r\n", "QUNSUB", "big:*")
	tcpDo(t, tc, "DEL", "big:0")
	if got := c.do("QSUB", "big:*"); !strings.HasPrefix(got, "*20002\r\n") {
		t.Fatalf("QSUB of exactly 10000 keys: %.40q", got)
	}
	c.expect("+OK\r\n", "MULTI")
	c.expect("-ERR QSUB inside MULTI is not allowed\r\n", "QSUB", "x:*")
	c.expect("*0\r\n", "EXEC")
}

// TestKWatch covers watched keys: counts, the limit, KUNWATCH, keychange
// values for strings, deletions, expiry and other types.
func TestKWatch(t *testing.T) {
	e := start(t, server.Config{})
	tc := e.tcpClient(t)
	c := e.dial(t)
	c.expect(":2\r\n", "KWATCH", "w:1", "w:2", "w:1")
	c.expect(":3\r\n", "KWATCH", "w:3")
	tcpDo(t, tc, "SET", "w:1", "a")
	tcpDo(t, tc, "SET", "unwatched", "a")
	tcpDo(t, tc, "SET", "w:2", "b", "PX", "20")
	for _, w := range []string{keychange("w:1", bulk("a")), keychange("w:2", bulk("b")), keychange("w:2", "$-1\r\n")} {
		if got := c.read(); got != w {
			t.Fatalf("got %q, want %q", got, w)
		}
	}
	c.expect(":2\r\n", "KUNWATCH", "w:1")
	tcpDo(t, tc, "SET", "w:1", "gone")
	c.noFrame()
	c.expect(":0\r\n", "KUNWATCH")
	keys := []string{"KWATCH"}
	for i := 0; i < recsync.MaxWatched; i++ {
		keys = append(keys, "k"+strconv.Itoa(i))
	}
	c.expect(":1024\r\n", keys...)
	c.expect("-ERR too many watched keys: at most 1024 per connection\r\n", "KWATCH", "one-more")
	c.expect(":1024\r\n", "KWATCH", "k0")
	c.expect(":1023\r\n", "KUNWATCH", "k0", "nope")
}

// TestRenameAcrossScope checks RENAME, COPY and MOVE into and out of a
// connection's scope.
func TestRenameAcrossScope(t *testing.T) {
	e := start(t, server.Config{})
	tc := e.tcpClient(t)
	c := e.dial(t)
	c.expect("+OK\r\n", "SYNC", "in:*")
	steps := []struct {
		cmd  []string
		want []string
	}{
		{[]string{"SET", "out:a", "v1"}, nil},
		{[]string{"PEXPIREAT", "out:a", "99999999999999"}, nil},
		{[]string{"RENAME", "out:a", "in:a"}, []string{push("SET", "in:a", "v1"), push("PEXPIREAT", "in:a", "99999999999999")}},
		{[]string{"RENAME", "in:a", "in:b"}, []string{push("RENAME", "in:a", "in:b")}},
		{[]string{"RENAME", "in:b", "out:b"}, []string{push("DEL", "in:b")}},
		{[]string{"COPY", "out:b", "in:c"}, []string{push("SET", "in:c", "v1"), push("PEXPIREAT", "in:c", "99999999999999")}},
		{[]string{"MOVE", "in:c", "3"}, []string{push("DEL", "in:c")}},
		{[]string{"FLUSHDB"}, []string{push("FLUSHDB")}},
		// Writes to another database are not this client's; SWAPDB brings
		// them in: a flush, then the re-creation of what is in scope.
		{[]string{"SELECT", "1"}, nil},
		{[]string{"SET", "in:s", "v"}, nil},
		{[]string{"SET", "out:s", "v"}, nil},
		{[]string{"SWAPDB", "0", "1"}, []string{push("FLUSHDB"), push("SET", "in:s", "v")}},
		{[]string{"FLUSHALL"}, []string{push("FLUSHDB")}},
	}
	for _, st := range steps {
		tcpDo(t, tc, st.cmd...)
		for _, w := range st.want {
			if got := c.read(); got != w {
				t.Fatalf("%q: got %q, want %q", st.cmd, got, w)
			}
		}
	}
	c.noFrame()
}

// TestPubSubOnWebSocket checks pub/sub over the bridge: SUBSCRIBE replies
// once with the subscription count, deliveries are pushes, and in strict
// mode pattern deliveries are filtered to the token's scope.
func TestPubSubOnWebSocket(t *testing.T) {
	const secret = "k"
	e := start(t, server.Config{TokenSecret: secret})
	tok, _ := recsync.SignToken([]byte(secret), []string{"chan:*"}, 0)
	c := e.dial(t)
	c.expect("+OK\r\n", "SYNC", "TOKEN", tok)
	c.expect(":2\r\n", "SUBSCRIBE", "chan:1", "chan:2")
	c.expect(":3\r\n", "PSUBSCRIBE", "*")
	c.expect("$2\r\nok\r\n", "ECHO", "ok") // any command runs while subscribed
	tc := e.tcpClient(t)
	tcpDo(t, tc, "PUBLISH", "other", "hidden")
	tcpDo(t, tc, "PUBLISH", "chan:1", "hi")
	for _, want := range []string{
		push("message", "chan:1", "hi"),
		push("pmessage", "*", "chan:1", "hi"),
	} {
		if got := c.read(); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	c.noFrame()
	c.expect(":2\r\n", "UNSUBSCRIBE", "chan:1")
}

// TestCommandDocs checks the sync commands are described by COMMAND, as
// every table entry is.
func TestCommandDocs(t *testing.T) {
	e := start(t, server.Config{})
	tc := e.tcpClient(t)
	for _, name := range []string{"sync", "qsub", "qunsub", "kwatch", "kunwatch"} {
		got := tcpDo(t, tc, "COMMAND", "INFO", name)
		if !strings.HasPrefix(got, "*1\r\n*") || !strings.Contains(got, name) {
			t.Errorf("COMMAND INFO %s = %.120q", name, got)
		}
		if got := tcpDo(t, tc, "COMMAND", "DOCS", name); !strings.Contains(got, "summary") {
			t.Errorf("COMMAND DOCS %s = %.120q", name, got)
		}
	}
}

// TestHydration checks the pushes that follow a qstate for every non-string
// type, and the re-creation a RENAME into scope pushes.
func TestHydration(t *testing.T) {
	e := start(t, server.Config{})
	tc := e.tcpClient(t)
	c := e.dial(t)
	tcpDo(t, tc, "HSET", "y:h", "f", "1")
	tcpDo(t, tc, "RPUSH", "y:l", "a", "b", "a")
	tcpDo(t, tc, "SADD", "y:s", "3", "1", "2")
	tcpDo(t, tc, "ZADD", "y:z", "2", "b", "1.5", "a")
	tcpDo(t, tc, "SET", "y:str", "v")
	want := "*12\r\n" + bulk("qstate") + bulk("y:*") + bulk("y:h") + "+hash\r\n" + bulk("y:l") + "+list\r\n" +
		bulk("y:s") + "+set\r\n" + bulk("y:str") + bulk("v") + bulk("y:z") + "+zset\r\n"
	c.expect(want, "QSUB", "y:*")
	for _, w := range []string{
		push("DEL", "y:h"), push("HSET", "y:h", "f", "1"),
		push("DEL", "y:l"), push("RPUSH", "y:l", "a", "b", "a"),
		push("DEL", "y:s"), push("SADD", "y:s", "1", "2", "3"),
		push("DEL", "y:z"), push("ZADD", "y:z", "1.5", "a", "2", "b"),
	} {
		if got := c.read(); got != w {
			t.Fatalf("got %q, want %q", got, w)
		}
	}
	c.noFrame()
	// A list renamed into the scope of a SYNCed client is re-created, with
	// its time to live.
	s := e.dial(t)
	s.expect("+OK\r\n", "SYNC", "in:*")
	tcpDo(t, tc, "RPUSH", "out:l", "x", "y")
	tcpDo(t, tc, "PEXPIREAT", "out:l", "99999999999999")
	tcpDo(t, tc, "RENAME", "out:l", "in:l")
	for _, w := range []string{push("DEL", "in:l"), push("RPUSH", "in:l", "x", "y"), push("PEXPIREAT", "in:l", "99999999999999")} {
		if got := s.read(); got != w {
			t.Fatalf("got %q, want %q", got, w)
		}
	}
	s.noFrame()

	// Big values are re-created 512 elements per push.
	args := []string{"SADD", "big:s"}
	for i := 0; i < 1100; i++ {
		args = append(args, "m"+strconv.Itoa(i))
	}
	tcpDo(t, tc, args...)
	if got := c.do("QSUB", "big:*"); got != "*4\r\n"+bulk("qstate")+bulk("big:*")+bulk("big:s")+"+set\r\n" {
		t.Fatalf("QSUB big:* = %q", got)
	}
	if got := c.read(); got != push("DEL", "big:s") {
		t.Fatalf("got %q", got)
	}
	members := map[string]bool{}
	for _, n := range []int{512, 512, 76} {
		f := c.read()
		els := parseStrings(t, []byte("*"+f[1:]))
		if len(els) != 2+n || els[0] != "SADD" || els[1] != "big:s" {
			t.Fatalf("chunk of %d: %.80q", n, f)
		}
		for _, m := range els[2:] {
			members[m] = true
		}
	}
	if len(members) != 1100 {
		t.Fatalf("re-created %d distinct members, want 1100", len(members))
	}
	c.noFrame()
}
