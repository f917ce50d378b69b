package server

import (
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

func TestSetEffects(t *testing.T) {
	tests := []effectStep{
		{[]string{"SADD", "s", "a", "b", "a"}, ":2\r\n", [][]string{{"SADD", "s", "a", "b"}}},
		{[]string{"SADD", "s", "a"}, ":0\r\n", nil},
		{[]string{"SADD", "s", "c", "a"}, ":1\r\n", [][]string{{"SADD", "s", "c"}}},
		{[]string{"SREM", "s", "a", "zz"}, ":1\r\n", [][]string{{"SREM", "s", "a"}}},
		{[]string{"SREM", "s", "zz"}, ":0\r\n", nil},
		{[]string{"SREM", "nokey", "zz"}, ":0\r\n", nil},
		{[]string{"SMOVE", "s", "t", "b"}, ":1\r\n", [][]string{{"SREM", "s", "b"}, {"SADD", "t", "b"}}},
		{[]string{"SMOVE", "s", "t", "zz"}, ":0\r\n", nil},
		{[]string{"SMOVE", "t", "t", "b"}, ":1\r\n", nil},
		{[]string{"SMOVE", "s", "t", "c"}, ":1\r\n", [][]string{{"SREM", "s", "c"}, {"SADD", "t", "c"}}},
		{[]string{"EXISTS", "s"}, ":0\r\n", nil},
		{[]string{"SUNIONSTORE", "d", "t"}, ":2\r\n", nil}, // checked below: DEL d, SADD d b c in any order
		{[]string{"SINTERSTORE", "d", "t", "nokey"}, ":0\r\n", [][]string{{"DEL", "d"}}},
		{[]string{"SINTERSTORE", "d", "t", "nokey"}, ":0\r\n", nil},
		{[]string{"SDIFFSTORE", "d", "t", "t"}, ":0\r\n", nil},
		{[]string{"SADD", "one", "m"}, ":1\r\n", [][]string{{"SADD", "one", "m"}}},
		{[]string{"SPOP", "one"}, "$1\r\nm\r\n", [][]string{{"SREM", "one", "m"}}},
		{[]string{"SPOP", "one"}, "$-1\r\n", nil},
		{[]string{"SADD", "two", "x"}, ":1\r\n", [][]string{{"SADD", "two", "x"}}},
		{[]string{"SPOP", "two", "5"}, "*1\r\n$1\r\nx\r\n", [][]string{{"SREM", "two", "x"}}},
		{[]string{"SPOP", "t", "0"}, "*0\r\n", nil},
		{[]string{"SMEMBERS", "t"}, "", nil},
		{[]string{"SRANDMEMBER", "t", "-5"}, "", nil},
		{[]string{"SINTERCARD", "1", "t"}, ":2\r\n", nil},
		{[]string{"SSCAN", "t", "0"}, "", nil},
	}
	r := newEffectRecorder(t)
	for _, tc := range tests {
		reply, effects := r.run(tc.args...)
		if tc.reply != "" && reply != tc.reply {
			t.Errorf("%q: reply %q, want %q", tc.args, reply, tc.reply)
		}
		if tc.args[0] == "SUNIONSTORE" {
			if len(effects) != 2 || !slices.Equal(effects[0], []string{"DEL", "d"}) {
				t.Errorf("%q: effects %q", tc.args, effects)
				continue
			}
			add := slices.Clone(effects[1])
			sort.Strings(add[2:])
			if !slices.Equal(add, []string{"SADD", "d", "b", "c"}) {
				t.Errorf("%q: effects %q", tc.args, effects)
			}
			continue
		}
		checkEffects(t, tc.args, effects, tc.effects)
	}
}

func TestSetEffectsReplay(t *testing.T) {
	keys := []string{"s1", "s2", "s3"}
	replayCheck(t, rand.New(rand.NewPCG(11, 12)), 3000, keys, dumpKey, func(r *rand.Rand) []string {
		k := func() string { return keys[r.IntN(len(keys))] }
		m := func() string {
			if r.IntN(2) == 0 {
				return strconv.Itoa(r.IntN(30))
			}
			return "m" + strconv.Itoa(r.IntN(30))
		}
		switch r.IntN(12) {
		case 0, 1, 2:
			args := []string{"SADD", k()}
			for n := 1 + r.IntN(5); n > 0; n-- {
				args = append(args, m())
			}
			return args
		case 3:
			args := []string{"SREM", k()}
			for n := 1 + r.IntN(5); n > 0; n-- {
				args = append(args, m())
			}
			return args
		case 4:
			return []string{"SPOP", k()}
		case 5:
			return []string{"SPOP", k(), strconv.Itoa(r.IntN(8))}
		case 6:
			return []string{"SMOVE", k(), k(), m()}
		case 7:
			return []string{"SUNIONSTORE", k(), k(), k()}
		case 8:
			return []string{"SINTERSTORE", k(), k(), k()}
		case 9:
			return []string{"SDIFFSTORE", k(), k(), k()}
		case 10:
			return []string{"EXPIRE", k(), "100"}
		default:
			return []string{"SRANDMEMBER", k(), strconv.Itoa(r.IntN(10) - 5)}
		}
	})
}

// TestSetRandomCounts checks SRANDMEMBER and SPOP counts against the set:
// distinct members for positive counts, members of the set always.
func TestSetRandomCounts(t *testing.T) {
	r := newEffectRecorder(t)
	members := map[string]bool{}
	args := []string{"SADD", "s"}
	for i := 0; i < 100; i++ {
		m := "m" + strconv.Itoa(i)
		members[m] = true
		args = append(args, m)
	}
	r.run(args...)
	elements := func(reply string) []string {
		var out []string
		parts := strings.Split(reply, "\r\n")
		for i := 2; i < len(parts); i += 2 {
			out = append(out, parts[i])
		}
		return out
	}
	for _, count := range []int{1, 10, 49, 50, 51, 99, 100, 150, -1, -300} {
		reply, _ := r.run("SRANDMEMBER", "s", strconv.Itoa(count))
		got := elements(reply)
		want := count
		switch {
		case count < 0:
			want = -count
		case count > 100:
			want = 100
		}
		if len(got) != want {
			t.Fatalf("SRANDMEMBER %d: %d members", count, len(got))
		}
		seen := map[string]bool{}
		for _, m := range got {
			if !members[m] {
				t.Fatalf("SRANDMEMBER %d: %q is not a member", count, m)
			}
			if count > 0 && seen[m] {
				t.Fatalf("SRANDMEMBER %d: %q repeated", count, m)
			}
			seen[m] = true
		}
	}
	popped := map[string]bool{}
	for _, count := range []string{"7", "1", "30"} {
		reply, _ := r.run("SPOP", "s", count)
		for _, m := range elements(reply) {
			if !members[m] || popped[m] {
				t.Fatalf("SPOP %s: %q popped twice or not a member", count, m)
			}
			popped[m] = true
		}
	}
	if reply, _ := r.run("SCARD", "s"); reply != ":62\r\n" {
		t.Fatalf("SCARD after popping 38: %q", reply)
	}
}

// TestSScanLargeSet walks a set past the intset limit with a small count:
// the cursor must end at 0 with every member returned.
func TestSScanLargeSet(t *testing.T) {
	r := newEffectRecorder(t)
	const n = 1000
	for i := 0; i < n; i++ {
		r.run("SADD", "big", "m"+strconv.Itoa(i))
	}
	seen := map[string]bool{}
	cursor := "0"
	for calls := 0; ; calls++ {
		if calls > n {
			t.Fatal("SSCAN does not end")
		}
		reply, _ := r.run("SSCAN", "big", cursor, "COUNT", "7", "MATCH", "m*")
		parts := strings.Split(reply, "\r\n")
		cursor = parts[2]
		for i := 5; i < len(parts); i += 2 {
			seen[parts[i]] = true
		}
		if cursor == "0" {
			break
		}
	}
	if len(seen) != n {
		t.Fatalf("SSCAN returned %d of %d members", len(seen), n)
	}
}

func TestSInterCardKeys(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"SINTERCARD", "2", "a", "b"}, []string{"a", "b"}},
		{[]string{"SINTERCARD", "1", "a", "LIMIT", "3"}, []string{"a"}},
		{[]string{"SINTERCARD", "3", "a", "b"}, nil},
		{[]string{"SINTERCARD", "0", "a"}, nil},
		{[]string{"SINTERCARD", "x", "a"}, nil},
	}
	for _, tc := range tests {
		var got []string
		for _, k := range sintercardKeys(toArgs(tc.args...)) {
			got = append(got, string(k))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: keys %q, want %q", tc.args, got, tc.want)
		}
	}
}

// BenchmarkSetCommands measures the common set commands through Exec.
func BenchmarkSetCommands(b *testing.B) {
	s := plainSession(b)
	args := []string{"SADD", "big"}
	for i := 0; i < 10000; i++ {
		args = append(args, "member:"+strconv.Itoa(i))
	}
	run(s, args...)
	cmds := map[string][][]byte{
		"SADD":        {[]byte("SADD"), []byte("s"), []byte("member:1")},
		"SISMEMBER":   {[]byte("SISMEMBER"), []byte("big"), []byte("member:5000")},
		"SRANDMEMBER": {[]byte("SRANDMEMBER"), []byte("big")},
	}
	for _, name := range []string{"SADD", "SISMEMBER", "SRANDMEMBER"} {
		cmd := cmds[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				s.W.B = s.W.B[:0]
				s.Exec(cmd)
			}
		})
	}
}
