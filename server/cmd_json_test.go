package server

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
)

func TestJSONCommands(t *testing.T) {
	const doc = `{"name":"Ada","n":1,"f":1.5,"arr":[1,2],"o":{"x":true,"y":null},"odd key":"v"}`
	steps := []effectStep{
		// JSET and creation.
		{[]string{"JSET", "d", "$.a", "1"}, "-" + errJSONNewAtRoot + "\r\n", nil},
		{[]string{"JSET", "d", "$", "1", "XX"}, "$-1\r\n", nil},
		{[]string{"JSET", "d", "$", "{bad"}, "-ERR invalid JSON: unexpected 'b' where a member name should be at offset 1\r\n", nil},
		{[]string{"JSET", "d", "a", "1"}, "-ERR invalid JSON path 'a': it must start with '$'\r\n", nil},
		{[]string{"JSET", "d", "$", "1", "NX", "XX"}, "-ERR syntax error\r\n", nil},
		{[]string{"JSET", "d", "$", "1", "YY"}, "-ERR syntax error\r\n", nil},
		{[]string{"JSET", "d", "$"}, "-ERR wrong number of arguments for 'jset' command\r\n", nil},
		{[]string{"JSET", "d", "$", " " + doc + "\n", "nx"}, "+OK\r\n", [][]string{{"JSET", "d", "$", " " + doc + "\n"}}},
		{[]string{"JSET", "d", "$", "{}", "NX"}, "$-1\r\n", nil},
		{[]string{"JGET", "d"}, bulk(doc), nil},
		{[]string{"JSET", "d", ".name", `"Grace"`}, "+OK\r\n", [][]string{{"JSET", "d", "$.name", `"Grace"`}}},
		{[]string{"JSET", "d", "$['odd key']", `[ 1 ]`, "XX"}, "+OK\r\n", [][]string{{"JSET", "d", `$["odd key"]`, `[ 1 ]`}}},
		{[]string{"JSET", "d", "$.new", `2`, "XX"}, "$-1\r\n", nil},
		{[]string{"JSET", "d", "$.arr[-1]", `"last"`}, "+OK\r\n", [][]string{{"JSET", "d", "$.arr[-1]", `"last"`}}},
		{[]string{"JSET", "d", "$.arr[2]", `3`}, "-ERR index 2 is out of range for '$.arr', an array of length 2\r\n", nil},
		{[]string{"JSET", "d", "$.n.x", `3`}, "-ERR '$.n' is a number, not an object\r\n", nil},
		{[]string{"JSET", "d", "$.zz.x", `3`}, "-ERR '$.zz' does not exist\r\n", nil},
		{[]string{"JSET", "d", "$.n", `01`}, "-ERR invalid JSON: unexpected '1' after the value at offset 1\r\n", nil},
		// JGET.
		{[]string{"JGET", "d", "$.name"}, bulk(`"Grace"`), nil},
		{[]string{"JGET", "d", ".arr"}, bulk(`[1,"last"]`), nil},
		{[]string{"JGET", "d", "$.missing"}, "$-1\r\n", nil},
		{[]string{"JGET", "d", "$.n.x"}, "-ERR '$.n' is a number, not an object\r\n", nil},
		{[]string{"JGET", "d", "$.name", "$.arr[0]", "$.missing", "$.name"}, bulk(`{"$.name":"Grace","$.arr[0]":1}`), nil},
		{[]string{"JGET", "d", "$.name", "$.n.x"}, "-ERR '$.n' is a number, not an object\r\n", nil},
		{[]string{"JGET", "d", "$.name", "$["}, "-ERR invalid JSON path '$[': unterminated '['\r\n", nil},
		{[]string{"JGET", "nokey"}, "$-1\r\n", nil},
		{[]string{"JGET", "nokey", "$.a", "$.b"}, "$-1\r\n", nil},
		// JTYPE.
		{[]string{"JTYPE", "d"}, "+object\r\n", nil},
		{[]string{"JTYPE", "d", "$.n"}, "+integer\r\n", nil},
		{[]string{"JTYPE", "d", "$.f"}, "+number\r\n", nil},
		{[]string{"JTYPE", "d", "$.o.x"}, "+boolean\r\n", nil},
		{[]string{"JTYPE", "d", "$.o.y"}, "+null\r\n", nil},
		{[]string{"JTYPE", "d", "$.arr"}, "+array\r\n", nil},
		{[]string{"JTYPE", "d", "$.name"}, "+string\r\n", nil},
		{[]string{"JTYPE", "d", "$.nope"}, "$-1\r\n", nil},
		{[]string{"JTYPE", "nokey"}, "$-1\r\n", nil},
		{[]string{"JTYPE", "d", "$", "$"}, "-ERR syntax error\r\n", nil},
		// JNUMINCRBY.
		{[]string{"JNUMINCRBY", "d", "$.n", "41"}, bulk("42"), [][]string{{"JSET", "d", "$.n", "42"}}},
		{[]string{"JNUMINCRBY", "d", ".f", "1"}, bulk("2.5"), [][]string{{"JSET", "d", "$.f", "2.5"}}},
		{[]string{"JNUMINCRBY", "d", "$.n", "x"}, "-ERR increment is not a JSON number\r\n", nil},
		{[]string{"JNUMINCRBY", "d", "$.name", "1"}, "-ERR '$.name' is a string, not a number\r\n", nil},
		{[]string{"JNUMINCRBY", "d", "$.nope", "1"}, "-ERR '$.nope' does not exist\r\n", nil},
		{[]string{"JNUMINCRBY", "nokey", "$", "1"}, "-ERR no such key\r\n", nil},
		{[]string{"JSET", "big", "$", "9223372036854775807"}, "+OK\r\n", [][]string{{"JSET", "big", "$", "9223372036854775807"}}},
		{[]string{"JNUMINCRBY", "big", "$", "1"}, "-ERR increment or decrement would overflow\r\n", nil},
		{[]string{"JNUMINCRBY", "big", "$", "-9223372036854775807"}, bulk("0"), [][]string{{"JSET", "big", "$", "0"}}},
		// JARRAPPEND, JARRLEN, JSTRLEN, JOBJKEYS.
		{[]string{"JARRAPPEND", "d", "$.arr", "3", `{"k":[null]}`}, ":4\r\n", [][]string{{"JSET", "d", "$.arr", `[1,"last",3,{"k":[null]}]`}}},
		{[]string{"JARRAPPEND", "d", "$.arr", "3", "nope"}, "-ERR invalid JSON: unexpected 'o' at offset 1\r\n", nil},
		{[]string{"JARRAPPEND", "d", "$.o", "3"}, "-ERR '$.o' is an object, not an array\r\n", nil},
		{[]string{"JARRAPPEND", "nokey", "$", "3"}, "-ERR no such key\r\n", nil},
		{[]string{"JARRLEN", "d", "$.arr"}, ":4\r\n", nil},
		{[]string{"JARRLEN", "d", "$.o"}, "-ERR '$.o' is an object, not an array\r\n", nil},
		{[]string{"JARRLEN", "d", "$.nope"}, "$-1\r\n", nil},
		{[]string{"JARRLEN", "nokey"}, "$-1\r\n", nil},
		{[]string{"JSTRLEN", "d", "$.name"}, ":5\r\n", nil},
		{[]string{"JSTRLEN", "d"}, "-ERR '$' is an object, not a string\r\n", nil},
		{[]string{"JSTRLEN", "d", "$.nope"}, "$-1\r\n", nil},
		{[]string{"JOBJKEYS", "d", "$.o"}, "*2\r\n$1\r\nx\r\n$1\r\ny\r\n", nil},
		{[]string{"JOBJKEYS", "d", "$.arr"}, "-ERR '$.arr' is an array, not an object\r\n", nil},
		{[]string{"JOBJKEYS", "d", "$.nope"}, "$-1\r\n", nil},
		{[]string{"JOBJKEYS", "d", "$", "x"}, "-ERR syntax error\r\n", nil},
		// JMERGE.
		{[]string{"JMERGE", "d", "$.o", `{"x":null,"z":{"deep":1,"gone":null}}`}, "+OK\r\n", [][]string{{"JMERGE", "d", "$.o", `{"x":null,"z":{"deep":1,"gone":null}}`}}},
		{[]string{"JGET", "d", "$.o"}, bulk(`{"y":null,"z":{"deep":1}}`), nil},
		{[]string{"JMERGE", "d", "$.o.y", `null`}, "+OK\r\n", [][]string{{"JMERGE", "d", "$.o.y", `null`}}},
		{[]string{"JMERGE", "d", "$.o.q.r", `1`}, "-ERR '$.o.q' does not exist\r\n", nil},
		{[]string{"JMERGE", "d", "$", `{"arr":null`}, "-ERR invalid JSON: unexpected end of input\r\n", nil},
		{[]string{"JMERGE", "m", "$.a", `{}`}, "-" + errJSONNewAtRoot + "\r\n", nil},
		{[]string{"JMERGE", "m", "$", `null`}, "+OK\r\n", nil},
		{[]string{"JMERGE", "m", "$", `{"a":{"b":null,"c":2}}`}, "+OK\r\n", [][]string{{"JMERGE", "m", "$", `{"a":{"b":null,"c":2}}`}}},
		{[]string{"JGET", "m"}, bulk(`{"a":{"c":2}}`), nil},
		{[]string{"JMERGE", "m", "$", `null`}, "+OK\r\n", [][]string{{"JMERGE", "m", "$", `null`}}},
		{[]string{"EXISTS", "m"}, ":0\r\n", nil},
		// JDEL.
		{[]string{"JDEL", "d", "$.arr[0]"}, ":1\r\n", [][]string{{"JDEL", "d", "$.arr[0]"}}},
		{[]string{"JDEL", "d", "$.arr[9]"}, ":0\r\n", nil},
		{[]string{"JDEL", "d", "$.nope"}, ":0\r\n", nil},
		{[]string{"JDEL", "d", "$.name.x"}, "-ERR '$.name' is a string, not an object\r\n", nil},
		{[]string{"JDEL", "d", "$", "x"}, "-ERR syntax error\r\n", nil},
		{[]string{"JDEL", "nokey"}, ":0\r\n", nil},
		{[]string{"JGET", "d"}, bulk(`{"name":"Grace","n":42,"f":2.5,"arr":["last",3,{"k":[null]}],"o":{"z":{"deep":1}},"odd key":[1]}`), nil},
		{[]string{"JDEL", "big"}, ":1\r\n", [][]string{{"JDEL", "big", "$"}}},
		{[]string{"JDEL", "d", "."}, ":1\r\n", [][]string{{"JDEL", "d", "$"}}},
		{[]string{"EXISTS", "d", "big"}, ":0\r\n", nil},
		// Other types, TYPE, OBJECT ENCODING, COPY.
		{[]string{"SET", "s", "x"}, "+OK\r\n", [][]string{{"SET", "s", "x"}}},
		{[]string{"JGET", "s"}, "-" + errWrongType + "\r\n", nil},
		{[]string{"JSET", "s", "$", "1"}, "-" + errWrongType + "\r\n", nil},
		{[]string{"JMERGE", "s", "$", "1"}, "-" + errWrongType + "\r\n", nil},
		{[]string{"JDEL", "s"}, "-" + errWrongType + "\r\n", nil},
		{[]string{"JSET", "j", "$", `{"a":[1]}`}, "+OK\r\n", [][]string{{"JSET", "j", "$", `{"a":[1]}`}}},
		{[]string{"GET", "j"}, "-" + errWrongType + "\r\n", nil},
		{[]string{"TYPE", "j"}, "+json\r\n", nil},
		{[]string{"OBJECT", "ENCODING", "j"}, bulk("raw"), nil},
		{[]string{"EXPIRE", "j", "100"}, ":1\r\n", [][]string{{"PEXPIREAT", "j", "1700000100000"}}},
		{[]string{"JSET", "j", "$", `{"b":2}`}, "+OK\r\n", [][]string{{"JSET", "j", "$", `{"b":2}`}}},
		{[]string{"TTL", "j"}, ":100\r\n", nil},
		{[]string{"COPY", "j", "j2"}, ":1\r\n", [][]string{{"COPY", "j", "j2", "DB", "0", "REPLACE"}}},
		{[]string{"JSET", "j2", "$.b", "3"}, "+OK\r\n", [][]string{{"JSET", "j2", "$.b", "3"}}},
		{[]string{"JGET", "j"}, bulk(`{"b":2}`), nil},
		{[]string{"JGET", "j2"}, bulk(`{"b":3}`), nil},
	}
	r := newEffectRecorder(t)
	r.srv.ks.Now = func() int64 { return 1_700_000_000_000 }
	runSteps(t, r, steps)
}

