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

// AppendSanitized appends s to b with CR and LF replaced by spaces, as
// Sanitize does, without allocating. Simple strings and errors are written
// through it, so that no text can break the reply it is part of.
func AppendSanitized[T ~string | ~[]byte](b []byte, s T) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		b = append(b, c)
	}
	return b
}
