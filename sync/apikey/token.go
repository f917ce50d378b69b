package apikey

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// claims are an access token's claims (SPEC section 9): exp (required),
// iat, x-capability (a JSON object as in the file; Ably's form, the same
// object as a JSON string, is accepted too) and x-client-id.
type claims struct {
	jwt.RegisteredClaims
	Capability json.RawMessage `json:"x-capability,omitempty"`
	ClientID   *string         `json:"x-client-id,omitempty"`
}

// MaxTokenSize bounds the token VerifyToken decodes; a longer one is
// malformed.
const MaxTokenSize = 16 << 10

// VerifyToken checks an access token: a JWT signed HS256 (no other
// algorithm) with the secret of the key its header's kid names, with an
// exp after now. The grant's capability is the token's x-capability
// intersected with the key's (the key's alone without one), its ClientID
// the x-client-id. Every failure wraps ErrMalformed, ErrUnknownKey,
// ErrBadSignature or ErrExpired.
func (s *Store) VerifyToken(token string, now time.Time) (*Grant, error) {
	if len(token) > MaxTokenSize {
		return nil, fmt.Errorf("%w: token longer than %d bytes", ErrMalformed, MaxTokenSize)
	}
	var key *Key
	var c claims
	_, err := jwt.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		kid, ok := t.Header["kid"].(string)
		if !ok || kid == "" {
			return nil, fmt.Errorf("%w: the token's header has no kid", ErrMalformed)
		}
		if key = s.Key(kid); key == nil {
			return nil, fmt.Errorf("%w %q", ErrUnknownKey, kid)
		}
		return []byte(key.Secret), nil
	},
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	if err != nil {
		return nil, tokenError(err)
	}
	g := &Grant{Key: key, Capability: key.Capability, Expires: c.ExpiresAt.Time}
	if c.Capability != nil {
		tc, err := tokenCapability(c.Capability)
		if err != nil {
			return nil, fmt.Errorf("%w: x-capability: %v", ErrMalformed, err)
		}
		g.Capability = tc.Intersect(key.Capability)
	}
	if c.ClientID != nil {
		g.ClientID = *c.ClientID
	}
	return g, nil
}

// tokenError maps the JWT library's errors onto the package's.
func tokenError(err error) error {
	for _, e := range []error{ErrMalformed, ErrUnknownKey} {
		if errors.Is(err, e) {
			return err
		}
	}
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return fmt.Errorf("%w: %v", ErrExpired, err)
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	return fmt.Errorf("%w: %v", ErrMalformed, err)
}

// tokenCapability decodes x-capability: an object, or a string holding
// one.
func tokenCapability(raw json.RawMessage) (Capability, error) {
	if len(raw) > 0 && raw[0] == '"' {
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			return nil, err
		}
		raw = json.RawMessage(text)
	}
	return ParseCapability(raw)
}

// Mint returns an access token signed by k (HS256, kid k.ID) valid for ttl
// from now, with x-capability c (none when c is nil: the key's applies)
// and x-client-id clientID (none when empty). The capability VerifyToken
// grants is c intersected with the key's, whatever c asks for.
func Mint(k *Key, ttl time.Duration, c Capability, clientID string, now time.Time) (string, error) {
	if k == nil || k.Secret == "" {
		return "", fmt.Errorf("mint: no key")
	}
	if ttl <= 0 {
		return "", fmt.Errorf("mint: the ttl must be positive, not %v", ttl)
	}
	cl := claims{RegisteredClaims: jwt.RegisteredClaims{
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}}
	if c != nil {
		if err := c.validate(); err != nil {
			return "", fmt.Errorf("mint: %w", err)
		}
		text, err := json.Marshal(c)
		if err != nil {
			return "", fmt.Errorf("mint: %w", err)
		}
		cl.Capability = text
	}
	if clientID != "" {
		cl.ClientID = &clientID
	}
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, cl)
	t.Header["kid"] = k.ID
	return t.SignedString([]byte(k.Secret))
}
