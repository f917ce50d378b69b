package ws_test

import (
	"strings"
	"testing"

	"github.com/recached/recached/server"
	recsync "github.com/recached/recached/sync"
)

// The replies of the strict-mode refusals these tests expect.
const (
	errNoToken  = "-NOPERM this connection has no scope: send SYNC TOKEN <token> first\r\n"
	errOutKey   = "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n"
	errNamesDB  = "-NOPERM this command names a database, and a scoped connection stays in its own\r\n"
	errWholeKey = "-NOPERM this command reads the whole keyspace, which a scoped connection may not do\r\n"
)

func errNoRun(cmd string) string {
	return "-NOPERM this user has no permissions to run the '" + cmd + "' command\r\n"
}

// TestScopeOtherDatabases checks that a scoped connection cannot reach a
// database other than its own: COPY … DB n overwrote database 3 and MOVE
// told whether a key existed there.
func TestScopeOtherDatabases(t *testing.T) {
	const secret = "k"
	e := start(t, server.Config{TokenSecret: secret})
	tok, _ := recsync.SignToken([]byte(secret), []string{"a:*"}, 0)
	tc := e.tcpClient(t)
	for _, cmd := range [][]string{{"SELECT", "3"}, {"SET", "a:x", "db3"}, {"SELECT", "0"}, {"SET", "a:x", "db0"}} {
		if got := tcpDo(t, tc, cmd...); got != "+OK\r\n" {
			t.Fatalf("%q = %q", cmd, got)
		}
	}
	c := e.dial(t)
	c.expect("+OK\r\n", "SYNC", "TOKEN", tok)
	tests := []struct {
		cmd  []string
		want string
	}{
		{[]string{"COPY", "a:x", "a:x", "DB", "3", "REPLACE"}, errNamesDB},
		{[]string{"COPY", "a:x", "a:y", "REPLACE", "db", "0"}, errNamesDB},
		{[]string{"MOVE", "a:x", "3"}, errNamesDB},
		{[]string{"MOVE", "a:x", "0"}, errNamesDB},
		{[]string{"DEDUP", "c", "1", "MOVE", "a:x", "3"}, errNamesDB},
		{[]string{"SWAPDB", "0", "3"}, "-NOPERM this command is not allowed on the WebSocket port\r\n"},
		// Within its own database, COPY runs.
		{[]string{"COPY", "a:x", "a:y"}, ":1\r\n"},
	}
	for _, tc := range tests {
		c.expect(tc.want, tc.cmd...)
	}
	// Database 3 is untouched, and database 0 has its key.
	for _, st := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"GET", "a:x"}, "$3\r\ndb0\r\n"},
		{[]string{"SELECT", "3"}, "+OK\r\n"},
		{[]string{"GET", "a:x"}, "$3\r\ndb3\r\n"},
		{[]string{"EXISTS", "a:y"}, ":0\r\n"},
	} {
		if got := tcpDo(t, tc, st.cmd...); got != st.want {
			t.Fatalf("TCP %q = %q, want %q", st.cmd, got, st.want)
		}
	}
	// A TCP connection that presents a token is held to its database too.
	if got := tcpDo(t, tc, "SYNC", "TOKEN", tok); got != "+OK\r\n" {
		t.Fatalf("TCP SYNC TOKEN = %q", got)
	}
	for _, cmd := range [][]string{{"SELECT", "0"}, {"MOVE", "a:x", "0"}, {"COPY", "a:x", "a:z", "DB", "0"}} {
		if got := tcpDo(t, tc, cmd...); got != errNamesDB {
			t.Fatalf("scoped TCP %q = %q, want %q", cmd, got, errNamesDB)
		}
	}
}

