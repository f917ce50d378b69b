package resp

import (
	"math"
	"strconv"
	"testing"
)

func TestParseInt(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"1", 1, true},
		{"-1", -1, true},
		{"42", 42, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false},   // int64 max + 1, 19 digits
		{"9999999999999999999", 0, false},   // largest 19 digits
		{"-9223372036854775809", 0, false},  // int64 min - 1
		{"-9999999999999999999", 0, false},  // 20 bytes with the sign
		{"18446744073709551615", 0, false},  // uint64 max, 20 digits
		{"18446744073709551616", 0, false},  // 2^64: wraps to 0 unchecked
		{"18446744073709551620", 0, false},  // 2^64+4: wraps to 4 unchecked
		{"36893488147419103232", 0, false},  // 2^65
		{"99999999999999999999", 0, false},  // 20 nines
		{"-18446744073709551620", 0, false}, // 21 bytes
		{"100000000000000000000", 0, false}, // 21 digits
		{"", 0, false},
		{"-", 0, false},
		{"-0", 0, false},
		{"00", 0, false},
		{"01", 0, false},
		{"-01", 0, false},
		{"+1", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"1x", 0, false},
		{"1.0", 0, false},
		{"1e3", 0, false},
		{"1\x00", 0, false},
		{"--1", 0, false},
		{"1-", 0, false},
	}
	for _, tt := range tests {
		n, ok := ParseInt([]byte(tt.in))
		if n != tt.want || ok != tt.ok {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", tt.in, n, ok, tt.want, tt.ok)
		}
		if sn, sok := ParseInt(tt.in); sn != n || sok != ok {
			t.Errorf("ParseInt(string %q) = %d, %v; the []byte form gave %d, %v", tt.in, sn, sok, n, ok)
		}
		// Every accepted text is the canonical form of its value.
		if ok && strconv.FormatInt(n, 10) != tt.in {
			t.Errorf("ParseInt(%q) accepted a non-canonical form of %d", tt.in, n)
		}
	}
}

// overflowRequests are lengths that do not fit the integer they are read
// into; each must be refused with Redis's error, never wrapped around.
var overflowRequests = []struct{ in, want string }{
	{"*1\r\n$18446744073709551620\r\nPING\r\n", "Protocol error: invalid bulk length"},
	{"*1\r\n$18446744073709551616\r\n\r\n", "Protocol error: invalid bulk length"},
	{"*1\r\n$36893488147419103236\r\nPING\r\n", "Protocol error: invalid bulk length"},
	{"*1\r\n$9223372036854775808\r\n", "Protocol error: invalid bulk length"},
	{"*1\r\n$9223372036854775807\r\n", "Protocol error: invalid bulk length"},
	{"*1\r\n$-9223372036854775809\r\n", "Protocol error: invalid bulk length"},
	{"*1\r\n$-9223372036854775808\r\n", "Protocol error: invalid bulk length"},
	{"*1\r\n$-0\r\n", "Protocol error: invalid bulk length"},
	{"*1\r\n$+4\r\nPING\r\n", "Protocol error: invalid bulk length"},
	{"*18446744073709551620\r\n", "Protocol error: invalid multibulk length"},
	{"*18446744073709551617\r\n$4\r\nPING\r\n", "Protocol error: invalid multibulk length"},
	{"*9223372036854775808\r\n", "Protocol error: invalid multibulk length"},
	{"*9223372036854775807\r\n", "Protocol error: invalid multibulk length"},
	{"*-9223372036854775809\r\n", "Protocol error: invalid multibulk length"},
	{"*4294967297\r\n", "Protocol error: invalid multibulk length"},
	{"*2147483648\r\n", "Protocol error: invalid multibulk length"},
	{"*-0\r\n", "Protocol error: invalid multibulk length"},
	{"*+1\r\n$4\r\nPING\r\n", "Protocol error: invalid multibulk length"},
}

// TestParseLengthOverflow feeds each overflowing request whole, one byte
// at a time and split in two at every point: each way must end in the same
// protocol error and yield no request.
func TestParseLengthOverflow(t *testing.T) {
	for _, tt := range overflowRequests {
		ways := map[string][][]byte{"whole": {[]byte(tt.in)}}
		var bytewise [][]byte
		for i := range len(tt.in) {
			bytewise = append(bytewise, []byte(tt.in[i:i+1]))
		}
		ways["byte by byte"] = bytewise
		for cut := 1; cut < len(tt.in); cut++ {
			ways["cut at "+strconv.Itoa(cut)] = [][]byte{[]byte(tt.in[:cut]), []byte(tt.in[cut:])}
		}
		for name, pieces := range ways {
			reqs, err := feed(pieces)
			if err == nil || err.Error() != tt.want || !IsProtocolError(err) {
				t.Errorf("%q %s: err %v, want %q", tt.in, name, err, tt.want)
			}
			if len(reqs) != 0 {
				t.Errorf("%q %s: parsed %q before the error", tt.in, name, reqs)
			}
		}
		if _, err := new(Parser).ParseFrame([]byte(tt.in)); err == nil || err.Error() != tt.want {
			t.Errorf("ParseFrame(%q): err %v, want %q", tt.in, err, tt.want)
		}
	}
}

