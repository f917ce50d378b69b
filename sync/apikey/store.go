// Package apikey holds the API keys of --api-keys (SPEC section 9): the
// JSON file, the capabilities keys and access tokens grant, key
// credentials ("<secret>.<keyId>") and HS256 access tokens signed with a
// key's secret. The Blackevin realtime and Amaquet transports share one
// Store, which the engine loads and cmd/recached reloads on SIGHUP.
package apikey

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"
)

// Key is one API key of the file. A Key is never modified once loaded; a
// reload makes new ones.
type Key struct {
	// ID names the key: the part of a credential after its last '.', and
	// a token's kid. It holds no '.'.
	ID string
	// Secret authenticates the key and signs its tokens.
	Secret string
	// Capability is what the key, and any token it signs, may do on
	// channels.
	Capability Capability
	// Keys are the key-name globs scoping the key-bearing commands the key
	// may run through Amaquet, as a sync token's patterns do; nil: no
	// scope (every key).
	Keys []string
}

// Grant is what an authenticated credential allows.
type Grant struct {
	// Key is the API key the credential belongs to or was signed with.
	Key *Key
	// Capability is the effective capability: the key's, or for a token
	// its x-capability intersected with the key's.
	Capability Capability
	// ClientID is a token's x-client-id, "" when it has none (always for
	// a plain key).
	ClientID string
	// Expires is a token's exp; zero for a plain key, which never
	// expires.
	Expires time.Time
}

// Errors of authentication; each wrapped error names its cause further.
// Every one is a 401 for the transports.
var (
	// ErrMalformed: the credential is not "<secret>.<keyId>" or the token
	// not a well-formed JWT with the required claims.
	ErrMalformed = errors.New("malformed credential")
	// ErrUnknownKey: no key has the id (it may have been removed by a
	// reload: a revoked key).
	ErrUnknownKey = errors.New("unknown API key")
	// ErrBadSecret: the secret is not the key's.
	ErrBadSecret = errors.New("wrong API key secret")
	// ErrBadSignature: the token's signature or algorithm is not an HS256
	// signature by the key's secret.
	ErrBadSignature = errors.New("invalid token signature")
	// ErrExpired: the token's exp has passed.
	ErrExpired = errors.New("token expired")
)

// Store is the set of API keys loaded from one file. It is safe for
// concurrent use; Reload swaps the whole set at once.
type Store struct {
	path string
	mu   sync.RWMutex
	keys map[string]*Key
	list []*Key
}

// fileKey is one element of the file's array.
type fileKey struct {
	ID         *string         `json:"id"`
	Secret     *string         `json:"secret"`
	Capability json.RawMessage `json:"capability"`
	Keys       []string        `json:"keys"`
}

// Parse parses the --api-keys file's contents: a JSON array of
// {"id", "secret", "capability", "keys"} objects. id and secret are
// required (id without '.'; ids unique), capability and keys optional
// (none: no channel operation, no key scope); unknown fields are refused,
// so that a misspelt "capabilty" is an error, not a key allowing nothing.
func Parse(data []byte) ([]*Key, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var raw []fileKey
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("want a JSON array of keys: %w", err)
	}
	if raw == nil {
		return nil, fmt.Errorf("want a JSON array of keys, got null")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("unexpected data after the array of keys")
	}
	out := make([]*Key, 0, len(raw))
	seen := make(map[string]bool, len(raw))
	for i, fk := range raw {
		switch {
		case fk.ID == nil || *fk.ID == "":
			return nil, fmt.Errorf("key %d: missing id", i)
		case strings.Contains(*fk.ID, "."):
			return nil, fmt.Errorf("key %d: id %q contains '.', which separates a credential's secret from its key id", i, *fk.ID)
		case seen[*fk.ID]:
			return nil, fmt.Errorf("key %d: id %q appears twice", i, *fk.ID)
		case fk.Secret == nil || *fk.Secret == "":
			return nil, fmt.Errorf("key %q: missing secret", *fk.ID)
		}
		seen[*fk.ID] = true
		k := &Key{ID: *fk.ID, Secret: *fk.Secret, Capability: Capability{}}
		if len(fk.Capability) > 0 && string(fk.Capability) != "null" {
			c, err := ParseCapability(fk.Capability)
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", k.ID, err)
			}
			k.Capability = c
		}
		for _, p := range fk.Keys {
			if p == "" {
				return nil, fmt.Errorf("key %q: empty pattern in keys", k.ID)
			}
		}
		k.Keys = fk.Keys
		out = append(out, k)
	}
	return out, nil
}

// NewStore returns a store of the given keys, not backed by a file
// (Reload fails). The keys must not change afterwards.
func NewStore(keys []*Key) *Store {
	s := &Store{}
	s.set(keys)
	return s
}

// Load reads the --api-keys file at path. An error names the file and
// what is wrong with it.
func Load(path string) (*Store, error) {
	s := &Store{path: path}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Reload reads the file again and replaces every key at once (SIGHUP): a
// key no longer in the file stops authenticating, and tokens it signed stop
// verifying. On error the keys stay as they were.
func (s *Store) Reload() error {
	if s.path == "" {
		return fmt.Errorf("api keys: the store was not loaded from a file")
	}
	data, err := os.ReadFile(s.path)
	if err != nil {
		return fmt.Errorf("api keys: %w", err)
	}
	keys, err := Parse(data)
	if err != nil {
		return fmt.Errorf("api keys %s: %w", s.path, err)
	}
	s.set(keys)
	return nil
}

// set replaces the keys. A key equal to the one it replaces (same id,
// secret, capability and scope) stays the same *Key, so that Current
// holds for it across a reload that did not change it.
func (s *Store) set(keys []*Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]*Key, len(keys))
	list := make([]*Key, len(keys))
	for i, k := range keys {
		if old := s.keys[k.ID]; old != nil && reflect.DeepEqual(old, k) {
			k = old
		}
		m[k.ID], list[i] = k, k
	}
	s.keys, s.list = m, list
}

// Path returns the file the store was loaded from, "" for NewStore.
func (s *Store) Path() string { return s.path }

// Key returns the key with the given id, nil when there is none.
func (s *Store) Key(id string) *Key {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.keys[id]
}

// Keys returns every key, in the file's order.
func (s *Store) Keys() []*Key {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]*Key(nil), s.list...)
}

// Current reports whether k is still the store's key of its id: false once
// a reload removed it or changed it (its secret, capability or scope),
// true across reloads that left it as it was. Transports use it to close
// the sessions of a revoked key.
func (s *Store) Current(k *Key) bool {
	return k != nil && s.Key(k.ID) == k
}

// Authenticate checks a key credential "<secret>.<keyId>" (split at the
// last '.') and returns its key.
func (s *Store) Authenticate(cred string) (*Key, error) {
	i := strings.LastIndexByte(cred, '.')
	if i <= 0 || i == len(cred)-1 {
		return nil, fmt.Errorf("%w: a key credential is <secret>.<keyId>", ErrMalformed)
	}
	secret, id := cred[:i], cred[i+1:]
	k := s.Key(id)
	if k == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownKey, id)
	}
	if subtle.ConstantTimeCompare([]byte(secret), []byte(k.Secret)) != 1 {
		return nil, fmt.Errorf("%w for key %q", ErrBadSecret, id)
	}
	return k, nil
}

// Grant returns what the plain key k allows: its capability, no client id,
// no expiry.
func (k *Key) Grant() *Grant {
	return &Grant{Key: k, Capability: k.Capability}
}
