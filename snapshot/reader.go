package snapshot

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"os"
	"unsafe"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/recached/recached/server/keyspace"
)

// Record is one key, one DEDUP mark, one channel history message or one
// function library read from a snapshot.
type Record struct {
	// IsMark tells a mark (Mark is set) from a key (DB, Key, Entry and
	// Expire are set); IsHistory a history message (History is set);
	// IsFunction a function library (Function is its code).
	IsMark     bool
	IsHistory  bool
	IsFunction bool
	History    History
	Function   string
	DB         int
	Key        []byte
	Entry      *keyspace.Entry
	// Expire is the absolute expiry in unix ms, 0 for none.
	Expire int64
	Mark   Marks
}

// Reader reads a snapshot record by record, checking it as it goes: the
// checksum is verified when the end record is reached, so a caller must
// not trust what it read until Next has returned io.EOF.
type Reader struct {
	path  string
	src   io.ReaderAt
	size  int64 // bytes before the checksum
	cnt   countingReader
	br    *bufio.Reader
	dec   *msgpack.Decoder
	hdr   Header
	db    int
	keys  uint64
	mks   uint64
	hist  uint64
	funcs uint64
	done  bool
	err   error

	// rec is the record Next returns, reused for every key: callers use a
	// record before asking for the next one.
	rec Record
	// arena holds the bytes of keys and small string values, and entries
	// the entries of keys: one allocation serves thousands of keys, which
	// is most of what makes loading fast.
	arena   []byte
	entries []keyspace.Entry
}

// maxHintDBs bounds the per-database key counts a header may hold.
const maxHintDBs = 1 << 16

// arenaChunk and entryChunk size the reader's bulk allocations; values
// larger than arenaMax get their own.
const (
	arenaChunk = 256 << 10
	arenaMax   = 4 << 10
	entryChunk = 1024
)

// binKept reads a byte string like bin, into the reader's arena when small.
// The slice's capacity is its length, so growing it never touches a
// neighbour.
func (r *Reader) binKept(what string) ([]byte, error) {
	n, err := r.dec.DecodeBytesLen()
	if err != nil || n < 0 {
		return nil, r.fail("bad "+what, err)
	}
	if int64(n) > r.remaining() {
		return nil, r.corrupt(fmt.Sprintf("%s length %d runs past the end of the file", what, n))
	}
	var b []byte
	if n > arenaMax {
		b = make([]byte, n)
	} else {
		if len(r.arena)+n > cap(r.arena) {
			r.arena = make([]byte, 0, arenaChunk)
		}
		start := len(r.arena)
		r.arena = r.arena[:start+n]
		b = r.arena[start : start+n : start+n]
	}
	if _, err := io.ReadFull(r.br, b); err != nil {
		return nil, r.fail(what, err)
	}
	return b, nil
}

// newEntry hands out an entry from the reader's current chunk.
func (r *Reader) newEntry() *keyspace.Entry {
	if len(r.entries) == 0 {
		r.entries = make([]keyspace.Entry, entryChunk)
	}
	e := &r.entries[0]
	r.entries = r.entries[1:]
	return e
}

// countingReader counts and checksums what it reads.
type countingReader struct {
	r   io.Reader
	n   int64
	crc hash.Hash32
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.crc.Write(p[:n])
	return n, err
}

// Open opens the snapshot at path and reads its header.
func Open(path string) (*Reader, *os.File, error) {
	return openFile(path, func(f *os.File, size int64) (*Reader, error) {
		return NewReader(path, f, size)
	})
}

// openFile opens the file at path and hands it, with its size, to
// newReader, closing it again when that fails. A missing file is
// ErrNotExist.
func openFile[R any](path string, newReader func(f *os.File, size int64) (R, error)) (R, *os.File, error) {
	var none R
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return none, nil, fmt.Errorf("%s: %w", path, ErrNotExist)
	}
	if err != nil {
		return none, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return none, nil, err
	}
	r, err := newReader(f, st.Size())
	if err != nil {
		f.Close()
		return none, nil, err
	}
	return r, f, nil
}

