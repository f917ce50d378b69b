package keyspace

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"unsafe"
)

// The packed form of a small sorted set (Redis's "listpack") is one byte
// array of entries in ascending (score, member) order, each
//
//	uvarint len(member) | member | score
//
// where the score is a uvarint v: an even v is the integer zigzag(v>>1)
// (a whole score within ±2^52), v == 1 is followed by the 8 bytes of the
// float64, little endian. A whole score is then one to four bytes, and -0
// is the integer 0, as a listpack stores it.
//
// The array is never changed once built: every write builds a new one. A
// member read from it (a string viewing the array) therefore stays valid
// after the set changes, as a skip list's member strings do, and copies of
// the set can share the array.

// zpackMax bounds the packed array, as Redis's lpSafeToAdd bounds a
// listpack (1 GB): a set that would grow past it is converted.
const zpackMax = 1 << 30

// zintMax bounds the whole scores packed as integers: every integer up to
// it is exact in a float64.
const zintMax = 1 << 52

// appendZEntry appends the packed entry of (member, score) to b.
func appendZEntry(b []byte, member string, score float64) []byte {
	b = binary.AppendUvarint(b, uint64(len(member)))
	b = append(b, member...)
	if i := int64(score); float64(i) == score && i >= -zintMax && i <= zintMax {
		zz := uint64(i<<1) ^ uint64(i>>63)
		return binary.AppendUvarint(b, zz<<1)
	}
	b = append(b, 1)
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(score))
}

// zentrySize is the length of the packed entry of (member, score).
func zentrySize(member string, score float64) int {
	var buf [binary.MaxVarintLen64 + 9]byte
	return len(appendZEntry(buf[:0], "", score)) - 1 + uvarintLen(uint64(len(member))) + len(member)
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// zuvarint decodes the uvarint at b[off:], returning it and the offset
// after it. The arrays are built by appendZEntry, so it never fails.
func zuvarint(b []byte, off int) (uint64, int) {
	if c := b[off]; c < 0x80 {
		return uint64(c), off + 1
	}
	v, n := binary.Uvarint(b[off:])
	return v, off + n
}

// zmember returns the member of the entry at off, viewing b, and the
// offset of its score.
func zmember(b []byte, off int) (string, int) {
	n, p := zuvarint(b, off)
	end := p + int(n)
	return unsafe.String(unsafe.SliceData(b[p:end]), end-p), end
}

// zscore decodes the score at off and returns it and the offset after it.
func zscore(b []byte, off int) (float64, int) {
	v, p := zuvarint(b, off)
	if v&1 == 0 {
		u := v >> 1
		return float64(int64(u>>1) ^ -int64(u&1)), p
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b[p:])), p + 8
}

// zentry decodes the entry at off: its member, score and the offset of the
// next entry.
func zentry(b []byte, off int) (member string, score float64, next int) {
	member, p := zmember(b, off)
	score, next = zscore(b, p)
	return member, score, next
}

// zskip returns the offset of the entry after the one at off.
func zskip(b []byte, off int) int {
	_, p := zmember(b, off)
	return zskipScore(b, p)
}

// zskipScore returns the offset after the score at off.
func zskipScore(b []byte, off int) int {
	v, p := zuvarint(b, off)
	if v&1 != 0 {
		p += 8
	}
	return p
}

// zbefore reports whether (s1, m1) sorts before (s2, m2).
func zbefore(s1 float64, m1 string, s2 float64, m2 string) bool {
	return s1 < s2 || (s1 == s2 && m1 < m2)
}

// zpackFind returns the entry of member in b: its offset, the next entry's
// offset, its rank and score.
func zpackFind(b []byte, member string) (off, next, rank int, score float64, ok bool) {
	for off < len(b) {
		m, p := zmember(b, off)
		if m == member {
			score, next = zscore(b, p)
			return off, next, rank, score, true
		}
		off = zskipScore(b, p)
		rank++
	}
	return 0, 0, 0, 0, false
}

// zpackInsertAt returns the offset of the first entry of b that does not
// sort before (score, member), skipping the entry at skip (-1: none); the
// length of b when there is none.
func zpackInsertAt(b []byte, score float64, member string, skip int) int {
	off := 0
	for off < len(b) {
		m, s, next := zentry(b, off)
		if off != skip && !zbefore(s, m, score, member) {
			return off
		}
		off = next
	}
	return off
}

// zpackAt returns the offset of the entry of rank r (0-based), len(b) for
// r == the number of entries.
func zpackAt(b []byte, r int) int {
	off := 0
	for ; r > 0 && off < len(b); r-- {
		off = zskip(b, off)
	}
	return off
}

// zrebuild returns a new array holding b with b[del:delEnd] removed and
// entry inserted at offset at, an offset of b outside (del, delEnd).
func zrebuild(b []byte, del, delEnd, at int, entry []byte) []byte {
	n := len(b) - (delEnd - del) + len(entry)
	if n == 0 {
		return nil
	}
	out := make([]byte, 0, n)
	if at <= del {
		out = append(out, b[:at]...)
		out = append(out, entry...)
		out = append(out, b[at:del]...)
	} else {
		out = append(out, b[:del]...)
		out = append(out, b[delEnd:at]...)
		out = append(out, entry...)
		delEnd = at
	}
	return append(out, b[delEnd:]...)
}

// AddNew adds n members, member(j) with scores[j], to an empty set, as n
// calls of Store would, building its packed array once instead of once
// per member (the array is never changed in place). It changes nothing
// and returns false when a member comes twice or the members would not
// stay packed under lim: Store then does the work one member at a time.
// A member is copied; -0 is stored as 0, as Store stores it.
func (z *ZSet) AddNew(n int, member func(j int) []byte, scores []float64, lim ZLimits) bool {
	if z.big != nil || z.n != 0 || n > lim.Entries || n > len(scores) {
		return false
	}
	var stack [16]int
	order := stack[:0]
	if n > len(stack) {
		order = make([]int, 0, n)
	}
	order = order[:n]
	size := 0
	for j := range order {
		m := member(j)
		if len(m) > lim.Value {
			return false
		}
		size += zentrySize(view(m), scores[j])
		order[j] = j
	}
	if size > zpackMax {
		return false
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(view(member(a)), view(member(b))) })
	for k := 1; k < n; k++ {
		if string(member(order[k-1])) == string(member(order[k])) {
			return false
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(scores[a], scores[b]) })
	b := make([]byte, 0, size)
	for _, j := range order {
		b = appendZEntry(b, view(member(j)), scores[j])
	}
	z.setPacked(b, n)
	return true
}
