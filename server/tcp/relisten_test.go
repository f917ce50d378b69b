package tcp_test

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// refused reports whether nothing listens at addr (a connect is refused).
func refused(addr string) bool {
	c, err := net.Dial("tcp", addr)
	if err == nil {
		c.Close()
		return false
	}
	return true
}

func portAddr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// TestConfigSetPort moves the listener: connections made before stay
// served, the new port accepts, the old one refuses; a port in use fails
// with Redis's error and rolls back every parameter of the command.
func TestConfigSetPort(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	old := servertest.Dial(t, addr)
	newPort := servertest.FreePort(t)
	if got := servertest.MustDo(t, old, "CONFIG", "SET", "port", strconv.Itoa(newPort)); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET port: %q", got)
	}
	if got := servertest.MustDo(t, old, "PING"); got != "+PONG\r\n" {
		t.Fatalf("the connection made before: %q", got)
	}
	if !refused(addr) {
		t.Errorf("the old address %s still accepts", addr)
	}
	c := servertest.Dial(t, portAddr(newPort))
	if got := servertest.MustDo(t, c, "CONFIG", "GET", "port"); got != "*2\r\n$4\r\nport\r\n$"+strconv.Itoa(len(strconv.Itoa(newPort)))+"\r\n"+strconv.Itoa(newPort)+"\r\n" {
		t.Errorf("CONFIG GET port: %q", got)
	}
	if info := servertest.MustDo(t, c, "INFO", "server"); !strings.Contains(info, "tcp_port:"+strconv.Itoa(newPort)+"\r\n") {
		t.Errorf("INFO tcp_port is not %d", newPort)
	}

	// A port somebody else listens on.
	busy, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)
	before := map[string]string{}
	for _, p := range []string{"maxmemory", "client-query-buffer-limit", "port"} {
		before[p] = servertest.MustDo(t, c, "CONFIG", "GET", p)
	}
	got := servertest.MustDo(t, c, "CONFIG", "SET", "maxmemory", "10000001", "port", busyPort, "client-query-buffer-limit", "10m")
	if want := "-ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port. Check server logs.\r\n"; got != want {
		t.Errorf("CONFIG SET port %s (in use): %q, want %q", busyPort, got, want)
	}
	for p, v := range before {
		if got := servertest.MustDo(t, c, "CONFIG", "GET", p); got != v {
			t.Errorf("after the failed CONFIG SET, %s is %q, was %q", p, got, v)
		}
	}
	if got := servertest.MustDo(t, servertest.Dial(t, portAddr(newPort)), "PING"); got != "+PONG\r\n" {
		t.Errorf("a new connection after the failed CONFIG SET: %q", got)
	}
}

// TestConfigSetBind changes the addresses listened on: a bad address
// fails with Redis's error and keeps the listener; an empty list listens
// nowhere while the clients connected stay; an optional address the
// system lacks is skipped.
func TestConfigSetBind(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	c := servertest.Dial(t, addr)
	steps := []struct {
		bind      string
		want      string
		listening bool
	}{
		{"999.999.999.999", "-ERR CONFIG SET failed (possibly related to argument 'bind') - Failed to bind to specified addresses.\r\n", true},
		{"", "+OK\r\n", false},
		{"127.0.0.1", "+OK\r\n", true},
		// 192.0.2.1 (TEST-NET-1) is on no interface of this machine.
		{"127.0.0.1 -192.0.2.1", "+OK\r\n", true},
		{"192.0.2.1", "-ERR CONFIG SET failed (possibly related to argument 'bind') - Failed to bind to specified addresses.\r\n", true},
		{"*", "+OK\r\n", true},
		{"127.0.0.1", "+OK\r\n", true},
	}
	shown := "127.0.0.1"
	for _, st := range steps {
		if got := servertest.MustDo(t, c, "CONFIG", "SET", "bind", st.bind); got != st.want {
			t.Fatalf("CONFIG SET bind %q: %q, want %q", st.bind, got, st.want)
		}
		if st.want == "+OK\r\n" {
			shown = st.bind
		}
		if got, want := servertest.MustDo(t, c, "CONFIG", "GET", "bind"), "*2\r\n$4\r\nbind\r\n$"+strconv.Itoa(len(shown))+"\r\n"+shown+"\r\n"; got != want {
			t.Errorf("after bind %q: CONFIG GET bind %q, want %q", st.bind, got, want)
		}
		if refused(addr) == st.listening {
			t.Errorf("after bind %q: listening %v, want %v", st.bind, !st.listening, st.listening)
		}
		if got := servertest.MustDo(t, c, "PING"); got != "+PONG\r\n" {
			t.Fatalf("after bind %q the client connected before: %q", st.bind, got)
		}
	}
}
