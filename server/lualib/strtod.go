package lualib

import (
	"math"
	"strconv"
	"strings"
)

// strtod parses the longest prefix of s that C's strtod accepts (without
// leading white space): decimal and hexadecimal floating point numbers,
// inf, infinity and nan with an optional sign. It returns the value and the
// number of bytes used, 0 when no number starts s.
func strtod(s string) (float64, int) {
	i := 0
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	sign := func(f float64) float64 {
		if neg {
			return -f
		}
		return f
	}
	rest := strings.ToLower(s[i:min(len(s), i+8)])
	switch {
	case strings.HasPrefix(rest, "infinity"):
		return sign(math.Inf(1)), i + 8
	case strings.HasPrefix(rest, "inf"):
		return sign(math.Inf(1)), i + 3
	case strings.HasPrefix(rest, "nan"):
		n := i + 3
		if n < len(s) && s[n] == '(' {
			j := n + 1
			for j < len(s) && (isAlnum(s[j]) || s[j] == '_') {
				j++
			}
			if j < len(s) && s[j] == ')' {
				n = j + 1
			}
		}
		return sign(math.NaN()), n
	}
	if i+1 < len(s) && s[i] == '0' && (s[i+1]|0x20) == 'x' {
		if f, n := hexFloat(s[i+2:]); n > 0 {
			return sign(f), i + 2 + n
		}
		// "0x" with no hexadecimal digits: only the 0 is a number.
		return sign(0), i + 1
	}
	start := i
	i, digits := mantissa(s, i, isDigit)
	if digits == 0 {
		return 0, 0
	}
	i = exponent(s, i, 'e')
	f, _ := strconv.ParseFloat(s[start:i], 64) // ErrRange gives ±Inf or 0, as strtod
	return sign(f), i
}

// hexFloat parses hexadecimal digits with an optional fraction and binary
// exponent, after the 0x prefix.
func hexFloat(s string) (float64, int) {
	i, digits := mantissa(s, 0, isHex)
	if digits == 0 {
		return 0, 0
	}
	mant := s[:i]
	exp := "p0"
	if j := exponent(s, i, 'p'); j > i {
		exp, i = s[i:j], j
	}
	if mant[len(mant)-1] == '.' {
		mant = mant[:len(mant)-1]
	}
	if mant[0] == '.' {
		mant = "0" + mant
	}
	f, err := strconv.ParseFloat("0x"+mant+exp, 64)
	if err != nil && f == 0 && !strings.Contains(err.Error(), "range") {
		return 0, 0
	}
	return f, i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || (c|0x20) >= 'a' && (c|0x20) <= 'f' }

func isAlnum(c byte) bool { return isDigit(c) || (c|0x20) >= 'a' && (c|0x20) <= 'z' }

// mantissa scans digits (as digit tells them) with an optional '.' and
// fraction from s[i:], and returns where they end and how many digits
// there were.
func mantissa(s string, i int, digit func(byte) bool) (end, digits int) {
	for i < len(s) && digit(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && digit(s[i]) {
			i++
			digits++
		}
	}
	return i, digits
}

// exponent returns the end of the exponent (the letter mark in any case,
// an optional sign, decimal digits) at s[i:], or i when there is none: a
// mark without digits is not part of the number, as strtod reads it.
func exponent(s string, i int, mark byte) int {
	if i >= len(s) || s[i]|0x20 != mark {
		return i
	}
	j := i + 1
	if j < len(s) && (s[j] == '+' || s[j] == '-') {
		j++
	}
	if j >= len(s) || !isDigit(s[j]) {
		return i
	}
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	return j
}
