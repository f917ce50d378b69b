package server

import (
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
)

// maxStringLen is Redis's proto-max-bulk-len default, the largest string a
// command may build.
const maxStringLen = 512 << 20

func stringCommands() []*Command {
	k1 := keysIn("", 1, 1)
	return []*Command{
		k1(&Command{Name: "get", Arity: 2, Flags: FlagReadonly | FlagFast, Group: "string", Since: "1.0.0", Syntax: "key", Summary: "Returns the string value of a key.", Complexity: "O(1)", Categories: "read string fast", Handler: cmdGet}),
		k1(&Command{Name: "set", Arity: -3, Flags: FlagWrite | FlagDenyOOM | FlagSized, Group: "string", KeySpecs: "RW access update variable_flags", VarKeyFlags: setKeyFlags, Since: "1.0.0", Syntax: "key value [NX | XX] [GET] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]", Summary: "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", Complexity: "O(1)", Categories: "write string slow", Handler: cmdSet}),
		k1(&Command{Name: "setnx", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast | FlagSized, Group: "string", KeySpecs: "OW insert", Since: "1.0.0", Syntax: "key value", Summary: "Set the string value of a key only when the key doesn't exist.", Complexity: "O(1)", Categories: "write string fast", Handler: cmdSetNX}),
		k1(&Command{Name: "setex", Arity: 4, Flags: FlagWrite | FlagDenyOOM | FlagSized, Group: "string", KeySpecs: "OW update", Since: "2.0.0", Syntax: "key seconds value", Summary: "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.", Complexity: "O(1)", Categories: "write string slow", Handler: setexCmd(1000)}),
		k1(&Command{Name: "psetex", Arity: 4, Flags: FlagWrite | FlagDenyOOM | FlagSized, Group: "string", KeySpecs: "OW update", Since: "2.6.0", Syntax: "key milliseconds value", Summary: "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.", Complexity: "O(1)", Categories: "write string slow", Handler: setexCmd(1)}),
		{Name: "mget", Arity: -2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: -1, Step: 1, Group: "string", Since: "1.0.0", Syntax: "key [key ...]", Summary: "Atomically returns the string values of one or more keys.", Complexity: "O(N) where N is the number of keys to retrieve.", Categories: "read string fast", Handler: cmdMGet},
		{Name: "mset", Arity: -3, Flags: FlagWrite | FlagDenyOOM | FlagSized, FirstKey: 1, LastKey: -1, Step: 2, Group: "string", KeySpecs: "OW update", Since: "1.0.1", Syntax: "key value [key value ...]", Summary: "Atomically creates or modifies the string values of one or more keys.", Complexity: "O(N) where N is the number of keys to set.", Categories: "write string slow", Handler: msetCmd(false)},
		{Name: "msetnx", Arity: -3, Flags: FlagWrite | FlagDenyOOM | FlagSized, FirstKey: 1, LastKey: -1, Step: 2, Group: "string", KeySpecs: "OW insert", Since: "1.0.1", Syntax: "key value [key value ...]", Summary: "Atomically modifies the string values of one or more keys only when all keys don't exist.", Complexity: "O(N) where N is the number of keys to set.", Categories: "write string slow", Handler: msetCmd(true)},
		k1(&Command{Name: "getset", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast | FlagSized, Group: "string", Since: "1.0.0", Syntax: "key value", Summary: "Returns the previous string value of a key after setting it to a new value.", Complexity: "O(1)", Categories: "write string fast", Handler: cmdGetSet}),
		k1(&Command{Name: "getdel", Arity: 2, Flags: FlagWrite | FlagFast, Group: "string", KeySpecs: "RW access delete", Since: "6.2.0", Syntax: "key", Summary: "Returns the string value of a key after deleting the key.", Complexity: "O(1)", Categories: "write string fast", Handler: cmdGetDel}),
		k1(&Command{Name: "getex", Arity: -2, Flags: FlagWrite | FlagFast, Group: "string", Since: "6.2.0", Syntax: "key [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | PERSIST]", Summary: "Returns the string value of a key after setting its expiration time.", Complexity: "O(1)", Categories: "write string fast", Handler: cmdGetEx}),
		k1(&Command{Name: "append", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, Group: "string", KeySpecs: "RW insert", Since: "2.0.0", Syntax: "key value", Summary: "Appends a string to the value of a key. Creates the key if it doesn't exist.", Complexity: "O(1). The amortized time complexity is O(1) assuming the appended value is small and the already present value is of any size, since the dynamic string library used by Redis will double the free space available on every reallocation.", Categories: "write string fast", Handler: cmdAppend}),
		k1(&Command{Name: "strlen", Arity: 2, Flags: FlagReadonly | FlagFast, Group: "string", KeySpecs: "RO", Since: "2.2.0", Syntax: "key", Summary: "Returns the length of a string value.", Complexity: "O(1)", Categories: "read string fast", Handler: cmdStrlen}),
		k1(&Command{Name: "incr", Arity: 2, Flags: FlagWrite | FlagDenyOOM | FlagFast | FlagSized, Group: "string", Since: "1.0.0", Syntax: "key", Summary: "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", Complexity: "O(1)", Categories: "write string fast", Handler: incrCmd(1, false)}),
		k1(&Command{Name: "decr", Arity: 2, Flags: FlagWrite | FlagDenyOOM | FlagFast | FlagSized, Group: "string", Since: "1.0.0", Syntax: "key", Summary: "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", Complexity: "O(1)", Categories: "write string fast", Handler: incrCmd(-1, false)}),
		k1(&Command{Name: "incrby", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast | FlagSized, Group: "string", Since: "1.0.0", Syntax: "key increment", Summary: "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.", Complexity: "O(1)", Categories: "write string fast", Handler: incrCmd(1, true)}),
		k1(&Command{Name: "decrby", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast | FlagSized, Group: "string", Since: "1.0.0", Syntax: "key decrement", Summary: "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.", Complexity: "O(1)", Categories: "write string fast", Handler: incrCmd(-1, true)}),
		k1(&Command{Name: "incrbyfloat", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, Group: "string", Since: "2.6.0", Syntax: "key increment", Summary: "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.", Complexity: "O(1)", Categories: "write string fast", Handler: cmdIncrByFloat}),
		k1(&Command{Name: "getrange", Arity: 4, Flags: FlagReadonly, Group: "string", Since: "2.4.0", Syntax: "key start end", Summary: "Returns a substring of the string stored at a key.", Complexity: "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.", Categories: "read string slow", Handler: cmdGetRange}),
		k1(&Command{Name: "substr", Arity: 4, Flags: FlagReadonly, Group: "string", Since: "1.0.0", Syntax: "key start end", Summary: "Returns a substring from a string value.", Complexity: "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.", Categories: "read string slow", Handler: cmdGetRange}),
		k1(&Command{Name: "setrange", Arity: 4, Flags: FlagWrite | FlagDenyOOM, Group: "string", KeySpecs: "RW update", Since: "2.2.0", Syntax: "key offset value", Summary: "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.", Complexity: "O(1), not counting the time taken to copy the new string in place. Usually, this string is very small so the amortized complexity is O(1). Otherwise, complexity is O(M) with M being the length of the value argument.", Categories: "write string slow", Handler: cmdSetRange}),
	}
}

