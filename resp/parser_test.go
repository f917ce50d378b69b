package resp

import (
	"bytes"
	"strings"
	"testing"
)

func args(a [][]byte) []string {
	out := make([]string, len(a))
	for i, b := range a {
		out[i] = string(b)
	}
	return out
}

func TestParseComplete(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		n    int
	}{
		{"*1\r\n$4\r\nPING\r\n", []string{"PING"}, 14},
		{"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", []string{"GET", "k"}, 20},
		{"*2\r\n$3\r\nGET\r\n$0\r\n\r\n", []string{"GET", ""}, 19},
		{"*0\r\n", nil, 4},
		{"*-1\r\n", nil, 5},
		{"PING\r\n", []string{"PING"}, 6},
		{"PING\n", []string{"PING"}, 5},
		{"set a \"b c\"\r\n", []string{"set", "a", "b c"}, 13},
		{"set a 'it\\'s'\r\n", []string{"set", "a", "it's"}, 15},
		{"echo \"\\x41\\n\"\r\n", []string{"echo", "A\n"}, 15},
		{"\r\n", nil, 2},
		{"   \r\n", nil, 5},
		{"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n", []string{"PING"}, 14},
	}
	for _, tt := range tests {
		var p Parser
		n, err := p.Parse([]byte(tt.in))
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if n != tt.n || strings.Join(args(p.Args), "|") != strings.Join(tt.want, "|") || len(p.Args) != len(tt.want) {
			t.Errorf("%q: got n=%d %q, want n=%d %q", tt.in, n, args(p.Args), tt.n, tt.want)
		}
	}
}

func TestSplitArgs(t *testing.T) {
	tests := []struct {
		in   string
		want []string // nil: unbalanced quotes
	}{
		{"", []string{}},
		{"  \t ", []string{}},
		{"get k", []string{"get", "k"}},
		{"  get\tk  ", []string{"get", "k"}},
		{"a\vb \vc", []string{"a\vb", "c"}},
		{`set k "a b"`, []string{"set", "k", "a b"}},
		{`foo"bar baz" q`, []string{"foobar baz", "q"}},
		{`x'y z'`, []string{"xy z"}},
		{`"" ''`, []string{"", ""}},
		{`"\x41\x4a\n\z"`, []string{"AJ\nz"}},
		{`'it\'s' "q\"q"`, []string{"it's", `q"q`}},
		{`"a"b`, nil},
		{`'a'b`, nil},
		{`"open`, nil},
		{`'open`, nil},
	}
	for _, tt := range tests {
		got, ok := SplitArgs(nil, []byte(tt.in))
		if ok != (tt.want != nil) {
			t.Errorf("%q: ok %v", tt.in, ok)
			continue
		}
		if ok && strings.Join(args(got), "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("%q: got %q, want %q", tt.in, args(got), tt.want)
		}
	}
}

// TestInlineArgsAliasLine checks that plain inline arguments are slices of
// the request, read without allocating, whose appends cannot write into the
// request (as multibulk arguments), and that quoted ones are copies.
func TestInlineArgsAliasLine(t *testing.T) {
	in := []byte("SET key:1 value \"a b\"\r\nGET key:1\r\n")
	orig := string(in)
	var p Parser
	if _, err := p.Parse(in); err != nil {
		t.Fatal(err)
	}
	if &p.Args[1][0] != &in[4] {
		t.Errorf("key:1 is not a slice of the request")
	}
	for i := range p.Args {
		p.Args[i] = append(p.Args[i], 'Z')
	}
	if string(in) != orig {
		t.Errorf("appending to the arguments wrote into the request: %q", in)
	}
	get := []byte("GET key:000000000001\r\n")
	if n := testing.AllocsPerRun(100, func() {
		if _, err := p.Parse(get); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("a plain inline request allocates %.1f times", n)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"*1\r\n$-2\r\n", "Protocol error: invalid bulk length"},
		{"*1\r\n$-1\r\n", "Protocol error: invalid bulk length"},
		{"*2\r\n$1\r\na\r\n$99999999999\r\n", "Protocol error: invalid bulk length"},
		{"*1\r\n$67108865\r\n", "Protocol error: invalid bulk length"},
		{"*abc\r\n", "Protocol error: invalid multibulk length"},
		{"*3000000000\r\n", "Protocol error: invalid multibulk length"},
		{"*1\r\n:1\r\n", "Protocol error: expected '$', got ':'"},
		{"*1\r\n$x\r\n", "Protocol error: invalid bulk length"},
		{"*1\r\n$01\r\n", "Protocol error: invalid bulk length"},
		{"set a \"b\r\n", "Protocol error: unbalanced quotes in request"},
		{"set a \"b\"c\r\n", "Protocol error: unbalanced quotes in request"},
		{"*" + strings.Repeat("1", 40000), "Protocol error: too big mbulk count string"},
		{"*1\r\n$" + strings.Repeat("1", 40000), "Protocol error: too big bulk count string"},
		{strings.Repeat("a", MaxInline+1), "Protocol error: too big inline request"},
	}
	for _, tt := range tests {
		var p Parser
		_, err := p.Parse([]byte(tt.in))
		if err == nil || err.Error() != tt.want {
			t.Errorf("%.40q: got %v, want %q", tt.in, err, tt.want)
		}
		if err != nil && !IsProtocolError(err) {
			t.Errorf("%.40q: %v is not a ProtocolError", tt.in, err)
		}
	}
}

