package keyspace

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func mustParse(t testing.TB, text string) JSONValue {
	t.Helper()
	v, err := ParseJSONValue([]byte(text))
	if err != nil {
		t.Fatalf("parse %s: %v", text, err)
	}
	return v
}

func mustPath(t testing.TB, p string) JSONPath {
	t.Helper()
	jp, err := ParseJSONPath([]byte(p))
	if err != nil {
		t.Fatalf("path %s: %v", p, err)
	}
	return jp
}

func mustDoc(t testing.TB, text string) *JSON {
	t.Helper()
	return NewJSON(mustParse(t, text))
}

// TestJSONParseRoundTrip parses valid texts and checks the compact text
// written back, its announced length, and that encoding/json agrees the
// output is valid.
func TestJSONParseRoundTrip(t *testing.T) {
	cases := []struct{ in, out string }{
		{`null`, `null`},
		{` true `, `true`},
		{"\tfalse\r\n", `false`},
		{`0`, `0`},
		{`-0`, `-0`},
		{`9223372036854775807`, `9223372036854775807`},
		{`-9223372036854775808`, `-9223372036854775808`},
		{`123456789012345678901234567890`, `123456789012345678901234567890`},
		{`1.50`, `1.50`},
		{`1E+400`, `1E+400`},
		{`-0.000001e-7`, `-0.000001e-7`},
		{`""`, `""`},
		{`"a\"b\\c\/d"`, `"a\"b\\c/d"`},
		{`"\b\f\n\r\t\u0001\u001f"`, `"\b\f\n\r\t\u0001\u001f"`},
		{`"\u00e9\u20AC\ud83d\ude00"`, `"é€😀"`},
		{`"é€😀"`, `"é€😀"`},
		{`[]`, `[]`},
		{`[ 1 , [ 2 , [ ] ] , { } ]`, `[1,[2,[]],{}]`},
		{`{"b":1,"a":2}`, `{"b":1,"a":2}`},
		{`{"a":1,"b":2,"a":3}`, `{"a":3,"b":2}`},
		{`{"":{"":""}}`, `{"":{"":""}}`},
		{`{"k\u0000":"<>&"}`, `{"k\u0000":"<>&"}`},
	}
	for _, c := range cases {
		v, err := ParseJSONValue([]byte(c.in))
		if err != nil {
			t.Errorf("parse %q: %v", c.in, err)
			continue
		}
		got := string(v.AppendText(nil))
		if got != c.out {
			t.Errorf("parse %q: wrote %s, want %s", c.in, got, c.out)
		}
		if v.TextLen() != len(got) {
			t.Errorf("%q: TextLen %d, text has %d bytes", c.in, v.TextLen(), len(got))
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("%q: output %s is not valid JSON", c.in, got)
		}
	}
}

