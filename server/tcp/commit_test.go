package tcp_test

import (
	"bytes"
	"testing"

	"github.com/recached/recached/server/servertest"
)

// TestPushesWaitForTheirCommit: on the RESP port, a push leaves only once
// a Commit has reached its write, also a write another goroutine made while
// the Commit before the push's round ran (WriteDuringCommit).
func TestPushesWaitForTheirCommit(t *testing.T) {
	env, probe := servertest.StartWithCommitProbe(t)
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