// lookupString returns key's string entry, nil if absent; wrong reports
// (and replies to) a value of another type.
func (s *Session) lookupString(key []byte) (e *keyspace.Entry, wrong bool) {
	e = s.lookupKey(key)
	if e != nil && e.Obj != nil {
		s.W.Error(errWrongType)
		return nil, true
	}
	return e, false
}

func cmdGet(s *Session) {
	e, wrong := s.lookupString(s.Args[1])
	if wrong {
		return
	}
	if e == nil {
		s.srv.keyMisses.Add(1)
		s.notify(notifyKeyMiss, "keymiss", s.Args[1])
		s.W.Null()
		return
	}
	s.srv.keyHits.Add(1)
	s.W.Bulk(e.Str)
}

// expiryKind is an expiry option of SET or GETEX.
type expiryKind uint8

const (
	expNone expiryKind = iota
	expEX
	expPX
	expEXAT
	expPXAT
	expKeepTTL // SET only
	expPersist // GETEX only
)

// expiryWords are the options' names, lower case, by kind.
var expiryWords = [...]string{"", "ex", "px", "exat", "pxat", "keepttl", "persist"}

// expiryOpt is a parsed expiry option.
type expiryOpt struct {
	at   int64 // absolute unix ms; 0 none
	kind expiryKind
}

