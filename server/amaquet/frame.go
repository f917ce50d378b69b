package amaquet

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The frame header (seed 000): 24 bytes, big-endian.
const (
	// HeaderSize is the length of every frame's header.
	HeaderSize = 24
	// Version is the protocol version this server speaks.
	Version = 1
	// HardMaxPayload bounds --amaquet-max-payload.
	HardMaxPayload = 64 << 20
	// DefaultMaxPayload is --amaquet-max-payload's default.
	DefaultMaxPayload = 1 << 20
)

// magic is the first four bytes of every frame.
const magic = "AMQT"

// Kinds of frame.
const (
	KindRequest  = 1
	KindResponse = 2
	KindEvent    = 3
)

// Opcodes.
const (
	OpCommand     = 1
	OpHello       = 2
	OpAuth        = 3
	OpSubscribe   = 4
	OpUnsubscribe = 5
	OpCancel      = 6
)

// The error codes of SPEC section 10.
const (
	CodeBadRequest         = "BAD_REQUEST"
	CodeUnauthenticated    = "UNAUTHENTICATED"
	CodeForbidden          = "FORBIDDEN"
	CodeNotFound           = "NOT_FOUND"
	CodeUnknownCommand     = "UNKNOWN_COMMAND"
	CodeWrongType          = "WRONGTYPE"
	CodeCommandError       = "COMMAND_ERROR"
	CodeDuplicateRequest   = "DUPLICATE_REQUEST"
	CodeOverloaded         = "OVERLOADED"
	CodeCancelled          = "CANCELLED"
	CodeUnknownOpcode      = "UNKNOWN_OPCODE"
	CodeUnsupportedVersion = "UNSUPPORTED_VERSION"
	CodePayloadTooLarge    = "PAYLOAD_TOO_LARGE"
	CodeProtocolError      = "PROTOCOL_ERROR"
	CodeInternal           = "INTERNAL"
)

// Header is a frame's header.
type Header struct {
	Version  uint8
	Kind     uint8
	Flags    uint16
	Opcode   uint16
	Reserved uint16
	ID       uint64
	Length   uint32
}

// FrameError is a header the server cannot use: it answers it with Code
// and closes the connection.
type FrameError struct {
	Code string
	Msg  string
}

func (e *FrameError) Error() string { return e.Code + ": " + e.Msg }

// ParseHeader decodes and checks the 24 bytes of b, field by field, in the
// order of the seed's table. A header it rejects is returned too, with what
// it holds, so that the error response can carry the request ID and opcode
// as read.
func ParseHeader(b []byte, maxPayload uint32) (Header, *FrameError) {
	h := Header{
		Version:  b[4],
		Kind:     b[5],
		Flags:    binary.BigEndian.Uint16(b[6:]),
		Opcode:   binary.BigEndian.Uint16(b[8:]),
		Reserved: binary.BigEndian.Uint16(b[10:]),
		ID:       binary.BigEndian.Uint64(b[12:]),
		Length:   binary.BigEndian.Uint32(b[20:]),
	}
	switch {
	case string(b[:4]) != magic:
		return h, &FrameError{CodeProtocolError, fmt.Sprintf("bad magic %q", b[:4])}
	case h.Version != Version:
		return h, &FrameError{CodeUnsupportedVersion, fmt.Sprintf("protocol version %d is not supported (this server speaks %d)", h.Version, Version)}
	case h.Kind != KindRequest:
		return h, &FrameError{CodeProtocolError, fmt.Sprintf("frame kind %d: clients send requests (kind 1)", h.Kind)}
	case h.Flags != 0:
		return h, &FrameError{CodeProtocolError, fmt.Sprintf("flags 0x%04x: no flag is defined", h.Flags)}
	case h.Reserved != 0:
		return h, &FrameError{CodeProtocolError, "the reserved field must be zero"}
	case h.Length > maxPayload:
		return h, &FrameError{CodePayloadTooLarge, fmt.Sprintf("payload of %d bytes is over the limit of %d", h.Length, maxPayload)}
	}
	return h, nil
}

// AppendHeader appends a header of the given kind, opcode, id and payload
// length.
func AppendHeader(b []byte, kind uint8, op uint16, id uint64, n int) []byte {
	b = append(b, magic...)
	b = append(b, Version, kind, 0, 0)
	b = binary.BigEndian.AppendUint16(b, op)
	b = append(b, 0, 0)
	b = binary.BigEndian.AppendUint64(b, id)
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

// AppendFrame appends a whole frame.
func AppendFrame(b []byte, kind uint8, op uint16, id uint64, payload []byte) []byte {
	b = AppendHeader(b, kind, op, id, len(payload))
	return append(b, payload...)
}

// ErrTruncated is a frame the connection ended in the middle of.
var ErrTruncated = errors.New("amaquet: connection ended inside a frame")

// FrameReader reads request frames from a buffered stream. It is the
// parser the fuzz target exercises; the connection uses the same steps
// with deadlines and the payload budget in between.
type FrameReader struct {
	R          *bufio.Reader
	MaxPayload uint32
	hdr        [HeaderSize]byte
	// N is how many bytes of the frame being read have arrived, for the
	// error response to a truncated one.
	N int
}

// ReadHeader reads and checks the next header. It returns io.EOF when the
// stream ends between frames, ErrTruncated (or the read's error) inside
// one, and a *FrameError for a header it rejects.
func (fr *FrameReader) ReadHeader() (Header, error) {
	fr.N = 0
	n, err := io.ReadFull(fr.R, fr.hdr[:])
	fr.N = n
	if err != nil {
		if n == 0 && err == io.EOF {
			return Header{}, io.EOF
		}
		if err == io.ErrUnexpectedEOF {
			err = ErrTruncated
		}
		return fr.Partial(), err
	}
	h, ferr := ParseHeader(fr.hdr[:], fr.MaxPayload)
	if ferr != nil {
		return h, ferr
	}
	return h, nil
}

// Partial returns what the header read so far holds: the opcode once 10
// bytes have arrived, the request ID once 20 have.
func (fr *FrameReader) Partial() Header {
	var h Header
	if fr.N >= 10 {
		h.Opcode = binary.BigEndian.Uint16(fr.hdr[8:])
	}
	if fr.N >= 20 {
		h.ID = binary.BigEndian.Uint64(fr.hdr[12:])
	}
	return h
}

// ReadPayload reads a payload of n bytes into buf (grown as needed) and
// returns it.
func (fr *FrameReader) ReadPayload(buf []byte, n uint32) ([]byte, error) {
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(fr.R, buf); err != nil {
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			err = ErrTruncated
		}
		return buf, err
	}
	return buf, nil
}
