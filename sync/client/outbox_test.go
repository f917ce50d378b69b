package client

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recached/recached/server"
	recsync "github.com/recached/recached/sync"
)

// deadURL returns a tcp:// URL where nothing listens, for clients that
// must stay offline.
func deadURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "tcp://" + addr
}

func TestFileStorage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s, err := NewFileStorage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("directory: %v %v", fi, err)
	}
	if b, err := s.Load("epoch"); b != nil || err != nil {
		t.Fatalf("Load of a missing blob = %q, %v", b, err)
	}
	for _, data := range []string{"1", "22", ""} {
		if err := s.Save("epoch", []byte(data)); err != nil {
			t.Fatal(err)
		}
		if b, err := s.Load("epoch"); string(b) != data || err != nil {
			t.Fatalf("Load = %q, %v; want %q", b, err, data)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "epoch" {
		t.Errorf("directory holds %v, want only the blob (no temporary files)", entries)
	}
	for _, bad := range []string{"", "../x", "a/b", ".hidden"} {
		if err := s.Save(bad, nil); err == nil {
			t.Errorf("Save(%q) succeeded", bad)
		}
		if _, err := s.Load(bad); err == nil {
			t.Errorf("Load(%q) succeeded", bad)
		}
	}
}

// TestIdentityAndEpoch checks that the client id is random, 128 bits in
// hex, and stable across clients of one Storage, and that each client
// (each session) bumps and persists the epoch that heads its wire ids.
func TestIdentityAndEpoch(t *testing.T) {
	dir := t.TempDir()
	url := deadURL(t)
	var ids []string
	for i := 1; i <= 3; i++ {
		fs, err := NewFileStorage(dir)
		if err != nil {
			t.Fatal(err)
		}
		c, err := New(Options{URL: url, Storage: fs, OutboxSaveInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(c.ID()) {
			t.Fatalf("client id %q is not 128 bits of hex", c.ID())
		}
		ids = append(ids, c.ID())
		if c.Epoch() != uint64(i) {
			t.Errorf("client %d: epoch %d", i, c.Epoch())
		}
		b, _ := fs.Load("epoch")
		if string(b) != strconv.Itoa(i) {
			t.Errorf("client %d: saved epoch %q", i, b)
		}
		for n := uint64(1); n <= 2; n++ {
			w := c.Write("SET", "k", "v")
			if w.ID != uint64(i)<<32|n {
				t.Errorf("client %d write %d: wire id %#x", i, n, w.ID)
			}
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if ids[0] != ids[1] || ids[1] != ids[2] {
		t.Errorf("client id changed across sessions: %v", ids)
	}
	other, err := New(Options{URL: url, OutboxSaveInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if other.ID() == ids[0] || other.Epoch() != 1 {
		t.Errorf("a fresh storage got id %s epoch %d", other.ID(), other.Epoch())
	}
}

// TestOutboxOverflowAndReplay fills the outbox of an offline client past
// its limit, checks that the oldest writes are dropped and reported, then
// replays the saved outbox through new clients: once (every write
// executes) and again from the same saved state, as a client whose process
// died before saving the acknowledgments would (every write is +DUP).
func TestOutboxOverflowAndReplay(t *testing.T) {
	storage := NewMemoryStorage()
	var mu sync.Mutex
	var dropped []*Write
	c, err := New(Options{URL: deadURL(t), Storage: storage, OutboxSaveInterval: -1,
		MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond,
		OnDrop: func(w *Write) { mu.Lock(); dropped = append(dropped, w); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	const extra = 5
	var writes []*Write
	for i := range MaxOutbox + extra {
		writes = append(writes, c.Write("RPUSH", "ovf", strconv.Itoa(i)))
	}
	mu.Lock()
	if len(dropped) != extra {
		t.Fatalf("%d writes dropped, want %d", len(dropped), extra)
	}
	for i, w := range dropped {
		if w != writes[i] {
			t.Errorf("dropped #%d is write %d", i, w.ID&0xffffffff)
		}
		if _, err := w.Wait(ctx10(t)); !errors.Is(err, ErrDropped) {
			t.Errorf("dropped write resolved with %v", err)
		}
	}
	mu.Unlock()
	ob := c.Outbox()
	if len(ob) != MaxOutbox || ob[0] != writes[extra] || c.Stats().Dropped != extra {
		t.Fatalf("outbox holds %d writes from %d; stats %+v", len(ob), ob[0].ID&0xffffffff, c.Stats())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := writes[extra].Wait(ctx10(t)); !errors.Is(err, ErrClosed) {
		t.Errorf("write pending at Close resolved with %v", err)
	}
	saved, _ := storage.Load("outbox")

	s := startServer(t, server.Config{})
	ctx := ctx10(t)
	for round, wantDups := range []int64{0, MaxOutbox} {
		if err := storage.Save("outbox", saved); err != nil {
			t.Fatal(err)
		}
		r := newClient(t, Options{URL: s.url("ws"), Storage: storage, OutboxSaveInterval: -1})
		ob := r.Outbox()
		if len(ob) != MaxOutbox || ob[0].ID != writes[extra].ID || !bytes.Equal(ob[0].Args[2], []byte(strconv.Itoa(extra))) {
			t.Fatalf("round %d: reloaded outbox of %d writes starting at %#x", round, len(ob), ob[0].ID)
		}
		for _, w := range ob {
			if _, err := w.Wait(ctx); err != nil {
				t.Fatalf("round %d: replayed write: %v", round, err)
			}
		}
		if st := r.Stats(); st.Dups != wantDups || st.Outbox != 0 {
			t.Errorf("round %d: %+v, want %d dups", round, st, wantDups)
		}
		if r.Epoch() != uint64(round+2) {
			t.Errorf("round %d: epoch %d", round, r.Epoch())
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if b, _ := storage.Load("outbox"); string(b) != "*0\r\n" {
			t.Errorf("round %d: outbox saved at Close: %q", round, b)
		}
		n, err := r2(t, s).Do(ctx, "LLEN", "ovf")
		if err != nil || n.Int != MaxOutbox {
			t.Fatalf("round %d: LLEN = %d, %v; want %d", round, n.Int, err, MaxOutbox)
		}
	}
	first, _ := r2(t, s).Do(ctx, "LINDEX", "ovf", "0")
	if first.Text() != strconv.Itoa(extra) {
		t.Errorf("first element %q, want the oldest write kept", first.Text())
	}
}

// r2 returns a plain backend client of s.
func r2(t *testing.T, s *testServer) *Client {
	return newClient(t, Options{URL: s.url("tcp")})
}

// TestReconnectEvents breaks the client's connection and checks the state
// events and that a write made while offline is sent on the next session.
func TestReconnectEvents(t *testing.T) {
	s := startServer(t, server.Config{})
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			ctx := ctx10(t)
			log := newStateLog()
			tracker := &connTracker{}
			c, err := New(Options{URL: s.url(tr), NetDial: tracker.dial, OnState: log.on,
				MinBackoff: 20 * time.Millisecond, MaxBackoff: 40 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			log.waitCount(t, StateOpen, 1)
			tracker.killLast()
			log.waitCount(t, StateOffline, 1)
			w := c.Write("INCR", "re"+tr)
			log.waitCount(t, StateOpen, 2)
			if v, err := w.Wait(ctx); err != nil || v.Int != 1 {
				t.Fatalf("write made offline: %v %v", v, err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			states := log.states()
			want := []State{StateConnecting, StateOpen, StateOffline, StateConnecting, StateOpen, StateClosed}
			if len(states) != len(want) {
				t.Fatalf("states %v, want %v", states, want)
			}
			for i := range want {
				if states[i] != want[i] {
					t.Fatalf("states %v, want %v", states, want)
				}
			}
			log.mu.Lock()
			off, closed := log.events[2], log.events[5]
			log.mu.Unlock()
			if off.Err == nil || off.Retry > 40*time.Millisecond || off.Attempt != 1 {
				t.Errorf("offline event %+v", off)
			}
			if !errors.Is(closed.Err, ErrClosed) {
				t.Errorf("closed event %+v", closed)
			}
			if c.Stats().Connects != 2 {
				t.Errorf("stats %+v", c.Stats())
			}
		})
	}
}

// TestSessionRefused checks that a refused AUTH or SYNC TOKEN keeps the
// client offline, retrying, without sending its outbox, and that the
// right credentials open the session.
func TestSessionRefused(t *testing.T) {
	secret := "s3cret"
	s := startServer(t, server.Config{RequirePass: "pw", TokenSecret: secret})
	token, err := recsync.SignToken([]byte(secret), []string{"tok:*"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, password, token, want string
	}{
		{"bad password", "nope", token, "AUTH refused: WRONGPASS"},
		{"no password", "", token, "refused: NOAUTH"},
		{"bad token", "pw", token + "x", "SYNC TOKEN refused: NOPERM invalid token"},
	}
	for _, tt := range tests {
		for _, tr := range transports {
			t.Run(tt.name+"/"+tr, func(t *testing.T) {
				errs := make(chan error, 64)
				c := newClient(t, Options{URL: s.url(tr), Password: tt.password, Token: tt.token,
					OnState: func(e Event) {
						if e.State == StateOffline {
							select {
							case errs <- e.Err:
							default:
							}
						}
					}})
				w := c.Write("SET", "tok:1", "v")
				select {
				case err := <-errs:
					if err == nil || !strings.Contains(err.Error(), tt.want) {
						t.Errorf("offline with %v, want %q", err, tt.want)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("no offline event")
				}
				select {
				case <-w.Done():
					t.Errorf("write resolved without a session")
				default:
				}
			})
		}
	}
	c := newClient(t, Options{URL: s.url("ws"), Password: "pw", Token: token})
	ctx := ctx10(t)
	if _, err := c.Write("SET", "tok:1", "v").Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write("SET", "out:1", "v").Wait(ctx); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("write out of scope: %v", err)
	}
}

func TestBackoff(t *testing.T) {
	lo, hi := 10*time.Millisecond, 300*time.Millisecond
	for n := range 70 {
		ceil := hi
		if n < 5 {
			ceil = lo << n
		}
		for range 50 {
			if d := backoff(n, lo, hi); d < 0 || d > ceil {
				t.Fatalf("backoff(%d) = %v, want within [0, %v]", n, d, ceil)
			}
		}
	}
}

// TestMaxClientsRefusal checks that the error a full server sends before
// closing a new connection is not taken for the reply to a write: the
// write waits, and runs once a slot frees.
func TestMaxClientsRefusal(t *testing.T) {
	s := startServer(t, server.Config{MaxClients: 1})
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			holder := newClient(t, Options{URL: s.url("tcp")})
			waitFor(t, "holder open", func() bool { return holder.State() == StateOpen })
			errs := make(chan error, 64)
			c := newClient(t, Options{URL: s.url(tr), OnState: func(e Event) {
				if e.State == StateOffline {
					select {
					case errs <- e.Err:
					default:
					}
				}
			}})
			w := c.Write("INCR", "mc"+tr)
			select {
			case err := <-errs:
				if err == nil || !strings.Contains(err.Error(), "max number of clients") {
					t.Errorf("offline with %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no offline event")
			}
			select {
			case <-w.Done():
				t.Fatalf("write resolved by the refusal")
			default:
			}
			holder.Close()
			if v, err := w.Wait(ctx10(t)); err != nil || v.Int != 1 {
				t.Errorf("write after the slot freed: %v %v", v, err)
			}
		})
	}
}

// recordingConn records what the client writes to a real connection.
type recordingConn struct {
	net.Conn
	mu  *sync.Mutex
	out *bytes.Buffer
}

func (c recordingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.out.Write(p)
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// TestSessionOrderOnTheWire checks the bytes a client sends on connecting
// with everything to establish and a write waiting in the outbox: AUTH,
// HELLO 3, SYNC TOKEN, QSUB, KWATCH, SUBSCRIBE, PSUBSCRIBE, then the write
// wrapped in DEDUP with its wire id.
func TestSessionOrderOnTheWire(t *testing.T) {
	secret := "s3cret"
	s := startServer(t, server.Config{RequirePass: "pw", TokenSecret: secret})
	token, err := recsync.SignToken([]byte(secret), []string{"o:*"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var out bytes.Buffer
	var d net.Dialer
	gate := make(chan struct{}) // the first dial waits for the registrations
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return recordingConn{c, &mu, &out}, nil
	}
	storage := NewMemoryStorage()
	// An offline client leaves a write in the saved outbox.
	off, err := New(Options{URL: deadURL(t), Storage: storage, OutboxSaveInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	off.Write("SET", "o:1", "v")
	if err := off.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{URL: s.url("tcp"), Storage: storage, Password: "pw", Token: token, NetDial: dial, OutboxSaveInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Registered before the first connection: part of its establishment.
	c.Query("o:*", func(string, Value) {})
	c.Watch("o:w", func(string, Value) {})
	c.Subscribe("o:ch", func(Message) {})
	c.PSubscribe("o:p*", func(Message) {})
	close(gate)
	ob := c.Outbox()
	if len(ob) != 1 {
		t.Fatalf("outbox %d", len(ob))
	}
	if _, err := ob[0].Wait(ctx10(t)); err != nil {
		t.Fatal(err)
	}
	wid := strconv.FormatUint(1<<32|1, 10)
	want := "*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n" +
		"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n" +
		"*3\r\n$4\r\nSYNC\r\n$5\r\nTOKEN\r\n$" + strconv.Itoa(len(token)) + "\r\n" + token + "\r\n" +
		"*2\r\n$4\r\nQSUB\r\n$3\r\no:*\r\n" +
		"*2\r\n$6\r\nKWATCH\r\n$3\r\no:w\r\n" +
		"*2\r\n$9\r\nSUBSCRIBE\r\n$4\r\no:ch\r\n" +
		"*2\r\n$10\r\nPSUBSCRIBE\r\n$4\r\no:p*\r\n" +
		"*6\r\n$5\r\nDEDUP\r\n$32\r\n" + c.ID() + "\r\n$" + strconv.Itoa(len(wid)) + "\r\n" + wid + "\r\n" +
		"$3\r\nSET\r\n$3\r\no:1\r\n$1\r\nv\r\n"
	mu.Lock()
	got := out.String()
	mu.Unlock()
	if got != want {
		t.Errorf("client sent\n%q\nwant\n%q", got, want)
	}
}
