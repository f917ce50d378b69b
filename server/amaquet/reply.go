package amaquet

import (
	"encoding/base64"
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// errReply is a RESP reply the mapping cannot read: the engine wrote
// something that is not one well-formed RESP3 value.
var errReply = errors.New("amaquet: malformed RESP reply")

// maxSafeInt is 2^53: integers beyond it lose precision as JSON numbers
// in most readers, so they are sent as strings.
const maxSafeInt = 1 << 53

// appendReply appends the response envelope of one RESP3 reply: the
// error envelope for an error reply, else {"ok":true,"result":…} with the
// reply mapped to JSON as SPEC section 10 lists.
func appendReply(out, reply []byte) ([]byte, error) {
	// The replies of GET and SET, mapped without the general walk.
	if string(reply) == "+OK\r\n" {
		return append(out, `{"ok":true,"result":"OK"}`...), nil
	}
	if d, ok := wholeBulk(reply); ok {
		out = append(out, `{"ok":true,"result":`...)
		out = appendString(out, d)
		return append(out, '}'), nil
	}
	if len(reply) > 0 && (reply[0] == '-' || reply[0] == '!') {
		msg, _, err := errorText(reply, 0)
		if err != nil {
			return out, err
		}
		code, text := errorCode(msg)
		return appendError(out, code, text), nil
	}
	out = append(out, `{"ok":true,"result":`...)
	out, _, err := appendValue(out, reply, 0)
	if err != nil {
		return out, err
	}
	return append(out, '}'), nil
}

// appendError appends an error envelope.
func appendError(out []byte, code, msg string) []byte {
	out = append(out, `{"ok":false,"error":{"code":"`...)
	out = append(out, code...)
	out = append(out, `","message":`...)
	out = appendString(out, []byte(msg))
	return append(out, "}}"...)
}

// errorCode maps a Redis error reply's text to its code and message: the
// refusals of authentication and scope, the missing key of the commands
// Redis answers "no such key", unknown commands, wrong types; any other
// error is COMMAND_ERROR with Redis's text.
func errorCode(msg string) (code, text string) {
	switch {
	case msg == "ERR no such key":
		return CodeNotFound, "key not found"
	case strings.HasPrefix(msg, "WRONGTYPE "):
		return CodeWrongType, msg
	case strings.HasPrefix(msg, "NOAUTH "):
		return CodeUnauthenticated, msg
	case strings.HasPrefix(msg, "NOPERM "):
		return CodeForbidden, msg
	case strings.HasPrefix(msg, "ERR unknown command '"), strings.HasPrefix(msg, "ERR unknown subcommand '"):
		return CodeUnknownCommand, msg
	}
	return CodeCommandError, msg
}

// line returns the text of the line at b[i:] (without CRLF) and the index
// after it.
func line(b []byte, i int) ([]byte, int, error) {
	for j := i; j+1 < len(b); j++ {
		if b[j] == '\r' && b[j+1] == '\n' {
			return b[i:j], j + 2, nil
		}
	}
	return nil, 0, errReply
}

// header reads a type byte's length or number line at b[i] (the type byte
// included).
func header(b []byte, i int) (int64, int, error) {
	l, next, err := line(b, i+1)
	if err != nil {
		return 0, 0, err
	}
	n, err := strconv.ParseInt(string(l), 10, 64)
	if err != nil {
		return 0, 0, errReply
	}
	return n, next, nil
}

// blob returns the payload of a bulk-like value at b[i] ($, =, !), nil
// with ok false for a null bulk.
func blob(b []byte, i int) (data []byte, next int, ok bool, err error) {
	n, next, err := header(b, i)
	if err != nil {
		return nil, 0, false, err
	}
	if n < 0 {
		return nil, next, false, nil
	}
	end := next + int(n)
	if n > int64(len(b)) || end+2 > len(b) || b[end] != '\r' || b[end+1] != '\n' {
		return nil, 0, false, errReply
	}
	return b[next:end], end + 2, true, nil
}

// wholeBulk returns the data of reply when reply is exactly one bulk
// string ("$<n>\r\n<n bytes>\r\n"), and false for anything else.
func wholeBulk(b []byte) ([]byte, bool) {
	if len(b) < 5 || b[0] != '$' {
		return nil, false
	}
	n, i := 0, 1
	for ; i < len(b) && i < 11 && b[i] >= '0' && b[i] <= '9'; i++ {
		n = n*10 + int(b[i]-'0')
	}
	if i == 1 || i+2+n+2 != len(b) || b[i] != '\r' || b[i+1] != '\n' || b[len(b)-2] != '\r' || b[len(b)-1] != '\n' {
		return nil, false
	}
	return b[i+2 : i+2+n], true
}

// errorText returns the text of a simple or blob error at b[i].
func errorText(b []byte, i int) (string, int, error) {
	if b[i] == '-' {
		l, next, err := line(b, i+1)
		return string(l), next, err
	}
	d, next, _, err := blob(b, i)
	return string(d), next, err
}

// appendValue appends the JSON of the RESP3 value at b[i] and returns the
// index after it.
func appendValue(out, b []byte, i int) ([]byte, int, error) {
	if i >= len(b) {
		return out, 0, errReply
	}
	switch b[i] {
	case '+':
		l, next, err := line(b, i+1)
		if err != nil {
			return out, 0, err
		}
		return appendString(out, l), next, nil
	case '$':
		d, next, ok, err := blob(b, i)
		if err != nil {
			return out, 0, err
		}
		if !ok {
			return append(out, "null"...), next, nil
		}
		return appendString(out, d), next, nil
	case '=':
		d, next, _, err := blob(b, i)
		if err != nil {
			return out, 0, err
		}
		if len(d) >= 4 && d[3] == ':' {
			d = d[4:] // the format ("txt:") is not content
		}
		return appendString(out, d), next, nil
	case '-', '!':
		msg, next, err := errorText(b, i)
		if err != nil {
			return out, 0, err
		}
		code, text := errorCode(msg)
		out = append(out, `{"error":{"code":"`...)
		out = append(out, code...)
		out = append(out, `","message":`...)
		out = appendString(out, []byte(text))
		return append(out, "}}"...), next, nil
	case ':':
		l, next, err := line(b, i+1)
		if err != nil {
			return out, 0, err
		}
		n, perr := strconv.ParseInt(string(l), 10, 64)
		if perr != nil {
			return out, 0, errReply
		}
		if n > maxSafeInt || n < -maxSafeInt {
			out = append(out, '"')
			out = strconv.AppendInt(out, n, 10)
			return append(out, '"'), next, nil
		}
		return strconv.AppendInt(out, n, 10), next, nil
	case '(':
		l, next, err := line(b, i+1)
		if err != nil {
			return out, 0, err
		}
		return appendString(out, l), next, nil
	case ',':
		l, next, err := line(b, i+1)
		if err != nil {
			return out, 0, err
		}
		f, perr := strconv.ParseFloat(string(l), 64)
		if perr != nil && !errors.Is(perr, strconv.ErrRange) {
			return out, 0, errReply
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return appendString(out, l), next, nil // "inf", "-inf", "nan"
		}
		return strconv.AppendFloat(out, f, 'g', -1, 64), next, nil
	case '#':
		l, next, err := line(b, i+1)
		switch {
		case err != nil || len(l) != 1:
			return out, 0, errReply
		case l[0] == 't':
			return append(out, "true"...), next, nil
		case l[0] == 'f':
			return append(out, "false"...), next, nil
		}
		return out, 0, errReply
	case '_':
		_, next, err := line(b, i+1)
		return append(out, "null"...), next, err
	case '*', '~', '>':
		n, next, err := header(b, i)
		if err != nil {
			return out, 0, err
		}
		if n < 0 {
			return append(out, "null"...), next, nil
		}
		out = append(out, '[')
		for k := int64(0); k < n; k++ {
			if k > 0 {
				out = append(out, ',')
			}
			if out, next, err = appendValue(out, b, next); err != nil {
				return out, 0, err
			}
		}
		return append(out, ']'), next, nil
	case '%':
		return appendMap(out, b, i)
	case '|':
		// An attribute describes the value after it: skipped.
		n, next, err := header(b, i)
		if err != nil {
			return out, 0, err
		}
		for k := int64(0); k < 2*n; k++ {
			if next, err = skip(b, next); err != nil {
				return out, 0, err
			}
		}
		return appendValue(out, b, next)
	}
	return out, 0, errReply
}

// appendMap appends a map: an object when every key is a UTF-8 string,
// else an array of [key, value] pairs.
func appendMap(out, b []byte, i int) ([]byte, int, error) {
	n, start, err := header(b, i)
	if err != nil {
		return out, 0, err
	}
	object := true
	next := start
	for k := int64(0); k < n && object; k++ {
		if object, err = stringKey(b, next); err != nil {
			return out, 0, err
		}
		for j := 0; j < 2; j++ {
			if next, err = skip(b, next); err != nil {
				return out, 0, err
			}
		}
	}
	open, close, sep := byte('{'), byte('}'), byte(':')
	if !object {
		open, close, sep = '[', ']', ','
	}
	out = append(out, open)
	next = start
	for k := int64(0); k < n; k++ {
		if k > 0 {
			out = append(out, ',')
		}
		if !object {
			out = append(out, '[')
		}
		if out, next, err = appendValue(out, b, next); err != nil {
			return out, 0, err
		}
		out = append(out, sep)
		if out, next, err = appendValue(out, b, next); err != nil {
			return out, 0, err
		}
		if !object {
			out = append(out, ']')
		}
	}
	return append(out, close), next, nil
}

// stringKey reports whether the value at b[i] maps to a JSON string.
func stringKey(b []byte, i int) (bool, error) {
	if i >= len(b) {
		return false, errReply
	}
	switch b[i] {
	case '+', '(':
		l, _, err := line(b, i+1)
		return err == nil && utf8.Valid(l), err
	case '$', '=':
		d, _, ok, err := blob(b, i)
		return ok && utf8.Valid(d), err
	}
	return false, nil
}

// skip returns the index after the RESP value at b[i].
func skip(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errReply
	}
	switch b[i] {
	case '+', '-', ':', '(', ',', '#', '_':
		_, next, err := line(b, i+1)
		return next, err
	case '$', '=', '!':
		_, next, _, err := blob(b, i)
		return next, err
	case '*', '~', '>', '%', '|':
		n, next, err := header(b, i)
		if err != nil {
			return 0, err
		}
		if b[i] == '%' || b[i] == '|' {
			n *= 2
		}
		for k := int64(0); k < n; k++ {
			if next, err = skip(b, next); err != nil {
				return 0, err
			}
		}
		return next, nil
	}
	return 0, errReply
}

// appendString appends s as a JSON string, or {"base64":"…"} when it is
// not UTF-8.
func appendString(out, s []byte) []byte {
	if plainEnd(s, 0) == len(s) {
		// Printable ASCII without a quote or backslash: as it is.
		out = append(out, '"')
		out = append(out, s...)
		return append(out, '"')
	}
	if !utf8.Valid(s) {
		out = append(out, `{"base64":"`...)
		out = base64.StdEncoding.AppendEncode(out, s)
		return append(out, `"}`...)
	}
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		out = append(out, s[start:i]...)
		switch c {
		case '"':
			out = append(out, `\"`...)
		case '\\':
			out = append(out, `\\`...)
		case '\n':
			out = append(out, `\n`...)
		case '\r':
			out = append(out, `\r`...)
		case '\t':
			out = append(out, `\t`...)
		default:
			out = append(out, `\u00`...)
			out = append(out, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		}
		start = i + 1
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}
