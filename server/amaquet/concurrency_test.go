package amaquet_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/server/amaquet"
	"github.com/recached/recached/server/servertest"
)

// readN reads n frames and returns them by request id.
func (c *client) readN(n int) map[uint64]frame {
	c.t.Helper()
	out := make(map[uint64]frame)
	for i := 0; i < n; i++ {
		f := c.read()
		if _, dup := out[f.id]; dup {
			c.t.Fatalf("two frames for request %d", f.id)
		}
		out[f.id] = f
	}
	return out
}

// TestOutOfOrder: a blocked BLPOP does not delay the GETs after it; it
// completes later, with its own request id, when a RESP client pushes.
func TestOutOfOrder(t *testing.T) {
	e := start(t, amaquet.Options{}, "")
	c := dial(t, e.amq)
	c.result(1, cmd("SET", "x", "1"))
	c.send(amaquet.OpCommand, 2, cmd("BLPOP", "q", "0"))
	for id := uint64(3); id < 10; id++ {
		if got := c.result(id, cmd("GET", "x")); got != `"1"` {
			t.Fatalf("GET %d: %s", id, got)
		}
	}
	if got := e.respDo(t, "RPUSH", "q", "v"); got != ":1\r\n" {
		t.Fatalf("RPUSH: %q", got)
	}
	f := c.read()
	if f.id != 2 || string(f.env(t).Result) != `["q","v"]` {
		t.Fatalf("BLPOP response %d %s", f.id, f.payload)
	}
}

// TestManyBlockedAtOnce: several blocked commands of one connection end
// in the order their keys are filled, each with its own id.
func TestManyBlockedAtOnce(t *testing.T) {
	e := start(t, amaquet.Options{}, "")
	c := dial(t, e.amq)
	for i := uint64(1); i <= 5; i++ {
		c.send(amaquet.OpCommand, i, cmd("BLPOP", fmt.Sprintf("q%d", i), "0"))
	}
	c.result(100, cmd("PING"))
	for _, i := range []int{4, 2, 5, 1, 3} {
		e.respDo(t, "RPUSH", fmt.Sprintf("q%d", i), "v")
		f := c.read()
		if f.id != uint64(i) || string(f.env(t).Result) != fmt.Sprintf(`["q%d","v"]`, i) {
			t.Fatalf("after pushing q%d: response %d %s", i, f.id, f.payload)
		}
	}
}

// TestDuplicateRequest: a COMMAND reusing an active request's id gets
// DUPLICATE_REQUEST and the active one completes normally; once it has
// completed, the id may be used again.
func TestDuplicateRequest(t *testing.T) {
	e := start(t, amaquet.Options{}, "")
	c := dial(t, e.amq)
	c.send(amaquet.OpCommand, 5, cmd("BLPOP", "q", "0"))
	f := c.do(amaquet.OpCommand, 5, cmd("SET", "dup", "1"))
	if got := f.code(t); got != amaquet.CodeDuplicateRequest {
		t.Fatalf("duplicate: %s", f.payload)
	}
	if got := e.respDo(t, "EXISTS", "dup"); got != ":0\r\n" {
		t.Fatalf("the duplicate ran: EXISTS dup %q", got)
	}
	e.respDo(t, "RPUSH", "q", "v")
	f = c.read()
	if f.id != 5 || string(f.env(t).Result) != `["q","v"]` {
		t.Fatalf("original: %d %s", f.id, f.payload)
	}
	if got := c.result(5, cmd("GET", "dup")); got != "null" {
		t.Fatalf("reused id: %s", got)
	}
}

