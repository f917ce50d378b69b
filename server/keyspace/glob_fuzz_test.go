package keyspace

import "testing"

// matchRef is the reference for Match: the same single-byte elements, with
// '*' tried at every length by recursion, as Redis's stringmatchlen does.
// It is exponential in the number of stars, so the fuzz target bounds the
// inputs it gives it.
func matchRef(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	if pattern[0] == '*' {
		for i := 0; i <= len(s); i++ {
			if matchRef(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	}
	if s == "" {
		return false
	}
	n, ok := matchOne(pattern, s[0])
	return n > 0 && ok && matchRef(pattern[n:], s[1:])
}

// FuzzMatch checks that Match, which backtracks only to the last '*',
// agrees with the full backtracking reference on every input.
func FuzzMatch(f *testing.F) {
	for _, c := range [][2]string{
		{"*", ""}, {"a*b", "acb"}, {"*a*b*", "xxaxxbxx"}, {"h?llo", "hello"},
		{"h[^e]llo", "hallo"}, {"h[a-b]llo", "hbllo"}, {`\*`, "*"}, {"[", "["},
		{"[z-a]", "m"}, {`a\`, "a"}, {"*[*", "x["}, {"a*a*a*a*b", "aaaaaaaaaaaa"},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		if len(pattern) > 24 || len(s) > 24 {
			return
		}
		if got, want := Match(pattern, s), matchRef(pattern, s); got != want {
			t.Fatalf("Match(%q, %q) = %v, reference %v", pattern, s, got, want)
		}
	})
}
