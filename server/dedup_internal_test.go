package server

import (
	"testing"
)

// TestDedupEffectsCarryMark checks that every effect of a DEDUP-wrapped
// command carries its mark, and that a mark raised without a change is
// reported on its own.
func TestDedupEffectsCarryMark(t *testing.T) {
	srv := New(DefaultConfig())
	var got []Effect
	srv.AddHook(func(e *Effect) {
		c := *e
		c.Args = append([][]byte(nil), e.Args...)
		c.ClientID = append([]byte(nil), e.ClientID...)
		got = append(got, c)
	})
	s, err := srv.NewSession(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if r := run(s, "DEDUP", "cid", "3", "MSET", "a", "1", "b", "2"); r != "+OK\r\n" {
		t.Fatalf("MSET: %q", r)
	}
	if r := run(s, "DEDUP", "cid", "4", "GET", "a"); r != "$1\r\n1\r\n" {
		t.Fatalf("GET: %q", r)
	}
	if r := run(s, "SET", "c", "3"); r != "+OK\r\n" {
		t.Fatalf("SET: %q", r)
	}
	want := []struct {
		cmd, cid string
		wid      uint64
		keyNil   bool
	}{
		{"SET", "cid", 3, false}, {"SET", "cid", 3, false}, {"DEDUP", "cid", 4, true}, {"SET", "", 0, false},
	}
	if len(got) != len(want) {
		t.Fatalf("%d effects, want %d", len(got), len(want))
	}
	for i, w := range want {
		e := got[i]
		if string(e.Args[0]) != w.cmd || string(e.ClientID) != w.cid || e.WireID != w.wid || (e.Key == nil) != w.keyNil {
			t.Errorf("effect %d: %q cid=%q wid=%d key=%q", i, e.Args, e.ClientID, e.WireID, e.Key)
		}
	}
}
