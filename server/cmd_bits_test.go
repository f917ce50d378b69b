package server

import (
	"bytes"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/recached/recached/server/keyspace"
)

// naiveBit is the reference for the bit helpers: bit i of b, MSB first.
func naiveBit(b []byte, i int64) byte { return b[i/8] >> (7 - i%8) & 1 }

func TestParseBitOffset(t *testing.T) {
	tests := []struct {
		arg   string
		hash  bool
		width int64
		want  uint64
		ok    bool
	}{
		{"0", false, 0, 0, true},
		{"7", false, 0, 7, true},
		{"4294967295", false, 0, 4294967295, true},
		{"4294967296", false, 0, 0, false},
		{"-1", false, 0, 0, false},
		{"x", false, 0, 0, false},
		{"", false, 0, 0, false},
		{"01", false, 0, 0, false},
		{"#1", false, 0, 0, false},
		{"#1", true, 8, 8, true},
		{"#3", true, 4, 12, true},
		{"#0", true, 64, 0, true},
		{"#-1", true, 8, 0, false},
		{"#", true, 8, 0, false},
		{"#536870911", true, 8, 4294967288, true},
		{"#536870912", true, 8, 0, false},
		{"#67108864", true, 64, 0, false},
		{"9223372036854775807", false, 0, 0, false},
		{"18446744073709551616", false, 0, 0, false},
	}
	for _, tc := range tests {
		got, ok := parseBitOffset([]byte(tc.arg), tc.hash, tc.width)
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("parseBitOffset(%q, %v, %d) = %d, %v; want %d, %v", tc.arg, tc.hash, tc.width, got, ok, tc.want, tc.ok)
		}
	}
}

func TestPopcountAndCountBits(t *testing.T) {
	tests := []struct {
		s           string
		first, last int64
		want        int64
	}{
		{"foobar", 0, 47, 26},
		{"foobar", 0, 7, 4},
		{"foobar", 8, 15, 6},
		{"foobar", 5, 30, 17},
		{"\xff", 0, 0, 1},
		{"\xff", 3, 5, 3},
		{"\x0f\xf0", 4, 11, 8},
		{"\x0f\xf0", 5, 10, 6},
		{"\x80\x01", 1, 14, 0},
	}
	for _, tc := range tests {
		if got := countBits([]byte(tc.s), tc.first, tc.last); got != tc.want {
			t.Errorf("countBits(%q, %d, %d) = %d; want %d", tc.s, tc.first, tc.last, got, tc.want)
		}
	}
	// Every range of a buffer long enough to use the word loops, against
	// the bit-by-bit reference.
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 77)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	n := int64(len(b)) * 8
	for first := int64(0); first < n; first += 7 {
		var want int64
		for last := first; last < n; last++ {
			want += int64(naiveBit(b, last))
			if got := countBits(b, first, last); got != want {
				t.Fatalf("countBits(.., %d, %d) = %d; want %d", first, last, got, want)
			}
		}
	}
	if got, want := popcount(b), countBits(b, 0, n-1); got != want {
		t.Fatalf("popcount = %d; countBits = %d", got, want)
	}
}

