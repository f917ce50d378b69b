package ws_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// TestPushesWaitForTheirCommit: a push frame leaves only once a Commit has
// reached the write behind it, also a write made by another goroutine
// while the Commit before a batch of frames runs (the expiry cron during an
// appendfsync always fsync): its push waits for the next batch's Commit.
func TestPushesWaitForTheirCommit(t *testing.T) {
	var probe *servertest.CommitProbe
	env := servertest.StartServers(t, server.Config{}, func(srv *server.Server) {
		probe = servertest.NewCommitProbe(srv)
	})
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	c, resp, err := d.Dial("ws://"+env.WS+"/", nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	resp.Body.Close()
	defer c.Close()
	sub := &client{t: t, c: c}
	sub.expect("+OK\r\n", "SYNC", "k*")
	probe.WriteDuringCommit(t, env.Srv)
	for _, key := range []string{"k1", "k2"} {
		frame := sub.read()
		if !strings.Contains(frame, "$2\r\n"+key+"\r\n") {
			t.Fatalf("push %q, want one for %s", frame, key)
		}
		if !probe.Committed(key) {
			t.Errorf("the push for %s left before a Commit reached its write", key)
		}
	}
}
