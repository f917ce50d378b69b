package amaquet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The header's fixed fields (seed 000, SPEC section 10).
const (
	// HeaderSize is the length of every frame's header.
	HeaderSize = 24
	// Magic opens every frame.
	Magic = "AMQT"
	// Version is the protocol version this client speaks.
	Version = 1
	// HardMaxPayload is the largest payload any server accepts or sends
	// (64 MiB); the client refuses a frame declaring more.
	HardMaxPayload = 64 << 20
)

// Kind says who sent a frame and why.
type Kind uint8

// The frame kinds.
const (
	KindRequest  Kind = 1
	KindResponse Kind = 2
	KindEvent    Kind = 3
)

// Opcode names the operation a frame carries.
type Opcode uint16

// The opcodes of protocol version 1.
const (
	OpCommand     Opcode = 1
	OpHello       Opcode = 2
	OpAuth        Opcode = 3
	OpSubscribe   Opcode = 4
	OpUnsubscribe Opcode = 5
	OpCancel      Opcode = 6
)

// Header is a frame's 24-byte header, decoded.
type Header struct {
	Version uint8
	Kind    Kind
	Flags   uint16
	Opcode  Opcode
	// Reserved is the two bytes at offset 10, zero in version 1.
	Reserved uint16
	ID       uint64
	Length   uint32
}

// Frame is a header and its payload.
type Frame struct {
	Header
	Payload []byte
}

// AppendFrame appends a version-1 frame of kind k to b: the header
// followed by payload.
func AppendFrame(b []byte, k Kind, op Opcode, id uint64, payload []byte) []byte {
	b = append(b, Magic...)
	b = append(b, Version, byte(k), 0, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(op))
	b = append(b, 0, 0)
	b = binary.BigEndian.AppendUint64(b, id)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	return append(b, payload...)
}

// putHeader writes a version-1 header of kind k into b[:HeaderSize], for
// the payload that follows it in b.
func putHeader(b []byte, k Kind, op Opcode, id uint64) {
	copy(b, Magic)
	b[4], b[5], b[6], b[7] = Version, byte(k), 0, 0
	binary.BigEndian.PutUint16(b[8:], uint16(op))
	b[10], b[11] = 0, 0
	binary.BigEndian.PutUint64(b[12:], id)
	binary.BigEndian.PutUint32(b[20:], uint32(len(b)-HeaderSize))
}

// ErrBadFrame reports a frame this client cannot accept from a server:
// wrong magic, unknown version, a request kind, a flag or reserved bit
// set, or a payload over the limit. The connection is unusable after it.
var ErrBadFrame = errors.New("amaquet: malformed frame from server")

// ParseHeader decodes and checks a header received from a server: magic,
// version 1, kind response or event, flags and reserved field zero, and a
// payload length of at most max bytes.
func ParseHeader(b []byte, max uint32) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: header of %d bytes", ErrBadFrame, len(b))
	}
	h := Header{
		Version:  b[4],
		Kind:     Kind(b[5]),
		Flags:    binary.BigEndian.Uint16(b[6:]),
		Opcode:   Opcode(binary.BigEndian.Uint16(b[8:])),
		Reserved: binary.BigEndian.Uint16(b[10:]),
		ID:       binary.BigEndian.Uint64(b[12:]),
		Length:   binary.BigEndian.Uint32(b[20:]),
	}
	switch {
	case string(b[:4]) != Magic:
		return h, fmt.Errorf("%w: magic %q", ErrBadFrame, b[:4])
	case h.Version != Version:
		return h, fmt.Errorf("%w: version %d", ErrBadFrame, h.Version)
	case h.Kind != KindResponse && h.Kind != KindEvent:
		return h, fmt.Errorf("%w: kind %d", ErrBadFrame, h.Kind)
	case h.Flags != 0:
		return h, fmt.Errorf("%w: flags %#04x", ErrBadFrame, h.Flags)
	case h.Reserved != 0:
		return h, fmt.Errorf("%w: reserved field %#04x", ErrBadFrame, h.Reserved)
	case h.Length > max:
		return h, fmt.Errorf("%w: payload of %d bytes over the limit of %d", ErrBadFrame, h.Length, max)
	}
	return h, nil
}

// ReadFrame reads one server frame from r: its header, checked by
// ParseHeader, and its payload. hdr is scratch space of HeaderSize bytes.
func ReadFrame(r io.Reader, hdr []byte, max uint32) (Frame, error) {
	return readFrame(r, hdr, nil, max)
}

// readFrame is ReadFrame reading the payload into buf when it is large
// enough (a new slice otherwise).
func readFrame(r io.Reader, hdr, buf []byte, max uint32) (Frame, error) {
	if _, err := io.ReadFull(r, hdr[:HeaderSize]); err != nil {
		return Frame{}, err
	}
	h, err := ParseHeader(hdr, max)
	if err != nil {
		return Frame{}, err
	}
	if int(h.Length) > cap(buf) {
		buf = make([]byte, h.Length)
	}
	f := Frame{Header: h, Payload: buf[:h.Length]}
	if _, err := io.ReadFull(r, f.Payload); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, fmt.Errorf("amaquet: payload of request %d: %w", h.ID, err)
	}
	return f, nil
}
