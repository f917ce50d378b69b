package server_test

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// The eviction tests fill a real server past maxmemory through RESP and
// keep writing, then check what the policy kept.

const evictLimit = 4 << 20 // maxmemory of the tests: about 13 000 keys of 100 bytes

// infoField reads one field of INFO.
func evInfo(t *testing.T, c *servertest.Client, field string) string {
	t.Helper()
	rep := servertest.MustDo(t, c, "INFO", "everything")
	for _, l := range strings.Split(rep, "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO has no %s", field)
	return ""
}

func evInfoInt(t *testing.T, c *servertest.Client, field string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(evInfo(t, c, field), 10, 64)
	if err != nil {
		t.Fatalf("INFO %s: %v", field, err)
	}
	return n
}

// pipeline sends the commands in one write and returns their replies.
func evPipeline(t *testing.T, c *servertest.Client, cmds [][]string) []string {
	t.Helper()
	var b bytes.Buffer
	for _, cmd := range cmds {
		b.Write(servertest.Encode(cmd...))
	}
	if err := c.Send(b.Bytes()); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(cmds))
	for i := range cmds {
		rep, err := c.Read()
		if err != nil {
			t.Fatalf("reply %d of %d: %v", i, len(cmds), err)
		}
		out[i] = string(rep)
	}
	return out
}

// write SETs keys prefix0..prefix(n-1) with 100-byte values, with args
// (EX …) after them, in pipelined batches; every reply must be +OK. each,
// when set, runs after every batch with the index reached.
func evWrite(t *testing.T, c *servertest.Client, prefix string, from, n int, ttl func(i int) []string, each func(i int)) {
	t.Helper()
	val := strings.Repeat("v", 100)
	const batch = 500
	for i := from; i < from+n; i += batch {
		var cmds [][]string
		for j := i; j < min(i+batch, from+n); j++ {
			cmd := []string{"SET", prefix + strconv.Itoa(j), val}
			if ttl != nil {
				cmd = append(cmd, ttl(j)...)
			}
			cmds = append(cmds, cmd)
		}
		for k, rep := range evPipeline(t, c, cmds) {
			if rep != "+OK\r\n" {
				t.Fatalf("%q: %q", cmds[k], rep)
			}
		}
		if each != nil {
			each(i)
		}
	}
}

// exist counts which of the keys prefix from..from+n-1 exist.
func evExist(t *testing.T, c *servertest.Client, prefix string, from, n int) int {
	t.Helper()
	var cmds [][]string
	for i := from; i < from+n; i++ {
		cmds = append(cmds, []string{"EXISTS", prefix + strconv.Itoa(i)})
	}
	found := 0
	for _, rep := range evPipeline(t, c, cmds) {
		if rep == ":1\r\n" {
			found++
		}
	}
	return found
}

// capacity is about how many 100-byte keys fit under evictLimit.
const capacity = 13000

