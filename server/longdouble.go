package server

import (
	"math/bits"
	"strconv"
)

// INCRBYFLOAT and HINCRBYFLOAT add in C's long double (x86-64: a 64-bit
// mantissa) and print the sum with "%.17Lf". The big.Float path in
// cmd_string.go does that for every input. The functions here do it for
// the inputs counters hold (decimals whose first 38 significant digits
// decide them, exponents within ±19, sums below 2^63) with 64-, 128- and
// 256-bit integer arithmetic, without allocating, and give up on anything
// else, which then takes the big.Float path. Both round alike at every
// step: the parse and the sum to the nearest long double, ties to even,
// and the printed digits to the nearest, ties to even, as glibc's printf
// does.

// ld is a finite long double: (-1)^neg × m × 2^exp, with m's top bit set
// (m == 0: zero).
type ld struct {
	m   uint64
	exp int
	neg bool
}

// pow10u64 holds 10^0 … 10^19, the powers of ten below 2^64.
var pow10u64 = [20]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// incrFloatFast appends to dst the text of cur+by as INCRBYFLOAT computes
// and prints it (hasCur false: no value, zero). It reports false, with dst
// as it was, when either is not a plain decimal it handles or the sum is
// out of its range: the caller then takes the big.Float path, which also
// gives the errors.
func incrFloatFast(dst []byte, hasCur bool, cur, by []byte) ([]byte, bool) {
	var a ld
	if hasCur {
		var ok bool
		if a, ok = parseLDFast(cur); !ok {
			return dst, false
		}
	}
	b, ok := parseLDFast(by)
	if !ok {
		return dst, false
	}
	sum, ok := addLD(a, b)
	if !ok {
		return dst, false
	}
	return appendLD(dst, sum)
}

// parseLDFast parses [+-]digits[.digits][(e|E)[+-]digits] into the
// nearest long double when the first 38 significant digits, times a power
// of ten within ±19, decide it: digits past them only matter when they
// could move the value across a rounding boundary, which it then leaves
// to the slow path.
func parseLDFast(b []byte) (ld, bool) {
	i, neg := 0, false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	// dhi:dlo holds the first 38 significant digits; more is set when a
	// later one is not zero.
	var dhi, dlo uint64
	nd, dexp, digits := 0, 0, 0
	more := false
	digit := func(c byte, frac bool) {
		digits++
		switch {
		case nd == 0 && c == '0':
			if frac {
				dexp--
			}
		case nd < 38:
			var carry uint64
			carry, dlo = bits.Mul64(dlo, 10)
			dhi = dhi*10 + carry
			var c2 uint64
			dlo, c2 = bits.Add64(dlo, uint64(c-'0'), 0)
			dhi += c2
			nd++
			if frac {
				dexp--
			}
		default:
			more = more || c != '0'
			if !frac {
				dexp++
			}
		}
	}
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		digit(b[i], false)
	}
	if i < len(b) && b[i] == '.' {
		i++
		n := digits
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			digit(b[i], true)
		}
		if digits == n {
			return ld{}, false // "1.": strtold's, not ours
		}
	}
	if digits == 0 {
		return ld{}, false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		eneg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			eneg = b[i] == '-'
			i++
		}
		e, n := 0, 0
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9' && n < 3; i++ {
			e = e*10 + int(b[i]-'0')
			n++
		}
		if n == 0 {
			return ld{}, false
		}
		if eneg {
			e = -e
		}
		dexp += e
	}
	if i != len(b) || dexp < -19 || dexp > 19 {
		return ld{}, false
	}
	if nd == 0 {
		return ld{neg: neg}, true // a zero: addLD returns the other operand
	}
	x, ok := decimalLD(dhi, dlo, dexp, neg)
	if !more || !ok {
		return x, ok
	}
	// The value lies strictly between d and d+1 times 10^dexp: when both
	// round to the same long double, so does it.
	lo, c := bits.Add64(dlo, 1, 0)
	y, ok := decimalLD(dhi+c, lo, dexp, neg)
	return x, ok && x == y
}

// decimalLD returns the long double nearest d × 10^dexp, for a d of
// 128 bits, not zero, and dexp within ±19.
func decimalLD(dhi, dlo uint64, dexp int, neg bool) (ld, bool) {
	if dexp >= 0 {
		p := pow10u64[dexp]
		h1, w0 := bits.Mul64(dlo, p)
		h2, l2 := bits.Mul64(dhi, p)
		w1, c := bits.Add64(h1, l2, 0)
		return roundLD([4]uint64{w0, w1, h2 + c, 0}, false, 0, neg)
	}
	// d × 2^128 / 10^k, by long division, then 2^-128 back.
	den := pow10u64[-dexp]
	q3, r := bits.Div64(0, dhi, den)
	q2, r := bits.Div64(r, dlo, den)
	q1, r := bits.Div64(r, 0, den)
	q0, r := bits.Div64(r, 0, den)
	return roundLD([4]uint64{q0, q1, q2, q3}, r != 0, -128, neg)
}