func TestFindBit(t *testing.T) {
	tests := []struct {
		s           string
		bit         byte
		first, last int64
		want        int64
	}{
		{"\xff\xf0\x00", 0, 0, 23, 12},
		{"\xff\xf0\x00", 1, 0, 23, 0},
		{"\xff\xf0\x00", 1, 12, 23, -1},
		{"\xff\xf0\x00", 0, 4, 11, -1},
		{"\x00\x00\x01", 1, 0, 23, 23},
		{"\x00\x00\x01", 1, 0, 22, -1},
		{"\xff\xff", 0, 0, 15, -1},
		{"\x00", 0, 3, 3, 3},
		{"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x10", 1, 1, 87, 83},
		{"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xef", 0, 9, 87, 83},
	}
	for _, tc := range tests {
		if got := findBit([]byte(tc.s), tc.bit, tc.first, tc.last); got != tc.want {
			t.Errorf("findBit(%q, %d, %d, %d) = %d; want %d", tc.s, tc.bit, tc.first, tc.last, got, tc.want)
		}
	}
	// Sparse buffers exercise the word scan; compare with the reference.
	r := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 50; round++ {
		b := make([]byte, 40)
		for k := 0; k < 3; k++ {
			b[r.IntN(len(b))] = byte(1 << r.IntN(8))
		}
		if round%2 == 1 {
			for i := range b {
				b[i] = ^b[i]
			}
		}
		bit := byte(1 - round%2)
		n := int64(len(b)) * 8
		first, last := r.Int64N(n), r.Int64N(n)
		if first > last {
			first, last = last, first
		}
		want := int64(-1)
		for i := first; i <= last; i++ {
			if naiveBit(b, i) == bit {
				want = i
				break
			}
		}
		if got := findBit(b, bit, first, last); got != want {
			t.Fatalf("findBit(%x, %d, %d, %d) = %d; want %d", b, bit, first, last, got, want)
		}
	}
}

func TestClampRange(t *testing.T) {
	tests := []struct{ start, end, total, ws, we int64 }{
		{0, -1, 6, 0, 5},
		{-2, -1, 6, 4, 5},
		{-100, 100, 6, 0, 5},
		{3, 2, 6, 3, 2},
		{100, 200, 6, 100, 5},
		{0, -1, 0, 0, -1},
		{math.MinInt64, math.MaxInt64, 48, 0, 47},
	}
	for _, tc := range tests {
		s, e := clampRange(tc.start, tc.end, tc.total)
		if s != tc.ws || e != tc.we {
			t.Errorf("clampRange(%d, %d, %d) = %d, %d; want %d, %d", tc.start, tc.end, tc.total, s, e, tc.ws, tc.we)
		}
	}
}

func TestIndexRange(t *testing.T) {
	tests := []struct {
		start, stop int64
		n           int
		from, to    int
		ok          bool
	}{
		{0, -1, 6, 0, 5, true},
		{-2, -1, 6, 4, 5, true},
		{-100, 100, 6, 0, 5, true},
		{3, 2, 6, 0, 0, false},
		{6, 10, 6, 0, 0, false},
		{0, -100, 6, 0, 0, false},
		{0, -1, 0, 0, 0, false},
		{math.MinInt64, math.MaxInt64, 48, 0, 47, true},
	}
	for _, tc := range tests {
		from, to, ok := indexRange(tc.start, tc.stop, tc.n)
		if from != tc.from || to != tc.to || ok != tc.ok {
			t.Errorf("indexRange(%d, %d, %d) = %d, %d, %v; want %d, %d, %v", tc.start, tc.stop, tc.n, from, to, ok, tc.from, tc.to, tc.ok)
		}
	}
}

func TestBitfieldFields(t *testing.T) {
	tests := []struct {
		s      string
		off    uint64
		width  uint
		u      uint64
		signed int64
	}{
		{"\xff", 0, 8, 255, -1},
		{"\x80", 0, 1, 1, -1},
		{"\x40", 0, 2, 1, 1},
		{"\x0f\xf0", 4, 8, 255, -1},
		{"\x0f\xf0", 4, 4, 15, -1},
		{"\x0f\xf0", 3, 4, 7, 7},
		{"\x12\x34", 0, 16, 0x1234, 0x1234},
		{"\xff", 4, 8, 0xf0, -16},
		{"", 0, 64, 0, 0},
		{"\xff\xff\xff\xff\xff\xff\xff\xff", 0, 64, math.MaxUint64, -1},
		{"\x7f\xff\xff\xff\xff\xff\xff\xff", 0, 63, 1<<62 - 1, 1<<62 - 1},
		{"\x7f\xff\xff\xff\xff\xff\xff\xff\x80", 1, 64, math.MaxUint64, -1},
	}
	for _, tc := range tests {
		got := getField([]byte(tc.s), tc.off, tc.width)
		if got != tc.u {
			t.Errorf("getField(%q, %d, %d) = %d; want %d", tc.s, tc.off, tc.width, got, tc.u)
		}
		if sv := signExtend(got, tc.width); sv != tc.signed {
			t.Errorf("signExtend(%d, %d) = %d; want %d", got, tc.width, sv, tc.signed)
		}
		b := make([]byte, (tc.off+uint64(tc.width)+7)/8)
		setField(b, tc.off, tc.width, tc.u)
		if got := getField(b, tc.off, tc.width); got != tc.u {
			t.Errorf("setField then getField at %d/%d = %d; want %d", tc.off, tc.width, got, tc.u)
		}
		if c := countBits(b, 0, int64(len(b))*8-1); c != int64(bits.OnesCount64(tc.u)) {
			t.Errorf("setField(%d, %d, %d) touched bits outside the field: %x", tc.off, tc.width, tc.u, b)
		}
	}
}

