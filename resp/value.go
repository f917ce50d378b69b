package resp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
)

// Limits applied to every reply a client reads (the seed's limits table).
const (
	// MaxMessage is the most bytes one reply may take on the wire: the
	// seed's 64 MB message limit, plus framing.
	MaxMessage = MaxBulkLen + 64<<10
	// MaxValues is the most values (aggregates and their elements, at any
	// depth) one reply may hold. It bounds the memory a reply of many tiny
	// elements can cost: a Value is 64 bytes, so at most 256 MB.
	MaxValues = 1 << 22
	// MaxDepth is the deepest nesting of aggregates accepted.
	MaxDepth = 128
)

// Value is one RESP2 or RESP3 reply value.
//
// Kind is the type byte of the wire form:
//
//	'+' simple string, '-' error, '!' blob error: Str holds the text
//	':' integer: Int
//	'$' bulk string: Str, or Null for $-1
//	'*' array, '~' set, '>' push: Elems, or Null for *-1
//	'%' map: Elems holds key, value, key, value, …
//	',' double: Str holds its text ("1.5", "inf", "nan"); see Float
//	'#' boolean: Int is 1 or 0
//	'_' null: Null is set
//	'(' big number: Str holds its digits
//	'=' verbatim string: Str holds the payload, format prefix included ("txt:…")
//
// RESP3 attributes ('|') are read and dropped: the value they annotate is
// returned alone.
type Value struct {
	Kind  byte
	Null  bool
	Str   []byte
	Int   int64
	Elems []Value
}

// IsError reports whether v is an error reply ('-' or '!').
func (v Value) IsError() bool { return v.Kind == '-' || v.Kind == '!' }

// IsNull reports whether v is a nil reply: $-1, *-1 or RESP3 null.
func (v Value) IsNull() bool { return v.Null }

// IsAggregate reports whether v is an array, set, push or map.
func (v Value) IsAggregate() bool {
	switch v.Kind {
	case '*', '~', '>', '%':
		return true
	}
	return false
}

// Text returns Str as a string.
func (v Value) Text() string { return string(v.Str) }

// Err returns v as an error when it is an error reply, else nil.
func (v Value) Err() error {
	if !v.IsError() {
		return nil
	}
	return &ReplyError{Msg: string(v.Str)}
}

// Float returns the number a double, integer, bulk or simple string value
// holds.
func (v Value) Float() (float64, error) {
	switch v.Kind {
	case ':', '#':
		return float64(v.Int), nil
	case ',', '$', '+', '(':
		if v.Null {
			break
		}
		return strconv.ParseFloat(string(v.Str), 64)
	}
	return 0, errors.New("resp: value is not a number")
}

// ReplyError is an error reply from the server; Msg is its text, prefix
// included ("WRONGTYPE Operation against …").
type ReplyError struct{ Msg string }

func (e *ReplyError) Error() string { return e.Msg }

// AppendValue appends v's wire form to b. Simple strings and errors whose
// text holds CR or LF cannot be encoded faithfully; their CR and LF become
// spaces.
func AppendValue(b []byte, v Value) []byte {
	switch v.Kind {
	case '+', '-', ',', '(':
		b = append(b, v.Kind)
		b = AppendSanitized(b, v.Str)
		return append(b, '\r', '\n')
	case ':':
		b = append(b, ':')
		b = strconv.AppendInt(b, v.Int, 10)
		return append(b, '\r', '\n')
	case '#':
		if v.Int != 0 {
			return append(b, "#t\r\n"...)
		}
		return append(b, "#f\r\n"...)
	case '_':
		return append(b, "_\r\n"...)
	case '$', '!', '=':
		if v.Null {
			return append(b, "$-1\r\n"...)
		}
		b = AppendHeader(b, v.Kind, len(v.Str))
		b = append(b, v.Str...)
		return append(b, '\r', '\n')
	case '*', '~', '>', '%':
		if v.Null {
			return append(b, "*-1\r\n"...)
		}
		n := len(v.Elems)
		if v.Kind == '%' {
			n /= 2
		}
		b = AppendHeader(b, v.Kind, n)
		elems := v.Elems
		if v.Kind == '%' {
			elems = elems[:2*n]
		}
		for _, e := range elems {
			b = AppendValue(b, e)
		}
		return b
	}
	return append(b, "_\r\n"...)
}

