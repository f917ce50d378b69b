package amaquet_test

import (
	"testing"
	"time"

	"github.com/recached/recached/server/amaquet"
)

// TestHeaderFields sends a header with each field invalid in turn: the
// server answers once, with the request ID and opcode as sent and the
// field's error code, and closes the connection.
func TestHeaderFields(t *testing.T) {
	e := start(t, amaquet.Options{MaxPayload: 1024}, "")
	cases := []struct {
		name string
		hdr  []byte
		code string
	}{
		{"magic", append([]byte("AMQX"), header(1, 1, 0, 1, 0, 11, 0)[4:]...), amaquet.CodeProtocolError},
		{"magic lower case", append([]byte("amqt"), header(1, 1, 0, 1, 0, 12, 0)[4:]...), amaquet.CodeProtocolError},
		{"version 0", header(0, 1, 0, 1, 0, 13, 0), amaquet.CodeUnsupportedVersion},
		{"version 2", header(2, 1, 0, 1, 0, 14, 0), amaquet.CodeUnsupportedVersion},
		{"kind response", header(1, 2, 0, 1, 0, 15, 0), amaquet.CodeProtocolError},
		{"kind event", header(1, 3, 0, 4, 0, 16, 0), amaquet.CodeProtocolError},
		{"kind 0", header(1, 0, 0, 1, 0, 17, 0), amaquet.CodeProtocolError},
		{"flags low bit", header(1, 1, 1, 1, 0, 18, 0), amaquet.CodeProtocolError},
		{"flags high bit", header(1, 1, 0x8000, 2, 0, 19, 0), amaquet.CodeProtocolError},
		{"reserved", header(1, 1, 0, 1, 1, 20, 0), amaquet.CodeProtocolError},
		{"reserved high", header(1, 1, 0, 3, 0x8000, 21, 0), amaquet.CodeProtocolError},
		{"length over the limit", header(1, 1, 0, 1, 0, 22, 1025), amaquet.CodePayloadTooLarge},
		{"length at the hard limit", header(1, 1, 0, 1, 0, 23, amaquet.HardMaxPayload+1), amaquet.CodePayloadTooLarge},
		{"unknown opcode and bad version", header(9, 1, 0, 77, 0, 24, 0), amaquet.CodeUnsupportedVersion},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, e.amq)
			c.write(tc.hdr)
			f := c.read()
			wantOp := uint16(tc.hdr[8])<<8 | uint16(tc.hdr[9])
			wantID := uint64(tc.hdr[19]) // the ids above fit one byte
			if f.kind != 2 || f.version != 1 || f.flags != 0 || f.op != wantOp || f.id != wantID {
				t.Fatalf("response kind %d version %d flags %d op %d id %d, want kind 2 op %d id %d", f.kind, f.version, f.flags, f.op, f.id, wantOp, wantID)
			}
			if got := f.code(t); got != tc.code {
				t.Fatalf("code %s, want %s (%s)", got, tc.code, f.payload)
			}
			if !c.closed() {
				t.Fatal("connection still open after an unusable header")
			}
		})
	}
}

// TestPayloadAtLimit: a payload of exactly the limit is read.
func TestPayloadAtLimit(t *testing.T) {
	e := start(t, amaquet.Options{MaxPayload: 64}, "")
	c := dial(t, e.amq)
	x := string(repeat('x', 64-len(`{"command":"ECHO","args":[""]}`)))
	p := `{"command":"ECHO","args":["` + x + `"]}`
	if len(p) != 64 {
		t.Fatalf("payload of %d bytes", len(p))
	}
	if got := c.result(1, p); got != `"`+x+`"` {
		t.Fatalf("ECHO result %s", got)
	}
}

func repeat(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

// TestTruncatedFrames: a header or a payload that does not complete
// within the read deadline gets PROTOCOL_ERROR (with what of the request
// ID and opcode had arrived) and the connection is closed.
func TestTruncatedFrames(t *testing.T) {
	e := start(t, amaquet.Options{ReadTimeout: 200 * time.Millisecond}, "")
	full := request(amaquet.OpCommand, 0x0102030405060708, cmd("PING"))
	cases := []struct {
		name   string
		sent   int
		wantOp uint16
		wantID uint64
	}{
		{"one byte of the header", 1, 0, 0},
		{"magic and version", 5, 0, 0},
		{"up to the opcode", 10, amaquet.OpCommand, 0},
		{"up to the request id", 20, amaquet.OpCommand, 0x0102030405060708},
		{"header without the length's last byte", 23, amaquet.OpCommand, 0x0102030405060708},
		{"header and half the payload", 24 + 5, amaquet.OpCommand, 0x0102030405060708},
		{"all but the payload's last byte", len(full) - 1, amaquet.OpCommand, 0x0102030405060708},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, e.amq)
			c.write(full[:tc.sent])
			f := c.read() // the server's deadline passes meanwhile
			if f.kind != 2 || f.op != tc.wantOp || f.id != tc.wantID {
				t.Fatalf("response op %d id %#x, want op %d id %#x", f.op, f.id, tc.wantOp, tc.wantID)
			}
			if got := f.code(t); got != amaquet.CodeProtocolError {
				t.Fatalf("code %s: %s", got, f.payload)
			}
			if !c.closed() {
				t.Fatal("connection still open")
			}
		})
	}
}

