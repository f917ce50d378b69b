package realtime

import (
	"os"
	"testing"
	"time"

	"github.com/recached/recached/sync/apikey"
	"github.com/recached/recached/sync/realtime/wire"
)

// TestCapability403: operations the capability does not cover get a 403
// naming the channel, and the connection and its other subscriptions keep
// working.
func TestCapability403(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	c, _ := r.connect(t, keyQuery("k2")) // subscribe on news:* only
	c.request(sub("1", "news:1"))
	for _, tc := range []struct {
		name string
		req  map[string]any
	}{
		{"publish", pub("2", "news:1", "", "x")},
		{"subscribe elsewhere", sub("3", "chat:1")},
		{"subscribe a wider glob", sub("4", "*")},
		{"presence", enter("5", "news:1", "me", nil)},
		{"attach elsewhere", map[string]any{"op": wire.Attach, "id": "6", "channel": "sports"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.send(tc.req)
			c.expect(wire.Nack, map[string]any{"id": tc.req["id"], "code": codeForbidden, "channel": tc.req["channel"]})
		})
	}
	r.respDo(t, "PUBLISH", "news:1", "still here")
	c.expect(wire.Message, map[string]any{"channel": "news:1", "data": "still here"})
	c.request(sub("7", "news:*"))
}

// TestGlobCapabilityPerDelivery: a glob subscription allowed because its
// text matches a capability glob, but reaching wider than it ("a?" lets
// one subscribe to "a*"), only delivers the channels the capability
// allows.
func TestGlobCapabilityPerDelivery(t *testing.T) {
	r := startRig(t, `[{"id":"k1","secret":"s1","capability":{"a?":["subscribe"]}}]`, quickOptions(), nil)
	c, _ := r.connect(t, keyQuery("k1"))
	c.request(sub("1", "a*"))
	for _, ch := range []string{"abc", "ab", "a", "ax"} {
		r.respDo(t, "PUBLISH", ch, ch)
	}
	c.expect(wire.Message, map[string]any{"channel": "ab"})
	c.expect(wire.Message, map[string]any{"channel": "ax"})
	c.quiet()
}

// TestAuthNarrows: an Auth swap answers Ack and a fresh Connected with the
// same connectionId; subscriptions and attachments the new capability no
// longer covers are removed, each with a 403 naming its channel, and
// deliver nothing more; the others keep working.
func TestAuthNarrows(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	c, id := r.connect(t, keyQuery("k3"))
	c.request(sub("1", "chat:1"))
	c.request(sub("2", "news:1"))
	c.request(sub("3", "news:*"))
	c.request(map[string]any{"op": wire.Attach, "id": "4", "channel": "news:2"})
	c.send(enter("5", "chat:1", "me", nil))
	c.expect(wire.Presence, map[string]any{"action": "enter"}) // attached by the Subscribe
	c.expect(wire.Ack, map[string]any{"id": "5"})
	c.send(enter("6", "news:1", "me", nil))
	c.expect(wire.Presence, map[string]any{"action": "enter"})
	c.expect(wire.Ack, map[string]any{"id": "6"})

	w, _ := r.connect(t, keyQuery("k3"))
	w.request(map[string]any{"op": wire.Attach, "id": "1", "channel": "news:1"})
	w.expect(wire.Presence, map[string]any{"clientId": "me"})

	tok := r.token(t, "k3", time.Hour, apikey.Capability{"chat:*": {"subscribe", "presence"}}, "")
	c.send(map[string]any{"op": wire.Auth, "id": "a", "accessToken": tok})
	c.expect(wire.Ack, map[string]any{"id": "a"})
	c.expect(wire.Connected, map[string]any{"connectionId": id, "connectionStateTtl": 120000, "maxMessageSize": 65536})
	for _, ch := range []string{"news:*", "news:1"} {
		c.expect(wire.Nack, map[string]any{"code": codeForbidden, "channel": ch})
	}
	for _, ch := range []string{"news:1", "news:2"} {
		c.expect(wire.Nack, map[string]any{"code": codeForbidden, "channel": ch})
	}
	// The news:1 member: the attachment's removal made it leave.
	w.expect(wire.Presence, map[string]any{"action": "leave", "clientId": "me"})
	r.respDo(t, "PUBLISH", "news:1", "gone")
	r.respDo(t, "PUBLISH", "chat:1", "kept")
	c.expect(wire.Message, map[string]any{"channel": "chat:1", "data": "kept"})
	c.quiet()
	// Publishing is no longer allowed either.
	c.send(pub("7", "chat:1", "", nil))
	c.expect(wire.Nack, map[string]any{"id": "7", "code": codeForbidden})
	// Auth with a plain key widens again.
	c.send(map[string]any{"op": wire.Auth, "id": "b", "key": "s3.k3"})
	c.expect(wire.Ack, map[string]any{"id": "b"})
	c.expect(wire.Connected, map[string]any{"connectionId": id})
	c.request(pub("8", "news:9", "", nil))
}