// NewReader reads a snapshot of size bytes from src; path names it in
// errors. It reads and checks the header.
func NewReader(path string, src io.ReaderAt, size int64) (*Reader, error) {
	r := &Reader{path: path, src: src, db: -1}
	if size == 0 {
		return nil, r.corruptAt(0, "empty file")
	}
	if size < int64(len(SnapshotMagic))+4 {
		return nil, r.corruptAt(0, "file too short to be a snapshot")
	}
	r.size = size - 4
	r.cnt = countingReader{r: io.NewSectionReader(src, 0, r.size), crc: crc32.New(castagnoli)}
	r.br = bufio.NewReaderSize(&r.cnt, 64<<10)
	var magic [len(SnapshotMagic)]byte
	if _, err := io.ReadFull(r.br, magic[:]); err != nil || string(magic[:]) != SnapshotMagic {
		return nil, r.corruptAt(0, "not a recached snapshot (bad magic)")
	}
	r.dec = msgpack.NewDecoder(r.br)
	n, err := r.dec.DecodeArrayLen()
	if err != nil || n < 3 || int64(n) > r.remaining() {
		return nil, r.corrupt("bad header")
	}
	v, err := r.dec.DecodeInt64()
	if err != nil {
		return nil, r.corrupt("bad header version")
	}
	if v < 1 || v > Version {
		return nil, r.corrupt(fmt.Sprintf("unsupported format version %d (this build reads versions 1 to %d)", v, Version))
	}
	r.hdr.Version = int(v)
	if r.hdr.Generation, err = r.dec.DecodeUint64(); err != nil {
		return nil, r.corrupt("bad header generation")
	}
	if r.hdr.Created, err = r.dec.DecodeInt64(); err != nil {
		return nil, r.corrupt("bad header time")
	}
	if n >= 4 {
		dbs, err := r.dec.DecodeArrayLen()
		if err != nil || dbs < 0 || dbs > maxHintDBs {
			return nil, r.corrupt("bad header key counts")
		}
		for i := 0; i < dbs; i++ {
			k, err := r.dec.DecodeInt64()
			if err != nil || k < 0 {
				return nil, r.corrupt("bad header key counts")
			}
			r.hdr.Keys = append(r.hdr.Keys, k)
		}
	}
	if n >= 5 {
		if r.hdr.WithLog, err = r.dec.DecodeBool(); err != nil {
			return nil, r.corrupt("bad header log flag")
		}
	}
	for i := 5; i < n; i++ {
		if err := r.dec.Skip(); err != nil {
			return nil, r.corrupt("bad header")
		}
	}
	return r, nil
}

// Header returns the file's header.
func (r *Reader) Header() Header { return r.hdr }

// Keys returns the number of keys read so far.
func (r *Reader) Keys() uint64 { return r.keys }

// pos is the offset of the next unread byte.
func (r *Reader) pos() int64 { return r.cnt.n - int64(r.br.Buffered()) }

func (r *Reader) remaining() int64 { return r.size - r.pos() }

func (r *Reader) corrupt(msg string) error { return r.corruptAt(r.pos(), msg) }

func (r *Reader) corruptAt(off int64, msg string) error {
	return &CorruptError{Path: r.path, Offset: off, Msg: msg}
}

// fail records a decoding error as corruption at the current position.
func (r *Reader) fail(what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return r.corrupt("truncated file (" + what + ")")
	}
	if err != nil {
		return r.corrupt(what + ": " + err.Error())
	}
	return r.corrupt(what)
}

// Next returns the next key or mark, io.EOF once the end record has been
// read and the checksum verified, or a *CorruptError. The returned Record
// is only valid until the next call.
func (r *Reader) Next() (*Record, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.done {
		return nil, io.EOF
	}
	rec, err := r.next()
	if err != nil {
		r.err = err
		return nil, err
	}
	if rec == nil {
		r.done = true
		return nil, io.EOF
	}
	return rec, nil
}

func (r *Reader) next() (*Record, error) {
	for {
		start := r.pos()
		n, err := r.dec.DecodeArrayLen()
		if err != nil || n < 1 {
			return nil, r.fail("bad record", err)
		}
		kind, err := r.dec.DecodeInt64()
		if err != nil {
			return nil, r.fail("bad record kind", err)
		}
		switch kind {
		case recEnd:
			return nil, r.end(n, start)
		case recDB:
			if n != 2 {
				return nil, r.corruptAt(start, "bad database record")
			}
			db, err := r.dec.DecodeInt64()
			if err != nil || db < 0 || db > math.MaxInt32 {
				return nil, r.fail("bad database index", err)
			}
			r.db = int(db)
		case recKey:
			if n != 5 {
				return nil, r.corruptAt(start, "bad key record")
			}
			if r.db < 0 {
				return nil, r.corruptAt(start, "key record before any database record")
			}
			return r.key()
		case recMark:
			if n != 4 {
				return nil, r.corruptAt(start, "bad mark record")
			}
			return r.mark()
		case recHistory:
			if n != 4 && n != 7 {
				return nil, r.corruptAt(start, "bad history record")
			}
			return r.history(n)
		case recFunction:
			if n != 2 {
				return nil, r.corruptAt(start, "bad function record")
			}
			code, err := r.bin("function library code")
			if err != nil {
				return nil, err
			}
			r.funcs++
			return &Record{IsFunction: true, Function: string(code)}, nil
		default:
			return nil, r.corruptAt(start, fmt.Sprintf("unknown record kind %d", kind))
		}
	}
}

