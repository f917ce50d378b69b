package rdb

import (
	"fmt"
	"os"
	"runtime/debug"
	"syscall"
)

// mapFile maps the file at path into memory, read-only, so that loading
// it costs no copy and leaves no file-sized buffer for the collector to
// return once the keys are in place: unmap gives the pages back at once.
// A file that cannot be mapped (empty, or on a file system without mmap)
// is read into memory instead. Nothing may keep a slice of data after
// unmap.
func mapFile(path string) (data []byte, unmap func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if size := st.Size(); size > 0 && size == int64(int(size)) {
		data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_POPULATE)
		if err == nil {
			return data, func() { _ = syscall.Munmap(data) }, nil
		}
	}
	data, err = os.ReadFile(path)
	return data, func() {}, err
}

// faultError turns a fault reading a mapped file (the file was truncated
// while it was read), recovered as r, back into an error; any other panic
// goes on. Reading goroutines run with debug.SetPanicOnFault on
// (readFaults).
func faultError(path string, r any) error {
	if _, ok := r.(interface{ Addr() uintptr }); ok {
		return fmt.Errorf("%s: the file changed while it was read (truncated by another program?)", path)
	}
	panic(r)
}

// readFaults makes a fault reading mapped memory a panic that faultError
// can recover, for the calling goroutine, and returns the undo.
func readFaults() func() {
	old := debug.SetPanicOnFault(true)
	return func() { debug.SetPanicOnFault(old) }
}
