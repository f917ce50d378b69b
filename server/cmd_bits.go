package server

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
)

// Bit numbering: bit 0 is the most significant bit of the first byte, as in
// Redis. A string is an infinite run of zero bits past its end for readers;
// writers grow it with zero bytes.

const (
	errBitposBit      = "ERR The bit argument must be 1 or 0."
	errBitfieldType   = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."
	errBitfieldRO     = "ERR BITFIELD_RO only supports the GET subcommand"
	errBitfieldOvType = "ERR Invalid OVERFLOW type specified"
	errBitopNotOneKey = "ERR BITOP NOT must be called with a single source key."
	bitfieldSyntax    = "key [GET encoding offset | [OVERFLOW (WRAP | SAT | FAIL)] (SET encoding offset value | INCRBY encoding offset increment) ...]"
)

func bitCommands() []*Command {
	k1 := keysIn("", 1, 1)
	return []*Command{
		k1(&Command{Name: "setbit", Arity: 4, Flags: FlagWrite | FlagDenyOOM, Group: "bitmap", Since: "2.2.0", Syntax: "key offset value", Summary: "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.", Complexity: "O(1)", Categories: "write bitmap slow", Handler: cmdSetBit}),
		k1(&Command{Name: "getbit", Arity: 3, Flags: FlagReadonly | FlagFast, Group: "bitmap", Since: "2.2.0", Syntax: "key offset", Summary: "Returns a bit value by offset.", Complexity: "O(1)", Categories: "read bitmap fast", Handler: cmdGetBit}),
		k1(&Command{Name: "bitcount", Arity: -2, Flags: FlagReadonly, Group: "bitmap", Since: "2.6.0", Syntax: "key [start end [BYTE | BIT]]", Summary: "Counts the number of set bits (population counting) in a string.", Complexity: "O(N)", Categories: "read bitmap slow", Handler: cmdBitCount}),
		k1(&Command{Name: "bitpos", Arity: -3, Flags: FlagReadonly, Group: "bitmap", Since: "2.8.7", Syntax: "key bit [start [end [BYTE | BIT]]]", Summary: "Finds the first set (1) or clear (0) bit in a string.", Complexity: "O(N)", Categories: "read bitmap slow", Handler: cmdBitPos}),
		{Name: "bitop", Arity: -4, Flags: FlagWrite | FlagDenyOOM, FirstKey: 2, LastKey: -1, Step: 1, Group: "bitmap", KeySpecs: "OW update; RO access", Since: "2.6.0", Syntax: "(AND | OR | XOR | NOT) destkey key [key ...]", Summary: "Performs bitwise operations on multiple strings, and stores the result.", Complexity: "O(N)", Categories: "write bitmap slow", Handler: cmdBitOp},
		k1(&Command{Name: "bitfield", Arity: -2, Flags: FlagWrite | FlagDenyOOM, Group: "bitmap", KeySpecs: "RW access update variable_flags", VarKeyFlags: bitfieldKeyFlags, Since: "3.2.0", Syntax: bitfieldSyntax, Summary: "Performs arbitrary bitfield integer operations on strings.", Complexity: "O(1) for each subcommand specified", Categories: "write bitmap slow", Handler: bitfieldCmd(false)}),
		k1(&Command{Name: "bitfield_ro", Arity: -2, Flags: FlagReadonly | FlagFast, Group: "bitmap", Since: "6.0.0", Syntax: "key [GET encoding offset [GET encoding offset ...]]", Summary: "Performs arbitrary read-only bitfield integer operations on strings.", Complexity: "O(1) for each subcommand specified", Categories: "read bitmap fast", Handler: bitfieldCmd(true)}),
	}
}

