package apikey

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const testFile = `[
  {"id": "k1", "secret": "s3cr.et-one", "capability": {"chat:*": ["subscribe", "publish", "presence"], "*": ["subscribe"]}, "keys": ["user:*"]},
  {"id": "k2", "secret": "two", "capability": {"news": ["publish"]}},
  {"id": "k3", "secret": "three"}
]`

func testStore(t testing.TB) *Store {
	t.Helper()
	keys, err := Parse([]byte(testFile))
	if err != nil {
		t.Fatal(err)
	}
	return NewStore(keys)
}

func TestParse(t *testing.T) {
	keys, err := Parse([]byte(testFile))
	if err != nil {
		t.Fatal(err)
	}
	want := []*Key{
		{ID: "k1", Secret: "s3cr.et-one", Capability: Capability{"chat:*": {"subscribe", "publish", "presence"}, "*": {"subscribe"}}, Keys: []string{"user:*"}},
		{ID: "k2", Secret: "two", Capability: Capability{"news": {"publish"}}},
		{ID: "k3", Secret: "three", Capability: Capability{}},
	}
	if !reflect.DeepEqual(keys, want) {
		t.Fatalf("got %+v, want %+v", keys, want)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ file, want string }{
		{``, "want a JSON array"},
		{`{}`, "want a JSON array"},
		{`null`, "got null"},
		{`[] []`, "unexpected data"},
		{`[{"secret": "x"}]`, "missing id"},
		{`[{"id": "", "secret": "x"}]`, "missing id"},
		{`[{"id": "a.b", "secret": "x"}]`, "contains '.'"},
		{`[{"id": "a"}]`, "missing secret"},
		{`[{"id": "a", "secret": "x"}, {"id": "a", "secret": "y"}]`, "appears twice"},
		{`[{"id": "a", "secret": "x", "capabilty": {}}]`, "unknown field"},
		{`[{"id": "a", "secret": "x", "capability": {"c": ["subcribe"]}}]`, "unknown operation"},
		{`[{"id": "a", "secret": "x", "capability": {"": ["publish"]}}]`, "empty channel glob"},
		{`[{"id": "a", "secret": "x", "capability": ["publish"]}]`, "capability"},
		{`[{"id": "a", "secret": "x", "capability": {"c": "publish"}}]`, "capability"},
		{`[{"id": "a", "secret": "x", "keys": [""]}]`, "empty pattern"},
		{`[{"id": "a", "secret": "x", "keys": "user:*"}]`, "cannot unmarshal"},
		{`[{"id": 1, "secret": "x"}]`, "cannot unmarshal"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.file))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%s): error %v, want one containing %q", tt.file, err, tt.want)
		}
	}
}

func TestCapabilityAllows(t *testing.T) {
	c := Capability{"chat:*": {"subscribe", "publish", "presence"}, "*": {"subscribe"}, "all:[ab]": {"*"}}
	tests := []struct {
		channel, op string
		want        bool
	}{
		{"chat:room", "publish", true},
		{"chat:room", "presence", true},
		{"chat:", "subscribe", true},
		{"news", "subscribe", true},
		{"news", "publish", false},
		{"news", "presence", false},
		{"all:a", "presence", true},
		{"all:c", "presence", false},
		{"chat:room", "history", false},
	}
	for _, tt := range tests {
		if got := c.Allows(tt.channel, tt.op); got != tt.want {
			t.Errorf("Allows(%q, %q) = %v, want %v", tt.channel, tt.op, got, tt.want)
		}
	}
	if Capability(nil).Allows("x", "subscribe") {
		t.Error("the nil capability allows something")
	}
}

func TestCapabilityIntersect(t *testing.T) {
	key := Capability{"chat:*": {"subscribe", "publish", "presence"}, "*": {"subscribe"}}
	tests := []struct {
		name string
		tok  Capability
		want Capability
	}{
		{"narrower glob", Capability{"chat:room*": {"publish"}}, Capability{"chat:room*": {"publish"}}},
		{"wider glob", Capability{"*": {"*"}}, Capability{"chat:*": {"presence", "publish", "subscribe"}, "*": {"subscribe"}}},
		{"literal", Capability{"chat:1": {"publish", "subscribe"}, "news": {"publish", "subscribe"}}, Capability{"chat:1": {"publish", "subscribe"}, "news": {"subscribe"}}},
		{"nothing in common", Capability{"news": {"publish"}}, Capability{}},
		{"overlapping globs are dropped", Capability{"c*t:x": {"publish"}}, Capability{}},
	}
	for _, tt := range tests {
		got := tt.tok.Intersect(key)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
		// Never more than either side allows.
		for _, ch := range []string{"chat:1", "chat:room5", "news", "cat:x", "x"} {
			for _, op := range []string{OpSubscribe, OpPublish, OpPresence} {
				if got.Allows(ch, op) && !(key.Allows(ch, op) && tt.tok.Allows(ch, op)) {
					t.Errorf("%s: the intersection allows %s on %s", tt.name, op, ch)
				}
			}
		}
	}
}

