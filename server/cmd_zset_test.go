package server

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestZSetEffects(t *testing.T) {
	runSteps(t, newEffectRecorder(t), []effectStep{
		{[]string{"ZADD", "z", "1", "a", "2.5", "b"}, ":2\r\n", [][]string{{"ZADD", "z", "1", "a", "2.5", "b"}}},
		{[]string{"ZADD", "z", "1", "a", "3", "b", "0.1", "c"}, ":1\r\n", [][]string{{"ZADD", "z", "3", "b", "0.1", "c"}}},
		{[]string{"ZADD", "z", "NX", "9", "a"}, ":0\r\n", nil},
		{[]string{"ZADD", "z", "XX", "CH", "9", "a", "9", "new"}, ":1\r\n", [][]string{{"ZADD", "z", "9", "a"}}},
		{[]string{"ZADD", "z", "GT", "1", "a"}, ":0\r\n", nil},
		{[]string{"ZADD", "f", "INCR", "1e300", "a"}, "$23\r\n1.0000000000000001e+300\r\n", [][]string{{"ZADD", "f", "1e+300", "a"}}},
		{[]string{"ZADD", "f", "INCR", "inf", "a"}, "$3\r\ninf\r\n", [][]string{{"ZADD", "f", "inf", "a"}}},
		{[]string{"ZADD", "f", "INCR", "-inf", "a"}, "-" + errZNaN + "\r\n", nil},
		{[]string{"ZADD", "f", "XX", "INCR", "1", "b"}, "$-1\r\n", nil},
		{[]string{"ZINCRBY", "z", "-1.5", "b"}, "$3\r\n1.5\r\n", [][]string{{"ZADD", "z", "1.5", "b"}}},
		{[]string{"ZINCRBY", "z", "0", "b"}, "$3\r\n1.5\r\n", nil},
		{[]string{"ZREM", "z", "b", "nope", "b"}, ":1\r\n", [][]string{{"ZREM", "z", "b"}}},
		{[]string{"ZREM", "z", "nope"}, ":0\r\n", nil},
		{[]string{"ZADD", "z", "1", "m1", "2", "m2", "3", "m3", "4", "m4"}, ":4\r\n", [][]string{{"ZADD", "z", "1", "m1", "2", "m2", "3", "m3", "4", "m4"}}},
		{[]string{"ZPOPMIN", "z", "2"}, "", [][]string{{"ZREM", "z", "c", "m1"}}},
		{[]string{"ZPOPMAX", "z"}, "", [][]string{{"ZREM", "z", "a"}}},
		{[]string{"ZREMRANGEBYSCORE", "z", "(2", "+inf"}, ":2\r\n", [][]string{{"ZREM", "z", "m3", "m4"}}},
		{[]string{"ZREMRANGEBYRANK", "z", "5", "10"}, ":0\r\n", nil},
		{[]string{"ZADD", "lex", "0", "a", "0", "b", "0", "c"}, ":3\r\n", [][]string{{"ZADD", "lex", "0", "a", "0", "b", "0", "c"}}},
		{[]string{"ZREMRANGEBYLEX", "lex", "[b", "+"}, ":2\r\n", [][]string{{"ZREM", "lex", "b", "c"}}},
		{[]string{"ZUNIONSTORE", "dst", "2", "z", "lex", "WEIGHTS", "2", "1"}, ":2\r\n", [][]string{{"DEL", "dst"}, {"ZADD", "dst", "0", "a", "4", "m2"}}},
		{[]string{"ZINTERSTORE", "dst", "2", "z", "lex"}, ":0\r\n", [][]string{{"DEL", "dst"}}},
		{[]string{"ZDIFFSTORE", "dst", "1", "nokey"}, ":0\r\n", nil},
		{[]string{"ZRANGESTORE", "dst", "z", "0", "0"}, ":1\r\n", [][]string{{"DEL", "dst"}, {"ZADD", "dst", "2", "m2"}}},
		{[]string{"ZMPOP", "2", "nokey", "lex", "MIN", "COUNT", "5"}, "", [][]string{{"ZREM", "lex", "a"}}},
		{[]string{"EXISTS", "lex"}, ":0\r\n", nil},
		{[]string{"ZREMRANGEBYRANK", "z", "0", "-1"}, ":1\r\n", [][]string{{"ZREM", "z", "m2"}}},
		{[]string{"EXISTS", "z"}, ":0\r\n", nil},
		{[]string{"ZADD", "neg", "-0", "a"}, ":1\r\n", [][]string{{"ZADD", "neg", "0", "a"}}},
	})
}