// parseBitOffset parses a bit offset argument as Redis does: a non-negative
// integer whose byte index is below proto-max-bulk-len. With hash set, the
// "#n" form means n*width.
func parseBitOffset(a []byte, hash bool, width int64) (uint64, bool) {
	mul := hash && width > 0 && len(a) > 0 && a[0] == '#'
	if mul {
		a = a[1:]
	}
	n, ok := resp.ParseInt(a)
	if !ok {
		return 0, false
	}
	if mul {
		n *= width // wraps like Redis's C arithmetic; the range check below catches it
	}
	if n < 0 || n>>3 >= maxStringLen {
		return 0, false
	}
	return uint64(n), true
}

// growZero extends b with zero bytes to length n.
func growZero(b []byte, n uint64) []byte {
	if uint64(len(b)) >= n {
		return b
	}
	return append(b, make([]byte, n-uint64(len(b)))...)
}

// growString makes key's string entry e (nil when absent, then created) at
// least n bytes long, padding it with zero bytes, and marks it raw; grown
// reports whether it was created or extended.
func (s *Session) growString(key []byte, e *keyspace.Entry, n uint64) (_ *keyspace.Entry, grown bool) {
	if e == nil {
		e = s.db.SetString(key, nil, false)
		e.Str = make([]byte, n)
		grown = true
	} else if uint64(len(e.Str)) < n {
		e.Str = growZero(e.Str, n)
		grown = true
	}
	e.MarkRaw()
	return e, grown
}

// bitAt returns bit i of b, 0 past its end.
func bitAt(b []byte, i uint64) byte {
	if i>>3 >= uint64(len(b)) {
		return 0
	}
	return b[i>>3] >> (7 - i&7) & 1
}

// popcount returns the number of set bits in b.
func popcount(b []byte) int64 {
	n := 0
	for len(b) >= 32 {
		n += bits.OnesCount64(binary.LittleEndian.Uint64(b)) +
			bits.OnesCount64(binary.LittleEndian.Uint64(b[8:])) +
			bits.OnesCount64(binary.LittleEndian.Uint64(b[16:])) +
			bits.OnesCount64(binary.LittleEndian.Uint64(b[24:]))
		b = b[32:]
	}
	for len(b) >= 8 {
		n += bits.OnesCount64(binary.LittleEndian.Uint64(b))
		b = b[8:]
	}
	for _, c := range b {
		n += bits.OnesCount8(c)
	}
	return int64(n)
}

// countBits returns the number of set bits of b among bit positions
// first..last inclusive, with 0 <= first <= last < 8*len(b).
func countBits(b []byte, first, last int64) int64 {
	fb, lb := first>>3, last>>3
	n := popcount(b[fb : lb+1])
	n -= int64(bits.OnesCount8(b[fb] &^ (byte(0xff) >> (first & 7))))
	n -= int64(bits.OnesCount8(b[lb] & (byte(0xff) >> (last&7 + 1))))
	return n
}

// findBit returns the first position among first..last inclusive whose bit
// equals bit, or -1; 0 <= first and last < 8*len(b).
func findBit(b []byte, bit byte, first, last int64) int64 {
	i := first
	for ; i <= last && i&7 != 0; i++ {
		if bitAt(b, uint64(i)) == bit {
			return i
		}
	}
	var flip uint64
	if bit == 0 {
		flip = math.MaxUint64
	}
	for ; i+63 <= last; i += 64 {
		if w := binary.BigEndian.Uint64(b[i>>3:]) ^ flip; w != 0 {
			return i + int64(bits.LeadingZeros64(w))
		}
	}
	for ; i+7 <= last; i += 8 {
		if c := b[i>>3] ^ byte(flip); c != 0 {
			return i + int64(bits.LeadingZeros8(c))
		}
	}
	for ; i <= last; i++ {
		if bitAt(b, uint64(i)) == bit {
			return i
		}
	}
	return -1
}