func TestAuthenticate(t *testing.T) {
	s := testStore(t)
	tests := []struct {
		cred string
		id   string
		err  error
	}{
		{"s3cr.et-one.k1", "k1", nil},
		{"two.k2", "k2", nil},
		{"two.k1", "", ErrBadSecret},
		{"s3cr.et-one.k9", "", ErrUnknownKey},
		{"nodot", "", ErrMalformed},
		{".k1", "", ErrMalformed},
		{"two.", "", ErrMalformed},
		{"", "", ErrMalformed},
	}
	for _, tt := range tests {
		k, err := s.Authenticate(tt.cred)
		if tt.err != nil {
			if !errors.Is(err, tt.err) || k != nil {
				t.Errorf("Authenticate(%q) = %v, %v; want %v", tt.cred, k, err, tt.err)
			}
			continue
		}
		if err != nil || k.ID != tt.id {
			t.Errorf("Authenticate(%q) = %v, %v; want key %s", tt.cred, k, err, tt.id)
		}
	}
}

// forge signs header and claims with secret by hand, as an attacker or a
// foreign library would.
func forge(alg, kid string, claims, secret string) string {
	h := `{"alg":"` + alg + `","typ":"JWT"`
	if kid != "" {
		h += `,"kid":"` + kid + `"`
	}
	h += `}`
	enc := base64.RawURLEncoding
	body := enc.EncodeToString([]byte(h)) + "." + enc.EncodeToString([]byte(claims))
	if alg == "none" {
		return body + "."
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return body + "." + enc.EncodeToString(m.Sum(nil))
}

func TestVerifyToken(t *testing.T) {
	s := testStore(t)
	now := time.Unix(1_800_000_000, 0)
	k1 := s.Key("k1")
	mint := func(k *Key, ttl time.Duration, c Capability, cid string) string {
		tok, err := Mint(k, ttl, c, cid, now)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	exp := `"exp":1800003600`
	rs256, err := jwt.NewWithClaims(jwt.SigningMethodHS384, jwt.MapClaims{"exp": 1800003600}).SignedString([]byte(k1.Secret))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		token    string
		err      error
		cap      Capability
		clientID string
	}{
		{"plain", mint(k1, time.Hour, nil, ""), nil, k1.Capability, ""},
		{"narrowed with client id", mint(k1, time.Hour, Capability{"chat:1": {"publish", "presence"}}, "alice"), nil, Capability{"chat:1": {"presence", "publish"}}, "alice"},
		{"asks for more than the key", mint(k1, time.Hour, Capability{"*": {"publish"}}, ""), nil, Capability{"chat:*": {"publish"}}, ""},
		{"capability as a string", forge("HS256", "k1", `{`+exp+`,"x-capability":"{\"chat:1\":[\"publish\"]}"}`, k1.Secret), nil, Capability{"chat:1": {"publish"}}, ""},
		{"expired", mint(k1, time.Second, nil, ""), nil, nil, ""}, // checked below at a later time
		{"exp in the past", forge("HS256", "k1", `{"exp":1799999999}`, k1.Secret), ErrExpired, nil, ""},
		{"no exp", forge("HS256", "k1", `{"iat":1800000000}`, k1.Secret), ErrMalformed, nil, ""},
		{"exp not a number", forge("HS256", "k1", `{"exp":"soon"}`, k1.Secret), ErrMalformed, nil, ""},
		{"alg none", forge("none", "k1", `{`+exp+`}`, ""), ErrBadSignature, nil, ""},
		{"alg HS384", rs256, ErrBadSignature, nil, ""},
		{"alg RS256 header", forge("RS256", "k1", `{`+exp+`}`, k1.Secret), ErrBadSignature, nil, ""},
		{"wrong secret", forge("HS256", "k1", `{`+exp+`}`, "guess"), ErrBadSignature, nil, ""},
		{"another key's secret", forge("HS256", "k1", `{`+exp+`}`, "two"), ErrBadSignature, nil, ""},
		{"unknown kid", forge("HS256", "k9", `{`+exp+`}`, k1.Secret), ErrUnknownKey, nil, ""},
		{"no kid", forge("HS256", "", `{`+exp+`}`, k1.Secret), ErrMalformed, nil, ""},
		{"capability not an object", forge("HS256", "k1", `{`+exp+`,"x-capability":["publish"]}`, k1.Secret), ErrMalformed, nil, ""},
		{"capability null", forge("HS256", "k1", `{`+exp+`,"x-capability":null}`, k1.Secret), ErrMalformed, nil, ""},
		{"capability bad op", forge("HS256", "k1", `{`+exp+`,"x-capability":{"a":["fly"]}}`, k1.Secret), ErrMalformed, nil, ""},
		{"capability bad string", forge("HS256", "k1", `{`+exp+`,"x-capability":"{"}`, k1.Secret), ErrMalformed, nil, ""},
		{"client id not a string", forge("HS256", "k1", `{`+exp+`,"x-client-id":7}`, k1.Secret), ErrMalformed, nil, ""},
		{"not a JWT", "abc", ErrMalformed, nil, ""},
		{"empty", "", ErrMalformed, nil, ""},
		{"huge", strings.Repeat("a", MaxTokenSize+1), ErrMalformed, nil, ""},
	}
	for _, tt := range tests {
		if tt.name == "expired" {
			_, err := s.VerifyToken(tt.token, now.Add(2*time.Second))
			if !errors.Is(err, ErrExpired) {
				t.Errorf("%s: error %v, want ErrExpired", tt.name, err)
			}
			continue
		}
		g, err := s.VerifyToken(tt.token, now)
		if tt.err != nil {
			if !errors.Is(err, tt.err) || g != nil {
				t.Errorf("%s: got %+v, %v; want %v", tt.name, g, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if g.Key != k1 || !reflect.DeepEqual(g.Capability, tt.cap) || g.ClientID != tt.clientID || g.Expires.IsZero() {
			t.Errorf("%s: got %+v, want capability %v client %q", tt.name, g, tt.cap, tt.clientID)
		}
	}
}

func TestMintErrors(t *testing.T) {
	k := &Key{ID: "k", Secret: "s"}
	now := time.Now()
	if _, err := Mint(k, 0, nil, "", now); err == nil {
		t.Error("Mint with ttl 0 succeeded")
	}
	if _, err := Mint(nil, time.Hour, nil, "", now); err == nil {
		t.Error("Mint without a key succeeded")
	}
	if _, err := Mint(k, time.Hour, Capability{"c": {"fly"}}, "", now); err == nil {
		t.Error("Mint with a bad capability succeeded")
	}
}

// TestReload checks SIGHUP's effect: a removed key stops authenticating and
// its tokens stop verifying; a bad file leaves the keys as they were.
func TestReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.json")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(testFile)
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	k2 := s.Key("k2")
	tok, err := Mint(k2, time.Hour, nil, "", now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.VerifyToken(tok, now); err != nil {
		t.Fatal(err)
	}
	write(`[{"id": "k1", "secret": "new"}]`)
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate("two.k2"); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("a removed key authenticates: %v", err)
	}
	if _, err := s.VerifyToken(tok, now); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("a removed key's token verifies: %v", err)
	}
	if _, err := s.Authenticate("s3cr.et-one.k1"); !errors.Is(err, ErrBadSecret) {
		t.Errorf("a changed secret still authenticates: %v", err)
	}
	if s.Current(k2) {
		t.Error("Current reports a removed key")
	}
	k1 := s.Key("k1")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if !s.Current(k1) {
		t.Error("a reload of the same file changed Current for an unchanged key")
	}
	write(`[{"id": "k1"`)
	if err := s.Reload(); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("reloading a bad file: %v, want an error naming it", err)
	}
	if !s.Current(k1) {
		t.Error("a failed reload changed the keys")
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}

// TestConcurrentReload verifies and reloads at once (run with -race).
func TestConcurrentReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(path, []byte(testFile), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok, err := Mint(s.Key("k1"), time.Hour, nil, "", now)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				if _, err := s.VerifyToken(tok, now); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.Authenticate("two.k2"); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := 0; i < 50; i++ {
		if err := s.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}
