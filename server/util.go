package server

import (
	"math"
	"strings"
)

// parseInt parses a signed 64-bit decimal exactly as Redis's string2ll does:
// no spaces, no '+', no leading zeros.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (math.MaxUint64-9)/10 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if neg {
		if n > 1<<63 {
			return 0, false
		}
		return -int64(n), true
	}
	if n > math.MaxInt64 {
		return 0, false
	}
	return int64(n), true
}

// hasHexFloat reports Go-only float syntaxes strtod would read differently.
func hasHexFloat(s string) bool {
	t := strings.TrimLeft(s, "+-")
	return len(t) > 1 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// eqFold reports whether b equals the lower-case ASCII word s, any case.
func eqFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// intArg parses args[i] as an integer, replying with Redis's error if it is
// not one.
func (s *Session) intArg(i int) (int64, bool) {
	n, ok := parseInt(s.Args[i])
	if !ok {
		s.W.Error(errNotInt)
	}
	return n, ok
}

// nonNegArg parses args[i] as an integer of at least 0, replying with
// errText if it is not one.
func (s *Session) nonNegArg(i int, errText string) (int64, bool) {
	n, ok := parseInt(s.Args[i])
	if !ok || n < 0 {
		s.W.Error(errText)
		return 0, false
	}
	return n, true
}
