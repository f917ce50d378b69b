package keyspace

import (
	"math"
	"testing"
)

const sec = int64(1e9)
const msec = int64(1e6)

// TestThrottleSequence walks one limiter (limit 5, one request a second)
// through a sequence of requests at given times, each checked against the
// GCRA outcome worked out by hand.
func TestThrottleSequence(t *testing.T) {
	q, err := NewQuota(4, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	start := int64(1_700_000_000) * sec
	cases := []struct {
		at, quantity           int64 // at: offset from start
		limited                bool
		remaining              int64
		retryAfter, resetAfter int64
	}{
		// More than the limit at once never passes, and says so with -1.
		{0, 6, true, 5, -1, 0},
		// A burst of five, then refused with a retry in a second.
		{0, 1, false, 4, -1, 1 * sec},
		{0, 1, false, 3, -1, 2 * sec},
		{0, 1, false, 2, -1, 3 * sec},
		{0, 1, false, 1, -1, 4 * sec},
		{0, 1, false, 0, -1, 5 * sec},
		{0, 1, true, 0, 1 * sec, 5 * sec},
		// Time refills it.
		{3000 * msec, 1, false, 2, -1, 3000 * msec},
		{3100 * msec, 1, false, 1, -1, 3900 * msec},
		{4000 * msec, 1, false, 1, -1, 4000 * msec},
		{8000 * msec, 1, false, 4, -1, 1000 * msec},
		{9500 * msec, 1, false, 4, -1, 1000 * msec},
		// Quantity 0 only looks.
		{9500 * msec, 0, false, 4, -1, 1000 * msec},
		// A larger quantity takes more.
		{9500 * msec, 2, false, 2, -1, 3000 * msec},
		// and cannot go past the limit.
		{9500 * msec, 5, true, 2, 3000 * msec, 3000 * msec},
	}
	var tat int64
	for i, c := range cases {
		res, err := Throttle(tat, start+c.at, q, c.quantity)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if res.Limited != c.limited || res.Limit != 5 || res.Remaining != c.remaining || res.RetryAfter != c.retryAfter || res.ResetAfter != c.resetAfter {
			t.Fatalf("case %d: %+v, want limited=%v remaining=%d retry=%d reset=%d", i, res, c.limited, c.remaining, c.retryAfter, c.resetAfter)
		}
		if !res.Limited {
			tat = res.TAT
		}
	}
}

// TestThrottleFullLimiterKeepsNoState: a look at a full limiter, or a
// request that leaves it full, has no state to keep.
func TestThrottleFullLimiterKeepsNoState(t *testing.T) {
	q, _ := NewQuota(2, 10, 1)
	now := int64(5) * sec
	res, _ := Throttle(0, now, q, 0)
	if res.Limited || res.TAT != 0 || res.Remaining != 3 || res.ResetAfter != 0 {
		t.Errorf("look at an empty limiter: %+v", res)
	}
	// A TAT in the past counts as now.
	res, _ = Throttle(now-sec, now, q, 0)
	if res.TAT != 0 || res.Remaining != 3 {
		t.Errorf("look at a stale TAT: %+v", res)
	}
	res, _ = Throttle(0, now, q, 1)
	if res.TAT != now+q.Interval || res.ResetAfter != q.Interval || res.Remaining != 2 {
		t.Errorf("one request: %+v", res)
	}
}

func TestNewQuota(t *testing.T) {
	cases := []struct {
		burst, count, period int64
		interval             int64
		err                  error
	}{
		{15, 30, 60, 2 * sec, nil},
		{0, 3, 1, 333333333, nil},
		{0, 1e9, 1, 1, nil},
		{0, 1e9 + 1, 1, 0, ErrGCRARange},
		{-1, 1, 1, 0, ErrGCRABurst},
		{1, 0, 1, 0, ErrGCRARate},
		{1, 1, 0, 0, ErrGCRARate},
		{1, -1, 1, 0, ErrGCRARate},
		{1, 1, math.MaxInt64 / sec, (math.MaxInt64 / sec) * sec, ErrGCRARange},
		{0, 1, math.MaxInt64/sec + 1, 0, ErrGCRARange},
		{math.MaxInt64, 1, 1, 0, ErrGCRARange},
		{math.MaxInt64/sec - 1, 1, 1, sec, nil},
	}
	for _, c := range cases {
		q, err := NewQuota(c.burst, c.count, c.period)
		if err != c.err {
			t.Errorf("NewQuota(%d, %d, %d): error %v, want %v", c.burst, c.count, c.period, err, c.err)
			continue
		}
		if err == nil && q.Interval != c.interval {
			t.Errorf("NewQuota(%d, %d, %d): interval %d, want %d", c.burst, c.count, c.period, q.Interval, c.interval)
		}
	}
	q, _ := NewQuota(1, 1, 1)
	if _, err := Throttle(0, 0, q, -1); err != ErrGCRAQuantity {
		t.Errorf("negative quantity: %v", err)
	}
	if _, err := Throttle(0, 0, q, math.MaxInt64/sec+1); err != ErrGCRARange {
		t.Errorf("huge quantity: %v", err)
	}
	if _, err := Throttle(math.MaxInt64-sec/2, 0, q, 1); err != ErrGCRARange {
		t.Errorf("TAT overflow: %v", err)
	}
}

func TestThrottleSeconds(t *testing.T) {
	cases := []struct{ ns, s int64 }{
		{-1, -1}, {0, 0}, {999_999, 0}, {1_000_000, 1}, {sec, 1}, {sec + 999_999, 1}, {sec + msec, 2}, {59*sec + 500*msec, 60},
	}
	for _, c := range cases {
		if got := ThrottleSeconds(c.ns); got != c.s {
			t.Errorf("ThrottleSeconds(%d) = %d, want %d", c.ns, got, c.s)
		}
	}
}

func TestRateLimitValue(t *testing.T) {
	r := &RateLimit{TAT: 1_700_000_000_123_400_001, Interval: 5, Burst: 2}
	if r.ExpireAt() != 1_700_000_000_124 {
		t.Errorf("ExpireAt %d", r.ExpireAt())
	}
	c := r.Copy().(*RateLimit)
	c.TAT = 1
	if r.TAT == 1 || r.Type() != TypeRateLimit || r.Type().String() != "ratelimit" {
		t.Errorf("copy shares state or wrong type")
	}
	rc := r.Recreate([]byte("k"))
	if len(rc) != 1 || string(rc[0][0]) != "RLSET" || string(rc[0][2]) != "1700000000123400001" || string(rc[0][3]) != "5" || string(rc[0][4]) != "2" {
		t.Errorf("recreate %q", rc)
	}
}

func BenchmarkThrottle(b *testing.B) {
	q, _ := NewQuota(100, 1000, 1)
	var tat int64
	now := int64(1_700_000_000) * sec
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		now += msec
		res, _ := Throttle(tat, now, q, 1)
		if !res.Limited {
			tat = res.TAT
		}
	}
}

// TestThrottleHugeTolerance: a tolerance near the int64 limit at today's
// clock must not overflow into a refusal.
func TestThrottleHugeTolerance(t *testing.T) {
	q, err := NewQuota(8, 1, 1_000_000_000) // one request in 31 years, bursts of 9
	if err != nil {
		t.Fatal(err)
	}
	now := int64(1_700_000_000) * sec
	res, err := Throttle(0, now, q, 1)
	if err != nil || res.Limited || res.Remaining != 8 {
		t.Fatalf("%+v %v", res, err)
	}
}