// dumpZKey describes a sorted set key exactly: members and scores in order
// (scores as Redis prints them), encoding and expiry.
func dumpZKey(r *effectRecorder, key string) string {
	members, _ := r.run("ZRANGE", key, "0", "-1", "WITHSCORES")
	enc, _ := r.run("OBJECT", "ENCODING", key)
	at, _ := r.s.db.Expiry([]byte(key))
	return members + enc + strconv.FormatInt(at, 10)
}

// TestZSetEffectsReplay runs random sorted set commands on one server,
// applies the effects they report to a second one, and checks after each
// command that every key is the same on both, encoding included.
func TestZSetEffectsReplay(t *testing.T) {
	keys := []string{"z1", "z2", "z3"}
	r := rand.New(rand.NewPCG(21, 22))
	member := func() string {
		if r.IntN(50) == 0 {
			return strings.Repeat("long", 17) // past the listpack value limit
		}
		return "m" + strconv.Itoa(r.IntN(150))
	}
	score := func() string {
		switch r.IntN(12) {
		case 0:
			return "-0"
		case 1:
			return "inf"
		case 2:
			return "0.1"
		}
		return strconv.FormatFloat(float64(r.IntN(200)-100)/8, 'g', -1, 64)
	}
	key := func() string { return keys[r.IntN(len(keys))] }
	replayCheck(t, r, 3000, keys, dumpZKey, func(*rand.Rand) []string {
		k := key()
		var args []string
		switch r.IntN(16) {
		case 0, 1, 2:
			args = []string{"ZADD", k}
			for _, opt := range []string{"NX", "XX", "GT", "LT", "CH"} {
				if r.IntN(8) == 0 {
					args = append(args, opt)
				}
			}
			for n := 1 + r.IntN(6); n > 0; n-- {
				args = append(args, score(), member())
			}
		case 3:
			args = []string{"ZADD", k, "INCR", score(), member()}
		case 4:
			args = []string{"ZINCRBY", k, score(), member()}
		case 5:
			args = []string{"ZREM", k, member(), member()}
		case 6:
			args = []string{"ZPOPMIN", k, strconv.Itoa(r.IntN(4))}
		case 7:
			args = []string{"ZPOPMAX", k}
		case 8:
			args = []string{"ZREMRANGEBYRANK", k, strconv.Itoa(r.IntN(10) - 5), strconv.Itoa(r.IntN(10) - 5)}
		case 9:
			args = []string{"ZREMRANGEBYSCORE", k, "(" + score(), score()}
		case 10:
			args = []string{"ZREMRANGEBYLEX", k, "[" + member(), "(" + member()}
		case 11:
			args = []string{"ZRANGESTORE", k, key(), "0", strconv.Itoa(r.IntN(200)), "REV"}
		case 12:
			op := []string{"ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"}[r.IntN(3)]
			args = []string{op, k, "2", key(), key()}
			if op != "ZDIFFSTORE" {
				args = append(args, "WEIGHTS", score(), score(), "AGGREGATE", []string{"SUM", "MIN", "MAX"}[r.IntN(3)])
			}
		case 13:
			args = []string{"ZMPOP", "2", key(), key(), "MAX", "COUNT", strconv.Itoa(1 + r.IntN(3))}
		case 14:
			args = []string{"EXPIRE", k, "100"}
		default:
			args = []string{"ZRANGE", k, "0", "-1"}
		}
		return args
	})
}

