package tcp_test

import (
	"strings"
	"testing"

	"github.com/recached/recached/server/servertest"
)

// TestBlockingZSetOverTCP blocks BZPOPMIN, BZPOPMAX and BZMPOP clients on
// real sockets, two event loops apart, and checks that writes serve them
// first come first served, one reply each, in each waiter's protocol.
func TestBlockingZSetOverTCP(t *testing.T) {
	tests := []struct {
		name   string
		hello  string
		block  [][]string // blocked in this order
		writes [][]string
		want   []string // each blocked client's reply
		after  [][2]string
	}{
		{
			name:   "bzpopmin fifo, one member each",
			hello:  "2",
			block:  [][]string{{"BZPOPMIN", "z", "0"}, {"BZPOPMIN", "other", "z", "0"}, {"BZPOPMIN", "z", "0"}},
			writes: [][]string{{"ZADD", "z", "3", "c", "1", "a", "2", "b", "4", "d"}},
			want:   []string{"*3\r\n$1\r\nz\r\n$1\r\na\r\n$1\r\n1\r\n", "*3\r\n$1\r\nz\r\n$1\r\nb\r\n$1\r\n2\r\n", "*3\r\n$1\r\nz\r\n$1\r\nc\r\n$1\r\n3\r\n"},
			after:  [][2]string{{"ZRANGE z 0 -1", "*1\r\n$1\r\nd\r\n"}},
		},
		{
			name:   "bzpopmax resp3, deleted when emptied",
			hello:  "3",
			block:  [][]string{{"BZPOPMAX", "z", "0"}, {"BZPOPMAX", "z", "0"}},
			writes: [][]string{{"ZADD", "z", "1", "a", "2.5", "b"}},
			want:   []string{"*3\r\n$1\r\nz\r\n$1\r\nb\r\n,2.5\r\n", "*3\r\n$1\r\nz\r\n$1\r\na\r\n,1\r\n"},
			after:  [][2]string{{"EXISTS z", ":0\r\n"}},
		},
		{
			name:   "bzmpop count, second waiter gets the rest",
			hello:  "2",
			block:  [][]string{{"BZMPOP", "0", "2", "x", "z", "MIN", "COUNT", "2"}, {"BZMPOP", "0", "1", "z", "MAX", "COUNT", "5"}},
			writes: [][]string{{"ZADD", "z", "1", "a", "2", "b", "3", "c"}},
			want: []string{"*2\r\n$1\r\nz\r\n*2\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n",
				"*2\r\n$1\r\nz\r\n*1\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n"},
			after: [][2]string{{"EXISTS z", ":0\r\n"}},
		},
		{
			name:   "bzmpop resp3",
			hello:  "3",
			block:  [][]string{{"BZMPOP", "0", "1", "z", "MAX"}},
			writes: [][]string{{"ZADD", "z", "1", "a", "2", "b"}},
			want:   []string{"*2\r\n$1\r\nz\r\n*1\r\n*2\r\n$1\r\nb\r\n,2\r\n"},
		},
		{
			name:   "a list does not serve a sorted set waiter, then a transaction does",
			hello:  "2",
			block:  [][]string{{"BZPOPMIN", "z", "0"}},
			writes: [][]string{{"RPUSH", "z", "x"}, {"DEL", "z"}, {"MULTI"}, {"ZADD", "z", "1", "m"}, {"ZADD", "z", "0", "n"}, {"EXEC"}},
			want:   []string{"*3\r\n$1\r\nz\r\n$1\r\nn\r\n$1\r\n0\r\n"},
			after:  [][2]string{{"ZRANGE z 0 -1", "*1\r\n$1\r\nm\r\n"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr, ctl := startBlocking(t)
			clients := make([]*servertest.Client, len(tc.block))
			for i, args := range tc.block {
				clients[i] = servertest.Dial(t, addr)
				servertest.MustDo(t, clients[i], "HELLO", tc.hello)
				if err := clients[i].Send(servertest.Encode(args...)); err != nil {
					t.Fatal(err)
				}
				waitBlocked(t, ctl, i+1)
			}
			for _, w := range tc.writes {
				servertest.MustDo(t, ctl, w...)
			}
			for i, c := range clients {
				rep, err := c.Read()
				if err != nil {
					t.Fatalf("client %d: %v", i, err)
				}
				if string(rep) != tc.want[i] {
					t.Fatalf("client %d (%q) got %q, want %q", i, tc.block[i], rep, tc.want[i])
				}
			}
			waitBlocked(t, ctl, 0)
			for _, a := range tc.after {
				if got := servertest.MustDo(t, ctl, strings.Fields(a[0])...); got != a[1] {
					t.Fatalf("%s: %q, want %q", a[0], got, a[1])
				}
			}
		})
	}
}

// TestBlockingZSetTimeoutAndUnblock checks BZPOPMIN's and BZMPOP's
// timeouts and CLIENT UNBLOCK in both protocols.
func TestBlockingZSetTimeoutAndUnblock(t *testing.T) {
	addr, ctl := startBlocking(t)
	c := servertest.Dial(t, addr)
	timeouts := []struct {
		hello string
		args  []string
		want  string
	}{
		{"2", []string{"BZPOPMIN", "none", "0.02"}, "*-1\r\n"},
		{"2", []string{"BZMPOP", "0.02", "1", "none", "MIN"}, "*-1\r\n"},
		{"3", []string{"BZPOPMAX", "none", "0.02"}, "_\r\n"},
		{"3", []string{"BZMPOP", "0.02", "1", "none", "MAX", "COUNT", "2"}, "_\r\n"},
		{"2", []string{"BZPOPMIN", "none", "-1"}, "-ERR timeout is negative\r\n"},
		{"2", []string{"BZPOPMIN", "none", "x"}, "-ERR timeout is not a float or out of range\r\n"},
	}
	for _, tc := range timeouts {
		servertest.MustDo(t, c, "HELLO", tc.hello)
		if got := servertest.MustDo(t, c, tc.args...); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.args, got, tc.want)
		}
	}
	id := strings.TrimSuffix(strings.TrimPrefix(servertest.MustDo(t, c, "CLIENT", "ID"), ":"), "\r\n")
	unblocks := []struct {
		hello   string
		unblock []string
		want    string
	}{
		{"2", []string{"CLIENT", "UNBLOCK", id}, "*-1\r\n"},
		{"3", []string{"CLIENT", "UNBLOCK", id}, "_\r\n"},
		{"2", []string{"CLIENT", "UNBLOCK", id, "ERROR"}, "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"},
	}
	for _, tc := range unblocks {
		servertest.MustDo(t, c, "HELLO", tc.hello)
		if err := c.Send(servertest.Encode("BZPOPMIN", "none", "0")); err != nil {
			t.Fatal(err)
		}
		waitBlocked(t, ctl, 1)
		servertest.MustDo(t, ctl, tc.unblock...)
		rep, err := c.Read()
		if err != nil {
			t.Fatal(err)
		}
		if string(rep) != tc.want {
			t.Fatalf("%q: got %q, want %q", tc.unblock, rep, tc.want)
		}
	}
	// The unblocked waits are gone: a later ZADD stays in the set.
	servertest.MustDo(t, ctl, "ZADD", "none", "1", "m")
	if got := servertest.MustDo(t, ctl, "ZCARD", "none"); got != ":1\r\n" {
		t.Fatalf("ZCARD after unblocks: %q", got)
	}
}
