package rdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unsafe"

	"github.com/recached/recached/server/keyspace"
)

// Dump returns the DUMP payload of e: its RDB type and value, the RDB
// version (2 bytes, little endian) and the CRC-64 of all that (8 bytes).
func Dump(e *keyspace.Entry) ([]byte, error) {
	b, t, err := AppendValue([]byte{0}, e)
	if err != nil {
		return nil, err
	}
	b[0] = t
	b = binary.LittleEndian.AppendUint16(b, Version)
	return binary.LittleEndian.AppendUint64(b, CRC64(0, b)), nil
}

// ErrPayload is RESTORE's error for a payload of a newer RDB version or a
// bad checksum, in Redis's words.
var ErrPayload = errors.New("ERR DUMP payload version or checksum are wrong")

// ErrBadFormat is RESTORE's error for a payload that does not decode, in
// Redis's words.
var ErrBadFormat = errors.New("ERR Bad data format")

// CheckPayload verifies a DUMP payload's footer: its RDB version is one
// this build reads (Redis 7.0 accepts up to 10) and its checksum matches.
// It returns the serialized value without the footer.
func CheckPayload(p []byte) ([]byte, error) {
	if len(p) < 10 {
		return nil, ErrPayload
	}
	n := len(p) - 10
	if v := binary.LittleEndian.Uint16(p[n:]); v > Version {
		return nil, ErrPayload
	}
	if CRC64(0, p[:n+2]) != binary.LittleEndian.Uint64(p[n+2:]) {
		return nil, ErrPayload
	}
	return p[:n], nil
}

// DecodeValue decodes a serialized value (a DUMP payload without its
// footer). Anything that does not decode, an empty collection or a module
// value, is ErrBadFormat; detail says why.
func DecodeValue(v []byte) (e *keyspace.Entry, detail error) {
	if len(v) == 0 {
		return nil, ErrBadFormat
	}
	d := dec{b: v, off: 1, name: "DUMP payload"}
	e = &keyspace.Entry{}
	if err := d.value(v[0], e); err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrBadFormat, err)
	}
	return e, nil
}

// Stats says what Load did.
type Stats struct {
	Loaded, Expired int64
	Version         int
	Aux             [][2]string
	// Functions holds the code of the file's function libraries, for the
	// caller to load into its function engine.
	Functions []string
	// Notes says what was skipped.
	Notes []string
}

// Load reads the RDB file at path into ks, whose databases must be
// empty. Keys whose expiry is not after now (unix ms) are dropped unless
// keepExpired. On error ks holds a partial image and must be discarded.
func Load(path string, ks *keyspace.Keyspace, now int64, keepExpired bool) (st Stats, err error) {
	data, unmap, err := mapFile(path)
	if err != nil {
		return st, err
	}
	defer unmap()
	defer readFaults()()
	r, err := NewReader(path, data)
	if err != nil {
		return st, err
	}
	st.Version = r.Version()
	// RESIZEDB comes before a database's keys, so no insert runs yet
	// when it sizes the maps.
	sized := make([]bool, len(ks.DBs))
	r.Resize = func(db int, keys, _ uint64) {
		if db < len(ks.DBs) && !sized[db] {
			sized[db] = true
			ks.DBs[db].Reserve(int(min(keys, uint64(len(data)/4))))
		}
	}
	clock := ks.Clock()
	// Decoding and inserting overlap (keyspace.Loader).
	ld := keyspace.NewLoader(ks)
	defer func() {
		if p := recover(); p != nil {
			ld.Close()
			err = faultError(path, p)
		}
	}()
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err == nil && rec.DB >= len(ks.DBs) {
			err = fmt.Errorf("%s: the file holds database %d but the server has %d databases (--databases)", path, rec.DB, len(ks.DBs))
		}
		if err != nil {
			ld.Close()
			return st, err
		}
		if rec.Expire != 0 && rec.Expire <= now && !keepExpired {
			st.Expired++
			continue
		}
		rec.Entry.Atime = clock
		// The key's bytes live in the reader's arena and are never written
		// again, so the map can keep them without a copy.
		if ld.Add(rec.DB, unsafe.String(unsafe.SliceData(rec.Key), len(rec.Key)), rec.Entry, rec.Expire, rec.Offset) != nil {
			break
		}
		st.Loaded++
	}
	if err := ld.Close(); err != nil {
		return st, duplicate(path, err)
	}
	st.Aux, st.Functions, st.Notes = r.Aux, r.Functions, r.Notes
	return st, nil
}

// duplicate turns the loader's report of a key found twice into an error
// naming the file and the offset.
func duplicate(path string, err error) error {
	var d *keyspace.DuplicateError
	if errors.As(err, &d) {
		return &CorruptError{Name: path, Offset: d.Offset, Msg: d.Error() + ": Redis refuses such a file too"}
	}
	return err
}
