package realtime

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// TestReplaySkipsWhatWasDelivered feeds a channel the frames a resubscribe
// with rewind brings (history, then live) and checks which reach the
// subscriber: everything after the last delivered message, once.
func TestReplaySkipsWhatWasDelivered(t *testing.T) {
	type msg struct {
		ts int64
		n  int
	}
	for _, tc := range []struct {
		name      string
		before    []msg // delivered before the outage
		after     []msg // what the resubscribe brings
		want      []int // delivered after the outage
		baseMS    int64 // the first Subscribe's Ack, local time
		noReplay  bool  // a glob: no rewind, nothing skipped
		wantAfter int   // messages at the last timestamp after the run
	}{
		{name: "distinct times", before: []msg{{10, 1}, {20, 2}}, after: []msg{{10, 1}, {20, 2}, {30, 3}, {40, 4}}, want: []int{3, 4}},
		{name: "same millisecond", before: []msg{{10, 1}, {10, 2}}, after: []msg{{10, 1}, {10, 2}, {10, 3}, {11, 4}}, want: []int{3, 4}},
		{name: "nothing new", before: []msg{{10, 1}}, after: []msg{{10, 1}}, want: nil},
		{name: "history shorter than what was seen", before: []msg{{5, 0}, {10, 1}}, after: []msg{{10, 1}, {12, 2}}, want: []int{2}},
		{name: "nothing delivered before: the Ack time is the boundary", baseMS: 15, after: []msg{{10, 1}, {15, 2}, {16, 3}}, want: []int{2, 3}},
		{name: "live after replay keeps equal times", before: []msg{{10, 1}}, after: []msg{{10, 1}, {20, 2}, {20, 3}}, want: []int{2, 3}},
		{name: "glob: no replay", noReplay: true, before: []msg{{10, 1}}, after: []msg{{30, 3}, {25, 4}}, want: []int{3, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Client{}
			ch := &Channel{c: c, name: "c", subWanted: true, baseMS: tc.baseMS}
			s := &Subscription{ch: ch, out: make(chan Message, 100)}
			ch.subs = []*Subscription{s}
			deliver := func(ms []msg) []int {
				var got []int
				for _, m := range ms {
					ch.deliverLocked(Message{Data: json.RawMessage{byte('0' + m.n)}}, m.ts)
				}
				for len(s.out) > 0 {
					m := <-s.out
					got = append(got, int(m.Data[0]-'0'))
				}
				return got
			}
			deliver(tc.before)
			if !tc.noReplay {
				ch.replaying, ch.skip = true, ch.atLast
			}
			if got := deliver(tc.after); !slices.Equal(got, tc.want) {
				t.Fatalf("delivered %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBackoffBoundsAndGrowth(t *testing.T) {
	minD, maxD := 100*time.Millisecond, 2*time.Second
	for n := 1; n <= 10; n++ {
		full := minD << (n - 1)
		if full > maxD || n > 6 {
			full = maxD
		}
		for range 50 {
			d := backoff(minD, maxD, n)
			if d > full || d < full*7/10 {
				t.Fatalf("attempt %d: %v outside [%v, %v]", n, d, full*7/10, full)
			}
		}
	}
}

func TestTokenExpiry(t *testing.T) {
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, tc := range []struct {
		token string
		want  time.Time
	}{
		{"h." + enc(`{"exp":1700000000}`) + ".s", time.Unix(1700000000, 0)},
		{"h." + enc(`{"exp":1700000000.5}`) + ".s", time.Unix(1700000000, 5e8)},
		{"h." + enc(`{"iat":1}`) + ".s", time.Time{}},
		{"h." + enc(`{"exp":"soon"}`) + ".s", time.Time{}},
		{"h." + enc(`not json`) + ".s", time.Time{}},
		{"h.!!!.s", time.Time{}},
		{"only.two", time.Time{}},
		{"", time.Time{}},
	} {
		if got := tokenExpiry(tc.token); !got.Equal(tc.want) {
			t.Errorf("tokenExpiry(%q) = %v, want %v", tc.token, got, tc.want)
		}
	}
}

// FuzzTokenExpiry: any text is a token the client may be handed; it must
// never panic and only a JWT with a positive numeric exp has an expiry.
func FuzzTokenExpiry(f *testing.F) {
	f.Add("h." + base64.RawURLEncoding.EncodeToString([]byte(`{"exp":1700000000}`)) + ".s")
	f.Add("a.b.c")
	f.Add("..")
	f.Add("h.eyJleHAiOi0xfQ.s")
	f.Fuzz(func(t *testing.T, tok string) {
		if exp := tokenExpiry(tok); !exp.IsZero() && exp.Unix() < 0 {
			t.Fatalf("negative expiry %v from %q", exp, tok)
		}
	})
}
