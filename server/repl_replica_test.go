package server_test

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// The replica side against real redis-server processes: recached follows
// a redis-server master (a live migration), every type, expiry and
// several databases compared key by key after the full sync and after
// 10 000 live writes; the link broken and continued with +CONTINUE; the
// read-only and stale-data refusals; the promotion by REPLICAOF NO ONE.
// These port the ideas of Redis's integration/replication.tcl,
// replication-2.tcl (expires), replication-4.tcl (read-only replica,
// stale data) and psync2.tcl (replid2 after a promotion).

// replDBs are the databases the tests write.
var replDBs = []int{0, 1, 5}

// rStartReplica starts recached with a data directory of its own.
func rStartReplica(t *testing.T) (string, *server.Server) {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Dir = t.TempDir()
	return servertest.StartRecached(t, cfg)
}

func rClient(addr string, db int) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, DB: db, Protocol: 2, DialTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, MaxRetries: -1})
}

// rInfo returns one field of INFO section on addr.
func rInfo(t *testing.T, addr, section, field string) string {
	t.Helper()
	v, err := rInfoTry(addr, section, field)
	if err != nil {
		t.Fatalf("INFO %s on %s: %v", section, addr, err)
	}
	return v
}

// rInfoTry is rInfo for a server that may close the connection (Sentinel
// reconfiguring it sends CLIENT KILL TYPE normal).
func rInfoTry(addr, section, field string) (string, error) {
	c := rClient(addr, 0)
	defer c.Close()
	s, err := c.Info(context.Background(), section).Result()
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(s, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == field {
			return v, nil
		}
	}
	return "", nil
}

// rWaitFor polls cond every 10 ms for up to 15 s.
func rWaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	rWaitUpTo(t, 15*time.Second, what, cond)
}

// rWaitUpTo polls cond every 10 ms for up to d.
func rWaitUpTo(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < int(d/(10*time.Millisecond)); i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// rWaitLinkUp waits for the replica to report its link up.
func rWaitLinkUp(t *testing.T, replica string) {
	t.Helper()
	rWaitFor(t, "master_link_status:up", func() bool {
		return rInfo(t, replica, "replication", "master_link_status") == "up"
	})
}

// rWaitCaughtUp waits for the replica to have applied the master's whole
// stream.
func rWaitCaughtUp(t *testing.T, master, replica string) {
	t.Helper()
	rWaitFor(t, "the replica's offset to reach the master's", func() bool {
		return rInfo(t, replica, "replication", "slave_repl_offset") == rInfo(t, master, "replication", "master_repl_offset")
	})
}

// rDataset returns every key of the test databases on addr in a form two
// servers agree on whatever their encodings: type, value (collections
// sorted where unordered) and absolute expiry.
func rDataset(t *testing.T, addr string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for _, db := range replDBs {
		c := rClient(addr, db)
		keys, err := c.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatalf("KEYS on %s: %v", addr, err)
		}
		for _, k := range keys {
			typ := c.Type(ctx, k).Val()
			var v any
			switch typ {
			case "string":
				v = c.Get(ctx, k).Val()
			case "hash":
				v = c.HGetAll(ctx, k).Val()
			case "list":
				v = c.LRange(ctx, k, 0, -1).Val()
			case "set":
				m := c.SMembers(ctx, k).Val()
				sort.Strings(m)
				v = m
			case "zset":
				v = c.ZRangeWithScores(ctx, k, 0, -1).Val()
			case "stream":
				v = fmt.Sprint(c.XRange(ctx, k, "-", "+").Val(), c.Do(ctx, "XINFO", "GROUPS", k).Val())
			}
			exp := c.Do(ctx, "PEXPIRETIME", k).Val()
			out[fmt.Sprintf("%d/%s", db, k)] = fmt.Sprintf("%s %v exp=%v", typ, v, exp)
		}
		c.Close()
	}
	return out
}

