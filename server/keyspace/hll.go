package keyspace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
)

// HyperLogLogs are strings in Redis 7.0's own representation
// (src/hyperloglog.c), so that GET returns the bytes redis-server would:
//
//	"HYLL" | encoding (0 dense, 1 sparse) | 3 unused | cached cardinality
//
// the cardinality 8 bytes little endian, its most significant bit set when
// the cache is stale. The dense form follows with 16384 registers of 6 bits,
// packed from the least significant bit of each byte up. The sparse form
// follows with run-length opcodes: ZERO 00xxxxxx (1 to 64 zero registers),
// XZERO 01xxxxxx yyyyyyyy (1 to 16384 zero registers), VAL 1vvvvvxx (1 to 4
// registers of value 1 to 32).
//
// The functions here work on such strings; the caller has checked the
// header with IsHLL. A sparse string can still be corrupt: the functions
// report that rather than panic. Opcodes covering more than the 16384
// registers are corrupt everywhere, as in redis-server 7.0.15 with the
// CVE-2025-32023 fix (Debian's 7.0.15-1~deb12u10 and later releases),
// where the unpatched release took a VAL opcode past a complete cover as
// the end of the registers.

// HLL geometry and header layout.
const (
	HLLRegisters  = 1 << hllP                        // registers per HyperLogLog
	HLLHeaderSize = 16                               // magic, encoding, unused, cardinality
	HLLDenseSize  = HLLHeaderSize + HLLRegisters*6/8 // length of a dense HyperLogLog

	hllP        = 14
	hllQ        = 64 - hllP
	hllRegMax   = 63
	hllDense    = 0
	hllSparse   = 1
	hllSeed     = 0xadc83b19
	sparseMaxV  = 32                      // largest value a VAL opcode holds
	sparseMaxVL = 4                       // longest run of a VAL opcode
	sparseMaxZ  = 64                      // longest run of a ZERO opcode
	sparseMaxXZ = 16384                   // longest run of an XZERO opcode
	hllAlphaInf = 0.721347520444481703680 // 0.5/ln(2)
)

// HLLResult is the outcome of adding to a HyperLogLog.
type HLLResult int8

// The outcomes.
const (
	HLLUnchanged HLLResult = 0  // no register grew
	HLLChanged   HLLResult = 1  // a register grew
	HLLCorrupt   HLLResult = -1 // the sparse representation is invalid
)

// NewHLL returns an empty HyperLogLog: sparse, one XZERO opcode covering
// every register, a cached cardinality of 0.
func NewHLL() []byte {
	return AppendNewHLL(make([]byte, 0, HLLHeaderSize+16))
}

// AppendNewHLL appends an empty HyperLogLog to dst (which it reuses when
// there is room), as NewHLL makes it.
func AppendNewHLL(dst []byte) []byte {
	n := len(dst)
	dst = append(dst, "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"...)
	putXZero(dst[n+HLLHeaderSize:], HLLRegisters)
	return dst
}

// IsHLL reports whether b has a HyperLogLog header: the magic, a known
// encoding and, when dense, the exact length. It is Redis's
// isHLLObjectOrReply test; the registers are not checked.
func IsHLL(b []byte) bool {
	if len(b) < HLLHeaderSize || string(b[:4]) != "HYLL" || b[4] > hllSparse {
		return false
	}
	return b[4] != hllDense || len(b) == HLLDenseSize
}

// HLLIsSparse reports whether the HyperLogLog b is sparse.
func HLLIsSparse(b []byte) bool { return b[4] == hllSparse }

// HLLCached returns b's cached cardinality and whether it is valid.
func HLLCached(b []byte) (uint64, bool) {
	if b[15]&0x80 != 0 {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b[8:16]), true
}

// HLLSetCached stores card as b's valid cached cardinality.
func HLLSetCached(b []byte, card uint64) { binary.LittleEndian.PutUint64(b[8:16], card) }

