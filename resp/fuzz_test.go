package resp

import (
	"bytes"
	"testing"
)

// FuzzParse checks that any input, whole or split in two at any point,
// parses without panicking, and that a split input yields the same requests
// as the whole one.
func FuzzParse(f *testing.F) {
	seeds := []string{
		"*1\r\n$4\r\nPING\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n",
		"*1\r\n$-2\r\n", "*1\r\n$-1\r\n", "*2\r\n$1\r\na\r\n$-1\r\n",
		"*-5\r\n", "*0\r\n", "$5\r\nhello\r\n", "PING\r\n", "set a \"b\\x41\"\r\n",
		"set a 'b\r\n", "*2\r\n$1\r\na\r\n", "*1\r\n$99999999999999999999\r\n",
		"\r\n\r\n*1\r\n$1\r\nx\r\n",
	}
	for _, r := range overflowRequests {
		seeds = append(seeds, r.in)
	}
	for _, s := range seeds {
		f.Add([]byte(s), uint16(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, in []byte, cut uint16) {
		whole := parseAll(in)
		at := int(cut) % (len(in) + 1)
		var p Parser
		var buf []byte
		var split [][]string
		var serr error
		for _, piece := range [][]byte{in[:at], in[at:]} {
			buf = append(buf, piece...)
			for serr == nil {
				n, err := p.Parse(buf)
				if err != nil {
					serr = err
					break
				}
				if n == 0 {
					break
				}
				split = append(split, args(p.Args))
				buf = buf[n:]
			}
		}
		if len(split) != len(whole.reqs) {
			t.Fatalf("split gave %d requests, whole %d", len(split), len(whole.reqs))
		}
		for i := range split {
			if !equal(split[i], whole.reqs[i]) {
				t.Fatalf("request %d differs: %q vs %q", i, split[i], whole.reqs[i])
			}
		}
		if (serr == nil) != (whole.err == nil) {
			t.Fatalf("split err %v, whole err %v", serr, whole.err)
		}
	})
}

type parsed struct {
	reqs [][]string
	err  error
}

func parseAll(in []byte) parsed {
	var p Parser
	var out parsed
	buf := bytes.Clone(in)
	for {
		n, err := p.Parse(buf)
		if err != nil {
			out.err = err
			return out
		}
		if n == 0 {
			return out
		}
		out.reqs = append(out.reqs, args(p.Args))
		buf = buf[n:]
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzSplitArgs checks that inline splitting never panics.
func FuzzSplitArgs(f *testing.F) {
	for _, s := range []string{`a "b c" 'd'`, `"\x4`, `'\'`, `"a"b`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		_, _ = SplitArgs(nil, in)
	})
}
