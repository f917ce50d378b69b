package sync

import "github.com/recached/recached/server/keyspace"

// This file gathers what a client's local replica needs from the server's
// implementation, so that a client (sync/client) depends on this package
// alone: the glob matcher of patterns and the json document with its
// effect applier. They are the server's own code, re-exported rather than
// copied, so that a replica matches patterns and applies effects exactly
// as the server does.

// Match reports whether s matches the glob pattern as Redis's KEYS does,
// which is how SYNC, QSUB and scope tokens match keys: '*' any run, '?' one
// byte, '[abc]', '[^a]', '[a-z]' classes and '\' escapes.
func Match(pattern, s string) bool { return keyspace.Match(pattern, s) }

// JSON is one json key's document, the server's own type: member order and
// number literals are kept as the server keeps them (sync/TYPES.md).
type JSON = keyspace.JSON

// ApplyJSONEffect applies a json mutation push to a replica's document:
// cmd is "JSET" (args: path, value), "JMERGE" (args: path, patch) or
// "JDEL" (args: path). doc is the key's current document, nil when it has
// none, and is changed in place; the result is the document afterwards,
// nil when the effect deleted the key. An effect that does not fit doc is
// an error.
func ApplyJSONEffect(doc *JSON, cmd string, args [][]byte) (*JSON, error) {
	return keyspace.ApplyJSONEffect(doc, cmd, args)
}

// CopyJSON returns an independent deep copy of doc.
func CopyJSON(doc *JSON) *JSON { return doc.Copy().(*JSON) }

// JSONAt returns the compact JSON text of the value at path in doc, as
// JGET key path replies it; found is false when no value is there. err is
// the server's error for a malformed path or one that goes through a value
// that is not the container it needs.
func JSONAt(doc *JSON, path string) (text []byte, found bool, err error) {
	p, err := keyspace.ParseJSONPath([]byte(path))
	if err != nil {
		return nil, false, err
	}
	v, err := doc.Get(p)
	if err != nil || v == nil {
		return nil, false, err
	}
	return v.AppendText(nil), true, nil
}
