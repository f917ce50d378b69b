package rdb

import (
	"encoding/binary"
	"errors"
)

// DumpFunctions returns FUNCTION DUMP's payload as Redis 7.0 writes it:
// every library as the RDB function opcode and its code as an RDB string,
// then the RDB version (2 bytes, little endian) and the CRC-64 of all that
// (8 bytes), the footer of a DUMP payload.
func DumpFunctions(codes []string) []byte {
	var b []byte
	for _, c := range codes {
		b = append(b, opFunction2)
		b = appendString(b, []byte(c), true)
	}
	b = binary.LittleEndian.AppendUint16(b, Version)
	return binary.LittleEndian.AppendUint64(b, CRC64(0, b))
}

// Errors of FUNCTION RESTORE, in Redis's words.
var (
	ErrNotFunction    = errors.New("ERR given type is not a function")
	errLibraryPayload = errors.New("ERR Failed loading library payload")
)

// DecodeFunctions reads a FUNCTION DUMP payload: it returns the libraries'
// code in order. A bad footer is ErrPayload; a record that is not a
// function, or one that does not decode, is Redis's error, returned with
// the libraries before it (which Redis loads before it meets the bad
// record, so that their errors come first). Both the 7.0 function record
// and the 7.0 release candidates' (name, engine and description before the
// code) are read.
func DecodeFunctions(p []byte) ([]string, error) {
	body, err := CheckPayload(p)
	if err != nil {
		return nil, err
	}
	d := dec{b: body, name: "FUNCTION RESTORE payload"}
	var codes []string
	for d.remaining() > 0 {
		var head string
		switch d.byte("type") {
		case opFunction2:
		case opFunction:
			var meta [2]string
			for i, what := range []string{"library name", "engine name"} {
				v := d.str(what)
				if d.err != nil {
					return codes, errors.New("ERR Failed loading " + what)
				}
				meta[i] = string(v)
			}
			// The code of that format has no shebang line: Redis puts
			// one naming the engine and the library before it.
			head = "#!" + meta[1] + " name=" + meta[0] + "\n"
			hasDesc := d.plainLen("library description indicator")
			if d.err != nil {
				return codes, errors.New("ERR Failed loading library description indicator")
			}
			if hasDesc != 0 {
				if d.str("library description"); d.err != nil {
					return codes, errors.New("ERR Failed loading library description")
				}
			}
		default:
			return codes, ErrNotFunction
		}
		code := d.str("library payload")
		if d.err != nil {
			return codes, errLibraryPayload
		}
		codes = append(codes, head+string(code))
	}
	return codes, nil
}
