package server_test

import (
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/server/tcp"
)

// TestMinReplicasToWrite: a recached primary with one redis-server
// replica, min-replicas-to-write 1 and min-replicas-max-lag 2. While the
// replica acknowledges, writes run; once it is stopped (SIGSTOP) for
// longer than the lag, every way to write is refused with -NOREPLICAS, as
// Redis 7.0 refuses them: plain writes on RESP and WebSocket, a write
// queued in MULTI (the EXEC then aborts for previous errors), EXEC of a
// write queued while the replica was good (EXECABORT naming NOREPLICAS),
// a DEDUP-wrapped write (its mark does not move), scripts that declared
// flags without no-writes (at their start), FCALL of a writing function,
// and an unflagged script at its first write. Reads and no-writes
// scripts run. Resumed, the replica makes writes run again; killed, it
// is dropped and writes are refused at once, without waiting for the lag.
func TestMinReplicasToWrite(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	s := servertest.StartServers(t, server.Config{Dir: t.TempDir()}, nil)
	c := servertest.Dial(t, s.RESP)
	port, _ := tcp.FreePort()
	replica, stop := redisReplica(t, s.RESP, t.TempDir(), port)
	linkUp(t, replica)
	servertest.MustDo(t, c, "function", "load", "#!lua name=lib\nredis.register_function('w', function() return redis.call('incr', 'fn') end)\nredis.register_function{function_name='r', callback=function() return 1 end, flags={'no-writes'}}")
	if got := infoField(t, c, "replication", "min_slaves_good_slaves"); got != "" {
		t.Errorf("min_slaves_good_slaves shown without min-replicas-to-write: %q", got)
	}
	servertest.MustDo(t, c, "config", "set", "min-replicas-to-write", "1", "min-slaves-max-lag", "2")
	if got := infoField(t, c, "replication", "min_slaves_good_slaves"); got != "1" {
		t.Fatalf("min_slaves_good_slaves = %q, want 1", got)
	}
	if got := servertest.MustDo(t, c, "set", "x", "1"); got != "+OK\r\n" {
		t.Fatalf("SET with a good replica: %q", got)
	}
	queued := servertest.Dial(t, s.RESP)
	servertest.MustDo(t, queued, "multi")
	if got := servertest.MustDo(t, queued, "set", "q", "1"); got != "+QUEUED\r\n" {
		t.Fatalf("SET queued with a good replica: %q", got)
	}

	proc, err := strconv.Atoi(infoField(t, servertest.Dial(t, replica), "server", "process_id"))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(proc, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = syscall.Kill(proc, syscall.SIGCONT)
		}
	}()
	const noReplicas = "-NOREPLICAS Not enough good replicas to write.\r\n"
	waitFor(t, "writes to be refused", func() bool {
		return servertest.MustDo(t, c, "set", "x", "1") == noReplicas
	})
	if got := infoField(t, c, "replication", "min_slaves_good_slaves"); got != "0" {
		t.Errorf("min_slaves_good_slaves = %q, want 0", got)
	}
	ws := dialWS(t, s.WS)
	ws.send(servertest.Encode("set", "x", "3"))
	if got := ws.next(); got != noReplicas {
		t.Errorf("SET on WebSocket: %q", got)
	}
	if got := servertest.MustDo(t, queued, "exec"); got != "-EXECABORT Transaction discarded because of: NOREPLICAS Not enough good replicas to write.\r\n" {
		t.Errorf("EXEC of a write queued while the replica was good: %q", got)
	}
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"get", "x"}, "$1\r\n1\r\n"},
		{[]string{"multi"}, "+OK\r\n"},
		{[]string{"incr", "x"}, noReplicas},
		{[]string{"get", "x"}, "+QUEUED\r\n"},
		{[]string{"exec"}, "-EXECABORT Transaction discarded because of previous errors.\r\n"},
		{[]string{"dedup", "cl", "1", "incr", "n"}, noReplicas},
		{[]string{"eval", "#!lua\nreturn 1", "0"}, noReplicas},
		{[]string{"eval", "#!lua flags=no-writes\nreturn redis.call('get', 'x')", "0"}, "$1\r\n1\r\n"},
		{[]string{"eval", "return redis.call('get', 'x')", "0"}, "$1\r\n1\r\n"},
		{[]string{"fcall", "w", "0"}, noReplicas},
		{[]string{"fcall", "r", "0"}, ":1\r\n"},
		{[]string{"multi"}, "+OK\r\n"},
		{[]string{"eval", "#!lua\nreturn 1", "0"}, noReplicas},
		{[]string{"exec"}, "-EXECABORT Transaction discarded because of previous errors.\r\n"},
	}
	for _, st := range steps {
		if got := servertest.MustDo(t, c, st.args...); got != st.want {
			t.Errorf("%q = %q, want %q", st.args, got, st.want)
		}
	}
	got := servertest.MustDo(t, c, "eval", "redis.call('set', 'y', 1) return 1", "0")
	if !strings.HasPrefix(got, "-NOREPLICAS Not enough good replicas to write.") {
		t.Errorf("unflagged script's write: %q", got)
	}

	if err := syscall.Kill(proc, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed = true
	waitFor(t, "a good replica again", func() bool {
		return infoField(t, c, "replication", "min_slaves_good_slaves") == "1"
	})
	if got := servertest.MustDo(t, c, "dedup", "cl", "1", "incr", "n"); got != ":1\r\n" {
		t.Errorf("DEDUP refused earlier, then run: %q (its mark must not have moved)", got)
	}
	if got := servertest.MustDo(t, c, "get", "q"); got != "$-1\r\n" {
		t.Errorf("the aborted transaction's SET ran: q = %q", got)
	}

	stop(true)
	waitFor(t, "the killed replica to be dropped", func() bool {
		return infoField(t, c, "replication", "connected_slaves") == "0"
	})
	if got := servertest.MustDo(t, c, "set", "x", "4"); got != noReplicas {
		t.Errorf("SET with the replica gone: %q", got)
	}
	servertest.MustDo(t, c, "config", "set", "min-replicas-to-write", "0")
	if got := servertest.MustDo(t, c, "set", "x", "5"); got != "+OK\r\n" {
		t.Errorf("SET with min-replicas-to-write 0: %q", got)
	}
}
