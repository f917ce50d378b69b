package server

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
)

// Sorted set error texts, in Redis's words.
const (
	errZNaN        = "ERR resulting score is not a number (NaN)"
	errZLexRange   = "ERR min or max not valid string range item"
	errZWeight     = "ERR weight value is not a float"
	errZRangeLimit = "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
	errZLexScores  = "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
	errZNXXX       = "ERR XX and NX options at the same time are not compatible"
	errZGTLTNX     = "ERR GT, LT, and/or NX options at the same time are not compatible"
	errZIncrPair   = "ERR INCR option supports a single increment-element pair"
	errZNeedKeys   = "ERR at least 1 input key is needed for '" // + command + "' command"
)

func zsetCommands() []*Command {
	k1 := keysIn("sorted-set", 1, 1)
	movable := func(c *Command, numIdx int, dst bool) *Command {
		c.Flags |= FlagMovableKeys
		c.Keys = zsetKeys(numIdx, dst)
		c.Group = "sorted-set"
		if dst {
			c.FirstKey, c.LastKey, c.Step = 1, 1, 1
		}
		return c
	}
	const (
		read      = "read sortedset fast"
		readSlow  = "read sortedset slow"
		write     = "write sortedset fast"
		writeSlow = "write sortedset slow"
	)
	ro, rw := FlagReadonly, FlagWrite
	return []*Command{
		k1(&Command{Name: "zadd", Arity: -4, Flags: rw | FlagDenyOOM | FlagFast | FlagSized, KeySpecs: "RW update", Since: "1.2.0", Syntax: "key [NX | XX] [GT | LT] [CH] [INCR] score member [score member ...]", Summary: "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.", Categories: write, Handler: cmdZAdd}),
		k1(&Command{Name: "zincrby", Arity: 4, Flags: rw | FlagDenyOOM | FlagFast | FlagSized, Since: "1.2.0", Syntax: "key increment member", Summary: "Increments the score of a member in a sorted set.", Categories: write, Handler: cmdZIncrBy}),
		k1(&Command{Name: "zrem", Arity: -3, Flags: rw | FlagFast, KeySpecs: "RW delete", Since: "1.2.0", Syntax: "key member [member ...]", Summary: "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.", Categories: write, Handler: cmdZRem}),
		k1(&Command{Name: "zscore", Arity: 3, Flags: ro | FlagFast, Since: "1.2.0", Syntax: "key member", Summary: "Returns the score of a member in a sorted set.", Categories: read, Handler: cmdZScore}),
		k1(&Command{Name: "zmscore", Arity: -3, Flags: ro | FlagFast, Since: "6.2.0", Syntax: "key member [member ...]", Summary: "Returns the score of one or more members in a sorted set.", Categories: read, Handler: cmdZMScore}),
		k1(&Command{Name: "zcard", Arity: 2, Flags: ro | FlagFast, KeySpecs: "RO", Since: "1.2.0", Syntax: "key", Summary: "Returns the number of members in a sorted set.", Categories: read, Handler: lenCmd(keyspace.TypeZSet)}),
		k1(&Command{Name: "zcount", Arity: 4, Flags: ro | FlagFast, Since: "2.0.0", Syntax: "key min max", Summary: "Returns the count of members in a sorted set that have scores within a range.", Categories: read, Handler: zcountCmd(zrScore)}),
		k1(&Command{Name: "zlexcount", Arity: 4, Flags: ro | FlagFast, Since: "2.8.9", Syntax: "key min max", Summary: "Returns the number of members in a sorted set within a lexicographical range.", Categories: read, Handler: zcountCmd(zrLex)}),
		k1(&Command{Name: "zrange", Arity: -4, Flags: ro, Since: "1.2.0", Syntax: "key start stop [BYSCORE | BYLEX] [REV] [LIMIT offset count] [WITHSCORES]", Summary: "Returns members in a sorted set within a range of indexes.", Categories: readSlow, Handler: zrangeCmd(zrAuto, zdAuto)}),
		k1(&Command{Name: "zrangebyscore", Arity: -4, Flags: ro, Since: "1.0.5", Syntax: "key min max [WITHSCORES] [LIMIT offset count]", Summary: "Returns members in a sorted set within a range of scores.", Categories: readSlow, Handler: zrangeCmd(zrScore, zdFwd)}),
		k1(&Command{Name: "zrevrange", Arity: -4, Flags: ro, Since: "1.2.0", Syntax: "key start stop [WITHSCORES]", Summary: "Returns members in a sorted set within a range of indexes in reverse order.", Categories: readSlow, Handler: zrangeCmd(zrRank, zdRev)}),
		k1(&Command{Name: "zrevrangebyscore", Arity: -4, Flags: ro, Since: "2.2.0", Syntax: "key max min [WITHSCORES] [LIMIT offset count]", Summary: "Returns members in a sorted set within a range of scores in reverse order.", Categories: readSlow, Handler: zrangeCmd(zrScore, zdRev)}),
		k1(&Command{Name: "zrangebylex", Arity: -4, Flags: ro, Since: "2.8.9", Syntax: "key min max [LIMIT offset count]", Summary: "Returns members in a sorted set within a lexicographical range.", Categories: readSlow, Handler: zrangeCmd(zrLex, zdFwd)}),
		k1(&Command{Name: "zrevrangebylex", Arity: -4, Flags: ro, Since: "2.8.9", Syntax: "key max min [LIMIT offset count]", Summary: "Returns members in a sorted set within a lexicographical range in reverse order.", Categories: readSlow, Handler: zrangeCmd(zrLex, zdRev)}),
		{Name: "zrangestore", Arity: -5, Flags: rw | FlagDenyOOM, FirstKey: 1, LastKey: 2, Step: 1, Group: "sorted-set", KeySpecs: "OW update; RO access", Since: "6.2.0", Syntax: "dst src min max [BYSCORE | BYLEX] [REV] [LIMIT offset count]", Summary: "Stores a range of members from sorted set in a key.", Categories: writeSlow, Handler: cmdZRangeStore},
		k1(&Command{Name: "zrank", Arity: -3, Flags: ro | FlagFast, Since: "2.0.0", Syntax: "key member [WITHSCORE]", Summary: "Returns the index of a member in a sorted set ordered by ascending scores.", Categories: read, Handler: zrankCmd("zrank", false)}),
		k1(&Command{Name: "zrevrank", Arity: -3, Flags: ro | FlagFast, Since: "2.0.0", Syntax: "key member [WITHSCORE]", Summary: "Returns the index of a member in a sorted set ordered by descending scores.", Categories: read, Handler: zrankCmd("zrevrank", true)}),
		k1(&Command{Name: "zremrangebyrank", Arity: 4, Flags: rw, KeySpecs: "RW delete", Since: "2.0.0", Syntax: "key start stop", Summary: "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.", Categories: writeSlow, Handler: zremRangeCmd(zrRank)}),
		k1(&Command{Name: "zremrangebyscore", Arity: 4, Flags: rw, KeySpecs: "RW delete", Since: "1.2.0", Syntax: "key min max", Summary: "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.", Categories: writeSlow, Handler: zremRangeCmd(zrScore)}),
		k1(&Command{Name: "zremrangebylex", Arity: 4, Flags: rw, KeySpecs: "RW delete", Since: "2.8.9", Syntax: "key min max", Summary: "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.", Categories: writeSlow, Handler: zremRangeCmd(zrLex)}),
		k1(&Command{Name: "zpopmin", Arity: -2, Flags: rw | FlagFast, KeySpecs: "RW access delete", Since: "5.0.0", Syntax: "key [count]", Summary: "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", Categories: write, Handler: zpopCmd(false)}),
		k1(&Command{Name: "zpopmax", Arity: -2, Flags: rw | FlagFast, KeySpecs: "RW access delete", Since: "5.0.0", Syntax: "key [count]", Summary: "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", Categories: write, Handler: zpopCmd(true)}),
		{Name: "bzpopmin", Arity: -3, Flags: rw | FlagNoScript | FlagFast | FlagBlocking, FirstKey: 1, LastKey: -2, Step: 1, Group: "sorted-set", KeySpecs: "RW access delete", Since: "5.0.0", Syntax: "key [key ...] timeout", Summary: "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", Categories: "write sortedset fast blocking", Handler: bzpopCmd(false)},
		{Name: "bzpopmax", Arity: -3, Flags: rw | FlagNoScript | FlagFast | FlagBlocking, FirstKey: 1, LastKey: -2, Step: 1, Group: "sorted-set", KeySpecs: "RW access delete", Since: "5.0.0", Syntax: "key [key ...] timeout", Summary: "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise.  Deletes the sorted set if the last element was popped.", Categories: "write sortedset fast blocking", Handler: bzpopCmd(true)},
		movable(&Command{Name: "bzmpop", Arity: -5, Flags: rw | FlagBlocking, KeySpecs: "RW access delete", Since: "7.0.0", Syntax: "timeout numkeys key [key ...] (MIN | MAX) [COUNT count]", Summary: "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", Categories: "write sortedset slow blocking", Handler: cmdBZMPop}, 2, false),
		movable(&Command{Name: "zmpop", Arity: -4, Flags: rw, KeySpecs: "RW access delete", Since: "7.0.0", Syntax: "numkeys key [key ...] (MIN | MAX) [COUNT count]", Summary: "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped.", Categories: writeSlow, Handler: cmdZMPop}, 1, false),
		movable(&Command{Name: "zunion", Arity: -3, Flags: ro, Since: "6.2.0", Syntax: "numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE (SUM | MIN | MAX)] [WITHSCORES]", Summary: "Returns the union of multiple sorted sets.", Categories: readSlow, Handler: zsetOpCmd("zunion", zopUnion, false)}, 1, false),
		movable(&Command{Name: "zinter", Arity: -3, Flags: ro, Since: "6.2.0", Syntax: "numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE (SUM | MIN | MAX)] [WITHSCORES]", Summary: "Returns the intersect of multiple sorted sets.", Categories: readSlow, Handler: zsetOpCmd("zinter", zopInter, false)}, 1, false),
		movable(&Command{Name: "zdiff", Arity: -3, Flags: ro, Since: "6.2.0", Syntax: "numkeys key [key ...] [WITHSCORES]", Summary: "Returns the difference between multiple sorted sets.", Categories: readSlow, Handler: zsetOpCmd("zdiff", zopDiff, false)}, 1, false),
		movable(&Command{Name: "zunionstore", Arity: -4, Flags: rw | FlagDenyOOM, KeySpecs: "OW update; RO access", Since: "2.0.0", Syntax: "destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE (SUM | MIN | MAX)]", Summary: "Stores the union of multiple sorted sets in a key.", Categories: writeSlow, Handler: zsetOpCmd("zunionstore", zopUnion, true)}, 2, true),
		movable(&Command{Name: "zinterstore", Arity: -4, Flags: rw | FlagDenyOOM, KeySpecs: "OW update; RO access", Since: "2.0.0", Syntax: "destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE (SUM | MIN | MAX)]", Summary: "Stores the intersect of multiple sorted sets in a key.", Categories: writeSlow, Handler: zsetOpCmd("zinterstore", zopInter, true)}, 2, true),
		movable(&Command{Name: "zdiffstore", Arity: -4, Flags: rw | FlagDenyOOM, KeySpecs: "OW update; RO access", Since: "6.2.0", Syntax: "destination numkeys key [key ...]", Summary: "Stores the difference of multiple sorted sets in a key.", Categories: writeSlow, Handler: zsetOpCmd("zdiffstore", zopDiff, true)}, 2, true),
		movable(&Command{Name: "zintercard", Arity: -3, Flags: ro, Since: "7.0.0", Syntax: "numkeys key [key ...] [LIMIT limit]", Summary: "Returns the number of members of the intersect of multiple sorted sets.", Categories: readSlow, Handler: zsetOpCmd("zintercard", zopInterCard, false)}, 1, false),
		k1(&Command{Name: "zrandmember", Arity: -2, Flags: ro, Since: "6.2.0", Syntax: "key [count [WITHSCORES]]", Summary: "Returns one or more random members from a sorted set.", Categories: readSlow, Handler: cmdZRandMember}),
		k1(&Command{Name: "zscan", Arity: -3, Flags: ro, Since: "2.8.0", Syntax: "key cursor [MATCH pattern] [COUNT count]", Summary: "Iterates over members and scores of a sorted set.", Categories: readSlow, Handler: cmdZScan}),
	}
}