// parseExpiry parses the expiry option at args[i] of SET (own is
// expKeepTTL) or GETEX (own is expPersist): EX, PX, EXAT or PXAT with its
// value, or own. One kind of option may be given, any number of times: the
// last wins. It returns the index of the option's last argument, or false
// after replying with a syntax error or the invalid-expire error of the
// command name.
func (s *Session) parseExpiry(i int, o *expiryOpt, own expiryKind, name string) (int, bool) {
	a := s.Args[i]
	kind := expNone
	var unit int64
	abs := false
	switch {
	case resp.EqualFold(a, "ex"):
		kind, unit = expEX, 1000
	case resp.EqualFold(a, "px"):
		kind, unit = expPX, 1
	case resp.EqualFold(a, "exat"):
		kind, unit, abs = expEXAT, 1000, true
	case resp.EqualFold(a, "pxat"):
		kind, unit, abs = expPXAT, 1, true
	case resp.EqualFold(a, expiryWords[own]):
		kind = own
	}
	if kind == expNone || (o.kind != expNone && o.kind != kind) || (kind != own && i+1 >= len(s.Args)) {
		s.W.Error(errSyntax)
		return i, false
	}
	o.kind = kind
	if kind == own {
		return i, true
	}
	n, ok := s.intArg(i + 1)
	if !ok {
		return i, false
	}
	if o.at, ok = s.expireAt(n, unit, abs, name); !ok {
		return i, false
	}
	return i + 1, true
}

// expireAt converts the expiry argument n of SET, GETEX, SETEX or PSETEX,
// in units of unit milliseconds and absolute when abs, to a unix time in
// milliseconds, replying with the invalid-expire error of the command name
// when n is not positive or the time overflows.
func (s *Session) expireAt(n, unit int64, abs bool, name string) (int64, bool) {
	if n <= 0 || n > math.MaxInt64/unit {
		s.W.Error(fmt.Sprintf(errInvalidExpire, name))
		return 0, false
	}
	n *= unit
	if !abs {
		now := s.srv.ks.Now()
		if n > math.MaxInt64-now {
			s.W.Error(fmt.Sprintf(errInvalidExpire, name))
			return 0, false
		}
		n += now
	}
	return n, true
}

func cmdSet(s *Session) {
	key, val := s.Args[1], s.Args[2]
	var nx, xx, get bool
	var o expiryOpt
	for i := 3; i < len(s.Args); i++ {
		a := s.Args[i]
		switch {
		case resp.EqualFold(a, "nx") && !xx:
			nx = true
		case resp.EqualFold(a, "xx") && !nx:
			xx = true
		case resp.EqualFold(a, "get"):
			get = true
		default:
			var ok bool
			if i, ok = s.parseExpiry(i, &o, expKeepTTL, "set"); !ok {
				return
			}
		}
	}
	old := s.lookupKey(key)
	if get {
		if old != nil && old.Obj != nil {
			s.W.Error(errWrongType)
			return
		}
	}
	if nx && old != nil || xx && old == nil {
		if get {
			s.replyOld(old)
		} else {
			s.W.Null()
		}
		return
	}
	if get {
		s.replyOld(old)
	}
	s.replaceString(key, old, val, o)
	if !get {
		s.W.OK()
	}
}