// TestCancel: CANCEL ends a blocked command with CANCELLED (having popped
// nothing) and reports found; a finished or unknown request is not found.
func TestCancel(t *testing.T) {
	e := start(t, amaquet.Options{}, "")
	c := dial(t, e.amq)
	blocking := []string{
		cmd("BLPOP", "q", "0"),
		cmd("BRPOP", "q", "q2", "0"),
		cmd("BLMOVE", "q", "dst", "LEFT", "RIGHT", "0"),
		cmd("BLMPOP", "0", "1", "q", "LEFT"),
		cmd("BZPOPMIN", "z", "0"),
		cmd("BZMPOP", "0", "1", "z", "MAX"),
		cmd("XREAD", "BLOCK", "0", "STREAMS", "s", "$"),
		cmd("BLPOP", "q", "1000"),
	}
	for i, p := range blocking {
		id := uint64(10 + 2*i)
		c.send(amaquet.OpCommand, id, p)
		c.send(amaquet.OpCancel, id+1, fmt.Sprintf(`{"request_id":%d}`, id))
		got := c.readN(2)
		if r := got[id+1]; string(r.env(t).Result) != fmt.Sprintf(`{"request_id":%d,"found":true}`, id) {
			t.Fatalf("%s: CANCEL %s", p, r.payload)
		}
		if r := got[id]; r.code(t) != amaquet.CodeCancelled {
			t.Fatalf("%s: cancelled request %s", p, r.payload)
		}
	}
	// Nothing is waiting any more: a push stays in the list.
	if got := e.respDo(t, "RPUSH", "q", "v"); got != ":1\r\n" {
		t.Fatalf("RPUSH %q", got)
	}
	if got := e.respDo(t, "LLEN", "q"); got != ":1\r\n" {
		t.Fatalf("LLEN %q", got)
	}
	c.result(50, cmd("GET", "x"))
	for _, id := range []uint64{50, 12345} {
		got := c.do(amaquet.OpCancel, 51, fmt.Sprintf(`{"request_id":%d}`, id))
		if want := fmt.Sprintf(`{"request_id":%d,"found":false}`, id); string(got.env(t).Result) != want {
			t.Fatalf("CANCEL of %d: %s", id, got.payload)
		}
	}
	// A served command is not cancelled afterwards.
	c.send(amaquet.OpCommand, 60, cmd("BLPOP", "q", "0"))
	f := c.read()
	if f.id != 60 || string(f.env(t).Result) != `["q","v"]` {
		t.Fatalf("BLPOP of a full list: %s", f.payload)
	}
	got := c.do(amaquet.OpCancel, 61, `{"request_id":60}`)
	if string(got.env(t).Result) != `{"request_id":60,"found":false}` {
		t.Fatalf("CANCEL after completion: %s", got.payload)
	}
}

// TestBlockTimeout: a blocking command's own timeout still answers.
func TestBlockTimeout(t *testing.T) {
	e := start(t, amaquet.Options{}, "")
	c := dial(t, e.amq)
	c.send(amaquet.OpCommand, 1, cmd("BLPOP", "q", "0.05"))
	if f := c.read(); f.id != 1 || string(f.env(t).Result) != "null" {
		t.Fatalf("BLPOP timeout: %s", f.payload)
	}
}

// TestOverloadedPerConnection: past --amaquet-max-inflight active
// commands, a COMMAND gets OVERLOADED at once and runs nothing.
func TestOverloadedPerConnection(t *testing.T) {
	e := start(t, amaquet.Options{MaxInflight: 2}, "")
	c := dial(t, e.amq)
	c.send(amaquet.OpCommand, 1, cmd("BLPOP", "q1", "0"))
	if got := c.result(2, cmd("PING")); got != `"PONG"` { // one blocked, one running: 2
		t.Fatal(got)
	}
	c.send(amaquet.OpCommand, 3, cmd("BLPOP", "q2", "0"))
	f := c.do(amaquet.OpCommand, 4, cmd("SET", "over", "1"))
	if f.code(t) != amaquet.CodeOverloaded {
		t.Fatalf("third request: %s", f.payload)
	}
	if got := e.respDo(t, "EXISTS", "over"); got != ":0\r\n" {
		t.Fatalf("the refused request ran: %q", got)
	}
	// Other opcodes are still served.
	if f := c.do(amaquet.OpHello, 5, `{"nonce":"AAAAAAAAAAAAAAAAAAAAAA=="}`); f.code(t) != "" {
		t.Fatalf("HELLO while overloaded: %s", f.payload)
	}
	e.respDo(t, "RPUSH", "q1", "v")
	if f := c.read(); f.id != 1 {
		t.Fatalf("BLPOP 1: %d %s", f.id, f.payload)
	}
	if got := c.result(6, cmd("SET", "over", "1")); got != `"OK"` {
		t.Fatal(got)
	}
}

// TestOverloadedGlobal: past the server's in-flight limit, a COMMAND on
// any connection gets OVERLOADED.
func TestOverloadedGlobal(t *testing.T) {
	e := start(t, amaquet.Options{GlobalInflight: 3}, "")
	a, b := dial(t, e.amq), dial(t, e.amq)
	a.send(amaquet.OpCommand, 1, cmd("BLPOP", "q", "0"))
	a.send(amaquet.OpCommand, 2, cmd("BLPOP", "q", "0"))
	a.result(3, cmd("PING")) // 2 blocked + this one
	b.send(amaquet.OpCommand, 1, cmd("BLPOP", "q", "0"))
	for _, c := range []*client{b, a} {
		f := c.do(amaquet.OpCommand, 9, cmd("PING"))
		if f.code(t) != amaquet.CodeOverloaded {
			t.Fatalf("fourth request: %s", f.payload)
		}
	}
	e.respDo(t, "RPUSH", "q", "v")
	if f := a.read(); f.id != 1 {
		t.Fatalf("BLPOP 1: %s", f.payload)
	}
	if got := b.result(10, cmd("PING")); got != `"PONG"` {
		t.Fatal(got)
	}
}

