package ws

import (
	"testing"

	"github.com/recached/recached/resp"
)

// FuzzValueLen checks that valueLen, which splits the engine's output into
// one frame per value, never panics or reads past its input, and that
// wherever the full RESP reader finds a complete value it measures the same
// length.
func FuzzValueLen(f *testing.F) {
	for _, s := range []string{
		"+OK\r\n", "$3\r\nabc\r\n", "$-1\r\n", "*2\r\n$1\r\na\r\n:1\r\n", ">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\np\r\n",
		"%1\r\n+k\r\n+v\r\n", "|1\r\n+a\r\n+b\r\n+v\r\n", "*-1\r\n", "$999999999999999999\r\n", "*3\r\n+a\r\n", "_\r\n",
		",1.5\r\n", "#t\r\n", "(123\r\n", "=7\r\ntxt:abc\r\n", "~1\r\n+a\r\n", "!3\r\nERR\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n := valueLen(b)
		if n < 0 || n > len(b) {
			t.Fatalf("valueLen(%q) = %d, outside 0..%d", b, n, len(b))
		}
		if _, m, err := resp.ParseValue(b); err == nil && m > 0 && n != m {
			t.Fatalf("valueLen(%q) = %d, the RESP reader took %d", b, n, m)
		}
	})
}
