package server

import (
	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
)

// The json type: one JSON document per key (keyspace.JSON), addressed by
// paths (keyspace.JSONPath: "$", "$.a.b", "$.a[0]", "$[\"odd key\"]",
// legacy ".a.b"). sync/TYPES.md is the reference for clients.
//
// Replies:
//
//	JSET        +OK; a nil bulk string when NX or XX stopped it
//	JGET        the JSON text as a bulk string (nil: no key, no value at the
//	            path); with several paths a JSON object keyed by each path as
//	            given, paths without a value left out
//	JMERGE      +OK
//	JDEL        :1 when something was removed, :0 otherwise
//	JTYPE       a simple string: null, boolean, integer, number, string,
//	            array, object (nil: no key, no value at the path)
//	JNUMINCRBY  the new number as a bulk string of its JSON text
//	JARRAPPEND  the array's new length
//	JSTRLEN, JARRLEN, JOBJKEYS: the string's length in bytes, the array's
//	            length, the object's member names (nil: no key or no value)
//
// Effects: JSET, JMERGE and JDEL as themselves with the path in canonical
// form and the value as given; JNUMINCRBY and JARRAPPEND as the JSET of the
// value they produced; a document removed whole as JDEL key $.

// JSON-only error texts.
const (
	errJSONNewAtRoot = "ERR new documents must be created at the root path '$'"
)

// bRoot is the JSON path of the whole document.
var bRoot = []byte("$")

// maxKeptScratch is the largest formatting buffer a session keeps after a
// command that wrote a document into it.
const maxKeptScratch = 64 << 10

func jsonCommands() []*Command {
	one := keysIn("json", 1, 1)
	k1 := func(c *Command) *Command {
		c.Since = "1.0.0"
		return one(c)
	}
	return []*Command{
		k1(&Command{Name: "jset", Arity: -4, Flags: FlagWrite | FlagDenyOOM, Syntax: "key path value [NX | XX]", Summary: "Sets the JSON value at a path of a document; a new document is created at the root path.", Complexity: "O(M+N) where M is the size of the value and N the length of the path", Categories: "write json slow", Handler: cmdJSet}),
		k1(&Command{Name: "jget", Arity: -2, Flags: FlagReadonly, Syntax: "key [path ...]", Summary: "Returns the JSON text of a document or of the values at paths.", Complexity: "O(N) where N is the size of the values returned", Categories: "read json slow", Handler: cmdJGet}),
		k1(&Command{Name: "jmerge", Arity: 4, Flags: FlagWrite | FlagDenyOOM, Syntax: "key path value", Summary: "Applies an RFC 7386 JSON merge patch at a path of a document.", Complexity: "O(M+N) where M is the size of the patch and N the length of the path", Categories: "write json slow", Handler: cmdJMerge}),
		k1(&Command{Name: "jdel", Arity: -2, Flags: FlagWrite, Syntax: "key [path]", Summary: "Deletes the value at a path of a document, or the whole document.", Complexity: "O(N) where N is the size of the container the value is removed from", Categories: "write json slow", Handler: cmdJDel}),
		k1(&Command{Name: "jtype", Arity: -2, Flags: FlagReadonly | FlagFast, Syntax: "key [path]", Summary: "Returns the type of the JSON value at a path.", Complexity: "O(N) where N is the length of the path", Categories: "read json fast", Handler: cmdJType}),
		k1(&Command{Name: "jnumincrby", Arity: 4, Flags: FlagWrite | FlagDenyOOM | FlagFast, Syntax: "key path increment", Summary: "Adds a number to the JSON number at a path.", Complexity: "O(N) where N is the length of the path", Categories: "write json fast", Handler: cmdJNumIncrBy}),
		k1(&Command{Name: "jarrappend", Arity: -4, Flags: FlagWrite | FlagDenyOOM, Syntax: "key path value [value ...]", Summary: "Appends JSON values to the array at a path.", Complexity: "O(M+N) where M is the size of the values and N the length of the path", Categories: "write json slow", Handler: cmdJArrAppend}),
		k1(&Command{Name: "jstrlen", Arity: -2, Flags: FlagReadonly | FlagFast, Syntax: "key [path]", Summary: "Returns the length in bytes of the JSON string at a path.", Complexity: "O(N) where N is the length of the path", Categories: "read json fast", Handler: jsonLenCmd(keyspace.JSONString)}),
		k1(&Command{Name: "jarrlen", Arity: -2, Flags: FlagReadonly | FlagFast, Syntax: "key [path]", Summary: "Returns the length of the JSON array at a path.", Complexity: "O(N) where N is the length of the path", Categories: "read json fast", Handler: jsonLenCmd(keyspace.JSONArray)}),
		k1(&Command{Name: "jobjkeys", Arity: -2, Flags: FlagReadonly, Syntax: "key [path]", Summary: "Returns the member names of the JSON object at a path.", Complexity: "O(N) where N is the number of members", Categories: "read json slow", Handler: cmdJObjKeys}),
	}
}

