package keyspace

import (
	"errors"
	"math"
	"strconv"
)

// RateLimit is the value of a ratelimit key: the state of a limiter driven
// by the generic cell rate algorithm (GCRA), as the redis-cell module's
// CL.THROTTLE keeps it.
//
// GCRA spaces requests one emission interval apart on a theoretical
// schedule and lets a request through when it arrives no earlier than the
// delay variation tolerance (the burst) ahead of that schedule. The whole
// state is the theoretical arrival time (TAT) of the next request: once the
// clock passes it the limiter is full again and the key can go, so a
// limiter's key expires at its TAT. Interval and Burst record the quota
// the last request used; they let a replica answer questions about the
// limiter and make the value self-describing, but every THROTTLE passes its
// own quota.
type RateLimit struct {
	TAT      int64 // theoretical arrival time, unix nanoseconds
	Interval int64 // emission interval, nanoseconds (> 0)
	Burst    int64 // max_burst (>= 0): the limit is Burst+1
}

// Type reports TypeRateLimit.
func (r *RateLimit) Type() Type { return TypeRateLimit }

// Copy returns an independent copy.
func (r *RateLimit) Copy() Object {
	c := *r
	return &c
}

// MemoryUsage estimates the bytes the value takes.
func (r *RateLimit) MemoryUsage() int64 { return 24 }

// Encoding names the value's encoding for OBJECT ENCODING: "raw", what
// Redis reports for values a module owns.
func (r *RateLimit) Encoding() string { return "raw" }

// Recreate returns the command that re-creates the limiter at key from
// nothing: RLSET key tat interval burst. The caller adds the expiry.
func (r *RateLimit) Recreate(key []byte) [][][]byte {
	return [][][]byte{{
		[]byte("RLSET"), key,
		strconv.AppendInt(nil, r.TAT, 10),
		strconv.AppendInt(nil, r.Interval, 10),
		strconv.AppendInt(nil, r.Burst, 10),
	}}
}

// ExpireAt returns when the limiter is full again, in unix milliseconds:
// its TAT rounded up, the expiry its key carries.
func (r *RateLimit) ExpireAt() int64 { return ceilDiv(r.TAT, 1e6) }

// GCRA quota errors, in the words THROTTLE replies with (after "ERR ").
var (
	ErrGCRABurst    = errors.New("max_burst must not be negative")
	ErrGCRARate     = errors.New("count per period and period must be positive")
	ErrGCRAQuantity = errors.New("quantity must not be negative")
	ErrGCRARange    = errors.New("rate limit parameters are out of range")
)

// Quota is a limiter's configuration: at most Burst+1 requests at once,
// then one per Interval nanoseconds.
type Quota struct {
	Burst    int64
	Interval int64
}

// NewQuota returns the quota of THROTTLE's arguments: count requests per
// period seconds with bursts of maxBurst (+1). The emission interval is the
// period divided by the count in whole nanoseconds, rounded down.
func NewQuota(maxBurst, count, periodSeconds int64) (Quota, error) {
	if maxBurst < 0 {
		return Quota{}, ErrGCRABurst
	}
	if count <= 0 || periodSeconds <= 0 {
		return Quota{}, ErrGCRARate
	}
	if periodSeconds > math.MaxInt64/int64(1e9) {
		return Quota{}, ErrGCRARange
	}
	q := Quota{Burst: maxBurst, Interval: periodSeconds * 1e9 / count}
	if q.Interval == 0 {
		// More than a billion requests a second: below the clock's
		// resolution, and a zero interval would never limit.
		return Quota{}, ErrGCRARange
	}
	if !q.Valid() {
		return Quota{}, ErrGCRARange
	}
	return q, nil
}

// Valid reports whether the quota can run: a positive interval, a burst
// that is not negative, and a tolerance (Interval×(Burst+1)) that fits 64
// bits.
func (q Quota) Valid() bool {
	return q.Interval > 0 && q.Burst >= 0 && q.Burst < math.MaxInt64 && q.Burst+1 <= math.MaxInt64/q.Interval
}

// Limit is the number of requests the quota allows at once: Burst+1.
func (q Quota) Limit() int64 { return q.Burst + 1 }

// tolerance is the delay variation tolerance: how far ahead of the
// schedule a request may come, Limit() intervals.
func (q Quota) tolerance() int64 { return q.Interval * (q.Burst + 1) }

// ThrottleResult is the outcome of one GCRA request.
type ThrottleResult struct {
	// Limited reports a refused request; a refused request changes nothing.
	Limited bool
	// Limit is the quota's Burst+1.
	Limit int64
	// Remaining is how many more unit requests would pass right now.
	Remaining int64
	// RetryAfter is how long (ns) until the request would pass, or -1
	// when it passed or can never pass (quantity above the limit).
	RetryAfter int64
	// ResetAfter is how long (ns) until the limiter is full again.
	ResetAfter int64
	// TAT is the limiter's theoretical arrival time afterwards (unix ns);
	// 0 when the limiter is full and keeps no state.
	TAT int64
}

// Throttle runs one request of quantity units against a limiter whose
// stored TAT is tat (0 for none) at time now (unix ns), with the semantics
// of redis-cell's CL.THROTTLE: the request passes when it would not run
// more than the tolerance ahead of the schedule, and then pushes the TAT
// quantity intervals further. A quantity of 0 only looks.
func Throttle(tat, now int64, q Quota, quantity int64) (ThrottleResult, error) {
	if quantity < 0 {
		return ThrottleResult{}, ErrGCRAQuantity
	}
	if quantity > math.MaxInt64/q.Interval {
		return ThrottleResult{}, ErrGCRARange
	}
	increment := q.Interval * quantity
	tolerance := q.tolerance()
	res := ThrottleResult{Limit: q.Limit(), RetryAfter: -1}
	if tat < now {
		tat = now
	}
	if tat > math.MaxInt64-increment {
		return ThrottleResult{}, ErrGCRARange
	}
	newTAT := tat + increment
	var ttl int64
	// The request would run ahead of the schedule by newTAT-now; it passes
	// within the tolerance. (Both differences are taken so that neither
	// can overflow.)
	if ahead := newTAT - now; ahead > tolerance {
		res.Limited = true
		if increment <= tolerance {
			res.RetryAfter = ahead - tolerance
		}
		ttl = tat - now
		res.TAT = tat
	} else {
		ttl = newTAT - now
		res.TAT = newTAT
	}
	if ttl <= 0 {
		res.TAT = 0
	}
	if next := tolerance - ttl; next > -q.Interval {
		res.Remaining = next / q.Interval
	}
	res.ResetAfter = ttl
	return res, nil
}

// ThrottleSeconds converts a ThrottleResult duration to the whole seconds
// CL.THROTTLE replies with: a partial second of at least a millisecond
// rounds up, so that a caller never retries too early; -1 stays -1.
func ThrottleSeconds(ns int64) int64 {
	if ns < 0 {
		return -1
	}
	s := ns / 1e9
	if ns%1e9 >= 1e6 {
		s++
	}
	return s
}

// ceilDiv divides a non-negative n by d rounding up.
func ceilDiv(n, d int64) int64 {
	q := n / d
	if n%d > 0 {
		q++
	}
	return q
}