// clampRange turns a GETRANGE, BITCOUNT or BITPOS start/end pair over total
// units (negative values count from the end) into an inclusive range;
// start > end means empty. Unlike indexRange it moves an end before the
// first unit onto it, as Redis does for these commands.
func clampRange(start, end, total int64) (int64, int64) {
	if start < 0 {
		start += total
	}
	if end < 0 {
		end += total
	}
	if start < 0 {
		start = 0
	}
	if end < 0 {
		end = 0
	}
	if end >= total {
		end = total - 1
	}
	return start, end
}

// unitArg parses the BYTE|BIT option at args[i] of BITCOUNT and BITPOS; it
// reports isBit, or false after replying with a syntax error.
func (s *Session) unitArg(i int) (isBit, ok bool) {
	switch a := s.Args[i]; {
	case resp.EqualFold(a, "bit"):
		return true, true
	case resp.EqualFold(a, "byte"):
		return false, true
	}
	s.W.Error(errSyntax)
	return false, false
}

func cmdSetBit(s *Session) {
	off, ok := parseBitOffset(s.Args[2], false, 0)
	if !ok {
		s.W.Error(errBitOffset)
		return
	}
	on, ok := resp.ParseInt(s.Args[3])
	if !ok || on&^1 != 0 {
		s.W.Error(errBitValue)
		return
	}
	key := s.Args[1]
	e, wrong := s.lookupString(key)
	if wrong {
		return
	}
	idx := off >> 3
	e, grown := s.growString(key, e, idx+1)
	shift := 7 - off&7
	old := e.Str[idx] >> shift & 1
	if grown || int64(old) != on {
		e.Str[idx] = e.Str[idx]&^(1<<shift) | byte(on)<<shift
		s.emit(bSETBIT, key, s.Args[2], s.Args[3])
		s.notify(notifyString, "setbit", key)
	}
	s.W.Int(int64(old))
}

func cmdGetBit(s *Session) {
	off, ok := parseBitOffset(s.Args[2], false, 0)
	if !ok {
		s.W.Error(errBitOffset)
		return
	}
	e, wrong := s.lookupString(s.Args[1])
	if wrong {
		return
	}
	if e == nil {
		s.W.Int(0)
		return
	}
	s.W.Int(int64(bitAt(e.Str, off)))
}

// BITCOUNT and BITPOS look the key up before parsing their range, as Redis
// 7.0 does: a missing key answers even when the range is malformed.

func cmdBitCount(s *Session) {
	e, wrong := s.lookupString(s.Args[1])
	if wrong {
		return
	}
	if e == nil {
		s.W.Int(0)
		return
	}
	b := e.Str
	var first, last int64
	switch len(s.Args) {
	case 2:
		s.W.Int(popcount(b))
		return
	case 4, 5:
		start, ok := s.intArg(2)
		if !ok {
			return
		}
		end, ok := s.intArg(3)
		if !ok {
			return
		}
		if start < 0 && end < 0 && start > end {
			s.W.Int(0)
			return
		}
		isBit := false
		if len(s.Args) == 5 {
			if isBit, ok = s.unitArg(4); !ok {
				return
			}
		}
		total := int64(len(b))
		if isBit {
			total <<= 3
		}
		start, end = clampRange(start, end, total)
		if start > end {
			s.W.Int(0)
			return
		}
		first, last = start, end
		if !isBit {
			first, last = start<<3, end<<3|7
		}
	default:
		s.W.Error(errSyntax)
		return
	}
	s.W.Int(countBits(b, first, last))
}