// TestPayloadBudget: a header whose declared length the global budget
// cannot hold gets OVERLOADED and the connection closes without its
// payload being read; the budget is free again once the holder's
// response is sent.
func TestPayloadBudget(t *testing.T) {
	// PING (28 bytes) and the 80-byte frame fit together; 80 and 31 do not.
	e := start(t, amaquet.Options{PayloadBudget: 110}, "")
	a := dial(t, e.amq)
	big := `{"command":"ECHO","args":["` + strings.Repeat("a", 80-len(`{"command":"ECHO","args":[""]}`)) + `"]}`
	if len(big) != 80 {
		t.Fatal(len(big))
	}
	// A PING, then the header of an 80-byte frame whose payload waits:
	// PING's response is written once the reader holds the 80 bytes.
	a.write(append(request(amaquet.OpCommand, 1, cmd("PING")), request(amaquet.OpCommand, 2, big)[:24]...))
	if f := a.read(); f.id != 1 {
		t.Fatalf("PING: %s", f.payload)
	}
	b := dial(t, e.amq)
	frame := request(amaquet.OpCommand, 77, `{"command":"ECHO","args":["`+strings.Repeat("b", 1)+`"]}`)
	b.write(frame[:24]) // 31 bytes declared: 80 + 31 > 110
	f := b.read()
	if f.id != 77 || f.op != amaquet.OpCommand || f.code(t) != amaquet.CodeOverloaded {
		t.Fatalf("over budget: %d %s", f.id, f.payload)
	}
	if !b.closed() {
		t.Fatal("connection open after the budget refusal")
	}
	a.write(request(amaquet.OpCommand, 2, big)[24:])
	if f := a.read(); f.id != 2 || f.code(t) != "" {
		t.Fatalf("big request: %s", f.payload)
	}
	c := dial(t, e.amq)
	if got := c.result(3, `{"command":"ECHO","args":["`+strings.Repeat("c", 60)+`"]}`); got != `"`+strings.Repeat("c", 60)+`"` {
		t.Fatalf("after the release: %s", got)
	}
}

// TestBlockedClientsVisible: a blocked Amaquet request is a blocked
// client as CLIENT LIST and INFO count them, and CLIENT UNBLOCK ends it.
func TestBlockedClientsVisible(t *testing.T) {
	e := start(t, amaquet.Options{}, "")
	c := dial(t, e.amq)
	c.send(amaquet.OpCommand, 1, cmd("BLPOP", "q", "0"))
	c.result(2, cmd("PING"))
	r := servertest.Dial(t, e.resp)
	rep, err := r.Do("INFO", "clients")
	if err != nil || !strings.Contains(string(rep), "blocked_clients:1") {
		t.Fatalf("INFO clients: %q %v", rep, err)
	}
	list, _ := r.Do("CLIENT", "LIST")
	var id string
	for _, line := range strings.Split(string(list), "\n") {
		if strings.Contains(line, "cmd=blpop") {
			id = strings.TrimPrefix(strings.Fields(line)[0], "id=")
		}
	}
	if id == "" {
		t.Fatalf("no blpop in CLIENT LIST: %q", list)
	}
	if rep, _ := r.Do("CLIENT", "UNBLOCK", id); string(rep) != ":1\r\n" {
		t.Fatalf("CLIENT UNBLOCK: %q", rep)
	}
	if f := c.read(); f.id != 1 || string(f.env(t).Result) != "null" {
		t.Fatalf("unblocked: %s", f.payload)
	}
}

