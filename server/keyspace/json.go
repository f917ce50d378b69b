package keyspace

import (
	"maps"
	"math"
	"strconv"
	"unicode/utf8"
)

// MaxJSONDepth bounds how deeply containers nest in a JSON document: a
// value parsed or stored anywhere in a document never sits inside more
// than MaxJSONDepth arrays and objects, so that every walk over a document
// is bounded.
const MaxJSONDepth = 128

// jsonIndexThreshold is the member count above which an object keeps a map
// from member name to position; smaller objects are searched linearly.
const jsonIndexThreshold = 16

// JSONKind is the kind of a JSON value.
type JSONKind uint8

// The kinds of JSON values.
const (
	JSONNull JSONKind = iota
	JSONFalse
	JSONTrue
	JSONNumber
	JSONString
	JSONArray
	JSONObject
)

// JSONValue is one value of a JSON document: null, a boolean, a number, a
// string, an array or an object. Numbers keep the literal they were written
// with, so that no precision is lost (an int64 stays an int64, a decimal
// keeps its digits). Objects keep their members in insertion order; a
// member set twice keeps its first position.
//
// The zero JSONValue is null.
type JSONValue struct {
	kind  JSONKind
	str   string         // JSONString: the text; JSONNumber: the literal
	elems []JSONValue    // JSONArray: the elements; JSONObject: member values
	names []string       // JSONObject: member names, parallel to elems
	index map[string]int // JSONObject: name → position, above jsonIndexThreshold
}

// Kind returns the value's kind.
func (v *JSONValue) Kind() JSONKind { return v.kind }

// TypeName names the value's type as JTYPE does: "null", "boolean",
// "integer" (a number written as an integer that fits 64 bits), "number",
// "string", "array" or "object".
func (v *JSONValue) TypeName() string {
	if v.kind == JSONNumber {
		if _, ok := jsonInt(v.str); ok {
			return "integer"
		}
	}
	return kindWords[v.kind].typeName
}

// phrase names the value's type for error messages: "a number", "null", ….
func (v *JSONValue) phrase() string { return kindWords[v.kind].phrase }

// kindWords names each kind as TypeName and phrase do.
var kindWords = [...]struct{ typeName, phrase string }{
	JSONNull:   {"null", "null"},
	JSONFalse:  {"boolean", "a boolean"},
	JSONTrue:   {"boolean", "a boolean"},
	JSONNumber: {"number", "a number"},
	JSONString: {"string", "a string"},
	JSONArray:  {"array", "an array"},
	JSONObject: {"object", "an object"},
}

// Len returns the number of elements of an array, members of an object or
// bytes of a string; 0 for other values.
func (v *JSONValue) Len() int {
	switch v.kind {
	case JSONArray, JSONObject:
		return len(v.elems)
	case JSONString:
		return len(v.str)
	}
	return 0
}

// Str returns a string's text or a number's literal.
func (v *JSONValue) Str() string { return v.str }

// Names returns an object's member names in document order. The slice
// belongs to the value and must not be changed.
func (v *JSONValue) Names() []string { return v.names }

// Elem returns element or member value i of an array or object.
func (v *JSONValue) Elem(i int) *JSONValue { return &v.elems[i] }

// find returns the position of member name, or -1.
func (v *JSONValue) find(name string) int {
	if v.index != nil {
		if i, ok := v.index[name]; ok {
			return i
		}
		return -1
	}
	for i, n := range v.names {
		if n == name {
			return i
		}
	}
	return -1
}

// setMember sets member name to val: in place when it exists, appended
// otherwise.
func (v *JSONValue) setMember(name string, val JSONValue) {
	if i := v.find(name); i >= 0 {
		v.elems[i] = val
		return
	}
	v.names = append(v.names, name)
	v.elems = append(v.elems, val)
	switch {
	case v.index != nil:
		v.index[name] = len(v.names) - 1
	case len(v.names) > jsonIndexThreshold:
		v.index = make(map[string]int, len(v.names))
		for i, m := range v.names {
			v.index[m] = i
		}
	}
}

