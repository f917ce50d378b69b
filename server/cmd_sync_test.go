package server

import (
	"strconv"
	"strings"
	"testing"
)

// mutationPush encodes the push ">N args…" as the sync layer sends it.
func mutationPush(args ...string) string {
	var b strings.Builder
	b.WriteString(">" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString(bulk(a))
	}
	return b.String()
}

// TestQSubExpiry checks the exact frames of a QSUB whose keys have times to
// live: after the qstate reply come, key by key in its order, the
// hydration pushes of a non-string key and then PEXPIREAT key <unix-ms>
// for every key with a time to live. Keys without one get no PEXPIREAT.
func TestQSubExpiry(t *testing.T) {
	const now = int64(1_700_000_000_000)
	ms := func(d int64) string { return strconv.FormatInt(now+d, 10) }
	tests := []struct {
		name    string
		setup   [][]string
		pattern string
		want    []string // the reply, then each push
	}{
		{
			name:    "no time to live",
			setup:   [][]string{{"SET", "k:s", "v"}, {"HSET", "k:h", "f", "v"}},
			pattern: "k:*",
			want: []string{
				"*6\r\n" + bulk("qstate") + bulk("k:*") + bulk("k:h") + "+hash\r\n" + bulk("k:s") + bulk("v"),
				mutationPush("DEL", "k:h"), mutationPush("HSET", "k:h", "f", "v"),
			},
		},
		{
			name:    "string",
			setup:   [][]string{{"SET", "k:a", "1"}, {"SET", "k:b", "2", "PX", "5000"}},
			pattern: "k:*",
			want: []string{
				"*6\r\n" + bulk("qstate") + bulk("k:*") + bulk("k:a") + bulk("1") + bulk("k:b") + bulk("2"),
				mutationPush("PEXPIREAT", "k:b", ms(5000)),
			},
		},
		{
			name: "every type, in key order",
			setup: [][]string{
				{"SET", "t:s", "v", "PXAT", ms(1000)},
				{"HSET", "t:h", "f", "v"}, {"PEXPIRE", "t:h", "2000"},
				{"RPUSH", "t:l", "a", "b"},
				{"SADD", "t:set", "m"}, {"EXPIRE", "t:set", "3"},
				{"ZADD", "t:z", "1", "m"}, {"PEXPIREAT", "t:z", ms(4000)},
				{"JSET", "t:j", "$", `{"a": [1, 2.50]}`}, {"PEXPIRE", "t:j", "5000"},
				{"THROTTLE", "t:r", "2", "10", "1"},
			},
			pattern: "t:*",
			want: []string{
				"*16\r\n" + bulk("qstate") + bulk("t:*") + bulk("t:h") + "+hash\r\n" + bulk("t:j") + "+json\r\n" +
					bulk("t:l") + "+list\r\n" + bulk("t:r") + "+ratelimit\r\n" + bulk("t:s") + bulk("v") +
					bulk("t:set") + "+set\r\n" + bulk("t:z") + "+zset\r\n",
				mutationPush("DEL", "t:h"), mutationPush("HSET", "t:h", "f", "v"), mutationPush("PEXPIREAT", "t:h", ms(2000)),
				mutationPush("DEL", "t:j"), mutationPush("JSET", "t:j", "$", `{"a":[1,2.50]}`), mutationPush("PEXPIREAT", "t:j", ms(5000)),
				mutationPush("DEL", "t:l"), mutationPush("RPUSH", "t:l", "a", "b"),
				mutationPush("DEL", "t:r"), mutationPush("RLSET", "t:r", strconv.FormatInt(now*1e6+1e8, 10), "100000000", "2"),
				mutationPush("PEXPIREAT", "t:r", ms(100)),
				mutationPush("PEXPIREAT", "t:s", ms(1000)),
				mutationPush("DEL", "t:set"), mutationPush("SADD", "t:set", "m"), mutationPush("PEXPIREAT", "t:set", ms(3000)),
				mutationPush("DEL", "t:z"), mutationPush("ZADD", "t:z", "1", "m"), mutationPush("PEXPIREAT", "t:z", ms(4000)),
			},
		},
		{
			name:    "persisted",
			setup:   [][]string{{"SET", "p:a", "1", "EX", "10"}, {"PERSIST", "p:a"}},
			pattern: "p:*",
			want:    []string{"*4\r\n" + bulk("qstate") + bulk("p:*") + bulk("p:a") + bulk("1")},
		},
		{
			name:    "only the query's keys",
			setup:   [][]string{{"SET", "q:a", "1", "EX", "10"}, {"SET", "other", "2", "EX", "10"}},
			pattern: "q:*",
			want: []string{
				"*4\r\n" + bulk("qstate") + bulk("q:*") + bulk("q:a") + bulk("1"),
				mutationPush("PEXPIREAT", "q:a", ms(10000)),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := New(DefaultConfig())
			srv.ks.Now = func() int64 { return now }
			s, err := srv.NewSession(nil, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, args := range tt.setup {
				if rep := psExec(s, args...); strings.HasPrefix(rep, "-") {
					t.Fatalf("%q: %q", args, rep)
				}
			}
			got := psExec(s, "QSUB", tt.pattern)
			if want := strings.Join(tt.want, ""); got != want {
				t.Errorf("QSUB %s:\n got %q\nwant %q", tt.pattern, got, want)
			}
		})
	}
}

// TestQSubExpiryExpired checks that a key whose time to live has passed,
// but which no command has deleted yet, is neither in the state nor given
// a PEXPIREAT.
func TestQSubExpiryExpired(t *testing.T) {
	now := int64(1_700_000_000_000)
	srv := New(DefaultConfig())
	srv.ks.Now = func() int64 { return now }
	s, err := srv.NewSession(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	psExec(s, "SET", "x:gone", "v", "PX", "10")
	psExec(s, "HSET", "x:h", "f", "v")
	psExec(s, "PEXPIRE", "x:h", "20")
	psExec(s, "SET", "x:kept", "v", "PX", "1000")
	now += 500
	want := "*4\r\n" + bulk("qstate") + bulk("x:*") + bulk("x:kept") + bulk("v") +
		mutationPush("PEXPIREAT", "x:kept", strconv.FormatInt(now+500, 10))
	if got := psExec(s, "QSUB", "x:*"); got != want {
		t.Errorf("QSUB:\n got %q\nwant %q", got, want)
	}
}
