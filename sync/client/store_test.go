package client

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/resp"
)

// fixedNow is the store clock of these tests: 1 000 000 000 000 ms.
var fixedNow = func() time.Time { return time.UnixMilli(1_000_000_000_000) }

func splitArgs(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		if f == "''" {
			f = ""
		}
		out = append(out, []byte(f))
	}
	return out
}

// render describes key's local value compactly for comparisons.
func render(st *Store, key string) string {
	v, ok := st.Get(key)
	if !ok {
		return "-"
	}
	var b strings.Builder
	switch v.Type {
	case TypeString:
		b.WriteString("s:" + string(v.Str))
	case TypeHash:
		var fs []string
		for f, x := range v.Hash {
			fs = append(fs, f+"="+string(x))
		}
		slices.Sort(fs)
		b.WriteString("h:" + strings.Join(fs, ","))
	case TypeList:
		var xs []string
		for _, x := range v.List {
			xs = append(xs, string(x))
		}
		b.WriteString("l:" + strings.Join(xs, ","))
	case TypeSet:
		b.WriteString("S:" + strings.Join(slices.Sorted(func(yield func(string) bool) {
			for m := range v.Set {
				if !yield(m) {
					return
				}
			}
		}), ","))
	case TypeZSet:
		var ms []string
		for m, f := range v.ZSet {
			ms = append(ms, m+"="+fmtFloat(f))
		}
		slices.Sort(ms)
		b.WriteString("z:" + strings.Join(ms, ","))
	case TypeOther:
		b.WriteString("o:" + v.Marker)
	case TypeJSON:
		if v.JSON == nil {
			b.WriteString("j?") // only the marker is known
		} else {
			b.WriteString("j:" + string(v.JSON))
		}
	}
	if v.ExpireAt != 0 {
		b.WriteString(" @" + itoa(v.ExpireAt))
	}
	return b.String()
}

func fmtFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func TestStoreApply(t *testing.T) {
	tests := []struct {
		name  string
		setup []string // effects applied first
		apply string
		ok    bool
		want  map[string]string // key -> render; "-" absent
	}{
		{"set", nil, "SET k v", true, map[string]string{"k": "s:v"}},
		{"set empty", nil, "SET k ''", true, map[string]string{"k": "s:"}},
		{"set pxat", nil, "SET k v PXAT 1000000005000", true, map[string]string{"k": "s:v @1000000005000"}},
		{"set pxat past", nil, "SET k v PXAT 5", true, map[string]string{"k": "-"}},
		{"set keepttl", []string{"SET k a PXAT 1000000009000"}, "SET k b KEEPTTL", true, map[string]string{"k": "s:b @1000000009000"}},
		{"set drops ttl", []string{"SET k a PXAT 1000000009000"}, "SET k b", true, map[string]string{"k": "s:b"}},
		{"set replaces type", []string{"HSET k f v"}, "SET k b", true, map[string]string{"k": "s:b"}},
		{"set bad option", nil, "SET k v NX", false, map[string]string{"k": "-"}},
		{"set bad pxat", nil, "SET k v PXAT x", false, map[string]string{"k": "-"}},
		{"del", []string{"SET a 1", "SET b 2"}, "DEL a b c", true, map[string]string{"a": "-", "b": "-"}},
		{"pexpireat", []string{"SET k v"}, "PEXPIREAT k 1000000001000", true, map[string]string{"k": "s:v @1000000001000"}},
		{"pexpireat past", []string{"SET k v"}, "PEXPIREAT k 999999999999", true, map[string]string{"k": "-"}},
		{"pexpireat absent", nil, "PEXPIREAT k 1000000001000", true, map[string]string{"k": "-"}},
		{"persist", []string{"SET k v PXAT 1000000001000"}, "PERSIST k", true, map[string]string{"k": "s:v"}},
		{"setbit", []string{"SET k @"}, "SETBIT k 9 1", true, map[string]string{"k": "s:@@"}},
		{"setbit new", nil, "SETBIT k 1 1", true, map[string]string{"k": "s:@"}},
		{"setbit clear", []string{"SET k A"}, "SETBIT k 7 0", true, map[string]string{"k": "s:@"}},
		{"hset", []string{"HSET k a 1"}, "HSET k b 2 a 3", true, map[string]string{"k": "h:a=3,b=2"}},
		{"hset odd", nil, "HSET k a", false, map[string]string{"k": "-"}},
		{"hdel", []string{"HSET k a 1 b 2"}, "HDEL k a x", true, map[string]string{"k": "h:b=2"}},
		{"hdel last", []string{"HSET k a 1"}, "HDEL k a", true, map[string]string{"k": "-"}},
		{"lpush", []string{"RPUSH k x"}, "LPUSH k a b", true, map[string]string{"k": "l:b,a,x"}},
		{"rpush", nil, "RPUSH k a b", true, map[string]string{"k": "l:a,b"}},
		{"lpushx absent", nil, "LPUSHX k a", true, map[string]string{"k": "-"}},
		{"rpushx", []string{"RPUSH k a"}, "RPUSHX k b", true, map[string]string{"k": "l:a,b"}},
		{"lpop", []string{"RPUSH k a b c"}, "LPOP k", true, map[string]string{"k": "l:b,c"}},
		{"lpop count", []string{"RPUSH k a b c"}, "LPOP k 2", true, map[string]string{"k": "l:c"}},
		{"rpop count all", []string{"RPUSH k a b c"}, "RPOP k 5", true, map[string]string{"k": "-"}},
		{"rpop bad count", []string{"RPUSH k a"}, "RPOP k -1", false, map[string]string{"k": "l:a"}},
		{"lset", []string{"RPUSH k a b c"}, "LSET k -1 z", true, map[string]string{"k": "l:a,b,z"}},
		{"lset out of range", []string{"RPUSH k a"}, "LSET k 3 z", false, map[string]string{"k": "l:a"}},
		{"lrem head", []string{"RPUSH k a x a x a"}, "LREM k 2 a", true, map[string]string{"k": "l:x,x,a"}},
		{"lrem tail", []string{"RPUSH k a x a x a"}, "LREM k -2 a", true, map[string]string{"k": "l:a,x,x"}},
		{"lrem all", []string{"RPUSH k a a"}, "LREM k 0 a", true, map[string]string{"k": "-"}},
		{"ltrim", []string{"RPUSH k a b c d"}, "LTRIM k 1 -2", true, map[string]string{"k": "l:b,c"}},
		{"ltrim empty", []string{"RPUSH k a b"}, "LTRIM k 5 10", true, map[string]string{"k": "-"}},
		{"ltrim big stop", []string{"RPUSH k a b"}, "LTRIM k -100 100", true, map[string]string{"k": "l:a,b"}},
		{"linsert before", []string{"RPUSH k a b"}, "LINSERT k BEFORE b x", true, map[string]string{"k": "l:a,x,b"}},
		{"linsert after", []string{"RPUSH k a b"}, "LINSERT k after b x", true, map[string]string{"k": "l:a,b,x"}},
		{"linsert no pivot", []string{"RPUSH k a"}, "LINSERT k AFTER q x", true, map[string]string{"k": "l:a"}},
		{"lmove", []string{"RPUSH s a b", "RPUSH d x"}, "LMOVE s d LEFT RIGHT", true, map[string]string{"s": "l:b", "d": "l:x,a"}},
		{"lmove empties", []string{"RPUSH s a"}, "LMOVE s d RIGHT LEFT", true, map[string]string{"s": "-", "d": "l:a"}},
		{"lmove rotate", []string{"RPUSH s a b c"}, "LMOVE s s RIGHT LEFT", true, map[string]string{"s": "l:c,a,b"}},
		{"rpoplpush", []string{"RPUSH s a b"}, "RPOPLPUSH s d", true, map[string]string{"s": "l:a", "d": "l:b"}},
		{"lmove bad", []string{"RPUSH s a"}, "LMOVE s d UP LEFT", false, map[string]string{"s": "l:a"}},
		{"sadd", []string{"SADD k a"}, "SADD k b a", true, map[string]string{"k": "S:a,b"}},
		{"srem", []string{"SADD k a b"}, "SREM k a", true, map[string]string{"k": "S:b"}},
		{"srem last", []string{"SADD k a"}, "SREM k a", true, map[string]string{"k": "-"}},
		{"zadd", []string{"ZADD k 1 a"}, "ZADD k 2.5 b -inf c 3 a", true, map[string]string{"k": "z:a=3,b=2.5,c=-inf"}},
		{"zadd bad score", []string{"ZADD k 1 a"}, "ZADD k x b", false, map[string]string{"k": "z:a=1"}},
		{"zadd nan", nil, "ZADD k nan b", false, map[string]string{"k": "-"}},
		{"zrem", []string{"ZADD k 1 a 2 b"}, "ZREM k a", true, map[string]string{"k": "z:b=2"}},
		{"rename", []string{"SET a 1 PXAT 1000000001000", "SET b 2"}, "RENAME a b", true, map[string]string{"a": "-", "b": "s:1 @1000000001000"}},
		{"rename unknown source", []string{"SET b 2"}, "RENAME a b", true, map[string]string{"a": "-", "b": "-"}},
		{"copy", []string{"HSET a f v"}, "COPY a b", true, map[string]string{"a": "h:f=v", "b": "h:f=v"}},
		{"copy no replace", []string{"SET a 1", "SET b 2"}, "COPY a b", true, map[string]string{"b": "s:2"}},
		{"copy replace", []string{"SET a 1", "SET b 2"}, "COPY a b DB 0 REPLACE", true, map[string]string{"b": "s:1"}},
		{"copy other db", []string{"SET a 1"}, "COPY a b DB 3 REPLACE", true, map[string]string{"b": "-"}},
		{"move away", []string{"SET a 1"}, "MOVE a 2", true, map[string]string{"a": "-"}},
		{"flushdb", []string{"SET a 1", "HSET b f v"}, "FLUSHDB", true, map[string]string{"a": "-", "b": "-"}},
		{"flushall async", []string{"SET a 1"}, "FLUSHALL ASYNC", true, map[string]string{"a": "-"}},
		{"lower case name", nil, "set k v", true, map[string]string{"k": "s:v"}},
		{"unknown", nil, "FROB k 1", false, map[string]string{"k": "-"}},
		{"jset", nil, "JSET k $ 1", true, map[string]string{"k": "j:1"}},
		{"jset doc", nil, `JSET k $ {"b":2,"a":[1,2.50]}`, true, map[string]string{"k": `j:{"b":2,"a":[1,2.50]}`}},
		{"jset path", []string{`JSET k $ {"a":1}`}, `JSET k $.b "x"`, true, map[string]string{"k": `j:{"a":1,"b":"x"}`}},
		{"jset path absent", nil, "JSET k $.a 1", false, map[string]string{"k": "-"}},
		{"jset bad json", []string{`JSET k $ {"a":1}`}, "JSET k $.a {x", false, map[string]string{"k": `j:{"a":1}`}},
		{"jset out of range", []string{`JSET k $ [1]`}, "JSET k $[3] 2", false, map[string]string{"k": "j:[1]"}},
		{"jset keeps ttl", []string{`JSET k $ {"a":1}`, "PEXPIREAT k 1000000009000"}, "JSET k $ 2", true, map[string]string{"k": "j:2 @1000000009000"}},
		{"jset replaces type", []string{"SET k v PXAT 1000000009000"}, "JSET k $ 2", true, map[string]string{"k": "j:2"}},
		{"jset too few", nil, "JSET k $", false, map[string]string{"k": "-"}},
		{"jmerge", []string{`JSET k $ {"a":1,"b":{"c":2}}`}, `JMERGE k $ {"a":null,"b":{"d":3}}`, true, map[string]string{"k": `j:{"b":{"c":2,"d":3}}`}},
		{"jmerge creates", nil, `JMERGE k $ {"a":null,"b":1}`, true, map[string]string{"k": `j:{"b":1}`}},
		{"jmerge null absent", nil, "JMERGE k $ null", true, map[string]string{"k": "-"}},
		{"jmerge null deletes", []string{"JSET k $ 1 ", "PEXPIREAT k 1000000009000"}, "JMERGE k $ null", true, map[string]string{"k": "-"}},
		{"jdel path", []string{`JSET k $ {"a":[1,2,3]}`}, "JDEL k $.a[-1]", true, map[string]string{"k": `j:{"a":[1,2]}`}},
		{"jdel root", []string{`JSET k $ {"a":1}`}, "JDEL k $", true, map[string]string{"k": "-"}},
		{"jdel bad path", []string{`JSET k $ {"a":1}`}, "JDEL k a", false, map[string]string{"k": `j:{"a":1}`}},
		{"json copy", []string{`JSET a $ {"x":[1]}`, "PEXPIREAT a 1000000009000"}, "COPY a b", true, map[string]string{"a": `j:{"x":[1]} @1000000009000`, "b": `j:{"x":[1]} @1000000009000`}},
		{"json rename", []string{`JSET a $ {"x":1}`}, "RENAME a b", true, map[string]string{"a": "-", "b": `j:{"x":1}`}},
		{"rlset", nil, "RLSET k 1000000005000000000 100000000 2 PXAT 1000000005000", true, map[string]string{"k": "o:ratelimit @1000000005000"}},
		{"rlset no pxat", []string{"SET k v PXAT 1000000009000"}, "RLSET k 1000000005000000000 100000000 2", true, map[string]string{"k": "o:ratelimit"}},
		{"rlset past", []string{"SET k v"}, "RLSET k 1 100000000 2 PXAT 5", true, map[string]string{"k": "-"}},
		{"rlset bad", nil, "RLSET k x 100000000 2", false, map[string]string{"k": "-"}},
		{"rlset bad option", nil, "RLSET k 1 1 2 PX 5", false, map[string]string{"k": "-"}},
		{"too short", nil, "SET", false, nil},
		{"wrong type adopts the effect's", []string{"SET k v"}, "SADD k a", true, map[string]string{"k": "S:a"}},
		{"expired key is absent", []string{"SET k v PXAT 999999999000"}, "RPUSHX k a", true, map[string]string{"k": "-"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := NewStore(fixedNow)
			for _, s := range tt.setup {
				if _, ok := st.Apply(splitArgs(s)); !ok {
					t.Fatalf("setup %q not applied", s)
				}
			}
			changed, ok := st.Apply(splitArgs(tt.apply))
			if ok != tt.ok {
				t.Fatalf("Apply(%q) ok = %v, want %v", tt.apply, ok, tt.ok)
			}
			if !ok && len(changed) != 0 {
				t.Errorf("refused effect reported changes %v", changed)
			}
			for k, want := range tt.want {
				if got := render(st, k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

func TestStoreSetState(t *testing.T) {
	st := NewStore(fixedNow)
	bulk := func(s string) resp.Value { return resp.Value{Kind: '$', Str: []byte(s)} }
	marker := func(s string) resp.Value { return resp.Value{Kind: '+', Str: []byte(s)} }
	steps := []struct {
		v       resp.Value
		changed bool
		want    string
	}{
		{bulk("a"), true, "s:a"},
		{bulk("a"), false, "s:a"},
		{bulk("b"), true, "s:b"},
		{resp.Value{Kind: '$', Null: true}, true, "-"},
		{resp.Value{Kind: '_', Null: true}, false, "-"},
		{marker("hash"), true, "h:"},
		{marker("hash"), false, "h:"},
		{marker("json"), true, "j?"},
		{marker("ratelimit"), true, "o:ratelimit"},
		{marker("list"), true, "l:"},
	}
	for i, s := range steps {
		if got := st.SetState("k", s.v); got != s.changed {
			t.Errorf("step %d: changed %v, want %v", i, got, s.changed)
		}
		if got := render(st, "k"); got != s.want {
			t.Errorf("step %d: %q, want %q", i, got, s.want)
		}
	}
	// A marker for a key that already has the type keeps its content; a
	// string keychange keeps the expiry time known for the key.
	st.Apply(splitArgs("HSET h f v"))
	st.SetState("h", marker("hash"))
	st.Apply(splitArgs("SET s a PXAT 1000000001000"))
	st.SetState("s", bulk("b"))
	if got := render(st, "h") + "|" + render(st, "s"); got != "h:f=v|s:b @1000000001000" {
		t.Errorf("got %q", got)
	}
	// A qstate value forgets the string's expiry time: the PEXPIREAT
	// pushes that follow it give the key's time to live.
	st.Apply(splitArgs("SET q a PXAT 1000000001000"))
	st.Apply(splitArgs("SET r a PXAT 1000000001000"))
	if !st.hydrate("q", bulk("a")) || !st.hydrate("r", bulk("b")) || st.hydrate("q", bulk("a")) {
		t.Error("hydrate did not report the expiry change")
	}
	if got := render(st, "q") + "|" + render(st, "r"); got != "s:a|s:b" {
		t.Errorf("hydrated strings: %q", got)
	}
	st.Apply(splitArgs("DEL q r"))
	gone := st.removeMatching("*", map[string]bool{"h": true})
	if !slices.Equal(gone, []string{"k", "s"}) || st.Len() != 1 {
		t.Errorf("removeMatching removed %v, %d left", gone, st.Len())
	}
}

// TestStoreJSON covers a json key's life in the store: the +json marker of
// a qstate, the hydration pushes that follow it, JGet, and copies that do
// not share the document.
func TestStoreJSON(t *testing.T) {
	st := NewStore(fixedNow)
	marker := resp.Value{Kind: '+', Str: []byte("json")}
	if !st.SetState("d", marker) || render(st, "d") != "j?" {
		t.Fatalf("after the marker: %q", render(st, "d"))
	}
	if _, ok, _ := st.JGet("d", "$"); ok {
		t.Error("JGet of a document whose content has not arrived")
	}
	// Only the root can be applied to a document not yet known.
	for _, e := range []string{"JDEL d $.a", "JSET d $.a 1", `JMERGE d $.a {"b":1}`} {
		if _, ok := st.Apply(splitArgs(e)); ok || render(st, "d") != "j?" {
			t.Errorf("%s on a marker: ok %v, %q", e, ok, render(st, "d"))
		}
	}
	for _, e := range []string{"DEL d", `JSET d $ {"a":{"b":[1,"x",2.50]},"n":null}`, "PEXPIREAT d 1000000009000"} {
		if _, ok := st.Apply(splitArgs(e)); !ok {
			t.Fatalf("hydration %s not applied", e)
		}
	}
	if got := render(st, "d"); got != `j:{"a":{"b":[1,"x",2.50]},"n":null} @1000000009000` {
		t.Errorf("hydrated: %q", got)
	}
	// A marker for a key already json keeps its document.
	if st.SetState("d", marker) {
		t.Error("a json marker changed a json key")
	}
	gets := []struct {
		path, text string
		ok         bool
		err        string
	}{
		{"$", `{"a":{"b":[1,"x",2.50]},"n":null}`, true, ""},
		{"$.a.b[-1]", "2.50", true, ""},
		{`$["a"].b[1]`, `"x"`, true, ""},
		{"$.n", "null", true, ""},
		{"$.missing", "", false, ""},
		{"$.a.b[7]", "", false, ""},
		{"a", "", false, "invalid JSON path 'a': it must start with '$'"},
		{"$.n.x", "", false, "'$.n' is null, not an object"},
	}
	for _, g := range gets {
		text, ok, err := st.JGet("d", g.path)
		if string(text) != g.text || ok != g.ok || (err == nil) != (g.err == "") || err != nil && err.Error() != g.err {
			t.Errorf("JGet(d, %s) = %q %v %v, want %q %v %q", g.path, text, ok, err, g.text, g.ok, g.err)
		}
	}
	if _, ok, _ := st.JGet("none", "$"); ok {
		t.Error("JGet of an absent key")
	}
	st.Apply(splitArgs("SET s v"))
	if _, ok, _ := st.JGet("s", "$"); ok {
		t.Error("JGet of a string")
	}
	// COPY makes an independent document.
	st.Apply(splitArgs("COPY d c"))
	st.Apply(splitArgs("JSET c $.a.b[0] 9"))
	if a, c := render(st, "d"), render(st, "c"); a == c || !strings.Contains(c, "[9,") || strings.Contains(a, "[9,") {
		t.Errorf("after changing the copy: d %q, c %q", a, c)
	}
	// A Value is a copy of the text.
	v, _ := st.Get("d")
	v.JSON[0] = 'X'
	if render(st, "d")[2] != '{' {
		t.Error("Value.JSON shares the store's memory")
	}
	// An expired document is absent.
	st.Apply(splitArgs("PEXPIREAT c 999999999999"))
	if _, ok, _ := st.JGet("c", "$"); ok {
		t.Error("JGet of an expired key")
	}
}

// TestStoreRateLimitHydration checks that a ratelimit key survives its
// hydration (marker, DEL, RLSET, PEXPIREAT) as a marker with its expiry.
func TestStoreRateLimitHydration(t *testing.T) {
	st := NewStore(fixedNow)
	st.SetState("r", resp.Value{Kind: '+', Str: []byte("ratelimit")})
	for _, e := range []string{"DEL r", "RLSET r 1000000000100000000 100000000 2", "PEXPIREAT r 1000000000100"} {
		if _, ok := st.Apply(splitArgs(e)); !ok {
			t.Fatalf("%s not applied", e)
		}
	}
	if got := render(st, "r"); got != "o:ratelimit @1000000000100" {
		t.Errorf("hydrated limiter: %q", got)
	}
	if v, _ := st.Get("r"); v.Marker != "ratelimit" || v.Type != TypeOther {
		t.Errorf("value %+v", v)
	}
}
