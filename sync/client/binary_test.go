package client

import (
	"bytes"
	"testing"

	"github.com/recached/recached/server"
)

// Values that are not UTF-8 round-trip on both transports: the server sends
// their frames as binary WebSocket frames, the client reads them and sends
// its own such writes in binary frames (a text frame must be UTF-8, and the
// server fails the connection on one that is not). The connection stays up
// throughout.
func TestBinaryValuesRoundTrip(t *testing.T) {
	s := startServer(t, server.Config{})
	values := [][]byte{[]byte("\xff\xfe\x00"), []byte("ok\xe2\x82"), []byte("caf\u00e9")}
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			ctx := ctx10(t)
			pre := "bin" + tr + ":"
			backend := newClient(t, Options{URL: s.url("tcp")})
			states := newStateLog()
			c := newClient(t, Options{URL: s.url(tr), OnState: states.on})
			c.Query(pre+"*", func(string, Value) {})
			waitFor(t, "open", func() bool { return c.State() == StateOpen })
			if _, err := c.Do(ctx, "PING"); err != nil {
				t.Fatal(err)
			}
			for i, v := range values {
				key := pre + "tcp" + string(rune('a'+i))
				if _, err := backend.WriteArgs([][]byte{[]byte("SET"), []byte(key), v}).Wait(ctx); err != nil {
					t.Fatalf("backend SET %q: %v", v, err)
				}
				waitFor(t, "push of "+key, func() bool {
					got, ok := c.Get(key)
					return ok && bytes.Equal(got.Str, v)
				})

				own := pre + "own" + string(rune('a'+i))
				if _, err := c.WriteArgs([][]byte{[]byte("HSET"), []byte(own), v, v}).Wait(ctx); err != nil {
					t.Fatalf("client HSET %q: %v", v, err)
				}
				r, err := backend.Do(ctx, "HGET", own, string(v))
				if err != nil || !bytes.Equal(r.Str, v) {
					t.Fatalf("HGET %s %q on the server = %q, %v", own, v, r.Str, err)
				}
				r, err = c.Do(ctx, "GET", key)
				if err != nil || !bytes.Equal(r.Str, v) {
					t.Fatalf("GET %s through the client = %q, %v", key, r.Str, err)
				}
			}
			if st := c.Stats(); st.Connects != 1 {
				t.Errorf("%d sessions, want 1: the connection dropped (states %v)", st.Connects, states.states())
			}
		})
	}
}