func TestEvictionPolicies(t *testing.T) {
	tests := []struct {
		policy string
		// run writes and checks; it runs on a server at maxmemory
		// evictLimit under the policy.
		run func(t *testing.T, c *servertest.Client)
	}{
		{"allkeys-random", func(t *testing.T, c *servertest.Client) {
			evWrite(t, c, "k:", 0, 3*capacity, nil, nil)
			if got := evExist(t, c, "k:", 0, 3*capacity); got < capacity/2 || got > capacity*3/2 {
				t.Errorf("%d keys kept of %d written, want about %d", got, 3*capacity, capacity)
			}
		}},
		{"allkeys-lru", func(t *testing.T, c *servertest.Client) {
			// A hot set read after every batch survives 10x churn.
			const hot = 500
			evWrite(t, c, "hot:", 0, hot, nil, nil)
			readHot := func(int) {
				var cmds [][]string
				for i := 0; i < hot; i++ {
					cmds = append(cmds, []string{"GET", "hot:" + strconv.Itoa(i)})
				}
				evPipeline(t, c, cmds)
			}
			evWrite(t, c, "cold:", 0, 10*capacity, nil, readHot)
			if got := evExist(t, c, "hot:", 0, hot); got < hot*9/10 {
				t.Errorf("%d of %d hot keys survived, want at least 90%%", got, hot)
			}
		}},
		{"allkeys-lfu", func(t *testing.T, c *servertest.Client) {
			// Keys read often keep a high counter; keys written once
			// and never read go first.
			const freq = 500
			evWrite(t, c, "freq:", 0, freq, nil, nil)
			for r := 0; r < 30; r++ {
				var cmds [][]string
				for i := 0; i < freq; i++ {
					cmds = append(cmds, []string{"GET", "freq:" + strconv.Itoa(i)})
				}
				evPipeline(t, c, cmds)
			}
			if f := servertest.MustDo(t, c, "OBJECT", "FREQ", "freq:1"); f == ":5\r\n" || !strings.HasPrefix(f, ":") {
				t.Errorf("OBJECT FREQ of a key read 30 times: %q", f)
			}
			evWrite(t, c, "once:", 0, 5*capacity, nil, nil)
			if got := evExist(t, c, "freq:", 0, freq); got < freq*9/10 {
				t.Errorf("%d of %d frequently read keys survived, want at least 90%%", got, freq)
			}
		}},
		{"volatile-lru", volatileKeepsPersistent},
		{"volatile-lfu", volatileKeepsPersistent},
		{"volatile-random", volatileKeepsPersistent},
		{"volatile-ttl", func(t *testing.T, c *servertest.Client) {
			// Every key expires, later and later: the ones expiring
			// first go first.
			n := 3 * capacity
			evWrite(t, c, "t:", 0, n, func(i int) []string { return []string{"EX", strconv.Itoa(10000 + i)} }, nil)
			early := evExist(t, c, "t:", 0, n/3)
			late := evExist(t, c, "t:", 2*n/3, n/3)
			if late < n/3/2 || early > late/10 {
				t.Errorf("kept %d of the first third to expire and %d of the last third (of %d each)", early, late, n/3)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.policy, func(t *testing.T) {
			addr, _ := servertest.StartRecached(t, server.Config{MaxMemory: evictLimit, MaxMemoryPolicy: tt.policy})
			c := servertest.Dial(t, addr)
			if got := evInfo(t, c, "maxmemory_policy"); got != tt.policy {
				t.Fatalf("maxmemory_policy %q", got)
			}
			tt.run(t, c)
			used := evInfoInt(t, c, "used_memory")
			if used > evictLimit+4096 {
				t.Errorf("used_memory %d over maxmemory %d", used, evictLimit)
			}
			if ev := evInfoInt(t, c, "evicted_keys"); ev == 0 {
				t.Errorf("evicted_keys 0")
			}
			if h := evInfo(t, c, "maxmemory_human"); h != "4.00M" {
				t.Errorf("maxmemory_human %q", h)
			}
		})
	}
}

// volatileKeepsPersistent: a volatile policy evicts only keys with a time
// to live, however many are written.
func volatileKeepsPersistent(t *testing.T, c *servertest.Client) {
	const persistent = 3000
	evWrite(t, c, "p:", 0, persistent, nil, nil)
	evWrite(t, c, "v:", 0, 3*capacity, func(int) []string { return []string{"EX", "100000"} }, nil)
	if got := evExist(t, c, "p:", 0, persistent); got != persistent {
		t.Errorf("%d of %d keys without a time to live survived, want all", got, persistent)
	}
	if got := evExist(t, c, "v:", 0, 3*capacity); got == 3*capacity || got == 0 {
		t.Errorf("%d of %d keys with a time to live kept", got, 3*capacity)
	}
}

// TestNoEviction: at maxmemory under noeviction, commands that may grow
// memory are refused with Redis's -OOM, reads and DEL still work, and DEL
// makes room again. So does a policy with nothing it may evict.
func TestNoEviction(t *testing.T) {
	for _, tc := range []struct {
		policy string
		// evicted is what EXPIRE makes evictable: nothing under
		// noeviction, the key under volatile-lru.
		evicted int64
	}{{"noeviction", 0}, {"volatile-lru", 1}} {
		policy := tc.policy
		t.Run(policy, func(t *testing.T) {
			addr, _ := servertest.StartRecached(t, server.Config{MaxMemory: evictLimit, MaxMemoryPolicy: policy})
			c := servertest.Dial(t, addr)
			oom := "-OOM command not allowed when used memory > 'maxmemory'.\r\n"
			val := strings.Repeat("v", 100)
			n := 0
			for ; n < 3*capacity; n++ {
				rep := servertest.MustDo(t, c, "SET", "k:"+strconv.Itoa(n), val)
				if rep == oom {
					break
				}
				if rep != "+OK\r\n" {
					t.Fatalf("SET: %q", rep)
				}
			}
			if n == 3*capacity {
				t.Fatalf("no OOM after %d keys", n)
			}
			for _, cmd := range [][]string{{"LPUSH", "l", "x"}, {"SADD", "s", "x"}, {"HSET", "h", "f", "v"}, {"APPEND", "k:1", "x"}, {"INCR", "c"}} {
				if rep := servertest.MustDo(t, c, cmd...); rep != oom {
					t.Errorf("%q: %q, want OOM", cmd, rep)
				}
			}
			if rep := servertest.MustDo(t, c, "GET", "k:1"); rep != "$100\r\n"+val+"\r\n" {
				t.Errorf("GET: %q", rep)
			}
			// In MULTI every command but EXEC, DISCARD, QUIT and RESET
			// is refused while out of memory.
			for _, step := range [][2]string{{"MULTI", "+OK\r\n"}, {"SET x 1", oom}, {"GET k:1", oom}, {"DISCARD", "+OK\r\n"}} {
				if rep := servertest.MustDo(t, c, strings.Fields(step[0])...); rep != step[1] {
					t.Errorf("%s: %q, want %q", step[0], rep, step[1])
				}
			}
			// EXPIRE and DEL are not denyoom.
			if rep := servertest.MustDo(t, c, "EXPIRE", "k:2", "100"); rep != ":1\r\n" {
				t.Errorf("EXPIRE: %q", rep)
			}
			var dels [][]string
			for i := 0; i < n; i++ {
				dels = append(dels, []string{"DEL", "k:" + strconv.Itoa(i)})
			}
			evPipeline(t, c, dels)
			if rep := servertest.MustDo(t, c, "SET", "again", "v"); rep != "+OK\r\n" {
				t.Errorf("SET after DEL: %q", rep)
			}
			if ev := evInfoInt(t, c, "evicted_keys"); ev != tc.evicted {
				t.Errorf("evicted_keys %d, want %d", ev, tc.evicted)
			}
		})
	}
}

// TestConfigSetMaxMemory: CONFIG SET maxmemory acts at once: lowering it
// evicts down to the new limit before the reply, and the eviction is
// announced as the "evicted" keyspace event; 0 lifts the limit.
func TestConfigSetMaxMemory(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.Config{})
	c := servertest.Dial(t, addr)
	sub := servertest.Dial(t, addr)
	for _, cmd := range [][]string{{"CONFIG", "SET", "notify-keyspace-events", "Ee"}, {"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"}} {
		if rep := servertest.MustDo(t, c, cmd...); rep != "+OK\r\n" {
			t.Fatalf("%q: %q", cmd, rep)
		}
	}
	if rep := servertest.MustDo(t, sub, "SUBSCRIBE", "__keyevent@0__:evicted"); !strings.Contains(rep, "subscribe") {
		t.Fatalf("SUBSCRIBE: %q", rep)
	}
	servertest.MustDo(t, c, "SET", "foo", "bar")
	if rep := servertest.MustDo(t, c, "CONFIG", "SET", "maxmemory", "1"); rep != "+OK\r\n" {
		t.Fatalf("CONFIG SET maxmemory 1: %q", rep)
	}
	want := "*3\r\n$7\r\nmessage\r\n$22\r\n__keyevent@0__:evicted\r\n$3\r\nfoo\r\n"
	if rep, err := sub.Read(); err != nil || string(rep) != want {
		t.Fatalf("evicted event: %q, %v", rep, err)
	}
	if rep := servertest.MustDo(t, c, "EXISTS", "foo"); rep != ":0\r\n" {
		t.Errorf("EXISTS after eviction: %q", rep)
	}
	for _, tc := range []struct{ set, get string }{{"2mb", "2097152"}, {"1gb", "1073741824"}, {"100k", "100000"}, {"0", "0"}} {
		servertest.MustDo(t, c, "CONFIG", "SET", "maxmemory", tc.set)
		if got := evInfo(t, c, "maxmemory"); got != tc.get {
			t.Errorf("maxmemory %s: INFO says %s", tc.set, got)
		}
	}
	if rep := servertest.MustDo(t, c, "CONFIG", "SET", "maxmemory", "-1"); !strings.HasPrefix(rep, "-ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value") {
		t.Errorf("CONFIG SET maxmemory -1: %q", rep)
	}
}

// TestObjectIdleFreq: OBJECT IDLETIME and FREQ answer what the policy
// tracks and Redis's errors otherwise; MEMORY USAGE grows with the value.
func TestObjectIdleFreq(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.Config{})
	c := servertest.Dial(t, addr)
	servertest.MustDo(t, c, "SET", "k", "v")
	if rep := servertest.MustDo(t, c, "OBJECT", "IDLETIME", "k"); rep != ":0\r\n" {
		t.Errorf("OBJECT IDLETIME: %q", rep)
	}
	if rep := servertest.MustDo(t, c, "OBJECT", "FREQ", "k"); !strings.HasPrefix(rep, "-ERR An LFU maxmemory policy is not selected, access frequency not tracked.") {
		t.Errorf("OBJECT FREQ under noeviction: %q", rep)
	}
	servertest.MustDo(t, c, "CONFIG", "SET", "maxmemory-policy", "allkeys-lfu")
	if rep := servertest.MustDo(t, c, "OBJECT", "FREQ", "k"); rep != ":5\r\n" {
		t.Errorf("OBJECT FREQ of a new key: %q", rep)
	}
	if rep := servertest.MustDo(t, c, "OBJECT", "IDLETIME", "k"); !strings.HasPrefix(rep, "-ERR An LFU maxmemory policy is selected, idle time not tracked.") {
		t.Errorf("OBJECT IDLETIME under allkeys-lfu: %q", rep)
	}
	small := servertest.MustDo(t, c, "MEMORY", "USAGE", "k")
	servertest.MustDo(t, c, "APPEND", "k", strings.Repeat("x", 10000))
	big := servertest.MustDo(t, c, "MEMORY", "USAGE", "k")
	a, _ := strconv.Atoi(strings.Trim(small, ":\r\n"))
	b, _ := strconv.Atoi(strings.Trim(big, ":\r\n"))
	if a <= 0 || b < a+10000 {
		t.Errorf("MEMORY USAGE %q then %q after appending 10000 bytes", small, big)
	}
	if used := evInfoInt(t, c, "used_memory_dataset"); used != int64(b) {
		t.Errorf("used_memory_dataset %d, MEMORY USAGE of the one key %d", used, b)
	}
}

