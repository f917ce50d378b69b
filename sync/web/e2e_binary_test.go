package web_test

import (
	"fmt"
	"testing"

	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/server/servertest/browsertest"
)

// A backend writes values that are not UTF-8 to keys in a page's scope: the
// server sends those frames as binary WebSocket frames (Chromium fails the
// connection, close 1006, on a text frame that is not UTF-8), so the page
// stays connected, receives the values (each byte that is not UTF-8 as
// U+FFFD), and a new page hydrates them too.
func TestBrowserStaysConnectedThroughBinaryValues(t *testing.T) {
	bin := servertest.BuildRecached(t)
	s := startServer(t, bin, "--appendonly", "no")
	b := browsertest.Browser(t)
	p := newPage(t, b, "page", true)
	p.open(s, `{patterns: ['bin:*'], name: 'binary'}`)
	p.Eval(`c.query('bin:*', () => {}).ready`, nil)
	p.waitOpen()

	s.do("SET", "bin:raw", "\xff\x00\xfe")       // a push, then a keychange
	s.do("HSET", "bin:h", "f\xc0", "ok\xe2\x82") // a hash field and value
	s.do("SET", "bin:text", "caf\u00e9")         // UTF-8: a text frame
	var got map[string]any
	p.Eval(`waitFor(() => c.get('bin:text') !== null).then(() => ({
	  raw: c.get('bin:raw'), h: c.hgetall('bin:h'), text: c.get('bin:text'),
	  states: states.map((e) => e.state).join(' ')}))`, &got)
	want := map[string]any{
		"raw": "\ufffd\x00\ufffd", "h": map[string]any{"f\ufffd": "ok\ufffd"}, "text": "caf\u00e9",
		"states": "connecting open",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("page sees %q, want %q (the connection must stay up)", got, want)
	}

	// A page that connects now hydrates the same keys: the qstate frame
	// and the hash's pushes are binary frames too.
	q := newPage(t, b, "new page", false)
	q.open(s, `{patterns: ['bin:*'], name: 'binary2'}`)
	q.Eval(`c.query('bin:*', () => {}).ready`, nil)
	q.waitOpen()
	q.Eval(`waitFor(() => c.get('bin:raw') !== null && c.hgetall('bin:h') !== null).then(() => ({
	  raw: c.get('bin:raw'), h: c.hgetall('bin:h'), text: c.get('bin:text'),
	  states: states.map((e) => e.state).join(' ')}))`, &got)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("new page sees %q, want %q", got, want)
	}
	if v := s.do("GET", "bin:raw"); v.Text() != "\xff\x00\xfe" {
		t.Fatalf("server value %q changed", v.Text())
	}
}
