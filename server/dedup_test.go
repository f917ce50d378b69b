package server_test

import (
	"strings"
	"testing"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

func TestDedup(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	c := servertest.Dial(t, addr)
	long64 := strings.Repeat("x", 64)
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"DEDUP", "a", "0", "INCR", "n"}, ":1\r\n"}, // no mark yet: id 0 runs
		{[]string{"DEDUP", "a", "0", "INCR", "n"}, "+DUP\r\n"},
		{[]string{"DEDUP", "a", "7", "INCR", "n"}, ":2\r\n"},
		{[]string{"DEDUP", "a", "5", "INCR", "n"}, "+DUP\r\n"},
		{[]string{"DEDUP", "a", "7", "INCR", "n"}, "+DUP\r\n"},
		{[]string{"DEDUP", "b", "1", "INCR", "n"}, ":3\r\n"}, // separate marks
		{[]string{"DEDUP", "a", "18446744073709551615", "INCR", "n"}, ":4\r\n"},
		{[]string{"DEDUP", "a", "18446744073709551615", "INCR", "n"}, "+DUP\r\n"},
		{[]string{"DEDUP", "a", "18446744073709551616", "INCR", "n"}, "-ERR DEDUP wire id must be a decimal unsigned 64-bit integer\r\n"},
		{[]string{"DEDUP", "a", "-1", "INCR", "n"}, "-ERR DEDUP wire id must be a decimal unsigned 64-bit integer\r\n"},
		{[]string{"DEDUP", "a", "x", "INCR", "n"}, "-ERR DEDUP wire id must be a decimal unsigned 64-bit integer\r\n"},
		{[]string{"DEDUP", "a", "08", "INCR", "n"}, "-ERR DEDUP wire id must be a decimal unsigned 64-bit integer\r\n"},
		{[]string{"DEDUP", long64, "1", "INCR", "n"}, ":5\r\n"},
		{[]string{"DEDUP", long64 + "x", "1", "INCR", "n"}, "-ERR DEDUP client id must be 1 to 64 bytes\r\n"},
		{[]string{"DEDUP", "", "1", "INCR", "n"}, "-ERR DEDUP client id must be 1 to 64 bytes\r\n"},
		{[]string{"DEDUP", "a", "1"}, "-ERR wrong number of arguments for 'dedup' command\r\n"},
		// A wrapped command that fails still raises the mark.
		{[]string{"SET", "s", "text"}, "+OK\r\n"},
		{[]string{"DEDUP", "c", "10", "INCR", "s"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"DEDUP", "c", "10", "INCR", "n"}, "+DUP\r\n"},
		{[]string{"DEDUP", "c", "11", "GET"}, "-ERR wrong number of arguments for 'get' command\r\n"},
		{[]string{"DEDUP", "c", "11", "INCR", "n"}, "+DUP\r\n"},
		{[]string{"DEDUP", "c", "12", "NOSUCH"}, "-ERR unknown command 'NOSUCH', with args beginning with: \r\n"},
		{[]string{"DEDUP", "c", "12", "INCR", "n"}, "+DUP\r\n"},
		// Connection-scoped commands are never wrapped, and raise no mark.
		{[]string{"DEDUP", "d", "5", "SUBSCRIBE", "ch"}, "-ERR DEDUP cannot wrap 'subscribe': it is connection-scoped and must run on every replay\r\n"},
		{[]string{"DEDUP", "d", "5", "MULTI"}, "-ERR DEDUP cannot wrap 'multi': it is connection-scoped and must run on every replay\r\n"},
		{[]string{"DEDUP", "d", "5", "DEDUP", "e", "1", "INCR", "n"}, "-ERR DEDUP cannot wrap 'dedup': it is connection-scoped and must run on every replay\r\n"},
		{[]string{"DEDUP", "d", "5", "INCR", "n"}, ":6\r\n"},
		// Inside a transaction.
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"DEDUP", "t", "1", "INCR", "n"}, "+QUEUED\r\n"},
		{[]string{"DEDUP", "t", "1", "INCR", "n"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "*2\r\n:7\r\n+DUP\r\n"},
		{[]string{"GET", "n"}, "$1\r\n7\r\n"},
	}
	for i, st := range steps {
		rep, err := c.Do(st.args...)
		if err != nil || string(rep) != st.want {
			t.Fatalf("step %d %q: got %q (%v), want %q", i, st.args, rep, err, st.want)
		}
	}
	// Statistics count the wrapped command.
	rep, _ := c.Do("INFO", "commandstats")
	if !strings.Contains(string(rep), "cmdstat_incr:calls=") {
		t.Fatalf("INFO commandstats lacks incr: %q", rep)
	}
}

func TestDedupNoAuth(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.RequirePass = "pw"
	addr, _ := servertest.StartRecached(t, cfg)
	c := servertest.Dial(t, addr)
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"DEDUP", "a", "5", "INCR", "n"}, "-NOAUTH Authentication required.\r\n"},
		{[]string{"AUTH", "pw"}, "+OK\r\n"},
		{[]string{"DEDUP", "a", "5", "INCR", "n"}, ":1\r\n"}, // the refused try moved no mark
	}
	for i, st := range steps {
		rep, err := c.Do(st.args...)
		if err != nil || string(rep) != st.want {
			t.Fatalf("step %d %q: got %q (%v), want %q", i, st.args, rep, err, st.want)
		}
	}
}
