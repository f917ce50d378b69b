package rdb

// crcTable is the byte-at-a-time table of the CRC-64 Redis uses for RDB
// files and DUMP payloads: the Jones polynomial 0xad93d23594c935a9,
// reflected input and output, initial value 0, no final xor
// (crc64("123456789") = 0xe9c6d914c4b8d9ca). hash/crc64 offers only the
// ISO and ECMA polynomials.
var crcTable = func() *[8][256]uint64 {
	const poly = 0x95ac9329ac4bc9b5 // 0xad93d23594c935a9 bit-reversed
	var t [8][256]uint64
	for i := range 256 {
		c := uint64(i)
		for range 8 {
			if c&1 == 1 {
				c = c>>1 ^ poly
			} else {
				c >>= 1
			}
		}
		t[0][i] = c
	}
	// Slicing by eight: t[k][i] is the CRC of byte i followed by k zeros.
	for i := range 256 {
		c := t[0][i]
		for k := 1; k < 8; k++ {
			c = t[0][c&0xff] ^ c>>8
			t[k][i] = c
		}
	}
	return &t
}()

// CRC64 returns crc updated with p.
func CRC64(crc uint64, p []byte) uint64 {
	t := crcTable
	for len(p) >= 8 {
		crc ^= uint64(p[0]) | uint64(p[1])<<8 | uint64(p[2])<<16 | uint64(p[3])<<24 |
			uint64(p[4])<<32 | uint64(p[5])<<40 | uint64(p[6])<<48 | uint64(p[7])<<56
		crc = t[7][crc&0xff] ^ t[6][crc>>8&0xff] ^ t[5][crc>>16&0xff] ^ t[4][crc>>24&0xff] ^
			t[3][crc>>32&0xff] ^ t[2][crc>>40&0xff] ^ t[1][crc>>48&0xff] ^ t[0][crc>>56]
		p = p[8:]
	}
	for _, b := range p {
		crc = t[0][byte(crc)^b] ^ crc>>8
	}
	return crc
}
