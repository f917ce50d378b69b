package amaquet

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"
)

// appendArg appends a command argument as JSON: a string when it is UTF-8,
// {"base64":"…"} when it is not. Integers and floats are sent as their
// decimal text, as Redis reads them.
func appendArg(b []byte, a any) ([]byte, error) {
	switch v := a.(type) {
	case string:
		if utf8.ValidString(v) {
			return appendString(b, v), nil
		}
		return appendBase64(b, []byte(v)), nil
	case []byte:
		if utf8.Valid(v) {
			return appendString(b, string(v)), nil
		}
		return appendBase64(b, v), nil
	case int:
		return append(append(append(b, '"'), strconv.Itoa(v)...), '"'), nil
	case int64:
		return append(strconv.AppendInt(append(b, '"'), v, 10), '"'), nil
	case uint64:
		return append(strconv.AppendUint(append(b, '"'), v, 10), '"'), nil
	case float64:
		if math.IsNaN(v) {
			return b, fmt.Errorf("amaquet: argument NaN")
		}
		return append(strconv.AppendFloat(append(b, '"'), v, 'g', -1, 64), '"'), nil
	}
	// reflect.TypeOf, unlike fmt's %T, keeps a from escaping: the caller's
	// arguments can then stay on its stack.
	return b, fmt.Errorf("amaquet: argument of type %v (want string, []byte, int, int64, uint64 or float64)", reflect.TypeOf(a))
}

func appendBase64(b []byte, v []byte) []byte {
	b = append(b, `{"base64":"`...)
	b = base64.StdEncoding.AppendEncode(b, v)
	return append(b, `"}`...)
}

// appendString appends s, valid UTF-8, as a JSON string.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendCommand appends the JSON array ["CMD","arg",…].
func appendCommand(b []byte, cmd string, args []any) ([]byte, error) {
	b = append(b, '[')
	b = appendString(b, cmd)
	for _, a := range args {
		var err error
		if b, err = appendArg(append(b, ','), a); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

// envelope is a response payload.
type envelope struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *Error          `json:"error"`
}

// UnmarshalJSON reads {"code":…,"message":…}.
func (e *Error) UnmarshalJSON(b []byte) error {
	var v struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	e.Code, e.Message = Code(v.Code), v.Message
	return nil
}

// parseEnvelope decodes a response payload: the raw result, or the *Error
// it carries.
func parseEnvelope(p []byte) (json.RawMessage, error) {
	const okPrefix = `{"ok":true,"result":`
	if len(p) > len(okPrefix) && string(p[:len(okPrefix)]) == okPrefix && p[len(p)-1] == '}' {
		// The server's own spelling of a success: no need to parse the
		// envelope (DecodeResult checks the result itself).
		return p[len(okPrefix) : len(p)-1], nil
	}
	var env envelope
	if err := json.Unmarshal(p, &env); err != nil {
		return nil, fmt.Errorf("%w: response is not an envelope: %v", ErrBadFrame, err)
	}
	if !env.OK {
		if env.Error == nil || env.Error.Code == "" {
			return nil, fmt.Errorf("%w: error envelope without a code: %.200s", ErrBadFrame, p)
		}
		return nil, env.Error
	}
	return env.Result, nil
}

// DecodeResult turns a COMMAND result into Go values: strings → string,
// {"base64":"…"} → []byte, integral numbers → int64, other numbers →
// float64, null → nil, booleans → bool, arrays → []any, objects →
// map[string]any, and an error inside an array ({"error":{"code",
// "message"}}, e.g. a transaction's failed command) → *Error. An integer
// beyond 2^53 arrives as a string (SPEC section 10) and stays one.
func DecodeResult(raw []byte) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if v, ok := decodeSimple(raw); ok {
		return v, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("amaquet: result: %w", err)
	}
	if d.More() {
		return nil, fmt.Errorf("amaquet: result: data after the value")
	}
	return convert(v)
}

// decodeSimple decodes the commonest results without encoding/json: null,
// a string without escapes, an integer.
func decodeSimple(raw []byte) (any, bool) {
	switch {
	case string(raw) == "null":
		return nil, true
	case raw[0] == '"' && len(raw) >= 2 && raw[len(raw)-1] == '"':
		body := raw[1 : len(raw)-1]
		for _, c := range body {
			if c == '"' || c == '\\' || c < 0x20 {
				return nil, false
			}
		}
		if !utf8.Valid(body) {
			return nil, false
		}
		if string(body) == "OK" {
			return "OK", true // SET's answer, without allocating
		}
		return string(body), true
	case raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9':
		digits := raw
		if digits[0] == '-' {
			digits = digits[1:]
		}
		if len(digits) == 0 || digits[0] == '0' && len(digits) > 1 || digits[0] < '0' || digits[0] > '9' {
			return nil, false // not JSON's integer syntax
		}
		if i, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			return i, true
		}
	}
	return nil, false
}

func convert(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i, nil
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return nil, fmt.Errorf("amaquet: result number %q: %w", x, err)
		}
		return f, nil
	case []any:
		for i, e := range x {
			c, err := convert(e)
			if err != nil {
				return nil, err
			}
			x[i] = c
		}
		return x, nil
	case map[string]any:
		if e, ok := x["error"].(map[string]any); ok && len(x) == 1 {
			// An error reply inside an array (a transaction's failed command).
			code, _ := e["code"].(string)
			msg, _ := e["message"].(string)
			if code != "" {
				return &Error{Code: Code(code), Message: msg}, nil
			}
		}
		if s, ok := x["base64"].(string); ok && len(x) == 1 {
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return nil, fmt.Errorf("amaquet: result base64: %w", err)
			}
			return b, nil
		}
		for k, e := range x {
			c, err := convert(e)
			if err != nil {
				return nil, err
			}
			x[k] = c
		}
		return x, nil
	}
	return v, nil
}
