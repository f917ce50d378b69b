package ws_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/server/servertest"
)

// TestPushesWaitForTheirCommit: on the WebSocket port, a push frame leaves
// only once a Commit has reached its write, also a write another goroutine
// made while the Commit before the frame's batch ran (WriteDuringCommit).
func TestPushesWaitForTheirCommit(t *testing.T) {
	env, probe := servertest.StartWithCommitProbe(t)
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
