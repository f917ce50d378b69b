package server

import (
	"strings"
	"testing"
)

// TestSortEffects checks that SORT ... STORE re-creates its destination
// (DEL, then RPUSH of the result) and that an empty result deletes it.
func TestSortEffects(t *testing.T) {
	r := newEffectRecorder(t)
	runSteps(t, r, []effectStep{
		{[]string{"RPUSH", "l", "3", "1", "2"}, ":3\r\n", [][]string{{"RPUSH", "l", "3", "1", "2"}}},
		{[]string{"SET", "w_1", "x"}, "", [][]string{{"SET", "w_1", "x"}}},
		{[]string{"SORT", "l"}, "*3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n", nil},
		{[]string{"SORT", "l", "DESC", "STORE", "d"}, ":3\r\n", [][]string{{"DEL", "d"}, {"RPUSH", "d", "3", "2", "1"}}},
		{[]string{"SORT", "l", "GET", "w_*", "STORE", "d"}, ":3\r\n", [][]string{{"DEL", "d"}, {"RPUSH", "d", "x", "", ""}}},
		{[]string{"SORT", "l", "LIMIT", "0", "0", "STORE", "d"}, ":0\r\n", [][]string{{"DEL", "d"}}},
		{[]string{"SORT", "l", "LIMIT", "0", "0", "STORE", "d"}, ":0\r\n", nil},
		{[]string{"SORT_RO", "l", "STORE", "d"}, "-" + errSyntax + "\r\n", nil},
	})
}

// TestSortScope checks that a scoped connection may sort the keys of its
// scope but not read keys through BY or GET patterns, which no scope can
// vet: Redis's ACL refuses them to a user without access to every key.
func TestSortScope(t *testing.T) {
	srv, s := scopedSession(t, "u:*")
	run(s, "RPUSH", "u:l", "2", "1")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"SORT", "u:l"}, "*2\r\n$1\r\n1\r\n$1\r\n2\r\n"},
		{[]string{"SORT", "u:l", "BY", "nosort", "GET", "#"}, "*2\r\n$1\r\n2\r\n$1\r\n1\r\n"},
		{[]string{"SORT", "u:l", "STORE", "u:d"}, ":2\r\n"},
		{[]string{"SORT_RO", "u:l", "DESC"}, "*2\r\n$1\r\n2\r\n$1\r\n1\r\n"},
		{[]string{"SORT", "u:l", "STORE", "other"}, "-" + errScopeKey + "\r\n"},
		{[]string{"SORT", "other"}, "-" + errScopeKey + "\r\n"},
		{[]string{"SORT", "u:l", "BY", "secret_*"}, "-" + errScopePattern + "\r\n"},
		{[]string{"SORT", "u:l", "BY", "u:w_*"}, "-" + errScopePattern + "\r\n"},
		{[]string{"SORT", "u:l", "GET", "secret_*"}, "-" + errScopePattern + "\r\n"},
		{[]string{"SORT_RO", "u:l", "GET", "h_*->f"}, "-" + errScopePattern + "\r\n"},
	}
	for _, c := range cases {
		if rep := run(s, c.args...); rep != c.want {
			t.Errorf("%q: %q, want %q", c.args, rep, c.want)
		}
	}
	// An unscoped connection reads through patterns.
	plain, err := srv.NewSession(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	run(plain, "SET", "secret_1", "s")
	if rep := run(plain, "SORT", "u:l", "GET", "secret_*"); !strings.Contains(rep, "$1\r\ns\r\n") {
		t.Errorf("unscoped SORT GET: %q", rep)
	}
}

// TestSortPatternLocks checks that a SORT with BY or GET patterns locks its
// whole database, and one without them only its keys.
func TestSortPatternLocks(t *testing.T) {
	s := plainSession(t)
	cases := []struct {
		args []string
		all  bool
	}{
		{[]string{"SORT", "k"}, false},
		{[]string{"SORT", "k", "BY", "nosort", "GET", "#", "STORE", "d"}, false},
		{[]string{"SORT", "k", "BY", "w_*"}, true},
		{[]string{"SORT", "k", "GET", "#", "GET", "h_*->f"}, true},
		{[]string{"SORT_RO", "k", "LIMIT", "0", "1", "GET", "x*"}, true},
		{[]string{"SORT", "k", "BOGUS", "GET", "x*"}, false},
	}
	for _, c := range cases {
		args := toArgs(c.args...)
		cmd := s.srv.table.Lookup(args[0])
		s.addLocks(cmd, args, 0)
		if all := s.masks[0] == ^uint64(0); all != c.all {
			t.Errorf("%q: whole database locked %v, want %v", c.args, all, c.all)
		}
		s.masks[0], s.lockDB = 0, 0
	}
}