// end checks the end record's counts, that nothing follows it and the
// checksum.
func (r *Reader) end(n int, start int64) error {
	if n < 3 || n > 5 {
		return r.corruptAt(start, "bad end record")
	}
	keys, err := r.dec.DecodeUint64()
	if err != nil {
		return r.fail("bad end record", err)
	}
	marks, err := r.dec.DecodeUint64()
	if err != nil {
		return r.fail("bad end record", err)
	}
	if keys != r.keys || marks != r.mks {
		return r.corruptAt(start, fmt.Sprintf("end record counts %d keys and %d marks, the file holds %d and %d", keys, marks, r.keys, r.mks))
	}
	// Files without history end with [0, keys, marks], files without
	// function libraries with [0, keys, marks, history] or that.
	var hist, funcs uint64
	if n >= 4 {
		if hist, err = r.dec.DecodeUint64(); err != nil {
			return r.fail("bad end record", err)
		}
	}
	if hist != r.hist {
		return r.corruptAt(start, fmt.Sprintf("end record counts %d history messages, the file holds %d", hist, r.hist))
	}
	if n == 5 {
		if funcs, err = r.dec.DecodeUint64(); err != nil {
			return r.fail("bad end record", err)
		}
	}
	if funcs != r.funcs {
		return r.corruptAt(start, fmt.Sprintf("end record counts %d function libraries, the file holds %d", funcs, r.funcs))
	}
	if r.pos() != r.size {
		return r.corrupt("unexpected data after the end record")
	}
	if _, err := io.Copy(io.Discard, r.br); err != nil {
		return r.fail("read", err)
	}
	var sum [4]byte
	if _, err := r.src.ReadAt(sum[:], r.size); err != nil {
		return r.corruptAt(r.size, "cannot read checksum: "+err.Error())
	}
	if got, want := r.cnt.crc.Sum32(), binary.BigEndian.Uint32(sum[:]); got != want {
		return r.corruptAt(r.size, fmt.Sprintf("checksum mismatch (file says %08x, contents hash to %08x)", want, got))
	}
	return nil
}

// bin reads a byte string, refusing lengths the rest of the file cannot
// hold before allocating.
func (r *Reader) bin(what string) ([]byte, error) {
	n, err := r.dec.DecodeBytesLen()
	if err != nil || n < 0 {
		return nil, r.fail("bad "+what, err)
	}
	if int64(n) > r.remaining() {
		return nil, r.corrupt(fmt.Sprintf("%s length %d runs past the end of the file", what, n))
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r.br, b); err != nil {
		return nil, r.fail(what, err)
	}
	return b, nil
}

// arrayLen reads a collection length, refusing counts the rest of the file
// cannot hold.
func (r *Reader) arrayLen(what string, min int64) (int, error) {
	n, err := r.dec.DecodeArrayLen()
	if err != nil || n < 0 {
		return 0, r.fail("bad "+what, err)
	}
	if int64(n)*min > r.remaining() {
		return 0, r.corrupt(fmt.Sprintf("%s of %d elements runs past the end of the file", what, n))
	}
	return n, nil
}

func (r *Reader) mark() (*Record, error) {
	id, err := r.bin("mark client id")
	if err != nil {
		return nil, err
	}
	high, err := r.dec.DecodeUint64()
	if err != nil {
		return nil, r.fail("bad mark", err)
	}
	seen, err := r.dec.DecodeInt64()
	if err != nil {
		return nil, r.fail("bad mark", err)
	}
	r.mks++
	return &Record{IsMark: true, Mark: Marks{ClientID: string(id), High: high, LastSeen: seen}}, nil
}

