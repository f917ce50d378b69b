package sync

// Scope is what a scope token grants: the keys, and pub/sub channels, that
// match one of its patterns. A Scope is immutable once made and safe for
// concurrent use.
type Scope struct {
	patterns []string
	ix       Index[struct{}]
}

// NewScope returns the scope of patterns. A scope without patterns grants
// nothing.
func NewScope(patterns []string) *Scope {
	s := &Scope{patterns: append([]string(nil), patterns...)}
	for _, p := range s.patterns {
		s.ix.Add(p, struct{}{})
	}
	return s
}

// Patterns returns the scope's patterns; the caller must not modify them.
func (s *Scope) Patterns() []string { return s.patterns }

// Match reports whether name (a key or a channel) is in the scope.
func (s *Scope) Match(name []byte) bool { return s.ix.Matches(name) }
