package sync

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestTokenRoundTrip(t *testing.T) {
	secret := []byte("s3cret")
	now := time.Unix(1_700_000_000, 0)
	tests := []struct {
		name     string
		patterns []string
		expiry   int64
		at       time.Time
		err      error
	}{
		{"no expiry", []string{"user:42:*", "room:1"}, 0, now, nil},
		{"valid expiry", []string{"a*"}, now.Unix() + 60, now, nil},
		{"expires this second", []string{"a*"}, now.Unix(), now, ErrTokenExpired},
		{"expired", []string{"a*"}, now.Unix() - 1, now, ErrTokenExpired},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := SignToken(secret, tc.patterns, tc.expiry)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(tok, "=") {
				t.Fatalf("token %q is padded", tok)
			}
			pats, exp, err := VerifyToken(secret, tok, tc.at)
			if !errors.Is(err, tc.err) {
				t.Fatalf("VerifyToken error = %v, want %v", err, tc.err)
			}
			if err == nil && (!slices.Equal(pats, tc.patterns) || exp != tc.expiry) {
				t.Fatalf("VerifyToken = %q, %d; want %q, %d", pats, exp, tc.patterns, tc.expiry)
			}
		})
	}
}

// handToken builds a token from a raw payload the way the format is
// written down, so that the tests do not only check SignToken against
// itself.
func handToken(secret, payload string) string {
	body := base64.RawURLEncoding.EncodeToString([]byte(payload))
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(body))
	return body + "." + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// signBody signs a payload text as given, canonical or not.
func signBody(secret, body string) string {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(body))
	return body + "." + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// flipLastBit flips the lowest bit of s's last base64url character: an
// unused bit when the encoded length is not a multiple of three bytes.
func flipLastBit(s string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, s[len(s)-1])
	return s[:len(s)-1] + string(alphabet[i^1])
}

func TestVerifyToken(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	good := handToken("k", "user:1:*,room:2|1700000100")
	body, sig, _ := strings.Cut(good, ".")
	pad := func(s string) string { return s + strings.Repeat("=", (4-len(s)%4)%4) }
	tests := []struct {
		name  string
		token string
		want  []string
		err   error
	}{
		{"hand made", good, []string{"user:1:*", "room:2"}, nil},
		{"padded parts", pad(body) + "." + pad(sig), []string{"user:1:*", "room:2"}, nil},
		{"no expiry", handToken("k", "x"), []string{"x"}, nil},
		{"wrong secret", handToken("other", "x"), nil, ErrInvalidToken},
		{"tampered payload", base64.RawURLEncoding.EncodeToString([]byte("*")) + "." + sig, nil, ErrInvalidToken},
		{"truncated signature", body + "." + sig[:len(sig)-2], nil, ErrInvalidToken},
		{"no dot", body + sig, nil, ErrInvalidToken},
		{"two dots", good + ".x", nil, ErrInvalidToken},
		{"bad base64 signature", body + ".!!!!", nil, ErrInvalidToken},
		{"standard base64 alphabet", strings.NewReplacer("-", "+", "_", "/").Replace(good), nil, ErrInvalidToken},
		{"empty", "", nil, ErrInvalidToken},
		{"empty pattern", handToken("k", "a,,b"), nil, ErrInvalidToken},
		{"empty payload", handToken("k", ""), nil, ErrInvalidToken},
		{"bad expiry", handToken("k", "a|soon"), nil, ErrInvalidToken},
		{"signed expiry", handToken("k", "a|+1800000000"), nil, ErrInvalidToken},
		{"negative expiry", handToken("k", "a|-5"), nil, ErrInvalidToken},
		{"expired", handToken("k", "a|1699999999"), nil, ErrTokenExpired},
		{"zero expiry is the epoch", handToken("k", "a|0"), nil, ErrTokenExpired},
		// One token has one text: the decoder's leniencies would let
		// anyone mint variants of a token that still verify.
		{"signature low bits changed", body + "." + flipLastBit(sig), nil, ErrInvalidToken},
		{"padded signature low bits changed", body + "." + pad(flipLastBit(sig)), nil, ErrInvalidToken},
		{"newline in signature", body + "." + sig[:10] + "\n" + sig[10:], nil, ErrInvalidToken},
		{"CR LF in signature", body + "." + sig[:10] + "\r\n" + sig[10:], nil, ErrInvalidToken},
		{"trailing newline", good + "\n", nil, ErrInvalidToken},
		{"newline before padding", body + "." + sig + "\n=", nil, ErrInvalidToken},
		{"payload low bits changed, signed as sent", signBody("k", flipLastBit(body)), nil, ErrInvalidToken},
		{"newline in payload, signed as sent", signBody("k", body[:4]+"\n"+body[4:]), nil, ErrInvalidToken},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := VerifyToken([]byte("k"), tc.token, now)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error = %v, want %v", err, tc.err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("patterns = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSignTokenRefuses(t *testing.T) {
	for _, pats := range [][]string{nil, {""}, {"a,b"}, {"a|1"}} {
		if _, err := SignToken([]byte("k"), pats, 0); err == nil {
			t.Errorf("SignToken(%q) succeeded", pats)
		}
	}
	if _, err := SignToken(nil, []string{"a"}, 0); err == nil {
		t.Error("SignToken with an empty secret succeeded")
	}
	if _, _, err := VerifyToken(nil, handToken("", "a"), time.Now()); !errors.Is(err, ErrInvalidToken) {
		t.Error("VerifyToken with an empty secret accepted a token")
	}
}

// TestTokenVector is the worked example of PROTOCOL.md.
func TestTokenVector(t *testing.T) {
	const want = "dXNlcjo0MjoqLHJvb206MXwxODkzNDU2MDAw.yTRl145ZoKZIts_AGuXNWJu9Xh0XTBaNV8pBqXFkAWw"
	tok, err := SignToken([]byte("s3cret"), []string{"user:42:*", "room:1"}, 1893456000)
	if err != nil || tok != want {
		t.Fatalf("SignToken = %q, %v; want %q", tok, err, want)
	}
}