// TestEvictionsReachSyncAndLog: a sync client hears of every evicted key
// as a DEL push, and the append-only log records it, so that a restart
// does not bring evicted keys back.
func TestEvictionsReachSyncAndLog(t *testing.T) {
	dir := t.TempDir()
	cfg := server.DefaultConfig()
	cfg.Dir, cfg.AppendOnly, cfg.Save = dir, true, ""
	cfg.MaxMemory, cfg.MaxMemoryPolicy = evictLimit, "allkeys-random"
	s := servertest.StartServers(t, cfg, func(srv *server.Server) {
		if err := srv.OpenPersistence(); err != nil {
			t.Fatal(err)
		}
	})
	sub := servertest.Dial(t, s.RESP)
	if rep := servertest.MustDo(t, sub, "SYNC", "k:*"); rep != "+OK\r\n" {
		t.Fatalf("SYNC: %q", rep)
	}
	c := servertest.Dial(t, s.RESP)
	n := 2 * capacity
	evWrite(t, c, "k:", 0, n, nil, nil)
	evicted := evInfoInt(t, c, "evicted_keys")
	if evicted == 0 {
		t.Fatal("nothing evicted")
	}
	// Every SET and every eviction is a push, in order: count the DELs.
	dels := 0
	for i := int64(0); i < int64(n)+evicted; i++ {
		rep, err := sub.Read()
		if err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
		if strings.HasPrefix(string(rep), ">2\r\n$3\r\nDEL\r\n") {
			dels++
		}
	}
	if int64(dels) != evicted {
		t.Errorf("%d DEL pushes for %d evicted keys", dels, evicted)
	}
	kept := evExist(t, c, "k:", 0, n)
	if int64(kept) != int64(n)-evicted {
		t.Errorf("%d keys exist, %d written less %d evicted", kept, n, evicted)
	}
	if err := s.Srv.ClosePersistence(); err != nil {
		t.Fatal(err)
	}
	// A second server on the same directory replays the log.
	cfg.MaxMemory = 0
	s2 := servertest.StartServers(t, cfg, func(srv *server.Server) {
		if err := srv.OpenPersistence(); err != nil {
			t.Fatal(err)
		}
	})
	c2 := servertest.Dial(t, s2.RESP)
	if rep := servertest.MustDo(t, c2, "DBSIZE"); rep != fmt.Sprintf(":%d\r\n", kept) {
		t.Errorf("DBSIZE after restart %q, want %d", rep, kept)
	}
}
