package keyspace

import (
	"strconv"
	"unicode/utf8"
)

// JSONPath addresses one value inside a JSON document. The syntax is a
// subset of JSONPath (RFC 9535) in which every path names at most one
// value:
//
//	$                the root
//	$.name           member "name" of an object
//	$["any name"]    member "any name" (JSON string escapes; '…' quotes too)
//	$[3]             element 3 of an array, counting from 0
//	$[-1]            the last element (negative indexes count from the end)
//	$.a[0]["b c"].d  segments chain
//
// A dot name is one or more bytes other than '.', '[', ']', '*', quotes,
// backslash, space and control characters; any other name needs the
// bracket form. The legacy form without '$' is accepted too: "." is the
// root and ".a.b" is "$.a.b". Wildcards, recursive descent ("..") filters,
// slices and unions are not supported, and a path has at most
// MaxJSONDepth segments.
type JSONPath struct {
	segs []pathSeg
}

// pathSeg is one segment: a member name or an array index.
type pathSeg struct {
	key     []byte
	index   int
	isIndex bool
}

// resolve returns the position seg addresses in an array of length n.
func (seg *pathSeg) resolve(n int) (int, bool) {
	i := seg.index
	if i < 0 {
		i += n
	}
	return i, i >= 0 && i < n
}

// RootPath is the path of the whole document.
var RootPath = JSONPath{}

// ParseJSONPath parses a path in the syntax JSONPath describes.
func ParseJSONPath(b []byte) (JSONPath, error) {
	var p JSONPath
	i := 0
	switch {
	case len(b) > 0 && b[0] == '$':
		i = 1
	case len(b) == 1 && b[0] == '.':
		return p, nil
	case len(b) > 0 && b[0] == '.':
	default:
		return p, pathErr(b, "it must start with '$'")
	}
	if n := countSegments(b[i:]); n > 0 {
		p.segs = make([]pathSeg, 0, min(n, MaxJSONDepth))
	}
	for i < len(b) {
		if len(p.segs) == MaxJSONDepth {
			return JSONPath{}, pathErr(b, "more than "+strconv.Itoa(MaxJSONDepth)+" segments")
		}
		switch b[i] {
		case '.':
			i++
			start := i
			for i < len(b) && isPathNameByte(b[i]) {
				i++
			}
			if i == start {
				if i < len(b) && (b[i] == '.' || b[i] == '*') {
					return JSONPath{}, pathErr(b, "wildcards and recursive descent are not supported")
				}
				return JSONPath{}, pathErr(b, "expected a member name after '.' at offset "+strconv.Itoa(start))
			}
			if !utf8.Valid(b[start:i]) {
				return JSONPath{}, pathErr(b, "invalid UTF-8 in a member name")
			}
			p.segs = append(p.segs, pathSeg{key: b[start:i]})
		case '[':
			i++
			if i >= len(b) {
				return JSONPath{}, pathErr(b, "unterminated '['")
			}
			var seg pathSeg
			switch c := b[i]; {
			case c == '"' || c == '\'':
				s, n, err := decodeQuoted(b[i:], true)
				if err != nil {
					return JSONPath{}, pathErr(b, "invalid quoted name at offset "+strconv.Itoa(i))
				}
				seg.key = []byte(s)
				i += n
			case c == '-' || c >= '0' && c <= '9':
				start := i
				if c == '-' {
					i++
				}
				for i < len(b) && b[i] >= '0' && b[i] <= '9' {
					i++
				}
				digits := b[start:i]
				ds := digits
				if c == '-' {
					ds = digits[1:]
				}
				// No sign but '-', no leading zeros, no "-0".
				n, err := strconv.ParseInt(string(digits), 10, 32)
				if err != nil || ds[0] == '0' && (len(ds) > 1 || c == '-') {
					return JSONPath{}, pathErr(b, "invalid array index '"+string(digits)+"'")
				}
				seg.index, seg.isIndex = int(n), true
			default:
				return JSONPath{}, pathErr(b, "wildcards, filters, slices and unions are not supported; expected an index or a quoted name after '['")
			}
			if i >= len(b) || b[i] != ']' {
				return JSONPath{}, pathErr(b, "expected ']' at offset "+strconv.Itoa(i))
			}
			i++
			p.segs = append(p.segs, seg)
		default:
			return JSONPath{}, pathErr(b, "unexpected "+describeByte(b[i])+" at offset "+strconv.Itoa(i))
		}
	}
	return p, nil
}

// countSegments returns an upper bound of the number of segments in b:
// its '.' and '[' bytes.
func countSegments(b []byte) int {
	n := 0
	for _, c := range b {
		if c == '.' || c == '[' {
			n++
		}
	}
	return n
}

// isPathNameByte reports whether c may appear in a dot name.
func isPathNameByte(c byte) bool {
	switch c {
	case '.', '[', ']', '*', '"', '\'', '\\', ' ', 0x7f:
		return false
	}
	return c > 0x20
}

// isPlainNameByte reports whether c keeps a name in the dot form when a
// path is written out.
func isPlainNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c >= utf8.RuneSelf
}

func pathErr(b []byte, why string) error {
	if len(b) > 128 {
		b = b[:128]
	}
	return jsonErr("invalid JSON path '" + string(b) + "': " + why)
}

// IsRoot reports whether the path is the whole document.
func (p JSONPath) IsRoot() bool { return len(p.segs) == 0 }

// Len returns the number of segments.
func (p JSONPath) Len() int { return len(p.segs) }

// String writes the path out in canonical form.
func (p JSONPath) String() string { return string(p.AppendTo(nil, len(p.segs))) }

// AppendTo appends the canonical form of the first n segments: "$", then
// ".name" for names made of letters, digits, '_', '-' and non-ASCII
// characters, ["name"] for any other name, [i] for indexes.
func (p JSONPath) AppendTo(dst []byte, n int) []byte {
	dst = append(dst, '$')
	for _, seg := range p.segs[:n] {
		if seg.isIndex {
			dst = append(dst, '[')
			dst = strconv.AppendInt(dst, int64(seg.index), 10)
			dst = append(dst, ']')
			continue
		}
		plain := len(seg.key) > 0
		for _, c := range seg.key {
			if !isPlainNameByte(c) {
				plain = false
				break
			}
		}
		if plain {
			dst = append(dst, '.')
			dst = append(dst, seg.key...)
			continue
		}
		dst = append(dst, '[')
		dst = appendJSONString(dst, string(seg.key))
		dst = append(dst, ']')
	}
	return dst
}

// notA reports that the value at the first n segments of p is not the
// container (or type) the operation needs.
func (p JSONPath) notA(n int, v *JSONValue, want string) error {
	return jsonErr("'" + string(p.AppendTo(nil, n)) + "' is " + v.phrase() + ", not " + want)
}

// missing reports that there is no value at the first n segments of p.
func (p JSONPath) missing(n int) error {
	return jsonErr("'" + string(p.AppendTo(nil, n)) + "' does not exist")
}

// outOfRange reports that p's last segment indexes past an array of
// length n.
func (p JSONPath) outOfRange(n int) error {
	return jsonErr("index " + strconv.Itoa(p.segs[len(p.segs)-1].index) + " is out of range for '" + string(p.AppendTo(nil, len(p.segs)-1)) + "', an array of length " + strconv.Itoa(n))
}
