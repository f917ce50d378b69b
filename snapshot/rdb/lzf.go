package rdb

import "errors"

// LZF is the compression Redis applies to strings in RDB files (liblzf's
// format). A compressed stream is a sequence of runs, each starting with
// a control byte c:
//
//	c < 32:  a literal run of c+1 bytes follows
//	c >= 32: a back reference: length l = c>>5 (when 7, plus the next byte),
//	         distance d = (c&31)<<8 | next byte; copy l+2 bytes from
//	         d+1 bytes back in the output

// errLZF reports a compressed string that does not decode to its length.
var errLZF = errors.New("invalid LZF data")

// lzfMaxRatio bounds how much larger than its compressed form LZF data can
// decompress to: a 3-byte back reference yields at most 264 bytes.
const lzfMaxRatio = 88

// lzfDecompress decompresses src into dst, which must have exactly the
// decompressed length.
func lzfDecompress(src, dst []byte) error {
	i, o := 0, 0
	for i < len(src) {
		c := int(src[i])
		i++
		if c < 32 {
			n := c + 1
			if i+n > len(src) || o+n > len(dst) {
				return errLZF
			}
			copy(dst[o:], src[i:i+n])
			i += n
			o += n
			continue
		}
		n := c >> 5
		if n == 7 {
			if i >= len(src) {
				return errLZF
			}
			n += int(src[i])
			i++
		}
		if i >= len(src) {
			return errLZF
		}
		ref := o - (c&31)<<8 - int(src[i]) - 1
		i++
		n += 2
		if ref < 0 || o+n > len(dst) {
			return errLZF
		}
		// The reference may overlap the output being written: copy byte by
		// byte, as the format means.
		for k := 0; k < n; k++ {
			dst[o+k] = dst[ref+k]
		}
		o += n
	}
	if o != len(dst) {
		return errLZF
	}
	return nil
}

// lzfCompress appends the LZF compression of src to dst and returns it, or
// returns nil when the result would not be smaller than limit bytes.
// It finds matches with a hash of the next three bytes, one candidate per
// slot, as liblzf's fast mode does.
func lzfCompress(dst, src []byte, limit int) []byte {
	const (
		hashBits = 14
		maxOff   = 1 << 13
		maxRef   = 264 // 7 + 255 + 2
		maxLit   = 32
	)
	var table [1 << hashBits]int32
	start := len(dst)
	lit := -1 // index in dst of the current literal run's control byte
	emitLit := func(b byte) {
		if lit < 0 || dst[lit] == maxLit-1 {
			lit = len(dst)
			dst = append(dst, 0, b)
			return
		}
		dst[lit]++
		dst = append(dst, b)
	}
	i := 0
	for i+2 < len(src) {
		if len(dst)-start >= limit {
			return nil
		}
		v := uint32(src[i])<<16 | uint32(src[i+1])<<8 | uint32(src[i+2])
		h := (v * 2654435761) >> (32 - hashBits)
		ref := int(table[h]) - 1
		table[h] = int32(i + 1)
		if ref >= 0 && i-ref <= maxOff && src[ref] == src[i] && src[ref+1] == src[i+1] && src[ref+2] == src[i+2] {
			n := 3
			for n < maxRef && i+n < len(src) && src[ref+n] == src[i+n] {
				n++
			}
			off := i - ref - 1
			l := n - 2
			if l < 7 {
				dst = append(dst, byte(l<<5|off>>8), byte(off))
			} else {
				dst = append(dst, byte(7<<5|off>>8), byte(l-7), byte(off))
			}
			lit = -1
			i += n
			continue
		}
		emitLit(src[i])
		i++
	}
	for ; i < len(src); i++ {
		emitLit(src[i])
	}
	if len(dst)-start >= limit {
		return nil
	}
	return dst
}
