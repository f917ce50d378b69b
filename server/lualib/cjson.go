package lualib

import (
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// jsonNull is the Value of the userdata cjson.null: JSON null decoded into
// Lua, since a nil would delete a table entry. lua-cjson uses a NULL light
// userdata, which gopher-lua does not have.
type jsonNull struct{}

// IsNull reports whether v is cjson.null (what cjson.decode returns for a
// JSON null). Redis converts it to a nil reply, as any userdata.
func IsNull(v lua.LValue) bool {
	ud, ok := v.(*lua.LUserData)
	if !ok {
		return false
	}
	_, ok = ud.Value.(jsonNull)
	return ok
}

// Encoding of invalid numbers (NaN and ±Inf): cjson.encode_invalid_numbers.
const (
	invalidOff  = 0 // an error
	invalidOn   = 1 // inf, -inf and nan, which are not JSON
	invalidNull = 2 // null
)

// cjsonConfig is the state of one cjson module table, shared by its
// functions as lua-cjson shares its config userdata upvalue.
type cjsonConfig struct {
	sparseConvert  bool
	sparseRatio    int
	sparseSafe     int
	encodeMaxDepth int
	decodeMaxDepth int
	encodeInvalid  int
	decodeInvalid  bool
	keepBuffer     bool
	precision      int
	buf            []byte // reused between encodes when keepBuffer is set
}

// OpenCJSON registers the global table cjson (lua-cjson 2.1 as vendored by
// Redis: encode, decode, the encode_* and decode_* settings, new, null,
// _NAME and _VERSION).
func OpenCJSON(L *lua.LState) {
	L.SetGlobal("cjson", newCJSON(L))
}

// newCJSON returns a cjson module table with its own default settings.
func newCJSON(L *lua.LState) *lua.LTable {
	cfg := &cjsonConfig{
		sparseRatio:    2,
		sparseSafe:     10,
		encodeMaxDepth: 1000,
		decodeMaxDepth: 1000,
		decodeInvalid:  true,
		keepBuffer:     true,
		precision:      14,
	}
	null := L.NewUserData()
	null.Value = jsonNull{}
	tb := L.NewTable()
	funcs := map[string]lua.LGFunction{
		"encode": func(L *lua.LState) int { return cfg.encode(L) },
		"decode": func(L *lua.LState) int { return cfg.decode(L, null) },
		"encode_sparse_array": func(L *lua.LState) int {
			argInit(L, 3)
			enumOption(L, 1, nil, boolSetting{&cfg.sparseConvert})
			integerOption(L, 2, &cfg.sparseRatio, 0, math.MaxInt32)
			integerOption(L, 3, &cfg.sparseSafe, 0, math.MaxInt32)
			return 3
		},
		"encode_max_depth": func(L *lua.LState) int {
			argInit(L, 1)
			return integerOption(L, 1, &cfg.encodeMaxDepth, 1, math.MaxInt32)
		},
		"decode_max_depth": func(L *lua.LState) int {
			argInit(L, 1)
			return integerOption(L, 1, &cfg.decodeMaxDepth, 1, math.MaxInt32)
		},
		"encode_number_precision": func(L *lua.LState) int {
			argInit(L, 1)
			return integerOption(L, 1, &cfg.precision, 1, 14)
		},
		"encode_keep_buffer": func(L *lua.LState) int {
			argInit(L, 1)
			enumOption(L, 1, nil, boolSetting{&cfg.keepBuffer})
			if !cfg.keepBuffer {
				cfg.buf = nil
			}
			return 1
		},
		"encode_invalid_numbers": func(L *lua.LState) int {
			argInit(L, 1)
			return enumOption(L, 1, []string{"off", "on", "null"}, intSetting{&cfg.encodeInvalid})
		},
		"decode_invalid_numbers": func(L *lua.LState) int {
			argInit(L, 1)
			return enumOption(L, 1, nil, boolSetting{&cfg.decodeInvalid})
		},
		"new": func(L *lua.LState) int {
			L.Push(newCJSON(L))
			return 1
		},
	}
	for k, f := range funcs {
		tb.RawSetString(k, L.NewFunction(f))
	}
	tb.RawSetString("null", null)
	tb.RawSetString("_NAME", lua.LString("cjson"))
	tb.RawSetString("_VERSION", lua.LString("2.1.0"))
	return tb
}

// setting is an enumerated setting enumOption reads and writes as the
// index of its option.
type setting interface {
	get() int
	set(int)
}

// boolSetting is a bool setting: off is 0, on is 1.
type boolSetting struct{ p *bool }

func (r boolSetting) get() int {
	if *r.p {
		return 1
	}
	return 0
}
func (r boolSetting) set(v int) { *r.p = v != 0 }

// intSetting is a setting with more than two options.
type intSetting struct{ p *int }

func (r intSetting) get() int  { return *r.p }
func (r intSetting) set(v int) { *r.p = v }

// argInit is json_arg_init: at most n arguments, padded with nils.
func argInit(L *lua.LState, n int) {
	if L.GetTop() > n {
		argError(L, n+1, "found too many arguments")
	}
	for L.GetTop() < n {
		L.Push(lua.LNil)
	}
}

// enumOption is json_enum_option: argument i, when not nil, sets the
// option to a boolean or to one of options (nil means off/on); the
// current value is pushed, as a boolean for off/on.
func enumOption(L *lua.LState, i int, options []string, st setting) int {
	if options == nil {
		options = []string{"off", "on"}
	}
	if v := arg(L, i); v != lua.LNil {
		if b, ok := v.(lua.LBool); ok {
			if b {
				st.set(1)
			} else {
				st.set(0)
			}
		} else {
			name := checkString(L, i)
			found := -1
			for k, o := range options {
				if o == name {
					found = k
				}
			}
			if found < 0 {
				argError(L, i, "invalid option '"+name+"'")
			}
			st.set(found)
		}
	}
	if st.get() <= 1 {
		L.Push(lua.LBool(st.get() == 1))
	} else {
		L.Push(lua.LString(options[st.get()]))
	}
	return 1
}

// integerOption is json_integer_option: argument i, when not nil, sets
// *p to an integer in [lo, hi]; the current value is pushed.
func integerOption(L *lua.LState, i int, p *int, lo, hi int) int {
	if arg(L, i) != lua.LNil {
		n := int32(toInteger(checkNumber(L, i))) // a C int, as lua-cjson reads it
		if int(n) < lo || int(n) > hi {
			argError(L, 1, "expected integer between "+strconv.Itoa(lo)+" and "+strconv.Itoa(hi))
		}
		*p = int(n)
	}
	L.Push(lua.LNumber(*p))
	return 1
}

// jsonEscape is lua-cjson's char2escape: the escape of each byte, or "".
var jsonEscape = func() [256]string {
	var t [256]string
	const hex = "0123456789abcdef"
	for c := 0; c < 0x20; c++ {
		t[c] = `\u00` + string(hex[c>>4]) + string(hex[c&15])
	}
	t['\b'], t['\t'], t['\n'], t['\f'], t['\r'] = `\b`, `\t`, `\n`, `\f`, `\r`
	t['"'], t['\\'], t['/'], t[0x7f] = `\"`, `\\`, `\/`, `\u007f`
	return t
}()

// encodeError is json_encode_exception.
func (cfg *cjsonConfig) encodeError(L *lua.LState, v lua.LValue, reason string) {
	raise(L, "Cannot serialise %s: %s", v.Type().String(), reason)
}

// encode is cjson.encode(value).
func (cfg *cjsonConfig) encode(L *lua.LState) int {
	if L.GetTop() != 1 {
		argError(L, 1, "expected 1 argument")
	}
	var buf []byte
	if cfg.keepBuffer {
		buf = cfg.buf[:0]
	}
	buf = cfg.appendValue(L, buf, arg(L, 1), 0, 1)
	if cfg.keepBuffer {
		cfg.buf = buf
	}
	L.Push(lua.LString(buf))
	return 1
}

func appendJSONString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	for i := 0; i < len(s); i++ {
		if e := jsonEscape[s[i]]; e != "" {
			buf = append(buf, e...)
		} else {
			buf = append(buf, s[i])
		}
	}
	return append(buf, '"')
}

