package amaquet

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// IdentityFile is the name of the server's identity key in --dir.
const IdentityFile = "amaquet-identity.key"

// helloPrefix is what HELLO signs before the client's nonce.
const helloPrefix = "AMQT-HELLO\x00"

// LoadIdentity returns the server's Ed25519 identity key kept in dir,
// creating it (mode 0600, written to a temporary file, synced and renamed)
// when there is none. The file holds the base64 of the key's 32-byte seed
// and a newline. A file that holds anything else is an error naming it:
// the server must not silently change the identity clients pinned.
func LoadIdentity(dir string) (ed25519.PrivateKey, error) {
	path := filepath.Join(dir, IdentityFile)
	b, err := os.ReadFile(path)
	if err == nil {
		seed, derr := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(b)))
		if derr != nil || len(seed) != ed25519.SeedSize {
			return nil, fmt.Errorf("amaquet identity %s: not the base64 of a %d-byte Ed25519 seed", path, ed25519.SeedSize)
		}
		return ed25519.NewKeyFromSeed(seed), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("amaquet identity: %w", err)
	}
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return nil, fmt.Errorf("amaquet identity: %w", err)
	}
	if err := writeKey(path, base64.StdEncoding.AppendEncode(nil, seed)); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return LoadIdentity(dir) // another process created it first
		}
		return nil, fmt.Errorf("amaquet identity %s: %w", path, err)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// writeKey writes the key file atomically with mode 0600.
func writeKey(path string, text []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), IdentityFile+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(text, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// Link, not rename: two servers starting at once in one directory
	// cannot replace each other's key.
	if err := os.Link(tmp.Name(), path); err != nil {
		return err
	}
	return nil
}

// PublicKeyText is the base64 of a key's public half, as HELLO reports it
// and `recached amaquet-identity` prints it.
func PublicKeyText(k ed25519.PrivateKey) string {
	return base64.StdEncoding.EncodeToString(k.Public().(ed25519.PublicKey))
}

// signHello signs the HELLO message for nonce.
func signHello(k ed25519.PrivateKey, nonce []byte) []byte {
	msg := make([]byte, 0, len(helloPrefix)+len(nonce))
	msg = append(append(msg, helloPrefix...), nonce...)
	return ed25519.Sign(k, msg)
}
