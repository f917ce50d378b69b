package main

import (
	"bytes"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/server/tcp"
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

// TestBinaryWebSocket runs the real binary with the WebSocket bridge and a
// token secret: a token printed by "recached token" opens its scope, and
// SIGTERM closes the WebSocket connection cleanly.
func TestBinaryWebSocket(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := build(t)
	port, err := tcp.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd, _ := startBinary(t, bin, "--ws-port", strconv.Itoa(port), "--token-secret", "S")
	out, err := exec.Command(bin, "token", "--secret", "S", "--patterns", "a:*", "--ttl", "1h").Output()
	if err != nil {
		t.Fatalf("recached token: %v", err)
	}
	tok := strings.TrimSpace(string(out))
	wsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	var c *websocket.Conn
	deadline := time.Now().Add(10 * time.Second)
	for {
		var resp *http.Response
		c, resp, err = websocket.DefaultDialer.Dial("ws://"+wsAddr+"/", nil)
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dial the WebSocket port: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer c.Close()
	do := func(args ...string) string {
		t.Helper()
		if err := c.WriteMessage(websocket.TextMessage, []byte(strings.Join(args, " "))); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, b, err := c.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	steps := []struct {
		cmd  []string
		want string
	}{
		{[]string{"GET", "a:1"}, "-NOPERM this connection has no scope: send SYNC TOKEN <token> first\r\n"},
		{[]string{"SYNC", "TOKEN", tok}, "+OK\r\n"},
		{[]string{"SET", "a:1", "x"}, "+OK\r\n"},
		{[]string{"GET", "b"}, "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n"},
	}
	for _, st := range steps {
		if got := do(st.cmd...); got != st.want {
			t.Fatalf("%q: got %q, want %q", st.cmd, got, st.want)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, _, err := c.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Fatalf("after SIGTERM: %v, want a normal close", err)
	}
	if code := waitExit(t, cmd); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}
