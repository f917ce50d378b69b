// Package snapshot is recached's persistence format: a versioned msgpack
// snapshot of every database and the DEDUP marks (dump.rcd), and the
// append-only log of effects written between two snapshots
// (appendonly.<generation>.aof). FORMAT.md beside this file is the normative
// description of both; this package writes, reads, checks and repairs them.
//
// Every snapshot file a released version wrote must load forever: type tags
// and record kinds are only ever appended, never renumbered, and the
// committed fixture in testdata/ is loaded by a test that checks its exact
// contents.
package snapshot

import (
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
)

// Version is the snapshot and log format version this package writes. A
// reader accepts every version up to it.
const Version = 1

// SnapshotMagic opens every snapshot file; LogMagic opens every log file.
const (
	SnapshotMagic = "RECACHED-SNAPSHOT\n"
	LogMagic      = "RECACHED-LOG\n"
)

// File names inside the data directory.
const (
	// SnapshotName is the snapshot's file name.
	SnapshotName = "dump.rcd"
	logPrefix    = "appendonly."
	logSuffix    = ".aof"
)

// Tag is a value type as the format numbers it. Tags are append-only: a
// number once given to a type is never reused or changed.
type Tag uint8

// The type tags.
const (
	TagString    Tag = 0
	TagList      Tag = 1
	TagSet       Tag = 2
	TagZSet      Tag = 3
	TagHash      Tag = 4
	TagJSON      Tag = 5
	TagRateLimit Tag = 6
	TagStream    Tag = 7
)

var tagNames = [...]string{"string", "list", "set", "zset", "hash", "json", "ratelimit", "stream"}

// String names the tag as TYPE would.
func (t Tag) String() string {
	if int(t) < len(tagNames) {
		return tagNames[t]
	}
	return fmt.Sprintf("tag(%d)", uint8(t))
}

// Snapshot record kinds: the first element of every record array.
// Append-only, like the tags.
const (
	recEnd  = 0 // [0, keys, marks]: last record, followed by the checksum
	recDB   = 1 // [1, db]: the keys that follow belong to database db
	recKey  = 2 // [2, tag, key, expire-ms or nil, value]
	recMark = 3 // [3, client-id, high, last-seen-ms]
	// [4, channel, time-ns, payload] or [4, channel, time-ns, payload,
	// connection-id, name or nil, data or nil]: one channel history message
	recHistory = 4
	// [5, code]: one function library, the code FUNCTION LOAD was given
	recFunction = 5
)

// Log record kinds.
const (
	logHeader      = 0 // [0, version, generation, created-ms]: the first record
	logCommand     = 1 // [1, db, arg0, arg1, …]: one effect, replayed as a command
	logMark        = 2 // [2, client-id, high, last-seen-ms]: a DEDUP mark moved
	logHistory     = 3 // as recHistory: one message recorded in a channel's history
	logUnitCommand = 4 // [4, unit, db, arg0, …]: one effect of a transaction (unit), replayed at its end
	logUnitEnd     = 5 // [5, unit]: the transaction's last effect has been logged
)

// Marks is one DEDUP client's high-water mark: the highest wire id it has
// executed and when it was last seen (unix ms), for the 24 h sweep.
type Marks struct {
	ClientID string
	High     uint64
	LastSeen int64
}

// History is one message of a channel's history (SPEC section 9), kept
// for Blackevin rewind: snapshot record kind 4, log record kind 3.
type History struct {
	Channel []byte
	// Time is when the server accepted the publish, in unix ns.
	Time int64
	// Payload is what RESP subscribers received.
	Payload []byte
	// Realtime is set for a Blackevin Publish, which also keeps the
	// publishing connection's id, its name (HasName: it had one) and its
	// data (JSON text; nil: none).
	Realtime     bool
	ConnectionID string
	Name         string
	HasName      bool
	Data         []byte
}

// Header is what a snapshot or log file says about itself.
type Header struct {
	// Version is the format version the file was written with.
	Version int
	// Generation numbers snapshots; a log of generation g holds the effects
	// that follow the snapshot of generation g.
	Generation uint64
	// Created is when the file was started, in unix ms.
	Created int64
	// Keys holds, for a snapshot, how many keys each database had when the
	// save started: a hint that lets loading size the maps once instead of
	// growing them. Files without it load the same, only slower.
	Keys []int64
	// WithLog is set on a snapshot whose generation's log was created
	// before it (the append-only log was on): the two belong together, and
	// a start that finds the snapshot without that log refuses to go on
	// rather than lose the writes the log held.
	WithLog bool
}

// castagnoli is the CRC-32C table; the checksums of both formats use it.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CorruptError reports a damaged or unreadable file: which one, where and
// what is wrong with it.
type CorruptError struct {
	Path   string
	Offset int64
	Msg    string
	// reported is set once Check has written the error to its report.
	reported bool
}

// Error names the file and the byte offset.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s: corrupt at byte offset %d: %s", e.Path, e.Offset, e.Msg)
}

// ErrNotExist is returned when the file to read does not exist.
var ErrNotExist = errors.New("snapshot: file does not exist")

// LogName returns the file name of the log of generation gen.
func LogName(gen uint64) string {
	return fmt.Sprintf("%s%d%s", logPrefix, gen, logSuffix)
}

// ParseLogName returns the generation a log file name carries.
func ParseLogName(name string) (uint64, bool) {
	if len(name) <= len(logPrefix)+len(logSuffix) || name[:len(logPrefix)] != logPrefix || name[len(name)-len(logSuffix):] != logSuffix {
		return 0, false
	}
	digits := name[len(logPrefix) : len(name)-len(logSuffix)]
	g, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || digits[0] == '+' || strconv.FormatUint(g, 10) != digits {
		return 0, false
	}
	return g, true
}