// TestCloseReleases: closing a connection with a blocked request ends its
// wait (a later push stays in the list) and frees its in-flight slot.
func TestCloseReleases(t *testing.T) {
	e := start(t, amaquet.Options{GlobalInflight: 2}, "")
	a := dial(t, e.amq)
	a.send(amaquet.OpCommand, 1, cmd("BLPOP", "q", "0"))
	a.send(amaquet.OpCommand, 2, cmd("BLPOP", "q", "0"))
	if f := a.do(amaquet.OpCommand, 3, cmd("PING")); f.code(t) != amaquet.CodeOverloaded {
		t.Fatalf("third: %s", f.payload)
	}
	a.nc.Close()
	b := dial(t, e.amq)
	// The close is seen by the server at its own pace: poll, bounded.
	deadline := time.Now().Add(10 * time.Second)
	for id := uint64(1); ; id++ {
		if f := b.do(amaquet.OpCommand, id, cmd("PING")); f.code(t) == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("in-flight slots not freed by the close")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := e.respDo(t, "INFO", "clients"); !strings.Contains(got, "blocked_clients:0") {
		t.Fatalf("INFO clients after close: %q", got)
	}
	e.respDo(t, "RPUSH", "q", "v")
	if got := e.respDo(t, "LLEN", "q"); got != ":1\r\n" {
		t.Fatalf("a closed connection's wait popped: LLEN %q", got)
	}
}

// TestScripts: a script runs away from the reader like a blocking
// command: its result arrives with its id while later requests are
// answered.
func TestScripts(t *testing.T) {
	e := start(t, amaquet.Options{}, "")
	c := dial(t, e.amq)
	if got := c.result(1, cmd("EVAL", "redis.call('set', KEYS[1], ARGV[1]) return {1, 'two', {3}}", "1", "sk", "v")); got != `[1,"two",[3]]` {
		t.Fatalf("EVAL %s", got)
	}
	if got := e.respDo(t, "GET", "sk"); got != "$1\r\nv\r\n" {
		t.Fatalf("the script's write: %q", got)
	}
	c.send(amaquet.OpCommand, 2, cmd("EVAL", "local i = 0 while i < 300000 do i = i + 1 end return i", "0"))
	c.send(amaquet.OpCommand, 3, cmd("HELLO"))
	got := c.readN(2)
	if r := got[2]; string(r.env(t).Result) != "300000" {
		t.Fatalf("script %s", r.payload)
	}
	if r := got[3]; r.code(t) != amaquet.CodeBadRequest {
		t.Fatalf("HELLO while the script ran: %s", r.payload)
	}
}

// TestCancelScript: CANCEL stops a running script as SCRIPT KILL does. One
// that has not written (EVAL, FCALL) stops and its request answers
// CANCELLED; one that has written cannot be stopped: CANCEL finds it, the
// script runs on (SCRIPT KILL says -UNKILLABLE) and its request answers
// what the script answers (here SHUTDOWN NOSAVE stops it, and the test's
// server does not exit), its write kept.
func TestCancelScript(t *testing.T) {
	e := start(t, amaquet.Options{}, "")
	e.respDo(t, "CONFIG", "SET", "busy-reply-threshold", "50")
	e.respDo(t, "FUNCTION", "LOAD", "#!lua name=spinlib\nredis.register_function('spin', function() while true do end end)")
	tests := []struct {
		name    string
		payload string
		wrote   bool
	}{
		{"EVAL read-only loop", cmd("EVAL", "local i = 0 while true do i = i + 1 end", "0"), false},
		{"EVAL_RO loop", cmd("EVAL_RO", "while true do end", "0"), false},
		{"FCALL loop", cmd("FCALL", "spin", "0"), false},
		{"EVAL that wrote", cmd("EVAL", "redis.call('set', KEYS[1], 'w') redis.call('publish', 'amq:wrote', 'x') while true do end", "1", "wk"), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, e.amq)
			if tc.wrote {
				// The script's PUBLISH tells that its write ran.
				c.do(amaquet.OpSubscribe, 1, `{"key":"amq","channel":"wrote"}`)
			}
			c.send(amaquet.OpCommand, 2, tc.payload)
			if tc.wrote {
				c.readEvent(1)
			}
			f := c.do(amaquet.OpCancel, 3, `{"request_id":2}`)
			if string(f.env(t).Result) != `{"request_id":2,"found":true}` {
				t.Fatalf("CANCEL: %s", f.payload)
			}
			if !tc.wrote {
				if f := c.read(); f.id != 2 || f.code(t) != amaquet.CodeCancelled {
					t.Fatalf("cancelled script: %d %s", f.id, f.payload)
				}
				if got := e.respDo(t, "SCRIPT", "KILL"); got != "-NOTBUSY No scripts in execution right now.\r\n" {
					t.Fatalf("SCRIPT KILL after the cancelled script: %q", got)
				}
				if got := c.result(4, cmd("PING")); got != `"PONG"` {
					t.Fatalf("PING after: %s", got)
				}
				return
			}
			if got := e.respDo(t, "SCRIPT", "KILL"); !strings.HasPrefix(got, "-UNKILLABLE ") {
				t.Fatalf("SCRIPT KILL after CANCEL of a script that wrote: %q", got)
			}
			if err := servertest.Dial(t, e.resp).Send(servertest.Encode("SHUTDOWN", "NOSAVE")); err != nil {
				t.Fatal(err)
			}
			f = c.read()
			if e := f.env(t); f.id != 2 || e.OK || e.Error.Code != amaquet.CodeCommandError || !strings.HasPrefix(e.Error.Message, "ERR Script killed by user") {
				t.Fatalf("the script that wrote: %d %s", f.id, f.payload)
			}
			if got := c.result(4, cmd("GET", "wk")); got != `"w"` {
				t.Fatalf("the script's write: %s", got)
			}
		})
	}
}
