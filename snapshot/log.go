package snapshot

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Fsync is the log's fsync policy, Redis's appendfsync.
type Fsync int

// The fsync policies.
const (
	// FsyncEverysec writes the log to the operating system at every Commit
	// and fsyncs it once a second (SyncNow, from a ticker).
	FsyncEverysec Fsync = iota
	// FsyncAlways writes and fsyncs at every Commit: an acknowledged write
	// is on disk. Concurrent Commits share one fsync.
	FsyncAlways
	// FsyncNo writes at every Commit and leaves flushing to the system.
	FsyncNo
)

// ParseFsync parses "always", "everysec" or "no".
func ParseFsync(s string) (Fsync, error) {
	switch s {
	case "always":
		return FsyncAlways, nil
	case "everysec":
		return FsyncEverysec, nil
	case "no":
		return FsyncNo, nil
	}
	return 0, fmt.Errorf("appendfsync must be always, everysec or no, not %q", s)
}

// CreateLog creates the log of generation gen in dir, holding only its
// header, durably (the file and the directory are fsynced), and returns it
// open for appending with its size. The file is written as
// appendonly.<gen>.aof.tmp and renamed; the returned file is opened by its
// final name, so that later errors name the file that exists.
func CreateLog(dir string, h Header) (*os.File, int64, error) {
	name := filepath.Join(dir, LogName(h.Generation))
	tmp := name + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return nil, 0, err
	}
	hdr := appendLogHeader(nil, h)
	_, err = f.Write(hdr)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err == nil {
		err = SyncDir(dir)
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, 0, fmt.Errorf("creating %s: %w", name, err)
	}
	f.Close()
	if f, err = os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return nil, 0, err
	}
	return f, int64(len(hdr)), nil
}

