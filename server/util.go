package server

import (
	"strings"

	"github.com/recached/recached/resp"
)

// hasHexFloat reports Go-only float syntaxes strtod would read differently.
func hasHexFloat(s string) bool {
	t := strings.TrimLeft(s, "+-")
	return len(t) > 1 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// intArg parses args[i] as an integer, replying with Redis's error if it is
// not one.
func (s *Session) intArg(i int) (int64, bool) {
	n, ok := resp.ParseInt(s.Args[i])
	if !ok {
		s.W.Error(errNotInt)
	}
	return n, ok
}

// nonNegArg parses args[i] as an integer of at least 0, replying with
// errText if it is not one.
func (s *Session) nonNegArg(i int, errText string) (int64, bool) {
	n, ok := resp.ParseInt(s.Args[i])
	if !ok || n < 0 {
		s.W.Error(errText)
		return 0, false
	}
	return n, true
}
