package keyspace

import (
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "anything", true},
		{"h?llo", "hello", true},
		{"h?llo", "hllo", false},
		{"h*llo", "heeeello", true},
		{"h*llo", "hllo", true},
		{"h[ae]llo", "hallo", true},
		{"h[ae]llo", "hillo", false},
		{"h[^e]llo", "hallo", true},
		{"h[^e]llo", "hello", false},
		{"h[a-b]llo", "hbllo", true},
		{"h[a-b]llo", "hcllo", false},
		{"h[b-a]llo", "hallo", true},
		{"h\\*llo", "h*llo", true},
		{"h\\*llo", "hello", false},
		{"user:*:name", "user:42:name", true},
		{"user:*:name", "user:42:age", false},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbY", false},
		{"*.txt", "x.txt", true},
		{"[\\]]", "]", true},
		{"[a-", "a", true},
		{"abc", "abcd", false},
		{"abc*", "abc", true},
		{"", "", true},
		{"", "a", false},
	}
	for _, tt := range tests {
		if got := Match(tt.pattern, tt.s); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

// TestMatchNoBlowup checks that pathological patterns stay cheap.
func TestMatchNoBlowup(t *testing.T) {
	p := strings.Repeat("*a", 30) + "b"
	s := strings.Repeat("a", 5000)
	if Match(p, s) {
		t.Fatal("unexpected match")
	}
}

func BenchmarkMatchPrefix(b *testing.B) {
	for i := 0; i < b.N; i++ {
		Match("user:*:profile", "user:1234567:profile")
	}
}