// history reads a history record of n elements after its kind.
func (r *Reader) history(n int) (*Record, error) {
	var h History
	var err error
	if h.Channel, err = r.bin("history channel"); err != nil {
		return nil, err
	}
	if h.Time, err = r.dec.DecodeInt64(); err != nil {
		return nil, r.fail("bad history time", err)
	}
	if h.Payload, err = r.bin("history payload"); err != nil {
		return nil, err
	}
	if n == 7 {
		h.Realtime = true
		id, err := r.bin("history connection id")
		if err != nil {
			return nil, err
		}
		h.ConnectionID = string(id)
		name, ok, err := r.binOrNil("history name")
		if err != nil {
			return nil, err
		}
		h.Name, h.HasName = string(name), ok
		if h.Data, _, err = r.binOrNil("history data"); err != nil {
			return nil, err
		}
	}
	r.hist++
	return &Record{IsHistory: true, History: h}, nil
}

// binOrNil reads a byte string or nil (ok false).
func (r *Reader) binOrNil(what string) ([]byte, bool, error) {
	code, err := r.dec.PeekCode()
	if err != nil {
		return nil, false, r.fail("bad "+what, err)
	}
	if code == mpNil {
		_ = r.dec.DecodeNil()
		return nil, false, nil
	}
	b, err := r.bin(what)
	return b, err == nil, err
}

func (r *Reader) key() (*Record, error) {
	start := r.pos()
	t, err := r.dec.DecodeInt64()
	if err != nil {
		return nil, r.fail("bad type tag", err)
	}
	key, err := r.binKept("key")
	if err != nil {
		return nil, err
	}
	var expire int64
	code, err := r.dec.PeekCode()
	if err != nil {
		return nil, r.fail("bad expiry", err)
	}
	if code == 0xc0 {
		_ = r.dec.DecodeNil()
	} else if expire, err = r.dec.DecodeInt64(); err != nil || expire <= 0 {
		return nil, r.fail("bad expiry", err)
	}
	e := r.newEntry()
	switch Tag(t) {
	case TagString:
		e.Str, err = r.binKept("string value")
	case TagList:
		e.Obj, err = r.list()
	case TagHash:
		e.Obj, err = r.hash()
	case TagSet:
		e.Obj, err = r.set()
	case TagZSet:
		e.Obj, err = r.zset()
	case TagJSON:
		e.Obj, err = r.json()
	case TagRateLimit:
		e.Obj, err = r.ratelimit()
	case TagStream:
		e.Obj, err = r.stream()
	default:
		if t >= 0 && t < int64(len(tagNames)) {
			return nil, r.corruptAt(start, fmt.Sprintf("values of type %s (tag %d) are not supported by this build", Tag(t), t))
		}
		return nil, r.corruptAt(start, fmt.Sprintf("unknown type tag %d", t))
	}
	if err != nil {
		return nil, err
	}
	r.keys++
	r.rec = Record{DB: r.db, Key: key, Entry: e, Expire: expire}
	return &r.rec, nil
}

func (r *Reader) hash() (keyspace.Object, error) {
	n, err := r.arrayLen("hash", 2)
	if err != nil {
		return nil, err
	}
	if n == 0 || n%2 != 0 {
		return nil, r.corrupt(fmt.Sprintf("hash with %d elements", n))
	}
	pairs := make([][]byte, n)
	for i := range pairs {
		what := "hash field"
		if i%2 == 1 {
			what = "hash value"
		}
		if pairs[i], err = r.bin(what); err != nil {
			return nil, err
		}
	}
	h := keyspace.NewHash()
	if h.SetPairs(pairs, keyspace.DefaultHashLimits()) != n/2 {
		return nil, r.corrupt("duplicate hash field")
	}
	return h, nil
}

func (r *Reader) list() (keyspace.Object, error) {
	n, err := r.arrayLen("list", 1)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, r.corrupt("empty list")
	}
	l := keyspace.NewList(keyspace.ListMaxListpackSize)
	for i := 0; i < n; i++ {
		v, err := r.bin("list element")
		if err != nil {
			return nil, err
		}
		l.PushBack(v)
	}
	return l, nil
}

func (r *Reader) set() (keyspace.Object, error) {
	n, err := r.arrayLen("set", 1)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, r.corrupt("empty set")
	}
	s := keyspace.NewSet()
	for i := 0; i < n; i++ {
		m, err := r.bin("set member")
		if err != nil {
			return nil, err
		}
		if !s.Add(m, keyspace.SetMaxIntsetEntries) {
			return nil, r.corrupt("duplicate set member")
		}
	}
	return s, nil
}

