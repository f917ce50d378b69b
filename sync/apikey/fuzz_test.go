package apikey

import (
	"errors"
	"testing"
	"time"
)

// FuzzParse feeds arbitrary files to Parse: never a panic, and every key
// it accepts is usable (an id without '.', a secret, valid operations).
func FuzzParse(f *testing.F) {
	f.Add([]byte(testFile))
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"id":"a","secret":"b","capability":{"*":["*"]},"keys":["k*"]}]`))
	f.Add([]byte(`[{"id":"a","secret":"b","capability":null}]`))
	f.Add([]byte(`[{"id":"a.b","secret":"c"}]`))
	f.Add([]byte(`{"id":"a"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := Parse(data)
		if err != nil {
			return
		}
		s := NewStore(keys)
		for _, k := range keys {
			if k.ID == "" || k.Secret == "" || k.Capability.validate() != nil {
				t.Fatalf("accepted an unusable key %+v", k)
			}
			got, err := s.Authenticate(k.Secret + "." + k.ID)
			if err != nil || got != k {
				t.Fatalf("key %q does not authenticate: %v", k.ID, err)
			}
		}
	})
}

// FuzzVerifyToken feeds arbitrary tokens to VerifyToken: never a panic, and
// an accepted token names a key of the store, expires after now and grants
// no more than its key.
func FuzzVerifyToken(f *testing.F) {
	s := testStore(f)
	now := time.Unix(1_800_000_000, 0)
	k1 := s.Key("k1")
	for _, tc := range []struct {
		c   Capability
		cid string
	}{{nil, ""}, {Capability{"chat:1": {"publish"}}, "bob"}, {Capability{"*": {"*"}}, ""}} {
		tok, err := Mint(k1, time.Hour, tc.c, tc.cid, now)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(tok)
	}
	f.Add(forge("none", "k1", `{"exp":1800003600}`, ""))
	f.Add(forge("HS256", "k1", `{"exp":1800003600,"x-capability":"{\"a\":[\"publish\"]}"}`, k1.Secret))
	f.Add(forge("HS256", "k2", `{"exp":1800003600,"x-client-id":"c"}`, "two"))
	f.Add("a.b.c")
	f.Add("")
	f.Fuzz(func(t *testing.T, token string) {
		g, err := s.VerifyToken(token, now)
		if err != nil {
			for _, e := range []error{ErrMalformed, ErrUnknownKey, ErrBadSignature, ErrExpired} {
				if errors.Is(err, e) {
					return
				}
			}
			t.Fatalf("error %v wraps none of the package's errors", err)
		}
		if s.Key(g.Key.ID) != g.Key || !g.Expires.After(now) {
			t.Fatalf("accepted grant %+v", g)
		}
		for ch := range g.Capability {
			for _, op := range []string{OpSubscribe, OpPublish, OpPresence} {
				if g.Capability.Allows(ch, op) && !g.Key.Capability.Allows(ch, op) {
					t.Fatalf("grant allows %s on %s beyond its key", op, ch)
				}
			}
		}
	})
}
