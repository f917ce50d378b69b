package amaquet

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recached/recached/server/servertest"
)

// Many goroutines share one Conn; every answer reaches its own caller.
func TestConcurrentCalls(t *testing.T) {
	p := startProc(t)
	c := p.dial(Options{})
	ctx := testCtx(t)
	const workers, each = 48, 100
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				k, v := fmt.Sprintf("k:%d:%d", w, i), fmt.Sprintf("v:%d:%d", w, i)
				if r, err := c.Do(ctx, "SET", k, v); err != nil || r != "OK" {
					errs <- fmt.Errorf("SET %s: %v %v", k, r, err)
					return
				}
				if r, err := c.Do(ctx, "GET", k); err != nil || r != v {
					errs <- fmt.Errorf("GET %s = %v %v, want %s", k, r, err, v)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n, err := c.Do(ctx, "DBSIZE"); err != nil || n != int64(workers*each) {
		t.Fatalf("DBSIZE = %v %v, want %d", n, err, workers*each)
	}
}

// Do recycles its calls and frames: answers never reach the wrong caller
// when calls abandoned by a cancelled context, error replies and large
// replies mix with checked ones on one connection.
func TestDoRecycledCalls(t *testing.T) {
	p := startProc(t)
	c := p.dial(Options{})
	ctx := testCtx(t)
	big := strings.Repeat("x", 100<<10) // over the size a recycled call keeps
	if _, err := c.Do(ctx, "SET", "big", big); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(ctx, "LPUSH", "list", "a"); err != nil {
		t.Fatal(err)
	}
	const workers, each = 32, 60
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				k, v := fmt.Sprintf("k:%d:%d", w, i), fmt.Sprintf("v:%d:%d", w, i)
				var err error
				var r any
				switch i % 4 {
				case 0: // abandoned: its answer (CANCELLED) comes after Do returned
					cctx, cancel := context.WithTimeout(ctx, time.Millisecond)
					_, err = c.Do(cctx, "BLPOP", "never:"+k, 0)
					cancel()
					if !errors.Is(err, context.DeadlineExceeded) {
						err = fmt.Errorf("BLPOP with a timeout: %v", err)
					} else {
						err = nil
					}
				case 1:
					if _, err = c.Do(ctx, "GET", "list"); !errors.Is(err, ErrWrongType) {
						err = fmt.Errorf("GET list: %v, want WRONGTYPE", err)
					} else {
						err = nil
					}
				case 2:
					if r, err = c.Do(ctx, "GET", "big"); err == nil && r != big {
						err = fmt.Errorf("GET big: %d bytes, want %d", len(fmt.Sprint(r)), len(big))
					}
				case 3:
					if r, err = c.Do(ctx, "SET", k, v); err == nil && r != "OK" {
						err = fmt.Errorf("SET %s = %v", k, r)
					}
					if err != nil {
						break
					}
					if r, err = c.Do(ctx, "GET", k); err == nil && r != v {
						err = fmt.Errorf("GET %s = %v, want %s", k, r, v)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A BLPOP blocked on the connection does not delay later GETs; it
// completes when the list gets an element.
func TestOutOfOrder(t *testing.T) {
	p := startProc(t)
	c := p.dial(Options{})
	ctx := testCtx(t)
	blocked := c.Start(ctx, "BLPOP", "queue", 0)
	if _, err := c.Do(ctx, "SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if r, err := c.Do(ctx, "GET", "k"); err != nil || r != "v" {
			t.Fatalf("GET = %v %v", r, err)
		}
	}
	if isDone(blocked) {
		r, err := blocked.Result()
		t.Fatalf("BLPOP completed before any push: %v %v", r, err)
	}
	if n, err := c.Do(ctx, "RPUSH", "queue", "x"); err != nil || n != int64(1) {
		t.Fatalf("RPUSH = %v %v", n, err)
	}
	r, err := blocked.Result()
	if err != nil || !reflect.DeepEqual(r, []any{"queue", "x"}) {
		t.Fatalf("BLPOP = %#v %v", r, err)
	}
}

// Cancelling a call's context sends CANCEL: Do returns the context's
// error at once; a Start call completes with the server's CANCELLED, after
// which its BLPOP no longer takes pushed elements.
func TestCancelByContext(t *testing.T) {
	p := startProc(t)
	c := p.dial(Options{})
	ctx := testCtx(t)

	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := c.Do(cctx, "BLPOP", "q1", 0)
		done <- err
	}()
	id := waitSent(t, c)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Do after cancel: %v, want context.Canceled", err)
	}
	waitFor(t, 10*time.Second, "the cancelled BLPOP to end", func() bool {
		found, err := c.Cancel(ctx, id)
		return err == nil && !found
	})
	if _, err := c.Do(ctx, "RPUSH", "q1", "kept"); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Do(ctx, "LLEN", "q1"); err != nil || n != int64(1) {
		t.Fatalf("LLEN after the cancelled BLPOP = %v %v, want 1", n, err)
	}

	sctx, scancel := context.WithCancel(ctx)
	call := c.Start(sctx, "BLPOP", "q2", 0)
	if isDone(call) {
		t.Fatal("BLPOP answered at once")
	}
	scancel()
	if _, err := call.Result(); !errors.Is(err, ErrCancelled) {
		t.Fatalf("BLPOP after CANCEL: %v, want CANCELLED", err)
	}
	var e *Error
	if _, err := call.Result(); !errors.As(err, &e) || e.Code != CodeCancelled {
		t.Fatalf("errors.As: %v", err)
	}
	if _, err := c.Do(ctx, "RPUSH", "q2", "kept"); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Do(ctx, "LLEN", "q2"); err != nil || n != int64(1) {
		t.Fatalf("LLEN after the cancelled BLPOP = %v %v, want 1", n, err)
	}

	// Conn.Cancel says whether the request was still active.
	active := c.Start(ctx, "BLPOP", "q3", 0)
	finished := c.Start(ctx, "PING")
	if _, err := finished.Result(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		call *Call
		want bool
	}{{active, true}, {finished, false}} {
		found, err := c.Cancel(ctx, tc.call.ID)
		if err != nil || found != tc.want {
			t.Errorf("Cancel(%d) = %v %v, want %v", tc.call.ID, found, err, tc.want)
		}
	}
	if _, err := active.Result(); !errors.Is(err, ErrCancelled) {
		t.Fatalf("cancelled BLPOP: %v", err)
	}
	if r, err := finished.Result(); err != nil || r != "PONG" {
		t.Fatalf("finished PING after CANCEL: %v %v", r, err)
	}
}

// Cancelling the context of a running script stops it as SCRIPT KILL
// does: the call completes with CANCELLED and the server is free again.
func TestCancelScriptByContext(t *testing.T) {
	p := startProc(t)
	c := p.dial(Options{})
	ctx := testCtx(t)
	sctx, cancel := context.WithCancel(ctx)
	call := c.Start(sctx, "EVAL", "while true do end", 0)
	if isDone(call) {
		t.Fatal("the script answered at once")
	}
	cancel()
	if _, err := call.Result(); !errors.Is(err, ErrCancelled) {
		t.Fatalf("script after CANCEL: %v, want CANCELLED", err)
	}
	if r, err := c.Do(ctx, "SET", "after", "1"); err != nil || r != "OK" {
		t.Fatalf("SET after the cancelled script: %v %v", r, err)
	}
}

// HELLO proves the pinned identity: the right key connects, a wrong key
// or none (without trust on first use) is refused.
func TestHelloPinning(t *testing.T) {
	p := startProc(t)
	right := p.publicKey()
	wrong, _, _ := ed25519.GenerateKey(rand.Reader)
	ctx := testCtx(t)
	for _, tc := range []struct {
		name string
		opts Options
		want error
	}{
		{"pinned", Options{PublicKey: right}, nil},
		{"wrong key", Options{PublicKey: wrong}, ErrIdentity},
		{"trust on first use", Options{TrustOnFirstUse: true}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Dial(ctx, p.Addr, tc.opts)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Dial: %v, want %v", err, tc.want)
			}
			if err != nil {
				return
			}
			defer c.Close()
			h := c.Hello()
			if !bytes.Equal(h.PublicKey, right) || h.Server != "recached" || h.Protocol != 1 || h.MaxPayload <= 0 || h.MaxInflight <= 0 {
				t.Fatalf("Hello = %+v", h)
			}
			if r, err := c.Do(ctx, "PING"); err != nil || r != "PONG" {
				t.Fatalf("PING = %v %v", r, err)
			}
		})
	}
	if _, err := Dial(ctx, p.Addr, Options{}); err == nil {
		t.Fatal("Dial without a pinned key nor trust on first use succeeded")
	}
}