func (r *Reader) zset() (keyspace.Object, error) {
	n, err := r.arrayLen("zset", 2)
	if err != nil {
		return nil, err
	}
	if n == 0 || n%2 != 0 {
		return nil, r.corrupt(fmt.Sprintf("zset with %d elements", n))
	}
	z := keyspace.NewZSet()
	for i := 0; i < n; i += 2 {
		m, err := r.bin("zset member")
		if err != nil {
			return nil, err
		}
		score, err := r.dec.DecodeFloat64()
		if err != nil {
			return nil, r.fail("bad zset score", err)
		}
		if math.IsNaN(score) {
			return nil, r.corrupt("zset score is NaN")
		}
		if !z.Add(m, score, keyspace.DefaultZLimits()) {
			return nil, r.corrupt("duplicate zset member")
		}
	}
	return z, nil
}

// Load reads the whole snapshot at path into ks, which must be empty,
// calling mark for every DEDUP mark. Keys whose expiry is before now (unix
// ms) are skipped unless keepExpired is set. It returns the header and the number of keys loaded
// and skipped. On error ks holds a partial image and must be discarded.
// Channel history messages are skipped; LoadWith hands them over.
func Load(path string, ks *keyspace.Keyspace, mark func(Marks), now int64, keepExpired bool) (h Header, loaded, expired int64, err error) {
	return LoadWith(path, ks, Hooks{Mark: mark}, now, keepExpired)
}

// Hooks receive what a snapshot holds besides keys. Either may be nil.
type Hooks struct {
	// Mark is called for every DEDUP mark.
	Mark func(Marks)
	// History is called for every channel history message, each
	// channel's oldest first; the message is the caller's to keep.
	History func(History)
	// Function is called for every function library with its code; an
	// error it returns (the library does not load) stops the load.
	Function func(code string) error
}

// LoadWith is Load calling hooks for the marks and the channel history.
func LoadWith(path string, ks *keyspace.Keyspace, hooks Hooks, now int64, keepExpired bool) (h Header, loaded, expired int64, err error) {
	mark := hooks.Mark
	r, f, err := Open(path)
	if err != nil {
		return h, 0, 0, err
	}
	defer f.Close()
	h = r.Header()
	// Decoding and inserting overlap (keyspace.Loader).
	ld := keyspace.NewLoader(ks)
	clock := ks.Clock()
	// Size the maps once from the header's counts. A hint is only a hint:
	// it is capped by what the file could hold, and ignored for databases
	// that already have keys.
	for i, k := range h.Keys {
		if i < len(ks.DBs) && k > 0 {
			ks.DBs[i].Reserve(int(min(k, r.size/4)))
		}
	}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return h, loaded, expired, duplicate(path, ld.Close())
		}
		if err != nil {
			ld.Close()
			return h, loaded, expired, err
		}
		if rec.IsMark {
			if mark != nil {
				mark(rec.Mark)
			}
			continue
		}
		if rec.IsHistory {
			if hooks.History != nil {
				hooks.History(rec.History)
			}
			continue
		}
		if rec.IsFunction {
			if hooks.Function != nil {
				if err := hooks.Function(rec.Function); err != nil {
					ld.Close()
					return h, loaded, expired, fmt.Errorf("%s: %w", path, err)
				}
			}
			continue
		}
		if rec.DB >= len(ks.DBs) {
			ld.Close()
			return h, loaded, expired, fmt.Errorf("%s: the snapshot holds database %d but the server has %d databases (--databases)", path, rec.DB, len(ks.DBs))
		}
		if rec.Expire != 0 && rec.Expire <= now && !keepExpired {
			expired++
			continue
		}
		rec.Entry.Atime = clock
		// The key's bytes live in the reader's arena and are never
		// written again, so the map can keep them without a copy.
		if err := ld.Add(rec.DB, unsafe.String(unsafe.SliceData(rec.Key), len(rec.Key)), rec.Entry, rec.Expire, r.pos()); err != nil {
			return h, loaded, expired, duplicate(path, ld.Close())
		}
		loaded++
	}
}

// duplicate turns the loader's report of a key found twice into a
// corruption error naming the file; off is the end of the second record.
func duplicate(path string, err error) error {
	var d *keyspace.DuplicateError
	if errors.As(err, &d) {
		return &CorruptError{Path: path, Offset: d.Offset, Msg: d.Error() + " (the record ending here holds it a second time)"}
	}
	return err
}
