package server

import (
	"strconv"
	"strings"
	"testing"
)

// TestSizedWritesKeepUsedExact runs, for each command that counts the
// size of the value it changes in place itself (FlagSized), writes that
// grow keys across their encodings' thresholds, and checks after each
// that the keyspace's used memory equals a full recount: accounting every
// key again (DB.Account, what dispatch does for the other writes) must
// not move it.
func TestSizedWritesKeepUsedExact(t *testing.T) {
	long := strings.Repeat("v", 80) // past the listpack value limits
	cases := []struct {
		name string
		key  string
		cmd  func(i int) []string
	}{
		{"lpush", "l", func(i int) []string { return []string{"lpush", "l", "e" + strconv.Itoa(i), long[:i%80]} }},
		{"rpush", "l", func(i int) []string { return []string{"rpush", "l", long[:i%80]} }},
		{"lpushx", "l", func(i int) []string { return []string{"lpushx", "l", "e" + strconv.Itoa(i)} }},
		{"rpushx", "l", func(i int) []string { return []string{"rpushx", "l", long[:i%80]} }},
		{"hset", "h", func(i int) []string {
			return []string{"hset", "h", "f" + strconv.Itoa(i%150), long[:i%80], "g", strconv.Itoa(i)}
		}},
		{"hmset", "h", func(i int) []string { return []string{"hmset", "h", "f" + strconv.Itoa(i), long[:i%80]} }},
		{"hsetnx", "h", func(i int) []string { return []string{"hsetnx", "h", "f" + strconv.Itoa(i%170), long[:i%80]} }},
		{"sadd ints", "s", func(i int) []string { return []string{"sadd", "s", strconv.Itoa(i * 1000), strconv.Itoa(i % 7)} }},
		{"sadd strings", "s", func(i int) []string { return []string{"sadd", "s", "m" + strconv.Itoa(i%180) + long[:i%70]} }},
		{"zadd", "z", func(i int) []string {
			return []string{"zadd", "z", strconv.Itoa(i), "m" + strconv.Itoa(i%170) + long[:i%70]}
		}},
		{"zadd xx", "z", func(i int) []string {
			return []string{"zadd", "z", "xx", "ch", strconv.Itoa(-i), "m" + strconv.Itoa(i%170)}
		}},
		{"zadd incr", "z", func(i int) []string { return []string{"zadd", "z", "incr", "1.5", "m" + strconv.Itoa(i%150)} }},
		{"zincrby", "z", func(i int) []string { return []string{"zincrby", "z", "2", "n" + strconv.Itoa(i)} }},
		{"geoadd", "z", func(i int) []string {
			return []string{"geoadd", "z", strconv.Itoa(i%170 - 85), strconv.Itoa(i%160 - 80), "p" + strconv.Itoa(i) + long[:i%70]}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := plainSession(t)
			// The X forms write existing keys only.
			run(s, "rpush", "l", "first")
			for i := range 170 {
				run(s, "zadd", "z", "0", "m"+strconv.Itoa(i))
			}
			keys := []string{"l", "h", "s", "z"}
			for i := range 200 {
				if r := run(s, c.cmd(i)...); strings.HasPrefix(r, "-") {
					t.Fatalf("%v: %s", c.cmd(i), r)
				}
				used := s.srv.ks.Used()
				for _, k := range keys {
					s.db.Account([]byte(k))
				}
				if got := s.srv.ks.Used(); got != used {
					t.Fatalf("after %v: used memory %d, %d on a recount", c.cmd(i), used, got)
				}
			}
			if s.db.Lookup([]byte(c.key)) == nil {
				t.Fatalf("%s left no key %q", c.name, c.key)
			}
		})
	}
}
