package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// A log file is LogMagic followed by frames. A frame is a 12-byte head, the
// payload's length (uint32, little endian), the CRC-32C of those four bytes
// and the CRC-32C of the payload, then the payload: one msgpack array whose
// first element is the record kind. The first frame is the header record.
const frameHead = 12

// maxPayload bounds one log record; a longer length is corruption.
const maxPayload = 1 << 30

// appendFrame appends a frame holding the payload that fill appends.
func appendFrame(dst []byte, fill func([]byte) []byte) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, frameHead)...)
	dst = fill(dst)
	payload := dst[start+frameHead:]
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(dst[start+4:], crc32.Checksum(dst[start:start+4], castagnoli))
	binary.LittleEndian.PutUint32(dst[start+8:], crc32.Checksum(payload, castagnoli))
	return dst
}

// AppendCommand appends the log frame of one effect: the command args run
// in database db.
func AppendCommand(dst []byte, db int, args [][]byte) []byte {
	return appendFrame(dst, func(b []byte) []byte {
		b = mpArray(b, 2+len(args))
		b = mpUint(b, logCommand)
		b = mpUint(b, uint64(db))
		for _, a := range args {
			b = mpBin(b, a)
		}
		return b
	})
}

// AppendUnitCommand appends the log frame of one effect of transaction
// unit (an EXEC, a script, a DEDUP-wrapped command): the command args run
// in database db once the unit's end is read.
func AppendUnitCommand(dst []byte, unit uint64, db int, args [][]byte) []byte {
	return appendFrame(dst, func(b []byte) []byte {
		b = mpArray(b, 3+len(args))
		b = mpUint(b, logUnitCommand)
		b = mpUint(b, unit)
		b = mpUint(b, uint64(db))
		for _, a := range args {
			b = mpBin(b, a)
		}
		return b
	})
}

// AppendUnitEnd appends the log frame that ends transaction unit: every
// effect of it precedes the frame.
func AppendUnitEnd(dst []byte, unit uint64) []byte {
	return appendFrame(dst, func(b []byte) []byte {
		return mpUint(mpUint(mpArray(b, 2), logUnitEnd), unit)
	})
}

// AppendMark appends the log frame of one DEDUP mark.
func AppendMark(dst []byte, m Marks) []byte {
	return appendFrame(dst, func(b []byte) []byte {
		b = mpArray(b, 4)
		b = mpUint(b, logMark)
		b = mpBin(b, []byte(m.ClientID))
		b = mpUint(b, m.High)
		return mpInt(b, m.LastSeen)
	})
}

// AppendHistory appends the log frame of one channel history message.
func AppendHistory(dst []byte, h *History) []byte {
	return appendFrame(dst, func(b []byte) []byte {
		return mpHistory(b, logHistory, h)
	})
}

// mpHistory appends a history message as the array [kind, channel,
// time-ns, payload] or, for a realtime one, [kind, channel, time-ns,
// payload, connection-id, name or nil, data or nil].
func mpHistory(b []byte, kind uint64, h *History) []byte {
	if !h.Realtime {
		b = mpArray(b, 4)
	} else {
		b = mpArray(b, 7)
	}
	b = mpUint(b, kind)
	b = mpBin(b, h.Channel)
	b = mpInt(b, h.Time)
	b = mpBin(b, h.Payload)
	if !h.Realtime {
		return b
	}
	b = mpBinString(b, h.ConnectionID)
	if h.HasName {
		b = mpBinString(b, h.Name)
	} else {
		b = append(b, mpNil)
	}
	if h.Data != nil {
		b = mpBin(b, h.Data)
	} else {
		b = append(b, mpNil)
	}
	return b
}

// appendLogHeader appends the magic and the header frame of a new log.
func appendLogHeader(dst []byte, h Header) []byte {
	dst = append(dst, LogMagic...)
	return appendFrame(dst, func(b []byte) []byte {
		b = mpArray(b, 4)
		b = mpUint(b, logHeader)
		b = mpUint(b, Version)
		b = mpUint(b, h.Generation)
		return mpInt(b, h.Created)
	})
}

// The msgpack encoders the log uses: arrays, unsigned and signed integers
// and binary strings, in their shortest forms.

func mpArray(b []byte, n int) []byte {
	switch {
	case n < 16:
		return append(b, 0x90|byte(n))
	case n <= math.MaxUint16:
		return append(b, 0xdc, byte(n>>8), byte(n))
	}
	return binary.BigEndian.AppendUint32(append(b, 0xdd), uint32(n))
}

func mpUint(b []byte, v uint64) []byte {
	switch {
	case v < 128:
		return append(b, byte(v))
	case v <= math.MaxUint8:
		return append(b, 0xcc, byte(v))
	case v <= math.MaxUint16:
		return append(b, 0xcd, byte(v>>8), byte(v))
	case v <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xcf), v)
}

