package snapshot

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/recached/recached/server/keyspace"
)

// Writer streams a snapshot to a temporary file in the data directory;
// Commit makes it the directory's snapshot atomically. Memory use is one
// buffer, whatever the size of the data. A Writer is not safe for
// concurrent use.
type Writer struct {
	dir   string
	tmp   string
	f     *os.File
	crc   hash.Hash32
	bw    *bufio.Writer
	enc   *msgpack.Encoder
	db    int
	keys  uint64
	marks uint64
	hist  uint64
	funcs uint64
	err   error
	rec   []byte // scratch space for encoding a history record
}

// crcWriter feeds what it writes to a checksum.
type crcWriter struct {
	w   io.Writer
	crc hash.Hash32
}

func (c crcWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.crc.Write(p[:n])
	return n, err
}

// TempName returns the temporary file name a process writes a snapshot to.
func TempName(pid int) string { return SnapshotName + ".tmp-" + strconv.Itoa(pid) }

// RemoveStaleTemp deletes temporary snapshot files that crashed saves left
// in dir.
func RemoveStaleTemp(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), SnapshotName+".tmp-") {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// Create starts a snapshot in dir: it creates the temporary file and writes
// the header. The caller adds records and ends with Commit or Abort.
func Create(dir string, h Header) (*Writer, error) {
	tmp := filepath.Join(dir, TempName(os.Getpid()))
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	w := &Writer{dir: dir, tmp: tmp, f: f, crc: crc32.New(castagnoli), db: -1}
	w.bw = bufio.NewWriterSize(crcWriter{f, w.crc}, 256<<10)
	w.enc = msgpack.NewEncoder(w.bw)
	if _, err := w.bw.WriteString(SnapshotMagic); err != nil {
		w.Abort()
		return nil, err
	}
	fields := 3
	switch {
	case h.WithLog:
		fields = 5
	case len(h.Keys) > 0:
		fields = 4
	}
	w.check(w.enc.EncodeArrayLen(fields))
	w.check(w.enc.EncodeUint(Version))
	w.check(w.enc.EncodeUint(h.Generation))
	w.check(w.enc.EncodeInt(h.Created))
	if fields >= 4 {
		w.check(w.enc.EncodeArrayLen(len(h.Keys)))
		for _, n := range h.Keys {
			w.check(w.enc.EncodeInt(n))
		}
	}
	if fields >= 5 {
		w.check(w.enc.EncodeBool(true))
	}
	if w.err != nil {
		err := w.err
		w.Abort()
		return nil, err
	}
	return w, nil
}

func (w *Writer) check(err error) {
	if err != nil && w.err == nil {
		w.err = err
	}
}

// Err returns the first error the writer met.
func (w *Writer) Err() error { return w.err }

// Keys returns the number of keys written so far.
func (w *Writer) Keys() uint64 { return w.keys }

// selectDB writes a database record when db is not the current one.
func (w *Writer) selectDB(db int) {
	if db == w.db {
		return
	}
	w.check(w.enc.EncodeArrayLen(2))
	w.check(w.enc.EncodeUint(recDB))
	w.check(w.enc.EncodeUint(uint64(db)))
	w.db = db
}

// Key writes one key of database db. expire is the absolute expiry in unix
// ms, 0 for none.
func (w *Writer) Key(db int, key []byte, e *keyspace.Entry, expire int64) error {
	if w.err != nil {
		return w.err
	}
	w.selectDB(db)
	w.check(encodeKey(w.enc, key, e, expire))
	w.keys++
	return w.err
}

// Raw writes a key record that AppendKey encoded earlier, as a key of
// database db.
func (w *Writer) Raw(db int, rec []byte) error {
	if w.err != nil {
		return w.err
	}
	w.selectDB(db)
	_, err := w.bw.Write(rec)
	w.check(err)
	w.keys++
	return w.err
}

// Mark writes one DEDUP mark.
func (w *Writer) Mark(m Marks) error {
	if w.err != nil {
		return w.err
	}
	w.check(w.enc.EncodeArrayLen(4))
	w.check(w.enc.EncodeUint(recMark))
	w.check(w.enc.EncodeString(m.ClientID))
	w.check(w.enc.EncodeUint(m.High))
	w.check(w.enc.EncodeInt(m.LastSeen))
	w.marks++
	return w.err
}

// History writes one channel history message. A channel's messages are
// written oldest first.
func (w *Writer) History(h *History) error {
	if w.err != nil {
		return w.err
	}
	w.rec = mpHistory(w.rec[:0], recHistory, h)
	_, err := w.bw.Write(w.rec)
	w.check(err)
	w.hist++
	return w.err
}

// Function writes one function library: the code FUNCTION LOAD took.
func (w *Writer) Function(code string) error {
	if w.err != nil {
		return w.err
	}
	w.check(w.enc.EncodeArrayLen(2))
	w.check(w.enc.EncodeUint(recFunction))
	w.check(w.enc.EncodeBytes([]byte(code)))
	w.funcs++
	return w.err
}

// Commit ends the snapshot: it writes the end record and the checksum,
// fsyncs the file, renames it over dir's snapshot and fsyncs the directory.
// On error the temporary file is removed and the previous snapshot stays.
func (w *Writer) Commit() error {
	if w.err == nil {
		// The history and function counts are there only when there is
		// history or a function library, so that a snapshot without them
		// is the same as before they existed.
		fields := 3
		switch {
		case w.funcs > 0:
			fields = 5
		case w.hist > 0:
			fields = 4
		}
		w.check(w.enc.EncodeArrayLen(fields))
		w.check(w.enc.EncodeUint(recEnd))
		w.check(w.enc.EncodeUint(w.keys))
		w.check(w.enc.EncodeUint(w.marks))
		if fields >= 4 {
			w.check(w.enc.EncodeUint(w.hist))
		}
		if fields >= 5 {
			w.check(w.enc.EncodeUint(w.funcs))
		}
	}
	if w.err == nil {
		w.check(w.bw.Flush())
	}
	if w.err == nil {
		var sum [4]byte
		binary.BigEndian.PutUint32(sum[:], w.crc.Sum32())
		_, err := w.f.Write(sum[:])
		w.check(err)
	}
	if w.err == nil {
		w.check(w.f.Sync())
	}
	if w.err != nil {
		err := w.err
		w.Abort()
		return err
	}
	if err := w.f.Close(); err != nil {
		w.f = nil
		w.Abort()
		return err
	}
	w.f = nil
	if err := os.Rename(w.tmp, filepath.Join(w.dir, SnapshotName)); err != nil {
		w.Abort()
		return err
	}
	return SyncDir(w.dir)
}

// Abort abandons the snapshot and removes the temporary file.
func (w *Writer) Abort() {
	if w.f != nil {
		_ = w.f.Close()
		w.f = nil
	}
	_ = os.Remove(w.tmp)
	if w.err == nil {
		w.err = errors.New("snapshot aborted")
	}
}

// SyncDir fsyncs a directory, making renames and creations in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// AppendKey appends the encoded key record of key to dst, the bytes Key
// would write. The server keeps such records as the pre-image of a key
// that changes while a snapshot is in progress.
func AppendKey(dst []byte, key []byte, e *keyspace.Entry, expire int64) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	enc := msgpack.NewEncoder(buf)
	if err := encodeKey(enc, key, e, expire); err != nil {
		return dst, err
	}
	return buf.Bytes(), nil
}

