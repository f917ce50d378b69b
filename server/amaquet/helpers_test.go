package amaquet_test

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/amaquet"
	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/sync/apikey"
)

// env is a recached engine serving RESP and Amaquet on loopback ports.
type env struct {
	resp string // the RESP address
	amq  string // the Amaquet address
	srv  *server.Server
	key  ed25519.PrivateKey
	l    *amaquet.Listener
}

// start runs recached in-process with opt's limits; keys, when not nil,
// are the API keys (the JSON of an --api-keys file).
func start(t testing.TB, opt amaquet.Options, keys string) *env {
	t.Helper()
	return startConfig(t, server.DefaultConfig(), opt, keys)
}

// startConfig is start with the engine's configuration cfg.
func startConfig(t testing.TB, cfg server.Config, opt amaquet.Options, keys string) *env {
	t.Helper()
	cfg.AppendOnly = false
	cfg.Save = ""
	cfg.Dir = t.TempDir()
	respAddr, srv := servertest.StartRecached(t, cfg)
	if keys != "" {
		path := filepath.Join(t.TempDir(), "keys.json")
		if err := os.WriteFile(path, []byte(keys), 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := apikey.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		srv.SetAPIKeys(st)
	}
	k, err := amaquet.LoadIdentity(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	opt.Addr = "127.0.0.1:0"
	opt.Identity = k
	l, err := amaquet.New(srv, opt)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.RunListener(ctx, l, "amaquet") }()
	<-l.Ready()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("amaquet listener: %v", err)
		}
	})
	return &env{resp: respAddr, amq: l.Addr(), srv: srv, key: k, l: l}
}

// frame is a frame as the test client reads it, decoded from the seed's
// table independently of the server's code.
type frame struct {
	version uint8
	kind    uint8
	flags   uint16
	op      uint16
	id      uint64
	payload []byte
}

// envelope is a response payload.
type envelope struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// client is a raw Amaquet client.
type client struct {
	t  testing.TB
	nc net.Conn
	r  *bufio.Reader
}

func dial(t testing.TB, addr string) *client {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &client{t: t, nc: nc, r: bufio.NewReaderSize(nc, 1<<16)}
}

// header builds a header from the seed's table.
func header(version, kind uint8, flags, op, reserved uint16, id uint64, n uint32) []byte {
	b := make([]byte, 24)
	copy(b, "AMQT")
	b[4], b[5] = version, kind
	binary.BigEndian.PutUint16(b[6:], flags)
	binary.BigEndian.PutUint16(b[8:], op)
	binary.BigEndian.PutUint16(b[10:], reserved)
	binary.BigEndian.PutUint64(b[12:], id)
	binary.BigEndian.PutUint32(b[20:], n)
	return b
}

// request builds a well-formed request frame.
func request(op uint16, id uint64, payload string) []byte {
	return append(header(1, 1, 0, op, 0, id, uint32(len(payload))), payload...)
}

func (c *client) write(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// send sends a request.
func (c *client) send(op uint16, id uint64, payload string) {
	c.t.Helper()
	c.write(request(op, id, payload))
}

// read reads one frame, failing the test after 10 s.
func (c *client) read() frame {
	c.t.Helper()
	f, err := c.tryRead(10 * time.Second)
	if err != nil {
		c.t.Fatalf("read frame: %v", err)
	}
	return f
}

// tryRead reads one frame within d.
func (c *client) tryRead(d time.Duration) (frame, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(d))
	var h [24]byte
	if _, err := io.ReadFull(c.r, h[:]); err != nil {
		return frame{}, err
	}
	if string(h[:4]) != "AMQT" {
		return frame{}, errors.New("bad magic " + string(h[:4]))
	}
	if binary.BigEndian.Uint16(h[10:]) != 0 {
		return frame{}, errors.New("reserved field set")
	}
	f := frame{
		version: h[4], kind: h[5],
		flags: binary.BigEndian.Uint16(h[6:]),
		op:    binary.BigEndian.Uint16(h[8:]),
		id:    binary.BigEndian.Uint64(h[12:]),
	}
	f.payload = make([]byte, binary.BigEndian.Uint32(h[20:]))
	if _, err := io.ReadFull(c.r, f.payload); err != nil {
		return frame{}, err
	}
	return f, nil
}

// closed reports whether the server closed the connection (EOF) with
// nothing more sent.
func (c *client) closed() bool {
	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := c.r.ReadByte()
	return errors.Is(err, io.EOF) || err != nil && strings.Contains(err.Error(), "reset")
}

// env decodes a response's envelope.
func (f frame) env(t testing.TB) envelope {
	t.Helper()
	var e envelope
	if err := json.Unmarshal(f.payload, &e); err != nil {
		t.Fatalf("response %q: %v", f.payload, err)
	}
	return e
}

// code returns a response's error code, "" on success.
func (f frame) code(t testing.TB) string {
	t.Helper()
	e := f.env(t)
	if e.OK {
		return ""
	}
	if e.Error == nil {
		t.Fatalf("failure without error: %s", f.payload)
	}
	return e.Error.Code
}

// do sends a request and reads its response, which must be the next
// frame.
func (c *client) do(op uint16, id uint64, payload string) frame {
	c.t.Helper()
	c.send(op, id, payload)
	f := c.read()
	if f.id != id || f.op != op || f.kind != 2 {
		c.t.Fatalf("response kind %d op %d id %d, want kind 2 op %d id %d: %s", f.kind, f.op, f.id, op, id, f.payload)
	}
	return f
}

// result runs a COMMAND that must succeed and returns its result's JSON.
func (c *client) result(id uint64, payload string) string {
	c.t.Helper()
	f := c.do(amaquet.OpCommand, id, payload)
	e := f.env(c.t)
	if !e.OK {
		c.t.Fatalf("%s: %s", payload, f.payload)
	}
	return string(e.Result)
}

// cmd encodes a COMMAND payload of string arguments.
func cmd(args ...string) string {
	b, _ := json.Marshal(map[string]any{"command": args[0], "args": args[1:]})
	return string(b)
}

// resp runs one command over RESP and returns the reply's bytes.
func (e *env) respDo(t testing.TB, args ...string) string {
	t.Helper()
	c := servertest.Dial(t, e.resp)
	rep, err := c.Do(args...)
	if err != nil {
		t.Fatal(err)
	}
	return string(rep)
}