// HLLInvalidate marks b's cached cardinality stale.
func HLLInvalidate(b []byte) { b[15] |= 0x80 }

// MurmurHash64A is Austin Appleby's 64-bit MurmurHash2 as Redis uses it,
// reading the input as little-endian words.
func MurmurHash64A(key []byte, seed uint64) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	h := seed ^ uint64(len(key))*m
	for len(key) >= 8 {
		k := binary.LittleEndian.Uint64(key)
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
		key = key[8:]
	}
	if len(key) > 0 {
		for i := len(key) - 1; i >= 0; i-- {
			h ^= uint64(key[i]) << (8 * i)
		}
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

// hllPatLen returns the register ele maps to and the length of the run of
// zeros, plus one, after the register bits of its hash (1 to hllQ+1).
func hllPatLen(ele []byte) (int, uint8) {
	h := MurmurHash64A(ele, hllSeed)
	index := int(h & (HLLRegisters - 1))
	h >>= hllP
	h |= 1 << hllQ
	return index, uint8(bits.TrailingZeros64(h) + 1)
}

// denseGet returns register i of the dense registers r.
func denseGet(r []byte, i int) uint8 {
	byt, fb := i*6/8, uint(i*6&7)
	v := uint(r[byt]) >> fb
	if byt+1 < len(r) {
		v |= uint(r[byt+1]) << (8 - fb)
	}
	return uint8(v & hllRegMax)
}

// denseSetReg stores v in register i of the dense registers r.
func denseSetReg(r []byte, i int, v uint8) {
	byt, fb := i*6/8, uint(i*6&7)
	r[byt] &^= byte(hllRegMax << fb)
	r[byt] |= v << fb
	if byt+1 < len(r) {
		r[byt+1] &^= byte(hllRegMax >> (8 - fb))
		r[byt+1] |= v >> (8 - fb)
	}
}

// denseSet raises register i to count; it reports whether it grew.
func denseSet(r []byte, i int, count uint8) bool {
	if count > denseGet(r, i) {
		denseSetReg(r, i, count)
		return true
	}
	return false
}

// Sparse opcodes.

func isZero(op byte) bool      { return op&0xc0 == 0 }
func isXZero(op byte) bool     { return op&0xc0 == 0x40 }
func isVal(op byte) bool       { return op&0x80 != 0 }
func zeroLen(op byte) int      { return int(op&0x3f) + 1 }
func valValue(op byte) int     { return int(op>>2&0x1f) + 1 }
func valLen(op byte) int       { return int(op&3) + 1 }
func valOp(v, n int) byte      { return byte((v-1)<<2|(n-1)) | 0x80 }
func zeroOp(n int) byte        { return byte(n - 1) }
func putXZero(p []byte, n int) { p[0], p[1] = byte((n-1)>>8)|0x40, byte(n-1) }

// xzeroLen is the run of the XZERO opcode at b[p]. Past the end of the
// string it reads a zero byte, as Redis reads the string's terminator.
func xzeroLen(b []byte, p int) int {
	lo := 0
	if p+1 < len(b) {
		lo = int(b[p+1])
	}
	return (int(b[p]&0x3f)<<8 | lo) + 1
}

// HLLAdd adds ele to the HyperLogLog b, promoting a sparse b to dense when
// a register outgrows the sparse form or the sparse string would exceed
// sparseMax bytes. It returns the (possibly reallocated) string and the
// outcome. It does not touch the cached cardinality of a dense b; the
// caller invalidates it when something changed.
func HLLAdd(b, ele []byte, sparseMax int) ([]byte, HLLResult) {
	index, count := hllPatLen(ele)
	return HLLSet(b, index, count, sparseMax)
}

// HLLSet raises register index of b to count: HLLAdd with the hash done.
func HLLSet(b []byte, index int, count uint8, sparseMax int) ([]byte, HLLResult) {
	if b[4] == hllDense {
		if denseSet(b[HLLHeaderSize:], index, count) {
			return b, HLLChanged
		}
		return b, HLLUnchanged
	}
	return sparseSet(b, index, count, sparseMax)
}

// sparseSet is Redis's hllSparseSet: it updates the opcode covering
// register index in place, splitting it when needed, then merges adjacent
// VAL opcodes around it. Every byte it produces is the one Redis would.
func sparseSet(b []byte, index int, count uint8, sparseMax int) ([]byte, HLLResult) {
	if count > sparseMaxV {
		return promote(b, index, count)
	}
	// Step 1: find the opcode covering index.
	p, end := HLLHeaderSize, len(b)
	first, span, prev := 0, 0, -1
	for p < end {
		oplen := 1
		switch op := b[p]; {
		case isZero(op):
			span = zeroLen(op)
		case isVal(op):
			span = valLen(op)
		default:
			span = xzeroLen(b, p)
			oplen = 2
		}
		if index <= first+span-1 {
			break
		}
		prev = p
		p += oplen
		first += span
	}
	if span == 0 || p >= end {
		return b, HLLCorrupt
	}
	op := b[p]
	zero, xzero := isZero(op), isXZero(op)
	if xzero && p+1 >= end {
		return b, HLLCorrupt // an XZERO cut short: nothing sane to split
	}
	// Step 2: the trivial cases update the opcode in place.
	switch {
	case isVal(op) && valValue(op) >= int(count):
		return b, HLLUnchanged
	case isVal(op) && valLen(op) == 1, zero && zeroLen(op) == 1:
		b[p] = valOp(int(count), 1)
		return sparseMerge(b, prev), HLLChanged
	}
	// The general case: split the opcode into up to three.
	var seq [5]byte
	n := 0
	last := first + span - 1
	if zero || xzero {
		putZeros := func(l int) {
			if l > sparseMaxZ {
				putXZero(seq[n:], l)
				n += 2
			} else {
				seq[n] = zeroOp(l)
				n++
			}
		}
		if index != first {
			putZeros(index - first)
		}
		seq[n] = valOp(int(count), 1)
		n++
		if index != last {
			putZeros(last - index)
		}
	} else {
		cur := valValue(op)
		if index != first {
			seq[n] = valOp(cur, index-first)
			n++
		}
		seq[n] = valOp(int(count), 1)
		n++
		if index != last {
			seq[n] = valOp(cur, last-index)
			n++
		}
	}
	// Step 3: substitute the sequence for the opcode.
	oldlen := 1
	if xzero {
		oldlen = 2
	}
	delta := n - oldlen
	if delta > 0 && len(b)+delta > sparseMax {
		return promote(b, index, count)
	}
	switch {
	case delta > 0:
		b = append(b, seq[:delta]...) // room; overwritten by the move
		copy(b[p+n:], b[p+oldlen:end])
	case delta < 0:
		copy(b[p+n:], b[p+oldlen:end])
		b = b[:end+delta]
	}
	copy(b[p:], seq[:n])
	return sparseMerge(b, prev), HLLChanged
}

// sparseMerge is step 4 of hllSparseSet: starting at the opcode before the
// updated one (prev, -1 for the first), it scans up to five opcodes and
// merges adjacent VAL opcodes of one value whose runs fit one opcode. It
// invalidates the cached cardinality.
func sparseMerge(b []byte, prev int) []byte {
	p := prev
	if p < 0 {
		p = HLLHeaderSize
	}
	for scan := 5; p < len(b) && scan > 0; scan-- {
		op := b[p]
		switch {
		case isXZero(op):
			p += 2
			continue
		case isZero(op):
			p++
			continue
		}
		if p+1 < len(b) && isVal(b[p+1]) {
			v1, v2 := valValue(op), valValue(b[p+1])
			if l := valLen(op) + valLen(b[p+1]); v1 == v2 && l <= sparseMaxVL {
				b[p+1] = valOp(v1, l)
				b = append(b[:p], b[p+1:]...)
				continue // try the merged opcode with the next one
			}
		}
		p++
	}
	HLLInvalidate(b)
	return b
}

// promote converts the sparse b to dense and sets register index there.
func promote(b []byte, index int, count uint8) ([]byte, HLLResult) {
	d, ok := HLLToDense(b)
	if !ok {
		return b, HLLCorrupt
	}
	denseSet(d[HLLHeaderSize:], index, count)
	return d, HLLChanged
}

// HLLToDense returns b in the dense encoding: b itself when it is dense,
// else a new string with b's header (its cached cardinality included) and
// the registers the opcodes describe. It reports false for a sparse b that
// does not describe exactly HLLRegisters registers.
func HLLToDense(b []byte) ([]byte, bool) {
	if b[4] == hllDense {
		return b, true
	}
	d := make([]byte, HLLDenseSize)
	copy(d, b[:HLLHeaderSize])
	d[4] = hllDense
	r := d[HLLHeaderSize:]
	ok := sparseRuns(b, func(idx, n int, v uint8) {
		if v == 0 {
			return // the dense registers start at zero
		}
		for ; n > 0; n-- {
			denseSetReg(r, idx, v)
			idx++
		}
	})
	if !ok {
		return nil, false
	}
	return d, true
}

// sparseRuns calls run for each opcode of the sparse b in order: a run of
// n registers from idx that all hold v (0 for ZERO and XZERO). It reports
// false when b does not describe exactly HLLRegisters registers, stopping
// before an opcode that would go past them.
func sparseRuns(b []byte, run func(idx, n int, v uint8)) bool {
	idx := 0
	for p := HLLHeaderSize; p < len(b); {
		var n int
		var v uint8
		switch op := b[p]; {
		case isZero(op):
			n = zeroLen(op)
			p++
		case isXZero(op):
			n = xzeroLen(b, p)
			p += 2
		default:
			n, v = valLen(op), uint8(valValue(op))
			p++
		}
		if idx+n > HLLRegisters {
			return false
		}
		run(idx, n, v)
		idx += n
	}
	return idx == HLLRegisters
}

// HLLMerge raises max[i] to register i of b for every register. It
// reports false for a corrupt sparse b (max may then be partly updated).
func HLLMerge(max *[HLLRegisters]uint8, b []byte) bool {
	if b[4] == hllDense {
		// 16 registers (12 bytes) at a time, as denseHisto.
		r := b[HLLHeaderSize:]
		for i, g := 0, 0; i+12 <= len(r); i, g = i+12, g+16 {
			x := r[i : i+12 : i+12]
			lo := uint64(x[0]) | uint64(x[1])<<8 | uint64(x[2])<<16 | uint64(x[3])<<24 | uint64(x[4])<<32 | uint64(x[5])<<40
			hi := uint64(x[6]) | uint64(x[7])<<8 | uint64(x[8])<<16 | uint64(x[9])<<24 | uint64(x[10])<<32 | uint64(x[11])<<40
			if lo == 0 && hi == 0 {
				continue
			}
			m := max[g : g+16 : g+16]
			for j := uint(0); j < 8; j++ {
				if v := uint8(lo >> (6 * j) & 63); v > m[j] {
					m[j] = v
				}
				if v := uint8(hi >> (6 * j) & 63); v > m[8+j] {
					m[8+j] = v
				}
			}
		}
		return true
	}
	return sparseRuns(b, func(i, n int, v uint8) {
		if v == 0 {
			return
		}
		for ; n > 0; n-- {
			if v > max[i] {
				max[i] = v
			}
			i++
		}
	})
}

// HLLCount estimates b's cardinality from its registers (the cached value
// is neither read nor written). It reports false for a corrupt sparse b.
func HLLCount(b []byte) (uint64, bool) {
	var histo [64]int
	if b[4] == hllDense {
		denseHisto(b[HLLHeaderSize:], &histo)
		return estimate(&histo), true
	}
	if !sparseRuns(b, func(_, n int, v uint8) { histo[v] += n }) {
		return 0, false
	}
	return estimate(&histo), true
}

// HLLCountRegisters estimates the cardinality of the registers max (the
// union PFCOUNT computes for several keys).
func HLLCountRegisters(max *[HLLRegisters]uint8) uint64 {
	var histo [64]int
	for i := 0; i < len(max); i += 8 {
		w := max[i : i+8 : i+8]
		if binary.LittleEndian.Uint64(w) == 0 {
			histo[0] += 8
			continue
		}
		for _, v := range w {
			histo[v&63]++
		}
	}
	return estimate(&histo)
}

// denseHisto counts the dense registers r by value, 16 registers (12
// bytes) at a time.
func denseHisto(r []byte, h *[64]int) {
	for i := 0; i+12 <= len(r); i += 12 {
		x := r[i : i+12 : i+12]
		lo := uint64(x[0]) | uint64(x[1])<<8 | uint64(x[2])<<16 | uint64(x[3])<<24 | uint64(x[4])<<32 | uint64(x[5])<<40
		hi := uint64(x[6]) | uint64(x[7])<<8 | uint64(x[8])<<16 | uint64(x[9])<<24 | uint64(x[10])<<32 | uint64(x[11])<<40
		if lo == 0 && hi == 0 {
			h[0] += 16
			continue
		}
		for j := uint(0); j < 48; j += 6 {
			h[lo>>j&63]++
			h[hi>>j&63]++
		}
	}
}

// estimate is Redis 7.0's hllCount estimator over a register histogram:
// Otmar Ertl's improved raw estimator ("New cardinality estimation
// algorithms for HyperLogLog sketches", arXiv:1702.01284). The explicit
// float64 conversions keep the compiler from fusing multiply-adds, so the
// result matches Redis's bit for bit.
func estimate(h *[64]int) uint64 {
	const m = float64(HLLRegisters)
	z := m * hllTau((m-float64(h[hllQ+1]))/m)
	for j := hllQ; j >= 1; j-- {
		z += float64(h[j])
		z *= 0.5
	}
	z += float64(m * hllSigma(float64(h[0])/m))
	return uint64(math.Round(float64(hllAlphaInf*m*m) / z))
}

func hllSigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		zPrime := z
		z += float64(x * y)
		y += y
		if zPrime == z {
			return z
		}
	}
}