func TestJSONParseErrors(t *testing.T) {
	cases := []struct{ in, err string }{
		{``, `invalid JSON: unexpected end of input`},
		{`   `, `invalid JSON: unexpected end of input`},
		{`nul`, `invalid JSON: unexpected end of input`},
		{`nulx`, `invalid JSON: unexpected 'x' at offset 3`},
		{`True`, `invalid JSON: unexpected 'T' at offset 0`},
		{`1 2`, `invalid JSON: unexpected '2' after the value at offset 2`},
		{`{"a":1}}`, `invalid JSON: unexpected '}' after the value at offset 7`},
		{`01`, `invalid JSON: unexpected '1' after the value at offset 1`},
		{`-`, `invalid JSON: unexpected end of input`},
		{`-a`, `invalid JSON: unexpected 'a' in a number at offset 1`},
		{`1.`, `invalid JSON: unexpected end of input`},
		{`1.e5`, `invalid JSON: unexpected 'e' in a number at offset 2`},
		{`1e`, `invalid JSON: unexpected end of input`},
		{`+1`, `invalid JSON: unexpected '+' at offset 0`},
		{`.5`, `invalid JSON: unexpected '.' at offset 0`},
		{`NaN`, `invalid JSON: unexpected 'N' at offset 0`},
		{`[1,]`, `invalid JSON: unexpected ']' at offset 3`},
		{`[1 2]`, `invalid JSON: unexpected '2' in an array at offset 3`},
		{`{"a" 1}`, `invalid JSON: unexpected '1' where ':' should be at offset 5`},
		{`{a:1}`, `invalid JSON: unexpected 'a' where a member name should be at offset 1`},
		{`{"a":1,}`, `invalid JSON: unexpected '}' where a member name should be at offset 7`},
		{`{"a":1 "b":2}`, `invalid JSON: unexpected '"' in an object at offset 7`},
		{`'a'`, `invalid JSON: unexpected ''' at offset 0`},
		{`"abc`, `invalid JSON: unexpected end of input`},
		{"\"a\nb\"", `invalid JSON: control character byte 0x0a in a string at offset 2`},
		{"\"a\xffb\"", `invalid JSON: invalid UTF-8 in a string at offset 2`},
		{`"\x"`, `invalid JSON: invalid escape '\x' at offset 1`},
		{`"\'"`, `invalid JSON: invalid escape '\'' at offset 1`},
		{`"\u12"`, `invalid JSON: invalid \u escape at offset 1`},
		{`"\ud800"`, `invalid JSON: lone surrogate in a \u escape at offset 1`},
		{`"\udc00\ud800"`, `invalid JSON: lone surrogate in a \u escape at offset 1`},
		{`"\ud800\u0041"`, `invalid JSON: lone surrogate in a \u escape at offset 1`},
		{"\x00", `invalid JSON: unexpected byte 0x00 at offset 0`},
		{strings.Repeat("[", 129) + strings.Repeat("]", 129), `JSON nesting exceeds 128 levels`},
		{strings.Repeat(`{"a":`, 129) + "1" + strings.Repeat("}", 129), `JSON nesting exceeds 128 levels`},
	}
	for _, c := range cases {
		_, err := ParseJSONValue([]byte(c.in))
		if err == nil {
			t.Errorf("parse %q: no error, want %q", c.in, c.err)
			continue
		}
		if err.Error() != c.err {
			t.Errorf("parse %q: error %q, want %q", c.in, err, c.err)
		}
	}
	// 128 levels are fine.
	if _, err := ParseJSONValue([]byte(strings.Repeat("[", 128) + strings.Repeat("]", 128))); err != nil {
		t.Errorf("128 levels: %v", err)
	}
}

func TestJSONPathParse(t *testing.T) {
	cases := []struct{ in, canon string }{
		{`$`, `$`},
		{`.`, `$`},
		{`$.a`, `$.a`},
		{`.a.b`, `$.a.b`},
		{`.a[0]`, `$.a[0]`},
		{`$.a.b.c`, `$.a.b.c`},
		{`$[0]`, `$[0]`},
		{`$[-1]`, `$[-1]`},
		{`$.a[12][3]`, `$.a[12][3]`},
		{`$["a"]`, `$.a`},
		{`$['a']`, `$.a`},
		{`$["odd key"]`, `$["odd key"]`},
		{`$['it\'s']`, `$["it's"]`},
		{`$["say \"hi\""]`, `$["say \"hi\""]`},
		{`$["a.b"]["c[d]"]`, `$["a.b"]["c[d]"]`},
		{`$[""]`, `$[""]`},
		{`$["\u00e9t\u00e9"]`, `$.été`},
		{`$.été`, `$.été`},
		{`$.snake_case-and-dash`, `$.snake_case-and-dash`},
		{`$.@type`, `$["@type"]`},
		{`$.$ref`, `$["$ref"]`},
		{`$.0`, `$.0`},
		{`$["tab\there"]`, `$["tab\there"]`},
	}
	for _, c := range cases {
		p, err := ParseJSONPath([]byte(c.in))
		if err != nil {
			t.Errorf("path %q: %v", c.in, err)
			continue
		}
		if got := p.String(); got != c.canon {
			t.Errorf("path %q: canonical %q, want %q", c.in, got, c.canon)
		}
		// The canonical form parses to itself.
		q, err := ParseJSONPath([]byte(p.String()))
		if err != nil || q.String() != c.canon {
			t.Errorf("path %q: canonical %q does not read back (%v)", c.in, c.canon, err)
		}
	}
}

