package main

import (
	"testing"

	"github.com/recached/recached/server/servertest"
)

// TestFunctionsSurviveSaveAndKill loads function libraries into the real
// binary, SAVEs and kills it with SIGKILL: a restart on the same directory
// serves them from the snapshot, with the append-only log off (the
// snapshot alone) and on. A library deleted before the SAVE stays deleted.
func TestFunctionsSurviveSaveAndKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the real binary")
	}
	bin := build(t)
	const keep = "#!lua name=keep\nredis.register_function('hello', function(keys, args) return 'hello ' .. args[1] end)"
	const gone = "#!lua name=gone\nredis.register_function('bye', function() return 'bye' end)"
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"no log", []string{"--appendonly", "no", "--realtime-port", "0"}},
		{"log", []string{"--appendonly", "yes", "--realtime-port", "0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := startIn(t, bin, dir, tt.args...)
			c := servertest.Dial(t, p.addr)
			for _, lib := range []string{keep, gone} {
				if got := servertest.MustDo(t, c, "FUNCTION", "LOAD", lib); got[0] != '$' {
					t.Fatalf("FUNCTION LOAD: %q", got)
				}
			}
			if got := servertest.MustDo(t, c, "FUNCTION", "DELETE", "gone"); got != "+OK\r\n" {
				t.Fatalf("FUNCTION DELETE: %q", got)
			}
			if got := servertest.MustDo(t, c, "SAVE"); got != "+OK\r\n" {
				t.Fatalf("SAVE: %q", got)
			}
			p.kill(t)

			p = startIn(t, bin, dir, tt.args...)
			c = servertest.Dial(t, p.addr)
			if got := servertest.MustDo(t, c, "FCALL", "hello", "0", "you"); got != "$9\r\nhello you\r\n" {
				t.Fatalf("FCALL after the restart: %q\n%s", got, p.output())
			}
			if got := servertest.MustDo(t, c, "FCALL", "bye", "0"); got != "-ERR Function not found\r\n" {
				t.Fatalf("FCALL of the deleted library: %q", got)
			}
			p.kill(t)
		})
	}
}