// zsetKeys returns the key finder of a command whose keys are counted by
// the argument at numIdx, preceded by a destination key when dst is set.
// Malformed counts yield the keys that are surely there; the handler
// rejects the command before touching any other.
func zsetKeys(numIdx int, dst bool) func(args [][]byte) [][]byte {
	return func(args [][]byte) [][]byte {
		var keys [][]byte
		if dst && len(args) > 1 {
			keys = append(keys, args[1])
		}
		if numIdx >= len(args) {
			return keys
		}
		n, ok := resp.ParseInt(args[numIdx])
		if !ok || n < 1 {
			return keys
		}
		end := len(args)
		if n < int64(end-numIdx-1) {
			end = numIdx + 1 + int(n)
		}
		return append(keys, args[numIdx+1:end]...)
	}
}

// lookupZSet returns key's sorted set, nil when the key is absent; wrong
// reports (and replies to) a value of another type.
func (s *Session) lookupZSet(key []byte) (z *keyspace.ZSet, wrong bool) {
	e, wrong := s.lookupType(key, keyspace.TypeZSet)
	if e == nil {
		return nil, wrong
	}
	return e.Obj.(*keyspace.ZSet), false
}

// zlimits returns zset-max-listpack-entries and -value.
func (s *Session) zlimits() keyspace.ZLimits { return s.srv.ks.ZSetLimits() }

// applyZSetLimits makes zset-max-listpack-entries and -value take effect.
// The caller holds cfgMu, and the new value is in params.
func applyZSetLimits(srv *Server, _ string) {
	def := keyspace.DefaultZLimits()
	srv.ks.SetZSetLimits(keyspace.ZLimits{
		Entries: srv.intParam("zset-max-listpack-entries", def.Entries),
		Value:   srv.intParam("zset-max-listpack-value", def.Value),
	})
}

// zpair is one member and score of a result being built.
type zpair struct {
	member string
	score  float64
}

// zstoreResult replaces dst's value with a sorted set of pairs and replies
// with its size; an empty result deletes dst. The set is built by adding
// the pairs in order, as the ZADD effect that follows DEL dst lists them,
// so that replaying the effects builds the very same set: the order
// decides when a listpack-sized set turns into a skip list, which keeps -0
// scores that a listpack stores as 0. Redis builds ZRANGESTORE's result
// member by member too; it builds an algebra result as a skip list and
// converts it if small, which regroup approaches by adding long members
// first and -0 scores last. event is the command's keyspace event.
func (s *Session) zstoreResult(dst []byte, pairs []zpair, regroup bool, event string) {
	if len(pairs) == 0 {
		s.zstoreEmpty(dst)
		return
	}
	lim := s.zlimits()
	if regroup {
		ordered := make([]zpair, 0, len(pairs))
		for pass := 0; pass < 3; pass++ {
			for _, p := range pairs {
				negZero := p.score == 0 && math.Signbit(p.score)
				long := len(p.member) > lim.Value
				if (pass == 0 && long) || (pass == 1 && !long && !negZero) || (pass == 2 && !long && negZero) {
					ordered = append(ordered, p)
				}
			}
		}
		pairs = ordered
	}
	z := keyspace.NewZSet()
	for _, p := range pairs {
		z.AddString(p.member, p.score, lim)
	}
	s.db.Set(dst, &keyspace.Entry{Obj: z, Atime: s.srv.ks.Clock()})
	s.emit(bDEL, dst)
	eff := zeffect{n: 2 * len(pairs), size: 24 * len(pairs)}
	for _, p := range pairs {
		stored, _ := z.ScoreString(p.member)
		eff.addScore(stored)
		eff.addString(p.member)
	}
	eff.emit(s, bZADD, dst)
	s.W.Int(int64(z.Len()))
	s.notify(notifyZSet, event, dst)
}

