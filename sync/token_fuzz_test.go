package sync

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

// FuzzVerifyToken checks that VerifyToken never panics and that a token it
// accepts is, once its padding is stripped, the one canonical text of its
// payload and signature: no other spelling of a token verifies.
func FuzzVerifyToken(f *testing.F) {
	secret := []byte("fuzz-secret")
	for _, tc := range []struct {
		patterns []string
		expiry   int64
	}{
		{[]string{"a:*"}, 0},
		{[]string{"user:42:*", "room:1"}, 4102444800},
		{[]string{"x"}, 1},
	} {
		tok, err := SignToken(secret, tc.patterns, tc.expiry)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(tok)
		f.Add(tok + "==")
		f.Add(tok[:len(tok)-1] + "B")
		f.Add(tok[:4] + "\n" + tok[4:])
	}
	f.Add("")
	f.Add(".")
	f.Add("====.====")
	now := time.Unix(1700000000, 0)
	f.Fuzz(func(t *testing.T, tok string) {
		patterns, _, err := VerifyToken(secret, tok, now)
		if err != nil {
			return
		}
		body, sig, _ := strings.Cut(tok, ".")
		body, sig = strings.TrimRight(body, "="), strings.TrimRight(sig, "=")
		if want := base64.RawURLEncoding.EncodeToString(mac(secret, body)); sig != want {
			t.Fatalf("token %q verified with signature text %q, canonical %q", tok, sig, want)
		}
		raw, err := base64.RawURLEncoding.DecodeString(body)
		if err != nil || base64.RawURLEncoding.EncodeToString(raw) != body {
			t.Fatalf("token %q verified with a non-canonical payload text %q", tok, body)
		}
		if len(patterns) == 0 {
			t.Fatalf("token %q verified with no pattern", tok)
		}
	})
}
