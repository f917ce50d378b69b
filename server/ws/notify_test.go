package ws_test

import (
	"testing"

	"github.com/recached/recached/server"
)

// TestKeyspaceNotificationsOnWebSocket checks that keyspace events travel
// the one pub/sub bus: a WebSocket subscriber receives those of writes made
// over RESP, in write order, as RESP3 pushes, and a RESP subscriber those
// of writes made over the WebSocket.
func TestKeyspaceNotificationsOnWebSocket(t *testing.T) {
	e := start(t, server.DefaultConfig())
	tc := e.tcpClient(t)
	tcpDo(t, tc, "CONFIG", "SET", "notify-keyspace-events", "KEA")
	c := e.dial(t)
	c.expect(":1\r\n", "PSUBSCRIBE", "__key*__:*")
	writes := [][]string{{"SET", "k", "v"}, {"LPUSH", "l", "a"}, {"RPOP", "l"}, {"EXPIRE", "k", "100"}, {"DEL", "k"}}
	for _, w := range writes {
		tcpDo(t, tc, w...)
	}
	pm := func(ch, msg string) string { return push("pmessage", "__key*__:*", ch, msg) }
	for _, want := range []string{
		pm("__keyspace@0__:k", "set"), pm("__keyevent@0__:set", "k"),
		pm("__keyspace@0__:l", "lpush"), pm("__keyevent@0__:lpush", "l"),
		pm("__keyspace@0__:l", "rpop"), pm("__keyevent@0__:rpop", "l"),
		pm("__keyspace@0__:l", "del"), pm("__keyevent@0__:del", "l"),
		pm("__keyspace@0__:k", "expire"), pm("__keyevent@0__:expire", "k"),
		pm("__keyspace@0__:k", "del"), pm("__keyevent@0__:del", "k"),
	} {
		if got := c.read(); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	c.noFrame()

	// The other way: a WebSocket write, a RESP subscriber.
	sub := e.tcpClient(t)
	tcpDo(t, sub, "SUBSCRIBE", "__keyevent@0__:hset")
	c.expect(":1\r\n", "HSET", "h", "f", "v")
	rep, err := sub.Read()
	if err != nil {
		t.Fatal(err)
	}
	if want := arr("message", "__keyevent@0__:hset", "h"); string(rep) != want {
		t.Fatalf("RESP subscriber got %q, want %q", rep, want)
	}
}
