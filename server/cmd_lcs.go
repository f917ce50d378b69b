package server

import (
	"math"

	"github.com/recached/recached/resp"
)

const (
	errLCSNotString = "ERR The specified keys must contain string values"
	errLCSLenIdx    = "ERR If you want both the length and indexes, please just use IDX."
	errLCSTooLong   = "ERR String too long for LCS"
	errLCSMemory    = "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
)

func lcsCommands() []*Command {
	return []*Command{
		{Name: "lcs", Arity: -3, Flags: FlagReadonly, FirstKey: 1, LastKey: 2, Step: 1, Group: "string", Since: "7.0.0", Syntax: "key1 key2 [LEN] [IDX] [MINMATCHLEN min-match-len] [WITHMATCHLEN]", Summary: "Finds the longest common substring.", Complexity: "O(N*M) where N and M are the lengths of s1 and s2, respectively", Categories: "read string slow", Handler: cmdLCS},
	}
}

// lcsMatch is one run of consecutive common bytes: a[a0..a1] equals
// b[b0..b1].
type lcsMatch struct {
	a0, a1, b0, b1 int
}

// lcsTable fills the dynamic programming table of a and b: entry
// i*(len(b)+1)+j is the length of the longest common subsequence of a[:i]
// and b[:j].
func lcsTable(a, b []byte) []uint32 {
	w := len(b) + 1
	t := make([]uint32, (len(a)+1)*w)
	for i := 1; i <= len(a); i++ {
		lcsRow(a[i-1], b, t[(i-1)*w:i*w], t[i*w:(i+1)*w])
	}
	return t
}

// lcsRow fills row, the table row that follows prev, for the byte c of the
// first string against b.
func lcsRow(c byte, b []byte, prev, row []uint32) {
	for j := 1; j <= len(b); j++ {
		switch {
		case c == b[j-1]:
			row[j] = prev[j-1] + 1
		case prev[j] > row[j-1]:
			row[j] = prev[j]
		default:
			row[j] = row[j-1]
		}
	}
}

// lcsLen returns the length of the longest common subsequence of a and b
// using two rows of the table.
func lcsLen(a, b []byte) int {
	prev := make([]uint32, len(b)+1)
	row := make([]uint32, len(b)+1)
	for i := 1; i <= len(a); i++ {
		lcsRow(a[i-1], b, prev, row)
		prev, row = row, prev
	}
	return int(prev[len(b)])
}

// lcsWalk walks the table back from its last cell as Redis does, and
// returns the common subsequence and its runs of consecutive matches, from
// the end of the strings backwards. Ties go towards shorter b, so the
// choice of subsequence is Redis's.
func lcsWalk(a, b []byte, t []uint32) ([]byte, []lcsMatch) {
	w := len(b) + 1
	n := int(t[len(a)*w+len(b)])
	res := make([]byte, n)
	var runs []lcsMatch
	cur := lcsMatch{a0: -1}
	i, j := len(a), len(b)
	for i > 0 && j > 0 {
		if a[i-1] == b[j-1] {
			n--
			res[n] = a[i-1]
			if cur.a0 < 0 {
				cur = lcsMatch{a0: i - 1, a1: i - 1, b0: j - 1, b1: j - 1}
			} else {
				cur.a0, cur.b0 = i-1, j-1
			}
			i, j = i-1, j-1
			if i == 0 || j == 0 {
				runs = append(runs, cur)
			}
			continue
		}
		if t[(i-1)*w+j] > t[i*w+j-1] {
			i--
		} else {
			j--
		}
		if cur.a0 >= 0 {
			runs = append(runs, cur)
			cur.a0 = -1
		}
	}
	return res, runs
}

func cmdLCS(s *Session) {
	ea, eb := s.db.Lookup(s.Args[1]), s.db.Lookup(s.Args[2])
	if ea != nil && ea.Obj != nil || eb != nil && eb.Obj != nil {
		s.W.Error(errLCSNotString)
		return
	}
	var a, b []byte
	if ea != nil {
		a = ea.Str
	}
	if eb != nil {
		b = eb.Str
	}
	var getLen, getIdx, withLen bool
	var minLen int64
	for j := 3; j < len(s.Args); j++ {
		switch o := s.Args[j]; {
		case resp.EqualFold(o, "idx"):
			getIdx = true
		case resp.EqualFold(o, "len"):
			getLen = true
		case resp.EqualFold(o, "withmatchlen"):
			withLen = true
		case resp.EqualFold(o, "minmatchlen") && j+1 < len(s.Args):
			n, ok := s.intArg(j + 1)
			if !ok {
				return
			}
			minLen = max(n, 0)
			j++
		default:
			s.W.Error(errSyntax)
			return
		}
	}
	if getIdx && getLen {
		s.W.Error(errLCSLenIdx)
		return
	}
	if len(a) >= math.MaxUint32-1 || len(b) >= math.MaxUint32-1 {
		s.W.Error(errLCSTooLong)
		return
	}
	if cells := uint64(len(a)+1) * uint64(len(b)+1); cells*4 > maxStringLen {
		s.W.Error(errLCSMemory)
		return
	}
	if getLen {
		s.W.Int(int64(lcsLen(a, b)))
		return
	}
	t := lcsTable(a, b)
	res, runs := lcsWalk(a, b, t)
	if !getIdx {
		s.W.Bulk(res)
		return
	}
	n := 0
	for _, r := range runs {
		if int64(r.a1-r.a0+1) >= minLen {
			n++
		}
	}
	s.W.Map(2)
	s.W.BulkString("matches")
	s.W.Array(n)
	for _, r := range runs {
		l := int64(r.a1 - r.a0 + 1)
		if l < minLen {
			continue
		}
		if withLen {
			s.W.Array(3)
		} else {
			s.W.Array(2)
		}
		s.W.Array(2)
		s.W.Int(int64(r.a0))
		s.W.Int(int64(r.a1))
		s.W.Array(2)
		s.W.Int(int64(r.b0))
		s.W.Int(int64(r.b1))
		if withLen {
			s.W.Int(l)
		}
	}
	s.W.BulkString("len")
	s.W.Int(int64(len(res)))
}