// TestJSONDedup runs a json write wrapped in DEDUP twice: once only.
func TestJSONDedup(t *testing.T) {
	r := newEffectRecorder(t)
	runSteps(t, r, []effectStep{
		{[]string{"JSET", "d", "$", `{"n":0}`}, "+OK\r\n", [][]string{{"JSET", "d", "$", `{"n":0}`}}},
		{[]string{"DEDUP", "client-1", "7", "JNUMINCRBY", "d", "$.n", "1"}, bulk("1"), [][]string{{"JSET", "d", "$.n", "1"}}},
		{[]string{"DEDUP", "client-1", "7", "JNUMINCRBY", "d", "$.n", "1"}, "+DUP\r\n", nil},
		{[]string{"DEDUP", "client-1", "8", "JMERGE", "d", "$", `{"m":2}`}, "+OK\r\n", [][]string{{"JMERGE", "d", "$", `{"m":2}`}}},
		{[]string{"JGET", "d"}, bulk(`{"n":1,"m":2}`), nil},
	})
}

// TestJSONScope checks that a strictly scoped connection may use the json
// and ratelimit commands on keys in its scope only.
func TestJSONScope(t *testing.T) {
	_, s := scopedSession(t, "doc:1", "rl:*")
	allowed := [][]string{
		{"JSET", "doc:1", "$", "{}"},
		{"JGET", "doc:1"},
		{"JMERGE", "doc:1", "$", `{"a":1}`},
		{"THROTTLE", "rl:x", "1", "1", "1"},
		{"DEDUP", "c", "1", "JSET", "doc:1", "$.b", "2"},
	}
	for _, args := range allowed {
		if rep := run(s, args...); strings.HasPrefix(rep, "-") {
			t.Errorf("%q in scope: %q", args, rep)
		}
	}
	refused := [][]string{
		{"JSET", "doc:2", "$", "{}"},
		{"JGET", "doc:2"},
		{"JDEL", "doc:2"},
		{"THROTTLE", "other", "1", "1", "1"},
		{"DEDUP", "c", "2", "JSET", "doc:2", "$", "2"},
	}
	for _, args := range refused {
		if rep := run(s, args...); !strings.HasPrefix(rep, "-NOPERM") {
			t.Errorf("%q out of scope: %q", args, rep)
		}
	}
	// RLSET is the effect, never a client's command on this port.
	if rep := run(s, "RLSET", "rl:x", "1", "1", "0"); rep != "-"+errNoPermWS+"\r\n" {
		t.Errorf("RLSET on the WebSocket port: %q", rep)
	}
}

