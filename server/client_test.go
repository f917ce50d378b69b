package server_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// TestClientListConcurrent lists clients while others subscribe and queue
// transactions, so that the race detector sees every field CLIENT LIST
// reads from other sessions.
func TestClientListConcurrent(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		c := servertest.Dial(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				c.Do("MULTI")
				c.Do("SET", "k", "v")
				c.Do("EXEC")
				c.Do("CLIENT", "SETNAME", "worker")
			}
		}()
	}
	sub := servertest.Dial(t, addr)
	if rep, err := sub.Do("SUBSCRIBE", "news"); err != nil || !strings.Contains(string(rep), "subscribe") {
		t.Fatalf("SUBSCRIBE: %q %v", rep, err)
	}
	lister := servertest.Dial(t, addr)
	for j := 0; j < 100; j++ {
		rep, err := lister.Do("CLIENT", "LIST")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(rep), "sub=1 psub=0") || !strings.Contains(string(rep), "flags=P") {
			t.Fatalf("CLIENT LIST does not show the subscriber: %q", rep)
		}
	}
	rep, _ := lister.Do("CLIENT", "LIST", "TYPE", "pubsub")
	if strings.Count(string(rep), "id=") != 1 {
		t.Fatalf("CLIENT LIST TYPE pubsub: %q", rep)
	}
	wg.Wait()
}

// TestClientFlagsLikeRedis compares the flags field of CLIENT INFO with
// redis-server's after each step: CLIENT NO-EVICT shows as "e" after the
// other flags, alone in place of "N".
func TestClientFlagsLikeRedis(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	steps := [][]string{
		{"CLIENT", "NO-EVICT", "on"},
		{"CLIENT", "TRACKING", "on", "BCAST"},
		{"CLIENT", "TRACKING", "off"},
		{"CLIENT", "NO-EVICT", "off"},
	}
	raddr := servertest.StartRedis(t)
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	flags := func(c *servertest.Client) string {
		rep, err := c.Do("CLIENT", "INFO")
		if err != nil {
			t.Fatal(err)
		}
		_, rest, _ := strings.Cut(string(rep), " flags=")
		f, _, _ := strings.Cut(rest, " ")
		return f
	}
	rc, rd := servertest.Dial(t, addr), servertest.Dial(t, raddr)
	for _, st := range steps {
		for _, c := range []*servertest.Client{rc, rd} {
			if _, err := c.Do(st...); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := flags(rc), flags(rd); got != want {
			t.Errorf("after %q: flags=%s, redis-server flags=%s", st, got, want)
		}
	}
}
