package server

import (
	"strings"
	"testing"
)

// TestFunctionsSurviveRestart loads a library, restarts from the log, then
// saves (a new log generation, whose snapshot holds the libraries) and
// restarts again: FCALL must work after each restart.
func TestFunctionsSurviveRestart(t *testing.T) {
	const lib = "#!lua name=mylib\nredis.register_function('myfunc', function(keys, args) return 'hello' end)"
	for _, save := range []string{"", "SAVE", "BGREWRITEAOF"} {
		t.Run("after "+save, func(t *testing.T) {
			dir := t.TempDir()
			srv := openPersist(t, dir, nil)
			s := newSession(srv, nil, false)
			if rep := pexec(s, "FUNCTION", "LOAD", lib); rep != "$5\r\nmylib\r\n" {
				t.Fatalf("FUNCTION LOAD: %q", rep)
			}
			if save != "" {
				if rep := pexec(s, save); strings.HasPrefix(rep, "-") {
					t.Fatalf("%s: %q", save, rep)
				}
				waitSaved(t, srv)
			}
			crash(srv)
			srv2 := openPersist(t, dir, nil)
			s2 := newSession(srv2, nil, false)
			if rep := pexec(s2, "FCALL", "myfunc", "0"); rep != "$5\r\nhello\r\n" {
				t.Fatalf("FCALL after restart: %q", rep)
			}
			// A second save and restart keeps them too.
			if rep := pexec(s2, "SAVE"); rep != "+OK\r\n" {
				t.Fatalf("SAVE: %q", rep)
			}
			crash(srv2)
			s3 := newSession(openPersist(t, dir, nil), nil, false)
			if rep := pexec(s3, "FCALL", "myfunc", "0"); rep != "$5\r\nhello\r\n" {
				t.Fatalf("FCALL after the second restart: %q", rep)
			}
		})
	}
}
