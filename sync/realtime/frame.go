package realtime

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// frame is one JSON object on the wire, in either direction. Optional fields
// are pointers or omitempty so that a frame carries only what it means.
type frame struct {
	Op                 int             `json:"op"`
	ID                 string          `json:"id,omitempty"`
	Channel            string          `json:"channel,omitempty"`
	Name               *string         `json:"name,omitempty"`
	Data               json.RawMessage `json:"data,omitempty"`
	ClientID           string          `json:"clientId,omitempty"`
	ConnectionID       string          `json:"connectionId,omitempty"`
	Timestamp          int64           `json:"timestamp,omitempty"`
	Action             string          `json:"action,omitempty"`
	Rewind             int             `json:"rewind,omitempty"`
	Filter             string          `json:"filter,omitempty"`
	AccessToken        string          `json:"accessToken,omitempty"`
	Key                string          `json:"key,omitempty"`
	Code               int             `json:"code,omitempty"`
	Message            string          `json:"message,omitempty"`
	ConnectionStateTTL int64           `json:"connectionStateTtl,omitempty"`
	MaxMessageSize     int             `json:"maxMessageSize,omitempty"`
}

// Error is a failure the server reported in a Nack: Code is its HTTP-like
// status (400, 401, 403, 413, 429, 4000) and Message its text.
type Error struct {
	Code    int
	Message string
	Channel string // set when the Nack named a channel (a subscription removed by an Auth swap)
}

func (e *Error) Error() string {
	if e.Channel != "" {
		return fmt.Sprintf("realtime: %d %s (channel %q)", e.Code, e.Message, e.Channel)
	}
	return fmt.Sprintf("realtime: %d %s", e.Code, e.Message)
}

// Terminal reports whether the error means the credential will not start
// working: 401 and 403, as the seed says.
func (e *Error) Terminal() bool { return e.Code == 401 || e.Code == 403 }

// ErrClosed is returned by calls on a client after Close.
var ErrClosed = errors.New("realtime: client closed")

// ErrConnectionLost is returned by a Publish whose connection dropped before
// its Ack: the server may or may not have accepted it, so it is not resent.
var ErrConnectionLost = errors.New("realtime: connection lost before the acknowledgment; the publish may or may not have been accepted")

// tokenExpiry returns the exp claim of a JWT without verifying it (only the
// server can), or the zero time when the token has none or is not a JWT.
func tokenExpiry(token string) time.Time {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}
	}
	var claims struct {
		Exp float64 `json:"exp"`
	}
	if json.Unmarshal(b, &claims) != nil || claims.Exp <= 0 {
		return time.Time{}
	}
	sec := int64(claims.Exp)
	return time.Unix(sec, int64((claims.Exp-float64(sec))*1e9))
}
