package difftest

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// lengthRequests are requests whose bulk or multibulk length does not fit
// the integer it is read into. Redis refuses each with a protocol error
// and closes the connection; none may be read as a smaller, wrapped-around
// length.
var lengthRequests = []struct{ name, in, want string }{
	{"bulk 2^64+4", "*1\r\n$18446744073709551620\r\nPING\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
	{"bulk 2^64", "*1\r\n$18446744073709551616\r\n\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
	{"bulk int64 max+1", "*1\r\n$9223372036854775808\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
	{"bulk int64 min-1", "*1\r\n$-9223372036854775809\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
	{"bulk -0", "*1\r\n$-0\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
	{"bulk +4", "*1\r\n$+4\r\nPING\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
	{"multibulk 2^64+4", "*18446744073709551620\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
	{"multibulk 2^64+1", "*18446744073709551617\r\n$4\r\nPING\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
	{"multibulk int64 max+1", "*9223372036854775808\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
	{"multibulk int64 min-1", "*-9223372036854775809\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
	{"multibulk INT_MAX+1", "*2147483648\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
	{"multibulk +1", "*+1\r\n$4\r\nPING\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
	{"after a command", "PING\r\n*1\r\n$18446744073709551620\r\nPING\r\n", "+PONG\r\n-ERR Protocol error: invalid bulk length\r\n"},
}

// TestLengthOverflow sends each request over a real socket and expects
// Redis's error followed by a close, from recached and, when installed,
// from redis-server.
func TestLengthOverflow(t *testing.T) {
	servers := map[string]string{}
	servers["recached"], _ = servertest.StartRecached(t, server.DefaultConfig())
	if servertest.HaveRedis() {
		servers["redis-server"] = servertest.StartRedis(t)
	} else {
		t.Log("redis-server not found: checking recached against the expected texts only")
	}
	for _, tt := range lengthRequests {
		for name, addr := range servers {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				got, closed := exchange(t, addr, tt.in)
				if got != tt.want || !closed {
					t.Fatalf("%q: got %q closed=%v, want %q and a close", tt.in, got, closed, tt.want)
				}
			})
		}
	}
	// The server still serves others.
	c := servertest.Dial(t, servers["recached"])
	if rep, err := c.Do("PING"); err != nil || string(rep) != "+PONG\r\n" {
		t.Fatalf("PING after the bad requests: %q, %v", rep, err)
	}
}

// exchange writes in to a new connection to addr and reads until the server
// closes it or 5 s pass; closed reports whether it closed.
func exchange(t *testing.T, addr, in string) (string, bool) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(in)); err != nil {
		t.Fatal(err)
	}
	if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return string(b), false
	}
	return string(b), true
}

// TestErrorTextsSanitized checks that CR and LF in the arguments an error
// echoes become spaces, as Redis writes them, and that the connection goes
// on: the error is one line.
func TestErrorTextsSanitized(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"a\r\nb"}, "-ERR unknown command 'a  b', with args beginning with: \r\n"},
		{[]string{"CLIENT", "x\ny"}, "-ERR unknown subcommand 'x y'. Try CLIENT HELP.\r\n"},
		{[]string{"OBJECT", "x\ny"}, "-ERR unknown subcommand 'x y'. Try OBJECT HELP.\r\n"},
		{[]string{"HELLO", "3", "x\r\ny"}, "-ERR Syntax error in HELLO option 'x  y'\r\n"},
		{[]string{"CLIENT", "KILL", "TYPE", "a\nb"}, "-ERR Unknown client type 'a b'\r\n"},
		{[]string{"CONFIG", "SET", "x\ny", "1"}, "-ERR Unknown option or number of arguments for CONFIG SET - 'x y'\r\n"},
	}
	servers := map[string]string{}
	servers["recached"], _ = servertest.StartRecached(t, server.DefaultConfig())
	if servertest.HaveRedis() {
		servers["redis-server"] = servertest.StartRedis(t)
	}
	for name, addr := range servers {
		c := servertest.Dial(t, addr)
		for _, tt := range tests {
			rep, err := c.Do(tt.args...)
			if err != nil || string(rep) != tt.want {
				t.Errorf("%s %q: got %q (%v), want %q", name, tt.args, rep, err, tt.want)
			}
			if rep, err := c.Do("PING"); err != nil || string(rep) != "+PONG\r\n" {
				t.Fatalf("%s: PING after %q: %q, %v", name, tt.args, rep, err)
			}
		}
	}
}
