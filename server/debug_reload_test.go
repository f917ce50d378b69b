package server

import (
	"strconv"
	"strings"
	"testing"
)

// TestDebugReload saves, empties and reloads the dataset in recached's
// snapshot format: values, types and times to live survive, a restart
// afterwards finds the same data (no write counted twice from the log),
// NOFLUSH without MERGE refuses a conflicting key with nothing changed,
// NOSAVE is refused while the log holds writes the snapshot lacks, and
// with the log off NOSAVE NOFLUSH MERGE adds the snapshot to the dataset.
func TestDebugReload(t *testing.T) {
	for _, aof := range []bool{true, false} {
		name := map[bool]string{true: "appendonly", false: "no log"}[aof]
		t.Run(name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Dir, cfg.Save, cfg.AppendOnly = t.TempDir(), "", aof
			cfg.Params = map[string]string{"enable-debug-command": "yes"}
			srv := New(cfg)
			if err := srv.OpenPersistence(); err != nil {
				t.Fatal(err)
			}
			s, err := srv.NewSession(nil, false)
			if err != nil {
				t.Fatal(err)
			}
			run(s, "SET", "n", "10")
			run(s, "INCR", "n")
			run(s, "RPUSH", "l", "a", "b")
			run(s, "HSET", "h", "f", "v")
			run(s, "SET", "t", "v", "EX", "1000")
			run(s, "SELECT", "3")
			run(s, "SADD", "s3", "x")
			run(s, "SELECT", "0")
			check := func(when string, keys int) {
				t.Helper()
				for _, c := range []struct{ args, want string }{
					{"GET n", "$2\r\n11\r\n"}, {"LRANGE l 0 -1", "*2\r\n$1\r\na\r\n$1\r\nb\r\n"},
					{"HGET h f", "$1\r\nv\r\n"}, {"DBSIZE", ":" + strconv.Itoa(keys) + "\r\n"},
				} {
					if got := run(s, strings.Fields(c.args)...); got != c.want {
						t.Errorf("%s: %s = %q, want %q", when, c.args, got, c.want)
					}
				}
				if ttl, _ := strconv.Atoi(strings.Trim(run(s, "TTL", "t"), ":\r\n")); ttl < 990 || ttl > 1000 {
					t.Errorf("%s: TTL t = %d", when, ttl)
				}
				run(s, "SELECT", "3")
				if got := run(s, "SMEMBERS", "s3"); got != "*1\r\n$1\r\nx\r\n" {
					t.Errorf("%s: SMEMBERS s3 in db 3 = %q", when, got)
				}
				run(s, "SELECT", "0")
			}
			for _, c := range []struct{ args, want string }{
				{"DEBUG RELOAD", "+OK\r\n"},
				{"DEBUG RELOAD NOFLUSH", "-ERR Error trying to load the RDB dump\r\n"},
				{"DEBUG RELOAD MERGE NOFLUSH", "+OK\r\n"},
				{"DEBUG RELOAD bogus", "-ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.\r\n"},
				{"DEBUG RELOAD NOSAVE", "+OK\r\n"},
			} {
				if got := run(s, strings.Fields(c.args)...); got != c.want {
					t.Fatalf("%s: %q, want %q", c.args, got, c.want)
				}
				check(c.args, 4)
			}
			run(s, "SET", "later", "1")
			if aof {
				if got := run(s, "DEBUG", "RELOAD", "NOSAVE"); !strings.HasPrefix(got, "-ERR DEBUG RELOAD NOSAVE would drop") {
					t.Fatalf("NOSAVE with unsaved writes in the log: %q", got)
				}
				if got := run(s, "GET", "later"); got != "$1\r\n1\r\n" {
					t.Fatalf("a refused NOSAVE changed the data: %q", got)
				}
			} else {
				run(s, "SET", "n", "99")
				if got := run(s, "DEBUG", "RELOAD", "NOSAVE", "NOFLUSH", "MERGE"); got != "+OK\r\n" {
					t.Fatalf("NOSAVE NOFLUSH MERGE: %q", got)
				}
				if n, l := run(s, "GET", "n"), run(s, "GET", "later"); n != "$2\r\n11\r\n" || l != "$1\r\n1\r\n" {
					t.Fatalf("after MERGE: n %q later %q, want the snapshot's n and the kept key", n, l)
				}
				if got := run(s, "DEBUG", "RELOAD", "NOSAVE"); got != "+OK\r\n" {
					t.Fatalf("NOSAVE: %q", got)
				}
				if got := run(s, "EXISTS", "later"); got != ":0\r\n" {
					t.Fatalf("NOSAVE kept a key the snapshot lacks: %q", got)
				}
			}
			s.release()
			if err := srv.ClosePersistence(); err != nil {
				t.Fatal(err)
			}
			again := New(cfg)
			if err := again.OpenPersistence(); err != nil {
				t.Fatal(err)
			}
			defer again.ClosePersistence()
			if s, err = again.NewSession(nil, false); err != nil {
				t.Fatal(err)
			}
			// With the log, the write after the reload survives too; without
			// it and without save rules there is no shutdown snapshot.
			want, keys := "$1\r\n1\r\n", 5
			if !aof {
				want, keys = "$-1\r\n", 4
			}
			check("after a restart", keys)
			if got := run(s, "GET", "later"); got != want {
				t.Errorf("after a restart: later = %q, want %q", got, want)
			}
		})
	}
}