func TestAddUnsigned(t *testing.T) {
	tests := []struct {
		value uint64
		incr  int64
		width uint
		pol   overflow
		want  uint64
		over  bool
	}{
		{100, 100, 8, overflowWrap, 200, false},
		{255, 1, 8, overflowWrap, 0, true},
		{255, 1, 8, overflowSat, 255, true},
		{0, -1, 8, overflowWrap, 255, true},
		{0, -1, 8, overflowSat, 0, true},
		{10, -300, 8, overflowSat, 0, true},
		{10, 300, 8, overflowWrap, 54, true},
		{math.MaxUint64, 0, 8, overflowSat, 255, true}, // SET u8 -1 under SAT
		{math.MaxUint64, 0, 8, overflowWrap, 255, true},
		{257, 0, 8, overflowWrap, 1, true},
		{1<<63 - 1, 1, 63, overflowWrap, 0, true},
		{0, math.MinInt64, 63, overflowSat, 0, true},
		{0, 1, 1, overflowWrap, 1, false},
		{1, 1, 1, overflowSat, 1, true},
	}
	for _, tc := range tests {
		got, over := addUnsigned(tc.value, tc.incr, tc.width, tc.pol)
		if over != tc.over || got != tc.want {
			t.Errorf("addUnsigned(%d, %d, u%d, %d) = %d, %v; want %d, %v", tc.value, tc.incr, tc.width, tc.pol, got, over, tc.want, tc.over)
		}
	}
}

func TestAddSigned(t *testing.T) {
	tests := []struct {
		value, incr int64
		width       uint
		pol         overflow
		want        int64
		over        bool
	}{
		{100, 27, 8, overflowWrap, 127, false},
		{100, 100, 8, overflowWrap, -56, true},
		{100, 100, 8, overflowSat, 127, true},
		{-100, -100, 8, overflowSat, -128, true},
		{-100, -100, 8, overflowWrap, 56, true},
		{200, 0, 8, overflowSat, 127, true},
		{-200, 0, 8, overflowSat, -128, true},
		// Redis's range arithmetic wraps here, so the minimum saturates
		// to the maximum.
		{math.MinInt64, 0, 8, overflowSat, 127, true},
		{math.MinInt64, 0, 8, overflowWrap, 0, true},
		{math.MaxInt64, 1, 64, overflowWrap, math.MinInt64, true},
		{math.MaxInt64, 1, 64, overflowSat, math.MaxInt64, true},
		{math.MinInt64, -1, 64, overflowSat, math.MinInt64, true},
		{math.MinInt64, -1, 64, overflowWrap, math.MaxInt64, true},
		{-1, 1, 64, overflowFail, 0, false},
		{0, 1, 1, overflowSat, 0, true},
		{-1, 1, 1, overflowWrap, 0, false},
	}
	for _, tc := range tests {
		got, over := addSigned(tc.value, tc.incr, tc.width, tc.pol)
		if over != tc.over || !over && got != tc.want || over && tc.pol != overflowFail && got != tc.want {
			t.Errorf("addSigned(%d, %d, i%d, %d) = %d, %v; want %d, %v", tc.value, tc.incr, tc.width, tc.pol, got, over, tc.want, tc.over)
		}
	}
}

