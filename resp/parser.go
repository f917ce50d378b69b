// Package resp reads and writes the Redis serialization protocol.
//
// The Parser reads requests (multibulk and inline) from bytes that arrive in
// arbitrary pieces. It validates every length before trusting it, never
// allocates from an untrusted length and never panics, so a hostile client can
// only earn itself a protocol error. The Writer appends replies in RESP2 or
// RESP3 shapes.
//
// The package is the one home of the protocol's primitives that the server,
// its transports and the Go client share: ParseInt (Redis's string2ll, for
// lengths and integer arguments alike), AppendHeader, AppendBulk, AppendPush
// and AppendCommand, EqualFold and AppendLower for command names, and
// Sanitize for client text echoed in a reply.
package resp

import (
	"bytes"
	"errors"
)

// Limits applied to every request, from the product's limits table.
const (
	// MaxBulkLen is the largest bulk string a request may carry (64 MB).
	MaxBulkLen = 64 << 20
	// MaxRequest is the largest whole request (64 MB plus framing).
	MaxRequest = MaxBulkLen + 64<<10
	// MaxInline is the longest inline command line Redis accepts.
	MaxInline = 64 << 10
	// maxMultibulk is Redis's upper bound for an array length (INT_MAX).
	maxMultibulk = 1<<31 - 1
	// maxCountLine bounds the digits of a length line before its CRLF.
	maxCountLine = 32 << 10
)

// ProtocolError is a malformed request. Its text is Redis's own; the
// connection that sent it is answered with "-ERR " + Error() and closed.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return "Protocol error: " + e.Msg }

var (
	errInvalidMultibulk = &ProtocolError{"invalid multibulk length"}
	errInvalidBulk      = &ProtocolError{"invalid bulk length"}
	errBigInline        = &ProtocolError{"too big inline request"}
	errBigMbulkCount    = &ProtocolError{"too big mbulk count string"}
	errBigBulkCount     = &ProtocolError{"too big bulk count string"}
	errUnbalanced       = &ProtocolError{"unbalanced quotes in request"}
	errBigRequest       = &ProtocolError{"too big request"}
)

// IsProtocolError reports whether err is a *ProtocolError.
func IsProtocolError(err error) bool {
	var pe *ProtocolError
	return errors.As(err, &pe)
}

// Parser parses one request at a time. When a request is incomplete it
// remembers how far it got, so a large request arriving in many reads is
// scanned once, not once per read. Args point into the parsed buffer and are
// valid until that buffer is modified.
type Parser struct {
	// Args holds the arguments of the last complete request.
	Args [][]byte

	offs  []int // start,end pairs of the arguments parsed so far
	pos   int   // bytes of the pending request already parsed
	count int   // array length of the pending request, -1 if none yet
	need  int   // total bytes required before parsing can progress

	limits Limits // bounds set by SetLimits (limits.go)
}

// Need returns how many bytes the pending request needs in total before
// another call to Parse can make progress. Transports use it to avoid
// presenting a partially received large value over and over.
func (p *Parser) Need() int { return p.need }

// Reset forgets any pending request.
func (p *Parser) Reset() {
	p.offs = p.offs[:0]
	p.pos, p.count, p.need = 0, -1, 0
}

// Parse parses the request at the start of b. It returns the bytes consumed
// and fills Args. n == 0 with a nil error means the request is incomplete:
// call again with the same first byte and more data appended. A request of
// zero arguments (an empty line or "*0") consumes bytes and leaves Args empty.
func (p *Parser) Parse(b []byte) (n int, err error) {
	p.Args = p.Args[:0]
	if len(b) == 0 {
		return 0, nil
	}
	if p.pos == 0 && p.count <= 0 && len(p.offs) == 0 {
		p.count = -1
	}
	if b[0] != '*' {
		return p.parseInline(b)
	}
	return p.parseMultibulk(b)
}

func (p *Parser) incomplete(need int) (int, error) {
	if need > MaxRequest {
		p.Reset()
		return 0, errBigRequest
	}
	p.need = need
	return 0, nil
}

