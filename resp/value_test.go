package resp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

func bulk(s string) Value   { return Value{Kind: '$', Str: []byte(s)} }
func simple(s string) Value { return Value{Kind: '+', Str: []byte(s)} }

func TestParseValue(t *testing.T) {
	tests := []struct {
		in   string
		want Value
	}{
		{"+OK\r\n", simple("OK")},
		{"+\r\n", Value{Kind: '+', Str: []byte{}}},
		{"-ERR no\r\n", Value{Kind: '-', Str: []byte("ERR no")}},
		{":0\r\n", Value{Kind: ':'}},
		{":-42\r\n", Value{Kind: ':', Int: -42}},
		{":9223372036854775807\r\n", Value{Kind: ':', Int: 1<<63 - 1}},
		{"$0\r\n\r\n", Value{Kind: '$', Str: []byte{}}},
		{"$5\r\nhe\r\nl\r\n", bulk("he\r\nl")},
		{"$-1\r\n", Value{Kind: '$', Null: true}},
		{"*-1\r\n", Value{Kind: '*', Null: true}},
		{"*0\r\n", Value{Kind: '*', Elems: []Value{}}},
		{"*2\r\n$1\r\na\r\n:1\r\n", Value{Kind: '*', Elems: []Value{bulk("a"), {Kind: ':', Int: 1}}}},
		{"*1\r\n*1\r\n$-1\r\n", Value{Kind: '*', Elems: []Value{{Kind: '*', Elems: []Value{{Kind: '$', Null: true}}}}}},
		{">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\np\r\n", Value{Kind: '>', Elems: []Value{bulk("message"), bulk("c"), bulk("p")}}},
		{"%1\r\n+k\r\n:2\r\n", Value{Kind: '%', Elems: []Value{simple("k"), {Kind: ':', Int: 2}}}},
		{"~1\r\n$1\r\nm\r\n", Value{Kind: '~', Elems: []Value{bulk("m")}}},
		{",1.5\r\n", Value{Kind: ',', Str: []byte("1.5")}},
		{",-inf\r\n", Value{Kind: ',', Str: []byte("-inf")}},
		{",nan\r\n", Value{Kind: ',', Str: []byte("nan")}},
		{"#t\r\n", Value{Kind: '#', Int: 1}},
		{"#f\r\n", Value{Kind: '#'}},
		{"_\r\n", Value{Kind: '_', Null: true}},
		{"(-12345678901234567890\r\n", Value{Kind: '(', Str: []byte("-12345678901234567890")}},
		{"=8\r\ntxt:abcd\r\n", Value{Kind: '=', Str: []byte("txt:abcd")}},
		{"!3\r\nERR\r\n", Value{Kind: '!', Str: []byte("ERR")}},
		{"|1\r\n+ttl\r\n:3\r\n:7\r\n", Value{Kind: ':', Int: 7}},
	}
	for _, tt := range tests {
		// Whole, with trailing bytes that must not be consumed.
		v, n, err := ParseValue([]byte(tt.in + "+next\r\n"))
		if err != nil || n != len(tt.in) {
			t.Errorf("ParseValue(%q) = n %d, err %v; want n %d", tt.in, n, err, len(tt.in))
			continue
		}
		if !reflect.DeepEqual(v, tt.want) {
			t.Errorf("ParseValue(%q) = %#v, want %#v", tt.in, v, tt.want)
		}
		// Every proper prefix is incomplete, never an error.
		for i := 0; i < len(tt.in); i++ {
			if _, n, err := ParseValue([]byte(tt.in[:i])); n != 0 || err != nil {
				t.Errorf("ParseValue(%q) = n %d, err %v; want incomplete", tt.in[:i], n, err)
			}
		}
		// ReadValue agrees, even when the reader delivers one byte at a time.
		r := bufio.NewReaderSize(iotest.OneByteReader(strings.NewReader(tt.in)), 16)
		rv, err := ReadValue(r)
		if err != nil || !reflect.DeepEqual(rv, tt.want) {
			t.Errorf("ReadValue(%q) = %#v, %v; want %#v", tt.in, rv, err, tt.want)
		}
		if _, err := ReadValue(r); err != io.EOF {
			t.Errorf("ReadValue(%q) after the value: %v, want io.EOF", tt.in, err)
		}
		// Encoding gives the input back (attributes are dropped).
		if tt.in[0] != '|' {
			if got := AppendValue(nil, v); string(got) != tt.in {
				t.Errorf("AppendValue(ParseValue(%q)) = %q", tt.in, got)
			}
		}
	}
}

