package tcp_test

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// queryBufOf returns qbuf and qbuf-free of the client named name.
func queryBufOf(t *testing.T, admin *servertest.Client, name string) (qbuf, free int) {
	t.Helper()
	for _, line := range strings.Split(servertest.MustDo(t, admin, "CLIENT", "LIST"), "\n") {
		if !strings.Contains(line, " name="+name+" ") {
			continue
		}
		for _, kv := range strings.Fields(line) {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "qbuf":
				qbuf, _ = strconv.Atoi(v)
			case "qbuf-free":
				free, _ = strconv.Atoi(v)
			}
		}
		return qbuf, free
	}
	t.Fatalf("no client named %s", name)
	return 0, 0
}

// TestQueryBufferReported checks CLIENT LIST's qbuf and qbuf-free as
// unit/querybuf reads them: a new client holds a 16 KB buffer, freed
// once it idles for more than 2 s; a big argument leaves a big buffer,
// trimmed to the recent peak while the client goes on with small
// requests; a partial request is counted in qbuf.
func TestQueryBufferReported(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	admin := servertest.Dial(t, addr)

	idle := servertest.Dial(t, addr)
	servertest.MustDo(t, idle, "CLIENT", "SETNAME", "idle")
	if q, f := queryBufOf(t, admin, "idle"); q+f < 16384 || q+f >= 32768 {
		t.Errorf("a new client: qbuf=%d qbuf-free=%d, want 16 KB in all", q, f)
	}

	busy := servertest.Dial(t, addr)
	servertest.MustDo(t, busy, "CLIENT", "SETNAME", "busy")
	servertest.MustDo(t, busy, "SET", "x", strings.Repeat("A", 400000))
	q, f := queryBufOf(t, admin, "busy")
	big := q + f
	if big <= 32768 {
		t.Fatalf("after a 400 KB argument: qbuf=%d qbuf-free=%d, want more than 32 KB", q, f)
	}
	shrunk := false
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		servertest.MustDo(t, busy, "SET", "x", "small")
		if q, f := queryBufOf(t, admin, "busy"); q+f < big {
			if q+f == 0 {
				t.Fatalf("a busy client's buffer was freed: want the recent peak kept")
			}
			shrunk = true
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !shrunk {
		t.Errorf("the 400 KB buffer of a busy client was not trimmed")
	}

	// A request half sent is held in the buffer.
	part := servertest.Dial(t, addr)
	servertest.MustDo(t, part, "CLIENT", "SETNAME", "part")
	half := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\nhello"
	if err := part.Send([]byte(half)); err != nil {
		t.Fatal(err)
	}
	held := false
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && !held; time.Sleep(5 * time.Millisecond) {
		q, _ := queryBufOf(t, admin, "part")
		held = q == len(half)
	}
	if !held {
		t.Errorf("a partial request of %d bytes is not in qbuf", len(half))
	}

	freed := false
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !freed; time.Sleep(50 * time.Millisecond) {
		q, f := queryBufOf(t, admin, "idle")
		freed = q+f == 0
	}
	if !freed {
		t.Errorf("the buffer of a client idle for more than 2 s was not freed")
	}
}

// TestQueryBufferLimitCloses checks that a client whose unparsed input
// passes client-query-buffer-limit is closed, and the others are not.
func TestQueryBufferLimitCloses(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	admin := servertest.Dial(t, addr)
	servertest.MustDo(t, admin, "CONFIG", "SET", "client-query-buffer-limit", "1mb")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A 3 MB value announced, 2 MB of it sent.
	head := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + strconv.Itoa(3<<20) + "\r\n"
	go func() { _, _ = c.Write(append([]byte(head), make([]byte, 2<<20)...)) }()
	if _, closed := readAll(t, c); !closed {
		t.Errorf("the client past client-query-buffer-limit was not closed")
	}
	if got := servertest.MustDo(t, admin, "PING"); got != "+PONG\r\n" {
		t.Errorf("another client: %q", got)
	}
}
