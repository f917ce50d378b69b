package server

import (
	"strconv"
	"testing"
)

// TestHLLPersist writes HyperLogLogs (promotion, cached estimates, merges,
// PFDEBUG conversion, a TTL) and restarts from the append-only log, with
// and without a snapshot in between: every value comes back byte for byte,
// since each change is the effect SET key <bytes> KEEPTTL.
func TestHLLPersist(t *testing.T) {
	elems := func(prefix string, n int) []string {
		out := []string{"PFADD", prefix}
		for i := 0; i < n; i++ {
			out = append(out, prefix+":"+strconv.Itoa(i))
		}
		return out
	}
	workload := [][]string{
		elems("big", 5000),
		{"PFCOUNT", "big"},
		{"PFADD", "small", "a", "b", "c"},
		{"EXPIRE", "small", "100000"},
		{"PFADD", "small", "d"},
		{"PFCOUNT", "small"},
		{"PFMERGE", "merged", "small", "big"},
		{"PFCOUNT", "merged"},
		{"PFADD", "tosparse", "x"},
		{"PFDEBUG", "TODENSE", "tosparse"},
		{"PFCOUNT", "small", "big"},
		{"PFADD", "big", "one-more"},
	}
	for _, saveAt := range []int{-1, 2, 7} {
		t.Run("save at "+strconv.Itoa(saveAt), func(t *testing.T) {
			dir := t.TempDir()
			srv := openPersist(t, dir, nil)
			s := newSession(srv, nil, false)
			for i, cmd := range workload {
				if i == saveAt {
					if rep := pexec(s, "SAVE"); rep != "+OK\r\n" {
						t.Fatalf("SAVE: %q", rep)
					}
				}
				if rep := pexec(s, cmd...); rep[0] == '-' {
					t.Fatalf("%.40q: %q", cmd, rep)
				}
			}
			want := describeServer(srv)
			_ = srv.persist.log.Load().SyncNow()
			crash(srv)
			srv2 := openPersist(t, dir, nil)
			if got := describeServer(srv2); got != want {
				t.Errorf("after restart:\n%.2000s\nwant\n%.2000s", got, want)
			}
		})
	}
}

// TestHLLWatch checks that PFCOUNT caching its estimate counts as a change
// for WATCH, as Redis's signalModifiedKey makes it, while a PFCOUNT that
// reads the cache, and a PFADD that changes no register, do not.
func TestHLLWatch(t *testing.T) {
	tests := []struct {
		name  string
		setup [][]string
		other []string
		abort bool
	}{
		{"stale cache", [][]string{{"PFADD", "h", "a"}}, []string{"PFCOUNT", "h"}, true},
		{"valid cache", [][]string{{"PFADD", "h", "a"}, {"PFCOUNT", "h"}}, []string{"PFCOUNT", "h"}, false},
		{"no register grew", [][]string{{"PFADD", "h", "a"}}, []string{"PFADD", "h", "a"}, false},
		{"register grew", [][]string{{"PFADD", "h", "a"}}, []string{"PFADD", "h", "b"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := openPersist(t, t.TempDir(), nil)
			a, b := newSession(srv, nil, false), newSession(srv, nil, false)
			for _, c := range tc.setup {
				pexec(a, c...)
			}
			pexec(a, "WATCH", "h")
			pexec(b, tc.other...)
			pexec(a, "MULTI")
			pexec(a, "PING")
			rep := pexec(a, "EXEC")
			if aborted := rep == "*-1\r\n"; aborted != tc.abort {
				t.Errorf("EXEC after %q: %q, want aborted %v", tc.other, rep, tc.abort)
			}
		})
	}
}