// AppendCommand appends args as a RESP multibulk request.
func AppendCommand(b []byte, args ...[]byte) []byte {
	b = AppendHeader(b, '*', len(args))
	for _, a := range args {
		b = AppendBulk(b, a)
	}
	return b
}

// errIncomplete tells ParseValue that the buffer ended inside the value.
var errIncomplete = errors.New("resp: incomplete value")

// source is where a valueReader takes lines and payloads from.
type source interface {
	// line returns the next line without its CRLF; the slice is valid
	// until the next call.
	line() ([]byte, error)
	// payload returns the next n bytes, which must be followed by CRLF,
	// in a slice the caller may keep.
	payload(n int) ([]byte, error)
}

// valueReader reads one value from a source, enforcing the limits.
type valueReader struct {
	src       source
	bytes     int // wire bytes consumed so far
	values    int // values read so far
	maxValues int // MaxValues; smaller in tests
}

func (r *valueReader) count(n int) error {
	r.bytes += n
	if r.bytes > MaxMessage {
		return &ProtocolError{"reply larger than 64 MB"}
	}
	return nil
}

func (r *valueReader) read(depth int) (Value, error) {
	r.values++
	if r.values > r.maxValues {
		return Value{}, &ProtocolError{"reply holds too many values"}
	}
	line, err := r.src.line()
	if err != nil {
		return Value{}, err
	}
	if err := r.count(len(line) + 2); err != nil {
		return Value{}, err
	}
	if len(line) == 0 {
		return Value{}, &ProtocolError{"empty reply line"}
	}
	kind, body := line[0], line[1:]
	v := Value{Kind: kind}
	switch kind {
	case '+', '-':
		v.Str = append([]byte{}, body...)
	case ':':
		n, ok := ParseInt(body)
		if !ok {
			return Value{}, badLine("invalid integer", line)
		}
		v.Int = n
	case ',':
		if len(body) == 0 || !validDouble(body) {
			return Value{}, badLine("invalid double", line)
		}
		v.Str = append([]byte{}, body...)
	case '(':
		if !validBig(body) {
			return Value{}, badLine("invalid big number", line)
		}
		v.Str = append([]byte{}, body...)
	case '#':
		switch string(body) {
		case "t":
			v.Int = 1
		case "f":
		default:
			return Value{}, badLine("invalid boolean", line)
		}
	case '_':
		if len(body) != 0 {
			return Value{}, badLine("invalid null", line)
		}
		v.Null = true
	case '$', '!', '=':
		n, ok := ParseInt(body)
		switch {
		case !ok || n < -1:
			return Value{}, badLine("invalid bulk length", line)
		case n == -1 && kind == '$':
			v.Null = true
			return v, nil
		case n < 0 || n > MaxBulkLen:
			return Value{}, badLine("invalid bulk length", line)
		case kind == '=' && n < 4:
			return Value{}, badLine("invalid verbatim string length", line)
		}
		if err := r.count(int(n) + 2); err != nil {
			return Value{}, err
		}
		p, err := r.src.payload(int(n))
		if err != nil {
			return Value{}, err
		}
		v.Str = p
	case '*', '~', '>', '%', '|':
		n, ok := ParseInt(body)
		switch {
		case !ok || n < -1:
			return Value{}, badLine("invalid aggregate length", line)
		case n == -1 && kind == '*':
			v.Null = true
			return v, nil
		case n < 0 || n > MaxValues:
			return Value{}, badLine("invalid aggregate length", line)
		}
		if depth >= MaxDepth {
			return Value{}, &ProtocolError{"reply nested too deeply"}
		}
		if kind == '%' || kind == '|' {
			n *= 2
		}
		// Grow as elements arrive: the length is untrusted until then.
		elems := make([]Value, 0, min(n, 64))
		for i := int64(0); i < n; i++ {
			e, err := r.read(depth + 1)
			if err != nil {
				return Value{}, err
			}
			elems = append(elems, e)
		}
		if kind == '|' {
			// An attribute annotates the value that follows it.
			return r.read(depth + 1)
		}
		v.Elems = elems
	default:
		return Value{}, badLine("unknown reply type", line)
	}
	return v, nil
}

// badLine is a protocol error quoting the start of the offending line.
func badLine(msg string, line []byte) error {
	if len(line) > 32 {
		line = line[:32]
	}
	return &ProtocolError{msg + " " + strconv.Quote(string(line))}
}

