package difftest

import (
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// template is a command generator and how to compare its reply.
type template struct {
	mode string // "", "sort" or "sortpairs", as in the scripts
	gen  func(t *rapid.T) []string
}

// A small world of keys, fields and members, so that random commands meet
// each other's keys, of every type, and run into WRONGTYPE and empty-key
// deletions.
var (
	keys    = rapid.SampledFrom([]string{"a", "b", "c", "d"})
	members = rapid.SampledFrom([]string{"x", "y", "z", "1", "2", "10", "-3", ""})
	ints    = rapid.IntRange(-5, 12)
	scores  = rapid.SampledFrom([]string{"0", "1", "1.5", "-2", "10", "+inf", "-inf", "3e2"})
)

func num(t *rapid.T, label string) string { return strconv.Itoa(ints.Draw(t, label)) }

func cmd(name string, parts ...func(t *rapid.T) string) func(t *rapid.T) []string {
	return func(t *rapid.T) []string {
		out := []string{name}
		for _, p := range parts {
			out = append(out, p(t))
		}
		return out
	}
}

func key(t *rapid.T) string    { return keys.Draw(t, "key") }
func member(t *rapid.T) string { return members.Draw(t, "member") }
func n(t *rapid.T) string      { return num(t, "n") }
func score(t *rapid.T) string  { return scores.Draw(t, "score") }
func where(t *rapid.T) string {
	return rapid.SampledFrom([]string{"BEFORE", "AFTER"}).Draw(t, "where")
}

func lit(s string) func(*rapid.T) string {
	return func(*rapid.T) string { return s }
}

var templates = []template{
	{"", cmd("SET", key, member)},
	{"", cmd("GET", key)},
	{"", cmd("APPEND", key, member)},
	{"", cmd("INCR", key)},
	{"", cmd("INCRBY", key, n)},
	{"", cmd("DECR", key)},
	{"", cmd("STRLEN", key)},
	{"", cmd("GETRANGE", key, n, n)},
	{"", cmd("SETRANGE", key, func(t *rapid.T) string { return strconv.Itoa(rapid.IntRange(0, 6).Draw(t, "off")) }, member)},
	{"", cmd("MGET", key, key)},
	{"", cmd("DEL", key)},
	{"", cmd("EXISTS", key, key)},
	{"", cmd("TYPE", key)},
	{"", cmd("GETDEL", key)},
	{"", cmd("SETNX", key, member)},
	{"", cmd("RENAME", key, key)},
	{"", cmd("EXPIRE", key, lit("100"))},
	{"", cmd("TTL", key)},
	{"", cmd("PERSIST", key)},
	{"", cmd("HSET", key, member, member)},
	{"", cmd("HGET", key, member)},
	{"", cmd("HDEL", key, member, member)},
	{"", cmd("HLEN", key)},
	{"", cmd("HINCRBY", key, member, n)},
	{"", cmd("HEXISTS", key, member)},
	{"sortpairs", cmd("HGETALL", key)},
	{"sort", cmd("HKEYS", key)},
	{"", cmd("HSTRLEN", key, member)},
	{"", cmd("LPUSH", key, member, member)},
	{"", cmd("RPUSH", key, member)},
	{"", cmd("LPOP", key)},
	{"", cmd("RPOP", key, func(t *rapid.T) string { return strconv.Itoa(rapid.IntRange(0, 3).Draw(t, "count")) })},
	{"", cmd("LRANGE", key, n, n)},
	{"", cmd("LLEN", key)},
	{"", cmd("LINDEX", key, n)},
	{"", cmd("LREM", key, n, member)},
	{"", cmd("LINSERT", key, where, member, member)},
	{"", cmd("LSET", key, n, member)},
	{"", cmd("LTRIM", key, n, n)},
	{"", cmd("LPOS", key, member)},
	{"", cmd("SADD", key, member, member)},
	{"", cmd("SREM", key, member)},
	{"", cmd("SCARD", key)},
	{"", cmd("SISMEMBER", key, member)},
	{"sort", cmd("SMEMBERS", key)},
	{"sort", cmd("SINTER", key, key)},
	{"sort", cmd("SUNION", key, key)},
	{"sort", cmd("SDIFF", key, key)},
	{"", cmd("SINTERSTORE", key, key, key)},
	{"", cmd("ZADD", key, score, member)},
	{"", cmd("ZINCRBY", key, n, member)},
	{"", cmd("ZRANGE", key, n, n, lit("WITHSCORES"))},
	{"", cmd("ZRANGEBYSCORE", key, score, score)},
	{"", cmd("ZREM", key, member)},
	{"", cmd("ZCARD", key)},
	{"", cmd("ZSCORE", key, member)},
	{"", cmd("ZRANK", key, member)},
	{"", cmd("ZPOPMIN", key)},
	{"", cmd("ZCOUNT", key, score, score)},
}

// TestPropertyRandomCommands runs random command sequences over a small
// keyspace on redis-server and recached and requires the same replies.
func TestPropertyRandomCommands(t *testing.T) {
	rc := servertest.Dial(t, servertest.StartRedis(t))
	ourAddr, _ := servertest.StartRecached(t, server.DefaultConfig())
	oc := servertest.Dial(t, ourAddr)
	pick := rapid.IntRange(0, len(templates)-1)
	for _, proto := range []string{"2", "3"} {
		for _, c := range []*servertest.Client{rc, oc} {
			if _, err := c.Do("HELLO", proto); err != nil {
				t.Fatal(err)
			}
		}
		t.Run("resp"+proto, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				for _, c := range []*servertest.Client{rc, oc} {
					if _, err := c.Do("FLUSHALL"); err != nil {
						rt.Fatal(err)
					}
				}
				steps := rapid.IntRange(1, 40).Draw(rt, "steps")
				for i := 0; i < steps; i++ {
					tp := templates[pick.Draw(rt, "command")]
					args := tp.gen(rt)
					want, err := rc.Do(args...)
					if err != nil {
						rt.Fatalf("redis %q: %v", args, err)
					}
					got, err := oc.Do(args...)
					if err != nil {
						rt.Fatalf("recached %q: %v", args, err)
					}
					if normalize(tp.mode, got) != normalize(tp.mode, want) {
						rt.Fatalf("step %d %q\n redis:    %q\n recached: %q", i, args, want, got)
					}
				}
			})
		})
	}
}