func cmdBitPos(s *Session) {
	bit, ok := s.intArg(2)
	if !ok {
		return
	}
	if bit != 0 && bit != 1 {
		s.W.Error(errBitposBit)
		return
	}
	e, wrong := s.lookupString(s.Args[1])
	if wrong {
		return
	}
	if e == nil {
		s.W.Int(-bit)
		return
	}
	b := e.Str
	total := int64(len(b))
	start, end := int64(0), total-1
	isBit, endGiven := false, false
	switch len(s.Args) {
	case 3:
	case 4, 5, 6:
		if start, ok = s.intArg(3); !ok {
			return
		}
		if len(s.Args) == 6 {
			if isBit, ok = s.unitArg(5); !ok {
				return
			}
		}
		if len(s.Args) >= 5 {
			if end, ok = s.intArg(4); !ok {
				return
			}
			endGiven = true
		}
		if isBit {
			total <<= 3
		}
		start, end = clampRange(start, end, total)
	default:
		s.W.Error(errSyntax)
		return
	}
	if start > end {
		s.W.Int(-1)
		return
	}
	first, last := start, end
	if !isBit {
		first, last = start<<3, end<<3|7
	}
	pos := findBit(b, byte(bit), first, last)
	if pos < 0 && bit == 0 && !endGiven {
		// Without an explicit end the string is padded with zeros on the
		// right: the first clear bit is the one just past the range.
		pos = last + 1
	}
	s.W.Int(pos)
}

// bitop names a BITOP operation.
type bitop uint8

const (
	bitopAnd bitop = iota
	bitopOr
	bitopXor
	bitopNot
)

// applyBitop combines src into dst (len(dst) >= len(src)) with op; for AND
// the bytes of dst past src become zero, as if src were zero-padded. NOT
// sets dst to the complement of src.
func applyBitop(op bitop, dst, src []byte) {
	i := 0
	for ; i+8 <= len(src); i += 8 {
		a := binary.LittleEndian.Uint64(dst[i:])
		c := binary.LittleEndian.Uint64(src[i:])
		switch op {
		case bitopAnd:
			a &= c
		case bitopOr:
			a |= c
		case bitopXor:
			a ^= c
		case bitopNot:
			a = ^c
		}
		binary.LittleEndian.PutUint64(dst[i:], a)
	}
	for ; i < len(src); i++ {
		switch op {
		case bitopAnd:
			dst[i] &= src[i]
		case bitopOr:
			dst[i] |= src[i]
		case bitopXor:
			dst[i] ^= src[i]
		case bitopNot:
			dst[i] = ^src[i]
		}
	}
	if op == bitopAnd {
		clear(dst[len(src):])
	}
}

func cmdBitOp(s *Session) {
	var op bitop
	switch name := s.Args[1]; {
	case resp.EqualFold(name, "and"):
		op = bitopAnd
	case resp.EqualFold(name, "or"):
		op = bitopOr
	case resp.EqualFold(name, "xor"):
		op = bitopXor
	case resp.EqualFold(name, "not"):
		op = bitopNot
	default:
		s.W.Error(errSyntax)
		return
	}
	if op == bitopNot && len(s.Args) != 4 {
		s.W.Error(errBitopNotOneKey)
		return
	}
	dest, keys := s.Args[2], s.Args[3:]
	maxLen := 0
	for _, k := range keys {
		e, wrong := s.lookupString(k)
		if wrong {
			return
		}
		if e != nil && len(e.Str) > maxLen {
			maxLen = len(e.Str)
		}
	}
	if maxLen == 0 {
		if s.db.Delete(dest) {
			s.emit(bDEL, dest)
			s.notify(notifyGeneric, "del", dest)
		}
		s.W.Int(0)
		return
	}
	res := make([]byte, maxLen)
	for i, k := range keys {
		var src []byte
		if e := s.db.Lookup(k); e != nil {
			src = e.Str
		}
		switch {
		case op == bitopNot:
			applyBitop(op, res, src)
		case i == 0:
			copy(res, src)
		default:
			applyBitop(op, res, src)
		}
	}
	ne := &keyspace.Entry{Str: res, Atime: s.srv.ks.Clock()}
	ne.MarkRaw()
	s.db.Set(dest, ne)
	s.emit(bSET, dest, res)
	s.notify(notifyString, "set", dest)
	s.W.Int(int64(maxLen))
}

// overflow is a BITFIELD OVERFLOW policy.
type overflow uint8

