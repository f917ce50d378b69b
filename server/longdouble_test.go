package server

import (
	"math/rand"
	"strconv"
	"strings"
	"testing"
)

// checkIncrFloat fails when the fast path takes cur+by and gives other
// text than the big.Float path, or takes what that path refuses.
func checkIncrFloat(t *testing.T, hasCur bool, cur, by string) bool {
	t.Helper()
	got, ok := incrFloatFast(nil, hasCur, []byte(cur), []byte(by))
	if !ok {
		return false
	}
	want, fail := incrFloatBig(hasCur, []byte(cur), []byte(by))
	if fail != incrFloatOK || string(got) != string(want) {
		t.Fatalf("%q + %q (hasCur %v): fast %q, big.Float %q (fail %d)", cur, by, hasCur, got, want, fail)
	}
	return true
}

func TestIncrFloatFast(t *testing.T) {
	tests := []struct {
		cur, by string
		hasCur  bool
		want    string // "": the big.Float path's
	}{
		{"", "1", false, "1"},
		{"1", "0.25", true, "1.25"},
		{"1.5", "1.5", true, "3"},
		{"10.50", "0.1", true, "10.6"},
		{"5.0e3", "2.0e2", true, "5200"},
		{"17179869184", "1.5", true, "17179869185.5"},
		{"17179869184", "17179869184", true, "34359738368"},
		{"1", "-1.1", true, ""},
		{"0.1", "0.2", true, ""},
		{"5000", "0.1", true, ""},
		{"-0.5", "0.5", true, ""},
		{"0", "0", true, ""},
		{"+1", ".5", true, ""},
		{"1e-19", "1e19", true, ""},
		{"9999999999999999999", "1", true, ""},
		{"0.00000000000000001", "0", true, ""},
		// Halfway between two long doubles (their step is 0.5 here): the
		// tie goes to the even one, a nonzero digit past the 38th above it.
		{"", "4611686018427387904.25", false, "4611686018427387904"},
		{"", "4611686018427387904.2500000000000000000000001", false, ""},
		{"", "4611686018427387904.7499999999999999999999999", false, ""},
	}
	for _, tt := range tests {
		if tt.want != "" {
			got, ok := incrFloatFast(nil, tt.hasCur, []byte(tt.cur), []byte(tt.by))
			if !ok || string(got) != tt.want {
				t.Errorf("%q + %q: %q (ok %v), want %q", tt.cur, tt.by, got, ok, tt.want)
			}
		}
		checkIncrFloat(t, tt.hasCur, tt.cur, tt.by)
	}
	// What the fast path leaves to big.Float.
	for _, in := range []string{"", "-", ".", "1.", "1e", "1e+", "inf", "-inf", "nan", "0x1p3", " 1", "1 ",
		"1_0", "1e1000", "12345678901234567890", "1e-20", "1e20", "--1", "1..2", "1e5.5"} {
		if _, ok := incrFloatFast(nil, false, nil, []byte(in)); ok {
			t.Errorf("the fast path took %q", in)
		}
	}
}

// randomDecimal returns a decimal of up to 42 significant digits, with a
// point anywhere and an exponent now and then, as counters hold them.
func randomDecimal(r *rand.Rand) string {
	var b strings.Builder
	switch r.Intn(4) {
	case 0:
		b.WriteByte('-')
	case 1:
		if r.Intn(8) == 0 {
			b.WriteByte('+')
		}
	}
	n := 1 + r.Intn(42)
	point := -1
	if r.Intn(3) > 0 {
		point = r.Intn(n + 1)
	}
	for i := 0; i < n; i++ {
		if i == point {
			if i == 0 {
				b.WriteByte('0')
			}
			b.WriteByte('.')
		}
		b.WriteByte(byte('0' + r.Intn(10)))
	}
	if r.Intn(6) == 0 {
		b.WriteString("e" + strconv.Itoa(r.Intn(50)-25))
	}
	return b.String()
}

// TestIncrFloatFastMatchesBig runs the fast path against the big.Float
// path on random decimals: every sum it takes must print alike.
func TestIncrFloatFastMatchesBig(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	took := 0
	for i := 0; i < 200000; i++ {
		if checkIncrFloat(t, r.Intn(10) > 0, randomDecimal(r), randomDecimal(r)) {
			took++
		}
	}

	if took < 40000 {
		t.Errorf("the fast path took only %d of 200000 sums", took)
	}
}

func FuzzIncrFloatFast(f *testing.F) {
	for _, s := range [][2]string{{"10.50", "0.1"}, {"5.0e3", "2.0e2"}, {"1", "-1.1"}, {"0.1", "0.2"}, {"-3", "3"}, {"1e-19", "9999999999999999999"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, cur, by string) {
		checkIncrFloat(t, true, cur, by)
	})
}