// rSameDataset fails unless both servers hold the same keys and values.
func rSameDataset(t *testing.T, master, replica string) {
	t.Helper()
	want, got := rDataset(t, master), rDataset(t, replica)
	if len(want) == 0 {
		t.Fatal("the master holds no keys: nothing is compared")
	}
	n := 0
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			if n++; n <= 5 {
				t.Errorf("key %s: master %.200q, replica %.200q", k, w, g)
			}
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			if n++; n <= 5 {
				t.Errorf("key %s only on the replica: %.200q", k, got[k])
			}
		}
	}
	if n > 0 {
		t.Fatalf("%d keys differ (of %d on the master)", n, len(want))
	}
}

// rFill writes every type, in small and large encodings, with and without
// expiry, into the test databases.
func rFill(t *testing.T, addr string) {
	t.Helper()
	ctx := context.Background()
	future := time.Now().Add(time.Hour)
	for _, db := range replDBs {
		c := rClient(addr, db)
		p := c.Pipeline()
		p.Set(ctx, "str", "v"+strconv.Itoa(db), 0)
		p.Set(ctx, "int", 12345, 0)
		p.Set(ctx, "big", strings.Repeat("x", 100000), 0)
		p.Set(ctx, "ttl", "expires", time.Hour)
		p.HSet(ctx, "hash", "a", 1, "b", "two")
		p.RPush(ctx, "list", "a", "b", "c")
		p.SAdd(ctx, "intset", 1, 2, 3)
		p.SAdd(ctx, "set", "x", "y")
		p.ZAdd(ctx, "zset", redis.Z{Score: 1.5, Member: "a"}, redis.Z{Score: -2, Member: "b"})
		for i := 0; i < 600; i++ {
			p.HSet(ctx, "bighash", "f"+strconv.Itoa(i), i)
			p.RPush(ctx, "biglist", strconv.Itoa(i))
			p.SAdd(ctx, "bigset", "m"+strconv.Itoa(i))
			p.ZAdd(ctx, "bigzset", redis.Z{Score: float64(i) / 3, Member: "m" + strconv.Itoa(i)})
		}
		p.XAdd(ctx, &redis.XAddArgs{Stream: "stream", ID: "1-1", Values: []string{"f", "v"}})
		p.XAdd(ctx, &redis.XAddArgs{Stream: "stream", ID: "2-1", Values: []string{"f", "w"}})
		p.XGroupCreate(ctx, "stream", "g", "0")
		p.PFAdd(ctx, "hll", "a", "b", "c")
		p.ExpireAt(ctx, "hash", future)
		p.ExpireAt(ctx, "bigzset", future)
		if _, err := p.Exec(ctx); err != nil {
			t.Fatalf("filling db %d on %s: %v", db, addr, err)
		}
		c.Close()
	}
}

// rLiveWrites sends n writes of every type, spread over the databases, in
// pipelines.
func rLiveWrites(t *testing.T, addr string, n int) {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewSource(1))
	for _, db := range replDBs {
		c := rClient(addr, db)
		p := c.Pipeline()
		for i := 0; i < n/len(replDBs); i++ {
			k := strconv.Itoa(rng.Intn(200))
			switch i % 10 {
			case 0:
				p.Set(ctx, "s"+k, i, 0)
			case 1:
				p.Incr(ctx, "n"+k)
			case 2:
				p.HSet(ctx, "h"+k, "f"+strconv.Itoa(i%7), i)
			case 3:
				p.LPush(ctx, "l"+k, i)
			case 4:
				p.SAdd(ctx, "S"+k, i%13)
			case 5:
				p.ZIncrBy(ctx, "z"+k, 1.25, "m"+strconv.Itoa(i%5))
			case 6:
				p.Expire(ctx, "s"+k, time.Hour)
			case 7:
				p.Del(ctx, "l"+strconv.Itoa(rng.Intn(200)))
			case 8:
				p.XAdd(ctx, &redis.XAddArgs{Stream: "x" + k, Values: []string{"i", strconv.Itoa(i)}})
			case 9:
				p.Append(ctx, "s"+k, "+")
			}
		}
		if _, err := p.Exec(ctx); err != nil && err != redis.Nil && !strings.Contains(err.Error(), "WRONGTYPE") {
			t.Fatalf("live writes on db %d: %v", db, err)
		}
		c.Close()
	}
}

