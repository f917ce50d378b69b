package sync

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Token errors. Their texts are the ones SYNC TOKEN replies with after
// "NOPERM ".
var (
	// ErrInvalidToken is a malformed token or a bad signature.
	ErrInvalidToken = errors.New("invalid token")
	// ErrTokenExpired is a well-signed token whose expiry has passed.
	ErrTokenExpired = errors.New("token expired")
)

// A scope token is
//
//	base64url(payload) "." base64url(hmac_sha256(secret, base64url(payload)))
//
// with payload "pattern1,pattern2[|unix-expiry-seconds]" and base64url
// without padding. The HMAC covers the unpadded base64url payload text.

// SignToken returns a token granting patterns, expiring at expiry (unix
// seconds; 0 for a token that never expires). Patterns must be non-empty and
// may not contain ',' or '|', the payload's separators.
func SignToken(secret []byte, patterns []string, expiry int64) (string, error) {
	if len(secret) == 0 {
		return "", errors.New("empty token secret")
	}
	if len(patterns) == 0 {
		return "", errors.New("a token needs at least one pattern")
	}
	for _, p := range patterns {
		if p == "" || strings.ContainsAny(p, ",|") {
			return "", errors.New("pattern " + strconv.Quote(p) + " is empty or contains ',' or '|'")
		}
	}
	if expiry < 0 {
		return "", errors.New("negative expiry")
	}
	payload := strings.Join(patterns, ",")
	if expiry > 0 {
		payload += "|" + strconv.FormatInt(expiry, 10)
	}
	body := base64.RawURLEncoding.EncodeToString([]byte(payload))
	return body + "." + base64.RawURLEncoding.EncodeToString(mac(secret, body)), nil
}

// decodeCanonical decodes s, unpadded base64url, and reports whether s is
// the one encoding of its bytes. The decoder alone accepts more: it skips
// CR and LF anywhere, and without Strict it ignores the unused low bits of
// the last character, so that several texts would carry one signature.
func decodeCanonical(s string) ([]byte, bool) {
	if strings.ContainsAny(s, "\r\n") {
		return nil, false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	return b, err == nil
}

func mac(secret []byte, body string) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(body))
	return h.Sum(nil)
}

// VerifyToken checks token against secret at time now and returns the
// patterns it grants and its expiry (0 for none). Trailing '=' padding is
// stripped from both parts first; what remains must be canonical unpadded
// base64url (no line breaks, unused trailing bits zero), so that one token
// has one text. The signature is compared in constant time. A malformed
// token or a bad signature is ErrInvalidToken; an expired one (now at or
// past its expiry second) is ErrTokenExpired. The expiry is
// only checked here, when the token is presented.
func VerifyToken(secret []byte, token string, now time.Time) (patterns []string, expiry int64, err error) {
	if len(secret) == 0 {
		return nil, 0, ErrInvalidToken
	}
	body, sig, ok := strings.Cut(token, ".")
	if !ok {
		return nil, 0, ErrInvalidToken
	}
	body = strings.TrimRight(body, "=")
	sig = strings.TrimRight(sig, "=")
	got, ok := decodeCanonical(sig)
	if !ok || !hmac.Equal(got, mac(secret, body)) {
		return nil, 0, ErrInvalidToken
	}
	raw, ok := decodeCanonical(body)
	if !ok {
		return nil, 0, ErrInvalidToken
	}
	payload := string(raw)
	hasExpiry := false
	if i := strings.LastIndexByte(payload, '|'); i >= 0 {
		exp := payload[i+1:]
		n, err := strconv.ParseInt(exp, 10, 64)
		if err != nil || n < 0 || exp[0] == '+' {
			return nil, 0, ErrInvalidToken
		}
		expiry, payload, hasExpiry = n, payload[:i], true
	}
	patterns = strings.Split(payload, ",")
	for _, p := range patterns {
		if p == "" {
			return nil, 0, ErrInvalidToken
		}
	}
	if hasExpiry && now.Unix() >= expiry {
		return nil, 0, ErrTokenExpired
	}
	return patterns, expiry, nil
}
