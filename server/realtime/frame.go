package realtime

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/recached/recached/sync/realtime/wire"
)

// Nack codes (SPEC section 9): HTTP status codes, plus 4000.
const (
	codeBadRequest   = 400
	codeUnauthorized = 401
	codeForbidden    = 403
	codeTooLarge     = 413
	codeTooMany      = 429
	codeDisconnected = 4000
)

// Limits of the protocol (SPEC section 9).
const (
	// MaxMessageSize is the largest client frame served; a bigger one is
	// read to its end, dropped and answered with a 413 Nack.
	MaxMessageSize = 64 << 10
	// MaxChannel is the longest channel name, in bytes.
	MaxChannel = 256
	// MaxClientID is the longest presence client id, in bytes.
	MaxClientID = 256
	// MaxRewind caps Subscribe's rewind.
	MaxRewind = 100
)

// request is one decoded and validated client frame. Fields the frame did
// not carry are zero; the has* flags tell an empty string from a missing
// one where the protocol cares.
type request struct {
	op int
	// id is the frame's id as it was sent (a JSON string, quotes and
	// escapes included), echoed verbatim in the Ack or Nack; nil when the
	// frame had none.
	id       []byte
	channel  string
	name     string
	hasName  bool
	data     json.RawMessage // compacted; nil when absent
	clientID string
	hasCID   bool
	rewind   int
	filter   string
	hasFilt  bool
	// cred is Auth's credential; credKey tells a key from a token.
	cred    string
	credKey bool
}

// wireFrame is the JSON shape of a client frame: every field raw, so that
// decodeRequest can tell a missing field from a wrongly typed one and name
// the field in its error. Fields the protocol does not know are ignored.
type wireFrame struct {
	Op          json.RawMessage `json:"op"`
	ID          json.RawMessage `json:"id"`
	Channel     json.RawMessage `json:"channel"`
	Name        json.RawMessage `json:"name"`
	Data        json.RawMessage `json:"data"`
	ClientID    json.RawMessage `json:"clientId"`
	Rewind      json.RawMessage `json:"rewind"`
	Filter      json.RawMessage `json:"filter"`
	AccessToken json.RawMessage `json:"accessToken"`
	Token       json.RawMessage `json:"token"`
	Key         json.RawMessage `json:"key"`
}

// frameError is a request refused before it ran: a Nack with code and
// message, naming the request's id when it had a usable one.
type frameError struct {
	id      []byte
	code    int
	message string
}

func (e *frameError) Error() string { return strconv.Itoa(e.code) + " " + e.message }

func badRequest(id []byte, format string, args ...any) *frameError {
	return &frameError{id: id, code: codeBadRequest, message: fmt.Sprintf(format, args...)}
}