func mpInt(b []byte, v int64) []byte {
	if v >= 0 {
		return mpUint(b, uint64(v))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(v))
}

// mpNil is msgpack's nil.
const mpNil = 0xc0

// mpBinString is mpBin of a string's bytes, without converting it.
func mpBinString(b []byte, v string) []byte {
	switch {
	case len(v) <= math.MaxUint8:
		b = append(b, 0xc4, byte(len(v)))
	case len(v) <= math.MaxUint16:
		b = append(b, 0xc5, byte(len(v)>>8), byte(len(v)))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xc6), uint32(len(v)))
	}
	return append(b, v...)
}

func mpBin(b []byte, v []byte) []byte {
	switch {
	case len(v) <= math.MaxUint8:
		b = append(b, 0xc4, byte(len(v)))
	case len(v) <= math.MaxUint16:
		b = append(b, 0xc5, byte(len(v)>>8), byte(len(v)))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xc6), uint32(len(v)))
	}
	return append(b, v...)
}

// mpReader decodes the msgpack subset the log uses from one payload.
type mpReader struct {
	b   []byte
	off int
}

var errMsgpack = errors.New("malformed msgpack")

func (r *mpReader) need(n int) ([]byte, error) {
	if n < 0 || len(r.b)-r.off < n {
		return nil, errMsgpack
	}
	s := r.b[r.off : r.off+n]
	r.off += n
	return s, nil
}

func (r *mpReader) code() (byte, error) {
	s, err := r.need(1)
	if err != nil {
		return 0, err
	}
	return s[0], nil
}

func (r *mpReader) array() (int, error) {
	c, err := r.code()
	if err != nil {
		return 0, err
	}
	switch {
	case c >= 0x90 && c <= 0x9f:
		return int(c & 0x0f), nil
	case c == 0xdc:
		s, err := r.need(2)
		if err != nil {
			return 0, err
		}
		return int(binary.BigEndian.Uint16(s)), nil
	case c == 0xdd:
		s, err := r.need(4)
		if err != nil {
			return 0, err
		}
		return int(binary.BigEndian.Uint32(s)), nil
	}
	return 0, errMsgpack
}

func (r *mpReader) uint() (uint64, error) {
	c, err := r.code()
	if err != nil {
		return 0, err
	}
	if c < 0x80 {
		return uint64(c), nil
	}
	var n int
	switch c {
	case 0xcc:
		n = 1
	case 0xcd:
		n = 2
	case 0xce:
		n = 4
	case 0xcf:
		n = 8
	default:
		return 0, errMsgpack
	}
	s, err := r.need(n)
	if err != nil {
		return 0, err
	}
	var v uint64
	for _, x := range s {
		v = v<<8 | uint64(x)
	}
	return v, nil
}

func (r *mpReader) int() (int64, error) {
	c, err := r.code()
	if err != nil {
		return 0, err
	}
	if c == 0xd3 {
		s, err := r.need(8)
		if err != nil {
			return 0, err
		}
		return int64(binary.BigEndian.Uint64(s)), nil
	}
	r.off--
	v, err := r.uint()
	if err != nil || v > math.MaxInt64 {
		return 0, errMsgpack
	}
	return int64(v), nil
}

func (r *mpReader) bin() ([]byte, error) {
	c, err := r.code()
	if err != nil {
		return nil, err
	}
	var n int
	switch c {
	case 0xc4:
		s, err := r.need(1)
		if err != nil {
			return nil, err
		}
		n = int(s[0])
	case 0xc5:
		s, err := r.need(2)
		if err != nil {
			return nil, err
		}
		n = int(binary.BigEndian.Uint16(s))
	case 0xc6:
		s, err := r.need(4)
		if err != nil {
			return nil, err
		}
		n = int(binary.BigEndian.Uint32(s))
	default:
		return nil, errMsgpack
	}
	return r.need(n)
}

// binOrNil reads a byte string, or nil (reported by ok false).
func (r *mpReader) binOrNil() (v []byte, ok bool, err error) {
	if r.off < len(r.b) && r.b[r.off] == mpNil {
		r.off++
		return nil, false, nil
	}
	v, err = r.bin()
	return v, err == nil, err
}

// LogRecord is one decoded log record.
type LogRecord struct {
	// IsMark tells a mark (Mark is set) from a command (DB and Args set);
	// IsHistory a channel history message (History set).
	IsMark    bool
	IsHistory bool
	// Unit is the transaction a command belongs to (0: none, the command
	// stands alone); with IsUnitEnd the record ends that transaction and
	// holds nothing else.
	Unit      uint64
	IsUnitEnd bool
	// History's byte slices alias the payload buffer: they are valid
	// until the next read.
	History History
	DB      int
	// Args alias the payload buffer: they are valid until the next read.
	Args [][]byte
	Mark Marks
}

