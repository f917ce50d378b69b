package server

import (
	"strconv"
	"testing"
)

func throttleReply(limited, limit, remaining, retry, reset int64) string {
	s := "*5\r\n"
	for _, n := range []int64{limited, limit, remaining, retry, reset} {
		s += ":" + strconv.FormatInt(n, 10) + "\r\n"
	}
	return s
}

func TestThrottleCommands(t *testing.T) {
	r := newEffectRecorder(t)
	now := int64(1_700_000_000_000)
	r.srv.ks.Now = func() int64 { return now }
	at := func(ms int64) string { return strconv.FormatInt(ms, 10) }
	ns := func(ms int64) string { return strconv.FormatInt(ms*1e6, 10) }
	steps := []effectStep{
		// Arguments.
		{[]string{"THROTTLE", "rl", "1", "1"}, "-ERR wrong number of arguments for 'throttle' command\r\n", nil},
		{[]string{"THROTTLE", "rl", "1", "1", "1", "1", "1"}, "-ERR syntax error\r\n", nil},
		{[]string{"THROTTLE", "rl", "x", "1", "1"}, "-" + errNotInt + "\r\n", nil},
		{[]string{"THROTTLE", "rl", "1", "1", "1", "1.5"}, "-" + errNotInt + "\r\n", nil},
		{[]string{"THROTTLE", "rl", "-1", "1", "1"}, "-ERR max_burst must not be negative\r\n", nil},
		{[]string{"THROTTLE", "rl", "1", "0", "1"}, "-ERR count per period and period must be positive\r\n", nil},
		{[]string{"THROTTLE", "rl", "1", "1", "-60"}, "-ERR count per period and period must be positive\r\n", nil},
		{[]string{"THROTTLE", "rl", "1", "1", "1", "-1"}, "-ERR quantity must not be negative\r\n", nil},
		{[]string{"THROTTLE", "rl", "1", "2000000000", "1"}, "-ERR rate limit parameters are out of range\r\n", nil},
		// Limit 3, 2 requests a second: interval 500 ms.
		{[]string{"THROTTLE", "rl", "2", "2", "1", "0"}, throttleReply(0, 3, 3, -1, 0), nil},
		{[]string{"EXISTS", "rl"}, ":0\r\n", nil},
		{[]string{"THROTTLE", "rl", "2", "2", "1"}, throttleReply(0, 3, 2, -1, 1), [][]string{{"RLSET", "rl", ns(now + 500), "500000000", "2", "PXAT", at(now + 500)}}},
		{[]string{"TYPE", "rl"}, "+ratelimit\r\n", nil},
		{[]string{"OBJECT", "ENCODING", "rl"}, "$3\r\nraw\r\n", nil},
		{[]string{"PTTL", "rl"}, ":500\r\n", nil},
		{[]string{"cl.throttle", "rl", "2", "2", "1", "2"}, throttleReply(0, 3, 0, -1, 2), [][]string{{"RLSET", "rl", ns(now + 1500), "500000000", "2", "PXAT", at(now + 1500)}}},
		{[]string{"THROTTLE", "rl", "2", "2", "1"}, throttleReply(1, 3, 0, 1, 2), nil},
		{[]string{"THROTTLE", "rl", "2", "2", "1", "4"}, throttleReply(1, 3, 0, -1, 2), nil},
		{[]string{"PTTL", "rl"}, ":1500\r\n", nil},
		// Wrong types both ways.
		{[]string{"SET", "s", "x"}, "+OK\r\n", [][]string{{"SET", "s", "x"}}},
		{[]string{"THROTTLE", "s", "1", "1", "1"}, "-" + errWrongType + "\r\n", nil},
		{[]string{"GET", "rl"}, "-" + errWrongType + "\r\n", nil},
		{[]string{"JGET", "rl"}, "-" + errWrongType + "\r\n", nil},
		// RLSET.
		{[]string{"RLSET", "x", "1", "1"}, "-ERR wrong number of arguments for 'rlset' command\r\n", nil},
		{[]string{"RLSET", "x", "a", "1", "1"}, "-" + errNotInt + "\r\n", nil},
		{[]string{"RLSET", "x", "0", "1", "1"}, "-" + errRLState + "\r\n", nil},
		{[]string{"RLSET", "x", "1", "0", "1"}, "-" + errRLState + "\r\n", nil},
		{[]string{"RLSET", "x", "1", "1", "-1"}, "-" + errRLState + "\r\n", nil},
		{[]string{"RLSET", "x", "1", "4611686018427387904", "1"}, "-" + errRLState + "\r\n", nil},
		{[]string{"RLSET", "x", "1", "1", "1", "PX", "5"}, "-ERR syntax error\r\n", nil},
		{[]string{"RLSET", "x", "1", "1", "1", "PXAT"}, "-ERR syntax error\r\n", nil},
		{[]string{"RLSET", "x", "1", "1", "1", "PXAT", "0"}, "-ERR invalid expire time in 'rlset' command\r\n", nil},
		{[]string{"RLSET", "x", "1", "1", "1", "pxat", at(now)}, "+OK\r\n", nil},
		{[]string{"RLSET", "s", "1", "1", "1", "PXAT", at(now - 5)}, "+OK\r\n", [][]string{{"DEL", "s"}}},
		{[]string{"EXISTS", "x", "s"}, ":0\r\n", nil},
		{[]string{"RLSET", "x", ns(now + 100), "1000", "3"}, "+OK\r\n", [][]string{{"RLSET", "x", ns(now + 100), "1000", "3"}}},
		{[]string{"TTL", "x"}, ":-1\r\n", nil},
		{[]string{"RLSET", "x", ns(now + 100), "1000", "3", "pxat", at(now + 100)}, "+OK\r\n", [][]string{{"RLSET", "x", ns(now + 100), "1000", "3", "PXAT", at(now + 100)}}},
		{[]string{"PTTL", "x"}, ":100\r\n", nil},
		{[]string{"COPY", "rl", "rl2"}, ":1\r\n", [][]string{{"COPY", "rl", "rl2", "DB", "0", "REPLACE"}}},
		{[]string{"THROTTLE", "rl2", "2", "2", "1"}, throttleReply(1, 3, 0, 1, 2), nil},
	}
	runSteps(t, r, steps)

	// Half a second later one request fits again.
	now += 500
	runSteps(t, r, []effectStep{
		{[]string{"THROTTLE", "rl", "2", "2", "1"}, throttleReply(0, 3, 0, -1, 2), [][]string{{"RLSET", "rl", ns(now + 1500), "500000000", "2", "PXAT", at(now + 1500)}}},
	})
	// Reconfiguring with a quantity of 0 records the new quota only.
	runSteps(t, r, []effectStep{
		{[]string{"THROTTLE", "rl", "9", "2", "1", "0"}, throttleReply(0, 10, 7, -1, 2), [][]string{{"RLSET", "rl", ns(now + 1500), "500000000", "9", "PXAT", at(now + 1500)}}},
		{[]string{"THROTTLE", "rl", "9", "2", "1", "0"}, throttleReply(0, 10, 7, -1, 2), nil},
	})
	// When the limiter is full again the key is gone.
	now += 1500
	runSteps(t, r, []effectStep{
		{[]string{"EXISTS", "rl"}, ":0\r\n", [][]string{{"DEL", "rl"}}},
		{[]string{"THROTTLE", "rl", "2", "2", "1", "0"}, throttleReply(0, 3, 3, -1, 0), nil},
	})
}