// decodeRequest decodes and validates one client frame. Every way a frame
// can be malformed (not UTF-8, not JSON, not an object, no or an unknown
// op, an op only the server sends, a missing or wrongly typed field, a
// channel out of bounds) is a 400 frameError; nothing else is checked here
// (capabilities, ceilings and the filter's syntax are the connection's
// business).
func decodeRequest(b []byte) (*request, *frameError) {
	if !utf8.Valid(b) {
		return nil, badRequest(nil, "frame is not valid UTF-8")
	}
	var w wireFrame
	if err := json.Unmarshal(b, &w); err != nil {
		var serr *json.SyntaxError
		if !errors.As(err, &serr) && json.Valid(b) {
			return nil, badRequest(nil, "frame is not a JSON object")
		}
		return nil, badRequest(nil, "frame is not valid JSON: %v", err)
	}
	if firstByte(b) != '{' { // null decodes into a struct without error
		return nil, badRequest(nil, "frame is not a JSON object")
	}
	r := &request{}
	// The id first, so that every later error can name it.
	if present(w.ID) {
		if w.ID[0] != '"' {
			var echo []byte
			if isNumber(w.ID) {
				echo = w.ID
			}
			return nil, badRequest(echo, "id must be a string")
		}
		r.id = w.ID
	}
	if !present(w.Op) {
		return nil, badRequest(r.id, "op is required")
	}
	op, ok := integer(w.Op)
	if !ok {
		return nil, badRequest(r.id, "op must be an integer")
	}
	r.op = op
	switch op {
	case wire.Message, wire.Presence, wire.Ack, wire.Nack, wire.Connected:
		return nil, badRequest(r.id, "op %d is sent by the server only", op)
	case wire.Attach, wire.Detach, wire.Publish, wire.PresenceEnter, wire.PresenceLeave, wire.PresenceUpdate,
		wire.Heartbeat, wire.Subscribe, wire.Unsubscribe, wire.Auth:
	default:
		return nil, badRequest(r.id, "unknown op %s", w.Op)
	}
	var err *frameError
	str := func(raw json.RawMessage, field string, dst *string) bool {
		if err != nil || !present(raw) {
			return false
		}
		if raw[0] != '"' {
			err = badRequest(r.id, "%s must be a string", field)
			return false
		}
		if uerr := json.Unmarshal(raw, dst); uerr != nil {
			err = badRequest(r.id, "%s: %v", field, uerr)
			return false
		}
		return true
	}
	hasChannel := str(w.Channel, "channel", &r.channel)
	r.hasName = str(w.Name, "name", &r.name)
	r.hasCID = str(w.ClientID, "clientId", &r.clientID)
	r.hasFilt = str(w.Filter, "filter", &r.filter)
	var access, token, key string
	hasAccess := str(w.AccessToken, "accessToken", &access)
	hasToken := str(w.Token, "token", &token)
	hasKey := str(w.Key, "key", &key)
	if err != nil {
		return nil, err
	}
	if present(w.Rewind) {
		n, ok := integer(w.Rewind)
		if !ok || n < 0 {
			return nil, badRequest(r.id, "rewind must be a non-negative integer")
		}
		r.rewind = min(n, MaxRewind)
	}
	if w.Data != nil { // null is a value: data may be null
		var buf bytes.Buffer
		if cerr := json.Compact(&buf, w.Data); cerr != nil {
			return nil, badRequest(r.id, "data: %v", cerr)
		}
		r.data = buf.Bytes()
	}
	switch op {
	case wire.Attach, wire.Detach, wire.Publish, wire.PresenceEnter, wire.PresenceLeave, wire.PresenceUpdate,
		wire.Subscribe, wire.Unsubscribe:
		if !hasChannel {
			return nil, badRequest(r.id, "channel is required")
		}
		if len(r.channel) == 0 || len(r.channel) > MaxChannel {
			return nil, badRequest(r.id, "channel must be 1 to %d bytes", MaxChannel)
		}
	}
	if r.hasCID && (len(r.clientID) == 0 || len(r.clientID) > MaxClientID) {
		return nil, badRequest(r.id, "clientId must be 1 to %d bytes", MaxClientID)
	}
	if op == wire.Auth {
		n := 0
		for _, c := range []struct {
			has   bool
			v     string
			isKey bool
		}{{hasAccess, access, false}, {hasToken, token, false}, {hasKey, key, true}} {
			if c.has {
				n++
				r.cred, r.credKey = c.v, c.isKey
			}
		}
		if n != 1 {
			return nil, badRequest(r.id, "Auth needs exactly one of accessToken, token or key")
		}
	}
	return r, nil
}

// present reports whether a raw field was in the frame with a value other
// than null (null means absent, as JSON encoders write an unset field).
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

// firstByte returns the first byte of b that is not JSON white space.
func firstByte(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
		default:
			return c
		}
	}
	return 0
}

// isNumber reports whether raw is a JSON number.
func isNumber(raw []byte) bool {
	return len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')
}

// integer returns the value of a JSON number that is a whole number within
// int32 (1, 1.0 and 1e2 are; 1.5 and "1" are not).
func integer(raw json.RawMessage) (int, bool) {
	if !isNumber(raw) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
		return 0, false
	}
	return int(f), true
}

// Server frames. Each append* function appends one JSON object; wsText
// wraps a payload in a WebSocket text frame.

// appendConnected appends the Connected frame.
func appendConnected(b []byte, connID string) []byte {
	b = append(b, `{"op":12,"connectionId":`...)
	b = appendString(b, connID)
	b = append(b, `,"connectionStateTtl":120000,"maxMessageSize":`...)
	b = strconv.AppendInt(b, MaxMessageSize, 10)
	return append(b, '}')
}

