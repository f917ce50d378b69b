package server_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// keySpecLines are commands with mixed read and write keys, or keys whose
// flags are not their command's read or write: COMMAND GETKEYSANDFLAGS
// and ACL DRYRUN of each must match redis-server's.
var keySpecLines = []string{
	"get src1", "set dst1 v", "set dst1 v get", "set dst1 v nx px 10", "getset dst1 v", "getdel src1",
	"incr dst1", "append dst1 x", "setnx dst1 v", "setex dst1 10 v", "psetex dst1 10 v", "setrange dst1 0 x",
	"mset dst1 a dst2 b", "msetnx dst1 a src1 b", "mget src1 dst1", "strlen src1", "getrange src1 0 1",
	"exists src1 dst1", "type src1", "touch src1", "ttl src1", "expire dst1 10", "persist dst1", "del dst1 src1", "unlink dst1",
	"copy src1 dst1", "copy src1 dst1 db 1 replace", "rename src1 dst1", "renamenx src1 dst1", "dump src1", "restore dst1 0 x",
	"lpush dst1 a", "rpop src1", "lmove src1 dst1 left right", "rpoplpush src1 dst1", "blmove src1 dst1 left right 0",
	"brpoplpush src1 dst1 0", "blpop src1 src2 0", "lmpop 2 src1 dst1 left", "llen src1", "lset dst1 0 x", "ltrim dst1 0 1", "lrem dst1 0 x", "linsert dst1 before a b",
	"sadd dst1 a", "srem dst1 a", "smove src1 dst1 a", "sunionstore dst1 src1 src2", "sinterstore dst1 src1 src2", "sdiffstore dst1 src1",
	"sismember src1 a", "scard src1", "sintercard 2 src1 src2", "spop src1",
	"zadd dst1 1 a", "zunionstore dst1 2 src1 src2", "zinterstore dst1 2 src1 src2 weights 1 2", "zdiffstore dst1 1 src1",
	"zrangestore dst1 src1 0 -1", "zpopmin src1", "zmpop 1 src1 min", "bzpopmax src1 0", "zrem dst1 a", "zremrangebyscore dst1 0 1", "zcard src1",
	"hset dst1 f v", "hsetnx dst1 f v", "hdel dst1 f", "hget src1 f", "hlen src1", "hexists src1 f", "hstrlen src1 f", "hincrby dst1 f 1",
	"geoadd dst1 0 0 m", "geosearchstore dst1 src1 frommember m byradius 1 m", "georadius src1 0 0 1 m store dst1",
	"georadius src1 0 0 1 m storedist dst1 store dst2", "georadiusbymember src1 m 1 m store dst1", "geodist src1 a b",
	"sort src1", "sort src1 store dst1", "sort src1 limit 0 1 store dst1 alpha", "sort_ro src1",
	"bitop and dst1 src1 src2", "bitfield src1 get u8 0", "bitfield dst1 set u8 0 1", "bitfield dst1 overflow sat incrby u8 0 1", "bitfield src1", "bitcount src1",
	"pfadd dst1 a", "pfcount src1", "pfmerge dst1 src1 src2",
	"xadd dst1 * f v", "xdel dst1 0-1", "xtrim dst1 maxlen 1", "xlen src1", "xread streams src1 src2 0 0", "xreadgroup group g c streams src1 0",
	"xgroup create dst1 g $", "xgroup destroy dst1 g", "xack dst1 g 0-1", "xautoclaim dst1 g c 0 0", "xclaim dst1 g c 0 0-1", "xsetid dst1 0-1",
	"object encoding src1", "memory usage src1", "watch src1",
	"eval x 2 src1 dst1", "eval_ro x 1 src1", "fcall f 1 dst1", "eval x 0",
	"migrate h 1 src1 0 1", `migrate h 1 "" 0 1 keys src1 dst1`,
}

