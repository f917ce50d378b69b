package amaquet_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/amaquet"
)

// TestHello: HELLO returns the server's metadata and an Ed25519
// signature of "AMQT-HELLO\0" + the nonce by the identity key in --dir,
// which crypto/ed25519 verifies; a nonce out of 16–64 bytes is refused.
func TestHello(t *testing.T) {
	e := start(t, amaquet.Options{MaxPayload: 4096, MaxInflight: 7}, "")
	c := dial(t, e.amq)
	for i, n := range []int{16, 32, 64} {
		nonce := make([]byte, n)
		for j := range nonce {
			nonce[j] = byte(i*7 + j)
		}
		f := c.do(amaquet.OpHello, uint64(i+1), fmt.Sprintf(`{"nonce":%q}`, base64.StdEncoding.EncodeToString(nonce)))
		var r struct {
			Server       string `json:"server"`
			Version      string `json:"version"`
			Protocol     int    `json:"protocol"`
			MaxPayload   int    `json:"max_payload"`
			MaxInflight  int    `json:"max_inflight"`
			AuthRequired bool   `json:"auth_required"`
			PublicKey    string `json:"public_key"`
			Signature    string `json:"signature"`
		}
		if err := json.Unmarshal(f.env(t).Result, &r); err != nil {
			t.Fatalf("%s: %v", f.payload, err)
		}
		if r.Server != "recached" || r.Version != server.Version || r.Protocol != 1 || r.MaxPayload != 4096 || r.MaxInflight != 7 || r.AuthRequired {
			t.Fatalf("HELLO %s", f.payload)
		}
		pub, err := base64.StdEncoding.DecodeString(r.PublicKey)
		if err != nil || !ed25519.PublicKey(pub).Equal(e.key.Public()) {
			t.Fatalf("public key %q is not the identity's", r.PublicKey)
		}
		sig, err := base64.StdEncoding.DecodeString(r.Signature)
		if err != nil {
			t.Fatal(err)
		}
		msg := append([]byte("AMQT-HELLO\x00"), nonce...)
		if !ed25519.Verify(pub, msg, sig) {
			t.Fatalf("signature does not verify for a %d-byte nonce", n)
		}
		if ed25519.Verify(pub, append([]byte("AMQT-HELLO\x00"), nonce[1:]...), sig) {
			t.Fatal("signature verifies another message")
		}
	}
	for i, n := range []int{0, 15, 65} {
		p := fmt.Sprintf(`{"nonce":%q}`, base64.StdEncoding.EncodeToString(make([]byte, n)))
		if f := c.do(amaquet.OpHello, uint64(10+i), p); f.code(t) != amaquet.CodeBadRequest {
			t.Fatalf("nonce of %d bytes: %s", n, f.payload)
		}
	}
}

// TestIdentityKept: the identity key is created once, mode 0600, and
// loaded again unchanged; a damaged file is an error, not a new key.
func TestIdentityKept(t *testing.T) {
	dir := t.TempDir()
	k1, err := amaquet.LoadIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, amaquet.IdentityFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode().Perm())
	}
	k2, err := amaquet.LoadIdentity(dir)
	if err != nil || !k1.Equal(k2) {
		t.Fatalf("second load: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, amaquet.IdentityFile), []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := amaquet.LoadIdentity(dir); err == nil || !strings.Contains(err.Error(), amaquet.IdentityFile) {
		t.Fatalf("damaged key: %v", err)
	}
}

// keysFile is the API keys of the scope tests: k1 may use user:* keys
// and subscribe/publish on bus:*; k2 has no key scope and may only
// subscribe to news:*.
const keysFile = `[
 {"id":"k1","secret":"s1","capability":{"bus:*":["subscribe","publish"]},"keys":["user:*"]},
 {"id":"k2","secret":"s2","capability":{"news:*":["subscribe"]}}
]`

// TestAuth: with API keys, every opcode but HELLO and AUTH needs AUTH
// first; a wrong credential is UNAUTHENTICATED and changes nothing.
func TestAuth(t *testing.T) {
	e := start(t, amaquet.Options{}, keysFile)
	c := dial(t, e.amq)
	f := c.do(amaquet.OpHello, 1, `{"nonce":"AAAAAAAAAAAAAAAAAAAAAA=="}`)
	if !strings.Contains(string(f.payload), `"auth_required":true`) {
		t.Fatalf("HELLO %s", f.payload)
	}
	for i, op := range []uint16{amaquet.OpCommand, amaquet.OpSubscribe, amaquet.OpUnsubscribe, amaquet.OpCancel} {
		p := map[uint16]string{
			amaquet.OpCommand:     cmd("SET", "user:1", "x"),
			amaquet.OpSubscribe:   `{"key":"bus","channel":"c"}`,
			amaquet.OpUnsubscribe: `{"key":"bus","channel":"c"}`,
			amaquet.OpCancel:      `{"request_id":1}`,
		}[op]
		if f := c.do(op, uint64(10+i), p); f.code(t) != amaquet.CodeUnauthenticated {
			t.Fatalf("op %d before AUTH: %s", op, f.payload)
		}
	}
	if got := e.respDo(t, "EXISTS", "user:1"); got != ":0\r\n" {
		t.Fatalf("a command ran before AUTH: %q", got)
	}
	for i, cred := range []string{"s2.k1", "s1", "s1.k9", ".k1", "s1."} {
		if f := c.do(amaquet.OpAuth, uint64(20+i), fmt.Sprintf(`{"api_key":%q}`, cred)); f.code(t) != amaquet.CodeUnauthenticated {
			t.Fatalf("AUTH %q: %s", cred, f.payload)
		}
	}
	if f := c.do(amaquet.OpCommand, 30, cmd("PING")); f.code(t) != amaquet.CodeUnauthenticated {
		t.Fatalf("after failed AUTHs: %s", f.payload)
	}
	f = c.do(amaquet.OpAuth, 31, `{"api_key":"s1.k1"}`)
	if string(f.env(t).Result) != `{"authenticated":true,"key_id":"k1"}` {
		t.Fatalf("AUTH: %s", f.payload)
	}
	if got := c.result(32, cmd("SET", "user:1", "x")); got != `"OK"` {
		t.Fatal(got)
	}
}