func (cfg *cjsonConfig) appendNumber(L *lua.LState, buf []byte, v lua.LValue, f float64) []byte {
	invalid := math.IsNaN(f) || math.IsInf(f, 0)
	switch cfg.encodeInvalid {
	case invalidOff:
		if invalid {
			cfg.encodeError(L, v, "must not be NaN or Inf")
		}
	case invalidOn:
		if math.IsNaN(f) {
			return append(buf, "nan"...)
		}
	default:
		if invalid {
			return append(buf, "null"...)
		}
	}
	return append(buf, formatG(f, cfg.precision)...)
}

// appendValue appends the JSON of v, a value at nesting depth. slots
// counts the Lua stack slots lua-cjson would be using, which Lua 5.1
// limits to luaMaxCStack.
func (cfg *cjsonConfig) appendValue(L *lua.LState, buf []byte, v lua.LValue, depth, slots int) []byte {
	switch x := v.(type) {
	case lua.LString:
		return appendJSONString(buf, string(x))
	case lua.LNumber:
		return cfg.appendNumber(L, buf, v, float64(x))
	case lua.LBool:
		if x {
			return append(buf, "true"...)
		}
		return append(buf, "false"...)
	case *lua.LNilType:
		return append(buf, "null"...)
	case *lua.LTable:
		depth++
		if depth > cfg.encodeMaxDepth || slots+3 > luaMaxCStack {
			raise(L, "Cannot serialise, excessive nesting (%d)", depth)
		}
		if n := cfg.arrayLength(L, x); n > 0 {
			buf = append(buf, '[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					buf = append(buf, ',')
				}
				buf = cfg.appendValue(L, buf, x.RawGetInt(i), depth, slots+1)
			}
			return append(buf, ']')
		}
		buf = append(buf, '{')
		first := true
		for k, val := x.Next(lua.LNil); k != lua.LNil; k, val = x.Next(k) {
			if !first {
				buf = append(buf, ',')
			}
			first = false
			switch kk := k.(type) {
			case lua.LNumber:
				buf = append(buf, '"')
				buf = cfg.appendNumber(L, buf, k, float64(kk))
				buf = append(buf, '"', ':')
			case lua.LString:
				buf = appendJSONString(buf, string(kk))
				buf = append(buf, ':')
			default:
				cfg.encodeError(L, k, "table key must be a number or string")
			}
			buf = cfg.appendValue(L, buf, val, depth, slots+2)
		}
		return append(buf, '}')
	}
	if IsNull(v) {
		return append(buf, "null"...)
	}
	cfg.encodeError(L, v, "type not supported")
	return buf
}