// removeAt removes element or member i, keeping the order of the others.
func (v *JSONValue) removeAt(i int) {
	if v.kind == JSONObject {
		if v.index != nil {
			delete(v.index, v.names[i])
			for _, n := range v.names[i+1:] {
				v.index[n]--
			}
		}
		copy(v.names[i:], v.names[i+1:])
		v.names[len(v.names)-1] = ""
		v.names = v.names[:len(v.names)-1]
	}
	copy(v.elems[i:], v.elems[i+1:])
	v.elems[len(v.elems)-1] = JSONValue{}
	v.elems = v.elems[:len(v.elems)-1]
}

// nesting returns how many containers deep the value goes: 0 for a scalar,
// 1 for an array of scalars, ….
func (v *JSONValue) nesting() int {
	if v.kind != JSONArray && v.kind != JSONObject {
		return 0
	}
	d := 0
	for i := range v.elems {
		d = max(d, v.elems[i].nesting())
	}
	return d + 1
}

// clone returns a deep copy. Strings are immutable and shared.
func (v *JSONValue) clone() JSONValue {
	c := JSONValue{kind: v.kind, str: v.str}
	if v.elems != nil {
		c.elems = make([]JSONValue, len(v.elems))
		for i := range v.elems {
			c.elems[i] = v.elems[i].clone()
		}
	}
	if v.names != nil {
		c.names = make([]string, len(v.names))
		copy(c.names, v.names)
	}
	if v.index != nil {
		c.index = maps.Clone(v.index)
	}
	return c
}

// memoryUsage estimates the bytes the value takes.
func (v *JSONValue) memoryUsage() int64 {
	n := int64(len(v.str))
	if v.elems != nil {
		n += int64(cap(v.elems)) * 80
		for i := range v.elems {
			n += v.elems[i].memoryUsage()
		}
	}
	for _, name := range v.names {
		n += 16 + int64(len(name))
	}
	if v.index != nil {
		n += int64(len(v.index)) * 40
	}
	return n
}

// AppendText appends the value as compact JSON text: no insignificant
// white space, numbers as written, strings escaped minimally.
func (v *JSONValue) AppendText(dst []byte) []byte {
	switch v.kind {
	case JSONNull:
		return append(dst, "null"...)
	case JSONFalse:
		return append(dst, "false"...)
	case JSONTrue:
		return append(dst, "true"...)
	case JSONNumber:
		return append(dst, v.str...)
	case JSONString:
		return appendJSONString(dst, v.str)
	case JSONArray:
		dst = append(dst, '[')
		for i := range v.elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = v.elems[i].AppendText(dst)
		}
		return append(dst, ']')
	}
	dst = append(dst, '{')
	for i := range v.elems {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, v.names[i])
		dst = append(dst, ':')
		dst = v.elems[i].AppendText(dst)
	}
	return append(dst, '}')
}

// TextLen returns the length of the value's compact JSON text, so that a
// reply can announce it before AppendText writes it.
func (v *JSONValue) TextLen() int {
	switch v.kind {
	case JSONNull, JSONTrue:
		return 4
	case JSONFalse:
		return 5
	case JSONNumber:
		return len(v.str)
	case JSONString:
		return jsonStringLen(v.str)
	}
	n := 2 + max(len(v.elems)-1, 0)
	for i := range v.elems {
		n += v.elems[i].TextLen()
	}
	for _, name := range v.names {
		n += jsonStringLen(name) + 1
	}
	return n
}

// jsonStringLen returns the length of s written as a JSON string.
func jsonStringLen(s string) int {
	n := 2 + len(s)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
			n++
		case c < 0x20:
			n += 5
		}
	}
	return n
}

// AppendJSONString appends s, which must be valid UTF-8, as a JSON string.
func AppendJSONString(dst []byte, s string) []byte { return appendJSONString(dst, s) }