func TestParseBitfieldType(t *testing.T) {
	tests := []struct {
		arg    string
		signed bool
		width  uint
		ok     bool
	}{
		{"i8", true, 8, true},
		{"u8", false, 8, true},
		{"i64", true, 64, true},
		{"u63", false, 63, true},
		{"u64", false, 0, false},
		{"i65", false, 0, false},
		{"i0", false, 0, false},
		{"I8", false, 0, false},
		{"i08", false, 0, false},
		{"i", false, 0, false},
		{"", false, 0, false},
		{"x8", false, 0, false},
	}
	for _, tc := range tests {
		signed, width, ok := parseBitfieldType([]byte(tc.arg))
		if ok != tc.ok || ok && (signed != tc.signed || width != tc.width) {
			t.Errorf("parseBitfieldType(%q) = %v, %d, %v; want %v, %d, %v", tc.arg, signed, width, ok, tc.signed, tc.width, tc.ok)
		}
	}
}

func TestApplyBitop(t *testing.T) {
	tests := []struct {
		op       bitop
		dst, src string
		want     string
	}{
		{bitopAnd, "foobar", "abcdef", "`bc`ab"},
		{bitopOr, "foobar", "abcdef", "goofev"},
		{bitopXor, "foobar", "abcdef", "\x07\r\x0c\x06\x04\x14"},
		{bitopAnd, "foobar", "ab", "`b\x00\x00\x00\x00"},
		{bitopOr, "fo\x00\x00", "ab", "go\x00\x00"},
		{bitopNot, "\x00\x00", "\x0f\xf0", "\xf0\x0f"},
		{bitopAnd, "0123456789abcdefXY", "0123456789abcdefXY", "0123456789abcdefXY"},
		{bitopXor, "0123456789abcdefXY", "0123456789abcdefXY", "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"},
	}
	for _, tc := range tests {
		dst := []byte(tc.dst)
		applyBitop(tc.op, dst, []byte(tc.src))
		if string(dst) != tc.want {
			t.Errorf("applyBitop(%d, %q, %q) = %q; want %q", tc.op, tc.dst, tc.src, dst, tc.want)
		}
	}
}

func TestLCSHelpers(t *testing.T) {
	tests := []struct {
		a, b string
		want string
		runs []lcsMatch
	}{
		{"ohmytext", "mynewtext", "mytext", []lcsMatch{{4, 7, 5, 8}, {2, 3, 0, 1}}},
		{"abc", "xyz", "", nil},
		{"", "abc", "", nil},
		{"aaaa", "aa", "aa", []lcsMatch{{2, 3, 0, 1}}},
		{"abcXdefYghi", "abcdefghi", "abcdefghi", []lcsMatch{{8, 10, 6, 8}, {4, 6, 3, 5}, {0, 2, 0, 2}}},
	}
	for _, tc := range tests {
		a, b := []byte(tc.a), []byte(tc.b)
		got, runs := lcsWalk(a, b, lcsTable(a, b))
		if string(got) != tc.want || len(runs) != len(tc.runs) {
			t.Errorf("lcsWalk(%q, %q) = %q, %v; want %q, %v", tc.a, tc.b, got, runs, tc.want, tc.runs)
			continue
		}
		for i := range runs {
			if runs[i] != tc.runs[i] {
				t.Errorf("lcsWalk(%q, %q) runs = %v; want %v", tc.a, tc.b, runs, tc.runs)
				break
			}
		}
		if n := lcsLen(a, b); n != len(tc.want) {
			t.Errorf("lcsLen(%q, %q) = %d; want %d", tc.a, tc.b, n, len(tc.want))
		}
	}
}

