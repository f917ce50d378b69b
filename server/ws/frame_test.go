package ws

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func TestValueLen(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"+OK\r\n", 5},
		{"-ERR x\r\n+OK\r\n", 8},
		{":1\r\n", 4},
		{"$3\r\nabc\r\n", 9},
		{"$-1\r\n", 5},
		{"$0\r\n\r\n", 6},
		{"*-1\r\n", 5},
		{"*0\r\n", 4},
		{"*2\r\n$1\r\na\r\n:2\r\n", 15},
		{"*2\r\n*1\r\n+x\r\n$-1\r\n", 17},
		{">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\np\r\n>1\r\n", 31},
		{"%1\r\n+k\r\n,1.5\r\n", 14},
		{"~2\r\n#t\r\n_\r\n", 11},
		{"|1\r\n+a\r\n:1\r\n+v\r\n", 16},
		{"=7\r\ntxt:abc\r\n", 13},
		{"(123\r\n", 6},
		{"!3\r\nbad\r\n", 9},
		// Incomplete or not RESP: 0.
		{"", 0},
		{"+OK", 0},
		{"+OK\n", 0},
		{"$3\r\nab", 0},
		{"*2\r\n+a\r\n", 0},
		{"$x\r\n", 0},
		{"hello\r\n", 0},
	}
	for _, tc := range tests {
		if got := valueLen([]byte(tc.in)); got != tc.want {
			t.Errorf("valueLen(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestAppendFrame(t *testing.T) {
	for _, n := range []int{0, 1, 125, 126, 127, 0xFFFF, 0x10000, 1 << 20} {
		p := bytes.Repeat([]byte{'x'}, n)
		f := appendFrame(nil, opText, p)
		if f[0] != 0x81 {
			t.Fatalf("len %d: first byte %#x", n, f[0])
		}
		var hdr, got int
		switch {
		case n < 126:
			hdr, got = 2, int(f[1])
		case n <= 0xFFFF:
			hdr, got = 4, int(binary.BigEndian.Uint16(f[2:]))
			if f[1] != 126 {
				t.Fatalf("len %d: length byte %d", n, f[1])
			}
		default:
			hdr, got = 10, int(binary.BigEndian.Uint64(f[2:]))
			if f[1] != 127 {
				t.Fatalf("len %d: length byte %d", n, f[1])
			}
		}
		if got != n || len(f) != hdr+n || !bytes.Equal(f[hdr:], p) {
			t.Fatalf("len %d: header says %d, frame %d bytes", n, got, len(f))
		}
	}
}