func rDo(t *testing.T, addr string, args ...any) any {
	t.Helper()
	c := rClient(addr, 0)
	defer c.Close()
	v, err := c.Do(context.Background(), args...).Result()
	if err != nil && err != redis.Nil {
		t.Fatalf("%v on %s: %v", args, addr, err)
	}
	return v
}

// TestReplicaOfRedis is a live migration from redis-server: recached
// replicates it (disk-based and diskless full sync), holds the same data
// after the sync and after 10 000 live writes, refuses client writes,
// then is promoted and accepts them.
func TestReplicaOfRedis(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	for _, tc := range []struct {
		name  string
		extra []string
	}{
		{"disk", []string{"--repl-diskless-sync", "no"}},
		{"diskless", []string{"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			master := servertest.StartRedis(t, tc.extra...)
			rFill(t, master)
			replica, _ := rStartReplica(t)
			host, port, _ := strings.Cut(master, ":")
			if got := rDo(t, replica, "REPLICAOF", host, port); got != "OK" {
				t.Fatalf("REPLICAOF: %v", got)
			}
			if got := rDo(t, replica, "REPLICAOF", host, port); got != "OK Already connected to specified master" {
				t.Fatalf("REPLICAOF again: %v", got)
			}
			rWaitLinkUp(t, replica)
			rWaitCaughtUp(t, master, replica)
			rSameDataset(t, master, replica)

			rLiveWrites(t, master, 10000)
			rWaitCaughtUp(t, master, replica)
			rSameDataset(t, master, replica)
			if got := rInfo(t, master, "stats", "sync_full"); got != "1" {
				t.Errorf("master sync_full %s, want 1", got)
			}

			role := fmt.Sprint(rDo(t, replica, "ROLE"))
			if want := fmt.Sprintf("[slave %s %s connected %s]", host, port, rInfo(t, master, "replication", "master_repl_offset")); role != want {
				t.Errorf("ROLE %s, want %s", role, want)
			}
			if got := rInfo(t, replica, "replication", "master_replid"); got != rInfo(t, master, "replication", "master_replid") {
				t.Errorf("replica's master_replid %s, master's %s", got, rInfo(t, master, "replication", "master_replid"))
			}

			c := rClient(replica, 0)
			defer c.Close()
			ctx := context.Background()
			for _, args := range [][]any{{"SET", "k", "v"}, {"DEDUP", "cl", "7", "SET", "k", "v"}} {
				if err := c.Do(ctx, args...).Err(); err == nil || err.Error() != "READONLY You can't write against a read only replica." {
					t.Errorf("%v on the replica: %v, want -READONLY", args, err)
				}
			}
			script := "return redis.call('set','k','v')"
			if err := c.Eval(ctx, script, nil).Err(); err == nil || !strings.HasPrefix(err.Error(), "READONLY You can't write against a read only replica. script: ") {
				t.Errorf("a script's write on the replica: %v, want -READONLY", err)
			}
			if v, err := c.Get(ctx, "str").Result(); err != nil || v != "v0" {
				t.Errorf("GET on the replica: %q %v", v, err)
			}

			// Promotion: the master's id becomes replid2, valid up to the
			// offset reached + 1.
			replid := rInfo(t, replica, "replication", "master_replid")
			off, _ := strconv.ParseInt(rInfo(t, replica, "replication", "master_repl_offset"), 10, 64)
			if got := rDo(t, replica, "REPLICAOF", "NO", "ONE"); got != "OK" {
				t.Fatalf("REPLICAOF NO ONE: %v", got)
			}
			if got := rInfo(t, replica, "replication", "role"); got != "master" {
				t.Errorf("role after REPLICAOF NO ONE: %s", got)
			}
			if got := rInfo(t, replica, "replication", "master_replid2"); got != replid {
				t.Errorf("master_replid2 %s, want %s", got, replid)
			}
			if got := rInfo(t, replica, "replication", "second_repl_offset"); got != strconv.FormatInt(off+1, 10) {
				t.Errorf("second_repl_offset %s, want %d", got, off+1)
			}
			// The refused DEDUP did not move the mark: the write applies.
			if v, err := c.Do(ctx, "DEDUP", "cl", "7", "SET", "k", "v").Result(); err != nil || v != "OK" {
				t.Errorf("DEDUP after the promotion: %v %v, want OK", v, err)
			}
			if v := c.Get(ctx, "k").Val(); v != "v" {
				t.Errorf("GET k after the promotion: %q", v)
			}
		})
	}
}