// TestScope: an API key's "keys" patterns scope COMMAND as a sync token
// does: a key outside them, a command reading the whole keyspace or the
// server's state, another database, are FORBIDDEN and nothing runs; its
// capability scopes the channels of PUBLISH and SUBSCRIBE.
func TestScope(t *testing.T) {
	e := start(t, amaquet.Options{}, keysFile)
	c := dial(t, e.amq)
	c.do(amaquet.OpAuth, 1, `{"api_key":"s1.k1"}`)
	e.respDo(t, "SET", "other", "keep")
	forbidden := []string{
		cmd("SET", "secret", "x"),
		cmd("GET", "other"),
		cmd("DEL", "user:1", "other"),
		cmd("MSET", "user:1", "a", "other", "b"),
		cmd("RENAME", "other", "user:9"),
		cmd("KEYS", "*"),
		cmd("FLUSHALL"),
		cmd("FLUSHDB"),
		cmd("CONFIG", "SET", "maxclients", "1"),
		cmd("SHUTDOWN"),
		cmd("PUBLISH", "news:x", "hi"),
		`{"command":"SET","args":["user:1","x"],"db":1}`,
		`{"transaction":[["SET","user:2","x"],["SET","secret","x"]]}`,
		`{"command":"EVAL","args":["return redis.call('set','secret','x')","0"]}`,
	}
	for i, p := range forbidden {
		if f := c.do(amaquet.OpCommand, uint64(10+i), p); f.code(t) != amaquet.CodeForbidden {
			t.Errorf("%s: %s", p, f.payload)
		}
	}
	for _, k := range []string{"secret", "user:1", "user:2", "user:9"} {
		if got := e.respDo(t, "EXISTS", k); got != ":0\r\n" {
			t.Errorf("a refused command wrote %s: %q", k, got)
		}
	}
	if got := e.respDo(t, "GET", "other"); got != "$4\r\nkeep\r\n" {
		t.Errorf("other: %q", got)
	}
	if got := e.respDo(t, "DBSIZE"); got != ":1\r\n" {
		t.Errorf("DBSIZE %q", got)
	}
	if got := c.result(40, cmd("SET", "user:1", "v")); got != `"OK"` {
		t.Error(got)
	}
	if got := c.result(41, cmd("PUBLISH", "bus:x", "hi")); got != `0` {
		t.Error(got)
	}
	if f := c.do(amaquet.OpSubscribe, 42, `{"key":"news","channel":"x"}`); f.code(t) != amaquet.CodeForbidden {
		t.Errorf("SUBSCRIBE news:x: %s", f.payload)
	}
	if f := c.do(amaquet.OpSubscribe, 43, `{"key":"bus","channel":"x"}`); f.code(t) != "" {
		t.Errorf("SUBSCRIBE bus:x: %s", f.payload)
	}
	// k2 has no key scope, and may publish nowhere.
	d := dial(t, e.amq)
	d.do(amaquet.OpAuth, 1, `{"api_key":"s2.k2"}`)
	if got := d.result(2, cmd("SET", "other", "k2")); got != `"OK"` {
		t.Error(got)
	}
	if f := d.do(amaquet.OpCommand, 3, cmd("PUBLISH", "news:x", "hi")); f.code(t) != amaquet.CodeForbidden {
		t.Errorf("k2 PUBLISH: %s", f.payload)
	}
	if f := d.do(amaquet.OpSubscribe, 4, `{"key":"news","channel":"x"}`); f.code(t) != "" {
		t.Errorf("k2 SUBSCRIBE news:x: %s", f.payload)
	}
}

// TestRequirePass: with a password and no API keys nothing can
// authenticate on the Amaquet port: it never bypasses requirepass.
func TestRequirePass(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.RequirePass = "pw"
	e := startConfig(t, cfg, amaquet.Options{}, "")
	c := dial(t, e.amq)
	if f := c.do(amaquet.OpHello, 1, `{"nonce":"AAAAAAAAAAAAAAAAAAAAAA=="}`); !strings.Contains(string(f.payload), `"auth_required":true`) {
		t.Fatalf("HELLO %s", f.payload)
	}
	if f := c.do(amaquet.OpCommand, 2, cmd("FLUSHALL")); f.code(t) != amaquet.CodeUnauthenticated {
		t.Fatalf("COMMAND %s", f.payload)
	}
	if f := c.do(amaquet.OpAuth, 3, `{"api_key":"pw.x"}`); f.code(t) != amaquet.CodeUnauthenticated {
		t.Fatalf("AUTH %s", f.payload)
	}
}
