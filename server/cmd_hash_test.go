package server

import (
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/recached/recached/server/keyspace"
)

// effectRecorder is a server with a session and the effects it reports.
type effectRecorder struct {
	srv     *Server
	s       *Session
	effects [][]string
}

func newEffectRecorder(t testing.TB) *effectRecorder {
	t.Helper()
	r := &effectRecorder{srv: New(DefaultConfig())}
	r.srv.AddHook(func(e *Effect) {
		args := make([]string, len(e.Args))
		for i, a := range e.Args {
			args[i] = string(a)
		}
		if string(e.Key) != args[1] {
			t.Errorf("effect %q: Key %q is not args[1]", args, e.Key)
		}
		r.effects = append(r.effects, args)
	})
	s, err := r.srv.NewSession(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	r.s = s
	return r
}

// run executes one command and returns its reply and the effects it
// reported.
func (r *effectRecorder) run(args ...string) (string, [][]string) {
	before := len(r.effects)
	r.s.W.B = r.s.W.B[:0]
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	r.s.Exec(b)
	return string(r.s.W.B), r.effects[before:]
}

// dumpKey describes a key's type, content and expiry in a canonical form:
// sorted members, sorted field=value pairs, the absolute expiry time.
func dumpKey(r *effectRecorder, key string) string {
	typ, _ := r.run("TYPE", key)
	var items []string
	switch typ {
	case "+hash\r\n":
		e := r.s.db.Lookup([]byte(key))
		h := e.Obj.(*keyspace.Hash)
		h.Range(func(f, v []byte) bool {
			items = append(items, string(f)+"="+string(v))
			return true
		})
	case "+set\r\n":
		e := r.s.db.Lookup([]byte(key))
		set := e.Obj.(*keyspace.Set)
		set.Range(func(m []byte) bool {
			items = append(items, string(m))
			return true
		})
	case "+string\r\n":
		v, _ := r.run("GET", key)
		items = append(items, v)
	}
	sort.Strings(items)
	at, _ := r.s.db.Expiry([]byte(key))
	return strings.TrimSpace(typ) + " " + strings.Join(items, ",") + " expires " + strconv.FormatInt(at, 10)
}

func TestHashEffects(t *testing.T) {
	tests := []struct {
		args    []string
		reply   string
		effects [][]string
	}{
		{[]string{"HSET", "h", "a", "1", "b", "2"}, ":2\r\n", [][]string{{"HSET", "h", "a", "1", "b", "2"}}},
		{[]string{"HSET", "h", "a", "1"}, ":0\r\n", [][]string{{"HSET", "h", "a", "1"}}},
		{[]string{"hmset", "h", "c", "3"}, "+OK\r\n", [][]string{{"HSET", "h", "c", "3"}}},
		{[]string{"HSETNX", "h", "a", "x"}, ":0\r\n", nil},
		{[]string{"HSETNX", "h", "d", "4"}, ":1\r\n", [][]string{{"HSET", "h", "d", "4"}}},
		{[]string{"HDEL", "h", "a", "zz", "b"}, ":2\r\n", [][]string{{"HDEL", "h", "a", "b"}}},
		{[]string{"HDEL", "h", "zz"}, ":0\r\n", nil},
		{[]string{"HDEL", "nokey", "zz"}, ":0\r\n", nil},
		{[]string{"HINCRBY", "h", "n", "5"}, ":5\r\n", [][]string{{"HSET", "h", "n", "5"}}},
		{[]string{"HINCRBY", "h", "n", "-7"}, ":-2\r\n", [][]string{{"HSET", "h", "n", "-2"}}},
		{[]string{"HINCRBY", "h", "c", "x"}, "-ERR value is not an integer or out of range\r\n", nil},
		{[]string{"HINCRBYFLOAT", "h", "f", "1.5"}, "$3\r\n1.5\r\n", [][]string{{"HSET", "h", "f", "1.5"}}},
		{[]string{"HINCRBYFLOAT", "h", "f", "0.1"}, "$3\r\n1.6\r\n", [][]string{{"HSET", "h", "f", "1.6"}}},
		{[]string{"HINCRBYFLOAT", "h", "f", "inf"}, "-ERR value is NaN or Infinity\r\n", nil},
		{[]string{"HINCRBYFLOAT", "new", "f", "1"}, "$1\r\n1\r\n", [][]string{{"HSET", "new", "f", "1"}}},
		{[]string{"HGET", "h", "c"}, "$1\r\n3\r\n", nil},
		{[]string{"HGETALL", "nokey"}, "*0\r\n", nil},
		{[]string{"HRANDFIELD", "h", "-3"}, "", nil},
		{[]string{"HSCAN", "h", "0"}, "", nil},
		{[]string{"HDEL", "new", "f"}, ":1\r\n", [][]string{{"HDEL", "new", "f"}}},
		{[]string{"EXISTS", "new"}, ":0\r\n", nil},
	}
	r := newEffectRecorder(t)
	for _, tc := range tests {
		reply, effects := r.run(tc.args...)
		if tc.reply != "" && reply != tc.reply {
			t.Errorf("%q: reply %q, want %q", tc.args, reply, tc.reply)
		}
		if len(effects) != len(tc.effects) {
			t.Errorf("%q: effects %q, want %q", tc.args, effects, tc.effects)
			continue
		}
		for i := range effects {
			if !slices.Equal(effects[i], tc.effects[i]) {
				t.Errorf("%q: effect %q, want %q", tc.args, effects[i], tc.effects[i])
			}
		}
	}
}

// replayCheck runs commands on one server, applies the effects they report
// to a second one, and checks after each command that every key is the
// same on both.
func replayCheck(t *testing.T, keys []string, next func(r *rand.Rand) []string) {
	src := newEffectRecorder(t)
	dst := newEffectRecorder(t)
	r := rand.New(rand.NewPCG(11, 12))
	for i := 0; i < 3000; i++ {
		args := next(r)
		_, effects := src.run(args...)
		for _, eff := range effects {
			if !slices.Contains(keys, eff[1]) {
				t.Fatalf("%q reported an effect on %q", args, eff[1])
			}
			if rep, _ := dst.run(eff...); strings.HasPrefix(rep, "-") {
				t.Fatalf("replaying %q (from %q): %s", eff, args, rep)
			}
		}
		for _, k := range keys {
			if a, b := dumpKey(src, k), dumpKey(dst, k); a != b {
				t.Fatalf("after %q (effects %q), key %s:\n server  %s\n replica %s", args, effects, k, a, b)
			}
		}
	}
}

func TestHashEffectsReplay(t *testing.T) {
	keys := []string{"h1", "h2"}
	replayCheck(t, keys, func(r *rand.Rand) []string {
		k := keys[r.IntN(len(keys))]
		f := func() string { return "f" + strconv.Itoa(r.IntN(25)) }
		v := func() string { return strings.Repeat("v", r.IntN(70)) }
		switch r.IntN(9) {
		case 0:
			args := []string{"HSET", k}
			for n := 1 + r.IntN(3); n > 0; n-- {
				args = append(args, f(), v())
			}
			return args
		case 1:
			return []string{"HMSET", k, f(), v()}
		case 2:
			return []string{"HSETNX", k, f(), v()}
		case 3, 4:
			args := []string{"HDEL", k}
			for n := 1 + r.IntN(4); n > 0; n-- {
				args = append(args, f())
			}
			return args
		case 5:
			return []string{"HINCRBY", k, "n" + strconv.Itoa(r.IntN(3)), strconv.Itoa(r.IntN(100) - 50)}
		case 6:
			return []string{"HINCRBYFLOAT", k, "x" + strconv.Itoa(r.IntN(3)), strconv.FormatFloat(r.Float64()*10-5, 'f', 3, 64)}
		case 7:
			return []string{"EXPIRE", k, "100"}
		default:
			return []string{"HGETALL", k}
		}
	})
}

func TestHRandFieldShapes(t *testing.T) {
	r := newEffectRecorder(t)
	r.run("HSET", "h", "a", "1", "b", "2", "c", "3")
	fields := map[string]string{"a": "1", "b": "2", "c": "3"}
	for _, count := range []int{1, 2, 3, 10, -1, -7} {
		for _, proto := range []int{2, 3} {
			r.s.setProto(proto)
			reply, _ := r.run("HRANDFIELD", "h", strconv.Itoa(count), "WITHVALUES")
			n := count
			if n < 0 {
				n = -n
			}
			if n > 3 && count > 0 {
				n = 3
			}
			var want string
			if proto == 2 {
				want = "*" + strconv.Itoa(2*n) + "\r\n"
			} else {
				want = "*" + strconv.Itoa(n) + "\r\n"
			}
			if !strings.HasPrefix(reply, want) {
				t.Fatalf("RESP%d count %d: reply %q, want header %q", proto, count, reply, want)
			}
			// Every pick is a real field with its value, and positive
			// counts never repeat a field.
			parts := strings.Split(reply, "\r\n")
			var picked []string
			for i := 1; i < len(parts)-1; i++ {
				if proto == 3 && parts[i] == "*2" {
					continue
				}
				if strings.HasPrefix(parts[i], "$") {
					continue
				}
				picked = append(picked, parts[i])
			}
			if len(picked) != 2*n {
				t.Fatalf("RESP%d count %d: %d strings in %q", proto, count, len(picked), reply)
			}
			seen := map[string]bool{}
			for i := 0; i < len(picked); i += 2 {
				if fields[picked[i]] != picked[i+1] {
					t.Fatalf("RESP%d count %d: pair %s=%s is not in the hash", proto, count, picked[i], picked[i+1])
				}
				if count > 0 && seen[picked[i]] {
					t.Fatalf("RESP%d count %d: %s repeated", proto, count, picked[i])
				}
				seen[picked[i]] = true
			}
		}
	}
}

// TestHScanLargeHash walks a hash past the listpack limit with a small
// count: the cursor must end at 0 with every field returned.
func TestHScanLargeHash(t *testing.T) {
	r := newEffectRecorder(t)
	const n = 1000
	for i := 0; i < n; i++ {
		r.run("HSET", "big", "f"+strconv.Itoa(i), "v")
	}
	seen := map[string]bool{}
	cursor := "0"
	for calls := 0; ; calls++ {
		if calls > n {
			t.Fatal("HSCAN does not end")
		}
		reply, _ := r.run("HSCAN", "big", cursor, "COUNT", "7")
		parts := strings.Split(reply, "\r\n")
		cursor = parts[2]
		for i := 5; i < len(parts); i += 4 {
			seen[parts[i]] = true
		}
		if cursor == "0" {
			break
		}
	}
	if len(seen) != n {
		t.Fatalf("HSCAN returned %d of %d fields", len(seen), n)
	}
}

func TestHRandFieldRefusesHugeNegativeCount(t *testing.T) {
	r := newEffectRecorder(t)
	r.run("HSET", "h", "a", "1")
	reply, _ := r.run("HRANDFIELD", "h", "-9223372036854775807")
	if reply != "-"+errValueRange+"\r\n" {
		t.Fatalf("reply %q", reply)
	}
}

// plainSession returns a session of a server with no effect hooks but its
// own, for benchmarks.
func plainSession(tb testing.TB) *Session {
	s, err := New(DefaultConfig()).NewSession(nil, false)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// execStrings runs one command on s and returns its reply.
func execStrings(s *Session, args ...string) string {
	s.W.B = s.W.B[:0]
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	s.Exec(b)
	return string(s.W.B)
}

// BenchmarkHashCommands measures the common hash commands through Exec.
func BenchmarkHashCommands(b *testing.B) {
	s := plainSession(b)
	execStrings(s, "HSET", "h", "name", "value", "other", "x")
	for _, cmd := range [][]string{
		{"HSET", "h", "name", "value"},
		{"HGET", "h", "name"},
		{"HINCRBY", "h", "n", "1"},
		{"HGETALL", "h"},
	} {
		args := make([][]byte, len(cmd))
		for i, a := range cmd {
			args[i] = []byte(a)
		}
		b.Run(cmd[0], func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				s.W.B = s.W.B[:0]
				s.Exec(args)
			}
		})
	}
}
