package main

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/server/amaquet"
	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/server/tcp"
)

// TestRunAmaquetIdentity: the subcommand prints the identity's public
// key, creating the key file (mode 0600) once; flags are checked.
func TestRunAmaquetIdentity(t *testing.T) {
	dir := t.TempDir()
	var out1, out2, errs bytes.Buffer
	if code := runAmaquetIdentity([]string{"--dir", dir}, &out1, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	if code := runAmaquetIdentity([]string{"--dir", dir}, &out2, &errs); code != 0 || out1.String() != out2.String() {
		t.Fatalf("second run: exit %d, %q then %q", code, out1.String(), out2.String())
	}
	pub, err := base64.StdEncoding.DecodeString(strings.TrimSpace(out1.String()))
	if err != nil || len(pub) != ed25519.PublicKeySize {
		t.Fatalf("printed %q: %v", out1.String(), err)
	}
	st, err := os.Stat(filepath.Join(dir, amaquet.IdentityFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	for _, args := range [][]string{{"--dir"}, {"--nosuch"}, {"--dir", dir, "extra"}} {
		if code := runAmaquetIdentity(args, io.Discard, io.Discard); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	if code := runAmaquetIdentity([]string{"--dir", filepath.Join(dir, "missing", "sub")}, io.Discard, io.Discard); code != 1 {
		t.Errorf("missing directory: exit %d, want 1", code)
	}
}

// TestBinaryAmaquet: the real binary serves Amaquet on --amaquet-port,
// signs HELLO with the key `recached amaquet-identity --dir` prints, and
// runs commands on the keyspace RESP sees.
func TestBinaryAmaquet(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := build(t)
	dir := t.TempDir()
	port, err := tcp.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	_, addr := startBinary(t, bin, "--amaquet-port", strconv.Itoa(port), "--dir", dir, "--save", "")
	out, err := exec.Command(bin, "amaquet-identity", "--dir", dir).Output()
	if err != nil {
		t.Fatalf("amaquet-identity: %v", err)
	}
	pub, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	waitListening(t, port) // startBinary waits for the RESP port only
	nc, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	r := bufio.NewReader(nc)
	roundTrip := func(op uint16, id uint64, payload string) []byte {
		t.Helper()
		h := make([]byte, 24)
		copy(h, "AMQT")
		h[4], h[5] = 1, 1
		binary.BigEndian.PutUint16(h[8:], op)
		binary.BigEndian.PutUint64(h[12:], id)
		binary.BigEndian.PutUint32(h[20:], uint32(len(payload)))
		if _, err := nc.Write(append(h, payload...)); err != nil {
			t.Fatal(err)
		}
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(r, h); err != nil {
			t.Fatal(err)
		}
		if h[5] != 2 || binary.BigEndian.Uint64(h[12:]) != id {
			t.Fatalf("response header %x", h)
		}
		p := make([]byte, binary.BigEndian.Uint32(h[20:]))
		if _, err := io.ReadFull(r, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	nonce := []byte("0123456789abcdef0123")
	var hello struct {
		Result struct {
			PublicKey string `json:"public_key"`
			Signature string `json:"signature"`
		} `json:"result"`
	}
	p := roundTrip(amaquet.OpHello, 1, `{"nonce":"`+base64.StdEncoding.EncodeToString(nonce)+`"}`)
	if err := json.Unmarshal(p, &hello); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	sig, _ := base64.StdEncoding.DecodeString(hello.Result.Signature)
	if hello.Result.PublicKey != strings.TrimSpace(string(out)) || !ed25519.Verify(pub, append([]byte("AMQT-HELLO\x00"), nonce...), sig) {
		t.Fatalf("HELLO %s does not verify with the printed key %s", p, out)
	}
	if p := roundTrip(amaquet.OpCommand, 2, `{"command":"SET","args":["k","v"]}`); string(p) != `{"ok":true,"result":"OK"}` {
		t.Fatalf("SET: %s", p)
	}
	c := servertest.Dial(t, addr)
	if rep, err := c.Do("GET", "k"); err != nil || string(rep) != "$1\r\nv\r\n" {
		t.Fatalf("RESP GET: %q %v", rep, err)
	}
}