func TestJSONPathErrors(t *testing.T) {
	cases := []struct{ in, err string }{
		{``, `invalid JSON path '': it must start with '$'`},
		{`a.b`, `invalid JSON path 'a.b': it must start with '$'`},
		{`$.`, `invalid JSON path '$.': expected a member name after '.' at offset 2`},
		{`$..a`, `invalid JSON path '$..a': wildcards and recursive descent are not supported`},
		{`$.*`, `invalid JSON path '$.*': wildcards and recursive descent are not supported`},
		{`$[*]`, `invalid JSON path '$[*]': wildcards, filters, slices and unions are not supported; expected an index or a quoted name after '['`},
		{`$[?(@.a)]`, `invalid JSON path '$[?(@.a)]': wildcards, filters, slices and unions are not supported; expected an index or a quoted name after '['`},
		{`$[1:2]`, `invalid JSON path '$[1:2]': expected ']' at offset 3`},
		{`$[1,2]`, `invalid JSON path '$[1,2]': expected ']' at offset 3`},
		{`$[`, `invalid JSON path '$[': unterminated '['`},
		{`$[1`, `invalid JSON path '$[1': expected ']' at offset 3`},
		{`$[01]`, `invalid JSON path '$[01]': invalid array index '01'`},
		{`$[-0]`, `invalid JSON path '$[-0]': invalid array index '-0'`},
		{`$[-]`, `invalid JSON path '$[-]': invalid array index '-'`},
		{`$[99999999999]`, `invalid JSON path '$[99999999999]': invalid array index '99999999999'`},
		{`$["a]`, `invalid JSON path '$["a]': invalid quoted name at offset 2`},
		{`$["a"`, `invalid JSON path '$["a"': expected ']' at offset 5`},
		{`$a`, `invalid JSON path '$a': unexpected 'a' at offset 1`},
		{`$.a b`, `invalid JSON path '$.a b': unexpected byte 0x20 at offset 3`},
		{"$.\xff", `invalid JSON path '$.` + "\xff" + `': invalid UTF-8 in a member name`},
		{`$` + strings.Repeat(".a", 129), `invalid JSON path '$` + strings.Repeat(".a", 63) + `.': more than 128 segments`},
	}
	for _, c := range cases {
		_, err := ParseJSONPath([]byte(c.in))
		if err == nil {
			t.Errorf("path %q: no error, want %q", c.in, c.err)
			continue
		}
		if err.Error() != c.err {
			t.Errorf("path %q: error %q, want %q", c.in, err, c.err)
		}
	}
}

const sampleDoc = `{"name":"Ada","age":36,"pi":3.14,"ok":true,"nil":null,"tags":["x","y","z"],"nested":{"a":{"b":[1,{"c":"d"}]}},"odd key":1}`

func TestJSONGet(t *testing.T) {
	doc := mustDoc(t, sampleDoc)
	cases := []struct{ path, want, typ, err string }{
		{`$`, sampleDoc, "object", ""},
		{`$.name`, `"Ada"`, "string", ""},
		{`$.age`, `36`, "integer", ""},
		{`$.pi`, `3.14`, "number", ""},
		{`$.ok`, `true`, "boolean", ""},
		{`$.nil`, `null`, "null", ""},
		{`$.tags`, `["x","y","z"]`, "array", ""},
		{`$.tags[0]`, `"x"`, "string", ""},
		{`$.tags[-1]`, `"z"`, "string", ""},
		{`$.tags[-3]`, `"x"`, "string", ""},
		{`$.tags[3]`, ``, "", ""},
		{`$.tags[-4]`, ``, "", ""},
		{`$.nested.a.b[1].c`, `"d"`, "string", ""},
		{`.nested.a.b[1]`, `{"c":"d"}`, "object", ""},
		{`$["odd key"]`, `1`, "integer", ""},
		{`$.missing`, ``, "", ""},
		{`$.missing.deeper`, ``, "", ""},
		{`$.name.first`, ``, "", `'$.name' is a string, not an object`},
		{`$.age[0]`, ``, "", `'$.age' is a number, not an array`},
		{`$.tags.x`, ``, "", `'$.tags' is an array, not an object`},
		{`$[0]`, ``, "", `'$' is an object, not an array`},
		{`$.nil.x`, ``, "", `'$.nil' is null, not an object`},
		{`$.ok.x`, ``, "", `'$.ok' is a boolean, not an object`},
		{`$.nested.a.b[0].z`, ``, "", `'$.nested.a.b[0]' is a number, not an object`},
	}
	for _, c := range cases {
		v, err := doc.Get(mustPath(t, c.path))
		switch {
		case c.err != "":
			if err == nil || err.Error() != c.err {
				t.Errorf("get %s: error %v, want %q", c.path, err, c.err)
			}
		case err != nil:
			t.Errorf("get %s: %v", c.path, err)
		case c.want == "":
			if v != nil {
				t.Errorf("get %s: %s, want nothing", c.path, v.AppendText(nil))
			}
		case v == nil:
			t.Errorf("get %s: nothing, want %s", c.path, c.want)
		default:
			if got := string(v.AppendText(nil)); got != c.want || v.TypeName() != c.typ {
				t.Errorf("get %s: %s (%s), want %s (%s)", c.path, got, v.TypeName(), c.want, c.typ)
			}
		}
	}
}