// arrayLength is lua_array_length: the largest index of a table whose keys
// are all positive integers, -1 for any other table (an object), 0 for an
// empty one.
//
// The largest index is a C int: indices beyond its range (and inf)
// convert to the minimum int as on amd64, making the table an object.
func (cfg *cjsonConfig) arrayLength(L *lua.LState, t *lua.LTable) int {
	maxIndex, items := int32(0), 0
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		n, ok := k.(lua.LNumber)
		f := float64(n)
		if !ok || math.Floor(f) != f || f < 1 {
			return -1
		}
		if f > float64(maxIndex) {
			maxIndex = cInt(f)
		}
		items++
	}
	if cfg.sparseRatio > 0 && int64(maxIndex) > int64(items)*int64(cfg.sparseRatio) && int(maxIndex) > cfg.sparseSafe {
		if !cfg.sparseConvert {
			cfg.encodeError(L, t, "excessively sparse array")
		}
		return -1
	}
	return int(maxIndex)
}

// cInt converts f to a C int as amd64 does: out of range values give the
// minimum int.
func cInt(f float64) int32 {
	if f != f || f >= 2147483648.0 || f < -2147483648.0 {
		return math.MinInt32
	}
	return int32(f)
}

// JSON token types, named as lua-cjson names them in its errors.
const (
	tObjBegin = iota
	tObjEnd
	tArrBegin
	tArrEnd
	tString
	tNumber
	tBoolean
	tNull
	tColon
	tComma
	tEnd
	tWhitespace
	tError
	tUnknown
)

var tokenNames = [...]string{"T_OBJ_BEGIN", "T_OBJ_END", "T_ARR_BEGIN", "T_ARR_END", "T_STRING", "T_NUMBER", "T_BOOLEAN", "T_NULL", "T_COLON", "T_COMMA", "T_END", "T_WHITESPACE", "T_ERROR", "T_UNKNOWN"}

// singleTokens are the token types of the one-byte tokens.
var singleTokens = [256]int{'{': tObjBegin, '}': tObjEnd, '[': tArrBegin, ']': tArrEnd, ',': tComma, ':': tColon}

type jsonToken struct {
	typ   int
	index int    // byte offset of the token
	str   string // T_STRING value, or the T_ERROR message
	num   float64
	b     bool
}

// jsonParser decodes one document. The input behaves as a C string: a NUL
// byte (or the end) is T_END.
type jsonParser struct {
	L     *lua.LState
	cfg   *cjsonConfig
	null  lua.LValue
	data  string
	pos   int
	depth int
	slots int // Lua stack slots lua-cjson would be using
	tmp   []byte
}