// TestBitEffectsReplay runs random bit writes on one server and applies the
// effects they report to another: both must end with the same strings.
func TestBitEffectsReplay(t *testing.T) {
	s, replica := plainSession(t), plainSession(t)
	srv := s.srv
	var effects [][]string
	srv.AddHook(func(e *Effect) {
		effects = append(effects, effectStrings(e))
	})
	keys := []string{"a", "b", "c"}
	types := []string{"u1", "u3", "i5", "u8", "i8", "i13", "u63", "i64"}
	pols := []string{"WRAP", "SAT", "FAIL"}
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 2000; i++ {
		k := keys[r.IntN(len(keys))]
		var args []string
		switch r.IntN(5) {
		case 0:
			args = []string{"SETBIT", k, strconv.Itoa(r.IntN(200)), strconv.Itoa(r.IntN(2))}
		case 1, 2:
			op := []string{"SET", "INCRBY"}[r.IntN(2)]
			args = []string{"BITFIELD", k, "OVERFLOW", pols[r.IntN(3)], op, types[r.IntN(len(types))], strconv.Itoa(r.IntN(160)), strconv.FormatInt(r.Int64N(1<<20)-1<<19, 10)}
		case 3:
			op := []string{"AND", "OR", "XOR", "NOT"}[r.IntN(4)]
			args = []string{"BITOP", op, k, keys[r.IntN(3)]}
			if op != "NOT" {
				args = append(args, keys[r.IntN(3)], "missing")
			}
		case 4:
			args = []string{"BITOP", "AND", k, "missing"}
		}
		before := len(effects)
		run(s, args...)
		for _, eff := range effects[before:] {
			if eff[1] != k {
				t.Fatalf("%q reported an effect on %q", args, eff[1])
			}
			if rep := run(replica, eff...); rep[0] == '-' {
				t.Fatalf("replaying %q (from %q): %s", eff, args, rep)
			}
		}
		for _, key := range keys {
			if a, b := run(s, "GET", key), run(replica, "GET", key); a != b {
				t.Fatalf("after %q key %s: server %q, replica %q", args, key, a, b)
			}
		}
	}
}

