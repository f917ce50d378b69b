package tcp_test

import (
	"strings"
	"testing"

	"github.com/recached/recached/server/servertest"
)

// blockOn sends cmd on a new client and waits until it is the n-th blocked
// client.
func blockOn(t *testing.T, addr string, ctl *servertest.Client, n int, cmd ...string) *servertest.Client {
	t.Helper()
	c := servertest.Dial(t, addr)
	if err := c.Send(servertest.Encode(cmd...)); err != nil {
		t.Fatal(err)
	}
	waitBlocked(t, ctl, n)
	return c
}

func mustRead(t *testing.T, c *servertest.Client) string {
	t.Helper()
	rep, err := c.Read()
	if err != nil {
		t.Fatal(err)
	}
	return string(rep)
}

// TestXReadBlockServesEveryReader blocks XREAD clients on one stream, one
// of them for an id the next entry does not pass: an XADD answers all the
// others, in the order they blocked, and leaves that one waiting.
func TestXReadBlockServesEveryReader(t *testing.T) {
	addr, ctl := startBlocking(t)
	servertest.MustDo(t, ctl, "XADD", "s", "1-0", "f", "old")
	first := blockOn(t, addr, ctl, 1, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
	far := blockOn(t, addr, ctl, 2, "XREAD", "BLOCK", "0", "STREAMS", "s", "100-0")
	last := blockOn(t, addr, ctl, 3, "XREAD", "COUNT", "5", "BLOCK", "0", "STREAMS", "other", "s", "0", "1-0")
	servertest.MustDo(t, ctl, "XADD", "s", "2-0", "f", "new")
	want := "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nf\r\n$3\r\nnew\r\n"
	for i, c := range []*servertest.Client{first, last} {
		if got := mustRead(t, c); got != want {
			t.Errorf("reader %d: %q, want %q", i, got, want)
		}
	}
	waitBlocked(t, ctl, 1)
	servertest.MustDo(t, ctl, "XADD", "s", "100-1", "f", "far")
	if got := mustRead(t, far); !strings.Contains(got, "100-1") || strings.Contains(got, "2-0") {
		t.Errorf("far reader: %q", got)
	}
	waitBlocked(t, ctl, 0)
}

// TestXReadGroupBlockFIFO blocks two consumers of one group on ">": each
// entry goes to the oldest waiter only, and becomes pending for it.
func TestXReadGroupBlockFIFO(t *testing.T) {
	addr, ctl := startBlocking(t)
	servertest.MustDo(t, ctl, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	alice := blockOn(t, addr, ctl, 1, "XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
	bob := blockOn(t, addr, ctl, 2, "XREADGROUP", "GROUP", "g", "bob", "BLOCK", "0", "STREAMS", "s", ">")
	servertest.MustDo(t, ctl, "XADD", "s", "1-0", "f", "v1")
	if got := mustRead(t, alice); !strings.Contains(got, "1-0") {
		t.Fatalf("alice: %q", got)
	}
	waitBlocked(t, ctl, 1)
	servertest.MustDo(t, ctl, "XADD", "s", "2-0", "f", "v2")
	if got := mustRead(t, bob); !strings.Contains(got, "2-0") || strings.Contains(got, "1-0") {
		t.Fatalf("bob: %q", got)
	}
	want := "*4\r\n:2\r\n$3\r\n1-0\r\n$3\r\n2-0\r\n*2\r\n*2\r\n$5\r\nalice\r\n$1\r\n1\r\n*2\r\n$3\r\nbob\r\n$1\r\n1\r\n"
	if got := servertest.MustDo(t, ctl, "XPENDING", "s", "g"); got != want {
		t.Errorf("XPENDING: %q, want %q", got, want)
	}
}

// TestXReadGroupBlockEnds checks the other ways a blocked XREADGROUP ends:
// its key deleted or overwritten, the database flushed, its group
// destroyed, a timeout, CLIENT UNBLOCK; and a served XREAD in RESP3.
func TestXReadGroupBlockEnds(t *testing.T) {
	addr, ctl := startBlocking(t)
	reset := func() {
		servertest.MustDo(t, ctl, "DEL", "s")
		servertest.MustDo(t, ctl, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	}
	for _, tc := range []struct {
		name  string
		end   [][]string
		reply string
	}{
		{"DEL", [][]string{{"DEL", "s"}}, "-UNBLOCKED the stream key no longer exists\r\n"},
		{"SET", [][]string{{"SET", "s", "x"}}, "-UNBLOCKED the stream key no longer exists\r\n"},
		{"FLUSHALL", [][]string{{"FLUSHALL"}}, "-UNBLOCKED the stream key no longer exists\r\n"},
		{"FLUSHDB", [][]string{{"FLUSHDB"}}, "-UNBLOCKED the stream key no longer exists\r\n"},
		{"DESTROY", [][]string{{"XGROUP", "DESTROY", "s", "g"}}, "-NOGROUP the consumer group this client was blocked on no longer exists\r\n"},
		{"MULTI", [][]string{{"MULTI"}, {"DEL", "s"}, {"SADD", "s", "m"}, {"EXEC"}}, "-UNBLOCKED the stream key no longer exists\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reset()
			c := blockOn(t, addr, ctl, 1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
			for _, cmd := range tc.end {
				servertest.MustDo(t, ctl, cmd...)
			}
			if got := mustRead(t, c); got != tc.reply {
				t.Errorf("reply %q, want %q", got, tc.reply)
			}
			waitBlocked(t, ctl, 0)
		})
	}
	reset()
	c := servertest.Dial(t, addr)
	if got := servertest.MustDo(t, c, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "20", "STREAMS", "s", ">"); got != "*-1\r\n" {
		t.Errorf("timeout: %q", got)
	}
	id := strings.TrimSpace(strings.TrimPrefix(servertest.MustDo(t, c, "CLIENT", "ID"), ":"))
	if err := c.Send(servertest.Encode("XREAD", "BLOCK", "0", "STREAMS", "s", "$")); err != nil {
		t.Fatal(err)
	}
	waitBlocked(t, ctl, 1)
	if got := servertest.MustDo(t, ctl, "CLIENT", "UNBLOCK", id, "ERROR"); got != ":1\r\n" {
		t.Fatalf("CLIENT UNBLOCK: %q", got)
	}
	if got := mustRead(t, c); got != "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n" {
		t.Errorf("unblocked: %q", got)
	}
	servertest.MustDo(t, c, "HELLO", "3")
	if err := c.Send(servertest.Encode("XREAD", "BLOCK", "0", "STREAMS", "s", "$")); err != nil {
		t.Fatal(err)
	}
	waitBlocked(t, ctl, 1)
	servertest.MustDo(t, ctl, "XADD", "s", "5-0", "f", "v")
	want := "%1\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n5-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"
	if got := mustRead(t, c); got != want {
		t.Errorf("RESP3 XREAD: %q, want %q", got, want)
	}
}