func TestJSONSet(t *testing.T) {
	cases := []struct {
		doc, path, val string
		cond           JSONCond
		done           bool
		want, err      string
	}{
		{`{}`, `$`, `[1]`, JSONAlways, true, `[1]`, ""},
		{`{}`, `$`, `[1]`, JSONIfAbsent, false, `{}`, ""},
		{`{}`, `$`, `[1]`, JSONIfExists, true, `[1]`, ""},
		{`{"a":1}`, `$.b`, `2`, JSONAlways, true, `{"a":1,"b":2}`, ""},
		{`{"a":1}`, `$.a`, `2`, JSONAlways, true, `{"a":2}`, ""},
		{`{"a":1,"b":2}`, `$.a`, `{"x":[]}`, JSONAlways, true, `{"a":{"x":[]},"b":2}`, ""},
		{`{"a":1}`, `$.a`, `2`, JSONIfAbsent, false, `{"a":1}`, ""},
		{`{"a":1}`, `$.b`, `2`, JSONIfAbsent, true, `{"a":1,"b":2}`, ""},
		{`{"a":1}`, `$.b`, `2`, JSONIfExists, false, `{"a":1}`, ""},
		{`{"a":1}`, `$.a`, `2`, JSONIfExists, true, `{"a":2}`, ""},
		{`{"a":[1,2,3]}`, `$.a[1]`, `"x"`, JSONAlways, true, `{"a":[1,"x",3]}`, ""},
		{`{"a":[1,2,3]}`, `$.a[-1]`, `"x"`, JSONAlways, true, `{"a":[1,2,"x"]}`, ""},
		{`{"a":[1,2,3]}`, `$.a[3]`, `"x"`, JSONAlways, false, ``, `index 3 is out of range for '$.a', an array of length 3`},
		{`{"a":[1,2,3]}`, `$.a[-4]`, `"x"`, JSONAlways, false, ``, `index -4 is out of range for '$.a', an array of length 3`},
		{`{"a":[1,2,3]}`, `$.a[3]`, `"x"`, JSONIfExists, false, `{"a":[1,2,3]}`, ""},
		{`{"a":[1,2,3]}`, `$.a[0]`, `"x"`, JSONIfAbsent, false, `{"a":[1,2,3]}`, ""},
		{`{"a":[1,2,3]}`, `$.a[5]`, `"x"`, JSONIfAbsent, false, ``, `index 5 is out of range for '$.a', an array of length 3`},
		{`{"a":1}`, `$.b.c`, `2`, JSONAlways, false, ``, `'$.b' does not exist`},
		{`{"a":1}`, `$.a.c`, `2`, JSONAlways, false, ``, `'$.a' is a number, not an object`},
		{`{"a":{}}`, `$.a[0]`, `2`, JSONAlways, false, ``, `'$.a' is an object, not an array`},
		{`{"a":[]}`, `$.a.b`, `2`, JSONAlways, false, ``, `'$.a' is an array, not an object`},
		{`{"a":1}`, `$["with space"]`, `2`, JSONAlways, true, `{"a":1,"with space":2}`, ""},
		{`{}`, `$.a`, strings.Repeat("[", 127) + strings.Repeat("]", 127), JSONAlways, true, `{"a":` + strings.Repeat("[", 127) + strings.Repeat("]", 127) + `}`, ""},
		{`{}`, `$.a`, strings.Repeat("[", 128) + strings.Repeat("]", 128), JSONAlways, false, ``, `JSON nesting exceeds 128 levels`},
	}
	for _, c := range cases {
		doc := mustDoc(t, c.doc)
		done, err := doc.Set(mustPath(t, c.path), mustParse(t, c.val), c.cond)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("set %s %s in %s: error %v, want %q", c.path, c.val, c.doc, err, c.err)
			}
			continue
		}
		if err != nil || done != c.done {
			t.Errorf("set %s %s in %s: %v, %v; want %v", c.path, c.val, c.doc, done, err, c.done)
			continue
		}
		if got := string(doc.Text()); got != c.want {
			t.Errorf("set %s %s in %s: %s, want %s", c.path, c.val, c.doc, got, c.want)
		}
	}
}