// TestThrottleEffectReplay checks that RLSET reproduces the limiter
// exactly: the replica answers the next request as the server does.
func TestThrottleEffectReplay(t *testing.T) {
	src := newEffectRecorder(t)
	dst := newEffectRecorder(t)
	now := int64(1_700_000_000_000)
	clock := func() int64 { return now }
	src.srv.ks.Now, dst.srv.ks.Now = clock, clock
	for i := 0; i < 200; i++ {
		now += int64(i%7) * 37
		args := []string{"THROTTLE", "rl", "3", "7", "2", strconv.Itoa(i % 3)}
		_, effects := src.run(args...)
		for _, eff := range effects {
			if rep, _ := dst.run(eff...); rep[0] == '-' {
				t.Fatalf("replay %q: %q", eff, rep)
			}
		}
		if a, b := dumpTyped(src, "rl"), dumpTyped(dst, "rl"); a != b {
			t.Fatalf("after %q: server %s, replica %s", args, a, b)
		}
		// Both answer a look the same way, without changing anything.
		look := []string{"THROTTLE", "rl", "3", "7", "2", "0"}
		a, _ := src.run(look...)
		b, _ := dst.run(look...)
		if a != b {
			t.Fatalf("after %q: server answers %q, replica %q", args, a, b)
		}
	}
}
