package client

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Storage keeps the little a client must remember across process starts:
// its client id, its session epoch and, optionally, its outbox. Each is a
// small blob saved under a fixed name ("client-id", "epoch", "outbox").
// Save must replace the blob atomically: after a crash Load returns either
// the old or the new data, never a mix. One Storage serves one client at a
// time.
type Storage interface {
	// Load returns the blob saved under name, or nil and no error when
	// none was.
	Load(name string) ([]byte, error)
	// Save durably replaces the blob saved under name.
	Save(name string, data []byte) error
}

// The names a client saves under.
const (
	nameClientID = "client-id"
	nameEpoch    = "epoch"
	nameOutbox   = "outbox"
)

// FileStorage is a Storage keeping each blob in a file of one directory.
// Save writes a temporary file, fsyncs it, renames it over the old file and
// fsyncs the directory, so a crash at any point leaves the old or the new
// file whole.
type FileStorage struct {
	dir string
}

// NewFileStorage returns a FileStorage in dir, creating the directory
// (mode 0700: the client id is a credential of sorts) when needed.
func NewFileStorage(dir string) (*FileStorage, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("client storage: %w", err)
	}
	return &FileStorage{dir: dir}, nil
}

// Dir returns the storage directory.
func (s *FileStorage) Dir() string { return s.dir }

func (s *FileStorage) path(name string) (string, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || name[0] == '.' {
		return "", fmt.Errorf("client storage: invalid name %q", name)
	}
	return filepath.Join(s.dir, name), nil
}

// Load reads the file for name; a missing file is no data.
func (s *FileStorage) Load(name string) ([]byte, error) {
	p, err := s.path(name)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("client storage: %w", err)
	}
	return b, nil
}

// Save atomically replaces the file for name with data.
func (s *FileStorage) Save(name string, data []byte) (err error) {
	p, err := s.path(name)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(s.dir, "."+name+".tmp-*")
	if err != nil {
		return fmt.Errorf("client storage: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
			err = fmt.Errorf("client storage: save %s: %w", name, err)
		}
	}()
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		return err
	}
	d, err := os.Open(s.dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return err
	}
	return d.Close()
}

// MemoryStorage is a Storage in memory: a client using it gets a new id
// and epoch 1 with every new MemoryStorage, and loses its outbox with the
// process. It suits tests and clients that need no continuity.
type MemoryStorage struct {
	mu    sync.Mutex
	blobs map[string][]byte
}

// NewMemoryStorage returns an empty MemoryStorage.
func NewMemoryStorage() *MemoryStorage {
	return &MemoryStorage{blobs: make(map[string][]byte)}
}

// Load returns a copy of the blob saved under name.
func (s *MemoryStorage) Load(name string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.blobs[name]
	if !ok {
		return nil, nil
	}
	return append([]byte{}, b...), nil
}

// Save keeps a copy of data under name.
func (s *MemoryStorage) Save(name string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blobs[name] = append([]byte{}, data...)
	return nil
}
