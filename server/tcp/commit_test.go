package tcp_test

import (
	"bytes"
	"testing"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// TestPushesWaitForTheirCommit: a push leaves only once a Commit has
// reached the write behind it, also a write made by another goroutine
// while the Commit before a round of pushes runs (the expiry cron during an
// appendfsync always fsync): its push waits for the next Commit.
func TestPushesWaitForTheirCommit(t *testing.T) {
	var probe *servertest.CommitProbe
	env := servertest.StartServers(t, server.Config{}, func(srv *server.Server) {
		probe = servertest.NewCommitProbe(srv)
	})
	sub := servertest.Dial(t, env.RESP)
	servertest.MustDo(t, sub, "HELLO", "3")
	if got := servertest.MustDo(t, sub, "SYNC", "k*"); got != "+OK\r\n" {
		t.Fatalf("SYNC: %q", got)
	}
	probe.WriteDuringCommit(t, env.Srv)
	for _, key := range []string{"k1", "k2"} {
		rep, err := sub.Read()
		if err != nil {
			t.Fatalf("push for %s: %v", key, err)
		}
		if !bytes.Contains(rep, []byte("$2\r\n"+key+"\r\n")) {
			t.Fatalf("push %q, want one for %s", rep, key)
		}
		if !probe.Committed(key) {
			t.Errorf("the push for %s left before a Commit reached its write", key)
		}
	}
}