// TestParseByteByByte feeds requests one byte at a time, as a slow client
// would, and checks the parser resumes correctly.
func TestParseByteByByte(t *testing.T) {
	in := []byte("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\nPING\r\n*1\r\n$4\r\nQUIT\r\n")
	var p Parser
	var buf []byte
	var got []string
	for _, c := range in {
		buf = append(buf, c)
		if need := p.Need(); need > 0 && len(buf) < need {
			continue
		}
		for {
			n, err := p.Parse(buf)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
			got = append(got, strings.Join(args(p.Args), " "))
			buf = buf[n:]
		}
	}
	want := []string{"SET key value", "PING", "QUIT"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestParseFrame(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "GET k", false},
		{"GET k", "GET k", false},
		{"GET k\r\n", "GET k", false},
		{"*2\r\n$3\r\nGET\r\n", "", true},
		{"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n", "", true},
		{"GET k\r\nGET j\r\n", "", true},
		{"*1\r\n$-5\r\n", "", true},
	}
	for _, tt := range tests {
		var p Parser
		a, err := p.ParseFrame([]byte(tt.in))
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: err %v", tt.in, err)
			continue
		}
		if err == nil && strings.Join(args(a), " ") != tt.want {
			t.Errorf("%q: got %q", tt.in, args(a))
		}
	}
}

func TestWriterShapes(t *testing.T) {
	tests := []struct {
		proto int
		fn    func(w *Writer)
		want  string
	}{
		{2, func(w *Writer) { w.Null() }, "$-1\r\n"},
		{3, func(w *Writer) { w.Null() }, "_\r\n"},
		{2, func(w *Writer) { w.NullArray() }, "*-1\r\n"},
		{2, func(w *Writer) { w.Map(2) }, "*4\r\n"},
		{3, func(w *Writer) { w.Map(2) }, "%2\r\n"},
		{3, func(w *Writer) { w.Set(1) }, "~1\r\n"},
		{3, func(w *Writer) { w.Push(3) }, ">3\r\n"},
		{2, func(w *Writer) { w.Double(1.5) }, "$3\r\n1.5\r\n"},
		{3, func(w *Writer) { w.Double(0.1) }, ",0.10000000000000001\r\n"},
		{3, func(w *Writer) { w.Double(-1.0 / zero()) }, ",-inf\r\n"},
		{2, func(w *Writer) { w.Bool(true) }, ":1\r\n"},
		{3, func(w *Writer) { w.Bool(false) }, "#f\r\n"},
		{3, func(w *Writer) { w.Verbatim("hi") }, "=6\r\ntxt:hi\r\n"},
		{2, func(w *Writer) { w.Verbatim("hi") }, "$2\r\nhi\r\n"},
	}
	for i, tt := range tests {
		w := &Writer{Proto: tt.proto}
		tt.fn(w)
		if !bytes.Equal(w.B, []byte(tt.want)) {
			t.Errorf("%d: got %q, want %q", i, w.B, tt.want)
		}
	}
}

func zero() float64 { return 0 }

// BenchmarkParse parses one SET as a multibulk request and inline.
func BenchmarkParse(b *testing.B) {
	for _, bm := range []struct{ name, in string }{
		{"Set", "*3\r\n$3\r\nSET\r\n$16\r\nkey:000000000042\r\n$16\r\nvalue:0000000042\r\n"},
		{"Inline", "SET key:000000000042 value:0000000042\r\n"},
	} {
		b.Run(bm.name, func(b *testing.B) {
			in := []byte(bm.in)
			var p Parser
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := p.Parse(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