// Transactions run atomically and return every result; DB selects the
// database of a request.
func TestTransactionAndDB(t *testing.T) {
	p := startProc(t)
	c := p.dial(Options{})
	ctx := testCtx(t)
	res, err := c.Transaction(ctx, []any{"SET", "a", "1"}, []any{"INCR", "a"}, []any{"GET", "a"}, []any{"LPUSH", "l", []byte{0xff, 0}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []any{"OK", int64(2), "2", int64(1)}; !reflect.DeepEqual(res, want) {
		t.Fatalf("transaction = %#v, want %#v", res, want)
	}
	// A command failing inside EXEC does not stop the others: its result
	// is its *Error.
	res, err = c.Transaction(ctx, []any{"SET", "s", "1"}, []any{"LPUSH", "s", "x"}, []any{"GET", "s"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || res[0] != "OK" || res[2] != "1" {
		t.Fatalf("transaction with a failing command = %#v", res)
	}
	if e, ok := res[1].(*Error); !ok || !errors.Is(e, ErrWrongType) {
		t.Fatalf("failing command's result = %#v, want a WRONGTYPE *Error", res[1])
	}
	if _, err := c.Transaction(ctx, []any{"GET", "a"}, []any{"NOSUCH"}); !errors.Is(err, ErrUnknownCommand) && !errors.Is(err, ErrBadRequest) && !errors.Is(err, ErrCommandError) {
		t.Fatalf("transaction with an unknown command: %v", err)
	}
	if r, err := c.Do(ctx, "LINDEX", "l", 0); err != nil || !bytes.Equal(r.([]byte), []byte{0xff, 0}) {
		t.Fatalf("LINDEX = %#v %v", r, err)
	}
	if _, err := c.DB(3).Do(ctx, "SET", "only3", "x"); err != nil {
		t.Fatal(err)
	}
	if r, err := c.Do(ctx, "GET", "only3"); err != nil || r != nil {
		t.Fatalf("GET in db 0 = %#v %v, want nil", r, err)
	}
	if r, err := c.DB(3).Do(ctx, "GET", "only3"); err != nil || r != "x" {
		t.Fatalf("GET in db 3 = %#v %v", r, err)
	}
	if r, err := c.DB(3).Transaction(ctx, []any{"EXISTS", "only3"}); err != nil || !reflect.DeepEqual(r, []any{int64(1)}) {
		t.Fatalf("transaction in db 3 = %#v %v", r, err)
	}
}

// Each error code the server sends on an open connection is its typed
// error, matched by errors.Is and errors.As.
func TestErrorCodes(t *testing.T) {
	p := startProc(t, "--amaquet-max-payload", "4096")
	c := p.dial(Options{})
	ctx := testCtx(t)
	if _, err := c.Do(ctx, "LPUSH", "list", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(ctx, "SET", "str", "abc"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []any
		want *Error
	}{
		{[]any{"RENAME", "missing", "x"}, ErrNotFound},
		{[]any{"NOSUCHCOMMAND"}, ErrUnknownCommand},
		{[]any{"GET", "list"}, ErrWrongType},
		{[]any{"INCR", "str"}, ErrCommandError},
		{[]any{"MULTI"}, ErrBadRequest},
		{[]any{"SELECT", "1"}, ErrBadRequest},
		{[]any{"SET", "big", string(make([]byte, 5000))}, ErrPayloadTooLarge},
	} {
		_, err := c.Do(ctx, tc.args[0].(string), tc.args[1:]...)
		var e *Error
		if !errors.Is(err, tc.want) || !errors.As(err, &e) || e.Code != tc.want.Code {
			t.Errorf("%v: %v, want %s", tc.args, err, tc.want.Code)
			continue
		}
		for _, other := range []*Error{ErrNotFound, ErrInternal, ErrOverloaded} {
			if other != tc.want && errors.Is(err, other) {
				t.Errorf("%v: %v also matches %s", tc.args, err, other.Code)
			}
		}
	}
	var e *Error
	if _, err := c.Do(ctx, "RENAME", "missing", "x"); !errors.As(err, &e) || e.Message != "key not found" {
		t.Errorf("NOT_FOUND message: %v", err)
	}

	// OVERLOADED: one command more than max_inflight.
	max := c.Hello().MaxInflight
	bctx, cancel := context.WithCancel(ctx)
	var calls []*Call
	for i := 0; i < max; i++ {
		calls = append(calls, c.Start(bctx, "BLPOP", "never", 0))
	}
	// The server admits commands in read order: the next one is over.
	extra := c.Start(ctx, "GET", "str")
	if _, err := extra.Result(); !errors.Is(err, ErrOverloaded) {
		t.Errorf("command %d while %d block: %v, want OVERLOADED", max+1, max, err)
	}
	cancel()
	for _, call := range calls {
		if _, err := call.Result(); !errors.Is(err, ErrCancelled) && !errors.Is(err, ErrOverloaded) {
			t.Errorf("BLPOP %d: %v", call.ID, err)
		}
	}
	if r, err := c.Do(ctx, "GET", "str"); err != nil || r != "abc" {
		t.Fatalf("GET after the overload = %v %v", r, err)
	}
}

// Error codes a well-behaved client never provokes, with frames written
// by hand on the client's own link: the answer still reaches the call of
// that request ID as its typed error.
func TestErrorCodesRawFrames(t *testing.T) {
	p := startProc(t, "--amaquet-max-payload", "8192", "--amaquet-payload-budget", "4096")
	c := p.dial(Options{})
	ctx := testCtx(t)

	// UNKNOWN_OPCODE: the connection stays open.
	if _, err := c.roundTrip(ctx, Opcode(99), []byte(`{}`), "op 99"); !errors.Is(err, ErrUnknownOpcode) {
		t.Fatalf("opcode 99: %v", err)
	}
	// DUPLICATE_REQUEST: a second frame with the ID of an active BLPOP.
	blocked := c.Start(ctx, "BLPOP", "dup", 0)
	l, err := c.getLink(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := c.DB(0).appendPayload(nil, "GET", []any{"x"})
	l.out <- l.frame(OpCommand, blocked.ID, p2)
	if _, err := blocked.Result(); !errors.Is(err, ErrDuplicateRequest) {
		t.Fatalf("duplicate of request %d: %v", blocked.ID, err)
	}
	if _, err := c.Cancel(ctx, blocked.ID); err != nil {
		t.Fatal(err)
	}
	if r, err := c.Do(ctx, "PING"); err != nil || r != "PONG" {
		t.Fatalf("PING = %v %v", r, err)
	}

	// Header errors: one error response, then the server closes.
	for _, tc := range []struct {
		name  string
		patch func([]byte)
		want  *Error
	}{
		{"version 2", func(b []byte) { b[4] = 2 }, ErrUnsupportedVersion},
		{"flag set", func(b []byte) { b[7] = 1 }, ErrProtocolError},
		{"reserved set", func(b []byte) { b[11] = 1 }, ErrProtocolError},
		{"kind response", func(b []byte) { b[5] = 2 }, ErrProtocolError},
		{"bad magic", func(b []byte) { b[0] = 'X' }, ErrProtocolError},
		{"length over max_payload", func(b []byte) { binary.BigEndian.PutUint32(b[20:], 10000) }, ErrPayloadTooLarge},
		{"length over the payload budget", func(b []byte) { binary.BigEndian.PutUint32(b[20:], 6000) }, ErrOverloaded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := c.getLink(ctx)
			if err != nil {
				t.Fatal(err)
			}
			call := &Call{ID: c.nextID.Add(1), name: tc.name, l: l, done: make(chan struct{})}
			if !l.register(call) {
				t.Fatal("link dead")
			}
			f := l.frame(OpCommand, call.ID, p2)
			tc.patch(*f)
			l.out <- f
			if _, err := call.Result(); !errors.Is(err, tc.want) {
				t.Fatalf("%s: %v, want %s", tc.name, err, tc.want.Code)
			}
			select {
			case <-l.done:
			case <-time.After(10 * time.Second):
				t.Fatal("the server did not close the connection")
			}
			if r, err := c.Do(ctx, "PING"); err != nil || r != "PONG" {
				t.Fatalf("PING after reconnecting = %v %v", r, err)
			}
		})
	}
}

// waitSent waits until c has exactly one call in flight, and the server
// has read it (a PING sent after it is answered), and returns its ID.
func waitSent(t *testing.T, c *Conn) uint64 {
	t.Helper()
	var id uint64
	waitFor(t, 10*time.Second, "the call to be sent", func() bool {
		l, err := c.getLink(context.Background())
		if err != nil {
			return false
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		for k := range l.calls {
			id = k
		}
		return len(l.calls) == 1
	})
	if _, err := c.Do(testCtx(t), "PING"); err != nil {
		t.Fatal(err)
	}
	return id
}

// Close ends every goroutine the Conn started and fails calls in flight.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	p := startProc(t)
	base := runtime.NumGoroutine()
	c := p.dial(Options{})
	ctx := testCtx(t)
	if _, err := c.Do(ctx, "SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	sub, err := c.Subscribe(ctx, "bus", "x", 4)
	if err != nil {
		t.Fatal(err)
	}
	blocked := c.Start(ctx, "BLPOP", "q", 0)
	cctx, cancel := context.WithCancel(ctx)
	watched := c.Start(cctx, "BLPOP", "q2", 0)
	c.Close()
	if _, err := blocked.Result(); !errors.Is(err, ErrClosed) || !errors.Is(err, ErrDisconnected) {
		t.Fatalf("blocked call after Close: %v", err)
	}
	if _, err := watched.Result(); !errors.Is(err, ErrClosed) {
		t.Fatalf("watched call after Close: %v", err)
	}
	cancel()
	if _, ok := <-sub.C; ok || !errors.Is(sub.Err(), ErrClosed) {
		t.Fatalf("subscription after Close: open=%v err=%v", ok, sub.Err())
	}
	if _, err := c.Do(ctx, "GET", "k"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Do after Close: %v", err)
	}
	waitFor(t, 10*time.Second, "goroutines back to "+strconv.Itoa(base), func() bool { return runtime.NumGoroutine() <= base })
}

// With WaitForSlot a command over max_inflight waits for a slot instead
// of being refused: it runs once a blocked command ends; a waiting call
// whose context ends returns its error.
func TestWaitForSlot(t *testing.T) {
	p := startProc(t, "--amaquet-max-inflight", "4")
	c := p.dial(Options{WaitForSlot: true})
	ctx := testCtx(t)
	if _, err := c.Do(ctx, "SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	var blocked []*Call
	for i := 0; i < 4; i++ {
		blocked = append(blocked, c.Start(ctx, "BLPOP", "q", 0))
	}
	got := make(chan error, 1)
	go func() {
		r, err := c.Do(ctx, "GET", "k")
		if err == nil && r != "v" {
			err = fmt.Errorf("GET = %#v", r)
		}
		got <- err
	}()
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := c.Do(short, "GET", "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("GET waiting for a slot past its deadline: %v", err)
	}
	select {
	case err := <-got:
		t.Fatalf("GET answered while 4 of 4 slots are held: %v", err)
	default:
	}
	r := p.resp()
	servertest.MustDo(t, r, "RPUSH", "q", "x")
	if err := <-got; err != nil {
		t.Fatalf("GET after a slot was freed: %v", err)
	}
	n := 0
	for _, b := range blocked {
		if isDone(b) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d BLPOPs answered, want 1", n)
	}
}

// A connection the server refuses at once (maxclients) fails Dial with the
// server's error, not a bare EOF.
func TestRefusedConnection(t *testing.T) {
	p := startProc(t, "--maxclients", "1")
	p.dial(Options{})
	_, err := Dial(testCtx(t), p.Addr, Options{PublicKey: p.publicKey()})
	if !errors.Is(err, ErrOverloaded) {
		t.Fatalf("second connection with maxclients 1: %v, want OVERLOADED", err)
	}
}
