package realtime

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/recached/recached/sync/apikey"
	"github.com/recached/recached/sync/realtime/wire"
)

// TestConnect covers SPEC section 9's credentials at connect: the key
// (split at the last '.'), accessToken and its alias token give Connected;
// everything else a 401 Nack and close code 1008.
func TestConnect(t *testing.T) {
	keys := strings.Replace(testKeys, `{"id":"k3"`, `{"id":"k4","secret":"se.cr.et","capability":{"*":["subscribe"]}},
 {"id":"k3"`, 1)
	r := startRig(t, keys, quickOptions(), nil)
	good := r.token(t, "k1", time.Hour, nil, "")
	k1 := r.keys.Key("k1")
	expired, err := apikey.Mint(k1, time.Second, nil, "", time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	forged, err := apikey.Mint(&apikey.Key{ID: "k1", Secret: "not-s1"}, time.Hour, nil, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	unknownKid, err := apikey.Mint(&apikey.Key{ID: "nobody", Secret: "s1"}, time.Hour, nil, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	noExp := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"iat": time.Now().Unix()})
	noExp.Header["kid"] = "k1"
	noExpTok, err := noExp.SignedString([]byte("s1"))
	if err != nil {
		t.Fatal(err)
	}
	none := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"exp": time.Now().Add(time.Hour).Unix()})
	none.Header["kid"] = "k1"
	noneTok, err := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		query string
		ok    bool
	}{
		{"key", keyQuery("k1"), true},
		{"key with dots in its secret", "key=" + url.QueryEscape("se.cr.et.k4"), true},
		{"accessToken", "accessToken=" + good, true},
		{"token alias", "token=" + good, true},
		{"echo off", keyQuery("k1") + "&echo=false", true},
		{"missing", "", false},
		{"other parameter only", "echo=false", false},
		{"malformed key", "key=nodot", false},
		{"key with empty id", "key=s1.", false},
		{"unknown key", "key=s1.k9", false},
		{"wrong secret", "key=s2.k1", false},
		{"secret split wrongly", "key=" + url.QueryEscape("se.k4"), false},
		{"expired token", "accessToken=" + expired, false},
		{"forged token", "accessToken=" + forged, false},
		{"unknown kid", "accessToken=" + unknownKid, false},
		{"token without exp", "accessToken=" + noExpTok, false},
		{"unsigned token", "accessToken=" + noneTok, false},
		{"garbage token", "token=abc.def.ghi", false},
		{"two credentials", keyQuery("k1") + "&accessToken=" + good, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := r.dial(t, tc.query)
			f := c.next()
			if tc.ok {
				if f.op() != wire.Connected {
					t.Fatalf("got %v, want Connected", f)
				}
				c.quiet()
				return
			}
			if f.op() != wire.Nack || f.num("code") != codeUnauthorized || f.str("message") == "" || f["id"] != nil {
				t.Fatalf("got %v, want a 401 Nack", f)
			}
			c.expectClose(closePolicy)
		})
	}
}

// TestConnectedFrame checks the Connected frame's exact shape and that
// connection ids are unguessable (22 base64url characters) and distinct.
func TestConnectedFrame(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	seen := make(map[string]bool)
	for i := 0; i < 20; i++ {
		c := r.dial(t, keyQuery("k1"))
		f := c.next()
		id := f.str("connectionId")
		if len(f) != 4 || f.op() != wire.Connected || f.num("connectionStateTtl") != 120000 || f.num("maxMessageSize") != 65536 {
			t.Fatalf("Connected %v", f)
		}
		if len(id) < 16 || strings.Trim(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			t.Fatalf("connectionId %q", id)
		}
		if seen[id] {
			t.Fatalf("connectionId %q twice", id)
		}
		seen[id] = true
	}
}

// TestNoKeysConfigured: without --api-keys every connect is refused with
// 401, saying why.
func TestNoKeysConfigured(t *testing.T) {
	r := startRig(t, "", quickOptions(), nil)
	c := r.dial(t, keyQuery("k1"))
	c.expect(wire.Nack, map[string]any{"code": codeUnauthorized, "message": "no API keys are configured on this server (--api-keys)"})
	c.expectClose(closePolicy)
}

// TestClientFiles: the realtime port serves the browser client.
func TestClientFiles(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	for _, tc := range []struct{ path, typ, want string }{
		{"/realtime-client.js", "text/javascript", "export"},
		{"/realtime-client.d.ts", "application/typescript", "export"},
	} {
		resp, err := http.Get("http://" + r.addr + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.typ) || !strings.Contains(string(body), tc.want) {
			t.Fatalf("GET %s: %d %s, %d bytes", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
		}
	}
	resp, err := http.Get("http://" + r.addr + "/nothing-here")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /nothing-here: %d", resp.StatusCode)
	}
}
