package server_test

import (
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/server/tcp"
)

// TestUnblockedClientsClose: a client blocked in BLPOP when its server
// becomes a replica gets -UNBLOCKED and then the connection closes, as
// redis-server does it (compared side by side), on RESP and on
// WebSocket.
func TestUnblockedClientsClose(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	master := servertest.StartRedis(t)
	mh, mp, _ := net.SplitHostPort(master)
	s := servertest.StartServers(t, server.Config{Dir: t.TempDir()}, nil)
	redis := servertest.StartRedis(t)
	const want = "-UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)\r\n"
	for _, addr := range []string{s.RESP, redis} {
		blocked := servertest.Dial(t, addr)
		if err := blocked.Send(servertest.Encode("blpop", "nothing", "0")); err != nil {
			t.Fatal(err)
		}
		var ws wsWire
		if addr == s.RESP {
			ws = dialWS(t, s.WS)
			ws.send(servertest.Encode("blpop", "nothing", "0"))
		}
		c := servertest.Dial(t, addr)
		waitFor(t, "the clients to block", func() bool {
			n := map[bool]string{true: "2", false: "1"}[addr == s.RESP]
			return infoField(t, c, "clients", "blocked_clients") == n
		})
		servertest.MustDo(t, c, "replicaof", mh, mp)
		_ = blocked.Conn().SetReadDeadline(time.Now().Add(10 * time.Second))
		rest, err := io.ReadAll(blocked.Conn())
		if string(rest) != want || err != nil {
			t.Errorf("%s: the blocked client read %q then %v, want %q then the close", addr, rest, err, want)
		}
		if addr == s.RESP {
			if got := ws.rest(); got != want {
				t.Errorf("WebSocket: %q then the close, want %q", got, want)
			}
		}
		servertest.MustDo(t, c, "replicaof", "no", "one")
	}
}

// TestReplicaOffsetBeforeFirstSync: a server started as a replica of a
// master that does not answer shows slave_repl_offset and
// slave_read_repl_offset 1 until its first sync, as redis-server does;
// REPLICAOF at run time shows the server's own offset, 0 when fresh.
func TestReplicaOffsetBeforeFirstSync(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	port, _ := tcp.FreePort() // nothing listens there
	dead := "127.0.0.1 " + strconv.Itoa(port)
	cfg := server.DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.Params = map[string]string{"replicaof": dead}
	rec, _ := servertest.StartRecached(t, cfg)
	redis := servertest.StartRedis(t, "--replicaof", "127.0.0.1", strconv.Itoa(port))
	fields := func(addr string) string {
		c := servertest.Dial(t, addr)
		return infoField(t, c, "replication", "slave_read_repl_offset") + " " + infoField(t, c, "replication", "slave_repl_offset")
	}
	if got, want := fields(rec), fields(redis); got != want || want != "1 1" {
		t.Errorf("started as a replica: recached %q, redis-server %q, want both \"1 1\"", got, want)
	}
	fresh := servertest.Dial(t, servertest.StartRedis(t))
	cfg.Params = nil
	cfg.Dir = t.TempDir()
	rec2, _ := servertest.StartRecached(t, cfg)
	replicaOf := strings.Fields("replicaof 127.0.0.1 " + strconv.Itoa(port))
	servertest.MustDo(t, servertest.Dial(t, rec2), replicaOf...)
	servertest.MustDo(t, fresh, replicaOf...)
	if got, want := fields(rec2), infoField(t, fresh, "replication", "slave_read_repl_offset")+" "+infoField(t, fresh, "replication", "slave_repl_offset"); got != want {
		t.Errorf("REPLICAOF at run time: recached %q, redis-server %q", got, want)
	}
}
