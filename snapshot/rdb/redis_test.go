package rdb_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/recached/recached/server/keyspace"
	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/snapshot/rdb"
)

// fill writes every type in every encoding Redis 7.0 has, small and large,
// with expiries, in databases 0, 3 and 15, and a function library.
func fill(t *testing.T, ctx context.Context, c *redis.Client) {
	t.Helper()
	do := func(db int, args ...any) {
		t.Helper()
		if err := c.Do(ctx, "SELECT", db).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.Do(ctx, args...).Err(); err != nil && err != redis.Nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	long := strings.Repeat("compressible text ", 200)
	rnd := make([]byte, 3000)
	for i := range rnd {
		rnd[i] = byte(i*7919 + i*i*31)
	}
	for _, kv := range [][2]string{
		{"s:int8", "-12"}, {"s:int16", "30000"}, {"s:int32", "-2000000000"}, {"s:int64", "9223372036854775807"},
		{"s:zeros", "0123"}, {"s:plus", "+5"}, {"s:empty", ""}, {"s:short", "hello"},
		{"s:long", long}, {"s:binary", string(rnd)}, {"s:nul", "a\x00b\r\n"},
	} {
		do(0, "SET", kv[0], kv[1])
	}
	do(0, "PFADD", "hll", "a", "b", "c")
	do(0, "SET", "s:ttl", "v", "PX", 86400000)
	do(0, "RPUSH", "l:small", "a", "1", "-7", "300", "70000", "5000000000", strings.Repeat("x", 70))
	for i := 0; i < 3000; i++ {
		do(0, "RPUSH", "l:large", fmt.Sprintf("element-%d-%s", i, strings.Repeat("y", i%50)), i)
	}
	do(0, "RPUSH", "l:huge", strings.Repeat("z", 20000), "tail")
	do(0, "SADD", "set:int", 1, 2, 3, -5, 100000, 5000000000)
	for i := 0; i < 600; i++ {
		do(0, "SADD", "set:intlarge", i*3)
		do(0, "SADD", "set:str", fmt.Sprintf("m%d", i))
	}
	do(0, "SADD", "set:strsmall", "a", "b", "1")
	do(0, "HSET", "h:small", "f1", "v1", "n", "123", "neg", "-4096", "e", "")
	for i := 0; i < 200; i++ {
		do(0, "HSET", "h:large", fmt.Sprintf("field%d", i), fmt.Sprintf("value%d", i))
	}
	do(0, "HSET", "h:longval", "f", strings.Repeat("v", 100))
	do(0, "ZADD", "z:small", 1, "a", 2.5, "b", -3, "c", "inf", "top", "-inf", "bottom", 0.1, "tenth", 1e300, "big")
	for i := 0; i < 300; i++ {
		do(0, "ZADD", "z:large", float64(i)/7, fmt.Sprintf("member%d", i))
	}
	do(0, "ZADD", "z:longmember", 1, strings.Repeat("m", 100))
	do(0, "PEXPIRE", "z:small", 86400000*3)
	do(0, "EXPIRE", "h:large", 86400*5)
	for i := 1; i <= 250; i++ {
		if i%3 == 0 {
			do(0, "XADD", "st", fmt.Sprintf("%d-%d", 1000+i/10, i), "other", i)
		} else {
			do(0, "XADD", "st", fmt.Sprintf("%d-%d", 1000+i/10, i), "f", i, "g", "text")
		}
	}
	do(0, "XDEL", "st", "1001-10", "1002-20")
	do(0, "XGROUP", "CREATE", "st", "g1", "0")
	do(0, "XGROUP", "CREATE", "st", "g2", "$")
	do(0, "XGROUP", "CREATECONSUMER", "st", "g2", "idle")
	do(0, "XREADGROUP", "GROUP", "g1", "alice", "COUNT", 5, "STREAMS", "st", ">")
	do(0, "XREADGROUP", "GROUP", "g1", "bob", "COUNT", 3, "STREAMS", "st", ">")
	do(0, "XACK", "st", "g1", "1000-2")
	do(0, "XADD", "st:empty", "5-1", "a", "b")
	do(0, "XDEL", "st:empty", "5-1")
	do(0, "XGROUP", "CREATE", "st:empty", "g", "$")
	do(3, "SET", "db3:key", "three")
	do(3, "RPUSH", "db3:list", "x")
	do(15, "HSET", "db15:h", "a", "b")
	do(15, "SET", "db15:ttl", "v", "EX", 100000)
	do(0, "FUNCTION", "LOAD", "#!lua name=mylib\nredis.register_function('myfunc', function(keys, args) return 42 end)")
}

// entryText renders a value so that it compares with redisText's.
func entryText(e *keyspace.Entry) string {
	var b strings.Builder
	switch o := e.Obj.(type) {
	case nil:
		fmt.Fprintf(&b, "string %q", e.Str)
	case *keyspace.List:
		b.WriteString("list")
		o.Range(func(v []byte) bool { fmt.Fprintf(&b, " %q", v); return true })
	case *keyspace.Set:
		var m []string
		o.Range(func(v []byte) bool { m = append(m, fmt.Sprintf("%q", v)); return true })
		slices.Sort(m)
		b.WriteString("set " + strings.Join(m, " "))
	case *keyspace.Hash:
		var m []string
		o.Range(func(f, v []byte) bool { m = append(m, fmt.Sprintf("%q=%q", f, v)); return true })
		slices.Sort(m)
		b.WriteString("hash " + strings.Join(m, " "))
	case *keyspace.ZSet:
		b.WriteString("zset")
		o.Range(func(m []byte, s float64) bool { fmt.Fprintf(&b, " %q=%s", m, score(s)); return true })
	case *keyspace.Stream:
		fmt.Fprintf(&b, "stream len=%d last=%s first=%s maxdel=%s added=%d\n", o.Len(), o.LastID, o.FirstID, o.MaxDeletedID, o.EntriesAdded)
		o.Range(keyspace.StreamID{}, keyspace.MaxStreamID, false, func(id keyspace.StreamID, fv [][]byte) bool {
			fmt.Fprintf(&b, " %s %q\n", id, fv)
			return true
		})
		for _, g := range o.Groups() {
			fmt.Fprintf(&b, " group %q last=%s read=%d\n", g.Name, g.LastID, g.EntriesRead)
			for _, n := range g.Pending() {
				fmt.Fprintf(&b, "  pending %s %q at=%d count=%d\n", n.ID, n.Consumer.Name, n.DeliveryTime, n.DeliveryCount)
			}
			for _, c := range g.Consumers() {
				fmt.Fprintf(&b, "  consumer %q seen=%d pending=%d\n", c.Name, c.SeenTime, len(c.Pending()))
			}
		}
	default:
		fmt.Fprintf(&b, "%T", o)
	}
	return b.String()
}

func score(s float64) string {
	switch {
	case math.IsInf(s, 1):
		return "inf"
	case math.IsInf(s, -1):
		return "-inf"
	}
	return strconv.FormatFloat(s, 'g', -1, 64)
}

// redisText reads a key from a server through RESP into entryText's form.
func redisText(t *testing.T, ctx context.Context, c *redis.Client, key string) string {
	t.Helper()
	var b strings.Builder
	typ := c.Type(ctx, key).Val()
	switch typ {
	case "string":
		fmt.Fprintf(&b, "string %q", c.Get(ctx, key).Val())
	case "list":
		b.WriteString("list")
		for _, v := range c.LRange(ctx, key, 0, -1).Val() {
			fmt.Fprintf(&b, " %q", v)
		}
	case "set":
		var m []string
		for _, v := range c.SMembers(ctx, key).Val() {
			m = append(m, fmt.Sprintf("%q", v))
		}
		slices.Sort(m)
		b.WriteString("set " + strings.Join(m, " "))
	case "hash":
		var m []string
		for f, v := range c.HGetAll(ctx, key).Val() {
			m = append(m, fmt.Sprintf("%q=%q", f, v))
		}
		slices.Sort(m)
		b.WriteString("hash " + strings.Join(m, " "))
	case "zset":
		b.WriteString("zset")
		for _, z := range c.ZRangeWithScores(ctx, key, 0, -1).Val() {
			fmt.Fprintf(&b, " %q=%s", z.Member, score(z.Score))
		}
	case "stream":
		full, err := c.XInfoStreamFull(ctx, key, 0).Result()
		if err != nil {
			t.Fatal(err)
		}
		first := full.RecordedFirstEntryID
		fmt.Fprintf(&b, "stream len=%d last=%s first=%s maxdel=%s added=%d\n", full.Length, full.LastGeneratedID, first, full.MaxDeletedEntryID, full.EntriesAdded)
		// XRANGE through Do: go-redis's XRange turns fields into a map.
		raw, err := c.Do(ctx, "XRANGE", key, "-", "+").Slice()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range raw {
			ent := e.([]any)
			var fv [][]byte
			for _, x := range ent[1].([]any) {
				fv = append(fv, []byte(x.(string)))
			}
			fmt.Fprintf(&b, " %s %q\n", ent[0], fv)
		}
		// go-redis reads an unknown entries-read (nil) as 0: take it raw.
		read := map[string]int64{}
		groups, err := c.Do(ctx, "XINFO", "GROUPS", key).Slice()
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range groups {
			kv := g.([]any)
			var name string
			r := int64(-1)
			for i := 0; i+1 < len(kv); i += 2 {
				switch kv[i] {
				case "name":
					name = kv[i+1].(string)
				case "entries-read":
					if v, ok := kv[i+1].(int64); ok {
						r = v
					}
				}
			}
			read[name] = r
		}
		for _, g := range full.Groups {
			fmt.Fprintf(&b, " group %q last=%s read=%d\n", g.Name, g.LastDeliveredID, read[g.Name])
			for _, p := range g.Pending {
				fmt.Fprintf(&b, "  pending %s %q at=%d count=%d\n", p.ID, p.Consumer, p.DeliveryTime.UnixMilli(), p.DeliveryCount)
			}
			for _, cs := range g.Consumers {
				fmt.Fprintf(&b, "  consumer %q seen=%d pending=%d\n", cs.Name, cs.SeenTime.UnixMilli(), cs.PelCount)
			}
		}
	default:
		t.Fatalf("key %q of type %q", key, typ)
	}
	return b.String()
}

// redisKeys returns every key of database db with its PEXPIRETIME.
func redisKeys(t *testing.T, ctx context.Context, c *redis.Client, db int) map[string]int64 {
	t.Helper()
	if err := c.Do(ctx, "SELECT", db).Err(); err != nil {
		t.Fatal(err)
	}
	keys := map[string]int64{}
	for _, k := range c.Keys(ctx, "*").Val() {
		at := c.Do(ctx, "PEXPIRETIME", k).Val().(int64)
		keys[k] = max(at, 0)
	}
	return keys
}

func client(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, PoolSize: 1})
	t.Cleanup(func() { c.Close() })
	return c
}