// lookupJSON returns key's document, nil when the key is absent; wrong
// reports (and replies to) a value of another type.
func (s *Session) lookupJSON(key []byte) (doc *keyspace.JSON, wrong bool) {
	e, wrong := s.lookupType(key, keyspace.TypeJSON)
	if e == nil {
		return nil, wrong
	}
	return e.Obj.(*keyspace.JSON), false
}

// jsonErr replies with a keyspace JSON error.
func (s *Session) jsonErr(err error) { s.W.Error("ERR " + err.Error()) }

// jsonPathArg parses s.Args[i] as a path; on error it replies and reports
// false. An absent argument is the root.
func (s *Session) jsonPathArg(i int) (keyspace.JSONPath, bool) {
	if i >= len(s.Args) {
		return keyspace.RootPath, true
	}
	p, err := keyspace.ParseJSONPath(s.Args[i])
	if err != nil {
		s.jsonErr(err)
		return p, false
	}
	return p, true
}

// jsonValueArg parses s.Args[i] as a JSON value; on error it replies and
// reports false.
func (s *Session) jsonValueArg(i int) (keyspace.JSONValue, bool) {
	v, err := keyspace.ParseJSONValue(s.Args[i])
	if err != nil {
		s.jsonErr(err)
		return v, false
	}
	return v, true
}

// pathBytes writes p in canonical form into the session's scratch space,
// for an effect.
func (s *Session) pathBytes(p keyspace.JSONPath) []byte {
	if p.IsRoot() {
		return bRoot
	}
	start := len(s.scratch)
	s.scratch = p.AppendTo(s.scratch, p.Len())
	return s.scratch[start:len(s.scratch):len(s.scratch)]
}

// valueBytes writes v's JSON text into the session's scratch space.
func (s *Session) valueBytes(v *keyspace.JSONValue) []byte {
	start := len(s.scratch)
	s.scratch = v.AppendText(s.scratch)
	return s.scratch[start:len(s.scratch):len(s.scratch)]
}

// trimScratch lets go of a scratch buffer a large document grew.
func (s *Session) trimScratch() {
	if cap(s.scratch) > maxKeptScratch {
		s.scratch = nil
	}
}

// jsonReadTarget starts a command that reads key [path]: it checks the
// argument count, parses the path and looks the document up. When there
// is nothing to read it has replied (a syntax or path error, WRONGTYPE,
// nil for a missing key) and ok is false.
func (s *Session) jsonReadTarget() (doc *keyspace.JSON, p keyspace.JSONPath, ok bool) {
	if len(s.Args) > 3 {
		s.W.Error(errSyntax)
		return nil, p, false
	}
	if p, ok = s.jsonPathArg(2); !ok {
		return nil, p, false
	}
	doc, wrong := s.lookupJSON(s.Args[1])
	if wrong {
		return nil, p, false
	}
	if doc == nil {
		s.W.Null()
		return nil, p, false
	}
	return doc, p, true
}

// jsonReadValue is jsonReadTarget that goes on to the value at the path;
// nil, after replying, when there is none.
func (s *Session) jsonReadValue() *keyspace.JSONValue {
	doc, p, ok := s.jsonReadTarget()
	if !ok {
		return nil
	}
	v, err := doc.Get(p)
	if err != nil {
		s.jsonErr(err)
		return nil
	}
	if v == nil {
		s.W.Null()
	}
	return v
}

