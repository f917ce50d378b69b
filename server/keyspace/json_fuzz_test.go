package keyspace

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParseJSON checks that the document parser never panics, accepts only
// what encoding/json calls valid, and that the text it writes back parses
// to the same text again.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `0`, `-0.5e10`, `"a\u00e9\ud83d\ude00"`, `{"a":[1,{"b":null}],"c":true}`,
		`[1,2`, `{"a" 1}`, `01`, `1.`, `"\x"`, `[[[[[[[[[[]]]]]]]]]]`, ` {"k" : "v" } `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		doc, err := ParseJSON(text)
		if err != nil {
			return
		}
		if !json.Valid(text) {
			t.Fatalf("ParseJSON accepted invalid JSON %q", text)
		}
		out := doc.Text()
		again, err := ParseJSON(out)
		if err != nil {
			t.Fatalf("written text %q of %q does not parse: %v", out, text, err)
		}
		if !bytes.Equal(again.Text(), out) {
			t.Fatalf("text of %q is not stable: %q then %q", text, out, again.Text())
		}
	})
}

// FuzzParseJSONPath checks that the path parser never panics on any input.
func FuzzParseJSONPath(f *testing.F) {
	for _, s := range []string{"$", ".", "$.a.b", "$[0]", "$['k']", `$["k\"x"]`, "a[-1].b", "$..a", "$[", "$.", "[*]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseJSONPath(b)
	})
}