func (p *jsonParser) at(i int) byte {
	if i < len(p.data) {
		return p.data[i]
	}
	return 0
}

// decode is cjson.decode(string).
func (cfg *cjsonConfig) decode(L *lua.LState, null lua.LValue) int {
	if L.GetTop() != 1 {
		argError(L, 1, "expected 1 argument")
	}
	p := &jsonParser{L: L, cfg: cfg, null: null, data: checkString(L, 1), slots: 1}
	if len(p.data) >= 2 && (p.data[0] == 0 || p.data[1] == 0) {
		raise(L, "JSON parser does not support UTF-16 or UTF-32")
	}
	var tok jsonToken
	p.next(&tok)
	v := p.value(&tok)
	p.next(&tok)
	if tok.typ != tEnd {
		p.parseError("the end", &tok)
	}
	L.Push(v)
	return 1
}

func (p *jsonParser) setError(tok *jsonToken, msg string) {
	tok.typ = tError
	tok.index = p.pos
	tok.str = msg
}

func (p *jsonParser) parseError(expected string, tok *jsonToken) {
	found := tokenNames[tok.typ]
	if tok.typ == tError {
		found = tok.str
	}
	raise(p.L, "Expected %s but found %s at character %d", expected, found, tok.index+1)
}

func (p *jsonParser) next(tok *jsonToken) {
	for {
		c := p.at(p.pos)
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			break
		}
		p.pos++
	}
	tok.index = p.pos
	c := p.at(p.pos)
	switch c {
	case 0:
		tok.typ = tEnd
		return
	case '{', '}', '[', ']', ',', ':':
		tok.typ = singleTokens[c]
		p.pos++
		return
	case '"':
		p.stringToken(tok)
		return
	case 'f', 'i', 'I', 'n', 'N', 't', '+', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
	default:
		p.setError(tok, "invalid token")
		return
	}
	rest := p.data[p.pos:]
	switch {
	case c == '-' || isDigit(c):
		if !p.cfg.decodeInvalid && p.invalidNumber() {
			p.setError(tok, "invalid number")
			return
		}
		p.numberToken(tok)
	case strings.HasPrefix(rest, "true"):
		tok.typ, tok.b = tBoolean, true
		p.pos += 4
	case strings.HasPrefix(rest, "false"):
		tok.typ, tok.b = tBoolean, false
		p.pos += 5
	case strings.HasPrefix(rest, "null"):
		tok.typ = tNull
		p.pos += 4
	case p.cfg.decodeInvalid && p.invalidNumber():
		p.numberToken(tok)
	default:
		p.setError(tok, "invalid token")
	}
}

// invalidNumber is json_is_invalid_number: numbers strtod accepts but JSON
// does not (a leading +, hexadecimal, leading zeros, inf and nan).
func (p *jsonParser) invalidNumber() bool {
	i := p.pos
	if p.at(i) == '+' {
		return true
	}
	if p.at(i) == '-' {
		i++
	}
	c := p.at(i)
	if c == '0' {
		c2 := p.at(i + 1)
		return c2|0x20 == 'x' || isDigit(c2)
	}
	if c <= '9' {
		return false
	}
	w := strings.ToLower(p.data[i:min(len(p.data), i+3)])
	return w == "inf" || w == "nan"
}

func (p *jsonParser) numberToken(tok *jsonToken) {
	// strtod stops at a NUL byte like the C string it reads.
	s := p.data[p.pos:]
	if k := strings.IndexByte(s, 0); k >= 0 {
		s = s[:k]
	}
	f, n := strtod(s)
	tok.typ = tNumber
	tok.num = f
	if n == 0 {
		p.setError(tok, "invalid number")
		return
	}
	p.pos += n
}

func hexValue(c byte) int {
	switch {
	case isDigit(c):
		return int(c - '0')
	case (c|0x20) >= 'a' && (c|0x20) <= 'f':
		return int(c|0x20-'a') + 10
	}
	return -1
}

func (p *jsonParser) hex4(i int) int {
	v := 0
	for k := 0; k < 4; k++ {
		d := hexValue(p.at(i + k))
		if d < 0 {
			return -1
		}
		v = v<<4 | d
	}
	return v
}

