package server

import (
	"bytes"
	"testing"
	"time"
)

// unrepr decodes one sdscatrepr-quoted string at the start of b, as
// redis-cli's sdssplitargs does, and returns it and the rest of b.
func unrepr(t *testing.T, b []byte) ([]byte, []byte) {
	t.Helper()
	if len(b) == 0 || b[0] != '"' {
		t.Fatalf("no opening quote in %q", b)
	}
	var out []byte
	for i := 1; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"':
			return out, b[i+1:]
		case c < 0x20 || c >= 0x7f:
			t.Fatalf("unescaped byte %#x in %q", c, b)
		case c != '\\':
			out = append(out, c)
		case i+1 < len(b) && b[i+1] == 'x' && i+3 < len(b):
			var v byte
			for _, h := range b[i+2 : i+4] {
				v <<= 4
				switch {
				case h >= '0' && h <= '9':
					v |= h - '0'
				case h >= 'a' && h <= 'f':
					v |= h - 'a' + 10
				default:
					t.Fatalf("bad hex escape in %q", b)
				}
			}
			out = append(out, v)
			i += 3
		case i+1 < len(b):
			e, ok := map[byte]byte{'n': '\n', 'r': '\r', 't': '\t', 'a': '\a', 'b': '\b', '\\': '\\', '"': '"'}[b[i+1]]
			if !ok {
				t.Fatalf("bad escape in %q", b)
			}
			out = append(out, e)
			i++
		default:
			t.Fatalf("dangling backslash in %q", b)
		}
	}
	t.Fatalf("no closing quote in %q", b)
	return nil, nil
}

// FuzzMonitorLine: a MONITOR line is one printable line whose quoted
// arguments decode back to the command's, passwords redacted, whatever
// the arguments.
func FuzzMonitorLine(f *testing.F) {
	for _, s := range [][2]string{
		{"set", "k\x00\xff\"\\\n"}, {"auth", "secret"}, {"hello", "3 AUTH u p"}, {"migrate", "h 1 k 0 5 AUTH2 u p"},
		{"get", ""}, {"hello", "2 AUTH u"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, name, rest string) {
		args := [][]byte{[]byte(name)}
		args = append(args, bytes.Split([]byte(rest), []byte(" "))...)
		cmd := &Command{Name: name}
		red := monitorRedacted(cmd, args)
		line := monitorLine(nil, time.Unix(1700000000, 5000), 3, "127.0.0.1:1", args, red)
		head := []byte("+1700000000.000005 [3 127.0.0.1:1]")
		if !bytes.HasPrefix(line, head) || !bytes.HasSuffix(line, []byte("\r\n")) {
			t.Fatalf("line %q", line)
		}
		b := line[len(head) : len(line)-2]
		for i, a := range args {
			if len(b) == 0 || b[0] != ' ' {
				t.Fatalf("argument %d missing in %q", i, line)
			}
			var got []byte
			got, b = unrepr(t, b[1:])
			want := a
			if red != nil && red[i] {
				want = []byte("(redacted)")
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("argument %d: %q, want %q", i, got, want)
			}
		}
		if len(b) != 0 {
			t.Fatalf("trailing %q", b)
		}
		if name == "auth" && len(args) > 1 && (red == nil || !red[1]) {
			t.Fatal("AUTH's password shown")
		}
	})
}