// zstoreEmpty handles a store command whose result is empty: dst is
// deleted.
func (s *Session) zstoreEmpty(dst []byte) {
	deleted := s.db.Delete(dst)
	if deleted {
		s.emit(bDEL, dst)
	}
	s.W.Int(0)
	if deleted {
		s.notify(notifyGeneric, "del", dst)
	}
}

// zeffect builds the arguments of one effect (ZADD k s m …, ZREM k m …):
// two slots for the command and key, then arguments that either refer to
// the request's own arguments or are formatted into one buffer, so that a
// command touching many members allocates little. Earlier arguments stay
// valid when the buffer grows: they keep the old array.
type zeffect struct {
	args [][]byte
	buf  []byte
	n    int // expected arguments, for the first allocation
	size int // expected formatted bytes
	// s, when set, lends its buffers and gets them back from emit.
	s *Session
}

// reusedZEffect returns a zeffect formatted into the session's buffers,
// kept from one command to the next, so that a ZADD or GEOADD of a few
// members allocates nothing for its effect (which publish copies).
func (s *Session) reusedZEffect(n, size int) zeffect {
	e := zeffect{n: n, size: size, s: s}
	if s.zeff != nil {
		e.args, e.buf = s.zeff.args[:0], s.zeff.buf[:0]
	}
	return e
}

// zeffectBufs are the buffers a session lends its ZADD effects.
type zeffectBufs struct {
	args [][]byte
	buf  []byte
}

// add appends an argument that stays valid until the effect is emitted.
func (e *zeffect) add(b []byte) {
	if len(e.args) == 0 {
		if cap(e.args) < 2+e.n {
			e.args = make([][]byte, 0, 2+max(e.n, 6))
		}
		e.args = e.args[:2]
	}
	e.args = append(e.args, b)
}

// addString appends a copy of m.
func (e *zeffect) addString(m string) {
	if cap(e.buf) == 0 {
		e.buf = make([]byte, 0, max(e.size, 64))
	}
	start := len(e.buf)
	e.buf = append(e.buf, m...)
	e.add(e.buf[start:len(e.buf):len(e.buf)])
}

// addScore appends a score in a form that parses back to the same double.
func (e *zeffect) addScore(f float64) {
	if cap(e.buf) == 0 {
		e.buf = make([]byte, 0, max(e.size, 32))
	}
	start := len(e.buf)
	e.buf = zappendScore(e.buf, f)
	e.add(e.buf[start:len(e.buf):len(e.buf)])
}

// emit reports the effect cmd key <collected arguments>, if any.
func (e *zeffect) emit(s *Session, cmd, key []byte) {
	if len(e.args) == 0 {
		return
	}
	e.args[0], e.args[1] = cmd, key
	s.emit(e.args...)
	// The buffers go back to the session unless they grew large; the
	// arguments are cleared so that they keep no request alive.
	if e.s != nil && cap(e.args) <= 64 && cap(e.buf) <= 1024 {
		clear(e.args)
		if e.s.zeff == nil {
			e.s.zeff = &zeffectBufs{}
		}
		e.s.zeff.args, e.s.zeff.buf = e.args[:0], e.buf[:0]
	}
}