// OpenLogAppend opens an existing log for appending after cutting it to
// size bytes (its valid part, as a LogReader found it).
func OpenLogAppend(path string, size int64) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && st.Size() != size {
		if err = f.Truncate(size); err == nil {
			err = f.Sync()
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// LogWriter appends records to the current log file through an in-memory
// buffer. Appends are cheap (a mutex and a copy); Commit writes, and fsyncs
// as the policy asks, everything appended so far. It is safe for
// concurrent use.
//
// Lock order: see server/LOCKS.md.
type LogWriter struct {
	policy atomic.Int32 // an Fsync; CONFIG SET appendfsync changes it

	mu       sync.Mutex // guards buf and f
	buf      []byte
	f        *os.File
	appended atomic.Uint64 // bytes appended since the writer was made

	writeMu sync.Mutex // serializes writes to the file
	spare   []byte
	written atomic.Uint64 // bytes handed to the system
	size    atomic.Int64  // bytes in the current file

	syncMu     sync.Mutex // serializes fsyncs and file switches
	synced     atomic.Uint64
	switchedAt uint64

	// lastMark is the DEDUP mark appended last, so that the effects of
	// one wrapped command carry it once.
	lastClient string
	lastWire   uint64

	werr atomic.Pointer[error]

	// Fatal is called when a write or fsync fails under FsyncAlways, where
	// acknowledging a write that is not on disk would break the promise.
	// By default the error is only recorded.
	Fatal func(error)
	// OnSync, when set before the first append, is told how long each
	// fsync of the log took, for the fsync latency metric.
	OnSync func(time.Duration)
}

// NewLogWriter returns a writer appending to f, which holds size bytes.
func NewLogWriter(f *os.File, size int64, policy Fsync) *LogWriter {
	l := &LogWriter{f: f}
	l.policy.Store(int32(policy))
	l.size.Store(size)
	return l
}

// Policy returns the fsync policy.
func (l *LogWriter) Policy() Fsync { return Fsync(l.policy.Load()) }

// SetPolicy changes the fsync policy from the next Commit on (CONFIG SET
// appendfsync). Under always, that Commit fsyncs everything appended
// before it too.
func (l *LogWriter) SetPolicy(p Fsync) { l.policy.Store(int32(p)) }

// AppendCommand appends one effect: args run in database db.
func (l *LogWriter) AppendCommand(db int, args [][]byte) {
	l.add(func(b []byte) []byte { return AppendCommand(b, db, args) })
}

// AppendUnitCommand appends one effect of transaction unit (nonzero): a
// reader applies it only once it reads the unit's end (AppendUnitEnd), so
// that a crash in the middle of an EXEC or a script leaves none of its
// effects rather than some.
func (l *LogWriter) AppendUnitCommand(unit uint64, db int, args [][]byte) {
	l.add(func(b []byte) []byte { return AppendUnitCommand(b, unit, db, args) })
}

// AppendUnitEnd appends the end of transaction unit, after its last
// effect.
func (l *LogWriter) AppendUnitEnd(unit uint64) {
	l.add(func(b []byte) []byte { return AppendUnitEnd(b, unit) })
}

// add appends under the writer's lock what fill appends to the buffer.
func (l *LogWriter) add(fill func([]byte) []byte) {
	l.mu.Lock()
	n := len(l.buf)
	l.buf = fill(l.buf)
	l.appended.Add(uint64(len(l.buf) - n))
	l.mu.Unlock()
}

// AppendEffect appends an effect made under the DEDUP mark (clientID,
// wire): the mark, unless it is the one appended last, then the command
// (none when args is nil), as an effect of transaction unit when unit is
// not 0.
func (l *LogWriter) AppendEffect(unit uint64, db int, args [][]byte, clientID []byte, wire uint64, lastSeen int64) {
	l.add(func(b []byte) []byte {
		if wire != l.lastWire || string(clientID) != l.lastClient {
			l.lastClient, l.lastWire = string(clientID), wire
			b = AppendMark(b, Marks{ClientID: l.lastClient, High: wire, LastSeen: lastSeen})
		}
		switch {
		case args == nil:
		case unit != 0:
			b = AppendUnitCommand(b, unit, db, args)
		default:
			b = AppendCommand(b, db, args)
		}
		return b
	})
}

// AppendHistory appends one channel history message.
func (l *LogWriter) AppendHistory(h *History) {
	l.add(func(b []byte) []byte { return AppendHistory(b, h) })
}

// AppendMark appends one DEDUP mark.
func (l *LogWriter) AppendMark(m Marks) {
	l.add(func(b []byte) []byte { return AppendMark(b, m) })
}

// Size returns the current file's size, what is still buffered included.
func (l *LogWriter) Size() int64 {
	l.mu.Lock()
	n := len(l.buf)
	l.mu.Unlock()
	return l.size.Load() + int64(n)
}

// Buffered returns the bytes appended but not yet written.
func (l *LogWriter) Buffered() int64 {
	return int64(l.appended.Load() - l.written.Load())
}

// Err returns the last write or fsync error, nil once a later one
// succeeded.
func (l *LogWriter) Err() error {
	if p := l.werr.Load(); p != nil {
		return *p
	}
	return nil
}

func (l *LogWriter) setErr(err error) {
	if err == nil {
		if l.werr.Load() != nil {
			l.werr.Store(nil)
		}
		return
	}
	l.werr.Store(&err)
}

// writeOut writes the buffer to the current file. The caller holds
// writeMu. It returns the append count now written and the file. On error
// the data goes back to the front of the buffer and the file is cut back.
func (l *LogWriter) writeOut() (uint64, *os.File, error) {
	l.mu.Lock()
	out := l.buf
	l.buf = l.spare[:0]
	l.spare = nil
	target := l.appended.Load()
	f := l.f
	l.mu.Unlock()
	if len(out) == 0 {
		l.spare = out
		return target, f, nil
	}
	n, err := f.Write(out)
	if err != nil {
		if n > 0 {
			_ = f.Truncate(l.size.Load())
		}
		l.mu.Lock()
		l.buf = append(out, l.buf...)
		l.mu.Unlock()
		l.setErr(err)
		return 0, f, err
	}
	l.size.Add(int64(len(out)))
	l.written.Store(target)
	l.setErr(nil)
	if cap(out) <= 4<<20 {
		l.spare = out[:0]
	}
	return target, f, nil
}

// Commit makes everything appended so far as durable as the policy asks
// before it returns: written to the system (everysec, no: the data then
// survives the death of the process, as Redis writes its log before it
// replies) or written and fsynced (always). Transports call it once per
// batch of requests (an event-loop pass), before sending the replies or
// pushes of that batch; concurrent Commits share one write and one fsync.
// With nothing pending it costs two atomic loads.
func (l *LogWriter) Commit() {
	target := l.appended.Load()
	if l.Policy() != FsyncAlways {
		if l.written.Load() >= target {
			return
		}
		l.writeMu.Lock()
		if l.written.Load() < target {
			_, _, _ = l.writeOut()
		}
		l.writeMu.Unlock()
		return
	}
	if l.synced.Load() >= target {
		return
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.synced.Load() >= target {
		return
	}
	if err := l.syncLocked(); err != nil && l.Fatal != nil {
		l.Fatal(err)
	}
}

// syncLocked writes and fsyncs. The caller holds syncMu.
func (l *LogWriter) syncLocked() error {
	l.writeMu.Lock()
	n, f, err := l.writeOut()
	l.writeMu.Unlock()
	if err != nil {
		return err
	}
	if l.synced.Load() >= n {
		return nil
	}
	start := time.Now()
	if err := f.Sync(); err != nil {
		l.setErr(err)
		return err
	}
	if l.OnSync != nil {
		l.OnSync(time.Since(start))
	}
	l.setErr(nil)
	l.synced.Store(n)
	return nil
}

// SyncNow writes and fsyncs everything appended so far; the everysec
// ticker and shutdown call it.
func (l *LogWriter) SyncNow() error {
	if l.synced.Load() >= l.appended.Load() && l.Err() == nil {
		return nil
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	return l.syncLocked()
}

// BeginSwitch starts appending to next (holding size bytes) instead of the
// current file. Everything appended before the call is first written to
// the current file, which it returns; the caller must then call
// FinishSwitch with it. Appends are not blocked; Commits wait until
// FinishSwitch. On error nothing switched and FinishSwitch must not be
// called.
func (l *LogWriter) BeginSwitch(next *os.File, size int64) (*os.File, error) {
	l.syncMu.Lock()
	l.writeMu.Lock()
	n, old, err := l.writeOut()
	if err != nil {
		l.writeMu.Unlock()
		l.syncMu.Unlock()
		return nil, err
	}
	l.mu.Lock()
	l.f = next
	l.lastClient, l.lastWire = "", 0
	l.mu.Unlock()
	l.size.Store(size)
	l.switchedAt = n
	l.writeMu.Unlock()
	return old, nil
}

// FinishSwitch fsyncs and closes the previous file.
func (l *LogWriter) FinishSwitch(old *os.File) error {
	defer l.syncMu.Unlock()
	err := old.Sync()
	if cerr := old.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		l.setErr(err)
		return err
	}
	if l.synced.Load() < l.switchedAt {
		l.synced.Store(l.switchedAt)
	}
	return nil
}

// Close writes, fsyncs and closes the log.
func (l *LogWriter) Close() error {
	err := l.SyncNow()
	l.mu.Lock()
	f := l.f
	l.f = nil
	l.mu.Unlock()
	if f == nil {
		return err
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// LogReader reads a log record by record. A record cut short at the end of
// the file (a crash in the middle of a write) ends the log: Next returns
// io.EOF with Truncated set, and ValidEnd tells where the good part ends.
// Any other damage is a *CorruptError.
type LogReader struct {
	path string
	r    *bufio.Reader
	size int64
	off  int64 // offset of the next frame
	hdr  Header
	head [frameHead]byte
	buf  []byte
	rec  LogRecord
	err  error
	// Truncated is set once Next met a record cut short at the end.
	Truncated bool
	// Records counts the records read.
	Records int64
}

// OpenLog opens the log at path and reads its header.
func OpenLog(path string) (*LogReader, *os.File, error) {
	return openFile(path, func(f *os.File, size int64) (*LogReader, error) {
		return NewLogReader(path, f, size)
	})
}

// NewLogReader reads a log of size bytes from src; path names it in errors.
func NewLogReader(path string, src io.Reader, size int64) (*LogReader, error) {
	r := &LogReader{path: path, r: bufio.NewReaderSize(src, 64<<10), size: size}
	if size == 0 {
		return nil, r.corrupt(0, "empty file")
	}
	var magic [len(LogMagic)]byte
	if _, err := io.ReadFull(r.r, magic[:]); err != nil || string(magic[:]) != LogMagic {
		return nil, r.corrupt(0, "not a recached log (bad magic)")
	}
	r.off = int64(len(LogMagic))
	p, err := r.frame()
	if err == nil && p == nil {
		err = r.corrupt(r.off, "missing header record")
	}
	if err != nil {
		return nil, err
	}
	if r.hdr, err = decodeLogHeader(p); err != nil {
		return nil, r.corrupt(int64(len(LogMagic)), err.Error())
	}
	r.off += frameHead + int64(len(p))
	return r, nil
}

// Header returns the log's header.
func (r *LogReader) Header() Header { return r.hdr }

// ValidEnd returns the offset just past the last good record read.
func (r *LogReader) ValidEnd() int64 { return r.off }

func (r *LogReader) corrupt(off int64, msg string) error {
	return &CorruptError{Path: r.path, Offset: off, Msg: msg}
}

// zeroTail reports whether every remaining byte of the file is zero, which
// is how a torn final write can look after a system crash.
func (r *LogReader) zeroTail(consumed []byte) bool {
	for _, c := range consumed {
		if c != 0 {
			return false
		}
	}
	var b [4096]byte
	for {
		n, err := r.r.Read(b[:])
		for _, c := range b[:n] {
			if c != 0 {
				return false
			}
		}
		if err != nil {
			return true
		}
	}
}

// frame reads the next frame's payload: nil at the end of the file or of
// its valid part (Truncated set).
func (r *LogReader) frame() ([]byte, error) {
	rem := r.size - r.off
	if rem == 0 {
		return nil, nil
	}
	if rem < frameHead {
		r.Truncated = true
		return nil, nil
	}
	if _, err := io.ReadFull(r.r, r.head[:]); err != nil {
		return nil, r.corrupt(r.off, "read: "+err.Error())
	}
	n := binary.LittleEndian.Uint32(r.head[0:])
	if crc32.Checksum(r.head[0:4], castagnoli) != binary.LittleEndian.Uint32(r.head[4:]) {
		if r.zeroTail(r.head[:]) {
			r.Truncated = true
			return nil, nil
		}
		return nil, r.corrupt(r.off, "bad record length checksum")
	}
	if n > maxPayload {
		return nil, r.corrupt(r.off, fmt.Sprintf("record length %d exceeds the limit", n))
	}
	if int64(n) > rem-frameHead {
		r.Truncated = true
		return nil, nil
	}
	if cap(r.buf) < int(n) {
		r.buf = make([]byte, n)
	}
	p := r.buf[:n]
	if _, err := io.ReadFull(r.r, p); err != nil {
		return nil, r.corrupt(r.off, "read: "+err.Error())
	}
	if crc32.Checksum(p, castagnoli) != binary.LittleEndian.Uint32(r.head[8:]) {
		if r.off+frameHead+int64(n) == r.size && r.zeroTail(p) {
			r.Truncated = true
			return nil, nil
		}
		return nil, r.corrupt(r.off, "record checksum mismatch")
	}
	return p, nil
}

// Next returns the next record, or io.EOF at the end of the log (Truncated
// tells whether it ended inside a record). The record is valid until the
// next call.
func (r *LogReader) Next() (*LogRecord, error) {
	if r.err != nil {
		return nil, r.err
	}
	p, err := r.frame()
	if err == nil && p == nil {
		err = io.EOF
	}
	if err == nil {
		if derr := decodeLogRecord(p, &r.rec); derr != nil {
			err = r.corrupt(r.off, derr.Error())
		}
	}
	if err != nil {
		r.err = err
		return nil, err
	}
	r.off += frameHead + int64(len(p))
	r.Records++
	return &r.rec, nil
}