const (
	overflowWrap overflow = iota
	overflowSat
	overflowFail
)

// getField returns the width-bit unsigned field at bit offset off of b,
// reading zeros past its end.
func getField(b []byte, off uint64, width uint) uint64 {
	var v uint64
	for j := uint64(0); j < uint64(width); j++ {
		v = v<<1 | uint64(bitAt(b, off+j))
	}
	return v
}

// setField stores the low width bits of v at bit offset off of b, which
// must be long enough.
func setField(b []byte, off uint64, width uint, v uint64) {
	for j := uint(0); j < width; j++ {
		i := off + uint64(j)
		shift := 7 - i&7
		bit := byte(v>>(width-1-j)) & 1
		b[i>>3] = b[i>>3]&^(1<<shift) | bit<<shift
	}
}

// signExtend reads the low width bits of v as a two's complement integer,
// ignoring the bits above them.
func signExtend(v uint64, width uint) int64 {
	if width < 64 {
		if v&(1<<(width-1)) != 0 {
			v |= math.MaxUint64 << width
		} else {
			v &^= math.MaxUint64 << width
		}
	}
	return int64(v)
}

// addUnsigned adds incr to value in a width-bit unsigned field (width <=
// 63). It reports whether the sum leaves the field's range and, unless the
// policy is FAIL, the value to store then: wrapped modulo 2^width, or
// saturated. A value already out of range (SET) counts as an overflow.
func addUnsigned(value uint64, incr int64, width uint, pol overflow) (uint64, bool) {
	max := uint64(1)<<width - 1
	switch {
	case value > max || incr > 0 && incr > int64(max-value):
		if pol == overflowSat {
			return max, true
		}
	case incr < 0 && incr < -int64(value):
		if pol == overflowSat {
			return 0, true
		}
	default:
		return value + uint64(incr), false
	}
	return (value + uint64(incr)) & max, true
}

// addSigned is addUnsigned for a width-bit two's complement field (width
// <= 64). The range tests follow Redis's arithmetic exactly, wrap-arounds
// included, so that extreme SET values saturate the same way.
func addSigned(value, incr int64, width uint, pol overflow) (int64, bool) {
	max := int64(math.MaxInt64)
	if width < 64 {
		max = 1<<(width-1) - 1
	}
	min := -max - 1
	maxIncr := int64(uint64(max) - uint64(value))
	minIncr := min - value
	switch {
	case value > max || width != 64 && incr > maxIncr || value >= 0 && incr > 0 && incr > maxIncr:
		if pol == overflowSat {
			return max, true
		}
	case value < min || width != 64 && incr < minIncr || value < 0 && incr < 0 && incr < minIncr:
		if pol == overflowSat {
			return min, true
		}
	default:
		return value + incr, false
	}
	sum := uint64(value) + uint64(incr)
	return signExtend(sum, width), true
}

// bitfieldOp is one parsed BITFIELD subcommand.
type bitfieldOp struct {
	write  bool // SET or INCRBY
	incr   bool // INCRBY
	signed bool
	width  uint
	off    uint64
	val    int64
	pol    overflow
}

// parseBitfieldType parses an encoding such as i16 or u8.
func parseBitfieldType(a []byte) (signed bool, width uint, ok bool) {
	if len(a) == 0 || a[0] != 'i' && a[0] != 'u' {
		return false, 0, false
	}
	signed = a[0] == 'i'
	n, ok := resp.ParseInt(a[1:])
	if !ok || n < 1 || signed && n > 64 || !signed && n > 63 {
		return false, 0, false
	}
	return signed, uint(n), true
}