// TestSlowFrameWithinDeadline: a frame sent in pieces that completes
// within the deadline is served.
func TestSlowFrameWithinDeadline(t *testing.T) {
	e := start(t, amaquet.Options{ReadTimeout: 10 * time.Second}, "")
	c := dial(t, e.amq)
	full := request(amaquet.OpCommand, 9, cmd("PING"))
	for i := range full {
		c.write(full[i : i+1])
	}
	f := c.read()
	if f.id != 9 || f.code(t) != "" {
		t.Fatalf("%d %s", f.id, f.payload)
	}
}

// TestIdleTimeout: a connection that sends nothing is closed after the
// idle timeout, without a response.
func TestIdleTimeout(t *testing.T) {
	e := start(t, amaquet.Options{IdleTimeout: 100 * time.Millisecond}, "")
	c := dial(t, e.amq)
	if got := c.result(1, cmd("PING")); got != `"PONG"` {
		t.Fatal(got)
	}
	if !c.closed() {
		t.Fatal("idle connection not closed")
	}
}

// TestWellFormedErrorsKeepConnection: an unknown opcode or a bad payload
// in a well-formed frame is answered and the connection stays.
func TestWellFormedErrorsKeepConnection(t *testing.T) {
	e := start(t, amaquet.Options{}, "")
	c := dial(t, e.amq)
	cases := []struct {
		op      uint16
		payload string
		code    string
	}{
		{0, ``, amaquet.CodeUnknownOpcode},
		{7, `{}`, amaquet.CodeUnknownOpcode},
		{0xffff, `xx`, amaquet.CodeUnknownOpcode},
		{amaquet.OpCommand, ``, amaquet.CodeBadRequest},
		{amaquet.OpCommand, `{`, amaquet.CodeBadRequest},
		{amaquet.OpCommand, `[]`, amaquet.CodeBadRequest},
		{amaquet.OpCommand, `{"command":1}`, amaquet.CodeBadRequest},
		{amaquet.OpCommand, `{"command":""}`, amaquet.CodeBadRequest},
		{amaquet.OpCommand, `{"command":"GET","args":[1]}`, amaquet.CodeBadRequest},
		{amaquet.OpCommand, `{"command":"GET","args":[{"base64":"!!"}]}`, amaquet.CodeBadRequest},
		{amaquet.OpCommand, `{"command":"GET","args":["k"],"extra":1}`, amaquet.CodeBadRequest},
		{amaquet.OpCommand, `{"command":"GET","args":["k"]} x`, amaquet.CodeBadRequest},
		{amaquet.OpCommand, "{\"command\":\"GET\",\"args\":[\"\xff\"]}", amaquet.CodeBadRequest},
		{amaquet.OpCommand, `{"command":"GET","args":["k"],"db":-1}`, amaquet.CodeBadRequest},
		{amaquet.OpCommand, `{"command":"GET","args":["k"],"db":1.5}`, amaquet.CodeBadRequest},
		{amaquet.OpCommand, `{"command":"GET","args":["k"],"db":16}`, amaquet.CodeBadRequest},
		{amaquet.OpCommand, `{"transaction":[]}`, amaquet.CodeBadRequest},
		{amaquet.OpCommand, `{"transaction":[[]]}`, amaquet.CodeBadRequest},
		{amaquet.OpCommand, `{"transaction":[["GET","k"]],"command":"GET"}`, amaquet.CodeBadRequest},
		{amaquet.OpHello, `{}`, amaquet.CodeBadRequest},
		{amaquet.OpHello, `{"nonce":"AAAA"}`, amaquet.CodeBadRequest},
		{amaquet.OpCancel, `{"request_id":"x"}`, amaquet.CodeBadRequest},
		{amaquet.OpSubscribe, `{"key":"bus"}`, amaquet.CodeBadRequest},
		{amaquet.OpSubscribe, `{"key":"bus","channel":"c","buffer":0}`, amaquet.CodeBadRequest},
		{amaquet.OpSubscribe, `{"key":"bus","channel":"c","buffer":1025}`, amaquet.CodeBadRequest},
		{amaquet.OpUnsubscribe, `{"channel":"c"}`, amaquet.CodeBadRequest},
	}
	for i, tc := range cases {
		id := uint64(100 + i)
		f := c.do(tc.op, id, tc.payload)
		if got := f.code(t); got != tc.code {
			t.Errorf("op %d %q: code %q, want %s (%s)", tc.op, tc.payload, got, tc.code, f.payload)
		}
	}
	if got := c.result(1, cmd("PING")); got != `"PONG"` {
		t.Fatalf("PING after the errors: %s", got)
	}
}