// The shapes of the object types' iteration methods. The writer depends on
// these rather than on the concrete types.
type (
	byteRanger interface{ Range(fn func(v []byte) bool) }
	pairRanger interface {
		Range(fn func(a, b []byte) bool)
	}
	scoreRanger interface {
		Range(fn func(member []byte, score float64) bool)
	}
	lener interface{ Len() int }
)

// TagOf returns the format's tag for a keyspace type.
func TagOf(t keyspace.Type) (Tag, bool) {
	switch t {
	case keyspace.TypeString:
		return TagString, true
	case keyspace.TypeList:
		return TagList, true
	case keyspace.TypeSet:
		return TagSet, true
	case keyspace.TypeZSet:
		return TagZSet, true
	case keyspace.TypeHash:
		return TagHash, true
	case keyspace.TypeJSON:
		return TagJSON, true
	case keyspace.TypeRateLimit:
		return TagRateLimit, true
	case keyspace.TypeStream:
		return TagStream, true
	}
	return 0, false
}

// encodeKey writes [2, tag, key, expire|nil, value].
func encodeKey(enc *msgpack.Encoder, key []byte, e *keyspace.Entry, expire int64) error {
	tag, ok := TagOf(e.Type())
	if !ok {
		return fmt.Errorf("snapshot: values of type %s cannot be saved yet", e.Type())
	}
	var err error
	put := func(e error) {
		if err == nil {
			err = e
		}
	}
	put(enc.EncodeArrayLen(5))
	put(enc.EncodeUint(recKey))
	put(enc.EncodeUint(uint64(tag)))
	put(encodeBin(enc, key))
	if expire > 0 {
		put(enc.EncodeInt(expire))
	} else {
		put(enc.EncodeNil())
	}
	if err != nil {
		return err
	}
	if tag == TagString {
		return encodeBin(enc, e.Str)
	}
	return encodeObject(enc, tag, e.Obj)
}

