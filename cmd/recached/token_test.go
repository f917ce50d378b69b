package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	recsync "github.com/recached/recached/sync"
)

func TestRunToken(t *testing.T) {
	env := func(k string) string {
		if k == "RECACHED_TOKEN_SECRET" {
			return "from-env"
		}
		return ""
	}
	noEnv := func(string) string { return "" }
	tests := []struct {
		name     string
		args     []string
		getenv   func(string) string
		code     int
		secret   string
		patterns []string
		ttl      time.Duration
	}{
		{"basic", []string{"--secret", "S", "--patterns", "user:42:*,room:1"}, noEnv, 0, "S", []string{"user:42:*", "room:1"}, 0},
		{"ttl", []string{"--secret", "S", "--patterns", "a*", "--ttl", "1h"}, noEnv, 0, "S", []string{"a*"}, time.Hour},
		{"secret from env", []string{"--patterns", "a*"}, env, 0, "from-env", []string{"a*"}, 0},
		{"no secret", []string{"--patterns", "a*"}, noEnv, 2, "", nil, 0},
		{"no patterns", []string{"--secret", "S"}, noEnv, 2, "", nil, 0},
		{"empty pattern", []string{"--secret", "S", "--patterns", "a,,b"}, noEnv, 2, "", nil, 0},
		{"pipe in pattern", []string{"--secret", "S", "--patterns", "a|1"}, noEnv, 2, "", nil, 0},
		{"negative ttl", []string{"--secret", "S", "--patterns", "a", "--ttl", "-1h"}, noEnv, 2, "", nil, 0},
		{"bad ttl", []string{"--secret", "S", "--patterns", "a", "--ttl", "soon"}, noEnv, 2, "", nil, 0},
		{"stray argument", []string{"--secret", "S", "--patterns", "a", "extra"}, noEnv, 2, "", nil, 0},
		{"help", []string{"--help"}, noEnv, 0, "", nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := runToken(tc.args, tc.getenv, &out, &errOut)
			if code != tc.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tc.code, errOut.String())
			}
			if tc.code != 0 || tc.secret == "" {
				if out.Len() != 0 {
					t.Fatalf("stdout %q, want nothing", out.String())
				}
				return
			}
			tok := strings.TrimSuffix(out.String(), "\n")
			pats, exp, err := recsync.VerifyToken([]byte(tc.secret), tok, time.Now())
			if err != nil {
				t.Fatalf("printed token %q does not verify: %v", tok, err)
			}
			if strings.Join(pats, ",") != strings.Join(tc.patterns, ",") {
				t.Fatalf("patterns %q, want %q", pats, tc.patterns)
			}
			if want := time.Now().Add(tc.ttl).Unix(); tc.ttl > 0 && (exp < want-5 || exp > want+5) || tc.ttl == 0 && exp != 0 {
				t.Fatalf("expiry %d for ttl %v", exp, tc.ttl)
			}
		})
	}
}
