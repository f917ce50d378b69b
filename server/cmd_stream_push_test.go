package server_test

import (
	"strings"
	"testing"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// TestXReadGroupSelfNotification checks that a RESP3 client subscribed to
// the keyspace events of the streams it reads gets the push of the
// consumer its XREADGROUP creates before the reply, whole, whichever
// stream the new consumer is in.
func TestXReadGroupSelfNotification(t *testing.T) {
	tests := []struct {
		name     string
		existing []string // streams whose group already has consumer c
		want     []string // the keys of the pushes
	}{
		{"first stream", []string{"s2"}, []string{"s1"}},
		{"second stream", []string{"s1"}, []string{"s2"}},
		{"both", nil, []string{"s1", "s2"}},
		{"neither", []string{"s1", "s2"}, nil},
	}
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := servertest.Dial(t, addr)
			servertest.MustDo(t, c, "FLUSHALL")
			for _, k := range []string{"s1", "s2"} {
				servertest.MustDo(t, c, "XADD", k, "1-1", "f", "v")
				servertest.MustDo(t, c, "XGROUP", "CREATE", k, "g", "0")
			}
			for _, k := range tc.existing {
				servertest.MustDo(t, c, "XGROUP", "CREATECONSUMER", k, "g", "c")
			}
			servertest.MustDo(t, c, "CONFIG", "SET", "notify-keyspace-events", "Kt")
			defer servertest.MustDo(t, servertest.Dial(t, addr), "CONFIG", "SET", "notify-keyspace-events", "")
			servertest.MustDo(t, c, "HELLO", "3")
			for _, k := range []string{"s1", "s2"} {
				servertest.MustDo(t, c, "SUBSCRIBE", "__keyspace@0__:"+k)
			}
			if err := c.Send(servertest.Encode("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s1", "s2", ">", ">")); err != nil {
				t.Fatal(err)
			}
			for _, k := range tc.want {
				push, err := c.Read()
				if err != nil {
					t.Fatal(err)
				}
				want := ">3\r\n$7\r\nmessage\r\n$17\r\n__keyspace@0__:" + k + "\r\n$21\r\nxgroup-createconsumer\r\n"
				if string(push) != want {
					t.Fatalf("push %q, want %q", push, want)
				}
			}
			rep, err := c.Read()
			if err != nil {
				t.Fatal(err)
			}
			entry := "*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"
			want := "%2\r\n$2\r\ns1\r\n" + entry + "$2\r\ns2\r\n" + entry
			if string(rep) != want {
				t.Fatalf("reply %q, want %q", rep, want)
			}
			if strings.Contains(string(rep), "createconsumer") {
				t.Fatal("push inside the reply")
			}
		})
	}
}