func (s *Session) replyOld(old *keyspace.Entry) {
	if old == nil {
		s.W.Null()
		return
	}
	s.W.Bulk(old.Str)
}

// setString stores val and emits the SET effect with the resulting expiry.
// Replies that must show the old value are written before calling it.
func (s *Session) setString(key, val []byte, o expiryOpt) *keyspace.Entry {
	return s.replaceString(key, s.db.Lookup(key), val, o)
}

// replaceString is setString for a key the command has looked up: cur is
// its live entry, of any type, or nil.
func (s *Session) replaceString(key []byte, cur *keyspace.Entry, val []byte, o expiryOpt) *keyspace.Entry {
	keepTTL := o.kind == expKeepTTL
	e := s.db.ReplaceString(key, cur, val, keepTTL)
	switch {
	case o.at != 0:
		s.db.SetExpiry(key, o.at)
		s.emit(bSET, key, val, bPXAT, s.itoa(o.at))
	case keepTTL:
		s.emit(bSET, key, val, bKEEPTTL)
	default:
		s.emit(bSET, key, val)
	}
	s.notify(notifyString, "set", key)
	if o.at != 0 {
		s.notify(notifyGeneric, "expire", key)
	}
	return e
}

func cmdSetNX(s *Session) {
	if s.db.Lookup(s.Args[1]) != nil {
		s.W.Int(0)
		return
	}
	s.setString(s.Args[1], s.Args[2], expiryOpt{})
	s.W.Int(1)
}

func setexCmd(unit int64) Handler {
	return func(s *Session) {
		n, ok := s.intArg(2)
		if !ok {
			return
		}
		at, ok := s.expireAt(n, unit, false, s.lastCmd.Load().Name)
		if !ok {
			return
		}
		s.setString(s.Args[1], s.Args[3], expiryOpt{at: at})
		s.W.OK()
	}
}

func cmdMGet(s *Session) {
	s.W.Array(len(s.Args) - 1)
	for _, k := range s.Args[1:] {
		e := s.db.Lookup(k)
		if e == nil || e.Obj != nil {
			s.W.Null()
			continue
		}
		s.W.Bulk(e.Str)
	}
}

func msetCmd(nx bool) Handler {
	return func(s *Session) {
		if len(s.Args)%2 == 0 {
			s.W.Error("ERR wrong number of arguments for '" + s.lastCmd.Load().Name + "' command")
			return
		}
		if nx {
			for i := 1; i < len(s.Args); i += 2 {
				if s.db.Lookup(s.Args[i]) != nil {
					s.W.Int(0)
					return
				}
			}
		}
		for i := 1; i < len(s.Args); i += 2 {
			s.setString(s.Args[i], s.Args[i+1], expiryOpt{})
		}
		if nx {
			s.W.Int(1)
		} else {
			s.W.OK()
		}
	}
}

func cmdGetSet(s *Session) {
	old, wrong := s.lookupString(s.Args[1])
	if wrong {
		return
	}
	s.replyOld(old)
	s.setString(s.Args[1], s.Args[2], expiryOpt{})
}

func cmdGetDel(s *Session) {
	e, wrong := s.lookupString(s.Args[1])
	if wrong {
		return
	}
	if e == nil {
		s.W.Null()
		return
	}
	s.W.Bulk(e.Str)
	s.db.Delete(s.Args[1])
	s.emit(bDEL, s.Args[1])
	s.notify(notifyGeneric, "del", s.Args[1])
}