// roundLD rounds the non-zero 256-bit integer q (least significant word
// first; sticky: non-zero bits below it were cut off) times 2^exp to the
// nearest long double, ties to even.
func roundLD(q [4]uint64, sticky bool, exp int, neg bool) (ld, bool) {
	n := bitLen256(q)
	if n == 0 {
		return ld{}, false
	}
	if n <= 64 {
		return ld{m: q[0] << (64 - n), exp: exp + n - 64, neg: neg}, true
	}
	s := n - 64
	m := shr256(q, s)
	round := bit256(q, s-1)
	if !sticky {
		sticky = lowBits256(q, s-1)
	}
	if round && (sticky || m&1 == 1) {
		m++
		if m == 0 { // carried out of the 64 bits
			m, s = 1<<63, s+1
		}
	}
	return ld{m: m, exp: exp + s, neg: neg}, true
}

// addLD returns a+b rounded to the nearest long double, ties to even;
// false when the operands' exponents are too far apart for its 128 bits.
func addLD(a, b ld) (ld, bool) {
	if a.m == 0 {
		return b, b.m != 0
	}
	if b.m == 0 {
		return a, true
	}
	if a.exp < b.exp {
		a, b = b, a
	}
	diff := a.exp - b.exp
	if diff > 62 {
		return ld{}, false
	}
	// a.m << diff and b.m, both exact in 128 bits (a shift by 64 is 0).
	ahi, alo := a.m>>(64-diff), a.m<<diff
	var hi, lo uint64
	neg := a.neg
	if a.neg == b.neg {
		var c uint64
		lo, c = bits.Add64(alo, b.m, 0)
		hi, _ = bits.Add64(ahi, 0, c)
	} else {
		var br uint64
		lo, br = bits.Sub64(alo, b.m, 0)
		hi, br = bits.Sub64(ahi, 0, br)
		if br != 0 { // b was larger: only when diff is 0
			lo, hi, neg = -lo, 0, b.neg
		}
		if hi == 0 && lo == 0 {
			return ld{}, false // an exact zero: the slow path gives its sign
		}
	}
	return roundLD([4]uint64{lo, hi, 0, 0}, false, b.exp, neg)
}

// appendLD appends x as "%.17Lf" prints it, trailing zeros and point
// removed, "-0" as "0"; false when x is too large or too small for it.
func appendLD(dst []byte, x ld) ([]byte, bool) {
	if x.exp > -1 || x.exp < -120 {
		// Magnitudes from 2^63 (and zero, whose exp is 0) and below
		// 2^-57, whose digits the slow path prints.
		return dst, false
	}
	f := uint(-x.exp)
	var ip, frac uint64
	if f < 64 {
		ip, frac = x.m>>f, x.m&(1<<f-1)
	} else {
		frac = x.m
	}
	// The 17 decimals: frac × 10^17 / 2^f, rounded.
	hi, lo := bits.Mul64(frac, 1e17)
	dec := shr128(hi, lo, f)
	remHi, remLo := hi, lo
	if f < 64 {
		remHi, remLo = 0, lo&(1<<f-1)
	} else if f < 128 {
		remHi &= 1<<(f-64) - 1
	}
	var halfHi, halfLo uint64
	if f-1 < 64 {
		halfLo = 1 << (f - 1)
	} else {
		halfHi = 1 << (f - 65)
	}
	if c := cmp128(remHi, remLo, halfHi, halfLo); c > 0 || c == 0 && dec&1 == 1 {
		dec++
		if dec == 1e17 {
			dec, ip = 0, ip+1
		}
	}
	if ip == 0 && dec == 0 {
		return append(dst, '0'), true
	}
	if x.neg {
		dst = append(dst, '-')
	}
	dst = strconv.AppendUint(dst, ip, 10)
	if dec == 0 {
		return dst, true
	}
	var digits [17]byte
	for i := 16; i >= 0; i-- {
		digits[i] = byte('0' + dec%10)
		dec /= 10
	}
	end := 17
	for digits[end-1] == '0' {
		end--
	}
	dst = append(dst, '.')
	return append(dst, digits[:end]...), true
}

// bitLen256 returns the bits q needs.
func bitLen256(q [4]uint64) int {
	for w := 3; w > 0; w-- {
		if q[w] != 0 {
			return 64*w + bits.Len64(q[w])
		}
	}
	return bits.Len64(q[0])
}

// shr256 returns the low 64 bits of q >> s, for 0 < s < 256.
func shr256(q [4]uint64, s int) uint64 {
	w, b := s/64, uint(s%64)
	lo := q[w]
	if b == 0 {
		return lo
	}
	var next uint64
	if w+1 < len(q) {
		next = q[w+1]
	}
	return lo>>b | next<<(64-b)
}

// bit256 reports whether bit i of q is set.
func bit256(q [4]uint64, i int) bool { return q[i/64]>>(uint(i)%64)&1 == 1 }

// lowBits256 reports whether any of q's bits below i is set.
func lowBits256(q [4]uint64, i int) bool {
	w, b := i/64, uint(i%64)
	for j := 0; j < w; j++ {
		if q[j] != 0 {
			return true
		}
	}
	return b > 0 && q[w]&(1<<b-1) != 0
}

// shr128 returns the low 64 bits of hi:lo >> s, for 0 < s < 128.
func shr128(hi, lo uint64, s uint) uint64 {
	if s >= 64 {
		return hi >> (s - 64)
	}
	return lo>>s | hi<<(64-s)
}

// cmp128 compares the 128-bit numbers ah:al and bh:bl.
func cmp128(ah, al, bh, bl uint64) int {
	switch {
	case ah != bh:
		if ah < bh {
			return -1
		}
		return 1
	case al < bl:
		return -1
	case al > bl:
		return 1
	}
	return 0
}