// bitfieldCmd builds BITFIELD and, with ro set, BITFIELD_RO.
func bitfieldCmd(ro bool) Handler {
	return func(s *Session) {
		var buf [8]bitfieldOp
		ops := buf[:0]
		pol := overflowWrap
		readonly := true
		var highest uint64
		args := s.Args
		for j := 2; j < len(args); j++ {
			rest := len(args) - j - 1
			var op bitfieldOp
			switch a := args[j]; {
			case resp.EqualFold(a, "get") && rest >= 2:
			case resp.EqualFold(a, "set") && rest >= 3:
				op.write = true
			case resp.EqualFold(a, "incrby") && rest >= 3:
				op.write, op.incr = true, true
			case resp.EqualFold(a, "overflow") && rest >= 1:
				j++
				switch t := args[j]; {
				case resp.EqualFold(t, "wrap"):
					pol = overflowWrap
				case resp.EqualFold(t, "sat"):
					pol = overflowSat
				case resp.EqualFold(t, "fail"):
					pol = overflowFail
				default:
					s.W.Error(errBitfieldOvType)
					return
				}
				continue
			default:
				s.W.Error(errSyntax)
				return
			}
			var ok bool
			if op.signed, op.width, ok = parseBitfieldType(args[j+1]); !ok {
				s.W.Error(errBitfieldType)
				return
			}
			if op.off, ok = parseBitOffset(args[j+2], true, int64(op.width)); !ok {
				s.W.Error(errBitOffset)
				return
			}
			if op.write {
				readonly = false
				if end := op.off + uint64(op.width) - 1; end > highest {
					highest = end
				}
				if op.val, ok = s.intArg(j + 3); !ok {
					return
				}
				j++
			}
			op.pol = pol
			ops = append(ops, op)
			j += 2
		}

		key := args[1]
		if ro && !readonly {
			s.W.Error(errBitfieldRO)
			return
		}
		e, wrong := s.lookupString(key)
		if wrong {
			return
		}
		changed := false
		if !readonly {
			e, changed = s.growString(key, e, highest>>3+1)
		}

		s.W.Array(len(ops))
		for _, op := range ops {
			var str []byte
			if e != nil {
				str = e.Str
			}
			old := getField(str, op.off, op.width)
			if !op.write {
				if op.signed {
					s.W.Int(signExtend(old, op.width))
				} else {
					s.W.Int(int64(old))
				}
				continue
			}
			var stored uint64
			var reply int64
			var over bool
			if op.signed {
				oldv := signExtend(old, op.width)
				var nv int64
				if op.incr {
					nv, over = addSigned(oldv, op.val, op.width, op.pol)
					reply = nv
				} else {
					nv, over = addSigned(op.val, 0, op.width, op.pol)
					reply = oldv
				}
				stored = uint64(nv)
			} else {
				var nv uint64
				if op.incr {
					nv, over = addUnsigned(old, op.val, op.width, op.pol)
					reply = int64(nv)
				} else {
					nv, over = addUnsigned(uint64(op.val), 0, op.width, op.pol)
					reply = int64(old)
				}
				stored = nv
			}
			if over && op.pol == overflowFail {
				s.W.Null()
				continue
			}
			if op.width < 64 {
				stored &= 1<<op.width - 1
			}
			if stored != old {
				setField(e.Str, op.off, op.width, stored)
				changed = true
			}
			s.W.Int(reply)
		}
		if changed {
			s.emit(bSET, key, e.Str, bKEEPTTL)
			s.notify(notifyString, "setbit", key)
		}
	}
}

// bitfieldKeyFlags is BITFIELD's key flags, as Redis's bitfieldGetKeys
// decides them: read-only access while every operation is a GET or an
// OVERFLOW with its arguments, a read and update otherwise (a syntax error
// counts as a write).
func bitfieldKeyFlags(args [][]byte) KeyFlag {
	for i := 2; i < len(args); i++ {
		rem := len(args) - i - 1
		switch {
		case resp.EqualFold(args[i], "get") && rem >= 2:
			i += 2
		case resp.EqualFold(args[i], "overflow") && rem >= 1:
			i++
		default:
			return KeyRW | KeyAccess | KeyUpdate
		}
	}
	return KeyRO | KeyAccess
}