// replFieldNames returns the field names of INFO replication on addr, in
// order, with the numbered slave lines as one name.
func replFieldNames(t *testing.T, addr string) []string {
	t.Helper()
	c := rClient(addr, 0)
	defer c.Close()
	s, err := c.Info(context.Background(), "replication").Result()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(s, "\r\n") {
		if k, _, ok := strings.Cut(line, ":"); ok {
			names = append(names, k)
		}
	}
	return names
}

// TestReplicaInfoAndRole compares INFO replication's fields and ROLE of a
// recached replica with those of a redis-server replica of the same
// master, link up and link down.
func TestReplicaInfoAndRole(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	master := servertest.StartRedis(t)
	host, port, _ := strings.Cut(master, ":")
	peer := servertest.StartRedis(t)
	ours, _ := rStartReplica(t)
	for _, addr := range []string{peer, ours} {
		rDo(t, addr, "REPLICAOF", host, port)
		rWaitLinkUp(t, addr)
		rWaitCaughtUp(t, master, addr)
	}
	want, got := replFieldNames(t, peer), replFieldNames(t, ours)
	if strings.Join(want, " ") != strings.Join(got, " ") {
		t.Errorf("INFO replication fields\nredis-server %v\nrecached     %v", want, got)
	}
	for _, f := range []string{"role", "master_host", "master_port", "master_link_status", "master_sync_in_progress", "slave_repl_offset", "slave_read_repl_offset", "slave_priority", "slave_read_only", "replica_announced", "master_replid", "master_repl_offset"} {
		if w, g := rInfo(t, peer, "replication", f), rInfo(t, ours, "replication", f); w != g {
			t.Errorf("%s: redis-server %q, recached %q", f, w, g)
		}
	}
	if w, g := fmt.Sprint(rDo(t, peer, "ROLE")), fmt.Sprint(rDo(t, ours, "ROLE")); w != g {
		t.Errorf("ROLE: redis-server %s, recached %s", w, g)
	}
	// A master that does not answer: the link is down.
	dead := "127.0.0.1:1"
	for _, addr := range []string{peer, ours} {
		rDo(t, addr, "REPLICAOF", "127.0.0.1", "1")
		rWaitFor(t, "the link to go down", func() bool {
			return rInfo(t, addr, "replication", "master_link_status") == "down"
		})
	}
	want, got = replFieldNames(t, peer), replFieldNames(t, ours)
	if strings.Join(want, " ") != strings.Join(got, " ") {
		t.Errorf("INFO replication fields with the link down (%s)\nredis-server %v\nrecached     %v", dead, want, got)
	}
	for _, f := range []string{"master_last_io_seconds_ago", "master_sync_in_progress"} {
		if w, g := rInfo(t, peer, "replication", f), rInfo(t, ours, "replication", f); w != g {
			t.Errorf("%s with the link down: redis-server %q, recached %q", f, w, g)
		}
	}
	role := fmt.Sprint(rDo(t, ours, "ROLE"))
	if !strings.HasPrefix(role, "[slave 127.0.0.1 1 connect") || !strings.HasSuffix(role, " -1]") {
		t.Errorf("ROLE with the link down: %s", role)
	}
}

