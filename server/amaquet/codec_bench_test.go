package amaquet

import "testing"

// BenchmarkParseGet decodes a GET request's payload, the reader's cost
// per request before the engine runs it.
func BenchmarkParseGet(b *testing.B) {
	p := []byte(`{"command":"GET","args":["key:12345"]}`)
	var r commandRequest
	b.ReportAllocs()
	for b.Loop() {
		if err := r.parse(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseSet is BenchmarkParseGet for a SET.
func BenchmarkParseSet(b *testing.B) {
	p := []byte(`{"command":"SET","args":["key:12345","value:0123456789"]}`)
	var r commandRequest
	b.ReportAllocs()
	for b.Loop() {
		if err := r.parse(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReplyBulk maps a GET's bulk reply to its response frame.
func BenchmarkReplyBulk(b *testing.B) {
	benchReply(b, "$16\r\nvalue:0123456789\r\n")
}

// BenchmarkReplyOK maps a SET's +OK to its response frame.
func BenchmarkReplyOK(b *testing.B) {
	benchReply(b, "+OK\r\n")
}

func benchReply(b *testing.B, reply string) {
	var c conn
	var out []byte
	r := []byte(reply)
	b.ReportAllocs()
	for b.Loop() {
		out = c.replyFrame(out[:0], r, 7)
	}
}

// BenchmarkReadHeader reads and checks a header from a buffer.
func BenchmarkReadHeader(b *testing.B) {
	h := AppendHeader(nil, KindRequest, OpCommand, 7, 40)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseHeader(h, DefaultMaxPayload); err != nil {
			b.Fatal(err)
		}
	}
}
