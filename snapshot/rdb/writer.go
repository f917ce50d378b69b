package rdb

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/recached/recached/server/keyspace"
)

// Thresholds below which the writer uses the compact encodings, Redis
// 7.0's defaults (hash-max-listpack-*, zset-max-listpack-*,
// list-max-listpack-size -2).
const (
	maxListpackEntries = 128
	maxListpackValue   = 64
	listNodeBytes      = 8 << 10
	compressMin        = 20 // Redis compresses strings longer than this
)

// ErrUnsupported is returned for a value RDB has no type for (JSON
// documents, rate limiters: Redis keeps such values in modules).
type ErrUnsupported struct{ Type keyspace.Type }

func (e ErrUnsupported) Error() string {
	return fmt.Sprintf("rdb: values of type %s have no RDB encoding", e.Type)
}

// Writer writes an RDB file of version 10, as Redis 7.0 does: a header,
// AUX fields, function libraries, per database SELECTDB and RESIZEDB then
// its keys, EOF and the CRC-64 of it all. It is not safe for concurrent
// use.
type Writer struct {
	w   *bufio.Writer
	crc uint64
	buf []byte
	err error
	db  int
}

// NewWriter writes the header and AUX fields of an RDB file to w.
// aux are extra AUX fields after redis-ver, redis-bits and ctime.
func NewWriter(w io.Writer, ctime int64, aux ...[2]string) *Writer {
	wr := &Writer{w: bufio.NewWriterSize(w, 256<<10), db: -1}
	b := append(wr.buf[:0], "REDIS0010"...)
	fields := append([][2]string{{"redis-ver", "7.0.15"}, {"redis-bits", "64"}, {"ctime", strconv.FormatInt(ctime, 10)}}, aux...)
	for _, f := range fields {
		b = append(b, opAux)
		b = appendString(b, []byte(f[0]), false)
		b = appendString(b, []byte(f[1]), false)
	}
	wr.buf = b
	wr.flush()
	return wr
}

func (w *Writer) flush() {
	if w.err == nil {
		w.crc = CRC64(w.crc, w.buf)
		_, w.err = w.w.Write(w.buf)
	}
	w.buf = w.buf[:0]
}

// Function writes one function library's code.
func (w *Writer) Function(code string) error {
	w.buf = append(w.buf, opFunction2)
	w.buf = appendString(w.buf, []byte(code), true)
	w.flush()
	return w.err
}

// SelectDB starts database db, which will get keys keys, expires of them
// with an expiry.
func (w *Writer) SelectDB(db int, keys, expires uint64) error {
	w.buf = append(w.buf, opSelectDB)
	w.buf = appendLen(w.buf, uint64(db))
	w.buf = append(w.buf, opResizeDB)
	w.buf = appendLen(w.buf, keys)
	w.buf = appendLen(w.buf, expires)
	w.db = db
	w.flush()
	return w.err
}

// Key writes one key of the current database; expire is the absolute
// expiry in unix ms, 0 for none. A value of a type RDB cannot hold is
// skipped with ErrUnsupported and nothing written (JSON documents and rate
// limiters are written, as AUX fields: extras.go).
func (w *Writer) Key(key []byte, e *keyspace.Entry, expire int64) error {
	if w.err != nil {
		return w.err
	}
	b, err := AppendRecord(w.buf, key, e, expire)
	if err != nil {
		return err
	}
	w.buf = b
	w.flush()
	return w.err
}

// Raw writes a key record AppendRecord encoded earlier, in the current
// database.
func (w *Writer) Raw(rec []byte) error {
	w.buf = append(w.buf, rec...)
	w.flush()
	return w.err
}

// AppendRecord appends the file record of one key (its expiry, type, key
// and value) to dst: what Key writes. A JSON document or a rate limiter is
// an AUX field (extras.go); any other value of a type RDB cannot hold is
// ErrUnsupported, dst unchanged.
func AppendRecord(dst, key []byte, e *keyspace.Entry, expire int64) ([]byte, error) {
	if b, ok := appendExtra(dst, key, e, expire); ok {
		return b, nil
	}
	b := dst
	if expire > 0 {
		b = append(b, opExpireMs)
		b = binary.LittleEndian.AppendUint64(b, uint64(expire))
	}
	n := len(b)
	b = append(b, 0)
	b = appendString(b, key, true)
	b, t, err := AppendValue(b, e)
	if err != nil {
		return dst, err
	}
	b[n] = t
	return b, nil
}

// Close writes the end of the file and its checksum and flushes.
func (w *Writer) Close() error {
	w.buf = append(w.buf, opEOF)
	w.flush()
	if w.err == nil {
		_, w.err = w.w.Write(binary.LittleEndian.AppendUint64(nil, w.crc))
	}
	if w.err == nil {
		w.err = w.w.Flush()
	}
	return w.err
}

// appendLen appends an RDB length.
func appendLen(b []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(b, byte(n))
	case n < 1<<14:
		return append(b, byte(n>>8)|len14<<6, byte(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, len32), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, len64), n)
}

// appendString appends s as an RDB string: as an integer when it is the
// canonical text of one that fits 32 bits, LZF-compressed when compress
// is set and that saves space, else as it is.
func appendString(b, s []byte, compress bool) []byte {
	if len(s) <= 11 && len(s) > 0 {
		if v, ok := canonicalInt(s); ok {
			switch {
			case v >= math.MinInt8 && v <= math.MaxInt8:
				return append(b, lenEnc<<6|encInt8, byte(v))
			case v >= math.MinInt16 && v <= math.MaxInt16:
				return binary.LittleEndian.AppendUint16(append(b, lenEnc<<6|encInt16), uint16(v))
			case v >= math.MinInt32 && v <= math.MaxInt32:
				return binary.LittleEndian.AppendUint32(append(b, lenEnc<<6|encInt32), uint32(v))
			}
		}
	}
	if compress && len(s) > compressMin {
		// The compressed form must save at least 4 bytes, as Redis requires.
		if c := lzfCompress(nil, s, len(s)-4); c != nil {
			b = appendLen(append(b, lenEnc<<6|encLZF), uint64(len(c)))
			b = appendLen(b, uint64(len(s)))
			return append(b, c...)
		}
	}
	return append(appendLen(b, uint64(len(s))), s...)
}

// canonicalInt parses s as Redis's string2ll does: the exact text of an
// int64, no sign on zero, no leading zeros, no spaces.
func canonicalInt(s []byte) (int64, bool) {
	if len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	v, err := strconv.ParseInt(string(s), 10, 64)
	if err != nil {
		return 0, false
	}
	var tmp [24]byte
	return v, string(strconv.AppendInt(tmp[:0], v, 10)) == string(s)
}