// TestKeySpecsMatchRedis runs COMMAND GETKEYSANDFLAGS, COMMAND GETKEYS and
// ACL DRYRUN for users with read-only, write-only and mixed key patterns
// on every line of keySpecLines against redis-server and recached, and
// compares the replies byte for byte: the command table's key specs decide
// ACL key permissions as Redis's do.
func TestKeySpecsMatchRedis(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	users := [][]string{
		{"ro", "%R~*"},
		{"wo", "%W~*"},
		{"mixed", "%R~src*", "%W~dst*"},
		{"srconly", "~src*"},
		{"rwmix", "%R~src*", "%W~dst*", "%RW~dst2"},
	}
	redis := servertest.Dial(t, servertest.StartRedis(t))
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	rec := servertest.Dial(t, addr)
	for _, u := range users {
		args := append([]string{"acl", "setuser", u[0], "reset", "on", "nopass", "+@all"}, u[1:]...)
		servertest.MustDo(t, redis, args...)
		servertest.MustDo(t, rec, args...)
	}
	do := func(c *servertest.Client, args []string) string {
		rep, err := c.Do(args...)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		return string(rep)
	}
	for _, line := range keySpecLines {
		words := splitQuoted(line)
		var runs [][]string
		runs = append(runs, append([]string{"command", "getkeysandflags"}, words...))
		runs = append(runs, append([]string{"command", "getkeys"}, words...))
		for _, u := range users {
			runs = append(runs, append([]string{"acl", "dryrun", u[0]}, words...))
		}
		for _, args := range runs {
			want, got := do(redis, args), do(rec, args)
			if want != got {
				t.Errorf("%q:\nredis-server %q\nrecached     %q", args, want, got)
			}
		}
	}
}

// TestKeySpecErrors: COMMAND GETKEYS and GETKEYSANDFLAGS answer commands
// without keys, with too few arguments, with no keys found and scripts
// without keys as Redis does.
func TestKeySpecErrors(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	redis := servertest.Dial(t, servertest.StartRedis(t))
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	rec := servertest.Dial(t, addr)
	for _, line := range []string{
		"getkeys get", "getkeys get a b", "getkeys nosuch a", "getkeys spublish c m", "getkeys ssubscribe c",
		"getkeys lmpop 0 a left", "getkeys eval x 0", "getkeysandflags fcall_ro f 0", "getkeys set a b c d e",
		"getkeysandflags ping x", "getkeys migrate h 1 k 0 1 keys a b", "getkeys georadius k 0 0 1 m store",
		"getkeys memory usage k", "getkeys xgroup create k g $", "getkeysandflags object freq k",
	} {
		args := append([]string{"command"}, strings.Fields(line)...)
		want, _ := redis.Do(args...)
		got, _ := rec.Do(args...)
		if string(want) != string(got) {
			t.Errorf("%q:\nredis-server %q\nrecached     %q", args, want, got)
		}
	}
}

// splitQuoted splits a line at spaces, "" standing for an empty argument.
func splitQuoted(line string) []string {
	words := strings.Fields(line)
	for i, w := range words {
		if w == `""` {
			words[i] = ""
		}
	}
	return words
}

// TestClusterDisabledMatchesRedis: CLUSTER and its subcommands exist as on
// a redis-server without cluster support, each answering that it is
// disabled, and COMMAND LIST finds them.
func TestClusterDisabledMatchesRedis(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	redis := servertest.Dial(t, servertest.StartRedis(t))
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	rec := servertest.Dial(t, addr)
	for _, line := range []string{
		"cluster info", "cluster help", "cluster keyslot k", "cluster nosuch", "cluster",
		"command list filterby pattern cl*help", "command list filterby pattern cluster|set*",
		"acl cat admin",
	} {
		args := strings.Fields(line)
		want, _ := redis.Do(args...)
		got, _ := rec.Do(args...)
		if line == "acl cat admin" || strings.HasPrefix(line, "command list") {
			want, got = []byte(sortedElements(t, want)), []byte(sortedElements(t, got))
			if line == "acl cat admin" {
				// Only the CLUSTER subcommands: the rest is the ACL tests'.
				want, got = []byte(onlyCluster(string(want))), []byte(onlyCluster(string(got)))
			}
		}
		if string(want) != string(got) {
			t.Errorf("%q:\nredis-server %q\nrecached     %q", args, want, got)
		}
	}
}

func sortedElements(t *testing.T, reply []byte) string {
	els, err := servertest.Elements(reply)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range els {
		out = append(out, string(e))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func onlyCluster(list string) string {
	var out []string
	for _, w := range strings.Fields(list) {
		if strings.HasPrefix(w, "cluster") {
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
}