// TestZRankWithScore covers Redis 7.2's ZRANK … WITHSCORE, which the 7.0
// reference server of the differential tests rejects.
func TestZRankWithScore(t *testing.T) {
	r := newEffectRecorder(t)
	r.run("ZADD", "z", "1.5", "a", "2", "b", "3", "c")
	r.run("SET", "s", "v")
	tests := []struct {
		proto int
		args  []string
		reply string
	}{
		{2, []string{"ZRANK", "z", "b", "WITHSCORE"}, "*2\r\n:1\r\n$1\r\n2\r\n"},
		{2, []string{"ZREVRANK", "z", "a", "withscore"}, "*2\r\n:2\r\n$3\r\n1.5\r\n"},
		{3, []string{"ZRANK", "z", "a", "WITHSCORE"}, "*2\r\n:0\r\n,1.5\r\n"},
		{2, []string{"ZRANK", "z", "x", "WITHSCORE"}, "*-1\r\n"},
		{3, []string{"ZRANK", "z", "x", "WITHSCORE"}, "_\r\n"},
		{2, []string{"ZRANK", "nokey", "x", "WITHSCORE"}, "*-1\r\n"},
		{2, []string{"ZRANK", "nokey", "x"}, "$-1\r\n"},
		{2, []string{"ZRANK", "z", "c"}, ":2\r\n"},
		{2, []string{"ZRANK", "z", "a", "WITHSCORES"}, "-ERR syntax error\r\n"},
		{2, []string{"ZRANK", "z", "a", "WITHSCORE", "x"}, "-ERR wrong number of arguments for 'zrank' command\r\n"},
		{2, []string{"ZREVRANK", "z", "a", "WITHSCORE", "x"}, "-ERR wrong number of arguments for 'zrevrank' command\r\n"},
		{2, []string{"ZRANK", "s", "a", "WITHSCORE"}, "-" + errWrongType + "\r\n"},
	}
	for _, tc := range tests {
		r.s.setProto(tc.proto)
		if reply, _ := r.run(tc.args...); reply != tc.reply {
			t.Errorf("RESP%d %q: reply %q, want %q", tc.proto, tc.args, reply, tc.reply)
		}
	}
}

// zscanAll walks a ZSCAN to the end and returns the members seen; between
// calls it runs between(i).
func zscanAll(t *testing.T, r *effectRecorder, key string, count int, between func(i int)) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	cursor := "0"
	for calls := 0; ; calls++ {
		if calls > 10000 {
			t.Fatal("ZSCAN does not end")
		}
		reply, _ := r.run("ZSCAN", key, cursor, "COUNT", strconv.Itoa(count))
		parts := strings.Split(reply, "\r\n")
		cursor = parts[2]
		for i := 5; i+2 < len(parts); i += 4 {
			seen[parts[i]] = true
		}
		if cursor == "0" {
			return seen
		}
		between(calls)
	}
}

// TestZScanLargeSet walks a skip-list set whose members share scores in
// groups, while other members come and go: every member present for the
// whole walk must be returned.
func TestZScanLargeSet(t *testing.T) {
	r := newEffectRecorder(t)
	const n = 2000
	for i := 0; i < n; i++ {
		r.run("ZADD", "big", strconv.Itoa(i%37), "m"+strconv.Itoa(i))
	}
	if enc, _ := r.run("OBJECT", "ENCODING", "big"); enc != "$8\r\nskiplist\r\n" {
		t.Fatalf("encoding %q", enc)
	}
	seen := zscanAll(t, r, "big", 7, func(i int) {
		r.run("ZADD", "big", strconv.Itoa(i%50-10), "extra"+strconv.Itoa(i))
		r.run("ZREM", "big", "extra"+strconv.Itoa(i/2))
	})
	for i := 0; i < n; i++ {
		if !seen["m"+strconv.Itoa(i)] {
			t.Fatalf("m%d was not returned", i)
		}
	}
	// A small set comes whole with cursor 0, in order, with MATCH applied.
	r.run("ZADD", "small", "2", "b", "1", "a", "3", "ab")
	if reply, _ := r.run("ZSCAN", "small", "0", "MATCH", "a*"); reply != "*2\r\n$1\r\n0\r\n*4\r\n$1\r\na\r\n$1\r\n1\r\n$2\r\nab\r\n$1\r\n3\r\n" {
		t.Fatalf("small ZSCAN: %q", reply)
	}
}

func TestZRandMember(t *testing.T) {
	r := newEffectRecorder(t)
	r.run("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e", "6", "f", "7", "g", "8", "h", "9", "i", "10", "j")
	scores := map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6", "g": "7", "h": "8", "i": "9", "j": "10"}
	for _, count := range []int{1, 2, 3, 4, 9, -1, -5, -30} {
		reply, _ := r.run("ZRANDMEMBER", "z", strconv.Itoa(count), "WITHSCORES")
		parts := strings.Split(reply, "\r\n")
		n := count
		if n < 0 {
			n = -n
		}
		if parts[0] != "*"+strconv.Itoa(2*n) {
			t.Fatalf("count %d: reply %q", count, reply)
		}
		seen := map[string]bool{}
		for i := 2; i+2 < len(parts); i += 4 {
			m := parts[i]
			if scores[m] != parts[i+2] {
				t.Fatalf("count %d: %s with score %s", count, m, parts[i+2])
			}
			if count > 0 && seen[m] {
				t.Fatalf("count %d: %s repeated in %q", count, m, reply)
			}
			seen[m] = true
		}
	}
	if reply, _ := r.run("ZRANDMEMBER", "z", "-4611686018427387903"); reply != "-"+errValueRange+"\r\n" {
		t.Fatalf("huge negative count: %q", reply)
	}
	if reply, _ := r.run("ZRANDMEMBER", "z"); len(reply) < 4 || scores[strings.Split(reply, "\r\n")[1]] == "" {
		t.Fatalf("single member: %q", reply)
	}
}

