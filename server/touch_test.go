package server

import "testing"

// TestLookupsThatDoNotTouch: TTL, PTTL, TYPE and EXISTS leave a key's
// idle time as it was (Redis's LOOKUP_NOTOUCH), TOUCH and GET reset it.
func TestLookupsThatDoNotTouch(t *testing.T) {
	srv := New(DefaultConfig())
	s, err := srv.NewSession(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	run(s, "SET", "k", "v")
	for _, c := range []struct {
		args  []string
		touch bool
	}{
		{[]string{"TTL", "k"}, false}, {[]string{"PTTL", "k"}, false}, {[]string{"TYPE", "k"}, false},
		{[]string{"EXISTS", "k"}, false}, {[]string{"EXPIRETIME", "k"}, false},
		{[]string{"TOUCH", "k"}, true}, {[]string{"GET", "k"}, true},
	} {
		srv.ks.SetIdle(srv.ks.DBs[0].Peek([]byte("k")), 50) // 5 s ago
		run(s, c.args...)
		want := ":5\r\n"
		if c.touch {
			want = ":0\r\n"
		}
		if got := run(s, "OBJECT", "IDLETIME", "k"); got != want {
			t.Errorf("%q then OBJECT IDLETIME: %q, want %q", c.args, got, want)
		}
	}
}
