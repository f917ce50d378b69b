package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/sync/apikey"
)

// TestRealtimeToken mints tokens with the subcommand and checks that the
// key store verifies them with the capability and client id asked for,
// and that bad invocations fail with a message.
func TestRealtimeToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.json")
	file := `[{"id":"k1","secret":"s.e.c.r.e.t","capability":{"chat:*":["subscribe","publish","presence"],"*":["subscribe"]}}]`
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := apikey.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tests := []struct {
		name     string
		args     []string
		code     int
		cap      apikey.Capability
		clientID string
		stderr   string
	}{
		{"key's capability", []string{"--api-keys", path, "--key", "k1", "--ttl", "1h"}, 0, store.Key("k1").Capability, "", ""},
		{"narrowed", []string{"--api-keys", path, "--key", "k1", "--ttl", "10m", "--capability", `{"chat:1":["publish"],"news":["publish"]}`, "--client-id", "alice"}, 0, apikey.Capability{"chat:1": {"publish"}}, "alice", ""},
		{"no file", []string{"--key", "k1"}, 2, nil, "", "--api-keys is required"},
		{"no key", []string{"--api-keys", path}, 2, nil, "", "--key is required"},
		{"unknown key", []string{"--api-keys", path, "--key", "k9"}, 2, nil, "", `no key "k9"`},
		{"bad ttl", []string{"--api-keys", path, "--key", "k1", "--ttl", "0s"}, 2, nil, "", "--ttl must be positive"},
		{"bad capability", []string{"--api-keys", path, "--key", "k1", "--capability", `{"a":["fly"]}`}, 2, nil, "", "unknown operation"},
		{"missing file", []string{"--api-keys", path + ".none", "--key", "k1"}, 2, nil, "", "no such file"},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := runRealtimeToken(tt.args, now, &out, &errb)
		if code != tt.code || !strings.Contains(errb.String(), tt.stderr) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", tt.name, code, errb.String(), tt.code, tt.stderr)
			continue
		}
		if code != 0 {
			continue
		}
		g, err := store.VerifyToken(strings.TrimSpace(out.String()), now)
		if err != nil {
			t.Errorf("%s: the minted token does not verify: %v", tt.name, err)
			continue
		}
		if !reflect.DeepEqual(g.Capability, tt.cap) || g.ClientID != tt.clientID || g.Key.ID != "k1" {
			t.Errorf("%s: grant %+v, want capability %v client %q", tt.name, g, tt.cap, tt.clientID)
		}
		if _, err := store.VerifyToken(strings.TrimSpace(out.String()), now.Add(2*time.Hour)); err == nil {
			t.Errorf("%s: the token still verifies after its ttl", tt.name)
		}
	}
}
