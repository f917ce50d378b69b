package ws

import "encoding/binary"

// WebSocket opcodes (RFC 6455 section 5.2).
const (
	opText   = 0x1
	opBinary = 0x2
	opClose  = 0x8
	opPing   = 0x9
	opPong   = 0xA
)

// appendFrame appends one final, unmasked server frame with opcode op and
// payload p to b.
func appendFrame(b []byte, op byte, p []byte) []byte {
	b = append(b, 0x80|op)
	switch n := len(p); {
	case n < 126:
		b = append(b, byte(n))
	case n <= 0xFFFF:
		b = append(b, 126, byte(n>>8), byte(n))
	default:
		b = append(b, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	return append(b, p...)
}

// valueLen returns the length of the complete RESP2 or RESP3 value at the
// start of b, or 0 when b does not start with one. The engine splits a
// command's output and pushes into values with it, one frame each.
func valueLen(b []byte) int {
	pos := 0
	// pending counts the values still to skip: aggregates add their
	// elements, so nesting needs no recursion.
	for pending := 1; pending > 0; pending-- {
		if pos >= len(b) {
			return 0
		}
		end := pos + 1
		for end < len(b) && b[end] != '\n' {
			end++
		}
		if end >= len(b) || end-1 <= pos || b[end-1] != '\r' {
			return 0
		}
		typ, line := b[pos], b[pos+1:end-1]
		pos = end + 1
		switch typ {
		case '+', '-', ':', ',', '#', '_', '(':
		case '$', '=', '!':
			n, ok := atoi(line)
			if !ok {
				return 0
			}
			if n >= 0 {
				if pos+n+2 > len(b) {
					return 0
				}
				pos += n + 2
			}
		case '*', '~', '>', '%', '|':
			n, ok := atoi(line)
			if !ok {
				return 0
			}
			if typ == '%' || typ == '|' {
				n *= 2
			}
			if typ == '|' {
				n++ // an attribute is followed by the value it describes
			}
			if n > 0 {
				pending += n
			}
		default:
			return 0
		}
	}
	return pos
}

// atoi parses a RESP length: an optional '-' and decimal digits.
func atoi(b []byte) (int, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		return -n, true
	}
	return n, true
}
