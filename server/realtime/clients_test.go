package realtime

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/sync/realtime/wire"
)

// TestBinaryMaxClients: against the built binary, realtime connections
// are clients like the other transports' ones: they count toward
// maxclients (one past it gets a 429 Nack and close 1013, and a slot
// freed by a close serves the next), and INFO's connected_clients,
// CLIENT LIST, CLIENT KILL and the metrics' clients by transport see
// them; the engine's timeout leaves them to their own heartbeats.
func TestBinaryMaxClients(t *testing.T) {
	b := newBinary(t)
	ws := freePort(t)
	b.start("--maxclients", "3", "--ws-port", strconv.Itoa(ws), "--appendonly", "no", "--save", "")
	resp := "127.0.0.1:" + strconv.Itoa(b.resp)
	r := servertest.Dial(t, resp)
	dial := func() *client {
		t.Helper()
		c, err := dialClient(t, b.addr(), keyQuery("k3"))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, c := dial(), dial()
	a.expect(wire.Connected, nil)
	c.expect(wire.Connected, nil)

	info := func(field string) string {
		t.Helper()
		m := regexp.MustCompile(field + `:(\S+)`).FindStringSubmatch(servertest.MustDo(t, r, "INFO", "clients"))
		if m == nil {
			t.Fatalf("INFO clients has no %s", field)
		}
		return m[1]
	}
	if n := info("connected_clients"); n != "3" {
		t.Fatalf("connected_clients %s with one RESP and two realtime clients, want 3", n)
	}
	list := servertest.MustDo(t, r, "CLIENT", "LIST")
	for _, cl := range []*client{a, c} {
		want := fmt.Sprintf("addr=%s laddr=%s ", cl.ws.LocalAddr(), b.addr())
		if !strings.Contains(list, want) {
			t.Fatalf("CLIENT LIST has no line with %q:\n%s", want, list)
		}
	}
	metrics := func() string {
		t.Helper()
		res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", ws))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return string(body)
	}
	for _, want := range []string{`recached_connected_clients{transport="realtime"} 2`, `recached_connected_clients{transport="resp"} 1`} {
		if m := metrics(); !strings.Contains(m, want+"\n") {
			t.Fatalf("/metrics has no %q:\n%s", want, m)
		}
	}

	// Past maxclients: a realtime connection is refused with 429, as
	// the seed's connection ceilings are, and so is a RESP one.
	full := dial()
	full.expect(wire.Nack, map[string]any{"code": codeTooMany, "message": "max number of clients reached"})
	full.expectClose(websocket.CloseTryAgainLater)
	if rep, err := servertest.Dial(t, resp).Read(); err != nil || string(rep) != "-ERR max number of clients reached\r\n" {
		t.Fatalf("RESP connection past maxclients: %q %v", rep, err)
	}
	if n := info("connected_clients"); n != "3" {
		t.Fatalf("connected_clients %s after two refused connections, want 3", n)
	}

	// A closed realtime connection frees its slot.
	_ = a.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
	a.expectClose(websocket.CloseNormalClosure)
	waitFor(t, "a's slot", func() bool { return info("connected_clients") == "2" })
	d := dial()
	d.expect(wire.Connected, nil)

	// CLIENT KILL closes a realtime connection: 4000, then the close.
	if rep := servertest.MustDo(t, r, "CLIENT", "KILL", "ADDR", c.ws.LocalAddr().String()); rep != ":1\r\n" {
		t.Fatalf("CLIENT KILL ADDR: %q, want one client killed", rep)
	}
	c.expect(wire.Nack, map[string]any{"code": codeDisconnected})
	c.expectClose(codeDisconnected)

	// timeout closes an idle RESP client, not an idle realtime one.
	servertest.MustDo(t, r, "CONFIG", "SET", "timeout", "1")
	var ne net.Error
	if _, err := r.Read(); err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("idle RESP client not closed by timeout within 10s: %v", err)
	}
	d.send(map[string]any{"op": wire.Heartbeat, "id": "alive"})
	d.expect(wire.Heartbeat, map[string]any{"id": "alive"})
	if m := metrics(); !strings.Contains(m, `recached_connected_clients{transport="realtime"} 1`+"\n") {
		t.Fatalf("/metrics after the timeout:\n%s", m)
	}
}
