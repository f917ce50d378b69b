package client

import (
	"context"
	"strings"
	"testing"

	"github.com/recached/recached/resp"
)

// The client routes by the server's command list (sync/commands.json): a
// write of a command DEDUP refuses to wrap, and a plain command the client
// sends itself, are refused before anything is sent, with no copy of the
// server's lists in the client to drift from them.
func TestRoutingFollowsTheServersTable(t *testing.T) {
	c := newClient(t, Options{URL: "tcp://127.0.0.1:1", MinBackoff: 1e9, MaxBackoff: 1e9}) // never connects
	for _, tc := range []struct {
		args  []string
		write string // the Write error, "" when accepted
		send  string // the Send error, "" when accepted
	}{
		{[]string{"SET", "k", "v"}, "", ""},
		{[]string{"zunionstore", "d", "1", "k"}, "", ""},
		{[]string{"GET", "k"}, "", ""},
		{[]string{"ZUNION", "2", "a", "b"}, "", ""},
		{[]string{"PUBLISH", "ch", "m"}, "connection-scoped", ""},
		{[]string{"MULTI"}, "connection-scoped", ""},
		{[]string{"UNWATCH"}, "connection-scoped", ""},
		{[]string{"select", "1"}, "connection-scoped", "managed by the client"},
		{[]string{"QUIT"}, "connection-scoped", "managed by the client"},
		{[]string{"SUBSCRIBE", "ch"}, "connection-scoped", "managed by the client"},
		{[]string{"QSUB", "k:*"}, "connection-scoped", "managed by the client"},
		{[]string{"DEDUP", "id", "1", "SET", "k", "v"}, "connection-scoped", "managed by the client"},
		{[]string{"NOSUCHCOMMAND"}, "", ""},
	} {
		// A refused command is resolved at once; an accepted one waits
		// for a connection.
		check := func(what string, done <-chan struct{}, wait func(context.Context) (resp.Value, error), want string) {
			t.Helper()
			select {
			case <-done:
				_, err := wait(context.Background())
				if want == "" || err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%s %v: %v, want an error saying %q", what, tc.args, err, want)
				}
			default:
				if want != "" {
					t.Errorf("%s %v: queued, want an error saying %q", what, tc.args, want)
				}
			}
		}
		w := c.Write(tc.args...)
		check("Write", w.Done(), w.Wait, tc.write)
		call := c.Send(tc.args...)
		check("Send", call.Done(), call.Wait, tc.send)
	}
}
