// Package rdb reads and writes Redis's RDB format: the files Redis's SAVE
// and BGSAVE write (versions 1 to 10, Redis 2.x to 7.0) and the payloads of
// DUMP and RESTORE. It maps RDB values to and from the keyspace's types.
//
// RDB is an interchange format for recached: its own snapshots stay in the
// format of package snapshot.
package rdb

import (
	"fmt"
	"strconv"
)

// Version is the RDB version the writer produces, Redis 7.0's.
const Version = 10

// MaxVersion is the newest RDB version the reader accepts. Version 11 is
// Redis 7.2's (listpack sets, stream consumers' active time).
const MaxVersion = 11

// Opcodes that precede a key or stand on their own.
const (
	opFunction    = 246 // 7.0 release candidates' function format
	opFunction2   = 245
	opModuleAux   = 247
	opIdle        = 248
	opFreq        = 249
	opAux         = 250
	opResizeDB    = 251
	opExpireMs    = 252
	opExpireSec   = 253
	opSelectDB    = 254
	opEOF         = 255
	moduleOpEOF   = 0
	moduleOpSInt  = 1
	moduleOpUInt  = 2
	moduleOpFloat = 3
	moduleOpDbl   = 4
	moduleOpStr   = 5
)

// Value types: the byte before a key (and the first byte of a DUMP payload).
const (
	TypeString          = 0
	TypeList            = 1
	TypeSet             = 2
	TypeZSet            = 3
	TypeHash            = 4
	TypeZSet2           = 5
	TypeModule          = 6
	TypeModule2         = 7
	TypeHashZipmap      = 9
	TypeListZiplist     = 10
	TypeSetIntset       = 11
	TypeZSetZiplist     = 12
	TypeHashZiplist     = 13
	TypeListQuicklist   = 14
	TypeStreamListpacks = 15
	TypeHashListpack    = 16
	TypeZSetListpack    = 17
	TypeListQuicklist2  = 18
	TypeStreamListpack2 = 19
	TypeSetListpack     = 20
	TypeStreamListpack3 = 21
)

// Length encodings: the top two bits of a length's first byte.
const (
	len6     = 0
	len14    = 1
	len32    = 0x80
	len64    = 0x81
	lenEnc   = 3
	encInt8  = 0
	encInt16 = 1
	encInt32 = 2
	encLZF   = 3
)

// Quicklist-2 node containers.
const (
	containerPlain  = 1
	containerPacked = 2
)

// Stream listpack entry flags.
const (
	streamDeleted    = 1
	streamSameFields = 2
)

// CorruptError is a file or payload that does not decode: Name names it
// (a file's path, or "DUMP payload"), Offset is the byte where decoding
// failed.
type CorruptError struct {
	Name   string
	Offset int64
	Msg    string
}

func (e *CorruptError) Error() string {
	return e.Name + ": offset " + strconv.FormatInt(e.Offset, 10) + ": " + e.Msg
}

// typeName names a value type in errors.
func typeName(t byte) string {
	switch t {
	case TypeString:
		return "string"
	case TypeList, TypeListZiplist, TypeListQuicklist, TypeListQuicklist2:
		return "list"
	case TypeSet, TypeSetIntset, TypeSetListpack:
		return "set"
	case TypeZSet, TypeZSet2, TypeZSetZiplist, TypeZSetListpack:
		return "zset"
	case TypeHash, TypeHashZipmap, TypeHashZiplist, TypeHashListpack:
		return "hash"
	case TypeStreamListpacks, TypeStreamListpack2, TypeStreamListpack3:
		return "stream"
	case TypeModule, TypeModule2:
		return "module"
	}
	return fmt.Sprintf("unknown (%d)", t)
}