// TestReplicaContinues breaks the link from either side (CLIENT KILL
// TYPE replica on the master, TYPE master on the replica): the
// replica reconnects and the master continues the stream (+CONTINUE, no
// second full sync), and the data stays equal. WAIT on the master counts
// the replica's acknowledgement.
func TestReplicaContinues(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	master := servertest.StartRedis(t)
	host, port, _ := strings.Cut(master, ":")
	rFill(t, master)
	replica, _ := rStartReplica(t)
	rDo(t, replica, "REPLICAOF", host, port)
	rWaitLinkUp(t, replica)
	for round := 1; round <= 4; round++ {
		if round%2 == 1 {
			rDo(t, master, "CLIENT", "KILL", "TYPE", "replica")
		} else if n := rDo(t, replica, "CLIENT", "KILL", "TYPE", "master"); n != int64(1) {
			t.Fatalf("CLIENT KILL TYPE master on the replica: %v, want 1", n)
		}
		rLiveWrites(t, master, 1000)
		rWaitFor(t, "a partial resynchronisation", func() bool {
			return rInfo(t, master, "stats", "sync_partial_ok") == strconv.Itoa(round)
		})
		rWaitLinkUp(t, replica)
		rWaitCaughtUp(t, master, replica)
		rSameDataset(t, master, replica)
	}
	if got := rInfo(t, master, "stats", "sync_full"); got != "1" {
		t.Errorf("sync_full %s, want 1", got)
	}
	rDo(t, master, "SET", "acked", "1")
	if n := rDo(t, master, "WAIT", "1", "5000"); n != int64(1) {
		t.Errorf("WAIT 1 on the master: %v, want 1", n)
	}
}

// TestReplicaExpiry: the replica reports a key past its time to live as
// absent but does not delete it; the master's DEL does.
func TestReplicaExpiry(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	master := servertest.StartRedis(t, "--enable-debug-command", "yes")
	host, port, _ := strings.Cut(master, ":")
	replica, _ := rStartReplica(t)
	rDo(t, replica, "REPLICAOF", host, port)
	rWaitLinkUp(t, replica)
	rDo(t, master, "DEBUG", "SET-ACTIVE-EXPIRE", "0")
	rDo(t, master, "SET", "gone", "v", "PX", "100")
	rDo(t, master, "SET", "kept", "v")
	rWaitCaughtUp(t, master, replica)
	rWaitFor(t, "the key to pass its time to live on the replica", func() bool {
		return rDo(t, replica, "EXISTS", "gone") == int64(0)
	})
	if n := rDo(t, replica, "DBSIZE"); n != int64(2) {
		t.Errorf("DBSIZE on the replica before the master's DEL: %v, want 2 (the expired key is kept)", n)
	}
	if v := rDo(t, replica, "GET", "gone"); v != nil {
		t.Errorf("GET of the expired key on the replica: %v, want nil", v)
	}
	rDo(t, master, "GET", "gone") // expires it on the master: DEL reaches the replica
	rWaitCaughtUp(t, master, replica)
	if n := rDo(t, replica, "DBSIZE"); n != int64(1) {
		t.Errorf("DBSIZE on the replica after the master's DEL: %v, want 1", n)
	}
}

// TestReplicaStaleAndAuth: a replica whose master needs a password
// authenticates with masterauth (and masteruser); while its link is down
// with replica-serve-stale-data no, commands without the stale flag get
// -MASTERDOWN, and replica-read-only no lets clients write.
func TestReplicaStaleAndAuth(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	master := servertest.StartRedis(t, "--requirepass", "sekret")
	host, port, _ := strings.Cut(master, ":")
	replica, _ := rStartReplica(t)
	rDo(t, replica, "CONFIG", "SET", "replica-serve-stale-data", "no")
	rDo(t, replica, "REPLICAOF", host, port)
	c := rClient(replica, 0)
	defer c.Close()
	ctx := context.Background()
	want := "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."
	if err := c.Get(ctx, "k").Err(); err == nil || err.Error() != want {
		t.Errorf("GET with the link down: %v, want -%s", err, want)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Errorf("PING (a stale command) with the link down: %v", err)
	}
	rDo(t, replica, "CONFIG", "SET", "masterauth", "sekret")
	rWaitLinkUp(t, replica)
	if err := c.Get(ctx, "k").Err(); err != redis.Nil {
		t.Errorf("GET with the link up: %v", err)
	}
	rDo(t, replica, "CONFIG", "SET", "replica-read-only", "no")
	if err := c.Set(ctx, "local", "1", 0).Err(); err != nil {
		t.Errorf("SET on a writable replica: %v", err)
	}
	if got := rInfo(t, replica, "replication", "slave_read_only"); got != "0" {
		t.Errorf("slave_read_only %s, want 0", got)
	}
}