func (p *Parser) parseMultibulk(b []byte) (int, error) {
	if p.count < 0 {
		i := bytes.IndexByte(b, '\r')
		if i < 0 || i+1 >= len(b) {
			if len(b) > maxCountLine {
				p.Reset()
				return 0, errBigMbulkCount
			}
			return p.incomplete(len(b) + 1)
		}
		c, ok := ParseInt(b[1:i])
		if !ok || c > maxMultibulk {
			p.Reset()
			return 0, errInvalidMultibulk
		}
		if p.limits.MaxArgs > 0 && c > int64(p.limits.MaxArgs) {
			p.Reset()
			return 0, ErrUnauthenticatedMultibulk
		}
		if c <= 0 {
			p.Reset()
			return i + 2, nil
		}
		p.count = int(c)
		p.pos = i + 2
		p.offs = p.offs[:0]
	}
	pos := p.pos
	for len(p.offs)/2 < p.count {
		if pos >= len(b) {
			return p.incomplete(pos + 1)
		}
		if b[pos] != '$' {
			c := b[pos]
			p.Reset()
			return 0, &ProtocolError{"expected '$', got '" + string(c) + "'"}
		}
		i := bytes.IndexByte(b[pos:], '\r')
		if i < 0 || pos+i+1 >= len(b) {
			if len(b)-pos > maxCountLine {
				p.Reset()
				return 0, errBigBulkCount
			}
			return p.incomplete(len(b) + 1)
		}
		l, ok := ParseInt(b[pos+1 : pos+i])
		// Before MaxBulkLen, which is below Redis's own bulk limit
		// (proto-max-bulk-len, 512 MB): Redis refuses a bulk of 100 MB
		// from an unauthenticated client for want of AUTH.
		if ok && l > 0 && p.limits.MaxBulk > 0 && l > int64(p.limits.MaxBulk) {
			p.Reset()
			return 0, ErrUnauthenticatedBulk
		}
		if !ok || l < 0 || l > MaxBulkLen || p.limits.MaxBulkLen > 0 && l > int64(p.limits.MaxBulkLen) {
			p.Reset()
			return 0, errInvalidBulk
		}
		start := pos + i + 2
		end := start + int(l)
		if end+2 > len(b) {
			p.pos = pos
			return p.incomplete(end + 2)
		}
		p.offs = append(p.offs, start, end)
		pos = end + 2
		p.pos = pos
		if pos > MaxRequest {
			p.Reset()
			return 0, errBigRequest
		}
	}
	for i := 0; i < len(p.offs); i += 2 {
		p.Args = append(p.Args, b[p.offs[i]:p.offs[i+1]:p.offs[i+1]])
	}
	p.Reset()
	return pos, nil
}

func (p *Parser) parseInline(b []byte) (int, error) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		if len(b) > MaxInline {
			p.Reset()
			return 0, errBigInline
		}
		return p.incomplete(len(b) + 1)
	}
	line := b[:i]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	args, ok := SplitArgs(p.Args[:0], line)
	if !ok {
		p.Reset()
		return 0, errUnbalanced
	}
	p.Args = args
	p.Reset()
	return i + 1, nil
}

// ParseFrame parses exactly one request that must fill all of b, as a
// WebSocket frame does. For an inline request the trailing CRLF is optional.
func (p *Parser) ParseFrame(b []byte) ([][]byte, error) {
	p.Reset()
	if len(b) > 0 && b[0] != '*' {
		line := bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r"))
		if bytes.IndexByte(line, '\n') >= 0 {
			return nil, &ProtocolError{"more than one command in a frame"}
		}
		args, ok := SplitArgs(p.Args[:0], line)
		if !ok {
			return nil, errUnbalanced
		}
		p.Args = args
		return args, nil
	}
	n, err := p.Parse(b)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		p.Reset()
		return nil, &ProtocolError{"incomplete command in frame"}
	}
	if n != len(b) {
		return nil, &ProtocolError{"more than one command in a frame"}
	}
	return p.Args, nil
}

// SplitArgs splits an inline command line as redis-cli and Redis do
// (sdssplitargs): spaces separate arguments, "double quotes" understand
// \n \r \t \b \a \\ \" and \xHH escapes, 'single quotes' only \'. A closing
// quote must be followed by a space or the end. It appends to dst. An
// argument without quotes is a slice of line (capacity clipped, as the
// multibulk arguments are of the read buffer), so that an inline request
// of plain words allocates nothing; one with quotes is a copy.
func SplitArgs(dst [][]byte, line []byte) ([][]byte, bool) {
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i >= len(line) {
			return dst, true
		}
		var cur []byte
		start, plain := i, true // plain: cur is still line[start:i]
		inq, insq := false, false
		done := false
		for !done {
			if inq {
				if i >= len(line) {
					return dst, false
				}
				c := line[i]
				switch {
				case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
					cur = append(cur, hexVal(line[i+2])<<4|hexVal(line[i+3]))
					i += 3
				case c == '\\' && i+1 < len(line):
					i++
					switch line[i] {
					case 'n':
						cur = append(cur, '\n')
					case 'r':
						cur = append(cur, '\r')
					case 't':
						cur = append(cur, '\t')
					case 'b':
						cur = append(cur, '\b')
					case 'a':
						cur = append(cur, '\a')
					default:
						cur = append(cur, line[i])
					}
				case c == '"':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return dst, false
					}
					done = true
				default:
					cur = append(cur, c)
				}
			} else if insq {
				if i >= len(line) {
					return dst, false
				}
				c := line[i]
				switch {
				case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
					i++
					cur = append(cur, '\'')
				case c == '\'':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return dst, false
					}
					done = true
				default:
					cur = append(cur, c)
				}
			} else {
				if i >= len(line) {
					break
				}
				switch c := line[i]; c {
				case ' ', '\n', '\r', '\t':
					done = true
				case '"', '\'':
					if plain {
						cur, plain = append(cur, line[start:i]...), false
					}
					inq, insq = c == '"', c == '\''
				default:
					if !plain {
						cur = append(cur, c)
					}
				}
			}
			if i < len(line) {
				i++
			}
		}
		if plain {
			// Ended by the end of the line, or by the space i passed.
			end := i
			if done {
				end--
			}
			cur = line[start:end:end]
		}
		if cur == nil {
			cur = []byte{}
		}
		dst = append(dst, cur)
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func hexVal(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