// TestZPopKeyed covers the functions the blocking pops call.
func TestZPopKeyed(t *testing.T) {
	r := newEffectRecorder(t)
	r.run("ZADD", "z", "1", "a", "2", "b", "3", "c")
	r.run("SET", "s", "v")
	tests := []struct {
		name    string
		call    func() bool
		served  bool
		reply   string
		effects [][]string
	}{
		{"missing", func() bool { return zpopKeyed(r.s, &r.s.W, []byte("nokey"), false) }, false, "", nil},
		{"wrong type", func() bool { return zpopKeyed(r.s, &r.s.W, []byte("s"), false) }, true, "-" + errWrongType + "\r\n", nil},
		{"min", func() bool { return zpopKeyed(r.s, &r.s.W, []byte("z"), false) }, true, "*3\r\n$1\r\nz\r\n$1\r\na\r\n$1\r\n1\r\n", [][]string{{"ZREM", "z", "a"}}},
		{"max", func() bool { return zpopKeyed(r.s, &r.s.W, []byte("z"), true) }, true, "*3\r\n$1\r\nz\r\n$1\r\nc\r\n$1\r\n3\r\n", [][]string{{"ZREM", "z", "c"}}},
		{"mpop missing", func() bool { return zmpopKeyed(r.s, &r.s.W, []byte("nokey"), false, 5) }, false, "", nil},
		{"mpop wrong type", func() bool { return zmpopKeyed(r.s, &r.s.W, []byte("s"), false, 5) }, true, "-" + errWrongType + "\r\n", nil},
		{"mpop", func() bool { return zmpopKeyed(r.s, &r.s.W, []byte("z"), true, 5) }, true, "*2\r\n$1\r\nz\r\n*1\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n", [][]string{{"ZREM", "z", "b"}}},
		{"emptied", func() bool { return zmpopKeyed(r.s, &r.s.W, []byte("z"), true, 5) }, false, "", nil},
	}
	for _, tc := range tests {
		r.s.W.B = r.s.W.B[:0]
		before := len(r.effects)
		if served := tc.call(); served != tc.served {
			t.Errorf("%s: served %v", tc.name, served)
		}
		if got := string(r.s.W.B); got != tc.reply {
			t.Errorf("%s: reply %q, want %q", tc.name, got, tc.reply)
		}
		effects := r.effects[before:]
		if len(effects) != len(tc.effects) || (len(effects) > 0 && !slices.Equal(effects[0], tc.effects[0])) {
			t.Errorf("%s: effects %q, want %q", tc.name, effects, tc.effects)
		}
	}
	if reply, _ := r.run("EXISTS", "z"); reply != ":0\r\n" {
		t.Fatal("an emptied sorted set was not deleted")
	}
}

// TestZAppendScore checks that effect scores parse back to the same
// double, -0 included, and that whole numbers below 2^53 are integers.
func TestZAppendScore(t *testing.T) {
	tests := []struct {
		f    float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "-0"},
		{3479099956230698, "3479099956230698"},
		{-42, "-42"},
		{1 << 53, "9.007199254740992e+15"},
		{1e20, "1e+20"},
		{0.5, "0.5"},
		{-1.25e-7, "-1.25e-07"},
		{math.Inf(1), "inf"},
		{math.Inf(-1), "-inf"},
	}
	for _, tc := range tests {
		got := string(zappendScore(nil, tc.f))
		if got != tc.want {
			t.Errorf("zappendScore(%v) = %q, want %q", tc.f, got, tc.want)
		}
		if back, ok := zparseScore([]byte(got)); !ok || math.Float64bits(back) != math.Float64bits(tc.f) {
			t.Errorf("%q parses back as %v, %v; want %v", got, back, ok, tc.f)
		}
	}
}