func hllTau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		zPrime := z
		y *= 0.5
		d := 1 - x
		z -= float64(float64(d*d) * y)
		if zPrime == z {
			return z / 3
		}
	}
}

// HLLRegister returns register i of the dense HyperLogLog b.
func HLLRegister(b []byte, i int) uint8 { return denseGet(b[HLLHeaderSize:], i) }

// HLLDecode describes the opcodes of the sparse HyperLogLog b as PFDEBUG
// DECODE does: "z:<run>", "Z:<run>" and "v:<value>,<run>", space separated.
func HLLDecode(b []byte) string {
	var sb strings.Builder
	for p := HLLHeaderSize; p < len(b); {
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		switch op := b[p]; {
		case isZero(op):
			sb.WriteString("z:")
			sb.WriteString(strconv.Itoa(zeroLen(op)))
			p++
		case isXZero(op):
			sb.WriteString("Z:")
			sb.WriteString(strconv.Itoa(xzeroLen(b, p)))
			p += 2
		default:
			sb.WriteString("v:")
			sb.WriteString(strconv.Itoa(valValue(op)))
			sb.WriteByte(',')
			sb.WriteString(strconv.Itoa(valLen(op)))
			p++
		}
	}
	return sb.String()
}

// HLLSelfTest is PFSELFTEST: it checks that the dense registers keep the
// values stored in them without disturbing their neighbours, then adds ten
// million distinct elements to a dense and a sparse HyperLogLog at once,
// checking at every power of ten that the sparse one stays sparse while
// small, that both estimate the same and that the error is within six
// standard errors. seed varies the registers and elements; the error is
// Redis's text.
func HLLSelfTest(sparseMax int, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	dense := make([]byte, HLLDenseSize)
	copy(dense, "HYLL")
	regs := dense[HLLHeaderSize:]
	var want [HLLRegisters]uint8
	for cycle := 0; cycle < 1000; cycle++ {
		for i := range want {
			want[i] = uint8(rng.Uint32() & hllRegMax)
			denseSetReg(regs, i, want[i])
		}
		for i, w := range want {
			if v := denseGet(regs, i); v != w {
				return fmt.Errorf("TESTFAILED Register %d should be %d but is %d", i, w, v)
			}
		}
	}
	clear(regs)
	sparse := NewHLL()
	relerr := 1.04 / math.Sqrt(HLLRegisters)
	checkpoint := uint64(1)
	base := rng.Uint64()
	var ele [8]byte
	for j := uint64(1); j <= 10000000; j++ {
		binary.LittleEndian.PutUint64(ele[:], j^base)
		index, count := hllPatLen(ele[:])
		denseSet(regs, index, count)
		sparse, _ = HLLSet(sparse, index, count, sparseMax)
		if j != checkpoint {
			continue
		}
		if j < uint64(sparseMax/2) && !HLLIsSparse(sparse) {
			return errors.New("TESTFAILED sparse encoding not used")
		}
		dc, _ := HLLCount(dense)
		if sc, _ := HLLCount(sparse); dc != sc {
			return errors.New("TESTFAILED dense/sparse disagree")
		}
		abserr := int64(checkpoint) - int64(dc)
		maxerr := uint64(math.Ceil(relerr * 6 * float64(checkpoint)))
		if j == 10 {
			maxerr = 1
		}
		if abserr < 0 {
			abserr = -abserr
		}
		if abserr > int64(maxerr) {
			return fmt.Errorf("TESTFAILED Too big error. card:%d abserr:%d", checkpoint, abserr)
		}
		checkpoint *= 10
	}
	return nil
}

