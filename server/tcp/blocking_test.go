package tcp_test

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// startBlocking starts recached with two event loops, so that wake-ups
// cross loops, and returns its address and a control client.
func startBlocking(t *testing.T) (string, *servertest.Client) {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Loops = 2
	addr, _ := servertest.StartRecached(t, cfg)
	return addr, servertest.Dial(t, addr)
}

// blockedClients reads INFO's blocked_clients.
func blockedClients(t *testing.T, ctl *servertest.Client) int {
	t.Helper()
	info := servertest.MustDo(t, ctl, "INFO", "clients")
	i := strings.Index(info, "blocked_clients:")
	if i < 0 {
		t.Fatalf("no blocked_clients in %q", info)
	}
	rest := info[i+len("blocked_clients:"):]
	n, err := strconv.Atoi(rest[:strings.IndexByte(rest, '\r')])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitBlocked polls until n clients are blocked.
func waitBlocked(t *testing.T, ctl *servertest.Client, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for blockedClients(t, ctl) != n {
		if time.Now().After(deadline) {
			t.Fatalf("blocked_clients never reached %d (now %d)", n, blockedClients(t, ctl))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// bulkPair is the reply of a served BLPOP.
func bulkPair(key, val string) string {
	return fmt.Sprintf("*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(key), key, len(val), val)
}

// TestBlockingFIFOOverTCP blocks clients one after the other and checks
// that pushes serve them in that order.
func TestBlockingFIFOOverTCP(t *testing.T) {
	addr, ctl := startBlocking(t)
	const n = 10
	clients := make([]*servertest.Client, n)
	for i := range clients {
		clients[i] = servertest.Dial(t, addr)
		if err := clients[i].Send(servertest.Encode("BLPOP", "q", "0")); err != nil {
			t.Fatal(err)
		}
		waitBlocked(t, ctl, i+1)
	}
	for i, c := range clients {
		v := strconv.Itoa(i)
		if got := servertest.MustDo(t, ctl, "RPUSH", "q", v); got != ":1\r\n" && got != ":0\r\n" {
			t.Fatalf("RPUSH: %q", got)
		}
		rep, err := c.Read()
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		if string(rep) != bulkPair("q", v) {
			t.Fatalf("client %d got %q, want element %s", i, rep, v)
		}
	}
	if got := servertest.MustDo(t, ctl, "EXISTS", "q"); got != ":0\r\n" {
		t.Fatalf("EXISTS q: %q", got)
	}
	waitBlocked(t, ctl, 0)
}

// TestBlockingManyClients has many clients block and many push at once:
// every element is delivered exactly once.
func TestBlockingManyClients(t *testing.T) {
	addr, ctl := startBlocking(t)
	const waiters, pushers, perPusher = 24, 4, 6 // waiters == pushers*perPusher
	var wg sync.WaitGroup
	got := make(chan string, waiters)
	for i := 0; i < waiters; i++ {
		c := servertest.Dial(t, addr)
		if i%2 == 1 {
			servertest.MustDo(t, c, "HELLO", "3")
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var rep []byte
			var err error
			if i%3 == 0 {
				rep, err = c.Do("BLMOVE", "jobs", "done", "LEFT", "RIGHT", "0")
			} else {
				rep, err = c.Do("BRPOP", "other", "jobs", "0")
			}
			if err != nil {
				t.Error(err)
				return
			}
			got <- string(rep)
		}(i)
	}
	waitBlocked(t, ctl, waiters)
	for p := 0; p < pushers; p++ {
		c := servertest.Dial(t, addr)
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for j := 0; j < perPusher; j++ {
				if _, err := c.Do("LPUSH", "jobs", fmt.Sprintf("job-%d-%d", p, j)); err != nil {
					t.Error(err)
					return
				}
			}
		}(p)
	}
	wg.Wait()
	close(got)
	seen := map[string]bool{}
	for rep := range got {
		i := strings.Index(rep, "job-")
		if i < 0 {
			t.Fatalf("unexpected reply %q", rep)
		}
		job := rep[i : i+len("job-0-0")]
		if seen[job] {
			t.Fatalf("%s delivered twice", job)
		}
		seen[job] = true
	}
	if len(seen) != waiters {
		t.Fatalf("%d jobs delivered, want %d", len(seen), waiters)
	}
	if got := servertest.MustDo(t, ctl, "EXISTS", "jobs"); got != ":0\r\n" {
		t.Fatalf("jobs left: %q", got)
	}
	waitBlocked(t, ctl, 0)
}

// TestBlockingPipelineOrder checks that requests pipelined behind a
// blocking command are answered after it, including when the push races
// with the blocking command itself.
func TestBlockingPipelineOrder(t *testing.T) {
	addr, ctl := startBlocking(t)
	c := servertest.Dial(t, addr)
	pipeline := append(servertest.Encode("PING"), servertest.Encode("BLPOP", "p", "0")...)
	pipeline = append(pipeline, servertest.Encode("ECHO", "after")...)
	pipeline = append(pipeline, servertest.Encode("LLEN", "p")...)
	for round := 0; round < 200; round++ {
		if err := c.Send(pipeline); err != nil {
			t.Fatal(err)
		}
		if round%2 == 0 {
			waitBlocked(t, ctl, 1)
		}
		v := strconv.Itoa(round)
		servertest.MustDo(t, ctl, "RPUSH", "p", v)
		want := []string{"+PONG\r\n", bulkPair("p", v), "$5\r\nafter\r\n", ":0\r\n"}
		for i, w := range want {
			rep, err := c.Read()
			if err != nil {
				t.Fatalf("round %d reply %d: %v", round, i, err)
			}
			if string(rep) != w {
				t.Fatalf("round %d reply %d: %q, want %q", round, i, rep, w)
			}
		}
	}
}

// TestBlockingTimeoutAndUnblock checks timeouts, CLIENT UNBLOCK in both of
// its forms and the RESP3 null shape over TCP.
func TestBlockingTimeoutAndUnblock(t *testing.T) {
	addr, ctl := startBlocking(t)
	c := servertest.Dial(t, addr)
	if got := servertest.MustDo(t, c, "BLPOP", "none", "0.05"); got != "*-1\r\n" {
		t.Fatalf("timeout: %q", got)
	}
	if got := servertest.MustDo(t, c, "BLMPOP", "0.01", "1", "none", "LEFT"); got != "*-1\r\n" {
		t.Fatalf("timeout: %q", got)
	}
	id := strings.TrimSuffix(strings.TrimPrefix(servertest.MustDo(t, c, "CLIENT", "ID"), ":"), "\r\n")
	tests := []struct {
		hello   string
		unblock []string
		want    string
	}{
		{"2", []string{"CLIENT", "UNBLOCK", id}, "*-1\r\n"},
		{"2", []string{"CLIENT", "UNBLOCK", id, "TIMEOUT"}, "*-1\r\n"},
		{"3", []string{"CLIENT", "UNBLOCK", id}, "_\r\n"},
		{"3", []string{"CLIENT", "UNBLOCK", id, "ERROR"}, "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"},
	}
	for _, tc := range tests {
		servertest.MustDo(t, c, "HELLO", tc.hello)
		if err := c.Send(servertest.Encode("BRPOPLPUSH", "none", "dst", "0")); err != nil {
			t.Fatal(err)
		}
		waitBlocked(t, ctl, 1)
		if got := servertest.MustDo(t, ctl, tc.unblock...); got != ":1\r\n" {
			t.Fatalf("%q: %q", tc.unblock, got)
		}
		rep, err := c.Read()
		if err != nil {
			t.Fatal(err)
		}
		if string(rep) != tc.want {
			t.Fatalf("%q: blocked client got %q, want %q", tc.unblock, rep, tc.want)
		}
		if got := servertest.MustDo(t, ctl, tc.unblock...); got != ":0\r\n" {
			t.Fatalf("second %q: %q", tc.unblock, got)
		}
	}
	if got := servertest.MustDo(t, c, "PING"); got != "+PONG\r\n" {
		t.Fatalf("after unblocking: %q", got)
	}
}

// TestBlockingDisconnect closes blocked connections: their waits are
// dropped, so that a later push stays in the list.
func TestBlockingDisconnect(t *testing.T) {
	addr, ctl := startBlocking(t)
	for i := 0; i < 5; i++ {
		c := servertest.Dial(t, addr)
		if err := c.Send(servertest.Encode("BLPOP", "gone", "x", "0")); err != nil {
			t.Fatal(err)
		}
		waitBlocked(t, ctl, 1)
		c.Conn().Close()
		waitBlocked(t, ctl, 0)
	}
	servertest.MustDo(t, ctl, "RPUSH", "gone", "v")
	if got := servertest.MustDo(t, ctl, "LRANGE", "gone", "0", "-1"); got != "*1\r\n$1\r\nv\r\n" {
		t.Fatalf("LRANGE: %q", got)
	}
}

// TestBlockingPartialNextRequest checks that the answer of a blocking
// command is sent even while the next request has only partly arrived.
func TestBlockingPartialNextRequest(t *testing.T) {
	addr, ctl := startBlocking(t)
	c := servertest.Dial(t, addr)
	next := servertest.Encode("ECHO", "tail")
	req := append(servertest.Encode("BLPOP", "half", "0"), next[:5]...)
	if err := c.Send(req); err != nil {
		t.Fatal(err)
	}
	waitBlocked(t, ctl, 1)
	servertest.MustDo(t, ctl, "RPUSH", "half", "v")
	rep, err := c.Read()
	if err != nil {
		t.Fatal(err)
	}
	if string(rep) != bulkPair("half", "v") {
		t.Fatalf("answer %q", rep)
	}
	if err := c.Send(next[5:]); err != nil {
		t.Fatal(err)
	}
	if rep, err = c.Read(); err != nil || !bytes.Equal(rep, []byte("$4\r\ntail\r\n")) {
		t.Fatalf("next reply %q %v", rep, err)
	}
}