// TestParseScoreMatchesParseFloat checks the quick exact conversion
// against strconv's parser on decimal numbers of every shape near its
// limits: mantissas around 2^53 and 20 digits, exponents around ±22,
// leading zeros, points and signs.
func TestParseScoreMatchesParseFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	mantissas := []string{"0", "1", "000000123456", "9007199254740991", "9007199254740992", "9007199254740993",
		"12345678901234567890", "99999999999999999999", "4.9", "0.000001", "123.456", ".5", "5."}
	for range 20000 {
		var mant string
		if r.IntN(3) == 0 {
			mant = mantissas[r.IntN(len(mantissas))]
		} else {
			mant = strconv.FormatUint(r.Uint64()>>r.IntN(64), 10)
			if p := r.IntN(len(mant) + 1); r.IntN(2) == 0 {
				mant = mant[:p] + "." + mant[p:]
			}
		}
		lit := mant
		if r.IntN(2) == 0 {
			lit += "e" + strconv.Itoa(r.IntN(60)-30)
		}
		if r.IntN(4) == 0 {
			lit = "-" + lit
		}
		want, err := strconv.ParseFloat(lit, 64)
		if err != nil {
			continue // "." alone
		}
		got, ok := zparseScore([]byte(lit))
		if !ok || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("zparseScore(%q) = %v, %v; strconv reads %v", lit, got, ok, want)
		}
	}
}

func TestParseScore(t *testing.T) {
	negZero := math.Copysign(0, -1)
	tests := []struct {
		in    string
		score float64 // NaN: rejected
		bound float64 // NaN: rejected as a range end
	}{
		{"1", 1, 1},
		{"-2.5", -2.5, -2.5},
		{"+5", 5, 5},
		{".5", 0.5, 0.5},
		{"5.", 5, 5},
		{"1e5", 1e5, 1e5},
		{"1E-2", 0.01, 0.01},
		{"5e", math.NaN(), math.NaN()},
		{"inf", math.Inf(1), math.Inf(1)},
		{"-Infinity", math.Inf(-1), math.Inf(-1)},
		{"+INF", math.Inf(1), math.Inf(1)},
		{"infx", math.NaN(), math.NaN()},
		{"nan", math.NaN(), math.NaN()},
		{"-nan(123)", math.NaN(), math.NaN()},
		{"0x10", 16, 16},
		{"0x1p3", 8, 8},
		{"0x", math.NaN(), math.NaN()},
		{"1_0", math.NaN(), math.NaN()},
		{"", math.NaN(), 0},
		{" 1", math.NaN(), 1},
		{"1 ", math.NaN(), math.NaN()},
		{" ", math.NaN(), math.NaN()},
		{"1e400", math.NaN(), math.Inf(1)},
		{"-1e400", math.NaN(), math.Inf(-1)},
		{"1e-400", math.NaN(), 0},
		{"4e-320", 4e-320, 4e-320},
		{"-0", negZero, negZero},
		{"1\x002", math.NaN(), 1},
		{"abc", math.NaN(), math.NaN()},
	}
	same := func(a, b float64) bool {
		return (math.IsNaN(a) && math.IsNaN(b)) || (a == b && math.Signbit(a) == math.Signbit(b))
	}
	for _, tc := range tests {
		got, ok := zparseScore([]byte(tc.in))
		if !ok {
			got = math.NaN()
		}
		if !same(got, tc.score) {
			t.Errorf("zparseScore(%q) = %v, %v; want %v", tc.in, got, ok, tc.score)
		}
		v, ex, ok := zparseScoreBound([]byte(tc.in))
		if !ok {
			v = math.NaN()
		}
		if !same(v, tc.bound) || ex {
			t.Errorf("zparseScoreBound(%q) = %v, %v, %v; want %v", tc.in, v, ex, ok, tc.bound)
		}
		if v, ex, ok := zparseScoreBound([]byte("(" + tc.in)); (ok && !ex) || !same(map[bool]float64{true: v, false: math.NaN()}[ok], tc.bound) {
			t.Errorf("zparseScoreBound(%q) = %v, %v, %v; want exclusive %v", "("+tc.in, v, ex, ok, tc.bound)
		}
	}
}

// BenchmarkZSetCommands measures common sorted set commands through Exec
// on a set of 10 000 members.
func BenchmarkZSetCommands(b *testing.B) {
	s := plainSession(b)
	for i := 0; i < 10000; i++ {
		run(s, "ZADD", "z", strconv.Itoa(i), "member:"+strconv.Itoa(i))
	}
	for _, cmd := range [][]string{
		{"ZADD", "z", "5000.5", "member:5000"},
		{"ZINCRBY", "z", "1", "member:42"},
		{"ZSCORE", "z", "member:7000"},
		{"ZRANK", "z", "member:7000"},
		{"ZRANGE", "z", "5000", "5009", "WITHSCORES"},
		{"ZRANGEBYSCORE", "z", "(100", "+inf", "LIMIT", "0", "10"},
		{"ZCOUNT", "z", "100", "9000"},
	} {
		args := toArgs(cmd...)
		b.Run(cmd[0], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.W.B = s.W.B[:0]
				s.Exec(args)
			}
		})
	}
}

