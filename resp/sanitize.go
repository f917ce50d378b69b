package resp

import "strings"

// Sanitize replaces CR and LF, which would end a simple string or error
// reply early, with spaces, as Redis does for the texts it echoes back.
func Sanitize(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if c == '\r' || c == '\n' {
			b[i] = ' '
		}
	}
	return string(b)
}