// appendAck appends {"op":9,"id":…}; id is the request's raw id.
func appendAck(b, id []byte) []byte {
	b = append(b, `{"op":9,"id":`...)
	b = append(b, id...)
	return append(b, '}')
}

// appendHeartbeat appends {"op":11}, with the request's id when it had one.
func appendHeartbeat(b, id []byte) []byte {
	b = append(b, `{"op":11`...)
	if id != nil {
		b = append(b, `,"id":`...)
		b = append(b, id...)
	}
	return append(b, '}')
}

// appendNack appends a Nack: the request's id when it had one, the code,
// the channel concerned when not empty, and the message.
func appendNack(b, id []byte, code int, channel, message string) []byte {
	b = append(b, `{"op":10`...)
	if id != nil {
		b = append(b, `,"id":`...)
		b = append(b, id...)
	}
	b = append(b, `,"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	if channel != "" {
		b = append(b, `,"channel":`...)
		b = appendString(b, channel)
	}
	b = append(b, `,"message":`...)
	b = appendString(b, message)
	return append(b, '}')
}

// messageFields is what a Message frame carries.
type messageFields struct {
	channel  []byte
	name     string
	hasName  bool
	data     []byte // raw JSON; nil when absent
	dataStr  []byte // a RESP payload, sent as a JSON string, when data is nil
	strData  bool
	connID   string
	unixMsec int64
}

// appendMessage appends a Message frame.
func appendMessage(b []byte, m *messageFields) []byte {
	b = append(b, `{"op":4,"channel":`...)
	b = appendString(b, string(m.channel))
	if m.hasName {
		b = append(b, `,"name":`...)
		b = appendString(b, m.name)
	}
	switch {
	case m.data != nil:
		b = append(b, `,"data":`...)
		b = append(b, m.data...)
	case m.strData:
		b = append(b, `,"data":`...)
		b = appendString(b, string(m.dataStr))
	}
	b = append(b, `,"connectionId":`...)
	b = appendString(b, m.connID)
	b = append(b, `,"timestamp":`...)
	b = strconv.AppendInt(b, m.unixMsec, 10)
	return append(b, '}')
}

// appendPresence appends a Presence frame.
func appendPresence(b []byte, channel, action, clientID, connID string, data []byte, unixMsec int64) []byte {
	b = append(b, `{"op":8,"channel":`...)
	b = appendString(b, channel)
	b = append(b, `,"action":"`...)
	b = append(b, action...)
	b = append(b, `","clientId":`...)
	b = appendString(b, clientID)
	b = append(b, `,"connectionId":`...)
	b = appendString(b, connID)
	if data != nil {
		b = append(b, `,"data":`...)
		b = append(b, data...)
	}
	b = append(b, `,"timestamp":`...)
	b = strconv.AppendInt(b, unixMsec, 10)
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Bytes that are not valid UTF-8
// (a RESP payload may hold any) become U+FFFD, as encoding/json does, so
// that the frame stays valid UTF-8 and valid JSON; U+2028 and U+2029 are
// escaped so that the text is also valid JavaScript.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
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
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// WebSocket opcodes (RFC 6455 section 5.2) of the frames the server writes.
const (
	wsText  = 0x1
	wsClose = 0x8
	wsPing  = 0x9
	wsPong  = 0xA
)

// wsFrame returns payload p as one final, unmasked WebSocket frame with
// opcode op, ready to be written as it is (and shared by every connection
// it is queued on).
func wsFrame(op byte, p []byte) []byte {
	return appendWSFrame(make([]byte, 0, len(p)+10), op, p)
}

// appendWSFrame appends payload p as one final, unmasked WebSocket frame
// with opcode op.
func appendWSFrame(b []byte, op byte, p []byte) []byte {
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

// closeFrame returns a close frame with status code and reason (at most
// 123 bytes, cut otherwise).
func closeFrame(code int, reason string) []byte {
	if len(reason) > 123 {
		reason = reason[:123]
	}
	p := make([]byte, 2, 2+len(reason))
	binary.BigEndian.PutUint16(p, uint16(code))
	return wsFrame(wsClose, append(p, reason...))
}
