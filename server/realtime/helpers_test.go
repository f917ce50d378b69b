package realtime

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/sync/apikey"
	"github.com/recached/recached/sync/realtime/wire"
)

// testKeys is the API keys file of most tests: k1 may do everything on
// chat:*, and subscribe anywhere; k2 only subscribe on news:*; k3 may
// do everything everywhere.
const testKeys = `[
 {"id":"k1","secret":"s1","capability":{"chat:*":["subscribe","publish","presence"],"*":["subscribe"]}},
 {"id":"k2","secret":"s2","capability":{"news:*":["subscribe"]}},
 {"id":"k3","secret":"s3","capability":{"*":["*"]}}
]`

// rig is a recached engine with its RESP listener and a realtime listener,
// in-process on free loopback ports.
type rig struct {
	srv  *server.Server
	resp string // the RESP address
	addr string // the realtime address
	l    *Listener
	keys *apikey.Store
}

// quickOptions are the default options with timers short enough for
// tests to watch them.
func quickOptions() Options {
	o := DefaultOptions()
	o.CloseWait = 500 * time.Millisecond
	return o
}

// startRig starts a rig with the keys file keys and options opts; cfg,
// when not nil, adjusts the engine's configuration first.
func startRig(t *testing.T, keys string, opts Options, cfg func(*server.Config)) *rig {
	t.Helper()
	c := server.DefaultConfig()
	path := filepath.Join(t.TempDir(), "keys.json")
	if keys != "" {
		if err := os.WriteFile(path, []byte(keys), 0o600); err != nil {
			t.Fatal(err)
		}
		c.APIKeysFile = path
	} else {
		keys = testKeys // for minting only: the server has no keys
		if err := os.WriteFile(path, []byte(keys), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c.AppendOnly = false
	c.Save = ""
	c.Dir = t.TempDir()
	if cfg != nil {
		cfg(&c)
	}
	resp, srv := servertest.StartRecached(t, c)
	store, err := apikey.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.APIKeysFile != "" {
		srv.SetAPIKeys(store)
	}
	l := New(srv, "127.0.0.1:0", opts)
	if err := l.Listen(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- l.Serve() }()
	<-l.Ready()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := l.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return &rig{srv: srv, resp: resp, addr: l.Addr(), l: l, keys: store}
}

// token mints an access token of key id valid for ttl.
func (r *rig) token(t *testing.T, id string, ttl time.Duration, capab apikey.Capability, clientID string) string {
	t.Helper()
	k := r.keys.Key(id)
	if k == nil {
		t.Fatalf("no key %s", id)
	}
	tok, err := apikey.Mint(k, ttl, capab, clientID, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// frame is one decoded server frame.
type frame map[string]any

func (f frame) op() int { n, _ := f["op"].(float64); return int(n) }

func (f frame) str(k string) string { s, _ := f[k].(string); return s }

func (f frame) num(k string) int { n, _ := f[k].(float64); return int(n) }

func (f frame) String() string { b, _ := json.Marshal(map[string]any(f)); return string(b) }

// client is a real gorilla/websocket client of the realtime port. A
// goroutine reads its frames into a channel, so a test can wait for the
// next one with a bound.
type client struct {
	t      *testing.T
	ws     *websocket.Conn
	frames chan frame
	// closed receives the close error once the connection is gone.
	closed chan error
	// beats makes next return the server's own Heartbeats (op 11 with
	// no id), which it skips otherwise: they come whenever the server
	// has sent nothing for a while.
	beats bool
}

// dial connects with the raw query string query and returns the client;
// the caller reads the first frame itself.
func (r *rig) dial(t *testing.T, query string) *client {
	t.Helper()
	c, err := dialClient(t, r.addr, query)
	if err != nil {
		t.Fatalf("dial ?%s: %v", query, err)
	}
	return c
}

func dialClient(t *testing.T, addr, query string) (*client, error) {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	ws, _, err := d.Dial("ws://"+addr+"/?"+query, nil)
	if err != nil {
		return nil, err
	}
	c := &client{t: t, ws: ws, frames: make(chan frame, 100000), closed: make(chan error, 1)}
	t.Cleanup(func() { ws.Close() })
	go c.readLoop()
	return c, nil
}

func (c *client) readLoop() {
	for {
		_, b, err := c.ws.ReadMessage()
		if err != nil {
			c.closed <- err
			close(c.frames)
			return
		}
		var f frame
		if err := json.Unmarshal(b, &f); err != nil {
			f = frame{"unparsable": string(b)}
		}
		c.frames <- f
	}
}

// connect dials with query and expects Connected; it returns the client
// and its connection id.
func (r *rig) connect(t *testing.T, query string) (*client, string) {
	t.Helper()
	c := r.dial(t, query)
	f := c.next()
	if f.op() != wire.Connected {
		t.Fatalf("first frame %v, want Connected", f)
	}
	return c, f.str("connectionId")
}

// keyQuery returns the query string of key id's plain credential.
func keyQuery(id string) string {
	secret := map[string]string{"k1": "s1", "k2": "s2", "k3": "s3"}[id]
	return "key=" + url.QueryEscape(secret+"."+id)
}

// send writes v as one JSON text frame.
func (c *client) send(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	c.sendRaw(websocket.TextMessage, b)
}

func (c *client) sendRaw(typ int, b []byte) {
	c.t.Helper()
	_ = c.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := c.ws.WriteMessage(typ, b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// next returns the next frame, failing the test when none comes within
// 10 seconds (a bound, not a timing assertion) or the connection closed.
func (c *client) next() frame {
	c.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case f, ok := <-c.frames:
			if !ok {
				c.t.Fatalf("connection closed: %v", <-c.closed)
			}
			if !c.beats && f.op() == wire.Heartbeat && f["id"] == nil {
				continue
			}
			return f
		case <-timeout:
			c.t.Fatalf("no frame within 10s")
		}
	}
}

// expect reads the next frame and checks that it has op and the given
// fields (values compared as their JSON text).
func (c *client) expect(op int, fields map[string]any) frame {
	c.t.Helper()
	f := c.next()
	if f.op() != op {
		c.t.Fatalf("got %v, want op %d %v", f, op, fields)
	}
	for k, want := range fields {
		gj, _ := json.Marshal(f[k])
		wj, _ := json.Marshal(want)
		if string(gj) != string(wj) {
			c.t.Fatalf("got %v, want %s=%s", f, k, wj)
		}
	}
	return f
}

// request sends v (which has an id) and expects its Ack.
func (c *client) request(v map[string]any) {
	c.t.Helper()
	c.send(v)
	c.expect(wire.Ack, map[string]any{"id": v["id"]})
}

// expectClose waits for the connection to end with a close frame of code.
func (c *client) expectClose(code int) {
	c.t.Helper()
	for {
		select {
		case f, ok := <-c.frames:
			if ok && !c.beats && f.op() == wire.Heartbeat && f["id"] == nil {
				continue
			}
			if !ok {
				err := <-c.closed
				if !websocket.IsCloseError(err, code) {
					c.t.Fatalf("closed with %v, want close code %d", err, code)
				}
				return
			}
			c.t.Fatalf("frame %v before the close", f)
		case <-time.After(10 * time.Second):
			c.t.Fatalf("not closed within 10s")
		}
	}
}

// quiet checks that no frame is waiting after a Heartbeat round trip: the
// server answers frames in order, so anything it queued before the answer
// would have arrived first.
func (c *client) quiet() {
	c.t.Helper()
	c.send(map[string]any{"op": wire.Heartbeat, "id": "quiet"})
	f := c.next()
	if f.op() != wire.Heartbeat || f.str("id") != "quiet" {
		c.t.Fatalf("unexpected frame %v", f)
	}
}

// respDo runs one command on the RESP port and returns its reply bytes.
func (r *rig) respDo(t *testing.T, args ...string) string {
	t.Helper()
	c := servertest.Dial(t, r.resp)
	rep, err := c.Do(args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return string(rep)
}

// waitFor polls cond until it holds, for at most 10 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