// TestParseLengthLimits checks the largest accepted lengths next to the
// smallest refused ones.
func TestParseLengthLimits(t *testing.T) {
	tests := []struct {
		in   string
		reqs int
	}{
		{"*-9223372036854775808\r\n*1\r\n$4\r\nPING\r\n", 1}, // an empty request, as Redis
		{"*-1\r\n*1\r\n$4\r\nPING\r\n", 1},
		{"*1\r\n$0\r\n\r\n", 1},
	}
	for _, tt := range tests {
		reqs, err := feed([][]byte{[]byte(tt.in)})
		if err != nil || len(reqs) != tt.reqs {
			t.Errorf("%q: %d requests %q, err %v; want %d", tt.in, len(reqs), reqs, err, tt.reqs)
		}
	}
	// The largest multibulk count is accepted and waits for its elements.
	var p Parser
	if n, err := p.Parse([]byte("*2147483647\r\n")); n != 0 || err != nil {
		t.Errorf("*2147483647: n %d, err %v; want to wait for the elements", n, err)
	}
}

// feed parses pieces arriving one after another, as a transport does, and
// returns the requests parsed, empty ones left out, and the first error.
func feed(pieces [][]byte) ([]string, error) {
	var p Parser
	var buf []byte
	var reqs []string
	for _, piece := range pieces {
		buf = append(buf, piece...)
		for {
			n, err := p.Parse(buf)
			if err != nil {
				return reqs, err
			}
			if n == 0 {
				break
			}
			if len(p.Args) > 0 {
				reqs = append(reqs, string(AppendCommand(nil, p.Args...)))
			}
			buf = buf[n:]
		}
	}
	return reqs, nil
}

func TestAppendPrimitives(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{string(AppendBulk(nil, []byte("abc"))), "$3\r\nabc\r\n"},
		{string(AppendBulk(nil, nil)), "$0\r\n\r\n"},
		{string(AppendBulkString([]byte("x"), "hi")), "x$2\r\nhi\r\n"},
		{string(AppendHeader(nil, '*', 12)), "*12\r\n"},
		{string(AppendHeader(nil, '$', 0)), "$0\r\n"},
		{string(AppendPush(nil, []byte("message"), []byte("c"), []byte(""))), ">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$0\r\n\r\n"},
		{string(AppendPush(nil)), ">0\r\n"},
		{string(AppendLower(nil, []byte("GeT-x_Z@[`{"))), "get-x_z@[`{"},
		{Sanitize("a\r\nb"), "a  b"},
		{Sanitize("plain"), "plain"},
		{string(AppendSanitized([]byte("x"), "a\r\nb\n")), "xa  b "},
		{string(AppendSanitized(nil, []byte("\r"))), " "},
		{writer(func(w *Writer) { w.Error("ERR bad 'a\r\nb'") }), "-ERR bad 'a  b'\r\n"},
		{writer(func(w *Writer) { w.Simple("x\ny") }), "+x y\r\n"},
		{writer(func(w *Writer) { w.BulkInt(-9223372036854775808) }), "$20\r\n-9223372036854775808\r\n"},
		{writer(func(w *Writer) { w.BulkInt(7) }), "$1\r\n7\r\n"},
		{writer(func(w *Writer) { w.IntDigits([]byte("-12")) }), ":-12\r\n"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func writer(f func(w *Writer)) string {
	var w Writer
	f(&w)
	return string(w.B)
}

func TestEqualFold(t *testing.T) {
	tests := []struct {
		b     string
		lower string
		want  bool
	}{
		{"GET", "get", true},
		{"gEt", "get", true},
		{"get", "get", true},
		{"GETX", "get", false},
		{"GE", "get", false},
		{"", "", true},
		{"@", "`", false}, // '@' is not 'A'-1 folded
		{"[", "{", false},
		{"\xc4", "\xe4", false}, // no folding outside ASCII
	}
	for _, tt := range tests {
		if got := EqualFold([]byte(tt.b), tt.lower); got != tt.want {
			t.Errorf("EqualFold(%q, %q) = %v, want %v", tt.b, tt.lower, got, tt.want)
		}
	}
}

func TestPrimitivesDoNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 256)
	name := []byte("SET")
	allocs := testing.AllocsPerRun(100, func() {
		b := AppendBulk(buf[:0], name)
		b = AppendPush(b, name, name)
		_ = AppendLower(b[:0], name)
		_, _ = ParseInt(name)
		_ = EqualFold(name, "set")
		_ = Sanitize("no line breaks")
		_ = AppendSanitized(b[:0], "a\r\nb")
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per run, want 0", allocs)
	}
}
