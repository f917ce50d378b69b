package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// TestLazyfreedObjectsLikeRedis runs deletes and flushes on both servers
// and compares INFO memory's lazyfreed_objects after each, once
// redis-server's background thread has nothing pending.
func TestLazyfreedObjectsLikeRedis(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	big := []string{"SADD", "big"}
	for i := 0; i < 200; i++ {
		big = append(big, fmt.Sprint("m", i))
	}
	steps := [][]string{
		{"CONFIG", "RESETSTAT"},
		big, {"UNLINK", "big"},
		big, {"DEL", "big"},
		{"SADD", "small", "a", "b"}, {"UNLINK", "small"},
		{"CONFIG", "SET", "lazyfree-lazy-user-del", "yes"},
		big, {"DEL", "big", "nokey"},
		{"CONFIG", "SET", "lazyfree-lazy-user-del", "no"},
		{"MSET", "a", "1", "b", "2", "c", "3"}, {"FLUSHDB", "ASYNC"},
		{"MSET", "a", "1", "b", "2"}, {"FLUSHDB"},
		{"CONFIG", "SET", "lazyfree-lazy-user-flush", "yes"},
		{"MSET", "a", "1", "b", "2"}, {"FLUSHALL"},
		{"MSET", "a", "1"}, {"FLUSHALL", "SYNC"},
		{"CONFIG", "SET", "lazyfree-lazy-user-flush", "no"},
		{"CONFIG", "RESETSTAT"},
	}
	raddr := servertest.StartRedis(t)
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	rc, rd := servertest.Dial(t, addr), servertest.Dial(t, raddr)
	field := func(c *servertest.Client, name string) string {
		info := servertest.MustDo(t, c, "INFO", "memory")
		for _, l := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(l, name+":"); ok {
				return v
			}
		}
		t.Fatalf("INFO memory has no %s", name)
		return ""
	}
	for _, st := range steps {
		if got, want := servertest.MustDo(t, rc, st...), servertest.MustDo(t, rd, st...); got != want {
			t.Fatalf("%q: %q, redis-server %q", st, got, want)
		}
		for i := 0; field(rd, "lazyfree_pending_objects") != "0"; i++ {
			if i == 500 {
				t.Fatal("redis-server's lazy free does not finish")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if got, want := field(rc, "lazyfreed_objects"), field(rd, "lazyfreed_objects"); got != want {
			t.Errorf("after %q: lazyfreed_objects %s, redis-server %s", st, got, want)
		}
		if got := field(rc, "lazyfree_pending_objects"); got != "0" {
			t.Errorf("after %q: lazyfree_pending_objects %s", st, got)
		}
	}
}