// TestJSONQStateHydration checks the sync layer's view of a json key: the
// +json marker in qstate, then DEL and JSET key $ <document>; and of a
// ratelimit key: DEL, RLSET, then PEXPIREAT for its time to live.
func TestJSONQStateHydration(t *testing.T) {
	srv := New(DefaultConfig())
	s, err := srv.NewSession(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	run(s, "JSET", "doc:1", "$", ` {"a": [1, 2.50, "x"]} `)
	now := int64(1_700_000_000_000)
	srv.ks.Now = func() int64 { return now }
	run(s, "THROTTLE", "doc:rl", "2", "10", "1")
	got := run(s, "QSUB", "doc:*")
	want := "*6\r\n$6\r\nqstate\r\n$5\r\ndoc:*\r\n" +
		"$5\r\ndoc:1\r\n+json\r\n$6\r\ndoc:rl\r\n+ratelimit\r\n" +
		">2\r\n$3\r\nDEL\r\n$5\r\ndoc:1\r\n" +
		">4\r\n$4\r\nJSET\r\n$5\r\ndoc:1\r\n$1\r\n$\r\n" + bulk(`{"a":[1,2.50,"x"]}`) +
		">2\r\n$3\r\nDEL\r\n$6\r\ndoc:rl\r\n" +
		">5\r\n$5\r\nRLSET\r\n$6\r\ndoc:rl\r\n" + bulk(strconv.FormatInt(now*1e6+1e8, 10)) + bulk("100000000") + bulk("2") +
		">3\r\n$9\r\nPEXPIREAT\r\n$6\r\ndoc:rl\r\n" + bulk(strconv.FormatInt(now+100, 10))
	if got != want {
		t.Errorf("QSUB:\n got %q\nwant %q", got, want)
	}
}

// dumpTyped describes a key for the replay checks: type, content and
// expiry.
func dumpTyped(r *effectRecorder, key string) string {
	e := r.s.db.Peek([]byte(key))
	if e == nil {
		return "absent"
	}
	at, _ := r.s.db.Expiry([]byte(key))
	exp := " expires " + strconv.FormatInt(at, 10)
	switch o := e.Obj.(type) {
	case *keyspace.JSON:
		return "json " + string(o.Text()) + exp
	case *keyspace.RateLimit:
		return "ratelimit " + strconv.FormatInt(o.TAT, 10) + " " + strconv.FormatInt(o.Interval, 10) + " " + strconv.FormatInt(o.Burst, 10) + exp
	case nil:
		return "string " + string(e.Str) + exp
	}
	return e.Type().String() + exp
}

// randJSON returns random JSON text at most depth containers deep, with
// member names from a small set so that paths and patches meet.
func randJSON(r *rand.Rand, depth int) string {
	names := []string{"a", "b", "c", "arr", "x y", "n"}
	switch k := r.IntN(10); {
	case k == 0:
		return "null"
	case k == 1:
		return []string{"true", "false"}[r.IntN(2)]
	case k == 2:
		return strconv.Itoa(r.IntN(2000) - 1000)
	case k == 3:
		return strconv.FormatFloat(r.Float64()*100-50, 'g', -1, 64)
	case k == 4:
		return strconv.Quote(strings.Repeat("s", r.IntN(5)))
	case k <= 6 && depth > 0:
		n := r.IntN(4)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = randJSON(r, depth-1)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case depth > 0:
		n := r.IntN(4)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = strconv.Quote(names[r.IntN(len(names))]) + ":" + randJSON(r, depth-1)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	return "7"
}

// randPath returns a random path over the names randJSON uses.
func randPath(r *rand.Rand) string {
	segs := []string{".a", ".b", ".c", ".arr", `["x y"]`, ".n", "[0]", "[1]", "[-1]"}
	p := "$"
	if r.IntN(8) == 0 {
		p = ""
	}
	for n := r.IntN(4); n > 0; n-- {
		p += segs[r.IntN(len(segs))]
	}
	if p == "" {
		p = "."
	}
	return p
}

// TestJSONEffectsReplay is the property test: random json and ratelimit
// commands run on one server; their effects, applied to a second server,
// leave every key identical (content, type and expiry), bit for bit.
func TestJSONEffectsReplay(t *testing.T) {
	keys := []string{"j1", "j2", "rl"}
	src := newEffectRecorder(t)
	dst := newEffectRecorder(t)
	now := int64(1_700_000_000_000)
	clock := func() int64 { return now }
	src.srv.ks.Now, dst.srv.ks.Now = clock, clock
	r := rand.New(rand.NewPCG(8, 8))
	counts := map[string]int{}
	// A client's local replica applies the same effects with
	// keyspace.ApplyJSONEffect.
	local := map[string]*keyspace.JSON{}
	localExp := map[string]int64{}
	for i := 0; i < 5000; i++ {
		k := keys[r.IntN(2)]
		var args []string
		switch r.IntN(12) {
		case 0:
			args = []string{"JSET", k, "$", randJSON(r, 3)}
		case 11:
			// A document the number and array commands find their way in.
			args = []string{"JSET", k, "$", `{"n":` + strconv.Itoa(r.IntN(9)) + `,"arr":[` + randJSON(r, 1) + `],"a":{"n":1.5,"arr":[]}}`}
		case 1, 2:
			args = []string{"JSET", k, randPath(r), randJSON(r, 2)}
			if c := r.IntN(4); c < 2 {
				args = append(args, []string{"NX", "XX"}[c])
			}
		case 3, 4:
			args = []string{"JMERGE", k, randPath(r), randJSON(r, 2)}
		case 5:
			args = []string{"JDEL", k, randPath(r)}
		case 6:
			by := strconv.Itoa(r.IntN(20) - 10)
			if r.IntN(3) == 0 {
				by = "0.25"
			}
			args = []string{"JNUMINCRBY", k, []string{"$.n", ".a.n", "$.arr[0]", randPath(r)}[r.IntN(4)], by}
		case 7:
			args = []string{"JARRAPPEND", k, []string{"$.arr", "$.a.arr", randPath(r)}[r.IntN(3)], randJSON(r, 1), randJSON(r, 1)}
		case 8:
			args = []string{"THROTTLE", "rl", strconv.Itoa(r.IntN(5)), strconv.Itoa(1 + r.IntN(10)), strconv.Itoa(1 + r.IntN(3)), strconv.Itoa(r.IntN(4))}
		case 9:
			now += int64(r.IntN(700))
			args = []string{"JTYPE", k}
		default:
			args = []string{"PEXPIRE", k, strconv.Itoa(100 + r.IntN(100000))}
		}
		rep, effects := src.run(args...)
		if !strings.HasPrefix(rep, "-") {
			counts[args[0]]++
		}
		for _, eff := range effects {
			if !slices.Contains(keys, eff[1]) {
				t.Fatalf("%q reported an effect on %q", args, eff[1])
			}
			if rep, _ := dst.run(eff...); strings.HasPrefix(rep, "-") {
				t.Fatalf("replaying %q (from %q): %s", eff, args, rep)
			}
			switch eff[0] {
			case "JSET", "JMERGE", "JDEL":
				doc, err := keyspace.ApplyJSONEffect(local[eff[1]], eff[0], toArgs(eff[2:]...))
				if err != nil {
					t.Fatalf("local replica applying %q (from %q): %v", eff, args, err)
				}
				if local[eff[1]] = doc; doc == nil {
					delete(localExp, eff[1])
				}
			case "DEL":
				local[eff[1]] = nil
				delete(localExp, eff[1])
			case "PEXPIREAT":
				localExp[eff[1]], _ = strconv.ParseInt(eff[2], 10, 64)
			}
		}
		for _, key := range keys {
			if a, b := dumpTyped(src, key), dumpTyped(dst, key); a != b {
				t.Fatalf("after %q (effects %q), key %s:\n server  %s\n replica %s", args, effects, key, a, b)
			}
			if at, ok := localExp[key]; ok && at <= now {
				local[key] = nil // expired here as on the server
				delete(localExp, key)
			}
			if e := src.s.db.Peek([]byte(key)); key != "rl" && (e == nil) != (local[key] == nil) {
				t.Fatalf("after %q: server has %s, the local replica %v", args, dumpTyped(src, key), local[key])
			} else if e != nil && key != "rl" && string(e.Obj.(*keyspace.JSON).Text()) != string(local[key].Text()) {
				t.Fatalf("after %q: server has %s, the local replica %s", args, e.Obj.(*keyspace.JSON).Text(), local[key].Text())
			}
		}
	}
	// The random commands must have exercised every path, not only errors.
	t.Logf("successful commands: %v", counts)
	for _, c := range []string{"JSET", "JMERGE", "JDEL", "JNUMINCRBY", "JARRAPPEND", "THROTTLE", "PEXPIRE"} {
		if counts[c] < 50 {
			t.Errorf("only %d successful %s commands", counts[c], c)
		}
	}
}

// TestJSONHydrationReplay checks that a document re-created from its
// hydrating push is the same document.
func TestJSONHydrationReplay(t *testing.T) {
	src := newEffectRecorder(t)
	dst := newEffectRecorder(t)
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 300; i++ {
		text := randJSON(r, 4)
		if rep, _ := src.run("JSET", "k", "$", text); rep != "+OK\r\n" {
			t.Fatalf("JSET %s: %q", text, rep)
		}
		e := src.s.db.Lookup([]byte("k"))
		for _, cmd := range e.Obj.(*keyspace.JSON).Recreate([]byte("k")) {
			args := make([]string, len(cmd))
			for i, a := range cmd {
				args[i] = string(a)
			}
			dst.run("DEL", "k")
			if rep, _ := dst.run(args...); rep != "+OK\r\n" {
				t.Fatalf("hydrating %q: %q", args, rep)
			}
		}
		if a, b := dumpTyped(src, "k"), dumpTyped(dst, "k"); a != b {
			t.Fatalf("hydrated %s as %s", a, b)
		}
	}
}

// The 1 KB document of the benchmarks (the keyspace tests' shape).
const bench1K = `{"id":"user:42","name":"Ada Lovelace","email":"ada@example.com","age":36,"score":98.5,"active":true,"tags":["math","poetry","engines","notes"],"address":{"street":"12 St James's Square","city":"London","zip":"SW1Y 4JH","geo":{"lat":51.5074,"lon":-0.1339}},"prefs":{"theme":"dark","lang":"en-GB","notify":{"email":true,"push":false,"sms":null}},"history":[{"at":17000000000,"event":"login","ip":"192.0.2.1"},{"at":17000000001,"event":"login","ip":"192.0.2.2"},{"at":17000000002,"event":"login","ip":"192.0.2.3"},{"at":17000000003,"event":"logout","ip":"192.0.2.4"},{"at":17000000004,"event":"login","ip":"192.0.2.5"},{"at":17000000005,"event":"login","ip":"192.0.2.6"},{"at":17000000006,"event":"logout","ip":"192.0.2.7"},{"at":17000000007,"event":"login","ip":"192.0.2.8"}],"counters":{"visits":1024,"posts":17,"likes":349},"bio":"First programmer; wrote the notes on the Analytical Engine and saw that it could do more than arithmetic."}`

// bench50Patch is a 50-byte merge patch for bench1K.
const bench50Patch = `{"prefs":{"theme":"light"},"counters":{"posts":18}}`

func BenchmarkExecJSET1K(b *testing.B) { benchExec(b, nil, "JSET", "doc", "$", bench1K) }

func BenchmarkExecJGET1K(b *testing.B) {
	benchExec(b, []string{"JSET", "doc", "$", bench1K}, "JGET", "doc")
}

func BenchmarkExecJGETPath(b *testing.B) {
	benchExec(b, []string{"JSET", "doc", "$", bench1K}, "JGET", "doc", "$.address.geo.lat")
}

func BenchmarkExecJMERGE50(b *testing.B) {
	benchExec(b, []string{"JSET", "doc", "$", bench1K}, "JMERGE", "doc", "$", bench50Patch)
}

func BenchmarkExecJNUMINCRBY(b *testing.B) {
	benchExec(b, []string{"JSET", "doc", "$", bench1K}, "JNUMINCRBY", "doc", "$.counters.visits", "1")
}

func BenchmarkExecThrottle(b *testing.B) {
	benchExec(b, nil, "THROTTLE", "rl", "1000000", "1000000000", "1")
}

// BenchmarkJMergePushBytes measures the mutation push a JMERGE of a 50-byte
// patch into the 1 KB document sends, against re-sending the document
// (JSET key $ <document>).
func BenchmarkJMergePushBytes(b *testing.B) {
	srv := New(DefaultConfig())
	var pushed, whole int
	srv.AddHook(func(e *Effect) {
		if string(e.Args[0]) != "JMERGE" {
			return
		}
		pushed += len(resp.AppendPush(nil, e.Args...))
		doc := srv.ks.DBs[0].Peek(e.Key).Obj.(*keyspace.JSON)
		whole += len(resp.AppendPush(nil, []byte("JSET"), e.Key, []byte("$"), doc.Text()))
	})
	s, err := srv.NewSession(nil, false)
	if err != nil {
		b.Fatal(err)
	}
	run(s, "JSET", "doc", "$", bench1K)
	in := [][]byte{[]byte("JMERGE"), []byte("doc"), []byte("$"), []byte(bench50Patch)}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.W.B = s.W.B[:0]
		s.Exec(in)
	}
	b.ReportMetric(float64(pushed)/float64(b.N), "push-B/op")
	b.ReportMetric(float64(whole)/float64(b.N), "whole-doc-push-B/op")
}
