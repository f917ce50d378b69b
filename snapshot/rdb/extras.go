package rdb

import (
	"encoding/binary"
	"fmt"

	"github.com/recached/recached/server/keyspace"
)

// Keys of the types RDB has no type for, JSON documents and rate
// limiters, are written as AUX fields, one per key, in the database
// section they belong to (after its SELECTDB):
//
//	AUX "recached-json"      <expire><key><the document's compact JSON text>
//	AUX "recached-ratelimit" <expire><key><tat><interval><burst>
//
// where expire is the absolute expiry in unix ms (0: none) and tat,
// interval and burst the limiter's state (keyspace.RateLimit), each 8
// bytes little endian, and key is its length as an unsigned varint then
// its bytes. Redis loads an AUX field it does not know by ignoring it
// (rdb.c: "we ignore fields we don't understand, as by AUX field
// contract"), so a redis-server replica or redis-server started on such a
// file loads every other key and leaves these out, as it must: it has no
// type for them. This package's Reader returns them as keys, so a
// recached replica's full sync carries them. A payload that does not
// decode is corruption.

// The AUX field names of the keys RDB has no type for.
const (
	auxJSON      = "recached-json"
	auxRateLimit = "recached-ratelimit"
)

// appendExtra appends the AUX record of a key of a type RDB has no type
// for; ok is false for any other value, dst unchanged.
func appendExtra(dst, key []byte, e *keyspace.Entry, expire int64) (b []byte, ok bool) {
	var name string
	v := binary.LittleEndian.AppendUint64(nil, uint64(expire))
	v = binary.AppendUvarint(v, uint64(len(key)))
	v = append(v, key...)
	switch o := e.Obj.(type) {
	case *keyspace.JSON:
		name = auxJSON
		v = o.AppendText(v)
	case *keyspace.RateLimit:
		name = auxRateLimit
		for _, n := range []int64{o.TAT, o.Interval, o.Burst} {
			v = binary.LittleEndian.AppendUint64(v, uint64(n))
		}
	default:
		return dst, false
	}
	b = append(dst, opAux)
	b = appendString(b, []byte(name), false)
	return appendString(b, v, true), true
}

// isExtra reports whether an AUX field's name is one of a key's.
func isExtra(name []byte) bool {
	return string(name) == auxJSON || string(name) == auxRateLimit
}

// extra decodes the AUX field of a key (isExtra) into a record of the
// current database; start is where the field begins in the file.
func (r *Reader) extra(name, v []byte, start int) (*Record, error) {
	bad := func(msg string) (*Record, error) {
		return nil, &CorruptError{Name: r.d.name, Offset: int64(start), Msg: "aux field " + string(name) + ": " + msg}
	}
	if len(v) < 8 {
		return bad("too short")
	}
	expire := int64(binary.LittleEndian.Uint64(v))
	n, w := binary.Uvarint(v[8:])
	if w <= 0 || n > uint64(len(v)-8-w) {
		return bad("bad key length")
	}
	key := append([]byte(nil), v[8+w:8+w+int(n)]...)
	body := v[8+w+int(n):]
	e := r.newEntry()
	switch string(name) {
	case auxJSON:
		doc, err := keyspace.ParseJSON(body)
		if err != nil {
			return bad("json document: " + err.Error())
		}
		e.Obj = doc
	default:
		if len(body) != 24 {
			return bad(fmt.Sprintf("rate limiter state of %d bytes", len(body)))
		}
		rl := &keyspace.RateLimit{
			TAT:      int64(binary.LittleEndian.Uint64(body)),
			Interval: int64(binary.LittleEndian.Uint64(body[8:])),
			Burst:    int64(binary.LittleEndian.Uint64(body[16:])),
		}
		if rl.TAT <= 0 || !(keyspace.Quota{Burst: rl.Burst, Interval: rl.Interval}).Valid() {
			return bad(fmt.Sprintf("invalid rate limiter state %d %d %d", rl.TAT, rl.Interval, rl.Burst))
		}
		e.Obj = rl
	}
	if expire < 0 {
		return bad("negative expiry")
	}
	r.rec = Record{DB: r.db, Key: key, Entry: e, Expire: expire, Idle: -1, Freq: -1, Offset: int64(start)}
	return &r.rec, nil
}
