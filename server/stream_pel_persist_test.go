package server

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPendingDeliveryTimeSurvivesReplay delivers an entry to a consumer,
// restarts from the log and checks the pending entry's idle time: the
// replayed XCLAIM must keep its TIME, not take the stopped clock of the
// replay (an idle time of decades).
func TestPendingDeliveryTimeSurvivesReplay(t *testing.T) {
	dir := t.TempDir()
	srv := openPersist(t, dir, nil)
	s := newSession(srv, nil, false)
	pexec(s, "XADD", "st", "1-1", "f", "v")
	pexec(s, "XGROUP", "CREATE", "st", "g", "0")
	if rep := pexec(s, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "st", ">"); !strings.Contains(rep, "1-1") {
		t.Fatalf("XREADGROUP: %q", rep)
	}
	crash(srv)
	s2 := newSession(openPersist(t, dir, nil), nil, false)
	rep := pexec(s2, "XPENDING", "st", "g", "-", "+", "10")
	// *1 *4 $3 1-1 $5 alice :<idle> :1
	i := strings.LastIndex(rep, "alice\r\n:")
	if i < 0 {
		t.Fatalf("XPENDING after restart: %q", rep)
	}
	idle, err := strconv.ParseInt(strings.SplitN(rep[i+len("alice\r\n:"):], "\r\n", 2)[0], 10, 64)
	if err != nil || idle > int64(time.Hour/time.Millisecond) {
		t.Fatalf("idle time after restart %d ms (%v), want the time since the delivery", idle, err)
	}
}
