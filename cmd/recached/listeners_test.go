package main

import (
	"errors"
	"net"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/tcp"
)

// TestDefaultPortInUse starts the binary, like a second redis-server, with
// only its RESP port given while the realtime protocol's default port is
// taken: it serves RESP without that listener. The same port given
// explicitly refuses to start.
func TestDefaultPortInUse(t *testing.T) {
	bin := build(t)
	def := server.DefaultConfig().RealtimePort
	if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(def))); err == nil {
		defer l.Close()
	} else if !errors.Is(err, syscall.EADDRINUSE) {
		t.Skipf("cannot hold port %d: %v", def, err)
	}
	_, addr := startBinary(t, bin)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "+PONG\r\n" {
		t.Fatalf("PING with the realtime port taken: %q, %v", buf[:n], err)
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port, err := tcp.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--ws-port", "0", "--amaquet-port", "0",
		"--realtime-port", strconv.Itoa(busy.Addr().(*net.TCPAddr).Port), "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd); code == 0 {
		t.Fatal("an explicitly chosen port in use: the server started")
	}
}