// TestAuthNarrowsGlob: a glob subscription the new capability still
// allows by its text, but no longer covers as a whole, delivers only the
// channels the new capability allows from the Ack on.
func TestAuthNarrowsGlob(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	c, _ := r.connect(t, keyQuery("k3"))
	c.request(sub("1", "a*"))
	r.respDo(t, "PUBLISH", "abc", "before")
	c.expect(wire.Message, map[string]any{"channel": "abc"})
	c.request(map[string]any{"op": wire.Auth, "id": "a", "accessToken": r.token(t, "k3", time.Hour, apikey.Capability{"a?": {"subscribe"}}, "")})
	c.expect(wire.Connected, nil)
	r.respDo(t, "PUBLISH", "abc", "after")
	r.respDo(t, "PUBLISH", "ab", "after")
	c.expect(wire.Message, map[string]any{"channel": "ab"})
	c.quiet()
}

// TestAuthInvalid: an Auth with a bad credential gets a 401 Nack naming
// it and the connection is closed (1008).
func TestAuthInvalid(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	forged, _ := apikey.Mint(&apikey.Key{ID: "k1", Secret: "wrong"}, time.Hour, nil, "", time.Now())
	for _, cred := range []map[string]any{{"accessToken": forged}, {"token": "x.y.z"}, {"key": "bad.k1"}, {"key": "s1.nokey"}} {
		c, _ := r.connect(t, keyQuery("k1"))
		m := map[string]any{"op": wire.Auth, "id": "x"}
		for k, v := range cred {
			m[k] = v
		}
		c.send(m)
		c.expect(wire.Nack, map[string]any{"id": "x", "code": codeUnauthorized})
		c.expectClose(closePolicy)
	}
}

// TestTokenExpiresMidSession: a token that expires during the session
// gets a 401 Nack and close 1008, unless an Auth replaced it first.
func TestTokenExpiresMidSession(t *testing.T) {
	r := startRig(t, testKeys, quickOptions(), nil)
	short := r.token(t, "k1", 2*time.Second, nil, "")
	c, _ := r.connect(t, "accessToken="+short)
	c.request(sub("1", "chat:1"))
	c.expect(wire.Nack, map[string]any{"code": codeUnauthorized, "message": "token expired"})
	c.expectClose(closePolicy)

	// Renewed in time: the old expiry passes unnoticed.
	short = r.token(t, "k1", 2*time.Second, nil, "")
	exp := time.Now().Add(2 * time.Second)
	d, _ := r.connect(t, "accessToken="+short)
	d.send(map[string]any{"op": wire.Auth, "id": "r", "accessToken": r.token(t, "k1", time.Hour, nil, "")})
	d.expect(wire.Ack, map[string]any{"id": "r"})
	d.expect(wire.Connected, nil)
	waitFor(t, "the first token's expiry", func() bool { return time.Now().After(exp.Add(time.Second)) })
	d.quiet()
	d.request(sub("2", "chat:1"))
}

// TestAuthOtherKeyAtCeiling: an Auth moving to a key whose connections are
// at the ceiling is refused with 429 and the old credential stays.
func TestAuthOtherKeyAtCeiling(t *testing.T) {
	o := quickOptions()
	o.MaxConnsPerKey = 1
	r := startRig(t, testKeys, o, nil)
	r.connect(t, keyQuery("k2"))
	c, _ := r.connect(t, keyQuery("k1"))
	c.send(map[string]any{"op": wire.Auth, "id": "a", "key": "s2.k2"})
	c.expect(wire.Nack, map[string]any{"id": "a", "code": codeTooMany})
	c.request(pub("1", "chat:1", "", nil)) // still k1
}

// TestRevokedMidSession: after the keys file is reloaded without a
// connection's key (or with another secret), its next request, or its
// next heartbeat tick when idle, gets a 401 Nack and close 1008; new
// connects with it are refused; other keys' connections go on.
func TestRevokedMidSession(t *testing.T) {
	o := quickOptions()
	o.HeartbeatInterval = 200 * time.Millisecond
	r := startRig(t, testKeys, o, nil)
	busy, _ := r.connect(t, keyQuery("k1"))
	idle, _ := r.connect(t, "accessToken="+r.token(t, "k2", time.Hour, nil, ""))
	other, _ := r.connect(t, keyQuery("k3"))
	path := r.srv.Config().APIKeysFile
	if err := os.WriteFile(path, []byte(`[{"id":"k2","secret":"rotated","capability":{"*":["subscribe"]}},{"id":"k3","secret":"s3","capability":{"*":["*"]}}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.srv.APIKeys().Reload(); err != nil {
		t.Fatal(err)
	}
	busy.send(sub("1", "chat:1"))
	busy.expect(wire.Nack, map[string]any{"code": codeUnauthorized, "message": "credential revoked"})
	busy.expectClose(closePolicy)
	for {
		f := idle.next()
		if f.op() == wire.Nack {
			if f.num("code") != codeUnauthorized {
				t.Fatalf("Nack %v", f)
			}
			break
		}
		if f.op() != wire.Heartbeat {
			t.Fatalf("frame %v", f)
		}
	}
	idle.expectClose(closePolicy)
	c := r.dial(t, keyQuery("k1"))
	c.expect(wire.Nack, map[string]any{"code": codeUnauthorized})
	other.request(pub("2", "x", "", nil))
}
