package server

import (
	"sort"
	"strings"
	"testing"

	"github.com/recached/recached/server/keyspace"
)

// describeJSONKeys renders every key of database 0 as dumpTyped does.
func describeJSONKeys(srv *Server) string {
	r := &effectRecorder{srv: srv, s: newSession(srv, nil, false)}
	var lines []string
	for i := 0; i < keyspace.NumShards; i++ {
		for _, k := range srv.ks.DBs[0].Keys(i) {
			lines = append(lines, k+" "+dumpTyped(r, k))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestJSONPersistence writes json and ratelimit keys, then restarts from
// the append-only log alone, then from a snapshot plus the log: the keys
// come back exactly.
func TestJSONPersistence(t *testing.T) {
	dir := t.TempDir()
	srv := openPersist(t, dir, nil)
	s := newSession(srv, nil, false)
	writes := [][]string{
		{"JSET", "doc", "$", `{"a":{"b":[1,2]},"n":9007199254740993,"f":0.1}`},
		{"JMERGE", "doc", "$.a", `{"c":"x","b":null}`},
		{"JNUMINCRBY", "doc", "$.n", "1"},
		{"JARRAPPEND", "doc", "$.list", "1"}, // an error: not logged
		{"JSET", "doc", "$.list", "[]"},
		{"JARRAPPEND", "doc", "$.list", `{"k":"v"}`, "true"},
		{"JSET", "gone", "$", "1"},
		{"JDEL", "gone"},
		{"THROTTLE", "rl", "10", "1", "3600", "3"},
		{"DEDUP", "c1", "1", "JMERGE", "doc", "$", `{"f":null}`},
	}
	for _, w := range writes {
		pexec(s, w...)
	}
	want := describeJSONKeys(srv)
	if !strings.Contains(want, `doc json {"a":{"c":"x"},"n":9007199254740994,"list":[{"k":"v"},true]} expires 0`) || !strings.Contains(want, "rl ratelimit") {
		t.Fatalf("before the restart:\n%s", want)
	}
	crash(srv)
	srv = openPersist(t, dir, nil)
	if got := describeJSONKeys(srv); got != want {
		t.Fatalf("replayed from the log:\n%s\nwant\n%s", got, want)
	}
	s = newSession(srv, nil, false)
	if rep := pexec(s, "SAVE"); rep != "+OK\r\n" {
		t.Fatalf("SAVE: %q", rep)
	}
	pexec(s, "JSET", "doc", "$.after", `"save"`)
	want = describeJSONKeys(srv)
	crash(srv)
	srv = openPersist(t, dir, nil)
	if got := describeJSONKeys(srv); got != want {
		t.Fatalf("loaded from the snapshot and the log:\n%s\nwant\n%s", got, want)
	}
	if rep := pexec(newSession(srv, nil, false), "DEDUP", "c1", "1", "JMERGE", "doc", "$", `{"f":1}`); rep != "+DUP\r\n" {
		t.Errorf("the DEDUP mark did not survive: %q", rep)
	}
}
