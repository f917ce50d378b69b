package servertest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// ModuleRoot returns the directory of go.mod above the working directory.
func ModuleRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := moduleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	return dir
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found")
		}
		dir = parent
	}
}

// BuildRecached builds the server binary into a temporary directory of the
// test and returns its path.
func BuildRecached(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "recached")
	if err := BuildRecachedTo(bin); err != nil {
		tb.Fatal(err)
	}
	return bin
}

// BuildRecachedTo builds the server binary at path; a TestMain, which has
// no testing.TB, builds once for all its tests with it.
func BuildRecachedTo(path string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", path, "./cmd/recached")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/recached: %v\n%s", err, out)
	}
	return nil
}

// FreePort returns a loopback TCP port nobody listens on now.
func FreePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