func encodeBin(enc *msgpack.Encoder, b []byte) error {
	if b == nil {
		b = []byte{}
	}
	return enc.EncodeBytes(b)
}

// encodeObject writes a collection as one array: list and set elements in
// order, hash fields and values alternating, sorted-set members and scores
// alternating.
func encodeObject(enc *msgpack.Encoder, tag Tag, o keyspace.Object) error {
	switch tag {
	case TagJSON:
		return encodeJSON(enc, o)
	case TagRateLimit:
		return encodeRateLimit(enc, o)
	case TagStream:
		return encodeStream(enc, o)
	}
	n := -1
	if l, ok := o.(lener); ok {
		n = l.Len()
	}
	var err error
	var seen int
	switch tag {
	case TagList, TagSet:
		r, ok := o.(byteRanger)
		if !ok {
			return fmt.Errorf("snapshot: %s value has no Range method", tag)
		}
		if n < 0 {
			n = 0
			r.Range(func([]byte) bool { n++; return true })
		}
		if err = enc.EncodeArrayLen(n); err != nil {
			return err
		}
		r.Range(func(v []byte) bool {
			seen++
			if seen > n {
				return false
			}
			err = encodeBin(enc, v)
			return err == nil
		})
	case TagHash:
		r, ok := o.(pairRanger)
		if !ok {
			return fmt.Errorf("snapshot: hash value has no Range method")
		}
		if n < 0 {
			n = 0
			r.Range(func(_, _ []byte) bool { n++; return true })
		}
		if err = enc.EncodeArrayLen(2 * n); err != nil {
			return err
		}
		r.Range(func(f, v []byte) bool {
			seen++
			if seen > n {
				return false
			}
			if err = encodeBin(enc, f); err == nil {
				err = encodeBin(enc, v)
			}
			return err == nil
		})
	case TagZSet:
		r, ok := o.(scoreRanger)
		if !ok {
			return fmt.Errorf("snapshot: zset value has no Range method")
		}
		if n < 0 {
			n = 0
			r.Range(func([]byte, float64) bool { n++; return true })
		}
		if err = enc.EncodeArrayLen(2 * n); err != nil {
			return err
		}
		r.Range(func(m []byte, score float64) bool {
			seen++
			if seen > n {
				return false
			}
			if err = encodeBin(enc, m); err == nil {
				err = enc.EncodeFloat64(score)
			}
			return err == nil
		})
	default:
		return fmt.Errorf("snapshot: cannot encode %s", tag)
	}
	if err == nil && seen != n {
		err = fmt.Errorf("snapshot: %s value reported %d elements but ranged over %d", tag, n, seen)
	}
	return err
}