// TestReplicaOfConfig: the replicaof parameter a configuration file or
// --replicaof gives makes the server a replica from its start; CONFIG GET
// shows the master followed.
func TestReplicaOfConfig(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	master := servertest.StartRedis(t)
	host, port, _ := strings.Cut(master, ":")
	rDo(t, master, "SET", "k", "from-master")
	cfg := server.DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.Params = map[string]string{"replicaof": host + " " + port}
	replica, _ := servertest.StartRecached(t, cfg)
	rWaitLinkUp(t, replica)
	if v := rDo(t, replica, "GET", "k"); v != "from-master" {
		t.Errorf("GET k on the replica: %v", v)
	}
	if v := fmt.Sprint(rDo(t, replica, "CONFIG", "GET", "replicaof")); v != "[replicaof "+host+" "+port+"]" {
		t.Errorf("CONFIG GET replicaof: %s", v)
	}
	rDo(t, replica, "REPLICAOF", "NO", "ONE")
	if v := fmt.Sprint(rDo(t, replica, "CONFIG", "GET", "replicaof")); v != "[replicaof ]" {
		t.Errorf("CONFIG GET replicaof after REPLICAOF NO ONE: %s", v)
	}
}

// TestReplicaOfRecached: recached replicating recached, disk-based and
// diskless, every type key by key after the sync and after 10 000 live
// writes, and continuing with +CONTINUE after the link is cut.
func TestReplicaOfRecached(t *testing.T) {
	for _, diskless := range []string{"no", "yes"} {
		t.Run("diskless="+diskless, func(t *testing.T) {
			master, _ := rStartReplica(t)
			rDo(t, master, "CONFIG", "SET", "repl-diskless-sync", diskless)
			rFill(t, master)
			replica, _ := rStartReplica(t)
			host, port, _ := strings.Cut(master, ":")
			rDo(t, replica, "REPLICAOF", host, port)
			rWaitLinkUp(t, replica)
			rWaitCaughtUp(t, master, replica)
			rSameDataset(t, master, replica)
			rLiveWrites(t, master, 10000)
			rWaitCaughtUp(t, master, replica)
			rSameDataset(t, master, replica)
			rDo(t, replica, "CLIENT", "KILL", "TYPE", "master")
			rLiveWrites(t, master, 1000)
			rWaitFor(t, "a partial resynchronisation", func() bool {
				return rInfo(t, master, "stats", "sync_partial_ok") == "1"
			})
			rWaitCaughtUp(t, master, replica)
			rSameDataset(t, master, replica)
			if got := rInfo(t, master, "stats", "sync_full"); got != "1" {
				t.Errorf("sync_full %s, want 1", got)
			}
		})
	}
}

// TestReplicaOfUnblocks: clients blocked when the server becomes a
// replica get -UNBLOCKED, as redis-server's do.
func TestReplicaOfUnblocks(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	master := servertest.StartRedis(t)
	host, port, _ := strings.Cut(master, ":")
	ours, _ := rStartReplica(t)
	for _, addr := range []string{servertest.StartRedis(t), ours} {
		c := servertest.Dial(t, addr)
		if err := c.Send(servertest.Encode("BLPOP", "list", "0")); err != nil {
			t.Fatal(err)
		}
		rWaitFor(t, "the client to block", func() bool { return rInfo(t, addr, "clients", "blocked_clients") == "1" })
		rDo(t, addr, "REPLICAOF", host, port)
		got, err := c.Read()
		if want := "-" + "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)\r\n"; err != nil || string(got) != want {
			t.Errorf("%s: BLPOP got %q %v, want %q", addr, got, err, want)
		}
	}
}