// HLLRaise raises every register of b to the one in max, as PFMERGE writes
// its destination: register by register in index order while b is sparse
// (which may promote it), then all at once in the dense form. It returns
// the (possibly reallocated) string; a corrupt sparse b is left as far as
// the updates got, as Redis does.
func HLLRaise(b []byte, max *[HLLRegisters]uint8, sparseMax int) []byte {
	for i := 0; i < HLLRegisters && b[4] == hllSparse; i++ {
		if max[i] != 0 {
			b, _ = HLLSet(b, i, max[i], sparseMax)
		}
	}
	if b[4] != hllDense {
		return b
	}
	r := b[HLLHeaderSize:]
	for i, g := 0, 0; i+12 <= len(r); i, g = i+12, g+16 {
		m := max[g : g+16 : g+16]
		x := r[i : i+12 : i+12]
		lo := uint64(x[0]) | uint64(x[1])<<8 | uint64(x[2])<<16 | uint64(x[3])<<24 | uint64(x[4])<<32 | uint64(x[5])<<40
		hi := uint64(x[6]) | uint64(x[7])<<8 | uint64(x[8])<<16 | uint64(x[9])<<24 | uint64(x[10])<<32 | uint64(x[11])<<40
		nlo, nhi := uint64(0), uint64(0)
		for j := uint(0); j < 8; j++ {
			nlo |= uint64(max8(uint8(lo>>(6*j)&63), m[j]&63)) << (6 * j)
			nhi |= uint64(max8(uint8(hi>>(6*j)&63), m[8+j]&63)) << (6 * j)
		}
		for k := 0; k < 6; k++ {
			x[k] = byte(nlo >> (8 * k))
			x[6+k] = byte(nhi >> (8 * k))
		}
	}
	return b
}

func max8(a, b uint8) uint8 {
	if a > b {
		return a
	}
	return b
}
