package resp

import (
	"math"
	"strconv"

	"github.com/tidwall/redcon"
)

// Writer appends replies to B in the shapes of protocol version Proto (2 or
// 3). Commands write through it so that one handler serves both versions.
type Writer struct {
	B     []byte
	Proto int
}

// OK appends +OK.
func (w *Writer) OK() { w.B = append(w.B, "+OK\r\n"...) }

// Simple appends a simple string; CR and LF in s become spaces.
func (w *Writer) Simple(s string) {
	w.B = append(w.B, '+')
	w.B = AppendSanitized(w.B, s)
	w.B = append(w.B, '\r', '\n')
}

// Error appends an error; s carries its own prefix ("ERR …", "WRONGTYPE …").
// CR and LF in s, which may come from the client's arguments, become
// spaces, as Redis's addReplyErrorFormat does.
func (w *Writer) Error(s string) {
	w.B = append(w.B, '-')
	w.B = AppendSanitized(w.B, s)
	w.B = append(w.B, '\r', '\n')
}

// Int appends an integer.
func (w *Writer) Int(n int64) { w.B = redcon.AppendInt(w.B, n) }

// IntDigits appends an integer already formatted in decimal, for a
// command that formatted it to store it (INCR): it is not formatted twice.
func (w *Writer) IntDigits(d []byte) {
	w.B = append(w.B, ':')
	w.B = append(w.B, d...)
	w.B = append(w.B, '\r', '\n')
}

// Bulk appends a bulk string.
func (w *Writer) Bulk(b []byte) { w.B = AppendBulk(w.B, b) }

// BulkString appends a bulk string.
func (w *Writer) BulkString(s string) { w.B = AppendBulkString(w.B, s) }

// BulkInt appends an integer formatted as a bulk string.
func (w *Writer) BulkInt(n int64) {
	var tmp [20]byte
	w.B = AppendBulk(w.B, strconv.AppendInt(tmp[:0], n, 10))
}

// Null appends a null bulk string ($-1, or _ in RESP3).
func (w *Writer) Null() {
	if w.Proto == 3 {
		w.B = append(w.B, "_\r\n"...)
		return
	}
	w.B = append(w.B, "$-1\r\n"...)
}

// NullArray appends a null array (*-1, or _ in RESP3).
func (w *Writer) NullArray() {
	if w.Proto == 3 {
		w.B = append(w.B, "_\r\n"...)
		return
	}
	w.B = append(w.B, "*-1\r\n"...)
}

// Array appends an array header of n elements.
func (w *Writer) Array(n int) { w.B = AppendHeader(w.B, '*', n) }

// Map appends a map header of n pairs (an array of 2n in RESP2).
func (w *Writer) Map(n int) {
	if w.Proto == 3 {
		w.B = AppendHeader(w.B, '%', n)
		return
	}
	w.B = AppendHeader(w.B, '*', 2*n)
}

// Set appends a set header (an array in RESP2).
func (w *Writer) Set(n int) {
	if w.Proto == 3 {
		w.B = AppendHeader(w.B, '~', n)
		return
	}
	w.B = AppendHeader(w.B, '*', n)
}

// Push appends a push header (an array in RESP2, as Redis does for pub/sub).
func (w *Writer) Push(n int) {
	if w.Proto == 3 {
		w.B = AppendHeader(w.B, '>', n)
		return
	}
	w.B = AppendHeader(w.B, '*', n)
}

// Bool appends a boolean (the integers 1 and 0 in RESP2).
func (w *Writer) Bool(v bool) {
	if w.Proto == 3 {
		if v {
			w.B = append(w.B, "#t\r\n"...)
		} else {
			w.B = append(w.B, "#f\r\n"...)
		}
		return
	}
	if v {
		w.B = append(w.B, ":1\r\n"...)
	} else {
		w.B = append(w.B, ":0\r\n"...)
	}
}

// Double appends a double: a RESP3 double, or a bulk string in RESP2,
// formatted as Redis 7.0 does ("%.17g", inf and -inf).
func (w *Writer) Double(f float64) {
	if w.Proto == 3 {
		w.B = append(w.B, ',')
		w.B = AppendFloat(w.B, f)
		w.B = append(w.B, '\r', '\n')
		return
	}
	var tmp [32]byte
	w.B = AppendBulk(w.B, AppendFloat(tmp[:0], f))
}

// Verbatim appends a verbatim string of format "txt" (a bulk string in RESP2).
func (w *Writer) Verbatim(s string) {
	if w.Proto == 3 {
		w.B = AppendHeader(w.B, '=', len(s)+4)
		w.B = append(w.B, "txt:"...)
		w.B = append(w.B, s...)
		w.B = append(w.B, '\r', '\n')
		return
	}
	w.B = AppendBulkString(w.B, s)
}

// Raw appends bytes that are already RESP.
func (w *Writer) Raw(b []byte) { w.B = append(w.B, b...) }

// AppendFloat formats f as C's "%.17g" does, with inf, -inf and nan spelled
// as Redis spells them.
func AppendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	case math.IsNaN(f):
		return append(b, "nan"...)
	}
	return strconv.AppendFloat(b, f, 'g', 17, 64)
}
