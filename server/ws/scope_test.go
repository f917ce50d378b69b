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
