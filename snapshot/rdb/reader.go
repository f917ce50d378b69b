package rdb

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/recached/recached/server/keyspace"
)

// Record is one key read from an RDB file.
type Record struct {
	DB    int
	Key   []byte
	Entry *keyspace.Entry
	// Expire is the absolute expiry in unix ms, 0 for none.
	Expire int64
	// Idle is the LRU idle time in seconds, -1 when the file has none;
	// Freq the LFU counter, -1 when it has none.
	Idle int64
	Freq int
	// Offset is where the key's record starts in the file.
	Offset int64
}

// Reader reads an RDB file held in memory, key by key. The footer's
// checksum is verified when Next reaches the end, so a caller must not
// trust what it read until Next has returned io.EOF.
type Reader struct {
	d       dec
	version int
	db      int
	done    bool
	rec     Record
	entries []keyspace.Entry

	// Aux holds the file's AUX fields (redis-ver, ctime, …) in order.
	Aux [][2]string
	// Functions holds the code of every function library in the file.
	Functions []string
	// Notes says what was skipped: module auxiliary data, empty keys.
	Notes []string
	// Resize, when set, hears every RESIZEDB hint: the number of keys and
	// of keys with an expiry the database is about to get.
	Resize func(db int, keys, expires uint64)
}

// NewReader starts reading the RDB file data; name names it in errors.
func NewReader(name string, data []byte) (*Reader, error) {
	r := &Reader{d: dec{b: data, name: name, chunked: true}}
	if len(data) < 9 || string(data[:5]) != "REDIS" {
		return nil, &CorruptError{Name: name, Offset: 0, Msg: "not an RDB file (no REDIS signature)"}
	}
	v, err := strconv.Atoi(string(data[5:9]))
	if err != nil || v < 1 {
		return nil, &CorruptError{Name: name, Offset: 5, Msg: fmt.Sprintf("bad RDB version %q", data[5:9])}
	}
	if v > MaxVersion {
		return nil, &CorruptError{Name: name, Offset: 5, Msg: fmt.Sprintf("RDB version %d is newer than this build reads (%d)", v, MaxVersion)}
	}
	r.version = v
	r.d.off = 9
	return r, nil
}

// Version returns the file's RDB version.
func (r *Reader) Version() int { return r.version }

// Offset returns the offset of the next byte to read.
func (r *Reader) Offset() int64 { return int64(r.d.off) }

func (r *Reader) newEntry() *keyspace.Entry {
	if len(r.entries) == 0 {
		r.entries = make([]keyspace.Entry, 1024)
	}
	e := &r.entries[0]
	r.entries = r.entries[1:]
	return e
}

// Next returns the next key, or io.EOF after the end of the file and a
// good checksum. The record and its key are reused by the next call; the
// entry is the caller's.
func (r *Reader) Next() (*Record, error) {
	if r.done {
		return nil, io.EOF
	}
	d := &r.d
	expire, idle, freq := int64(0), int64(-1), -1
	recStart := -1 // the first of the key's opcodes (expiry, idle time, …)
	for d.err == nil {
		start := d.off
		op := d.byte("opcode")
		if d.err != nil {
			break
		}
		switch op {
		case opEOF:
			r.footer()
			if d.err != nil {
				return nil, d.err
			}
			r.done = true
			return nil, io.EOF
		case opSelectDB:
			n := d.plainLen("database number")
			if d.err == nil && n >= 1<<16 {
				d.failAt(start, "database number %d out of range", n)
			}
			r.db = int(n)
		case opResizeDB:
			keys := d.plainLen("resize hint")
			exp := d.plainLen("resize hint")
			if d.err == nil && r.Resize != nil {
				r.Resize(r.db, keys, exp)
			}
		case opAux:
			k := d.str("aux field")
			k = append([]byte(nil), k...) // the value may reuse the integer buffer
			v := d.str("aux value")
			if d.err == nil && isExtra(k) {
				// A key of a type RDB has no type for (extras.go).
				d.ibuf = d.ibuf[:0]
				return r.extra(k, v, start)
			}
			if d.err == nil {
				r.Aux = append(r.Aux, [2]string{string(k), string(v)})
			}
			d.ibuf = d.ibuf[:0]
		case opModuleAux:
			id := d.plainLen("module id")
			whenOp := d.plainLen("module aux when opcode")
			d.plainLen("module aux when")
			if d.err == nil && whenOp != moduleOpUInt {
				d.failAt(start, "bad module aux data of module %s", moduleName(id))
			}
			d.skipModule()
			if d.err == nil {
				r.Notes = append(r.Notes, "skipped the auxiliary data of module "+moduleName(id))
			}
		case opFunction:
			d.failAt(start, "pre-release function format not supported")
		case opFunction2:
			code := d.str("function library")
			if d.err == nil {
				r.Functions = append(r.Functions, string(code))
			}
		case opExpireSec:
			recStart = keyStart(recStart, start)
			expire = int64(int32(d.u32("expiry"))) * 1000
		case opExpireMs:
			recStart = keyStart(recStart, start)
			expire = int64(d.u64("expiry"))
		case opIdle:
			recStart = keyStart(recStart, start)
			idle = int64(d.plainLen("idle time"))
		case opFreq:
			recStart = keyStart(recStart, start)
			freq = int(d.byte("frequency"))
		default:
			recStart = keyStart(recStart, start)
			key := d.keptStr("key")
			if d.err != nil {
				break
			}
			e := r.newEntry()
			err := d.value(op, e)
			if errors.Is(err, errEmpty) {
				r.Notes = append(r.Notes, fmt.Sprintf("skipped the empty %s key %q at offset %d", typeName(op), key, start))
				expire, idle, freq, recStart = 0, -1, -1, -1
				continue
			}
			if err != nil {
				if ce, ok := err.(*CorruptError); ok {
					ce.Msg = fmt.Sprintf("key %q: %s", key, ce.Msg)
				}
				break
			}
			r.rec = Record{DB: r.db, Key: key, Entry: e, Expire: expire, Idle: idle, Freq: freq, Offset: int64(recStart)}
			return &r.rec, nil
		}
	}
	return nil, d.err
}

// footer checks the CRC-64 of every byte before it (RDB version 5 on); a
// checksum of 0 means the writer did not compute one.
func (r *Reader) footer() {
	d := &r.d
	if r.version < 5 {
		return
	}
	end := d.off
	sum := d.u64("checksum")
	if d.err != nil || sum == 0 {
		return
	}
	if got := CRC64(0, d.b[:end]); got != sum {
		d.failAt(end, "checksum %016x does not match the file's %016x", sum, got)
	}
}

// keyStart returns where a key's record starts: cur once one of its
// opcodes was seen, else the opcode at off.
func keyStart(cur, off int) int {
	if cur < 0 {
		return off
	}
	return cur
}