func TestJSONDelete(t *testing.T) {
	cases := []struct {
		doc, path string
		removed   bool
		want, err string
	}{
		{`{"a":1,"b":2,"c":3}`, `$.b`, true, `{"a":1,"c":3}`, ""},
		{`{"a":1,"b":2,"c":3}`, `$.x`, false, `{"a":1,"b":2,"c":3}`, ""},
		{`{"a":[1,2,3]}`, `$.a[0]`, true, `{"a":[2,3]}`, ""},
		{`{"a":[1,2,3]}`, `$.a[-1]`, true, `{"a":[1,2]}`, ""},
		{`{"a":[1,2,3]}`, `$.a[3]`, false, `{"a":[1,2,3]}`, ""},
		{`{"a":{"b":{}}}`, `$.a.b`, true, `{"a":{}}`, ""},
		{`{"a":1}`, `$.x.y`, false, `{"a":1}`, ""},
		{`{"a":1}`, `$.a.y`, false, ``, `'$.a' is a number, not an object`},
		{`{"a":{}}`, `$.a[0]`, false, ``, `'$.a' is an object, not an array`},
	}
	for _, c := range cases {
		doc := mustDoc(t, c.doc)
		removed, err := doc.Delete(mustPath(t, c.path))
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("delete %s in %s: error %v, want %q", c.path, c.doc, err, c.err)
			}
			continue
		}
		if err != nil || removed != c.removed {
			t.Errorf("delete %s in %s: %v, %v; want %v", c.path, c.doc, removed, err, c.removed)
		}
		if got := string(doc.Text()); got != c.want {
			t.Errorf("delete %s in %s: %s, want %s", c.path, c.doc, got, c.want)
		}
	}
}