// compare checks that ks holds exactly the keys, values and expiries of the
// server at c, in databases dbs.
func compare(t *testing.T, ctx context.Context, c *redis.Client, ks *keyspace.Keyspace, dbs []int) {
	t.Helper()
	for _, db := range dbs {
		want := redisKeys(t, ctx, c, db)
		n := 0
		for i := 0; i < keyspace.NumShards; i++ {
			n += ks.DBs[db].Len(i)
		}
		if n != len(want) {
			t.Errorf("db %d: %d keys loaded, redis-server has %d", db, n, len(want))
		}
		for k, at := range want {
			e := ks.DBs[db].Peek([]byte(k))
			if e == nil {
				t.Errorf("db %d: key %q missing", db, k)
				continue
			}
			got, _ := ks.DBs[db].Expiry([]byte(k))
			if got != at {
				t.Errorf("db %d: key %q expires at %d, redis-server says %d", db, k, got, at)
			}
			if g, w := entryText(e), redisText(t, ctx, c, k); g != w {
				t.Errorf("db %d: key %q:\n got %s\nwant %s", db, k, g, w)
			}
		}
	}
}

// TestLoadRedisFile loads a file redis-server 7.0 saved and compares every
// key with the server's replies; then writes the keyspace back as RDB,
// starts a redis-server on that file and compares again.
func TestLoadRedisFile(t *testing.T) {
	ctx := context.Background()
	addr := servertest.StartRedis(t)
	c := client(t, addr)
	fill(t, ctx, c)
	if err := c.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	dir := c.ConfigGet(ctx, "dir").Val()["dir"]
	path := filepath.Join(dir, "dump.rdb")
	ks := keyspace.New(16, nil)
	st, err := rdb.Load(path, ks, time.Now().UnixMilli(), false)
	if err != nil {
		t.Fatal(err)
	}
	if st.Version != 10 || len(st.Functions) != 1 || !strings.Contains(st.Functions[0], "name=mylib") {
		t.Fatalf("version %d, functions %q", st.Version, st.Functions)
	}
	dbs := []int{0, 3, 15}
	compare(t, ctx, c, ks, dbs)

	// The reverse: recached's file, loaded by redis-server.
	out := t.TempDir()
	f, err := os.Create(filepath.Join(out, "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	w := rdb.NewWriter(f, time.Now().Unix())
	for _, code := range st.Functions {
		if err := w.Function(code); err != nil {
			t.Fatal(err)
		}
	}
	for _, db := range dbs {
		if err := w.SelectDB(db, 0, 0); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < keyspace.NumShards; i++ {
			ks.DBs[db].Range(i, func(k string, e *keyspace.Entry) bool {
				at, _ := ks.DBs[db].Expiry([]byte(k))
				if err := w.Key([]byte(k), e, at); err != nil {
					t.Fatal(err)
				}
				return true
			})
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	addr2 := servertest.StartRedis(t, "--dir", out, "--sanitize-dump-payload", "yes")
	c2 := client(t, addr2)
	compare(t, ctx, c2, ks, dbs)
	if got := c2.Do(ctx, "FCALL", "myfunc", 0).Val(); got != int64(42) {
		t.Errorf("FCALL myfunc on the written file: %v", got)
	}
}