// TestScopeServerState checks that a scoped connection learns nothing of
// the server: INFO answered before any token (process id, executable path,
// key counts per database) while DBSIZE was refused. The commands a client
// needs to connect still run.
func TestScopeServerState(t *testing.T) {
	const secret = "k"
	e := start(t, server.Config{TokenSecret: secret})
	tok, _ := recsync.SignToken([]byte(secret), []string{"a:*"}, 0)
	noTok := e.dial(t)
	withTok := e.dial(t)
	withTok.expect("+OK\r\n", "SYNC", "TOKEN", tok)
	tests := []struct {
		cmd          []string
		noTok, token string // "" : any reply but -NOPERM
	}{
		{[]string{"INFO"}, errNoRun("info"), errNoRun("info")},
		{[]string{"INFO", "keyspace"}, errNoRun("info"), errNoRun("info")},
		{[]string{"LASTSAVE"}, errNoRun("lastsave"), errNoRun("lastsave")},
		{[]string{"DBSIZE"}, errNoToken, errWholeKey},
		{[]string{"PUBSUB", "CHANNELS"}, errNoToken, errWholeKey},
		{[]string{"PING"}, "+PONG\r\n", "+PONG\r\n"},
		{[]string{"ECHO", "x"}, "$1\r\nx\r\n", "$1\r\nx\r\n"},
		{[]string{"HELLO"}, "", ""},
		{[]string{"COMMAND", "COUNT"}, "", ""},
		{[]string{"CLIENT", "ID"}, "", ""},
		{[]string{"TIME"}, "", ""},
	}
	for _, tc := range tests {
		for _, c := range []struct {
			cl   *client
			want string
		}{{noTok, tc.noTok}, {withTok, tc.token}} {
			got := c.cl.do(tc.cmd...)
			if c.want == "" && strings.HasPrefix(got, "-NOPERM") || c.want != "" && got != c.want {
				t.Errorf("%q = %.80q, want %q", tc.cmd, got, c.want)
			}
		}
	}
	// The trusted TCP port still answers INFO.
	if got := tcpDo(t, e.tcpClient(t), "INFO", "server"); !strings.Contains(got, "process_id") {
		t.Fatalf("TCP INFO = %.80q", got)
	}
}

// TestScopeDedupMarks checks that a DEDUP mark moves only for a command
// the connection may run: a WebSocket connection without a token could
// DEDUP victim 18446744073709551615 PING and make every later write of
// client victim answer +DUP.
func TestScopeDedupMarks(t *testing.T) {
	const secret = "k"
	e := start(t, server.Config{TokenSecret: secret})
	tok, _ := recsync.SignToken([]byte(secret), []string{"a:*"}, 0)
	const maxID = "18446744073709551615"
	noTok := e.dial(t)
	withTok := e.dial(t)
	withTok.expect("+OK\r\n", "SYNC", "TOKEN", tok)
	attempts := []struct {
		c    *client
		cmd  []string
		want string
	}{
		{noTok, []string{"DEDUP", "victim", maxID, "PING"}, errNoToken},
		{noTok, []string{"DEDUP", "victim", maxID, "GET"}, errNoToken},
		{noTok, []string{"DEDUP", "victim", maxID, "SET", "a:1", "x"}, errNoToken},
		{withTok, []string{"DEDUP", "victim", maxID, "GET", "b:1"}, errOutKey},
		{withTok, []string{"DEDUP", "victim", maxID, "INFO"}, errNoRun("info")},
		{withTok, []string{"DEDUP", "victim", maxID, "DBSIZE"}, errWholeKey},
		{withTok, []string{"DEDUP", "victim", maxID, "GET"}, "-ERR wrong number of arguments for 'get' command\r\n"},
		{withTok, []string{"DEDUP", "victim", maxID, "NOSUCH"}, "-ERR unknown command 'NOSUCH', with args beginning with: \r\n"},
	}
	for _, a := range attempts {
		a.c.expect(a.want, a.cmd...)
	}
	// Client victim's writes still run: none of the attempts moved its mark.
	victim := e.tcpClient(t)
	if got := tcpDo(t, victim, "DEDUP", "victim", "5", "SET", "b:1", "v"); got != "+OK\r\n" {
		t.Fatalf("victim's write after the attempts = %q, want +OK", got)
	}
	// A scoped connection's own DEDUP works as before.
	withTok.expect("+OK\r\n", "DEDUP", "mine", "1", "SET", "a:1", "v")
	withTok.expect("+DUP\r\n", "DEDUP", "mine", "1", "SET", "a:1", "w")
	withTok.expect("$1\r\nv\r\n", "GET", "a:1")
}