// BenchmarkExecZAdd is redis-benchmark's ZADD without -r: the same member
// and score every time, into a one-member (packed) set.
func BenchmarkExecZAdd(b *testing.B) {
	benchExec(b, nil, "ZADD", "myzset", "0", "element:__rand_int__")
}

// BenchmarkExecZAddSmall moves a member within a packed set of ten, as a
// per-user leaderboard sees it.
func BenchmarkExecZAddSmall(b *testing.B) {
	s := plainSession(b)
	for j := 0; j < 10; j++ {
		s.Exec(toArgs("ZADD", "lb", strconv.Itoa(j*10), "player:"+strconv.Itoa(j)))
	}
	args := toArgs("ZADD", "lb", "0", "player:3")
	var buf [20]byte
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		args[2] = strconv.AppendInt(buf[:0], int64(i%100), 10)
		s.W.B = s.W.B[:0]
		s.Exec(args)
	}
}

// TestZSetEncodingConfig checks that CONFIG SET of zset-max-listpack-entries
// and -value (and their ziplist aliases) decides the encoding of the sets
// written after it, that a converted set stays a skip list, and that
// RESTORE encodes by the limits of the moment as Redis's load does.
func TestZSetEncodingConfig(t *testing.T) {
	s := plainSession(t)
	enc := func(key string) string { return run(s, "OBJECT", "ENCODING", key) }
	steps := []struct {
		args []string
		key  string
		want string
	}{
		{[]string{"CONFIG", "SET", "zset-max-listpack-entries", "2"}, "", ""},
		{[]string{"ZADD", "z", "1", "a", "2", "b"}, "z", bulk("listpack")},
		{[]string{"ZADD", "z", "3", "a"}, "z", bulk("listpack")},
		{[]string{"ZADD", "z", "3", "c"}, "z", bulk("skiplist")},
		{[]string{"CONFIG", "SET", "zset-max-ziplist-entries", "128"}, "", ""},
		{[]string{"ZREM", "z", "c", "b"}, "z", bulk("skiplist")},
		{[]string{"CONFIG", "SET", "zset-max-ziplist-value", "3"}, "", ""},
		{[]string{"ZADD", "v", "1", "abc"}, "v", bulk("listpack")},
		{[]string{"ZADD", "v", "1", "abcd"}, "v", bulk("skiplist")},
		{[]string{"ZADD", "w", "1", "abcd"}, "w", bulk("skiplist")},
		{[]string{"CONFIG", "SET", "zset-max-listpack-value", "64"}, "", ""},
		{[]string{"ZRANGESTORE", "r", "v", "0", "-1"}, "r", bulk("listpack")},
	}
	for _, st := range steps {
		rep := run(s, st.args...)
		if strings.HasPrefix(rep, "-") {
			t.Fatalf("%v: %q", st.args, rep)
		}
		if st.key != "" && enc(st.key) != st.want {
			t.Fatalf("after %v: %s is %q, want %q", st.args, st.key, enc(st.key), st.want)
		}
	}
	if got := run(s, "ZRANGE", "z", "0", "-1", "WITHSCORES"); got != "*2\r\n"+bulk("a")+bulk("3") {
		t.Fatalf("z holds %q", got)
	}

	// RESTORE re-encodes: the skip list z comes back packed, then a
	// packed set comes back as a skip list under a lower limit.
	dump := run(s, "DUMP", "z")
	payload := dump[strings.Index(dump, "\r\n")+2 : len(dump)-2]
	if rep := run(s, "RESTORE", "z2", "0", payload); rep != "+OK\r\n" {
		t.Fatalf("RESTORE: %q", rep)
	}
	if enc("z2") != bulk("listpack") {
		t.Fatalf("restored skip list of one member is %q", enc("z2"))
	}
	run(s, "CONFIG", "SET", "zset-max-listpack-entries", "0")
	if rep := run(s, "RESTORE", "z3", "0", payload); rep != "+OK\r\n" {
		t.Fatalf("RESTORE: %q", rep)
	}
	if enc("z3") != bulk("skiplist") {
		t.Fatalf("restored under entries 0: %q", enc("z3"))
	}
}
