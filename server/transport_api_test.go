package server

import (
	"testing"
	"time"
)

// waitWake waits for c's next wake-up.
func waitWake(t *testing.T, c *wakeConn) {
	t.Helper()
	select {
	case <-c.wakes:
	case <-time.After(10 * time.Second):
		t.Fatal("no wake-up within 10s")
	}
}

// TestTransportWaiting: a blocking command leaves its session waiting
// with no reply; the answer is collected by Waiting after the wake-up,
// while a peer session of the same connection runs other requests.
func TestTransportWaiting(t *testing.T) {
	srv := New(DefaultConfig())
	s, c := blockSession(t, srv)
	s.SetProtocol(3)
	peerConn := newWakeConn()
	p := s.NewPeer(peerConn)
	if got := run(s, "BLPOP", "q", "0"); got != "" {
		t.Fatalf("BLPOP replied %q", got)
	}
	if w, _ := s.Waiting(); !w || s.Answered() {
		t.Fatal("not waiting")
	}
	if got := run(p, "RPUSH", "q", "v"); got != ":1\r\n" {
		t.Fatalf("peer RPUSH %q", got)
	}
	waitWake(t, c)
	if !s.Answered() {
		t.Fatal("woken but not answered")
	}
	if w, cancelled := s.Waiting(); w || cancelled {
		t.Fatalf("after the answer: waiting %v cancelled %v", w, cancelled)
	}
	if got := string(s.W.B); got != "*2\r\n$1\r\nq\r\n$1\r\nv\r\n" {
		t.Fatalf("answer %q", got)
	}
	srv.CloseSession(p)
	srv.CloseSession(s)
}

// TestTransportCancelWait: CancelWait ends a wait the way CLIENT UNBLOCK
// does, Waiting reports it cancelled with no reply, and the key's next
// push is not taken by it; with nothing waiting it reports false.
func TestTransportCancelWait(t *testing.T) {
	srv := New(DefaultConfig())
	s, c := blockSession(t, srv)
	other := plainSession(t)
	other.srv = srv
	for _, cmd := range [][]string{
		{"BLPOP", "q", "0"},
		{"BZPOPMAX", "z", "0"},
		{"XREAD", "BLOCK", "0", "STREAMS", "st", "$"},
		{"BLMOVE", "q", "d", "LEFT", "LEFT", "0"},
	} {
		s.W.B = s.W.B[:0]
		run(s, cmd...)
		if w, _ := s.Waiting(); !w {
			t.Fatalf("%v: not waiting", cmd)
		}
		if !s.CancelWait() {
			t.Fatalf("%v: CancelWait found nothing", cmd)
		}
		waitWake(t, c)
		if w, cancelled := s.Waiting(); w || !cancelled || len(s.W.B) != 0 {
			t.Fatalf("%v: waiting %v cancelled %v reply %q", cmd, w, cancelled, s.W.B)
		}
		if s.CancelWait() {
			t.Fatalf("%v: cancelled twice", cmd)
		}
	}
	if got := run(s, "RPUSH", "q", "v"); got != ":1\r\n" {
		t.Fatalf("RPUSH %q", got)
	}
	if got := run(s, "LLEN", "q"); got != ":1\r\n" {
		t.Fatalf("a cancelled wait popped: LLEN %q", got)
	}
}

// TestTransportStateful: the table's FlagStateful marks the commands a
// request/response transport refuses, subcommands included.
func TestTransportStateful(t *testing.T) {
	s := plainSession(t)
	for _, c := range [][]string{
		{"MULTI"}, {"exec"}, {"DISCARD"}, {"WATCH", "k"}, {"UNWATCH"}, {"SELECT", "1"},
		{"HELLO"}, {"AUTH", "x"}, {"RESET"}, {"QUIT"}, {"SUBSCRIBE", "c"}, {"PSUBSCRIBE", "c"},
		{"SSUBSCRIBE", "c"}, {"UNSUBSCRIBE"}, {"PUNSUBSCRIBE"}, {"SUNSUBSCRIBE"},
		{"SYNC", "a"}, {"QSUB", "a"}, {"QUNSUB", "a"}, {"KWATCH", "a"}, {"KUNWATCH"},
		{"CLIENT", "REPLY", "OFF"},
	} {
		if !s.Stateful(toArgs(c...)) {
			t.Errorf("%v is not stateful", c)
		}
	}
	for _, c := range [][]string{
		{"GET", "k"}, {"PUBLISH", "c", "m"}, {"CLIENT", "ID"}, {"CLIENT"}, {"DEDUP", "c", "1", "SET", "k", "v"},
		{"EVAL", "return 1", "0"}, {"NOSUCH"}, {"PING"},
	} {
		if s.Stateful(toArgs(c...)) {
			t.Errorf("%v is stateful", c)
		}
	}
}

// TestTransportTransaction: ExecTransaction answers EXEC's array, or the
// first queueing error with nothing run, and leaves no transaction open.
func TestTransportTransaction(t *testing.T) {
	s := plainSession(t)
	s.ExecTransaction([][][]byte{toArgs("SET", "a", "1"), toArgs("INCR", "a"), toArgs("GET", "a")})
	if got := string(s.W.B); got != "*3\r\n+OK\r\n:2\r\n$1\r\n2\r\n" {
		t.Fatalf("transaction %q", got)
	}
	s.W.B = s.W.B[:0]
	s.ExecTransaction([][][]byte{toArgs("SET", "b", "1"), toArgs("GET")})
	if got := string(s.W.B); got != "-ERR wrong number of arguments for 'get' command\r\n" {
		t.Fatalf("refused transaction %q", got)
	}
	if got := run(s, "EXISTS", "b"); got != ":0\r\n" {
		t.Fatalf("a refused transaction ran: %q", got)
	}
	if got := run(s, "EXEC"); got != "-ERR EXEC without MULTI\r\n" {
		t.Fatalf("transaction left open: %q", got)
	}
}

// TestTransportKeyScope: SetKeyScope scopes keys as a sync token does,
// with channels decided by the given function; nil patterns leave keys
// unscoped but channels checked.
func TestTransportKeyScope(t *testing.T) {
	s := plainSession(t)
	s.SetKeyScope([]string{"user:*"}, func(c []byte) bool { return string(c) == "ok" })
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"SET", "user:1", "x"}, "+OK\r\n"},
		{[]string{"SET", "other", "x"}, "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n"},
		{[]string{"PUBLISH", "ok", "m"}, ":0\r\n"},
		{[]string{"PUBLISH", "user:1", "m"}, "-NOPERM this user has no permissions to access one of the channels used as arguments\r\n"},
		{[]string{"FLUSHALL"}, "-NOPERM this command reads the whole keyspace, which a scoped connection may not do\r\n"},
	} {
		if got := run(s, c.args...); got != c.want {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
	}
	if !s.Scoped() {
		t.Fatal("not scoped")
	}
	s.SetKeyScope(nil, func(c []byte) bool { return false })
	if s.Scoped() {
		t.Fatal("scoped by nil patterns")
	}
	if got := run(s, "SET", "other", "x"); got != "+OK\r\n" {
		t.Errorf("unscoped SET %q", got)
	}
	if got := run(s, "PUBLISH", "ok", "m"); got != "-NOPERM this user has no permissions to access one of the channels used as arguments\r\n" {
		t.Errorf("PUBLISH refused by channels: %q", got)
	}
	if !s.SelectDB(3) || s.DBIndex != 3 || s.SelectDB(16) || s.SelectDB(-1) || s.DBIndex != 3 {
		t.Fatal("SelectDB")
	}
}