// TestScopeScriptAbortsUnwritten checks strict mode's promise for scripts
// over a real scoped WebSocket connection: a redis.call naming a key
// outside the token's scope aborts the script with -NOPERM before anything
// is written. The keys the script wrote before that key are as they were
// (value and time to live), and nobody heard of those writes: no sync push
// to another scoped client, no keyspace notification, no change counted
// for the log (rdb_changes_since_last_save, which every effect the log
// records counts). A script failing for another reason keeps its writes,
// as in Redis, and they are published.
func TestScopeScriptAbortsUnwritten(t *testing.T) {
	const secret = "k"
	const outKey = "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n"
	e := start(t, server.Config{TokenSecret: secret})
	tok, _ := recsync.SignToken([]byte(secret), []string{"a:*"}, 0)
	tc := e.tcpClient(t)
	for _, cmd := range [][]string{
		{"CONFIG", "SET", "notify-keyspace-events", "KA"},
		{"SET", "a:x", "old", "EX", "1000"},
		{"HSET", "a:h", "f", "v"},
	} {
		tcpDo(t, tc, cmd...)
	}
	sub := e.tcpClient(t)
	if got := tcpDo(t, sub, "PSUBSCRIBE", "__key*__:*"); !strings.HasPrefix(got, "*3\r\n") {
		t.Fatalf("PSUBSCRIBE = %q", got)
	}
	writer, watcher := e.dial(t), e.dial(t)
	writer.expect("+OK\r\n", "SYNC", "TOKEN", tok)
	watcher.expect("+OK\r\n", "SYNC", "TOKEN", tok)
	changes := func() string {
		info := tcpDo(t, tc, "INFO", "persistence")
		i := strings.Index(info, "rdb_changes_since_last_save:")
		if i < 0 {
			t.Fatalf("INFO persistence: %q", info)
		}
		v, _, _ := strings.Cut(info[i:], "\r\n")
		return v
	}
	before := changes()

	tests := []struct {
		name, script string
	}{
		{"undeclared key out of scope", "redis.call('set', 'a:x', 'new') redis.call('hset', 'a:h', 'f', 'w', 'g', 'x') redis.call('set', 'a:y', '1') redis.call('get', 'b:1')"},
		{"out of scope under redis.pcall", "redis.call('del', 'a:x') redis.pcall('set', 'b:1', 'x')"},
		{"out of scope under a Lua pcall", "redis.call('persist', 'a:x') pcall(redis.call, 'incr', 'b:2')"},
	}
	for _, tc := range tests {
		writer.expect(outKey, "EVAL", tc.script, "0")
	}
	for _, c := range []struct{ cmd, want string }{
		{"GET a:x", bulk("old")},
		{"HGETALL a:h", arr("f", "v")},
		{"EXISTS a:y", ":0\r\n"},
		{"EXISTS b:1", ":0\r\n"},
	} {
		if got := tcpDo(t, tc, strings.Fields(c.cmd)...); got != c.want {
			t.Errorf("%s = %q, want %q", c.cmd, got, c.want)
		}
	}
	if got := tcpDo(t, tc, "TTL", "a:x"); got == ":-1\r\n" || got == ":-2\r\n" {
		t.Errorf("a:x lost its time to live: TTL %q", got)
	}
	if after := changes(); after != before {
		t.Errorf("aborted scripts reached the log: %s, then %s", before, after)
	}
	watcher.noFrame()

	// A script failing for another reason keeps its writes: the watcher,
	// the notifications and the log hear of them, in order.
	if got := writer.do("EVAL", "redis.call('set', 'a:z', '1') redis.call('incr', 'a:h')", "0"); !strings.HasPrefix(got, "-WRONGTYPE") {
		t.Fatalf("failing script: %q", got)
	}
	if got := watcher.read(); got != push("SET", "a:z", "1") {
		t.Fatalf("watcher: %q, want the kept write's push", got)
	}
	watcher.noFrame()
	// The writer's subscription hears of its scripts' writes as of
	// anybody's (scriptSession): of the kept one, first.
	if got := writer.read(); got != push("SET", "a:z", "1") {
		t.Fatalf("writer: %q, want the kept write's push", got)
	}
	writer.noFrame()
	if got, err := sub.Read(); err != nil || !strings.Contains(string(got), "__keyspace@0__:a:z") {
		t.Fatalf("first notification after the aborted scripts: %q, %v", got, err)
	}
	if after := changes(); after == before {
		t.Errorf("the kept write was not counted: %s", after)
	}
}