// jsonWriteArgs starts JSET and JMERGE key path value: it parses the path
// and the value and looks the document up; a missing document (nil) may
// only be created at the root. When ok is false it has replied.
func (s *Session) jsonWriteArgs() (doc *keyspace.JSON, p keyspace.JSONPath, v keyspace.JSONValue, ok bool) {
	if p, ok = s.jsonPathArg(2); !ok {
		return nil, p, v, false
	}
	if v, ok = s.jsonValueArg(3); !ok {
		return nil, p, v, false
	}
	doc, wrong := s.lookupJSON(s.Args[1])
	if wrong {
		return nil, p, v, false
	}
	if doc == nil && !p.IsRoot() {
		s.W.Error(errJSONNewAtRoot)
		return nil, p, v, false
	}
	return doc, p, v, true
}

// jsonDocToChange returns key's document for a command that changes a
// value inside it; nil, after replying, when the key holds another type or
// none.
func (s *Session) jsonDocToChange(key []byte) *keyspace.JSON {
	doc, wrong := s.lookupJSON(key)
	if wrong {
		return nil
	}
	if doc == nil {
		s.W.Error(errNoSuchKey)
	}
	return doc
}

// jsonBulk replies with v's JSON text as a bulk string, written in place.
func (s *Session) jsonBulk(v *keyspace.JSONValue) {
	n := v.TextLen()
	b := resp.AppendHeader(s.W.B, '$', n)
	b = v.AppendText(b)
	s.W.B = append(b, '\r', '\n')
}

// cmdJSet is JSET key path value [NX|XX].
func cmdJSet(s *Session) {
	cond := keyspace.JSONAlways
	switch {
	case len(s.Args) > 5:
		s.W.Error(errSyntax)
		return
	case len(s.Args) == 5 && resp.EqualFold(s.Args[4], "nx"):
		cond = keyspace.JSONIfAbsent
	case len(s.Args) == 5 && resp.EqualFold(s.Args[4], "xx"):
		cond = keyspace.JSONIfExists
	case len(s.Args) == 5:
		s.W.Error(errSyntax)
		return
	}
	key := s.Args[1]
	doc, p, v, ok := s.jsonWriteArgs()
	if !ok {
		return
	}
	if doc == nil {
		if cond == keyspace.JSONIfExists {
			s.W.Null()
			return
		}
		doc = keyspace.NewJSON(keyspace.JSONValue{})
		if _, err := doc.Set(p, v, keyspace.JSONAlways); err != nil {
			s.jsonErr(err)
			return
		}
		s.db.SetObject(key, doc)
	} else {
		done, err := doc.Set(p, v, cond)
		if err != nil {
			s.jsonErr(err)
			return
		}
		if !done {
			s.W.Null()
			return
		}
	}
	s.emit(bJSET, key, s.pathBytes(p), s.Args[3])
	s.W.OK()
}

// cmdJGet is JGET key [path ...].
func cmdJGet(s *Session) {
	if len(s.Args) <= 3 {
		if v := s.jsonReadValue(); v != nil {
			s.jsonBulk(v)
		}
		return
	}
	paths := make([]keyspace.JSONPath, len(s.Args)-2)
	for i := range paths {
		p, ok := s.jsonPathArg(i + 2)
		if !ok {
			return
		}
		paths[i] = p
	}
	doc, wrong := s.lookupJSON(s.Args[1])
	if wrong {
		return
	}
	if doc == nil {
		s.W.Null()
		return
	}
	// {"path as given": value, …}: each distinct path once, paths without
	// a value left out.
	start := len(s.scratch)
	out := append(s.scratch, '{')
	seen := make(map[string]bool, len(paths))
	for i, p := range paths {
		raw := s.Args[i+2]
		if seen[string(raw)] {
			continue
		}
		seen[string(raw)] = true
		v, err := doc.Get(p)
		if err != nil {
			s.jsonErr(err)
			return
		}
		if v == nil {
			continue
		}
		if len(out) > start+1 {
			out = append(out, ',')
		}
		out = keyspace.AppendJSONString(out, string(raw))
		out = append(out, ':')
		out = v.AppendText(out)
	}
	s.scratch = append(out, '}')
	s.W.Bulk(s.scratch[start:])
	s.trimScratch()
}