// unicodeEscape appends the UTF-8 of the \uXXXX escape (or surrogate pair)
// at p.pos and advances past it, or reports false.
func (p *jsonParser) unicodeEscape() bool {
	cp := p.hex4(p.pos + 2)
	if cp < 0 {
		return false
	}
	n := 6
	if cp&0xF800 == 0xD800 {
		if cp&0x400 != 0 {
			return false
		}
		if p.at(p.pos+6) != '\\' || p.at(p.pos+7) != 'u' {
			return false
		}
		lo := p.hex4(p.pos + 8)
		if lo < 0 || lo&0xFC00 != 0xDC00 {
			return false
		}
		cp = ((cp&0x3FF)<<10 | lo&0x3FF) + 0x10000
		n = 12
	}
	switch {
	case cp <= 0x7F:
		p.tmp = append(p.tmp, byte(cp))
	case cp <= 0x7FF:
		p.tmp = append(p.tmp, byte(cp>>6|0xC0), byte(cp&0x3F|0x80))
	case cp <= 0xFFFF:
		p.tmp = append(p.tmp, byte(cp>>12|0xE0), byte(cp>>6&0x3F|0x80), byte(cp&0x3F|0x80))
	default:
		p.tmp = append(p.tmp, byte(cp>>18|0xF0), byte(cp>>12&0x3F|0x80), byte(cp>>6&0x3F|0x80), byte(cp&0x3F|0x80))
	}
	p.pos += n
	return true
}

// unescape is lua-cjson's escape2char: the byte of each one-letter escape,
// 0 for an invalid escape.
var unescape = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 't': '\t', 'n': '\n', 'f': '\f', 'r': '\r'}

func (p *jsonParser) stringToken(tok *jsonToken) {
	p.pos++
	p.tmp = p.tmp[:0]
	for {
		c := p.at(p.pos)
		if c == '"' {
			break
		}
		if c == 0 {
			p.setError(tok, "unexpected end of string")
			return
		}
		if c == '\\' {
			e := p.at(p.pos + 1)
			if e == 'u' {
				if p.unicodeEscape() {
					continue
				}
				p.setError(tok, "invalid unicode escape code")
				return
			}
			u := unescape[e]
			if u == 0 {
				p.setError(tok, "invalid escape code")
				return
			}
			c = u
			p.pos++
		}
		p.tmp = append(p.tmp, c)
		p.pos++
	}
	p.pos++
	tok.typ = tString
	tok.str = string(p.tmp)
}

// descend enters an array (needing 2 free stack slots and keeping 1) or an
// object (3 and 2).
func (p *jsonParser) descend(need, keep int) {
	p.depth++
	if p.depth > p.cfg.decodeMaxDepth || p.slots+need > luaMaxCStack {
		raise(p.L, "Found too many nested data structures (%d) at character %d", p.depth, p.pos)
	}
	p.slots += keep
}

func (p *jsonParser) ascend(keep int) {
	p.depth--
	p.slots -= keep
}

func (p *jsonParser) value(tok *jsonToken) lua.LValue {
	switch tok.typ {
	case tString:
		return lua.LString(tok.str)
	case tNumber:
		return lua.LNumber(tok.num)
	case tBoolean:
		return lua.LBool(tok.b)
	case tNull:
		return p.null
	case tObjBegin:
		return p.object()
	case tArrBegin:
		return p.array()
	}
	p.parseError("value", tok)
	return lua.LNil
}

func (p *jsonParser) object() lua.LValue {
	p.descend(3, 2)
	t := p.L.CreateTable(0, 0)
	var tok jsonToken
	p.next(&tok)
	if tok.typ == tObjEnd {
		p.ascend(2)
		return t
	}
	for {
		if tok.typ != tString {
			p.parseError("object key string", &tok)
		}
		key := tok.str
		p.next(&tok)
		if tok.typ != tColon {
			p.parseError("colon", &tok)
		}
		p.next(&tok)
		t.RawSetString(key, p.value(&tok))
		p.next(&tok)
		if tok.typ == tObjEnd {
			p.ascend(2)
			return t
		}
		if tok.typ != tComma {
			p.parseError("comma or object end", &tok)
		}
		p.next(&tok)
	}
}

func (p *jsonParser) array() lua.LValue {
	p.descend(2, 1)
	t := p.L.CreateTable(0, 0)
	var tok jsonToken
	p.next(&tok)
	if tok.typ == tArrEnd {
		p.ascend(1)
		return t
	}
	for i := 1; ; i++ {
		t.RawSetInt(i, p.value(&tok))
		p.next(&tok)
		if tok.typ == tArrEnd {
			p.ascend(1)
			return t
		}
		if tok.typ != tComma {
			p.parseError("comma or array end", &tok)
		}
		p.next(&tok)
	}
}
