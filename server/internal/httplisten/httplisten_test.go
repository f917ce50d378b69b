package httplisten

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
)

// TestServeAndShutdown binds a free port, serves a request, and checks
// that Serve returns nil after Shutdown and that a taken port is an error
// naming the listener that wraps the system's.
func TestServeAndShutdown(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hi") })
	l := New("Test", "127.0.0.1:0", h, nil)
	if err := l.Listen(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- l.Serve() }()
	<-l.Ready()
	resp, err := http.Get("http://" + l.Addr() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "hi" {
		t.Fatalf("body %q", body)
	}
	taken := New("Test", l.Addr(), h, func(ln net.Listener) net.Listener { return ln })
	if err := taken.Listen(); !errors.Is(err, syscall.EADDRINUSE) || !strings.HasPrefix(err.Error(), "test listener on ") {
		t.Fatalf("second bind of %s: %v", l.Addr(), err)
	}
	if err := l.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve after Shutdown: %v", err)
	}
}