// cmdJMerge is JMERGE key path patch (RFC 7386).
func cmdJMerge(s *Session) {
	key := s.Args[1]
	doc, p, patch, ok := s.jsonWriteArgs()
	if !ok {
		return
	}
	switch {
	case doc == nil && patch.Kind() == keyspace.JSONNull:
		// Removing a document that does not exist changes nothing.
		s.W.OK()
		return
	case doc == nil:
		doc = keyspace.NewJSON(keyspace.JSONValue{})
		if _, err := doc.Merge(p, patch); err != nil {
			s.jsonErr(err)
			return
		}
		s.db.SetObject(key, doc)
	default:
		remove, err := doc.Merge(p, patch)
		if err != nil {
			s.jsonErr(err)
			return
		}
		if remove {
			s.db.Delete(key)
		}
	}
	s.emit(bJMERGE, key, s.pathBytes(p), s.Args[3])
	s.W.OK()
}

// cmdJDel is JDEL key [path]: the value at the path, or the whole document.
func cmdJDel(s *Session) {
	if len(s.Args) > 3 {
		s.W.Error(errSyntax)
		return
	}
	key := s.Args[1]
	p, ok := s.jsonPathArg(2)
	if !ok {
		return
	}
	doc, wrong := s.lookupJSON(key)
	if wrong {
		return
	}
	if doc == nil {
		s.W.Int(0)
		return
	}
	if p.IsRoot() {
		s.db.Delete(key)
	} else {
		removed, err := doc.Delete(p)
		if err != nil {
			s.jsonErr(err)
			return
		}
		if !removed {
			s.W.Int(0)
			return
		}
	}
	s.emit(bJDEL, key, s.pathBytes(p))
	s.W.Int(1)
}

// cmdJType is JTYPE key [path].
func cmdJType(s *Session) {
	if v := s.jsonReadValue(); v != nil {
		s.W.Simple(v.TypeName())
	}
}

// cmdJNumIncrBy is JNUMINCRBY key path increment.
func cmdJNumIncrBy(s *Session) {
	key := s.Args[1]
	p, ok := s.jsonPathArg(2)
	if !ok {
		return
	}
	if !keyspace.IsJSONNumber(s.Args[3]) {
		s.jsonErr(keyspace.ErrJSONIncrement)
		return
	}
	doc := s.jsonDocToChange(key)
	if doc == nil {
		return
	}
	v, err := doc.NumIncrBy(p, s.Args[3])
	if err != nil {
		s.jsonErr(err)
		return
	}
	num := s.valueBytes(v)
	s.emit(bJSET, key, s.pathBytes(p), num)
	s.W.Bulk(num)
}

// cmdJArrAppend is JARRAPPEND key path value [value ...].
func cmdJArrAppend(s *Session) {
	key := s.Args[1]
	p, ok := s.jsonPathArg(2)
	if !ok {
		return
	}
	vals := make([]keyspace.JSONValue, len(s.Args)-3)
	for i := range vals {
		if vals[i], ok = s.jsonValueArg(i + 3); !ok {
			return
		}
	}
	doc := s.jsonDocToChange(key)
	if doc == nil {
		return
	}
	arr, err := doc.ArrAppend(p, vals)
	if err != nil {
		s.jsonErr(err)
		return
	}
	s.emit(bJSET, key, s.pathBytes(p), s.valueBytes(arr))
	s.W.Int(int64(arr.Len()))
	s.trimScratch()
}

// jsonLenCmd builds JSTRLEN (kind JSONString) and JARRLEN (JSONArray).
func jsonLenCmd(kind keyspace.JSONKind) Handler {
	return func(s *Session) {
		doc, p, ok := s.jsonReadTarget()
		if !ok {
			return
		}
		var n int
		var found bool
		var err error
		if kind == keyspace.JSONString {
			n, found, err = doc.StrLen(p)
		} else {
			n, found, err = doc.ArrLen(p)
		}
		switch {
		case err != nil:
			s.jsonErr(err)
		case !found:
			s.W.Null()
		default:
			s.W.Int(int64(n))
		}
	}
}

// cmdJObjKeys is JOBJKEYS key [path].
func cmdJObjKeys(s *Session) {
	doc, p, ok := s.jsonReadTarget()
	if !ok {
		return
	}
	names, found, err := doc.ObjKeys(p)
	switch {
	case err != nil:
		s.jsonErr(err)
	case !found:
		s.W.Null()
	default:
		s.W.Array(len(names))
		for _, n := range names {
			s.W.BulkString(n)
		}
	}
}
