package server_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// replShape reduces an INFO replication section or a ROLE reply to what
// must match redis-server's: field names and order, with ids and numbers
// that differ between two servers replaced.
func replShape(s string) string {
	s = regexp.MustCompile(`[0-9a-f]{40}`).ReplaceAllString(s, "ID")
	return s
}

// TestReplicationInfoFreshPrimary compares INFO replication and ROLE of a
// fresh primary with redis-server's: same fields, same order, same values
// but the replication id (backlog inactive, offset 0, no replid2).
func TestReplicationInfoFreshPrimary(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	recAddr, _ := servertest.StartRecached(t, server.DefaultConfig())
	var got [2][]string
	for i, addr := range []string{servertest.StartRedis(t), recAddr} {
		c := servertest.Dial(t, addr)
		info := servertest.MustDo(t, c, "info", "replication")
		got[i] = append(got[i], replShape(info), servertest.MustDo(t, c, "role"))
		if !strings.Contains(info, "master_replid:") {
			t.Errorf("no master_replid in %q", info)
		}
	}
	for j := range got[0] {
		if got[0][j] != got[1][j] {
			t.Errorf("redis-server %q\nrecached     %q", got[0][j], got[1][j])
		}
	}
}