// zappendScore formats f so that it parses back exactly: a whole number
// below 2^53 as an integer (as Redis's GEOADD passes its positions on,
// and quicker to format), inf and -inf as Redis spells them, any other
// number in the shortest round-trip form.
func zappendScore(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	case f == math.Trunc(f) && math.Abs(f) < 1<<53 && (f != 0 || !math.Signbit(f)):
		return strconv.AppendInt(b, int64(f), 10)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// zstrtod reads the longest prefix of b that C's strtod would read. It
// returns the value, the prefix length (0 when there is no number, leading
// space not counted then) and whether the value overflowed or underflowed
// to zero (strtod's ERANGE).
func zstrtod(b []byte) (f float64, n int, erange bool) {
	i := 0
	for i < len(b) && isSpaceByte(b[i]) {
		i++
	}
	start := i
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	rest := b[i:]
	sign := 1.0
	if neg {
		sign = -1
	}
	switch {
	case zhasPrefixFold(rest, "infinity"):
		return math.Inf(int(sign)), i + 8, false
	case zhasPrefixFold(rest, "inf"):
		return math.Inf(int(sign)), i + 3, false
	case zhasPrefixFold(rest, "nan"):
		m := 3
		if len(rest) > 3 && rest[3] == '(' {
			j := 4
			for j < len(rest) && (zisAlnum(rest[j]) || rest[j] == '_') {
				j++
			}
			if j < len(rest) && rest[j] == ')' {
				m = j + 1
			}
		}
		return math.NaN(), i + m, false
	}
	hex := len(rest) >= 2 && rest[0] == '0' && (rest[1] == 'x' || rest[1] == 'X')
	digit := zisDigit
	j := 0
	if hex {
		digit = zisHex
		j = 2
	}
	// The mantissa is also read into m while it fits (sig counts its
	// digits from the first nonzero one, frac those after the point), for
	// the exact conversion of a decimal number below.
	digits, nonzero := 0, false
	var m uint64
	sig, frac := 0, 0
	for ; j < len(rest) && digit(rest[j]); j++ {
		digits++
		nonzero = nonzero || rest[j] != '0'
		if nonzero && sig < 20 {
			sig++
			m = m*10 + uint64(rest[j]-'0')
		}
	}
	if j < len(rest) && rest[j] == '.' {
		for j++; j < len(rest) && digit(rest[j]); j++ {
			digits++
			nonzero = nonzero || rest[j] != '0'
			if nonzero && sig < 20 {
				sig++
				m = m*10 + uint64(rest[j]-'0')
			}
			frac++
		}
	}
	if digits == 0 {
		if hex { // "0x" without digits reads as 0 followed by "x"
			return math.Copysign(0, sign), i + 1, false
		}
		return 0, 0, false
	}
	end := j
	expChar := byte('e')
	if hex {
		expChar = 'p'
	}
	exp, expNeg := 0, false
	if j < len(rest) && (rest[j]|0x20) == expChar {
		k := j + 1
		if k < len(rest) && (rest[k] == '+' || rest[k] == '-') {
			expNeg = rest[k] == '-'
			k++
		}
		if k < len(rest) && zisDigit(rest[k]) {
			for ; k < len(rest) && zisDigit(rest[k]); k++ {
				if exp < 10000 {
					exp = exp*10 + int(rest[k]-'0')
				}
			}
			end = k
		}
	}
	if expNeg {
		exp = -exp
	}
	if !hex {
		if f, ok := zexactFloat(m, sig, exp-frac); ok {
			return sign * f, i + end, false
		}
	}
	lit := string(b[start : i+end])
	if hex && end == j {
		lit += "p0"
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, 0, false
	}
	erange = math.IsInf(f, 0) || (f == 0 && nonzero)
	return f, i + end, erange
}

// zpow10 are the powers of ten a float64 holds exactly.
var zpow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// zexactFloat returns m×10^e, for the sig significant digits of m, when
// one correctly rounded operation on exact values computes it: m below
// 2^53 and the power of ten exact. Most scores and coordinates are such
// numbers, and this is quicker than the general parser.
func zexactFloat(m uint64, sig, e int) (float64, bool) {
	if sig >= 20 || m >= 1<<53 || e < -22 || e > 22 {
		return 0, false
	}
	if e < 0 {
		return float64(m) / zpow10[-e], true
	}
	return float64(m) * zpow10[e], true
}

func zhasPrefixFold(b []byte, word string) bool {
	return len(b) >= len(word) && resp.EqualFold(b[:len(word)], word)
}

func zisDigit(c byte) bool { return c >= '0' && c <= '9' }
func zisHex(c byte) bool   { return zisDigit(c) || (c|0x20) >= 'a' && (c|0x20) <= 'f' }
func zisAlnum(c byte) bool { return zisDigit(c) || (c|0x20) >= 'a' && (c|0x20) <= 'z' }

// zparseScore parses a score or increment as Redis's string2d: the whole
// argument, no leading space, no NaN, no overflow and no underflow to zero.
func zparseScore(b []byte) (float64, bool) {
	if len(b) == 0 || isSpaceByte(b[0]) {
		return 0, false
	}
	f, n, erange := zstrtod(b)
	if n != len(b) || math.IsNaN(f) || (erange && (math.IsInf(f, 0) || f == 0)) {
		return 0, false
	}
	return f, true
}

// zparseScoreBound parses one end of a score range as Redis does: an
// optional '(' for an exclusive end, then what strtod reads, which must
// reach the end of the argument (or a NUL byte) and not be NaN.
func zparseScoreBound(b []byte) (v float64, ex, ok bool) {
	if len(b) > 0 && b[0] == '(' {
		ex = true
		b = b[1:]
	}
	f, n, _ := zstrtod(b)
	if (n < len(b) && b[n] != 0) || math.IsNaN(f) {
		return 0, false, false
	}
	return f, ex, true
}

// zscoreRange parses a min and max score pair, replying on error.
func (s *Session) zscoreRange(min, max []byte) (r keyspace.ScoreRange, ok bool) {
	var ok1, ok2 bool
	r.Min, r.MinEx, ok1 = zparseScoreBound(min)
	r.Max, r.MaxEx, ok2 = zparseScoreBound(max)
	if !ok1 || !ok2 {
		s.W.Error(errMinMaxFloat)
		return r, false
	}
	return r, true
}

// zparseLexBound parses "-", "+", "[member" or "(member".
func zparseLexBound(b []byte) (keyspace.LexBound, bool) {
	if len(b) == 0 {
		return keyspace.LexBound{}, false
	}
	switch b[0] {
	case '+', '-':
		if len(b) > 1 && b[1] != 0 {
			return keyspace.LexBound{}, false
		}
		inf := 1
		if b[0] == '-' {
			inf = -1
		}
		return keyspace.LexBound{Inf: inf, Ex: true}, true
	case '(':
		return keyspace.LexBound{Value: string(b[1:]), Ex: true}, true
	case '[':
		return keyspace.LexBound{Value: string(b[1:])}, true
	}
	return keyspace.LexBound{}, false
}

// zlexRange parses a min and max lex pair, replying on error.
func (s *Session) zlexRange(min, max []byte) (r keyspace.LexRange, ok bool) {
	var ok1, ok2 bool
	r.Min, ok1 = zparseLexBound(min)
	r.Max, ok2 = zparseLexBound(max)
	if !ok1 || !ok2 {
		s.W.Error(errZLexRange)
		return r, false
	}
	return r, true
}

// pairHeader writes the array header of n elements, with their scores
// (values for HRANDFIELD) when withScores: flat in RESP2, pairs in RESP3.
func (s *Session) pairHeader(n int, withScores bool) {
	if withScores && s.W.Proto == 2 {
		s.W.Array(2 * n)
	} else {
		s.W.Array(n)
	}
}

// zwriteElem writes one element of a reply pairHeader opened.
func (s *Session) zwriteElem(member string, score float64, withScores bool) {
	if withScores && s.W.Proto == 3 {
		s.W.Array(2)
	}
	s.W.BulkString(member)
	if withScores {
		s.W.Double(score)
	}
}

func cmdZAdd(s *Session)    { s.zadd(false) }
func cmdZIncrBy(s *Session) { s.zadd(true) }

// zadd runs ZADD, and ZINCRBY as ZADD INCR: Redis parses both alike, so
// "ZINCRBY k NX m" is a syntax error.
func (s *Session) zadd(incr bool) {
	var nx, xx, gt, lt, ch bool
	i := 2
options:
	for ; i < len(s.Args); i++ {
		a := s.Args[i]
		switch {
		case resp.EqualFold(a, "nx"):
			nx = true
		case resp.EqualFold(a, "xx"):
			xx = true
		case resp.EqualFold(a, "gt"):
			gt = true
		case resp.EqualFold(a, "lt"):
			lt = true
		case resp.EqualFold(a, "ch"):
			ch = true
		case resp.EqualFold(a, "incr"):
			incr = true
		default:
			break options
		}
	}
	elements := len(s.Args) - i
	if elements == 0 || elements%2 != 0 {
		s.W.Error(errSyntax)
		return
	}
	pairs := elements / 2
	switch {
	case nx && xx:
		s.W.Error(errZNXXX)
		return
	case (gt || lt) && nx, gt && lt:
		s.W.Error(errZGTLTNX)
		return
	case incr && pairs > 1:
		s.W.Error(errZIncrPair)
		return
	}
	// Sized once: a score slice grown by append leaves garbage in the
	// size classes of the entries and packed arrays a load keeps.
	var small [16]float64
	scores := small[:0]
	if pairs > len(small) {
		scores = make([]float64, 0, pairs)
	}
	for j := 0; j < pairs; j++ {
		f, ok := zparseScore(s.Args[i+2*j])
		if !ok {
			s.W.Error(errNotFloat)
			return
		}
		scores = append(scores, f)
	}
	s.zaddScores(zaddFlags{nx: nx, xx: xx, gt: gt, lt: lt, ch: ch, incr: incr}, scores, i+1, 2)
}

// zaddFlags are ZADD's options.
type zaddFlags struct{ nx, xx, gt, lt, ch, incr bool }

// zaddScores is ZADD once the options and scores are parsed and checked:
// it adds or updates the members s.Args[first], s.Args[first+stride], …
// of key s.Args[1] with scores, emits the effect and replies. GEOADD
// calls it with the scores of its positions.
func (s *Session) zaddScores(f zaddFlags, scores []float64, first, stride int) {
	nx, xx, gt, lt, ch, incr := f.nx, f.xx, f.gt, f.lt, f.ch, f.incr
	pairs := len(scores)
	key := s.Args[1]
	e, wrong := s.lookupWrite(key, keyspace.TypeZSet)
	if wrong {
		return
	}
	var z *keyspace.ZSet
	if e != nil {
		z = e.Obj.(*keyspace.ZSet)
	} else {
		if xx {
			if incr {
				s.W.Null()
			} else {
				s.W.Int(0)
			}
			return
		}
		z = s.db.AddZSet(key)
	}
	added, updated, processed := 0, 0, 0
	var score float64
	lim := s.zlimits()
	eff := s.reusedZEffect(2*pairs, 24*pairs)
	member := func(j int) []byte { return s.Args[first+stride*j] }
	if z.Len() == 0 && !xx && !gt && !lt && !incr && z.AddNew(pairs, member, scores, lim) {
		// A new set, built whole.
		for j := range pairs {
			score = scores[j]
			if score == 0 {
				score = 0 // stored as Store stores it
			}
			eff.addScore(score)
			eff.add(member(j))
		}
		added, processed = pairs, pairs
		pairs = 0
	}
	for j := 0; j < pairs; j++ {
		member := s.Args[first+stride*j]
		score = scores[j]
		at, exists := z.Find(member)
		if exists {
			cur := at.Score()
			if nx {
				continue
			}
			if incr {
				score += cur
				if math.IsNaN(score) {
					s.W.Error(errZNaN)
					break
				}
			}
			if (lt && score >= cur) || (gt && score <= cur) {
				continue
			}
			processed++
			if score != cur {
				stored := z.Update(at, member, score, lim)
				updated++
				eff.addScore(stored)
				eff.add(member)
			}
			continue
		}
		if xx {
			continue
		}
		processed++
		stored := z.Insert(member, score, lim)
		added++
		eff.addScore(stored)
		eff.add(member)
	}
	if z.Len() == 0 {
		s.db.Delete(key)
	} else if added+updated > 0 {
		s.accountWrite(key, e)
	}
	eff.emit(s, bZADD, key)
	if added+updated > 0 {
		if incr {
			s.notify(notifyZSet, "zincr", key)
		} else {
			s.notify(notifyZSet, "zadd", key)
		}
	}
	if math.IsNaN(score) {
		return
	}
	switch {
	case incr && processed > 0:
		s.W.Double(score)
	case incr:
		s.W.Null()
	case ch:
		s.W.Int(int64(added + updated))
	default:
		s.W.Int(int64(added))
	}
}

func cmdZRem(s *Session) {
	key := s.Args[1]
	z, wrong := s.lookupZSet(key)
	if wrong {
		return
	}
	if z == nil {
		s.W.Int(0)
		return
	}
	s.removeMembers(bZREM, key, notifyZSet, "zrem", z.Remove, z.Len)
}

func cmdZScore(s *Session) {
	z, wrong := s.lookupZSet(s.Args[1])
	if wrong {
		return
	}
	if z == nil {
		s.W.Null()
		return
	}
	score, ok := z.Score(s.Args[2])
	if !ok {
		s.W.Null()
		return
	}
	s.W.Double(score)
}

func cmdZMScore(s *Session) {
	s.writeScores(func(score float64, ok bool) {
		if ok {
			s.W.Double(score)
		} else {
			s.W.Null()
		}
	})
}

// writeScores replies to a command of a sorted set and members (ZMSCORE,
// GEOHASH, GEOPOS) with an array of what write writes for each member's
// score, ok false when the member or the key is missing.
func (s *Session) writeScores(write func(score float64, ok bool)) {
	z, wrong := s.lookupZSet(s.Args[1])
	if wrong {
		return
	}
	s.W.Array(len(s.Args) - 2)
	for _, m := range s.Args[2:] {
		var score float64
		ok := false
		if z != nil {
			score, ok = z.Score(m)
		}
		write(score, ok)
	}
}

// zcountCmd builds ZCOUNT (kind zrScore) and ZLEXCOUNT (zrLex).
func zcountCmd(kind zrangeKind) Handler {
	return func(s *Session) {
		b, ok := s.zparseBounds(kind, 2, 3)
		if !ok {
			return
		}
		z, wrong := s.lookupZSet(s.Args[1])
		if wrong {
			return
		}
		switch {
		case z == nil:
			s.W.Int(0)
		case kind == zrScore:
			s.W.Int(int64(z.CountInScore(&b.score)))
		default:
			s.W.Int(int64(z.CountInLex(&b.lex)))
		}
	}
}

// zrangeKind is how a ZRANGE-family command reads its range.
type zrangeKind uint8

const (
	zrAuto  zrangeKind = iota // ZRANGE: from the options, rank by default
	zrRank                    // start and stop indexes
	zrScore                   // min and max scores
	zrLex                     // min and max members
)

// zbounds are the parsed ends of a range: indexes, scores or members.
type zbounds struct {
	start, stop int64
	score       keyspace.ScoreRange
	lex         keyspace.LexRange
}

// zparseBounds parses args[minIdx] and args[maxIdx] as the ends of a range
// of kind zrRank, zrScore or zrLex, replying on error.
func (s *Session) zparseBounds(kind zrangeKind, minIdx, maxIdx int) (b zbounds, ok bool) {
	switch kind {
	case zrRank:
		if b.start, ok = s.intArg(minIdx); !ok {
			return b, false
		}
		b.stop, ok = s.intArg(maxIdx)
	case zrScore:
		b.score, ok = s.zscoreRange(s.Args[minIdx], s.Args[maxIdx])
	default:
		b.lex, ok = s.zlexRange(s.Args[minIdx], s.Args[maxIdx])
	}
	return b, ok
}

// zdir is a ZRANGE-family command's direction.
type zdir uint8

const (
	zdAuto zdir = iota // ZRANGE: REV may be given
	zdFwd
	zdRev
)

// zrangeCmd builds ZRANGE, ZREVRANGE, Z[REV]RANGEBYSCORE and
// Z[REV]RANGEBYLEX.
func zrangeCmd(kind zrangeKind, dir zdir) Handler {
	return func(s *Session) { s.zrange(1, nil, kind, dir) }
}

func cmdZRangeStore(s *Session) { s.zrange(2, s.Args[1], zrAuto, zdAuto) }

// zrange runs a ZRANGE-family command whose source key is at args[first];
// dst is ZRANGESTORE's destination.
func (s *Session) zrange(first int, dst []byte, kind zrangeKind, dir zdir) {
	key := s.Args[first]
	minIdx, maxIdx := first+1, first+2
	withScores := false
	var offset, limit int64 = 0, -1
	for j := first + 3; j < len(s.Args); j++ {
		a := s.Args[j]
		left := len(s.Args) - j - 1
		switch {
		case dst == nil && resp.EqualFold(a, "withscores"):
			withScores = true
		case resp.EqualFold(a, "limit") && left >= 2:
			var ok bool
			if offset, ok = s.intArg(j + 1); !ok {
				return
			}
			if limit, ok = s.intArg(j + 2); !ok {
				return
			}
			j += 2
		case dir == zdAuto && resp.EqualFold(a, "rev"):
			dir = zdRev
		case kind == zrAuto && resp.EqualFold(a, "bylex"):
			kind = zrLex
		case kind == zrAuto && resp.EqualFold(a, "byscore"):
			kind = zrScore
		default:
			s.W.Error(errSyntax)
			return
		}
	}
	if kind == zrAuto {
		kind = zrRank
	}
	rev := dir == zdRev
	if limit != -1 && kind == zrRank {
		s.W.Error(errZRangeLimit)
		return
	}
	if withScores && kind == zrLex {
		s.W.Error(errZLexScores)
		return
	}
	if rev && kind != zrRank {
		minIdx, maxIdx = maxIdx, minIdx
	}
	b, ok := s.zparseBounds(kind, minIdx, maxIdx)
	if !ok {
		return
	}
	sr, lr := &b.score, &b.lex
	z, wrong := s.lookupZSet(key)
	if wrong {
		return
	}
	if z == nil {
		if dst != nil {
			s.zstoreEmpty(dst)
		} else {
			s.W.Array(0)
		}
		return
	}

	// Find the first element and how many to return, walking toward
	// higher ranks, or lower ones when rev.
	var node keyspace.ZPos
	n := 0
	if kind == zrRank {
		node, n = zrankRange(z, b.start, b.stop, rev)
	} else {
		within := func(x keyspace.ZPos) bool { // the far end of the range
			switch {
			case kind == zrScore && !rev:
				return sr.BelowMax(x.Score())
			case kind == zrScore:
				return sr.AboveMin(x.Score())
			case !rev:
				return lr.BelowMax(x.Member())
			}
			return lr.AboveMin(x.Member())
		}
		switch {
		case kind == zrScore && !rev:
			node = z.FirstInScore(sr)
		case kind == zrScore:
			node = z.LastInScore(sr)
		case !rev:
			node = z.FirstInLex(lr)
		default:
			node = z.LastInLex(lr)
		}
		if node.Valid() && offset != 0 {
			// Redis skips offset elements without looking at them.
			r := int64(z.RankOf(node))
			if rev {
				r -= offset
			} else {
				r += offset
			}
			node = keyspace.ZPos{}
			if offset > 0 && r >= 0 && r < int64(z.Len()) {
				node = z.ByRank(int(r))
			}
		}
		for x := node; x.Valid() && (limit < 0 || int64(n) < limit) && within(x); x = zstep(x, rev) {
			n++
		}
	}

	if dst != nil {
		pairs := make([]zpair, 0, n)
		for x, i := node, 0; i < n; x, i = zstep(x, rev), i+1 {
			pairs = append(pairs, zpair{x.Member(), x.Score()})
		}
		s.zstoreResult(dst, pairs, false, "zrangestore")
		return
	}
	s.pairHeader(n, withScores)
	for x, i := node, 0; i < n; x, i = zstep(x, rev), i+1 {
		s.zwriteElem(x.Member(), x.Score(), withScores)
	}
}

// zstep moves to the next element in ascending order, or descending when
// rev.
func zstep(x keyspace.ZPos, rev bool) keyspace.ZPos {
	if rev {
		return x.Prev()
	}
	return x.Next()
}

// zrankRange resolves start and stop indexes (negative ones count from the
// end, in the walking direction) to the first element and the count.
func zrankRange(z *keyspace.ZSet, start, stop int64, rev bool) (keyspace.ZPos, int) {
	from, to, ok := indexRange(start, stop, z.Len())
	if !ok {
		return keyspace.ZPos{}, 0
	}
	if rev {
		return z.ByRank(z.Len() - 1 - from), to - from + 1
	}
	return z.ByRank(from), to - from + 1
}

// zrankCmd builds ZRANK and ZREVRANK, with Redis 7.2's WITHSCORE.
func zrankCmd(name string, rev bool) Handler {
	return func(s *Session) {
		if len(s.Args) > 4 {
			s.W.Error("ERR wrong number of arguments for '" + name + "' command")
			return
		}
		withScore := len(s.Args) == 4
		if withScore && !resp.EqualFold(s.Args[3], "withscore") {
			s.W.Error(errSyntax)
			return
		}
		missing := func() {
			if withScore {
				s.W.NullArray()
			} else {
				s.W.Null()
			}
		}
		z, wrong := s.lookupZSet(s.Args[1])
		if wrong {
			return
		}
		if z == nil {
			missing()
			return
		}
		rank, score, ok := z.Rank(s.Args[2])
		if !ok {
			missing()
			return
		}
		if rev {
			rank = z.Len() - 1 - rank
		}
		if withScore {
			s.W.Array(2)
			s.W.Int(int64(rank))
			s.W.Double(score)
			return
		}
		s.W.Int(int64(rank))
	}
}

// zremRangeCmd builds ZREMRANGEBYRANK, ZREMRANGEBYSCORE and
// ZREMRANGEBYLEX.
func zremRangeCmd(kind zrangeKind) Handler {
	return func(s *Session) {
		b, ok := s.zparseBounds(kind, 2, 3)
		if !ok {
			return
		}
		key := s.Args[1]
		z, wrong := s.lookupZSet(key)
		if wrong {
			return
		}
		if z == nil {
			s.W.Int(0)
			return
		}
		var eff zeffect
		collect := func(member string, _ float64) { eff.addString(member) }
		n := 0
		switch kind {
		case zrRank:
			if from, to, ok := indexRange(b.start, b.stop, z.Len()); ok {
				n = z.RemoveRangeByRank(from, to, collect)
			}
		case zrScore:
			n = z.RemoveRangeByScore(&b.score, collect)
		case zrLex:
			n = z.RemoveRangeByLex(&b.lex, collect)
		}
		if z.Len() == 0 {
			s.db.Delete(key)
		}
		eff.emit(s, bZREM, key)
		if n > 0 {
			s.notify(notifyZSet, zremRangeEvents[kind], key)
			if z.Len() == 0 {
				s.notify(notifyGeneric, "del", key)
			}
		}
		s.W.Int(int64(n))
	}
}

// zpopCmd builds ZPOPMIN and ZPOPMAX.
func zpopCmd(max bool) Handler {
	return func(s *Session) {
		if len(s.Args) > 3 {
			s.W.Error(errSyntax)
			return
		}
		count, ok := s.popCountArg()
		if !ok {
			return
		}
		key := s.Args[1]
		z, wrong := s.lookupZSet(key)
		if wrong {
			return
		}
		if z == nil || count == 0 {
			s.W.Array(0)
			return
		}
		nested := s.W.Proto == 3 && count != -1
		n := 1
		if count > 1 {
			n = int(min(count, int64(z.Len())))
		}
		s.zpopWrite(&s.W, key, z, max, min(n, z.Len()), nested)
	}
}

// zpopWrite pops n (1 <= n <= Len) elements from z's low end, or high end
// when max, replying on w with them as an array: of [member, score] pairs when
// nested, flat otherwise. It emits ZREM of the popped members and deletes
// the key once empty.
func (s *Session) zpopWrite(w *resp.Writer, key []byte, z *keyspace.ZSet, max bool, n int, nested bool) {
	if nested {
		w.Array(n)
	} else {
		w.Array(2 * n)
	}
	var eff zeffect
	x := z.First()
	if max {
		x = z.Last()
	}
	for i := 0; i < n; i, x = i+1, zstep(x, max) {
		if nested {
			w.Array(2)
		}
		w.BulkString(x.Member())
		w.Double(x.Score())
		eff.addString(x.Member())
	}
	if max {
		z.RemoveRangeByRank(z.Len()-n, z.Len()-1, nil)
	} else {
		z.RemoveRangeByRank(0, n-1, nil)
	}
	if z.Len() == 0 {
		s.db.Delete(key)
	}
	eff.emit(s, bZREM, key)
	s.notifyZPop(key, max, z.Len() == 0)
}

// notifyZPop publishes the events of a pop from key's sorted set: zpopmin
// or zpopmax, then del when the pop emptied it.
func (s *Session) notifyZPop(key []byte, max, emptied bool) {
	if max {
		s.notify(notifyZSet, "zpopmax", key)
	} else {
		s.notify(notifyZSet, "zpopmin", key)
	}
	if emptied {
		s.notify(notifyGeneric, "del", key)
	}
}

// zremRangeEvents are the keyspace events of ZREMRANGEBY*, by range kind.
var zremRangeEvents = map[zrangeKind]string{zrRank: "zremrangebyrank", zrScore: "zremrangebyscore", zrLex: "zremrangebylex"}

// zpopKeyed serves BZPOPMIN and BZPOPMAX for one key: when key holds a
// non-empty sorted set it pops the lowest (highest when max) member,
// replies [key, member, score] on w and returns true; when it holds another
// type it replies WRONGTYPE and returns true; when it is absent it writes
// nothing and returns false.
func zpopKeyed(s *Session, w *resp.Writer, key []byte, max bool) bool {
	z, wrong := s.lookupZSet(key)
	if wrong {
		return true
	}
	if z == nil || z.Len() == 0 {
		return false
	}
	w.Array(3)
	w.Bulk(key)
	x := z.First()
	if max {
		x = z.Last()
	}
	w.BulkString(x.Member())
	w.Double(x.Score())
	member := []byte(x.Member())
	z.Remove(member)
	if z.Len() == 0 {
		s.db.Delete(key)
	}
	s.emit(bZREM, key, member)
	s.notifyZPop(key, max, z.Len() == 0)
	return true
}

// zmpopKeyed serves ZMPOP and BZMPOP for one key: when key holds a
// non-empty sorted set it pops up to count members from its low (high
// when max) end, replies [key, [[member, score] …]] on w and returns true; when
// it holds another type it replies WRONGTYPE and returns true; when it is
// absent it writes nothing and returns false.
func zmpopKeyed(s *Session, w *resp.Writer, key []byte, max bool, count int) bool {
	z, wrong := s.lookupZSet(key)
	if wrong {
		return true
	}
	if z == nil || z.Len() == 0 {
		return false
	}
	w.Array(2)
	w.Bulk(key)
	s.zpopWrite(w, key, z, max, min(count, z.Len()), true)
	return true
}

// zsetWhere parses ZMPOP's MIN or MAX; max reports MAX.
func zsetWhere(b []byte) (max, ok bool) {
	switch {
	case resp.EqualFold(b, "min"):
		return false, true
	case resp.EqualFold(b, "max"):
		return true, true
	}
	return false, false
}

func cmdZMPop(s *Session) {
	keys, max, count, ok := s.parseMPop(1, zsetWhere)
	if !ok {
		return
	}
	for _, k := range keys {
		if zmpopKeyed(s, &s.W, k, max, int(min(count, math.MaxInt32))) {
			return
		}
	}
	s.W.NullArray()
}

// bzpopCmd builds BZPOPMIN and BZPOPMAX: the first of the keys holding a
// sorted set is popped, else the client blocks until one does.
func bzpopCmd(max bool) Handler {
	return func(s *Session) {
		ms, ok := s.timeoutArg(len(s.Args) - 1)
		if !ok {
			return
		}
		keys := s.Args[1 : len(s.Args)-1]
		for _, key := range keys {
			if zpopKeyed(s, &s.W, key, max) {
				return
			}
		}
		if !s.canBlock() {
			s.W.NullArray()
			return
		}
		s.block(&waiter{kind: waitZPop, front: max}, keys, ms)
	}
}

func cmdBZMPop(s *Session) {
	keys, max, count, ok := s.parseMPop(2, zsetWhere)
	if !ok {
		return
	}
	ms, ok := s.timeoutArg(1)
	if !ok {
		return
	}
	n := int(min(count, math.MaxInt32))
	for _, k := range keys {
		if zmpopKeyed(s, &s.W, k, max, n) {
			return
		}
	}
	if !s.canBlock() {
		s.W.NullArray()
		return
	}
	s.block(&waiter{kind: waitZMPop, front: max, count: int64(n)}, keys, ms)
}

// zsetOp is a sorted set algebra operation.
type zsetOp uint8

const (
	zopUnion zsetOp = iota
	zopInter
	zopDiff
	zopInterCard // ZINTERCARD: the intersection's size only
)

// zmembers is what a plain set offers to sorted set algebra, where each of
// its members counts with score 1.
type zmembers interface {
	Len() int
	At(i int) string
	HasString(member string) bool
}

// zsrc is one input of sorted set algebra: a sorted set, a set or nothing.
type zsrc struct {
	z      *keyspace.ZSet
	set    zmembers
	weight float64
}

func (o *zsrc) len() int {
	switch {
	case o.z != nil:
		return o.z.Len()
	case o.set != nil:
		return o.set.Len()
	}
	return 0
}

// find returns member's score in the input.
func (o *zsrc) find(member string) (float64, bool) {
	switch {
	case o.z != nil:
		return o.z.ScoreString(member)
	case o.set != nil:
		return 1, o.set.HasString(member)
	}
	return 0, false
}

// each calls fn for every member of the input.
func (o *zsrc) each(fn func(member string, score float64) bool) {
	switch {
	case o.z != nil:
		for x := o.z.First(); x.Valid(); x = x.Next() {
			if !fn(x.Member(), x.Score()) {
				return
			}
		}
	case o.set != nil:
		for i, n := 0, o.set.Len(); i < n; i++ {
			if !fn(o.set.At(i), 1) {
				return
			}
		}
	}
}

// same reports whether two inputs are the same value.
func (o *zsrc) same(p *zsrc) bool {
	if o.z != nil || p.z != nil {
		return o.z == p.z
	}
	return o.set != nil && o.set == p.set
}

// Aggregation functions of ZUNION and ZINTER.
const (
	aggSum = iota
	aggMin
	aggMax
)

// zaggregate folds val into *target as Redis does: a sum of +inf and -inf
// is 0.
func zaggregate(target *float64, val float64, agg int) {
	switch agg {
	case aggSum:
		*target += val
		if math.IsNaN(*target) {
			*target = 0
		}
	case aggMin:
		if val < *target {
			*target = val
		}
	case aggMax:
		if val > *target {
			*target = val
		}
	}
}

// zsetOpCmd builds ZUNION, ZINTER, ZDIFF, their STORE forms and
// ZINTERCARD.
func zsetOpCmd(name string, op zsetOp, store bool) Handler {
	return func(s *Session) {
		var dst []byte
		numIdx := 1
		if store {
			dst, numIdx = s.Args[1], 2
		}
		s.zsetAlgebra(name, op, dst, numIdx)
	}
}

func (s *Session) zsetAlgebra(name string, op zsetOp, dst []byte, numIdx int) {
	setnum, ok := s.intArg(numIdx)
	if !ok {
		return
	}
	if setnum < 1 {
		s.W.Error(errZNeedKeys + name + "' command")
		return
	}
	if setnum > int64(len(s.Args)-numIdx-1) {
		s.W.Error(errSyntax)
		return
	}
	n := int(setnum)
	srcs := make([]zsrc, n)
	for i := range srcs {
		srcs[i].weight = 1
		e := s.db.Lookup(s.Args[numIdx+1+i])
		if e == nil {
			continue
		}
		switch e.Type() {
		case keyspace.TypeZSet:
			srcs[i].z = e.Obj.(*keyspace.ZSet)
		case keyspace.TypeSet:
			set, ok := e.Obj.(zmembers)
			if !ok {
				s.W.Error(errWrongType)
				return
			}
			srcs[i].set = set
		default:
			s.W.Error(errWrongType)
			return
		}
	}
	agg := aggSum
	withScores := false
	limit := int64(0)
	algebra := op == zopUnion || op == zopInter
	for j := numIdx + 1 + n; j < len(s.Args); {
		a := s.Args[j]
		left := len(s.Args) - j
		switch {
		case algebra && left >= n+1 && resp.EqualFold(a, "weights"):
			j++
			for i := range srcs {
				w, ok := zparseScore(s.Args[j])
				if !ok {
					s.W.Error(errZWeight)
					return
				}
				srcs[i].weight = w
				j++
			}
		case algebra && left >= 2 && resp.EqualFold(a, "aggregate"):
			switch b := s.Args[j+1]; {
			case resp.EqualFold(b, "sum"):
				agg = aggSum
			case resp.EqualFold(b, "min"):
				agg = aggMin
			case resp.EqualFold(b, "max"):
				agg = aggMax
			default:
				s.W.Error(errSyntax)
				return
			}
			j += 2
		case (algebra || op == zopDiff) && dst == nil && resp.EqualFold(a, "withscores"):
			withScores = true
			j++
		case op == zopInterCard && left >= 2 && resp.EqualFold(a, "limit"):
			l, ok := s.nonNegArg(j+1, errLimitNegative)
			if !ok {
				return
			}
			limit = l
			j += 2
		default:
			s.W.Error(errSyntax)
			return
		}
	}

	var acc map[string]float64
	switch op {
	case zopUnion:
		acc = zunion(srcs, agg)
	case zopInter:
		acc, _ = zinter(srcs, agg, false, 0)
	case zopInterCard:
		_, card := zinter(srcs, agg, true, limit)
		s.W.Int(card)
		return
	case zopDiff:
		acc = zdiff(srcs)
	}
	if dst != nil {
		pairs := make([]zpair, 0, len(acc))
		for m, score := range acc {
			pairs = append(pairs, zpair{m, score})
		}
		// A deterministic order makes the effect independent of map order.
		slices.SortFunc(pairs, func(a, b zpair) int {
			if c := cmp.Compare(a.score, b.score); c != 0 {
				return c
			}
			return strings.Compare(a.member, b.member)
		})
		s.zstoreResult(dst, pairs, true, name)
		return
	}
	// Redis orders a reply-only result in a skip list, -0 scores kept.
	res := keyspace.NewZSetSized(len(acc), math.MaxInt, keyspace.ZLimits{})
	for m, score := range acc {
		res.AddString(m, score, keyspace.ZLimits{})
	}
	s.pairHeader(res.Len(), withScores)
	for x := res.First(); x.Valid(); x = x.Next() {
		s.zwriteElem(x.Member(), x.Score(), withScores)
	}
}

// zbySize orders inputs from the smallest, stably, as Redis does before a
// union or intersection (the order of additions decides float rounding).
func zbySize(srcs []zsrc) {
	sort.SliceStable(srcs, func(i, j int) bool { return srcs[i].len() < srcs[j].len() })
}

// zunion returns the members of the union with their aggregated scores.
func zunion(srcs []zsrc, agg int) map[string]float64 {
	zbySize(srcs)
	acc := make(map[string]float64, min(srcs[len(srcs)-1].len(), 1<<16))
	for i := range srcs {
		o := &srcs[i]
		o.each(func(m string, sc float64) bool {
			score := o.weight * sc
			if math.IsNaN(score) {
				score = 0
			}
			if cur, ok := acc[m]; ok {
				zaggregate(&cur, score, agg)
				acc[m] = cur
			} else {
				acc[m] = score
			}
			return true
		})
	}
	return acc
}

// zinter returns the members of the intersection with their aggregated
// scores, or only its size (counted up to limit, 0 for no limit) when
// cardOnly.
func zinter(srcs []zsrc, agg int, cardOnly bool, limit int64) (map[string]float64, int64) {
	zbySize(srcs)
	acc := make(map[string]float64)
	var card int64
	first := &srcs[0]
	first.each(func(m string, sc float64) bool {
		score := first.weight * sc
		if math.IsNaN(score) {
			score = 0
		}
		for j := 1; j < len(srcs); j++ {
			o := &srcs[j]
			if o.same(first) {
				zaggregate(&score, sc*o.weight, agg)
				continue
			}
			v, ok := o.find(m)
			if !ok {
				return true
			}
			zaggregate(&score, v*o.weight, agg)
		}
		if cardOnly {
			card++
			return limit == 0 || card < limit
		}
		acc[m] = score
		return true
	})
	return acc, card
}

// zdiff returns the members of the first input that no other input has,
// with their scores.
func zdiff(srcs []zsrc) map[string]float64 {
	acc := make(map[string]float64)
	srcs[0].each(func(m string, sc float64) bool {
		for j := 1; j < len(srcs); j++ {
			if _, ok := srcs[j].find(m); ok {
				return true
			}
		}
		acc[m] = sc
		return true
	})
	return acc
}

func cmdZRandMember(s *Session) {
	if len(s.Args) >= 3 {
		count, withScores, ok := s.randCountArgs("withscores")
		if !ok {
			return
		}
		s.zrandWithCount(count, withScores)
		return
	}
	z, wrong := s.lookupZSet(s.Args[1])
	if wrong {
		return
	}
	if z == nil {
		s.W.Null()
		return
	}
	s.W.BulkString(z.ByRank(rand.IntN(z.Len())).Member())
}

// zrandWithCount serves ZRANDMEMBER key count: distinct members for a
// positive count, possibly repeated ones for a negative count; the whole
// set, from the highest member down as Redis walks it, when count covers
// it.
func (s *Session) zrandWithCount(count int64, withScores bool) {
	z, wrong := s.lookupZSet(s.Args[1])
	if wrong {
		return
	}
	if z == nil || count == 0 {
		s.W.Array(0)
		return
	}
	size := z.Len()
	if count < 0 || count == 1 {
		header := func(n int) { s.pairHeader(n, withScores) }
		write := func(i int) {
			x := z.ByRank(i)
			s.zwriteElem(x.Member(), x.Score(), withScores)
		}
		s.writeRandRepeats(absCount(count), size, z.MemoryUsage(), header, write)
		return
	}
	if count >= int64(size) {
		s.pairHeader(size, withScores)
		for x := z.Last(); x.Valid(); x = x.Prev() {
			s.zwriteElem(x.Member(), x.Score(), withScores)
		}
		return
	}
	n := int(count)
	picked := make([]keyspace.ZPos, 0, n)
	if n*3 > size {
		// Selection sampling over the whole list, then a shuffle.
		need := n
		for x, left := z.First(), size; x.Valid() && need > 0; x, left = x.Next(), left-1 {
			if rand.IntN(left) < need {
				picked = append(picked, x)
				need--
			}
		}
		rand.Shuffle(len(picked), func(i, j int) { picked[i], picked[j] = picked[j], picked[i] })
	} else {
		seen := make(map[int]struct{}, n)
		for len(picked) < n {
			r := rand.IntN(size)
			if _, dup := seen[r]; dup {
				continue
			}
			seen[r] = struct{}{}
			picked = append(picked, z.ByRank(r))
		}
	}
	s.pairHeader(n, withScores)
	for _, x := range picked {
		s.zwriteElem(x.Member(), x.Score(), withScores)
	}
}

// zscanCursor maps a score to a cursor that orders as the score does and
// is never 0; zscanScore is its inverse.
func zscanCursor(f float64) uint64 {
	b := math.Float64bits(f)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

func zscanScore(c uint64) float64 {
	if c>>63 != 0 {
		return math.Float64frombits(c &^ (1 << 63))
	}
	return math.Float64frombits(^c)
}

// cmdZScan serves ZSCAN. A listpack-sized set is returned whole, as Redis
// does. A larger one is walked in score order: the cursor encodes the
// score to resume from, and a batch never splits the members of one score,
// so every member present for the whole scan (with an unchanged score) is
// returned at least once.
func cmdZScan(s *Session) {
	e, cur, o, ok := s.scanStart(keyspace.TypeZSet)
	if !ok {
		return
	}
	z := e.Obj.(*keyspace.ZSet)
	var batch []keyspace.ZPos
	next := uint64(0)
	if z.Encoding() == "listpack" {
		for x := z.First(); x.Valid(); x = x.Next() {
			batch = append(batch, x)
		}
	} else {
		x := z.First()
		if cur != 0 {
			x = z.FirstInScore(&keyspace.ScoreRange{Min: zscanScore(cur), Max: math.Inf(1)})
		}
		for ; x.Valid() && (len(batch) < o.count || x.Score() == batch[len(batch)-1].Score()); x = x.Next() {
			batch = append(batch, x)
		}
		if x.Valid() {
			next = zscanCursor(x.Score())
		}
	}
	if o.match != "" && o.match != "*" {
		kept := batch[:0]
		for _, x := range batch {
			if keyspace.Match(o.match, x.Member()) {
				kept = append(kept, x)
			}
		}
		batch = kept
	}
	var buf [32]byte
	s.W.Array(2)
	s.W.Bulk(strconv.AppendUint(buf[:0], next, 10))
	s.W.Array(2 * len(batch))
	listpack := z.Encoding() == "listpack"
	for _, x := range batch {
		s.W.BulkString(x.Member())
		s.W.Bulk(zappendScanScore(buf[:0], x.Score(), listpack))
	}
}

// zappendScanScore formats a score as ZSCAN shows it: the text Redis keeps,
// which for a listpack is an integer when the score is a whole number
// within ±2^62, and "%.17g" otherwise.
func zappendScanScore(b []byte, f float64, listpack bool) []byte {
	const limit = 1 << 62
	if listpack && f == math.Trunc(f) && f >= -limit && f <= limit {
		return strconv.AppendInt(b, int64(f), 10)
	}
	return resp.AppendFloat(b, f)
}