// decodeLogRecord decodes a command or mark payload into rec, reusing its
// Args slice.
func decodeLogRecord(p []byte, rec *LogRecord) error {
	r := mpReader{b: p}
	n, err := r.array()
	if err != nil || n < 1 {
		return fmt.Errorf("malformed record")
	}
	kind, err := r.uint()
	if err != nil {
		return fmt.Errorf("malformed record kind")
	}
	rec.Unit, rec.IsUnitEnd = 0, false
	switch kind {
	case logCommand, logUnitCommand:
		if kind == logUnitCommand {
			if rec.Unit, err = r.uint(); err != nil || rec.Unit == 0 {
				return fmt.Errorf("malformed transaction id")
			}
			n--
		}
		if n < 3 {
			return fmt.Errorf("command record without a command")
		}
		db, err := r.uint()
		if err != nil || db > math.MaxInt32 {
			return fmt.Errorf("malformed database index")
		}
		rec.IsMark, rec.IsHistory = false, false
		rec.Mark, rec.History = Marks{}, History{}
		rec.DB = int(db)
		rec.Args = rec.Args[:0]
		for i := 2; i < n; i++ {
			a, err := r.bin()
			if err != nil {
				return fmt.Errorf("malformed command argument %d", i-2)
			}
			rec.Args = append(rec.Args, a)
		}
	case logMark:
		if n != 4 {
			return fmt.Errorf("malformed mark record")
		}
		id, err := r.bin()
		if err != nil {
			return fmt.Errorf("malformed mark client id")
		}
		high, err := r.uint()
		if err != nil {
			return fmt.Errorf("malformed mark")
		}
		seen, err := r.int()
		if err != nil {
			return fmt.Errorf("malformed mark")
		}
		rec.IsMark, rec.IsHistory = true, false
		rec.DB = 0
		rec.Args = rec.Args[:0]
		rec.History = History{}
		rec.Mark = Marks{ClientID: string(id), High: high, LastSeen: seen}
	case logHistory:
		if err := r.history(n, &rec.History); err != nil {
			return err
		}
		rec.IsMark, rec.IsHistory = false, true
		rec.DB = 0
		rec.Args = rec.Args[:0]
		rec.Mark = Marks{}
	case logUnitEnd:
		if n != 2 {
			return fmt.Errorf("malformed transaction end record")
		}
		if rec.Unit, err = r.uint(); err != nil || rec.Unit == 0 {
			return fmt.Errorf("malformed transaction id")
		}
		rec.IsMark, rec.IsHistory, rec.IsUnitEnd = false, false, true
		rec.DB = 0
		rec.Args = rec.Args[:0]
		rec.Mark, rec.History = Marks{}, History{}
	case logHeader:
		return fmt.Errorf("header record in the middle of the log")
	default:
		return fmt.Errorf("unknown record kind %d", kind)
	}
	if r.off != len(p) {
		return fmt.Errorf("trailing bytes in record")
	}
	return nil
}

// history decodes the fields of a history record of n elements after its
// kind.
func (r *mpReader) history(n int, h *History) error {
	if n != 4 && n != 7 {
		return fmt.Errorf("malformed history record")
	}
	var err error
	*h = History{Realtime: n == 7}
	if h.Channel, err = r.bin(); err != nil {
		return fmt.Errorf("malformed history channel")
	}
	if h.Time, err = r.int(); err != nil {
		return fmt.Errorf("malformed history time")
	}
	if h.Payload, err = r.bin(); err != nil {
		return fmt.Errorf("malformed history payload")
	}
	if n == 4 {
		return nil
	}
	id, err := r.bin()
	if err != nil {
		return fmt.Errorf("malformed history connection id")
	}
	h.ConnectionID = string(id)
	name, ok, err := r.binOrNil()
	if err != nil {
		return fmt.Errorf("malformed history name")
	}
	h.Name, h.HasName = string(name), ok
	data, ok, err := r.binOrNil()
	if err != nil {
		return fmt.Errorf("malformed history data")
	}
	if ok {
		h.Data = data
	}
	return nil
}

// decodeLogHeader decodes the header record's payload.
func decodeLogHeader(p []byte) (Header, error) {
	var h Header
	r := mpReader{b: p}
	n, err := r.array()
	if err != nil || n < 4 {
		return h, fmt.Errorf("malformed header record")
	}
	kind, err := r.uint()
	if err != nil || kind != logHeader {
		return h, fmt.Errorf("the first record is not a header")
	}
	v, err := r.uint()
	if err != nil {
		return h, fmt.Errorf("malformed header record")
	}
	if v < 1 || v > Version {
		return h, fmt.Errorf("unsupported format version %d (this build reads versions 1 to %d)", v, Version)
	}
	h.Version = int(v)
	if h.Generation, err = r.uint(); err != nil {
		return h, fmt.Errorf("malformed header record")
	}
	if h.Created, err = r.int(); err != nil {
		return h, fmt.Errorf("malformed header record")
	}
	return h, nil
}
