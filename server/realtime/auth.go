package realtime

import (
	"net/url"
	"time"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/sync/apikey"
)

// The capability operations a connection's requests need.
const (
	opSubscribeCap = apikey.OpSubscribe // Subscribe, Attach, rewind
	opPublishCap   = apikey.OpPublish
	opPresenceCap  = apikey.OpPresence // enter, update, leave
)

// closePolicy is the close code that follows a 401 Nack.
const closePolicy = websocket.ClosePolicyViolation

// grant is what a connection's credential allows.
type grant struct {
	keyID    string
	secret   string // the key's secret then: a reload that changes it revokes the grant
	cap      apikey.Capability
	clientID string    // "" when the credential names none
	expires  time.Time // zero for a plain key
}

// credential is one credential as a client gives it.
type credential struct {
	text  string
	isKey bool // a "<secret>.<keyId>" key, not a token
	// problem, when not empty, says why the query string holds no usable
	// credential.
	problem string
}

// queryCredential reads the credential of a connect URL: key, accessToken
// or its alias token, exactly one of them.
func queryCredential(q url.Values) credential {
	var c credential
	n := 0
	for _, name := range []string{"key", "accessToken", "token"} {
		if v, ok := q[name]; ok && len(v) > 0 {
			n += len(v)
			c = credential{text: v[0], isKey: name == "key"}
		}
	}
	switch n {
	case 0:
		return credential{problem: "missing credential: connect with ?key=<secret>.<keyId> or ?accessToken=<token>"}
	case 1:
		return c
	}
	return credential{problem: "malformed credential: give exactly one of key, accessToken and token"}
}

// authenticate checks a credential against the server's API keys and
// returns its grant, or a 401 frameError saying why not.
func (l *Listener) authenticate(cred credential) (*grant, *frameError) {
	unauthorized := func(msg string) (*grant, *frameError) {
		return nil, &frameError{code: codeUnauthorized, message: msg}
	}
	if cred.problem != "" {
		return unauthorized(cred.problem)
	}
	store := l.srv.APIKeys()
	if store == nil {
		return unauthorized("no API keys are configured on this server (--api-keys)")
	}
	if cred.isKey {
		k, err := store.Authenticate(cred.text)
		if err != nil {
			return unauthorized(err.Error())
		}
		return &grant{keyID: k.ID, secret: k.Secret, cap: k.Capability}, nil
	}
	g, err := store.VerifyToken(cred.text, time.Now())
	if err != nil {
		return unauthorized(err.Error())
	}
	return &grant{keyID: g.Key.ID, secret: g.Key.Secret, cap: g.Capability, clientID: g.ClientID, expires: g.Expires}, nil
}

// setGrant puts g in force: the capability deliveries read, and the
// expiry of a token, past which the connection gets a 401 Nack and is
// closed unless an Auth replaced the token first.
func (c *conn) setGrant(g *grant) {
	c.grant = g
	c.capab.Store(g)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.authGen++
	if c.expiry != nil {
		c.expiry.Stop()
		c.expiry = nil
	}
	if g.expires.IsZero() {
		return
	}
	gen := c.authGen
	c.expiry = time.AfterFunc(time.Until(g.expires), func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.authGen == gen {
			c.finishLocked(appendNack(nil, nil, codeUnauthorized, "", "token expired"), closePolicy, "token expired", true)
		}
	})
}

// revoked reports whether the connection's key is gone from the API keys
// or has another secret (the file was reloaded, SIGHUP): its grant ends.
func (c *conn) revoked() bool {
	g := c.capab.Load()
	store := c.l.srv.APIKeys()
	if g == nil || store == nil {
		return g != nil
	}
	k := store.Key(g.keyID)
	return k == nil || k.Secret != g.secret
}

// revoke ends a connection whose credential was revoked: 401 and close.
func (c *conn) revoke() {
	c.finish(appendNack(nil, nil, codeUnauthorized, "", "credential revoked"), closePolicy, "credential revoked", true)
}