func cmdGetEx(s *Session) {
	key := s.Args[1]
	var o expiryOpt
	for i := 2; i < len(s.Args); i++ {
		var ok bool
		if i, ok = s.parseExpiry(i, &o, expPersist, "getex"); !ok {
			return
		}
	}
	e, wrong := s.lookupString(key)
	if wrong {
		return
	}
	if e == nil {
		s.W.Null()
		return
	}
	s.W.Bulk(e.Str)
	switch {
	case o.kind == expPersist:
		if s.db.Persist(key) {
			s.emit(bPERSIST, key)
			s.notify(notifyGeneric, "persist", key)
		}
	case o.at != 0 && o.at <= s.srv.ks.Now():
		s.db.Delete(key)
		s.emit(bDEL, key)
		s.notify(notifyGeneric, "del", key)
	case o.at != 0:
		s.db.SetExpiry(key, o.at)
		s.emit(bPEXPIREAT, key, s.itoa(o.at))
		s.notify(notifyGeneric, "expire", key)
	}
}

func cmdAppend(s *Session) {
	key := s.Args[1]
	e, wrong := s.lookupString(key)
	if wrong {
		return
	}
	if e == nil {
		s.db.SetString(key, s.Args[2], false)
		s.emit(bSET, key, s.Args[2])
		s.notify(notifyString, "append", key)
		s.W.Int(int64(len(s.Args[2])))
		return
	}
	if len(e.Str)+len(s.Args[2]) > maxStringLen {
		s.W.Error(errStringTooLong)
		return
	}
	e.Str = append(e.Str, s.Args[2]...)
	e.MarkRaw()
	s.emit(bSET, key, e.Str, bKEEPTTL)
	s.notify(notifyString, "append", key)
	s.W.Int(int64(len(e.Str)))
}

func cmdStrlen(s *Session) {
	e, wrong := s.lookupString(s.Args[1])
	if wrong {
		return
	}
	if e == nil {
		s.W.Int(0)
		return
	}
	s.W.Int(int64(len(e.Str)))
}

// incrCmd builds INCR, DECR, INCRBY and DECRBY: sign is the direction,
// byArg whether the amount is the second argument.
func incrCmd(sign int64, byArg bool) Handler {
	return func(s *Session) {
		by := int64(1)
		if byArg {
			var ok bool
			if by, ok = s.intArg(2); !ok {
				return
			}
			if sign < 0 {
				if by == math.MinInt64 {
					s.W.Error("ERR decrement would overflow")
					return
				}
				by = -by
			}
		} else {
			by = sign
		}
		key := s.Args[1]
		e, wrong := s.lookupString(key)
		if wrong {
			return
		}
		var old []byte
		if e != nil {
			old = e.Str
		}
		cur, ok := s.incrInt(old, e != nil, by, errNotInt)
		if !ok {
			return
		}
		var v []byte
		if by == 1 && cur > 1 {
			v = s.itoaNext(old) // old is the digits of cur-1 > 0
		} else {
			v = s.itoa(cur)
		}
		s.db.ReplaceString(key, e, v, true) // keeps the TTL, resets the encoding
		s.emit(bSET, key, v, bKEEPTTL)
		s.notify(notifyString, "incrby", key)
		s.W.IntDigits(v)
	}
}

// incrInt returns the integer text old plus by, for INCRBY and HINCRBY; a
// value that does not exist counts as 0. It replies notInt when old is not
// an integer, and the overflow error when the sum leaves the int64 range.
func (s *Session) incrInt(old []byte, exists bool, by int64, notInt string) (int64, bool) {
	var n int64
	if exists {
		var ok bool
		if n, ok = resp.ParseInt(old); !ok {
			s.W.Error(notInt)
			return 0, false
		}
	}
	if keyspace.AddOverflows(n, by) {
		s.W.Error(errOverflow)
		return 0, false
	}
	return n + by, true
}

// longDouble is the precision of C's long double on x86-64, which Redis
// uses for INCRBYFLOAT; big.Float at this precision rounds the same way.
const longDouble = 64

