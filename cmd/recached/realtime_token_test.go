package main

import (
	"bytes"
	"errors"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/server/tcp"
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

// realtimeFirstFrame connects to the realtime port with a key credential
// and returns the server's first frame's op and code.
// waitListening polls a loopback port until it accepts, for 10 s at most.
func waitListening(t *testing.T, port int) {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
	}
	t.Fatalf("nothing listens on %s", addr)
}

func realtimeFirstFrame(t *testing.T, port int, cred string) (op, code int) {
	t.Helper()
	u := "ws://127.0.0.1:" + strconv.Itoa(port) + "/?key=" + url.QueryEscape(cred)
	c, _, err := websocket.DefaultDialer.Dial(u, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", u, err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var f struct{ Op, Code int }
	if err := c.ReadJSON(&f); err != nil {
		t.Fatal(err)
	}
	return f.Op, f.Code
}

// TestAPIKeysFileBinary: the real binary refuses to start on a bad
// --api-keys file, naming it; SIGHUP reloads the file, after which a
// removed key's credential is refused with 401 and a new key's accepted;
// a bad file on SIGHUP leaves the keys as they were.
func TestAPIKeysFileBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := build(t)
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.json")
	write := func(s string) {
		if err := os.WriteFile(keys, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`[{"id":"k1","secret":"a"`)
	cmd := exec.Command(bin, "--port", "0", "--ws-port", "0", "--realtime-port", "0", "--amaquet-port", "0", "--dir", dir, "--api-keys", keys)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !strings.Contains(string(out), keys) {
		t.Fatalf("a bad keys file: %v\n%s", err, out)
	}

	write(`[{"id":"k1","secret":"one","capability":{"*":["subscribe"]}},{"id":"k2","secret":"two"}]`)
	rt, err := tcp.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p := startIn(t, bin, dir, "--realtime-port", strconv.Itoa(rt), "--amaquet-port", "0", "--api-keys", keys)
	waitListening(t, rt) // startIn waits for the RESP port only
	steps := []struct {
		file   string // written before SIGHUP, "" for no reload
		logs   string // what the server logs about the reload
		cred   string
		op, cd int
	}{
		{"", "", "two.k2", 12, 0},
		{"", "", "bad.k2", 10, 401},
		{`[{"id":"k1","secret":"one"},{"id":"k3","secret":"three"}]`, "reloaded 2 API keys", "two.k2", 10, 401},
		{"", "", "three.k3", 12, 0},
		{`[{"id":"k1"}]`, "the keys stay as they were", "three.k3", 12, 0},
	}
	for i, st := range steps {
		if st.file != "" {
			write(st.file)
			before := strings.Count(p.output(), st.logs)
			if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for strings.Count(p.output(), st.logs) == before {
				if time.Now().After(deadline) {
					t.Fatalf("step %d: no %q in the logs after SIGHUP:\n%s", i, st.logs, p.output())
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		if op, code := realtimeFirstFrame(t, rt, st.cred); op != st.op || code != st.cd {
			t.Fatalf("step %d: %s got op %d code %d, want op %d code %d", i, st.cred, op, code, st.op, st.cd)
		}
	}
}