func validDouble(b []byte) bool {
	switch string(b) {
	case "inf", "-inf", "+inf", "nan", "-nan":
		return true
	}
	_, err := strconv.ParseFloat(string(b), 64)
	return err == nil
}

func validBig(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// bufSource reads from a byte slice; payloads alias it.
type bufSource struct {
	b   []byte
	pos int
}

func (s *bufSource) line() ([]byte, error) {
	rest := s.b[s.pos:]
	for i := 0; i+1 < len(rest); i++ {
		if rest[i] == '\r' {
			if rest[i+1] != '\n' {
				return nil, &ProtocolError{"line not terminated by CRLF"}
			}
			s.pos += i + 2
			return rest[:i], nil
		}
		if rest[i] == '\n' {
			return nil, &ProtocolError{"line not terminated by CRLF"}
		}
	}
	if len(rest) > 0 && rest[len(rest)-1] == '\n' {
		return nil, &ProtocolError{"line not terminated by CRLF"}
	}
	return nil, errIncomplete
}

func (s *bufSource) payload(n int) ([]byte, error) {
	if len(s.b)-s.pos < n+2 {
		return nil, errIncomplete
	}
	p := s.b[s.pos : s.pos+n : s.pos+n]
	if s.b[s.pos+n] != '\r' || s.b[s.pos+n+1] != '\n' {
		return nil, &ProtocolError{"bulk string not terminated by CRLF"}
	}
	s.pos += n + 2
	return p, nil
}

// ParseValue parses the value at the start of b and returns it with the
// number of bytes it took. When b ends inside the value it returns n == 0
// and a nil error: call again with more bytes. Bulk strings in the result
// point into b; simple strings and errors are copied.
func ParseValue(b []byte) (Value, int, error) {
	src := &bufSource{b: b}
	r := valueReader{src: src, maxValues: MaxValues}
	v, err := r.read(0)
	switch {
	case errors.Is(err, errIncomplete):
		if len(b) > MaxMessage {
			return Value{}, 0, &ProtocolError{"reply larger than 64 MB"}
		}
		return Value{}, 0, nil
	case err != nil:
		return Value{}, 0, err
	}
	return v, src.pos, nil
}

// readerSource reads from a bufio.Reader; payloads are fresh slices.
type readerSource struct {
	r       *bufio.Reader
	started bool
	long    []byte // a line longer than the reader's buffer
}

func (s *readerSource) line() ([]byte, error) {
	s.long = s.long[:0]
	for {
		chunk, err := s.r.ReadSlice('\n')
		switch {
		case err == nil:
		case errors.Is(err, bufio.ErrBufferFull):
			if len(s.long)+len(chunk) > MaxMessage {
				return nil, &ProtocolError{"reply line longer than 64 MB"}
			}
			s.long = append(s.long, chunk...)
			s.started = true
			continue
		case errors.Is(err, io.EOF) && (s.started || len(chunk) > 0 || len(s.long) > 0):
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
		s.started = true
		if len(s.long) > 0 {
			s.long = append(s.long, chunk...)
			chunk = s.long
		}
		if len(chunk) < 2 || bytes.IndexByte(chunk, '\r') != len(chunk)-2 {
			return nil, &ProtocolError{"line not terminated by CRLF"}
		}
		return chunk[:len(chunk)-2], nil
	}
}

func (s *readerSource) payload(n int) ([]byte, error) {
	// Allocate as the bytes arrive, doubling, so that a length the peer
	// never backs with data costs little.
	p := make([]byte, 0, min(n+2, 64<<10))
	for len(p) < n+2 {
		if len(p) == cap(p) {
			np := make([]byte, len(p), len(p)+min(cap(p), n+2-len(p)))
			copy(np, p)
			p = np
		}
		m, err := io.ReadFull(s.r, p[len(p):min(cap(p), n+2)])
		p = p[:len(p)+m]
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	if p[n] != '\r' || p[n+1] != '\n' {
		return nil, &ProtocolError{"bulk string not terminated by CRLF"}
	}
	return p[:n:n], nil
}

// ReadValue reads one value from r. Every string in the result is a fresh
// copy. It returns io.EOF only when r ends before the value's first byte,
// io.ErrUnexpectedEOF when it ends inside it, and a *ProtocolError for
// malformed input or a reply beyond the limits, after which the stream
// cannot be resynchronized.
func ReadValue(r *bufio.Reader) (Value, error) {
	vr := valueReader{src: &readerSource{r: r}, maxValues: MaxValues}
	return vr.read(0)
}