// parseDecimalLongDouble parses a decimal number as strtold would for
// Redis's string2ld: no spaces, the whole string, no NaN.
func parseDecimalLongDouble(b []byte) (*big.Float, bool) {
	if len(b) == 0 || len(b) > 5000 || isSpaceByte(b[0]) || isSpaceByte(b[len(b)-1]) {
		return nil, false
	}
	str := string(b)
	switch strings.ToLower(str) {
	case "inf", "+inf", "infinity", "+infinity":
		return new(big.Float).SetInf(false), true
	case "-inf", "-infinity":
		return new(big.Float).SetInf(true), true
	}
	if strings.ContainsAny(str, "_pP") || hasHexFloat(str) {
		return nil, false
	}
	f, _, err := big.ParseFloat(str, 10, longDouble, big.ToNearestEven)
	if err != nil {
		return nil, false
	}
	return f, true
}

// formatLongDouble formats as Redis's ld2string in human mode: "%.17Lf"
// with trailing zeros and a trailing point removed.
func formatLongDouble(f *big.Float) string {
	str := f.Text('f', 17)
	if strings.Contains(str, ".") {
		str = strings.TrimRight(str, "0")
		str = strings.TrimSuffix(str, ".")
	}
	if str == "-0" {
		str = "0"
	}
	return str
}

// maxLongDoubleExp and minLongDoubleExp bound the binary exponent (as
// big.Float.MantExp reports it) of a finite, non-zero x86-64 long double,
// denormals included.
const (
	maxLongDoubleExp = 16384
	minLongDoubleExp = -16445
)

// parseLongDouble parses a number exactly as Redis's string2ld does with
// strtold: what parseLongDouble accepts, plus C's hexadecimal notation
// ("0x1p3"), minus values that overflow a long double or underflow to zero.
func parseLongDouble(b []byte) (*big.Float, bool) {
	str := string(b)
	if hasHexFloat(str) {
		if len(b) > 5000 || isSpaceByte(b[len(b)-1]) || strings.ContainsRune(str, '_') {
			return nil, false
		}
		f, _, err := big.ParseFloat(str, 0, longDouble, big.ToNearestEven)
		if err != nil {
			return nil, false
		}
		return f, longDoubleInRange(f)
	}
	f, ok := parseDecimalLongDouble(b)
	if !ok {
		return nil, false
	}
	return f, longDoubleInRange(f)
}

// longDoubleInRange reports whether f is representable as a long double
// without overflowing to infinity or underflowing to zero.
func longDoubleInRange(f *big.Float) bool {
	if f.IsInf() || f.Sign() == 0 {
		return true
	}
	exp := f.MantExp(nil)
	return exp <= maxLongDoubleExp && exp >= minLongDoubleExp
}

// addLongDouble returns cur+by rounded to a long double, as INCRBYFLOAT
// and HINCRBYFLOAT add; false when the sum overflows one.
func addLongDouble(cur, by *big.Float) (*big.Float, bool) {
	sum := new(big.Float).SetPrec(longDouble).SetMode(big.ToNearestEven).Add(cur, by)
	return sum, sum.Sign() == 0 || sum.MantExp(nil) <= maxLongDoubleExp
}

func cmdIncrByFloat(s *Session) {
	key := s.Args[1]
	e, wrong := s.lookupString(key)
	if wrong {
		return
	}
	var cur []byte
	if e != nil {
		cur = e.Str
	}
	v, fail := s.incrFloat(e != nil, cur, s.Args[2])
	switch fail {
	case incrFloatBadValue, incrFloatBadIncrement:
		s.W.Error(errNotFloat)
		return
	case incrFloatNotFinite:
		s.W.Error(errNaN)
		return
	}
	if e == nil {
		e = s.db.SetString(key, v, false)
	} else {
		e.Str = append(e.Str[:0], v...)
	}
	e.MarkNoInt()
	s.emit(bSET, key, v, bKEEPTTL)
	s.notify(notifyString, "incrbyfloat", key)
	s.W.Bulk(v)
}

// incrFloatFail says why incrFloat gave no sum.
type incrFloatFail int

