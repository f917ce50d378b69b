package server_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// monitorFeed runs steps on a client of addr while another client
// monitors, and returns the monitor's lines up to the closing PING, each
// with its time and client address blanked.
func monitorFeed(t *testing.T, addr string, steps [][]string) []string {
	t.Helper()
	mon := servertest.Dial(t, addr)
	if rep, err := mon.Do("monitor"); err != nil || string(rep) != "+OK\r\n" {
		t.Fatalf("MONITOR: %q %v", rep, err)
	}
	c := servertest.Dial(t, addr)
	for _, args := range steps {
		if _, err := c.Do(args...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Do("ping", "END"); err != nil {
		t.Fatal(err)
	}
	stamp := regexp.MustCompile(`^\+\d{10}\.\d{6} \[(\d+) (127\.0\.0\.1:\d+|lua)\]`)
	var lines []string
	mon.Conn().SetReadDeadline(time.Now().Add(10 * time.Second))
	for i := 0; i < 1000; i++ {
		rep, err := mon.Read()
		if err != nil {
			t.Fatalf("after %q: %v", lines, err)
		}
		m := stamp.FindSubmatch(rep)
		if m == nil {
			t.Fatalf("monitor line %q has no time and address", rep)
		}
		who := "client"
		if string(m[2]) == "lua" {
			who = "lua"
		}
		line := "[" + string(m[1]) + " " + who + "]" + string(bytes.TrimSuffix(rep[len(m[0]):], []byte("\r\n")))
		lines = append(lines, line)
		if strings.Contains(line, `"END"`) {
			return lines
		}
	}
	t.Fatal("no END line")
	return nil
}

// TestMonitorMatchesRedis compares the MONITOR feed of redis-server and
// recached for the same commands: argument escaping, scripts' commands,
// redaction, transactions, databases, and what is not shown (admin
// commands, rejected commands).
func TestMonitorMatchesRedis(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	steps := [][]string{
		{"set", "k", "quote\" back\\ nl\n cr\r tab\t bell\a bs\b nul\x00 hi\xff"},
		{"get", "k"},
		{"eval", "redis.call('set', KEYS[1], ARGV[1]) return redis.call('get', KEYS[1])", "1", "s", "v"},
		{"auth", "nobody"}, {"auth", "user", "pass"},
		{"hello", "2", "AUTH", "user", "pass", "SETNAME", "x"},
		{"multi"}, {"incr", "n"}, {"lpush", "l", "a"}, {"exec"},
		{"multi"}, {"nosuchcommand"}, {"exec"},
		{"config", "set", "maxmemory-samples", "5"},
		{"get"},
		{"select", "3"}, {"set", "in3", "1"}, {"select", "0"},
		{"client", "setname", "x"}, {"client", "id"},
		{"del", "k", "s", "n", "l"},
	}
	rec, _ := servertest.StartRecached(t, server.DefaultConfig())
	want := monitorFeed(t, servertest.StartRedis(t), steps)
	got := monitorFeed(t, rec, steps)
	if strings.Join(want, "\n") != strings.Join(got, "\n") {
		t.Errorf("redis-server:\n%s\nrecached:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
}

// TestMonitorEndsWithReset: RESET takes a client out of monitor mode, so
// later commands of others no longer reach it.
func TestMonitorEndsWithReset(t *testing.T) {
	rec, _ := servertest.StartRecached(t, server.DefaultConfig())
	mon := servertest.Dial(t, rec)
	servertest.MustDo(t, mon, "monitor")
	c := servertest.Dial(t, rec)
	if l := servertest.MustDo(t, c, "client", "list"); !strings.Contains(l, "flags=O ") {
		t.Errorf("CLIENT LIST shows no monitor (flags=O):\n%s", l)
	}
	servertest.MustDo(t, c, "set", "a", "1")
	mon.Conn().SetReadDeadline(time.Now().Add(10 * time.Second))
	if rep, err := mon.Read(); err != nil || !bytes.Contains(rep, []byte(`"set" "a" "1"`)) {
		t.Fatalf("first line %q %v", rep, err)
	}
	if rep, err := mon.Do("reset"); err != nil || string(rep) != "+RESET\r\n" {
		t.Fatalf("RESET: %q %v", rep, err)
	}
	servertest.MustDo(t, c, "set", "b", "2")
	// The next thing the former monitor reads is its own PING's reply.
	if rep, err := mon.Do("ping"); err != nil || string(rep) != "+PONG\r\n" {
		t.Fatalf("after RESET: %q %v", rep, err)
	}
}
