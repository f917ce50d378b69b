package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// rewind opens dir in-process, as a restart would, and returns the payloads
// of channel's history, oldest first.
func rewind(t *testing.T, dir, channel string) []string {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Dir = dir
	cfg.Save = ""
	srv := server.New(cfg)
	if err := srv.OpenPersistence(); err != nil {
		t.Fatal(err)
	}
	var out []string
	srv.BusSubscribe(server.BusSubOptions{Channel: channel, Rewind: server.HistoryLimit, Deliver: func(*server.BusMessage) {},
		Start: func(h []*server.BusMessage) {
			for _, m := range h {
				out = append(out, string(m.Payload))
			}
		}})
	if err := srv.ClosePersistence(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHistorySurvivesKill: under --appendfsync always a PUBLISH is recorded
// in the channel's history and on disk before its reply, so SIGKILL loses
// no acknowledged message; the history also survives a log rewrite (the
// snapshot path) followed by another SIGKILL.
func TestHistorySurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the real binary")
	}
	bin := build(t)
	dir := t.TempDir()
	args := []string{"--appendfsync", "always", "--realtime-port", "0", "--amaquet-port", "0"}
	var sent []string
	publish := func(addr string, n int) {
		c := servertest.Dial(t, addr)
		for i := 0; i < n; i++ {
			p := fmt.Sprintf("m%04d", len(sent))
			if got := servertest.MustDo(t, c, "PUBLISH", "hist:a", p); got != ":0\r\n" {
				t.Fatalf("PUBLISH: %q", got)
			}
			sent = append(sent, p)
		}
		servertest.MustDo(t, c, "PUBLISH", "hist:other", "x")
	}
	check := func(when string) {
		t.Helper()
		want := sent[max(0, len(sent)-server.HistoryLimit):]
		if got := rewind(t, dir, "hist:a"); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%s: history %v, want %v", when, got, want)
		}
	}

	p := startIn(t, bin, dir, args...)
	publish(p.addr, 40)
	p.kill(t)
	check("after a kill")

	p = startIn(t, bin, dir, args...)
	publish(p.addr, 150)
	c := servertest.Dial(t, p.addr)
	servertest.MustDo(t, c, "BGREWRITEAOF")
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(servertest.MustDo(t, c, "INFO", "persistence"), "aof_rewrites:1\r\n") {
		if time.Now().After(deadline) {
			t.Fatal("the log rewrite did not finish within 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	publish(p.addr, 7)
	p.kill(t)
	check("after a rewrite and a kill")
}