const (
	incrFloatOK           incrFloatFail = iota
	incrFloatBadValue                   // the value is not a number
	incrFloatBadIncrement               // the increment is not a number
	incrFloatNotFinite                  // an operand or the sum is infinite
)

// incrFloat returns the text of cur+by (hasCur false: of by) as
// INCRBYFLOAT and HINCRBYFLOAT compute it: with integer arithmetic in the
// session's scratch space when incrFloatFast can, with big.Float
// otherwise; or why there is none.
func (s *Session) incrFloat(hasCur bool, cur, by []byte) ([]byte, incrFloatFail) {
	start := len(s.scratch)
	var ok bool
	if s.scratch, ok = incrFloatFast(s.scratch, hasCur, cur, by); ok {
		return s.scratch[start:len(s.scratch):len(s.scratch)], incrFloatOK
	}
	return incrFloatBig(hasCur, cur, by)
}

// incrFloatBig is incrFloat with big.Float, for any input.
func incrFloatBig(hasCur bool, cur, by []byte) ([]byte, incrFloatFail) {
	a := new(big.Float).SetPrec(longDouble)
	if hasCur {
		var ok bool
		if a, ok = parseLongDouble(cur); !ok {
			return nil, incrFloatBadValue
		}
	}
	b, ok := parseLongDouble(by)
	if !ok {
		return nil, incrFloatBadIncrement
	}
	if a.IsInf() || b.IsInf() {
		return nil, incrFloatNotFinite
	}
	sum, ok := addLongDouble(a, b)
	if !ok {
		return nil, incrFloatNotFinite
	}
	return []byte(formatLongDouble(sum)), incrFloatOK
}

func cmdGetRange(s *Session) {
	start, ok := s.intArg(2)
	if !ok {
		return
	}
	end, ok := s.intArg(3)
	if !ok {
		return
	}
	e, wrong := s.lookupString(s.Args[1])
	if wrong {
		return
	}
	if e == nil {
		s.W.BulkString("")
		return
	}
	if start < 0 && end < 0 && start > end {
		s.W.BulkString("")
		return
	}
	start, end = clampRange(start, end, int64(len(e.Str)))
	if start > end {
		s.W.BulkString("")
		return
	}
	s.W.Bulk(e.Str[start : end+1])
}

func cmdSetRange(s *Session) {
	off, ok := s.intArg(2)
	if !ok {
		return
	}
	if off < 0 {
		s.W.Error(errOffsetRange)
		return
	}
	key, val := s.Args[1], s.Args[3]
	e, wrong := s.lookupString(key)
	if wrong {
		return
	}
	if e == nil {
		if len(val) == 0 {
			s.W.Int(0)
			return
		}
		if off > maxStringLen-int64(len(val)) {
			s.W.Error(errStringTooLong)
			return
		}
		b := make([]byte, off+int64(len(val)))
		copy(b[off:], val)
		s.db.SetString(key, b, false).MarkRaw()
		s.emit(bSET, key, b)
		s.notify(notifyString, "setrange", key)
		s.W.Int(int64(len(b)))
		return
	}
	if len(val) == 0 {
		s.W.Int(int64(len(e.Str)))
		return
	}
	if off > maxStringLen-int64(len(val)) {
		s.W.Error(errStringTooLong)
		return
	}
	e.Str = growZero(e.Str, uint64(off)+uint64(len(val)))
	copy(e.Str[off:], val)
	e.MarkRaw()
	s.emit(bSET, key, e.Str, bKEEPTTL)
	s.notify(notifyString, "setrange", key)
	s.W.Int(int64(len(e.Str)))
}

// setKeyFlags is SET's key flags, as Redis's setGetKeys decides them: with
// GET it reads the old value, without it only overwrites.
func setKeyFlags(args [][]byte) KeyFlag {
	for _, a := range args[min(3, len(args)):] {
		if resp.EqualFold(a, "get") {
			return KeyRW | KeyAccess | KeyUpdate
		}
	}
	return KeyOW | KeyUpdate
}
