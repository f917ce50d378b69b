// Package sync is the sync protocol's routing core: a glob-pattern index,
// scope tokens and scopes, and the router that maps a written key to the
// connections that must hear of it (SYNC scopes, live queries, watched keys),
// and the pure functions a client's local replica needs from the server
// (Match, ApplyJSONEffect; see replica.go), so that clients import this
// package and nothing under server/.
//
// It knows nothing of sessions or transports: a connection is a Sub holding
// a Pusher. The server's effect hook asks the Router who is interested in a
// key and pushes the frames it encodes. See PROTOCOL.md for the wire format.
package sync

import (
	"bytes"
	"unsafe"

	"github.com/recached/recached/server/keyspace"
)

// Index maps glob patterns (Redis KEYS syntax) to values and finds every
// pattern that matches a key without trying each pattern in turn.
//
// Patterns without metacharacters live in a map (the exact-key fast path).
// Every other pattern is filed in a trie under its literal prefix, the bytes
// before its first metacharacter; a lookup walks the key down the trie and
// only tries the patterns filed on that path. A key therefore costs
// O(len(key)) trie steps plus one glob match per distinct pattern whose
// prefix it starts with, however many patterns are indexed.
//
// An Index is not safe for concurrent use; the Router guards its indexes.
type Index[V comparable] struct {
	exact map[string]*Entry[V]
	root  node[V]
	n     int // (pattern, value) pairs
}

// Entry is one distinct pattern and the values registered under it.
type Entry[V comparable] struct {
	Pattern string
	Values  []V
	rest    string // Pattern after its literal prefix
	star    bool   // rest is "*": every key reaching this node matches
}

type node[V comparable] struct {
	labels []byte // labels[i] is the byte leading to kids[i]
	kids   []*node[V]
	globs  []*Entry[V]
}

// literalPrefix returns the length of pattern's prefix that holds no glob
// metacharacter.
func literalPrefix(pattern string) int {
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '*', '?', '[', '\\':
			return i
		}
	}
	return len(pattern)
}

// Len returns the number of (pattern, value) pairs in the index.
func (ix *Index[V]) Len() int { return ix.n }

// Add registers v under pattern. It reports false, changing nothing, when
// the pair is already present.
func (ix *Index[V]) Add(pattern string, v V) bool {
	e := ix.entry(pattern, true)
	for _, x := range e.Values {
		if x == v {
			return false
		}
	}
	e.Values = append(e.Values, v)
	ix.n++
	return true
}

// Remove unregisters v from pattern and reports whether it was present.
// Nodes and entries left empty are freed.
func (ix *Index[V]) Remove(pattern string, v V) bool {
	p := literalPrefix(pattern)
	if p == len(pattern) {
		e := ix.exact[pattern]
		if e == nil || !removeValue(e, v) {
			return false
		}
		if len(e.Values) == 0 {
			delete(ix.exact, pattern)
		}
		ix.n--
		return true
	}
	// Walk down, remembering the path so that empty nodes can be pruned.
	var path [64]*node[V]
	trail := path[:0]
	n := &ix.root
	for i := 0; i < p; i++ {
		trail = append(trail, n)
		n = n.child(pattern[i])
		if n == nil {
			return false
		}
	}
	for j, e := range n.globs {
		if e.Pattern != pattern {
			continue
		}
		if !removeValue(e, v) {
			return false
		}
		if len(e.Values) == 0 {
			n.globs = append(n.globs[:j], n.globs[j+1:]...)
		}
		ix.n--
		ix.prune(pattern[:p], trail, n)
		return true
	}
	return false
}

// prune unlinks the empty nodes at the end of the path to n; trail holds
// the node above each byte of prefix.
func (ix *Index[V]) prune(prefix string, trail []*node[V], n *node[V]) {
	if len(trail) != len(prefix) {
		return
	}
	for i := len(prefix) - 1; i >= 0; i-- {
		if len(n.globs) > 0 || len(n.kids) > 0 {
			return
		}
		parent := trail[i]
		parent.unlink(prefix[i])
		n = parent
	}
}

func removeValue[V comparable](e *Entry[V], v V) bool {
	for i, x := range e.Values {
		if x == v {
			last := len(e.Values) - 1
			e.Values[i] = e.Values[last]
			var zero V
			e.Values[last] = zero
			e.Values = e.Values[:last]
			return true
		}
	}
	return false
}

// entry finds pattern's entry, creating it (and its trie path) when create
// is set; it returns nil when absent and create is not set.
func (ix *Index[V]) entry(pattern string, create bool) *Entry[V] {
	p := literalPrefix(pattern)
	if p == len(pattern) {
		e := ix.exact[pattern]
		if e == nil && create {
			if ix.exact == nil {
				ix.exact = make(map[string]*Entry[V])
			}
			e = &Entry[V]{Pattern: pattern}
			ix.exact[pattern] = e
		}
		return e
	}
	n := &ix.root
	for i := 0; i < p; i++ {
		c := n.child(pattern[i])
		if c == nil {
			if !create {
				return nil
			}
			c = &node[V]{}
			n.labels = append(n.labels, pattern[i])
			n.kids = append(n.kids, c)
		}
		n = c
	}
	for _, e := range n.globs {
		if e.Pattern == pattern {
			return e
		}
	}
	if !create {
		return nil
	}
	e := &Entry[V]{Pattern: pattern, rest: pattern[p:], star: pattern[p:] == "*"}
	n.globs = append(n.globs, e)
	return e
}

func (n *node[V]) child(b byte) *node[V] {
	if i := bytes.IndexByte(n.labels, b); i >= 0 {
		return n.kids[i]
	}
	return nil
}

func (n *node[V]) unlink(b byte) {
	if i := bytes.IndexByte(n.labels, b); i >= 0 {
		n.labels = append(n.labels[:i], n.labels[i+1:]...)
		n.kids = append(n.kids[:i], n.kids[i+1:]...)
	}
}

// Lookup returns the entry of exactly pattern, or nil.
func (ix *Index[V]) Lookup(pattern string) *Entry[V] { return ix.entry(pattern, false) }

// Match calls fn with every entry whose pattern matches key, until fn
// returns false. Each distinct pattern is reported once, with all of its
// values. Entries are only valid during the call.
func (ix *Index[V]) Match(key []byte, fn func(e *Entry[V]) bool) {
	// The key is only read during the call, so viewing it as a string
	// without a copy is safe and keeps lookups free of allocations.
	k := unsafe.String(unsafe.SliceData(key), len(key))
	if e := ix.exact[k]; e != nil {
		if !fn(e) {
			return
		}
	}
	n := &ix.root
	for i := 0; ; i++ {
		for _, e := range n.globs {
			if e.star || keyspace.Match(e.rest, k[i:]) {
				if !fn(e) {
					return
				}
			}
		}
		if i == len(k) {
			return
		}
		if n = n.child(k[i]); n == nil {
			return
		}
	}
}

// Matches reports whether any pattern of the index matches key.
func (ix *Index[V]) Matches(key []byte) bool {
	found := false
	ix.Match(key, func(*Entry[V]) bool { found = true; return false })
	return found
}