func TestParseValueMalformed(t *testing.T) {
	bad := []string{
		"\r\n", "?x\r\n", "+OK\n", "+O\rK\r\n", ":\r\n", ":1x\r\n", ":01\r\n", ":-0\r\n",
		":99999999999999999999\r\n", "$-2\r\n", "$x\r\n", "$1\r\nab\r\n", "$2\r\nab\n\n",
		"*-2\r\n", "*x\r\n", "%-1\r\n", ">-1\r\n", "~-1\r\n", "#x\r\n", "#tt\r\n", "_x\r\n",
		",\r\n", ",abc\r\n", "(\r\n", "(1.5\r\n", "=2\r\nab\r\n", "!-1\r\n", "|-1\r\n",
		"$67108865\r\n", "*4194305\r\n", "*1\r\n?\r\n",
		// Lengths and integers that overflow int64 (and would wrap a uint64).
		":18446744073709551620\r\n", ":9223372036854775808\r\n", ":-9223372036854775809\r\n",
		"$18446744073709551620\r\nabcd\r\n", "*18446744073709551617\r\n:1\r\n", ">18446744073709551617\r\n:1\r\n",
	}
	for _, in := range bad {
		v, n, err := ParseValue([]byte(in))
		if err == nil || !IsProtocolError(err) {
			t.Errorf("ParseValue(%q) = %#v, n %d, err %v; want a protocol error", in, v, n, err)
		}
		if _, err := ReadValue(bufio.NewReader(strings.NewReader(in))); err == nil || !IsProtocolError(err) {
			t.Errorf("ReadValue(%q) err %v; want a protocol error", in, err)
		}
	}
}

func TestParseValueLimits(t *testing.T) {
	// Declared lengths within the limits but never backed by data cost
	// nothing: the parse is incomplete, the read an unexpected EOF.
	for _, in := range []string{"$67108864\r\n", "*4194304\r\n", "%1000000\r\n", "$67108864\r\nabc"} {
		if _, n, err := ParseValue([]byte(in)); n != 0 || err != nil {
			t.Errorf("ParseValue(%q) = n %d, err %v; want incomplete", in, n, err)
		}
		if _, err := ReadValue(bufio.NewReader(strings.NewReader(in))); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("ReadValue(%q) err %v; want unexpected EOF", in, err)
		}
	}
	// Nesting beyond MaxDepth is refused, attributes included.
	for _, prefix := range []string{"*1\r\n", "|0\r\n"} {
		deep := strings.Repeat(prefix, MaxDepth+1) + ":1\r\n"
		if _, _, err := ParseValue([]byte(deep)); !IsProtocolError(err) {
			t.Errorf("nesting %q x%d: err %v, want a protocol error", prefix, MaxDepth+1, err)
		}
		ok := strings.Repeat(prefix, MaxDepth-1) + ":1\r\n"
		if _, n, err := ParseValue([]byte(ok)); err != nil || n != len(ok) {
			t.Errorf("nesting %q x%d: n %d, err %v", prefix, MaxDepth-1, n, err)
		}
	}
	// Too many values in one reply (with a smaller limit than MaxValues,
	// which works the same way).
	in := "*2\r\n*8\r\n" + strings.Repeat("_\r\n", 8)
	r := valueReader{src: &bufSource{b: []byte(in)}, maxValues: 10}
	if _, err := r.read(0); !IsProtocolError(err) {
		t.Errorf("11 values with a limit of 10: err %v, want a protocol error", err)
	}
	r = valueReader{src: &bufSource{b: []byte(in)}, maxValues: 11}
	if _, err := r.read(0); err != nil && !errors.Is(err, errIncomplete) {
		t.Errorf("11 values with a limit of 11: err %v", err)
	}
	// A long simple string line is read whole through a small buffer.
	long := "+" + strings.Repeat("x", 100000) + "\r\n"
	v, err := ReadValue(bufio.NewReaderSize(strings.NewReader(long), 16))
	if err != nil || len(v.Str) != 100000 {
		t.Errorf("long line: len %d, err %v", len(v.Str), err)
	}
	// A large bulk string arriving in pieces.
	big := strings.Repeat("y", 3<<20)
	in = "$" + strconv.Itoa(len(big)) + "\r\n" + big + "\r\n"
	v, err = ReadValue(bufio.NewReader(iotest.HalfReader(strings.NewReader(in))))
	if err != nil || string(v.Str) != big {
		t.Errorf("large bulk: len %d, err %v", len(v.Str), err)
	}
}

