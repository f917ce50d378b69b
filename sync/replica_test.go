package sync

import "testing"

func TestReplicaMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"user:*", "user:42", true},
		{"user:?", "user:42", false},
		{"room:[0-9]", "room:7", true},
		{`a\*`, "a*", true},
		{`a\*`, "ab", false},
	}
	for _, tt := range tests {
		if got := Match(tt.pattern, tt.s); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

// TestReplicaJSON applies a sequence of json effects to a replica document
// and reads it back with JSONAt; a copy is independent.
func TestReplicaJSON(t *testing.T) {
	var doc *JSON
	steps := []struct {
		cmd  string
		args []string
		want string // the document afterwards; "" when deleted
		err  bool
	}{
		{"JSET", []string{"$.a", "1"}, "", true},
		{"JSET", []string{"$", `{"a": 1.50, "b": [1]}`}, `{"a":1.50,"b":[1]}`, false},
		{"JMERGE", []string{"$", `{"a": null, "c": {"d": true}}`}, `{"b":[1],"c":{"d":true}}`, false},
		{"JSET", []string{"$.b[0]", `"x"`}, `{"b":["x"],"c":{"d":true}}`, false},
		{"JSET", []string{"$.b[5]", "1"}, `{"b":["x"],"c":{"d":true}}`, true},
		{"JDEL", []string{"$.c.d"}, `{"b":["x"],"c":{}}`, false},
		{"JNUMINCRBY", []string{"$.b", "1"}, `{"b":["x"],"c":{}}`, true},
		{"JDEL", []string{"$"}, "", false},
	}
	for i, s := range steps {
		args := make([][]byte, len(s.args))
		for j, a := range s.args {
			args[j] = []byte(a)
		}
		next, err := ApplyJSONEffect(doc, s.cmd, args)
		if (err != nil) != s.err {
			t.Fatalf("step %d %s %q: error %v", i, s.cmd, s.args, err)
		}
		if err == nil {
			doc = next
		}
		got := ""
		if doc != nil {
			text, found, err := JSONAt(doc, "$")
			if !found || err != nil {
				t.Fatalf("step %d: JSONAt($) %v %v", i, found, err)
			}
			got = string(text)
		}
		if got != s.want {
			t.Errorf("step %d %s %q: %q, want %q", i, s.cmd, s.args, got, s.want)
		}
	}
	doc, _ = ApplyJSONEffect(nil, "JSET", [][]byte{[]byte("$"), []byte(`{"a":[1,2]}`)})
	c := CopyJSON(doc)
	if _, err := ApplyJSONEffect(c, "JSET", [][]byte{[]byte("$.a[0]"), []byte("9")}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		doc  *JSON
		path string
		want string
	}{{doc, "$.a[0]", "1"}, {c, "$.a[0]", "9"}, {c, "$['a'][-1]", "2"}} {
		if text, found, err := JSONAt(r.doc, r.path); string(text) != r.want || !found || err != nil {
			t.Errorf("JSONAt(%s) = %q %v %v, want %q", r.path, text, found, err, r.want)
		}
	}
	if _, found, err := JSONAt(doc, "$.z"); found || err != nil {
		t.Errorf("JSONAt of a missing member: %v %v", found, err)
	}
	if _, _, err := JSONAt(doc, "$..a"); err == nil {
		t.Error("JSONAt accepted recursive descent")
	}
}