// TestBitNoopEffects checks that writes that change nothing report nothing.
func TestBitNoopEffects(t *testing.T) {
	s := plainSession(t)
	srv := s.srv
	n := 0
	srv.AddHook(func(*Effect) { n++ })
	steps := []struct {
		args    []string
		reply   string
		effects int
	}{
		{[]string{"SETBIT", "k", "7", "1"}, ":0\r\n", 1},
		{[]string{"SETBIT", "k", "7", "1"}, ":1\r\n", 0},
		{[]string{"SETBIT", "k", "3", "0"}, ":0\r\n", 0},
		{[]string{"SETBIT", "k", "20", "0"}, ":0\r\n", 1},
		{[]string{"BITFIELD", "k", "SET", "u8", "0", "1"}, "*1\r\n:1\r\n", 0},
		{[]string{"BITFIELD", "k", "INCRBY", "u8", "0", "0"}, "*1\r\n:1\r\n", 0},
		{[]string{"BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "255"}, "*1\r\n$-1\r\n", 0},
		{[]string{"BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "u8", "100", "256"}, "*1\r\n$-1\r\n", 1},
		{[]string{"BITFIELD", "k", "GET", "u8", "0"}, "*1\r\n:1\r\n", 0},
		{[]string{"BITFIELD", "k", "INCRBY", "u8", "0", "1"}, "*1\r\n:2\r\n", 1},
		{[]string{"BITOP", "AND", "d", "missing"}, ":0\r\n", 0},
		{[]string{"BITOP", "OR", "d", "k"}, ":14\r\n", 1},
		{[]string{"BITOP", "AND", "d", "missing"}, ":0\r\n", 1},
	}
	for _, st := range steps {
		before := n
		if got := run(s, st.args...); got != st.reply {
			t.Errorf("%q = %q; want %q", st.args, got, st.reply)
		}
		if n-before != st.effects {
			t.Errorf("%q reported %d effects; want %d", st.args, n-before, st.effects)
		}
	}
}

// otherType stands for any non-string value.
type otherType struct{}

func (otherType) Type() keyspace.Type { return keyspace.TypeHash }

func (otherType) MemoryUsage() int64 { return 64 }

func TestBitWrongType(t *testing.T) {
	s := plainSession(t)
	srv := s.srv
	srv.Keyspace().DBs[0].Set([]byte("h"), &keyspace.Entry{Obj: otherType{}})
	run(s, "SET", "str", "foobar")
	const wrong = "-" + errWrongType + "\r\n"
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"SETBIT", "h", "1", "1"}, wrong},
		{[]string{"SETBIT", "h", "x", "1"}, "-" + errBitOffset + "\r\n"},
		{[]string{"SETBIT", "h", "1", "2"}, "-" + errBitValue + "\r\n"},
		{[]string{"GETBIT", "h", "1"}, wrong},
		{[]string{"BITCOUNT", "h"}, wrong},
		{[]string{"BITCOUNT", "h", "x"}, wrong},
		{[]string{"BITPOS", "h", "1"}, wrong},
		{[]string{"BITPOS", "h", "2"}, "-" + errBitposBit + "\r\n"},
		{[]string{"BITOP", "AND", "d", "str", "h"}, wrong},
		{[]string{"BITOP", "NOT", "d", "h"}, wrong},
		{[]string{"BITFIELD", "h", "GET", "u8", "0"}, wrong},
		{[]string{"BITFIELD", "h", "SET", "u8", "0", "1"}, wrong},
		{[]string{"BITFIELD", "h", "GET", "u64", "0"}, "-" + errBitfieldType + "\r\n"},
		{[]string{"BITFIELD_RO", "h", "GET", "u8", "0"}, wrong},
		{[]string{"BITFIELD_RO", "h", "SET", "u8", "0", "1"}, "-" + errBitfieldRO + "\r\n"},
		{[]string{"LCS", "str", "h"}, "-" + errLCSNotString + "\r\n"},
		{[]string{"LCS", "h", "str", "FOO"}, "-" + errLCSNotString + "\r\n"},
		{[]string{"BITOP", "OR", "h", "str"}, ":6\r\n"},
		{[]string{"GET", "h"}, "$6\r\nfoobar\r\n"},
	}
	for _, tc := range tests {
		if got := run(s, tc.args...); got != tc.want {
			t.Errorf("%q = %q; want %q", tc.args, got, tc.want)
		}
	}
}

// BenchmarkBitCount1MB counts the bits of a 1 MB string through the
// command path.
func BenchmarkBitCount1MB(b *testing.B) {
	s := plainSession(b)
	val := bytes.Repeat([]byte("recached\x01\xfe\x55"), (1<<20)/11+1)[:1<<20]
	s.srv.Keyspace().DBs[0].SetString([]byte("big"), val, false)
	args := [][]byte{[]byte("BITCOUNT"), []byte("big")}
	want := ":" + strconv.FormatInt(popcount(val), 10) + "\r\n"
	b.SetBytes(1 << 20)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.W.B = s.W.B[:0]
		s.Exec(args)
	}
	if string(s.W.B) != want {
		b.Fatalf("BITCOUNT = %q; want %q", s.W.B, want)
	}
}

// BenchmarkBitCount1MBRange is BITCOUNT with an unaligned BIT range.
func BenchmarkBitCount1MBRange(b *testing.B) {
	s := plainSession(b)
	val := bytes.Repeat([]byte{0x5a}, 1<<20)
	s.srv.Keyspace().DBs[0].SetString([]byte("big"), val, false)
	args := [][]byte{[]byte("BITCOUNT"), []byte("big"), []byte("3"), []byte("-5"), []byte("BIT")}
	b.SetBytes(1 << 20)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.W.B = s.W.B[:0]
		s.Exec(args)
	}
}
