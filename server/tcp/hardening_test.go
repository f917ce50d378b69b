package tcp_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// readToClose reads what the server sends until it closes the connection
// (readAll), as a string.
func readToClose(t *testing.T, c *servertest.Client) (string, bool) {
	t.Helper()
	b, closed := readAll(t, c.Conn())
	return string(b), closed
}

// TestCrossProtocolScripting: an HTTP request whose body is RESP, as a web
// page can make a browser send, is dropped at its first line ("POST" or
// "Host:", any case) with no reply, before the body runs.
func TestCrossProtocolScripting(t *testing.T) {
	tests := []struct {
		name string
		send string
	}{
		{"http post", "POST / HTTP/1.1\r\nHost: 127.0.0.1:6379\r\nContent-Length: 17\r\n\r\nSET xproto pwned\r\n"},
		{"host first", "Host: 127.0.0.1\r\nSET xproto pwned\r\n"},
		{"lower case multibulk", string(servertest.Encode("post", "/")) + string(servertest.Encode("SET", "xproto", "pwned"))},
		{"after a command", string(servertest.Encode("PING")) + "hOsT: x\r\nSET xproto pwned\r\n"},
	}
	addr, _ := servertest.StartRecached(t, server.Config{})
	check := servertest.Dial(t, addr)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := servertest.Dial(t, addr)
			if err := c.Send([]byte(tt.send)); err != nil {
				t.Fatal(err)
			}
			got, closed := readToClose(t, c)
			want := ""
			if strings.HasPrefix(tt.send, "*1\r\n$4\r\nPING") {
				want = "+PONG\r\n"
			}
			if got != want || !closed {
				t.Errorf("got %q (closed %v), want %q and the connection closed", got, closed, want)
			}
			if rep, err := check.Do("EXISTS", "xproto"); err != nil || string(rep) != ":0\r\n" {
				t.Errorf("EXISTS xproto = %q, %v: the request body ran", rep, err)
			}
		})
	}
}

// TestUnauthenticatedLimits: with a password, a client that has not
// authenticated may not send a multibulk count over 10 or a bulk over
// 16 384 bytes (Redis's texts, then the connection closes); once
// authenticated it may.
func TestUnauthenticatedLimits(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.Config{RequirePass: "pw"})
	eleven := []string{"MSET"}
	for i := 0; i < 5; i++ {
		eleven = append(eleven, "k"+strconv.Itoa(i), "v")
	}
	tests := []struct {
		name string
		auth bool
		send []byte
		want string
		shut bool
	}{
		{"count over 10", false, []byte("*11\r\n"), "-ERR Protocol error: unauthenticated multibulk length\r\n", true},
		{"bulk over 16384", false, []byte("*2\r\n$4\r\nAUTH\r\n$16385\r\n"), "-ERR Protocol error: unauthenticated bulk length\r\n", true},
		{"small is answered", false, servertest.Encode("GET", "k"), "-NOAUTH Authentication required.\r\n", false},
		{"count over 10 after AUTH", true, servertest.Encode(eleven...), "+OK\r\n", false},
		{"big bulk after AUTH", true, servertest.Encode("SET", "big", strings.Repeat("x", 20000)), "+OK\r\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := servertest.Dial(t, addr)
			if tt.auth {
				if rep, err := c.Do("AUTH", "pw"); err != nil || string(rep) != "+OK\r\n" {
					t.Fatalf("AUTH: %q, %v", rep, err)
				}
			}
			if err := c.Send(tt.send); err != nil {
				t.Fatal(err)
			}
			if !tt.shut {
				if rep, err := c.Read(); err != nil || string(rep) != tt.want {
					t.Errorf("got %q, %v; want %q", rep, err, tt.want)
				}
				return
			}
			if got, closed := readToClose(t, c); got != tt.want || !closed {
				t.Errorf("got %q (closed %v), want %q and the connection closed", got, closed, tt.want)
			}
		})
	}
}

// TestSyncSubscriberOutputLimit: a TCP connection that registers for sync
// pushes and never reads is disconnected once the unread output passes
// the limit (sync/PROTOCOL.md section 7), for each way of registering;
// CLIENT LIST shows its output piling up meanwhile.
func TestSyncSubscriberOutputLimit(t *testing.T) {
	tests := []struct {
		name     string
		register []string
	}{
		{"SYNC", []string{"SYNC", "k:*"}},
		{"QSUB", []string{"QSUB", "k:*"}},
		{"KWATCH", []string{"KWATCH", "k:1"}},
	}
	value := strings.Repeat("v", 256<<10)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr, _ := servertest.StartRecached(t, server.Config{})
			_, portStr, _ := strings.Cut(addr, ":")
			port, _ := strconv.Atoi(portStr)
			sub := servertest.Dial(t, addr)
			if _, err := sub.Do(tt.register...); err != nil {
				t.Fatal(err)
			}
			w := servertest.Dial(t, addr)
			id, err := w.Do("CLIENT", "ID")
			if err != nil {
				t.Fatal(err)
			}
			self, _ := strconv.ParseInt(strings.TrimSpace(string(id[1:])), 10, 64)
			maxOmem := 0
			// 1 GB of pushes at the most: far past the limit plus what the
			// kernel's socket buffers hold.
			for i := 0; i < 4000; i++ {
				key := "k:" + strconv.Itoa(i)
				if tt.name == "KWATCH" {
					key = "k:1"
				}
				if rep, err := w.Do("SET", key, value); err != nil || string(rep) != "+OK\r\n" {
					t.Fatalf("SET: %q, %v", rep, err)
				}
				if i%8 != 0 {
					continue
				}
				line := servertest.ClientLine(t, w, port, self)
				if line == nil {
					if maxOmem == 0 {
						t.Errorf("cut, but CLIENT LIST never showed its output (omem=0)")
					}
					return // cut
				}
				n, _ := strconv.Atoi(line["omem"])
				maxOmem = max(maxOmem, n)
				if n > 2*server.MaxUnreadBytes {
					t.Fatalf("subscriber holds omem=%d, past twice the limit", n)
				}
			}
			t.Fatalf("a subscriber that never reads was not disconnected after 1 GB of pushes (omem up to %d)", maxOmem)
		})
	}
}

// TestClientListQueryBuffer: CLIENT LIST reports the bytes of a request
// received and not yet complete (qbuf).
func TestClientListQueryBuffer(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.Config{})
	_, portStr, _ := strings.Cut(addr, ":")
	port, _ := strconv.Atoi(portStr)
	partial := servertest.Dial(t, addr)
	req := "*2\r\n$3\r\nGET\r\n$100\r\nabc"
	if err := partial.Send([]byte(req)); err != nil {
		t.Fatal(err)
	}
	c := servertest.Dial(t, addr)
	id, _ := c.Do("CLIENT", "ID")
	self, _ := strconv.ParseInt(strings.TrimSpace(string(id[1:])), 10, 64)
	for i := 0; i < 500; i++ {
		line := servertest.ClientLine(t, c, port, self)
		if line != nil && line["qbuf"] == strconv.Itoa(len(req)) {
			return
		}
		time.Sleep(10 * time.Millisecond) // until the server has read it
	}
	t.Errorf("CLIENT LIST never showed qbuf=%d for a connection holding %[1]d bytes of a request", len(req))
}
