package server

import (
	"math"
	"strconv"
	"testing"
)

// INCR adds one to the digits it holds (itoaNext) when the value is
// positive: the reply, the effect and the stored value must be those of
// the formatted sum, across every carry.
func TestIncrDigits(t *testing.T) {
	for _, old := range []int64{-2, -1, 0, 1, 8, 9, 10, 19, 99, 109, 199, 999, 1000, 123456789, 999999999999, math.MaxInt64 - 1} {
		r := newEffectRecorder(t)
		o := strconv.FormatInt(old, 10)
		want := strconv.FormatInt(old+1, 10)
		run(r.s, "SET", "n", o)
		reply, effects := r.run("INCR", "n")
		if reply != ":"+want+"\r\n" {
			t.Errorf("INCR of %s: reply %q, want %s", o, reply, want)
		}
		checkEffects(t, []string{"INCR", "n", "(" + o + ")"}, effects, [][]string{{"SET", "n", want, "KEEPTTL"}})
		if got := run(r.s, "GET", "n"); got != bulk(want) {
			t.Errorf("INCR of %s: GET %q, want %s", o, got, want)
		}
	}
	r := newEffectRecorder(t)
	run(r.s, "SET", "n", strconv.FormatInt(math.MaxInt64, 10))
	if reply, effects := r.run("INCR", "n"); reply != "-"+errOverflow+"\r\n" || len(effects) != 0 {
		t.Errorf("INCR of MaxInt64: reply %q, effects %q", reply, effects)
	}
}

func TestItoaNext(t *testing.T) {
	s := plainSession(t)
	for n := int64(0); n < 100000; n++ {
		s.scratch = s.scratch[:0]
		got := s.itoaNext(s.itoa(n))
		if want := strconv.FormatInt(n+1, 10); string(got) != want {
			t.Fatalf("itoaNext(%d) = %q, want %q", n, got, want)
		}
	}
}