// TestMergePatchRFC7386 runs the examples of RFC 7386: section 3's and
// every row of appendix A's table.
func TestMergePatchRFC7386(t *testing.T) {
	cases := []struct{ target, patch, result string }{
		// Section 3.
		{`{"title":"Goodbye!","author":{"givenName":"John","familyName":"Doe"},"tags":["example","sample"],"content":"This will be unchanged"}`,
			`{"title":"Hello!","phoneNumber":"+01-123-456-7890","author":{"familyName":null},"tags":["example"]}`,
			`{"title":"Hello!","author":{"givenName":"John"},"tags":["example"],"content":"This will be unchanged","phoneNumber":"+01-123-456-7890"}`},
		// Appendix A.
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`["a","b"]`, `["c","d"]`, `["c","d"]`},
		{`{"a":"b"}`, `["c"]`, `["c"]`},
		{`{"a":"foo"}`, `null`, `null`},
		{`{"a":"foo"}`, `"bar"`, `"bar"`},
		{`{"e":null}`, `{"a":1}`, `{"e":null,"a":1}`},
		{`[1,2]`, `{"a":"b","c":null}`, `{"a":"b"}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
	}
	for _, c := range cases {
		target := mustParse(t, c.target)
		MergePatch(&target, mustParse(t, c.patch))
		if got := string(target.AppendText(nil)); got != c.result {
			t.Errorf("merge %s into %s: %s, want %s", c.patch, c.target, got, c.result)
		}
	}
}

func TestJSONMergeAtPath(t *testing.T) {
	cases := []struct {
		doc, path, patch string
		remove           bool
		want, err        string
	}{
		{`{"a":{"x":1}}`, `$`, `{"a":{"y":2}}`, false, `{"a":{"x":1,"y":2}}`, ""},
		{`{"a":{"x":1}}`, `$`, `null`, true, ``, ""},
		{`{"a":{"x":1}}`, `$.a`, `{"y":2,"x":null}`, false, `{"a":{"y":2}}`, ""},
		{`{"a":{"x":1}}`, `$.a`, `null`, false, `{}`, ""},
		{`{"a":{"x":1}}`, `$.b`, `{"c":{"d":null,"e":1}}`, false, `{"a":{"x":1},"b":{"c":{"e":1}}}`, ""},
		{`{"a":{"x":1}}`, `$.b`, `null`, false, `{"a":{"x":1}}`, ""},
		{`{"a":[{"x":1},2]}`, `$.a[0]`, `{"y":2}`, false, `{"a":[{"x":1,"y":2},2]}`, ""},
		{`{"a":[{"x":1},2]}`, `$.a[-1]`, `null`, false, `{"a":[{"x":1},null]}`, ""},
		{`{"a":[1]}`, `$.a[1]`, `2`, false, ``, `index 1 is out of range for '$.a', an array of length 1`},
		{`{"a":1}`, `$.b.c`, `2`, false, ``, `'$.b' does not exist`},
		{`{"a":1}`, `$.a.c`, `2`, false, ``, `'$.a' is a number, not an object`},
	}
	for _, c := range cases {
		doc := mustDoc(t, c.doc)
		remove, err := doc.Merge(mustPath(t, c.path), mustParse(t, c.patch))
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("merge %s at %s of %s: error %v, want %q", c.patch, c.path, c.doc, err, c.err)
			}
			continue
		}
		if err != nil || remove != c.remove {
			t.Errorf("merge %s at %s of %s: %v, %v; want remove=%v", c.patch, c.path, c.doc, remove, err, c.remove)
			continue
		}
		if !remove {
			if got := string(doc.Text()); got != c.want {
				t.Errorf("merge %s at %s of %s: %s, want %s", c.patch, c.path, c.doc, got, c.want)
			}
		}
	}
}

func TestJSONNumIncrBy(t *testing.T) {
	cases := []struct{ num, by, want, err string }{
		{`1`, `2`, `3`, ""},
		{`-5`, `5`, `0`, ""},
		{`9223372036854775806`, `1`, `9223372036854775807`, ""},
		{`9223372036854775807`, `1`, ``, `increment or decrement would overflow`},
		{`-9223372036854775808`, `-1`, ``, `increment or decrement would overflow`},
		{`9007199254740993`, `0`, `9007199254740993`, ""}, // beyond float64's exact integers
		{`1.5`, `1.5`, `3.0`, ""},
		{`1`, `0.5`, `1.5`, ""},
		{`0.1`, `0.2`, `0.30000000000000004`, ""},
		{`1e2`, `1`, `101.0`, ""},
		{`1e300`, `1e300`, `2e+300`, ""},
		{`1`, `-1e-7`, `0.9999999`, ""},
		{`0`, `1e-7`, `1e-7`, ""},
		{`-0.0`, `0`, `0.0`, ""},
		{`1e308`, `1e308`, ``, `result is not a finite number`},
		{`1`, `abc`, ``, `increment is not a JSON number`},
		{`1`, `1 `, ``, `increment is not a JSON number`},
		{`1`, `+1`, ``, `increment is not a JSON number`},
	}
	for _, c := range cases {
		doc := mustDoc(t, `{"n":`+c.num+`}`)
		v, err := doc.NumIncrBy(mustPath(t, `$.n`), []byte(c.by))
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%s + %s: error %v, want %q", c.num, c.by, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s + %s: %v", c.num, c.by, err)
			continue
		}
		if got := string(v.AppendText(nil)); got != c.want {
			t.Errorf("%s + %s = %s, want %s", c.num, c.by, got, c.want)
		}
		if got := string(doc.Text()); got != `{"n":`+c.want+`}` {
			t.Errorf("%s + %s: document %s", c.num, c.by, got)
		}
	}
	doc := mustDoc(t, `{"s":"x"}`)
	for path, want := range map[string]string{`$.s`: `'$.s' is a string, not a number`, `$.m`: `'$.m' does not exist`} {
		if _, err := doc.NumIncrBy(mustPath(t, path), []byte("1")); err == nil || err.Error() != want {
			t.Errorf("incr %s: %v, want %q", path, err, want)
		}
	}
}

func TestJSONArrAppendAndLengths(t *testing.T) {
	doc := mustDoc(t, `{"a":[1],"s":"héllo","o":{"x":1,"y":2}}`)
	arr, err := doc.ArrAppend(mustPath(t, `$.a`), []JSONValue{mustParse(t, `2`), mustParse(t, `{"b":[3]}`)})
	if err != nil || arr.Len() != 3 || string(arr.AppendText(nil)) != `[1,2,{"b":[3]}]` {
		t.Fatalf("append: %v %v", arr, err)
	}
	if _, err := doc.ArrAppend(mustPath(t, `$.s`), []JSONValue{{}}); err == nil || err.Error() != `'$.s' is a string, not an array` {
		t.Errorf("append to a string: %v", err)
	}
	if _, err := doc.ArrAppend(mustPath(t, `$.z`), []JSONValue{{}}); err == nil || err.Error() != `'$.z' does not exist` {
		t.Errorf("append to nothing: %v", err)
	}
	if n, found, err := doc.StrLen(mustPath(t, `$.s`)); n != 6 || !found || err != nil {
		t.Errorf("strlen: %d %v %v", n, found, err)
	}
	if _, found, err := doc.StrLen(mustPath(t, `$.zz`)); found || err != nil {
		t.Errorf("strlen of nothing: %v %v", found, err)
	}
	if _, _, err := doc.StrLen(mustPath(t, `$.a`)); err == nil || err.Error() != `'$.a' is an array, not a string` {
		t.Errorf("strlen of an array: %v", err)
	}
	if n, found, err := doc.ArrLen(mustPath(t, `$.a`)); n != 3 || !found || err != nil {
		t.Errorf("arrlen: %d %v %v", n, found, err)
	}
	if _, _, err := doc.ArrLen(mustPath(t, `$.o`)); err == nil || err.Error() != `'$.o' is an object, not an array` {
		t.Errorf("arrlen of an object: %v", err)
	}
	names, found, err := doc.ObjKeys(mustPath(t, `$.o`))
	if strings.Join(names, ",") != "x,y" || !found || err != nil {
		t.Errorf("objkeys: %q %v %v", names, found, err)
	}
	if _, _, err := doc.ObjKeys(mustPath(t, `$.s`)); err == nil || err.Error() != `'$.s' is a string, not an object` {
		t.Errorf("objkeys of a string: %v", err)
	}
	// An emptied object still has (no) keys.
	if _, err := doc.Delete(mustPath(t, `$.o.x`)); err != nil {
		t.Fatal(err)
	}
	if _, err := doc.Delete(mustPath(t, `$.o.y`)); err != nil {
		t.Fatal(err)
	}
	names, found, err = doc.ObjKeys(mustPath(t, `$.o`))
	if len(names) != 0 || !found || err != nil {
		t.Errorf("objkeys of {}: %q %v %v", names, found, err)
	}
}

// TestJSONLargeObject exercises the member index: inserts, replacements,
// deletions in the middle and order.
func TestJSONLargeObject(t *testing.T) {
	doc := mustDoc(t, `{}`)
	var want []string
	for i := 0; i < 100; i++ {
		k := "k" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		if _, err := doc.Set(mustPath(t, `$["`+k+`"]`), mustParse(t, "1"), JSONAlways); err != nil {
			t.Fatal(err)
		}
		want = append(want, k)
	}
	for i := 0; i < 100; i += 3 {
		if removed, err := doc.Delete(mustPath(t, `$["`+want[i]+`"]`)); !removed || err != nil {
			t.Fatalf("delete %s: %v %v", want[i], removed, err)
		}
	}
	var left []string
	for i, k := range want {
		if i%3 != 0 {
			left = append(left, k)
		}
	}
	names, _, _ := doc.ObjKeys(RootPath)
	if strings.Join(names, ",") != strings.Join(left, ",") {
		t.Fatalf("order after deletes:\n%q\nwant\n%q", names, left)
	}
	for _, k := range left {
		if v, err := doc.Get(mustPath(t, `$["`+k+`"]`)); v == nil || err != nil {
			t.Fatalf("get %s after deletes: %v", k, err)
		}
	}
	// Re-parsing the text gives the same document.
	again, err := ParseJSON(doc.Text())
	if err != nil || string(again.Text()) != string(doc.Text()) {
		t.Fatalf("reparse: %v", err)
	}
}

func TestJSONCopyIsIndependent(t *testing.T) {
	doc := mustDoc(t, sampleDoc)
	cp := doc.Copy().(*JSON)
	if _, err := cp.Set(mustPath(t, `$.nested.a.b[1].c`), mustParse(t, `"changed"`), JSONAlways); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.ArrAppend(mustPath(t, `$.tags`), []JSONValue{mustParse(t, `"w"`)}); err != nil {
		t.Fatal(err)
	}
	if string(doc.Text()) != sampleDoc {
		t.Errorf("original changed: %s", doc.Text())
	}
	if doc.MemoryUsage() <= int64(len(sampleDoc)) {
		t.Errorf("memory usage %d below the text size", doc.MemoryUsage())
	}
	rc := doc.Recreate([]byte("k"))
	if len(rc) != 1 || string(rc[0][0]) != "JSET" || string(rc[0][2]) != "$" || string(rc[0][3]) != sampleDoc {
		t.Errorf("recreate: %q", rc)
	}
	m, _ := doc.MarshalJSON()
	if string(m) != sampleDoc {
		t.Errorf("MarshalJSON: %s", m)
	}
}

func BenchmarkJSONParse1K(b *testing.B) {
	text := []byte(sample1K())
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := ParseJSONValue(text); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJSONText1K(b *testing.B) {
	doc := mustDoc(b, sample1K())
	buf := make([]byte, 0, 2048)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = doc.AppendText(buf[:0])
	}
	b.SetBytes(int64(len(buf)))
}

// sample1K is a document of about 1 KB with the usual shapes.
func sample1K() string {
	var sb strings.Builder
	sb.WriteString(`{"id":"user:42","name":"Ada Lovelace","email":"ada@example.com","age":36,"score":98.5,"active":true,"tags":["math","poetry","engines","notes"],"address":{"street":"12 St James's Square","city":"London","zip":"SW1Y 4JH","geo":{"lat":51.5074,"lon":-0.1339}},"prefs":{"theme":"dark","lang":"en-GB","notify":{"email":true,"push":false,"sms":null}},"history":[`)
	for i := 0; i < 8; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"at":1700000000` + string(rune('0'+i)) + `,"event":"login","ip":"192.0.2.` + string(rune('1'+i)) + `"}`)
	}
	sb.WriteString(`],"counters":{"visits":1024,"posts":17,"likes":349},"bio":"First programmer; wrote the notes on the Analytical Engine."}`)
	return sb.String()
}

func TestApplyJSONEffect(t *testing.T) {
	b := func(s ...string) [][]byte {
		out := make([][]byte, len(s))
		for i, x := range s {
			out[i] = []byte(x)
		}
		return out
	}
	steps := []struct {
		cmd  string
		args [][]byte
		want string // the document afterwards, "-" for none
		err  string
	}{
		{"JSET", b("$.a", "1"), "-", `new documents must be created at the root path '$'`},
		{"JMERGE", b("$", "null"), "-", ""},
		{"JMERGE", b("$", `{"a":{"b":null,"c":[1]}}`), `{"a":{"c":[1]}}`, ""},
		{"JSET", b("$.a.c[0]", `"x"`), `{"a":{"c":["x"]}}`, ""},
		{"JSET", b("$.a.c[1]", `"x"`), `{"a":{"c":["x"]}}`, `index 1 is out of range for '$.a.c', an array of length 1`},
		{"JDEL", b("$.a.c"), `{"a":{}}`, ""},
		{"JSET", b("$", "[1]", "NX"), `{"a":{}}`, `wrong number of arguments for a JSET effect`},
		{"JGET", b("$", "1"), `{"a":{}}`, `unknown json effect JGET`},
		{"JSET", b("$", "{"), `{"a":{}}`, `invalid JSON: unexpected end of input`},
		{"JMERGE", b("$", "null"), "-", ""},
		{"JSET", b("$", "[]"), `[]`, ""},
		{"JDEL", nil, "-", ""},
		{"JDEL", b("$.x"), "-", ""},
	}
	var doc *JSON
	for _, st := range steps {
		var err error
		doc, err = ApplyJSONEffect(doc, st.cmd, st.args)
		if (err == nil) != (st.err == "") || err != nil && err.Error() != st.err {
			t.Fatalf("%s %q: error %v, want %q", st.cmd, st.args, err, st.err)
		}
		got := "-"
		if doc != nil {
			got = string(doc.Text())
		}
		if got != st.want {
			t.Fatalf("%s %q: document %s, want %s", st.cmd, st.args, got, st.want)
		}
	}
}

func TestAddOverflows(t *testing.T) {
	tests := []struct {
		a, b int64
		want bool
	}{
		{0, 0, false},
		{math.MaxInt64, 0, false},
		{math.MaxInt64, 1, true},
		{math.MaxInt64 - 1, 1, false},
		{math.MinInt64, -1, true},
		{math.MinInt64, 1, false},
		{-1, math.MinInt64, true},
		{0, math.MinInt64, false},
		{math.MaxInt64, math.MinInt64, false},
		{1, math.MaxInt64, true},
	}
	for _, tc := range tests {
		if got := AddOverflows(tc.a, tc.b); got != tc.want {
			t.Errorf("AddOverflows(%d, %d) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
