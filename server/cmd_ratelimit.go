package server

import (
	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
)

// The ratelimit type: one GCRA limiter per key (keyspace.RateLimit).
//
// THROTTLE key max_burst count_per_period period_seconds [quantity] (alias
// CL.THROTTLE) answers as the redis-cell module's CL.THROTTLE does: an
// array of five integers, [limited (0 or 1), limit (max_burst+1),
// remaining, retry_after (seconds, -1 when the request passed or can never
// pass), reset_after (seconds until the limiter is full again)]. A
// request that passes moves the limiter's state; the key expires when the
// limiter is full again, so an idle limiter takes no memory. A refused
// request changes nothing.
//
// The effect is the state, not the request, so that a replay on another
// node is exact whatever its clock says: RLSET key <tat-ns>
// <emission-interval-ns> <max_burst> PXAT <ms>, or DEL key when the request
// left the limiter full. RLSET is a write command of its own, refused on
// the WebSocket port.

// Rate limiter error texts.
const (
	errRLState = "ERR invalid rate limiter state"
)

func ratelimitCommands() []*Command {
	one := keysIn("ratelimit", 1, 1)
	k1 := func(c *Command) *Command {
		c.Since = "1.0.0"
		return one(c)
	}
	throttle := func(name string) *Command {
		return k1(&Command{Name: name, Arity: -5, Flags: FlagWrite | FlagDenyOOM | FlagFast, Syntax: "key max_burst count_per_period period [quantity]", Summary: "Applies a request to a GCRA rate limiter and reports whether it is allowed (redis-cell's CL.THROTTLE).", Complexity: "O(1)", Categories: "write ratelimit fast", Handler: cmdThrottle})
	}
	return []*Command{
		throttle("throttle"),
		throttle("cl.throttle"),
		k1(&Command{Name: "rlset", Arity: -5, Flags: FlagWrite | FlagDenyOOM | FlagFast | FlagNoWS, Syntax: "key tat interval max_burst [PXAT unix-time-milliseconds]", Summary: "Sets a rate limiter's state exactly (the effect THROTTLE replicates).", Complexity: "O(1)", Categories: "write ratelimit fast", Handler: cmdRLSet}),
	}
}

// cmdThrottle is THROTTLE key max_burst count_per_period period [quantity].
func cmdThrottle(s *Session) {
	if len(s.Args) > 6 {
		s.W.Error(errSyntax)
		return
	}
	var n [4]int64
	n[3] = 1 // quantity
	for i := 2; i < len(s.Args); i++ {
		v, ok := s.intArg(i)
		if !ok {
			return
		}
		n[i-2] = v
	}
	q, err := keyspace.NewQuota(n[0], n[1], n[2])
	if err != nil {
		s.W.Error("ERR " + err.Error())
		return
	}
	key := s.Args[1]
	e, wrong := s.lookupType(key, keyspace.TypeRateLimit)
	if wrong {
		return
	}
	var rl *keyspace.RateLimit
	var tat int64
	if e != nil {
		rl = e.Obj.(*keyspace.RateLimit)
		tat = rl.TAT
	}
	res, err := keyspace.Throttle(tat, s.srv.ks.Now()*1e6, q, n[3])
	if err != nil {
		s.W.Error("ERR " + err.Error())
		return
	}
	if !res.Limited {
		switch {
		case res.TAT == 0:
			// The limiter is full: no state to keep.
			if rl != nil {
				s.db.Delete(key)
				s.emit(bDEL, key)
			}
		case rl == nil || rl.TAT != res.TAT || rl.Interval != q.Interval || rl.Burst != q.Burst:
			if rl == nil {
				rl = &keyspace.RateLimit{}
				s.db.SetObject(key, rl)
			}
			rl.TAT, rl.Interval, rl.Burst = res.TAT, q.Interval, q.Burst
			at := rl.ExpireAt()
			s.db.SetExpiry(key, at)
			s.emit(bRLSET, key, s.itoa(rl.TAT), s.itoa(rl.Interval), s.itoa(rl.Burst), bPXAT, s.itoa(at))
		}
	}
	s.W.Array(5)
	if res.Limited {
		s.W.Int(1)
	} else {
		s.W.Int(0)
	}
	s.W.Int(res.Limit)
	s.W.Int(res.Remaining)
	s.W.Int(keyspace.ThrottleSeconds(res.RetryAfter))
	s.W.Int(keyspace.ThrottleSeconds(res.ResetAfter))
}

// cmdRLSet is RLSET key tat interval max_burst [PXAT ms]: it replaces key
// with a limiter in exactly that state, without a time to live unless PXAT
// gives one; a PXAT already past deletes the key instead.
func cmdRLSet(s *Session) {
	var n [3]int64
	for i := range n {
		v, ok := s.intArg(i + 2)
		if !ok {
			return
		}
		n[i] = v
	}
	var at int64
	switch {
	case len(s.Args) == 5:
	case len(s.Args) == 7 && resp.EqualFold(s.Args[5], "pxat"):
		v, ok := s.intArg(6)
		if !ok {
			return
		}
		if v <= 0 {
			s.W.Error("ERR invalid expire time in 'rlset' command")
			return
		}
		at = v
	default:
		s.W.Error(errSyntax)
		return
	}
	tat, interval, burst := n[0], n[1], n[2]
	if tat <= 0 || !(keyspace.Quota{Burst: burst, Interval: interval}).Valid() {
		s.W.Error(errRLState)
		return
	}
	key := s.Args[1]
	if at != 0 && at <= s.srv.ks.Now() {
		if s.db.Delete(key) {
			s.emit(bDEL, key)
		}
		s.W.OK()
		return
	}
	s.db.Set(key, &keyspace.Entry{Obj: &keyspace.RateLimit{TAT: tat, Interval: interval, Burst: burst}, Atime: s.srv.ks.Clock()})
	if at != 0 {
		s.db.SetExpiry(key, at)
	}
	if at != 0 {
		s.emit(bRLSET, key, s.Args[2], s.Args[3], s.Args[4], bPXAT, s.Args[6])
	} else {
		s.emit(bRLSET, key, s.Args[2], s.Args[3], s.Args[4])
	}
	s.W.OK()
}
