package server

import (
	"testing"
	"time"
)

// TestHistBuckets checks that every value falls in a bucket whose bounds
// hold it, and that buckets are about 3% wide.
func TestHistBuckets(t *testing.T) {
	for _, v := range []uint64{1, 2, 31, 32, 33, 63, 64, 65, 1000, 1023, 1024, 123456, 1 << 40, 1<<62 + 12345} {
		i := histIndex(v)
		if up := histUpper(i); up < v {
			t.Errorf("value %d: bucket %d ends at %d", v, i, up)
		}
		if i > 0 && histUpper(i-1) >= v {
			t.Errorf("value %d: bucket %d before its bucket %d ends at %d", v, i-1, i, histUpper(i-1))
		}
		if v >= histSub {
			if w := float64(histUpper(i)-v) / float64(v); w > 1.0/histSub {
				t.Errorf("value %d: bucket ends %.1f%% above it", v, w*100)
			}
		}
	}
	if histIndex(^uint64(0)) >= histBuckets {
		t.Fatalf("the largest value's bucket %d is past %d", histIndex(^uint64(0)), histBuckets)
	}
}

func TestHistPercentiles(t *testing.T) {
	var h latencyHist
	for i := 1; i <= 100; i++ {
		h.record(time.Duration(i) * time.Microsecond)
	}
	cases := []struct {
		p      float64
		lo, hi time.Duration
	}{
		{0, time.Microsecond, time.Microsecond + time.Microsecond/30},
		{50, 50 * time.Microsecond, 52 * time.Microsecond},
		{99, 99 * time.Microsecond, 102 * time.Microsecond},
		{100, 100 * time.Microsecond, 103 * time.Microsecond},
	}
	for _, c := range cases {
		got := time.Duration(h.percentile(c.p))
		if got < c.lo || got > c.hi {
			t.Errorf("p%v = %v, want within [%v, %v]", c.p, got, c.lo, c.hi)
		}
	}
	if got := h.latencyLine([]float64{50, 99.9}); len(got) < len("p50=50.000,p99.9=100.000") {
		t.Errorf("latency line %q", got)
	}
}

func TestInstMetric(t *testing.T) {
	var m instMetric
	for i := int64(0); i <= instSamples; i++ {
		m.sample(1000+i*100, i*50) // 50 per 100 ms
	}
	if r := m.rate(); r != 500 {
		t.Fatalf("rate %v, want 500 per second", r)
	}
}