func TestValueHelpers(t *testing.T) {
	v := Value{Kind: '-', Str: []byte("WRONGTYPE x")}
	if !v.IsError() || v.Err() == nil || v.Err().Error() != "WRONGTYPE x" {
		t.Errorf("error value: %v", v.Err())
	}
	if (Value{Kind: '+', Str: []byte("OK")}).Err() != nil {
		t.Error("simple string has an error")
	}
	for _, tt := range []struct {
		v    Value
		want float64
	}{
		{Value{Kind: ',', Str: []byte("2.5")}, 2.5},
		{Value{Kind: ':', Int: 3}, 3},
		{Value{Kind: '$', Str: []byte("-1e3")}, -1000},
	} {
		if f, err := tt.v.Float(); err != nil || f != tt.want {
			t.Errorf("Float(%#v) = %v, %v", tt.v, f, err)
		}
	}
	if _, err := (Value{Kind: '*'}).Float(); err == nil {
		t.Error("Float of an array succeeded")
	}
	got := AppendCommand(nil, []byte("SET"), []byte("k"), []byte(""))
	if string(got) != "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n" {
		t.Errorf("AppendCommand = %q", got)
	}
}

// FuzzParseValue checks that any input parses without panicking, that
// ReadValue agrees with ParseValue when the input arrives in two pieces,
// and that a parsed value encodes to a form that parses back to itself.
func FuzzParseValue(f *testing.F) {
	seeds := []string{
		"+OK\r\n", "-ERR x\r\n", ":12\r\n", "$3\r\nabc\r\n", "$-1\r\n", "*-1\r\n",
		"*2\r\n$1\r\na\r\n*1\r\n:1\r\n", ">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\np\r\n",
		"*3\r\n$9\r\nkeychange\r\n$1\r\nk\r\n+hash\r\n", "*4\r\n$6\r\nqstate\r\n$1\r\n*\r\n$1\r\nk\r\n$1\r\nv\r\n",
		"%1\r\n+a\r\n,1.5\r\n", "~1\r\n#t\r\n", "_\r\n", "(123\r\n", "=6\r\ntxt:hi\r\n", "!1\r\nE\r\n",
		"|1\r\n+a\r\n+b\r\n:1\r\n", "$5\r\nab", "*99999999\r\n", "$67108865\r\n", ",inf\r\n",
		":9223372036854775807\r\n", ":-9223372036854775808\r\n", ":18446744073709551620\r\n",
		"$18446744073709551620\r\nabcd\r\n", "*18446744073709551617\r\n:1\r\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s), uint16(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, in []byte, cut uint16) {
		v, n, err := ParseValue(in)
		at := int(cut) % (len(in) + 1)
		pr := &pieceReader{pieces: [][]byte{in[:at], in[at:]}}
		rv, rerr := ReadValue(bufio.NewReaderSize(pr, 16))
		switch {
		case err != nil:
			if rerr == nil {
				t.Fatalf("ParseValue failed (%v) but ReadValue read %#v", err, rv)
			}
			return
		case n == 0:
			if rerr == nil {
				t.Fatalf("ParseValue incomplete but ReadValue read %#v", rv)
			}
			return
		}
		if rerr != nil {
			t.Fatalf("ParseValue read %d bytes but ReadValue failed: %v", n, rerr)
		}
		if !equalValues(v, rv) {
			t.Fatalf("ParseValue %#v != ReadValue %#v", v, rv)
		}
		enc := AppendValue(nil, v)
		v2, n2, err := ParseValue(enc)
		if err != nil || n2 != len(enc) {
			t.Fatalf("re-parse of %q: n %d, err %v", enc, n2, err)
		}
		if !bytes.Equal(AppendValue(nil, v2), enc) {
			t.Fatalf("encoding not stable: %q", enc)
		}
	})
}

// equalValues compares two values, treating nil and empty slices alike.
func equalValues(a, b Value) bool {
	if a.Kind != b.Kind || a.Null != b.Null || a.Int != b.Int || !bytes.Equal(a.Str, b.Str) || len(a.Elems) != len(b.Elems) {
		return false
	}
	for i := range a.Elems {
		if !equalValues(a.Elems[i], b.Elems[i]) {
			return false
		}
	}
	return true
}

// pieceReader returns its pieces one Read at a time.
type pieceReader struct{ pieces [][]byte }

func (r *pieceReader) Read(p []byte) (int, error) {
	for len(r.pieces) > 0 && len(r.pieces[0]) == 0 {
		r.pieces = r.pieces[1:]
	}
	if len(r.pieces) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.pieces[0])
	r.pieces[0] = r.pieces[0][n:]
	return n, nil
}