// IsJSONNumber reports whether b is exactly one JSON number.
func IsJSONNumber(b []byte) bool {
	n := scanJSONNumber(b)
	return n > 0 && n == len(b)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s, which is valid UTF-8, as a JSON string.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// JSONError is an error of the json type: invalid JSON text, an invalid
// path, a path that does not fit the document, a wrong type. Its message is
// written for clients; the server replies with it after "ERR ".
type JSONError struct{ Msg string }

// Error returns the message.
func (e *JSONError) Error() string { return e.Msg }

func jsonErr(msg string) error { return &JSONError{Msg: msg} }

// ErrJSONIncrement is NumIncrBy's error for an increment that is not a
// JSON number.
var ErrJSONIncrement = jsonErr("increment is not a JSON number")

var errJSONNesting = jsonErr("JSON nesting exceeds " + strconv.Itoa(MaxJSONDepth) + " levels")

// ParseJSONValue parses text, which must hold exactly one JSON value
// (RFC 8259) and be valid UTF-8, nested at most MaxJSONDepth deep.
//
// The value's strings and numbers share one copy of text, so that parsing
// costs one allocation for all of them plus one or two per container.
func ParseJSONValue(text []byte) (JSONValue, error) {
	p := jsonParser{b: text, s: string(text)}
	v, err := p.value(0)
	if err != nil {
		return JSONValue{}, err
	}
	p.space()
	if p.pos < len(p.b) {
		return JSONValue{}, p.fail("after the value")
	}
	return v, nil
}

// jsonParser is a recursive-descent parser over one JSON text. Recursion
// is bounded by MaxJSONDepth. Containers collect their children on the
// parser's stacks and copy them out, exactly sized, when they close.
type jsonParser struct {
	b     []byte
	s     string // b as a string, which parsed strings and numbers slice
	pos   int
	vals  []JSONValue
	names []string
}

// fail reports the byte at the parser's position as unexpected, or the
// end of the input.
func (p *jsonParser) fail(where string) error {
	if p.pos >= len(p.b) {
		return jsonErr("invalid JSON: unexpected end of input")
	}
	msg := "invalid JSON: unexpected " + describeByte(p.b[p.pos])
	if where != "" {
		msg += " " + where
	}
	return jsonErr(msg + " at offset " + strconv.Itoa(p.pos))
}

// describeByte quotes a printable ASCII byte and names any other in hex.
func describeByte(c byte) string {
	if c > 0x20 && c < 0x7f {
		return "'" + string(rune(c)) + "'"
	}
	return "byte 0x" + string([]byte{hexDigits[c>>4], hexDigits[c&0xf]})
}

func (p *jsonParser) space() {
	for p.pos < len(p.b) {
		switch p.b[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// value parses one value; depth is the number of containers it sits in.
func (p *jsonParser) value(depth int) (JSONValue, error) {
	p.space()
	if p.pos >= len(p.b) {
		return JSONValue{}, p.fail("")
	}
	switch c := p.b[p.pos]; {
	case c == '{':
		if depth >= MaxJSONDepth {
			return JSONValue{}, errJSONNesting
		}
		return p.object(depth + 1)
	case c == '[':
		if depth >= MaxJSONDepth {
			return JSONValue{}, errJSONNesting
		}
		return p.array(depth + 1)
	case c == '"':
		s, err := p.string()
		if err != nil {
			return JSONValue{}, err
		}
		return JSONValue{kind: JSONString, str: s}, nil
	case c == '-' || c >= '0' && c <= '9':
		n := scanJSONNumber(p.b[p.pos:])
		if n == 0 {
			p.pos++
			return JSONValue{}, p.fail("in a number")
		}
		if n < 0 {
			p.pos -= n
			return JSONValue{}, p.fail("in a number")
		}
		v := JSONValue{kind: JSONNumber, str: p.s[p.pos : p.pos+n]}
		p.pos += n
		return v, nil
	case c == 't':
		return p.literal("true", JSONTrue)
	case c == 'f':
		return p.literal("false", JSONFalse)
	case c == 'n':
		return p.literal("null", JSONNull)
	}
	return JSONValue{}, p.fail("")
}

func (p *jsonParser) literal(word string, k JSONKind) (JSONValue, error) {
	for i := 0; i < len(word); i++ {
		if p.pos >= len(p.b) || p.b[p.pos] != word[i] {
			return JSONValue{}, p.fail("")
		}
		p.pos++
	}
	return JSONValue{kind: k}, nil
}

// empty moves past a container's opening byte and reports whether the
// container closes at once, moving past the close too.
func (p *jsonParser) empty(close byte) bool {
	p.pos++
	p.space()
	if p.pos < len(p.b) && p.b[p.pos] == close {
		p.pos++
		return true
	}
	return false
}

// next moves past what follows an element of a container: ',' (more is
// true) or the closing byte. where names the container in errors.
func (p *jsonParser) next(close byte, where string) (more bool, err error) {
	p.space()
	if p.pos >= len(p.b) {
		return false, p.fail("")
	}
	switch p.b[p.pos] {
	case ',':
		p.pos++
		return true, nil
	case close:
		p.pos++
		return false, nil
	}
	return false, p.fail(where)
}

func (p *jsonParser) array(depth int) (JSONValue, error) {
	mark := len(p.vals)
	if p.empty(']') {
		return JSONValue{kind: JSONArray, elems: []JSONValue{}}, nil
	}
	for more := true; more; {
		e, err := p.value(depth)
		if err != nil {
			return JSONValue{}, err
		}
		p.vals = append(p.vals, e)
		if more, err = p.next(']', "in an array"); err != nil {
			return JSONValue{}, err
		}
	}
	elems := make([]JSONValue, len(p.vals)-mark)
	copy(elems, p.vals[mark:])
	clear(p.vals[mark:])
	p.vals = p.vals[:mark]
	return JSONValue{kind: JSONArray, elems: elems}, nil
}

func (p *jsonParser) object(depth int) (JSONValue, error) {
	mark := len(p.vals)
	if p.empty('}') {
		return JSONValue{kind: JSONObject, elems: []JSONValue{}, names: []string{}}, nil
	}
	for more := true; more; {
		p.space()
		if p.pos >= len(p.b) || p.b[p.pos] != '"' {
			return JSONValue{}, p.fail("where a member name should be")
		}
		name, err := p.string()
		if err != nil {
			return JSONValue{}, err
		}
		p.space()
		if p.pos >= len(p.b) || p.b[p.pos] != ':' {
			return JSONValue{}, p.fail("where ':' should be")
		}
		p.pos++
		m, err := p.value(depth)
		if err != nil {
			return JSONValue{}, err
		}
		p.vals = append(p.vals, m)
		p.names = append(p.names, name)
		if more, err = p.next('}', "in an object"); err != nil {
			return JSONValue{}, err
		}
	}
	n := len(p.vals) - mark
	nmark := len(p.names) - n
	v := JSONValue{kind: JSONObject, elems: make([]JSONValue, 0, n), names: make([]string, 0, n)}
	for i := 0; i < n; i++ {
		v.setMember(p.names[nmark+i], p.vals[mark+i])
	}
	clear(p.vals[mark:])
	p.vals = p.vals[:mark]
	p.names = p.names[:nmark]
	return v, nil
}

// string parses a JSON string at p.pos (on its opening quote). A string
// without escapes is a slice of the parser's copy of the text.
func (p *jsonParser) string() (string, error) {
	i := p.pos + 1
	for i < len(p.b) {
		c := p.b[i]
		if c == '"' {
			s := p.s[p.pos+1 : i]
			p.pos = i + 1
			return s, nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		i++
	}
	s, n, err := decodeQuoted(p.b[p.pos:], false)
	if err != nil {
		p.pos += n
		return "", err
	}
	p.pos += n
	return s, nil
}

// decodeQuoted decodes the quoted string at the start of b (opening quote
// included) with JSON's escapes. It returns the text and the bytes used;
// on error, the offset of the problem. With path set, the string may be
// single-quoted and "\'" is an escape too, as in JSONPath.
func decodeQuoted(b []byte, path bool) (string, int, error) {
	quote := b[0]
	i := 1
	// Fast path: no escapes.
	for i < len(b) {
		c := b[i]
		if c == quote {
			return string(b[1:i]), i + 1, nil
		}
		if c == '\\' {
			break
		}
		size, err := stringChar(b, i)
		if err != nil {
			return "", i, err
		}
		i += size
	}
	buf := append(make([]byte, 0, len(b)), b[1:i]...)
	for i < len(b) {
		c := b[i]
		switch {
		case c == quote:
			return string(buf), i + 1, nil
		case c != '\\':
			size, err := stringChar(b, i)
			if err != nil {
				return "", i, err
			}
			buf = append(buf, b[i:i+size]...)
			i += size
			continue
		}
		// An escape.
		if i+1 >= len(b) {
			break
		}
		e := b[i+1]
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case '\'':
			if !path {
				return "", i, jsonErr("invalid JSON: invalid escape '\\'' at offset " + strconv.Itoa(i))
			}
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := hex4(b[i+2:])
			if !ok {
				return "", i, jsonErr("invalid JSON: invalid \\u escape at offset " + strconv.Itoa(i))
			}
			n := 6
			if r >= 0xd800 && r < 0xe000 {
				// A surrogate must be a high one followed by a low one.
				lo, ok := rune(0), false
				if r < 0xdc00 && len(b) >= i+12 && b[i+6] == '\\' && b[i+7] == 'u' {
					lo, ok = hex4(b[i+8:])
					ok = ok && lo >= 0xdc00 && lo < 0xe000
				}
				if !ok {
					return "", i, jsonErr("invalid JSON: lone surrogate in a \\u escape at offset " + strconv.Itoa(i))
				}
				r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
				n = 12
			}
			buf = utf8.AppendRune(buf, r)
			i += n
			continue
		default:
			return "", i, jsonErr("invalid JSON: invalid escape '\\" + string(rune(e)) + "' at offset " + strconv.Itoa(i))
		}
		i += 2
	}
	return "", len(b), jsonErr("invalid JSON: unexpected end of input")
}

// stringChar returns the length of the character at b[i], inside a
// string's quotes and not an escape; a control character or invalid UTF-8
// is an error.
func stringChar(b []byte, i int) (int, error) {
	c := b[i]
	switch {
	case c < 0x20:
		return 0, jsonErr("invalid JSON: control character " + describeByte(c) + " in a string at offset " + strconv.Itoa(i))
	case c < utf8.RuneSelf:
		return 1, nil
	}
	r, size := utf8.DecodeRune(b[i:])
	if r == utf8.RuneError && size == 1 {
		return 0, jsonErr("invalid JSON: invalid UTF-8 in a string at offset " + strconv.Itoa(i))
	}
	return size, nil
}

// hex4 decodes four hex digits.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// scanJSONNumber returns the length of the JSON number at the start of b:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?. It returns 0 when b does
// not start with one, and -i when byte i is where the number goes wrong.
func scanJSONNumber(b []byte) int {
	i := 0
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		if i == 0 {
			return 0
		}
		return -i
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return -i
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return -i
		}
	}
	return i
}

// jsonInt returns a number literal's value when it is written as an
// integer that fits 64 bits.
func jsonInt(lit string) (int64, bool) {
	for i := 0; i < len(lit); i++ {
		if c := lit[i]; c == '.' || c == 'e' || c == 'E' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(lit, 10, 64)
	return n, err == nil
}

// AddOverflows reports whether a+b leaves the int64 range.
func AddOverflows(a, b int64) bool {
	return b > 0 && a > math.MaxInt64-b || b < 0 && a < math.MinInt64-b
}

// formatJSONFloat formats a finite float as a JSON number that reads back
// as a float: the shortest digits that round-trip, in exponent form only
// for very large or very small magnitudes, and with ".0" when it would
// otherwise look like an integer.
func formatJSONFloat(f float64) string {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(make([]byte, 0, 24), f, format, -1, 64)
	if format == 'e' {
		// 1e-07 → 1e-7, as JavaScript writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
		return string(b)
	}
	for _, c := range b {
		if c == '.' {
			return string(b)
		}
	}
	return string(append(b, '.', '0'))
}

// JSONCond is JSET's condition.
type JSONCond uint8

// JSET's conditions: always, only when the value is absent (NX), only when
// it exists (XX).
const (
	JSONAlways JSONCond = iota
	JSONIfAbsent
	JSONIfExists
)

// JSON is the value of a json key: one JSON document.
type JSON struct {
	root JSONValue
}

// NewJSON returns a document holding v, which it takes over.
func NewJSON(v JSONValue) *JSON { return &JSON{root: v} }

// ParseJSON parses a whole document, as stored by Text.
func ParseJSON(text []byte) (*JSON, error) {
	v, err := ParseJSONValue(text)
	if err != nil {
		return nil, err
	}
	return &JSON{root: v}, nil
}

// Type reports TypeJSON.
func (j *JSON) Type() Type { return TypeJSON }

// Root returns the document's root value.
func (j *JSON) Root() *JSONValue { return &j.root }

// Text returns the document as compact JSON text.
func (j *JSON) Text() []byte { return j.root.AppendText(nil) }

// AppendText appends the document as compact JSON text.
func (j *JSON) AppendText(dst []byte) []byte { return j.root.AppendText(dst) }

// MarshalJSON returns the document's text (encoding/json.Marshaler).
func (j *JSON) MarshalJSON() ([]byte, error) { return j.Text(), nil }

// Copy returns an independent deep copy.
func (j *JSON) Copy() Object { return &JSON{root: j.root.clone()} }

// MemoryUsage estimates the bytes the document takes.
func (j *JSON) MemoryUsage() int64 { return 80 + j.root.memoryUsage() }

// Encoding names the value's encoding for OBJECT ENCODING: "raw", what
// Redis reports for values a module owns.
func (j *JSON) Encoding() string { return "raw" }

// Recreate returns the command that re-creates the document at key from
// nothing: JSET key $ <document>.
func (j *JSON) Recreate(key []byte) [][][]byte {
	return [][][]byte{{[]byte("JSET"), key, []byte("$"), j.Text()}}
}

// lookup returns the value at the first n segments of p, nil when a member
// or element on the way is missing. A segment that meets a value that is
// not the container it needs is an error.
func (j *JSON) lookup(p JSONPath, n int) (*JSONValue, error) {
	v := &j.root
	for i := 0; i < n; i++ {
		if !p.segs[i].fits(v) {
			return nil, p.wrongContainer(i, v)
		}
		k, ok := v.position(&p.segs[i])
		if !ok {
			return nil, nil
		}
		v = &v.elems[k]
	}
	return v, nil
}

// fits reports whether v is the container seg addresses into: an array
// for an index, an object for a member name.
func (seg *pathSeg) fits(v *JSONValue) bool {
	if seg.isIndex {
		return v.kind == JSONArray
	}
	return v.kind == JSONObject
}

// wrongContainer reports that v, met by segment i of p, is not the
// container the segment needs.
func (p JSONPath) wrongContainer(i int, v *JSONValue) error {
	if p.segs[i].isIndex {
		return p.notA(i, v, "an array")
	}
	return p.notA(i, v, "an object")
}

// position returns the position seg addresses in v, the container it
// addresses into; false when there is no such element or member.
func (v *JSONValue) position(seg *pathSeg) (int, bool) {
	if seg.isIndex {
		return seg.resolve(len(v.elems))
	}
	k := v.find(string(seg.key))
	return k, k >= 0
}

// parent returns the container the last segment of p (not the root)
// addresses into; a missing one is an error.
func (j *JSON) parent(p JSONPath) (*JSONValue, error) {
	n := len(p.segs) - 1
	v, err := j.lookup(p, n)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, p.missing(n)
	}
	if !p.segs[n].fits(v) {
		return nil, p.wrongContainer(n, v)
	}
	return v, nil
}

// Get returns the value at p, nil when it does not exist.
func (j *JSON) Get(p JSONPath) (*JSONValue, error) { return j.lookup(p, len(p.segs)) }

// getKind returns the value at p when it is of kind k (what, in errors).
// An absent value is nil, or an error when required.
func (j *JSON) getKind(p JSONPath, k JSONKind, what string, required bool) (*JSONValue, error) {
	v, err := j.Get(p)
	if err != nil {
		return nil, err
	}
	if v == nil {
		if required {
			return nil, p.missing(len(p.segs))
		}
		return nil, nil
	}
	if v.kind != k {
		return nil, p.notA(len(p.segs), v, what)
	}
	return v, nil
}

// StrLen returns the length in bytes of the string at p; found is false
// when there is no value at p.
func (j *JSON) StrLen(p JSONPath) (n int, found bool, err error) {
	v, err := j.getKind(p, JSONString, "a string", false)
	if v == nil {
		return 0, false, err
	}
	return len(v.str), true, nil
}

// ArrLen returns the length of the array at p; found is false when there
// is no value at p.
func (j *JSON) ArrLen(p JSONPath) (n int, found bool, err error) {
	v, err := j.getKind(p, JSONArray, "an array", false)
	if v == nil {
		return 0, false, err
	}
	return len(v.elems), true, nil
}

// ObjKeys returns the member names of the object at p; found is false when
// there is no value at p. The slice belongs to the document.
func (j *JSON) ObjKeys(p JSONPath) (names []string, found bool, err error) {
	v, err := j.getKind(p, JSONObject, "an object", false)
	if v == nil {
		return nil, false, err
	}
	return v.names, true, nil
}

// Set stores v (which it takes over) at p under cond and reports whether
// it did. The container p's last segment addresses into must exist; an
// array element must exist to be replaced (Set never extends an array).
func (j *JSON) Set(p JSONPath, v JSONValue, cond JSONCond) (bool, error) {
	if len(p.segs)+v.nesting() > MaxJSONDepth {
		return false, errJSONNesting
	}
	if len(p.segs) == 0 {
		if cond == JSONIfAbsent {
			return false, nil
		}
		j.root = v
		return true, nil
	}
	c, err := j.parent(p)
	if err != nil {
		return false, err
	}
	last := &p.segs[len(p.segs)-1]
	if last.isIndex {
		k, ok := last.resolve(len(c.elems))
		switch {
		case !ok && cond == JSONIfExists:
			return false, nil
		case !ok:
			return false, p.outOfRange(len(c.elems))
		case cond == JSONIfAbsent:
			return false, nil
		}
		c.elems[k] = v
		return true, nil
	}
	exists := c.find(string(last.key)) >= 0
	if exists && cond == JSONIfAbsent || !exists && cond == JSONIfExists {
		return false, nil
	}
	c.setMember(string(last.key), v)
	return true, nil
}

// Delete removes the value at p, which is not the root, and reports
// whether there was one.
func (j *JSON) Delete(p JSONPath) (bool, error) {
	n := len(p.segs) - 1
	c, err := j.lookup(p, n)
	if err != nil || c == nil {
		return false, err
	}
	if !p.segs[n].fits(c) {
		return false, p.wrongContainer(n, c)
	}
	k, ok := c.position(&p.segs[n])
	if ok {
		c.removeAt(k)
	}
	return ok, nil
}

// Merge applies the RFC 7386 merge patch (which it takes over) at p.
// Merging at an object member behaves as merging {"member": patch} into
// the object: a null patch removes the member, a missing member is
// created. At an array element the element becomes MergePatch(element,
// patch). At the root the document becomes MergePatch(document, patch),
// except that a null patch removes the document: remove is then true and
// the caller deletes the key.
func (j *JSON) Merge(p JSONPath, patch JSONValue) (remove bool, err error) {
	if len(p.segs)+patch.nesting() > MaxJSONDepth {
		return false, errJSONNesting
	}
	if len(p.segs) == 0 {
		if patch.kind == JSONNull {
			return true, nil
		}
		MergePatch(&j.root, patch)
		return false, nil
	}
	c, err := j.parent(p)
	if err != nil {
		return false, err
	}
	last := &p.segs[len(p.segs)-1]
	if last.isIndex {
		k, ok := last.resolve(len(c.elems))
		if !ok {
			return false, p.outOfRange(len(c.elems))
		}
		MergePatch(&c.elems[k], patch)
		return false, nil
	}
	c.mergeMember(string(last.key), patch)
	return false, nil
}

// MergePatch sets *target to RFC 7386's MergePatch(target, patch). It takes
// over patch's nodes.
func MergePatch(target *JSONValue, patch JSONValue) {
	if patch.kind != JSONObject {
		*target = patch
		return
	}
	if target.kind != JSONObject {
		*target = JSONValue{kind: JSONObject, elems: []JSONValue{}, names: []string{}}
	}
	for i, name := range patch.names {
		target.mergeMember(name, patch.elems[i])
	}
}

// mergeMember merges patch (which it takes over) into member name of the
// object v, as RFC 7386 does for each member of an object patch: a null
// patch removes the member, a missing member is created.
func (v *JSONValue) mergeMember(name string, patch JSONValue) {
	k := v.find(name)
	switch {
	case patch.kind == JSONNull:
		if k >= 0 {
			v.removeAt(k)
		}
	case k >= 0:
		MergePatch(&v.elems[k], patch)
	default:
		var m JSONValue
		MergePatch(&m, patch)
		v.setMember(name, m)
	}
}

// NumIncrBy adds the JSON number by to the number at p and returns the
// result. Two integers add as 64-bit integers (an overflow is an error);
// otherwise the sum is a float.
func (j *JSON) NumIncrBy(p JSONPath, by []byte) (*JSONValue, error) {
	if !IsJSONNumber(by) {
		return nil, ErrJSONIncrement
	}
	v, err := j.getKind(p, JSONNumber, "a number", true)
	if err != nil {
		return nil, err
	}
	if a, ok := jsonInt(v.str); ok {
		if b, ok := jsonInt(string(by)); ok {
			if AddOverflows(a, b) {
				return nil, jsonErr("increment or decrement would overflow")
			}
			v.str = strconv.FormatInt(a+b, 10)
			return v, nil
		}
	}
	a, _ := strconv.ParseFloat(v.str, 64)
	b, _ := strconv.ParseFloat(string(by), 64)
	sum := a + b
	if math.IsInf(sum, 0) || math.IsNaN(sum) {
		return nil, jsonErr("result is not a finite number")
	}
	v.str = formatJSONFloat(sum)
	return v, nil
}

// ArrAppend appends vals (which it takes over) to the array at p and
// returns the array.
func (j *JSON) ArrAppend(p JSONPath, vals []JSONValue) (*JSONValue, error) {
	for i := range vals {
		if len(p.segs)+1+vals[i].nesting() > MaxJSONDepth {
			return nil, errJSONNesting
		}
	}
	v, err := j.getKind(p, JSONArray, "an array", true)
	if err != nil {
		return nil, err
	}
	v.elems = append(v.elems, vals...)
	return v, nil
}

// ApplyJSONEffect applies one json effect as the server pushes it to sync
// clients, for a client's local replica: cmd is "JSET" (args: path, value),
// "JMERGE" (args: path, patch) or "JDEL" (args: path, or none for the
// root). doc is the key's current document, nil when it has none; it is
// changed in place. The result is the key's document afterwards, nil when
// the effect deleted it. An effect that does not fit doc is an error and
// changes nothing the caller keeps.
func ApplyJSONEffect(doc *JSON, cmd string, args [][]byte) (*JSON, error) {
	if len(args) == 0 && cmd == "JDEL" {
		return nil, nil
	}
	if len(args) != 2 && (cmd == "JSET" || cmd == "JMERGE") || len(args) != 1 && cmd == "JDEL" {
		return doc, jsonErr("wrong number of arguments for a " + cmd + " effect")
	}
	p, err := ParseJSONPath(args[0])
	if err != nil {
		return doc, err
	}
	switch cmd {
	case "JDEL":
		if p.IsRoot() || doc == nil {
			return nil, nil
		}
		_, err := doc.Delete(p)
		return doc, err
	case "JSET", "JMERGE":
	default:
		return doc, jsonErr("unknown json effect " + cmd)
	}
	v, err := ParseJSONValue(args[1])
	if err != nil {
		return doc, err
	}
	if doc == nil {
		if !p.IsRoot() {
			return nil, jsonErr("new documents must be created at the root path '$'")
		}
		if cmd == "JMERGE" && v.kind == JSONNull {
			return nil, nil
		}
		doc = NewJSON(JSONValue{})
	}
	if cmd == "JSET" {
		_, err = doc.Set(p, v, JSONAlways)
		return doc, err
	}
	remove, err := doc.Merge(p, v)
	if remove {
		return nil, err
	}
	return doc, err
}
