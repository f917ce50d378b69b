package resp

import "strconv"

// ParseInt parses b as a signed 64-bit decimal integer exactly as Redis's
// string2ll does: an optional leading '-', no '+', no leading zeros (only
// "0" itself may start with one, so "-0" and "01" are refused), no spaces,
// nothing after the digits, and a value that fits in an int64. Every
// integer a client sends, from a bulk length to a command argument, is read
// with it, so that all of them agree on what an integer is.
func ParseInt[T ~string | ~[]byte](b T) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	i := 0
	if b[0] == '-' {
		i = 1
	}
	if i == len(b) || b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	// At most 19 digits remain (20 bytes with the sign), so n cannot wrap
	// around: 10^19-1 < 2^64. Overflow of int64 is checked at the end.
	if len(b)-i > 19 {
		return 0, false
	}
	var n uint64
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if b[0] == '-' {
		if n > 1<<63 {
			return 0, false
		}
		return -int64(n), true
	}
	if n > 1<<63-1 {
		return 0, false
	}
	return int64(n), true
}

// AppendHeader appends the header of a RESP value of kind c and length n:
// c followed by n in decimal and CRLF. With '*', '>', '%' or '~' it starts
// an aggregate of n elements (pairs for '%'); with '$' it starts a bulk
// string of n bytes, whose payload and CRLF the caller appends.
func AppendHeader(b []byte, c byte, n int) []byte {
	if 0 <= n && n <= 9 {
		return append(b, c, byte('0'+n), '\r', '\n')
	}
	b = append(b, c)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// AppendBulk appends v as a bulk string.
func AppendBulk(b, v []byte) []byte {
	b = AppendHeader(b, '$', len(v))
	b = append(b, v...)
	return append(b, '\r', '\n')
}

// AppendBulkString appends s as a bulk string.
func AppendBulkString(b []byte, s string) []byte {
	b = AppendHeader(b, '$', len(s))
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendPush appends the RESP3 push ">N" of args as bulk strings.
func AppendPush(b []byte, args ...[]byte) []byte {
	b = AppendHeader(b, '>', len(args))
	for _, a := range args {
		b = AppendBulk(b, a)
	}
	return b
}

// EqualFold reports whether b equals lower ignoring ASCII case. lower must
// be in lower case, as command names and options are spelled in the code.
func EqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// AppendLower appends b with ASCII upper-case letters folded to lower case,
// as command names are looked up. With a large enough dst it does not
// allocate.
func AppendLower(dst, b []byte) []byte {
	for _, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}
