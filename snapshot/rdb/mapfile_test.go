package rdb

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMappedFileTruncated: a mapped file cut short by another program
// while it is read is an error naming it, not a crash of the process.
func TestMappedFileTruncated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dump.rdb")
	if err := os.WriteFile(path, make([]byte, 3*os.Getpagesize()), 0o644); err != nil {
		t.Fatal(err)
	}
	data, unmap, err := mapFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer unmap()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	err = func() (err error) {
		defer readFaults()()
		defer func() {
			if p := recover(); p != nil {
				err = faultError(path, p)
			}
		}()
		if data[2*os.Getpagesize()] != 0 {
			t.Error("the file held zeros")
		}
		return nil
	}()
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "changed while it was read") {
		t.Fatalf("reading past the cut: %v", err)
	}
}
