package server_test

import (
	"bufio"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/server/tcp"
	recsync "github.com/recached/recached/sync"
)

// replShape reduces an INFO replication section or a ROLE reply to what
// must match redis-server's: field names and order, with ids replaced.
func replShape(s string) string {
	return regexp.MustCompile(`[0-9a-f]{40}`).ReplaceAllString(s, "ID")
}

// TestReplicationInfoFreshPrimary compares INFO replication and ROLE of a
// fresh primary with redis-server's: same fields, same order, same values
// but the replication id (backlog inactive, offset 0, no replid2).
func TestReplicationInfoFreshPrimary(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	recAddr, _ := servertest.StartRecached(t, server.DefaultConfig())
	var got [2][]string
	for i, addr := range []string{servertest.StartRedis(t), recAddr} {
		c := servertest.Dial(t, addr)
		info := servertest.MustDo(t, c, "info", "replication")
		got[i] = append(got[i], replShape(info), servertest.MustDo(t, c, "role"))
		if !strings.Contains(info, "master_replid:") {
			t.Errorf("no master_replid in %q", info)
		}
	}
	for j := range got[0] {
		if got[0][j] != got[1][j] {
			t.Errorf("redis-server %q\nrecached     %q", got[0][j], got[1][j])
		}
	}
}

// pDBs are the databases the replication tests write.
var pDBs = []int{0, 3, 9}

// fillEveryType writes keys of every type RDB holds, some with a time to
// live, in each of pDBs.
func fillEveryType(t *testing.T, c *servertest.Client) {
	t.Helper()
	far := strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)
	for _, db := range pDBs {
		servertest.MustDo(t, c, "select", strconv.Itoa(db))
		steps := [][]string{
			{"set", "str", "hello"}, {"set", "int", "12345"}, {"set", "big", strings.Repeat("x", 5000)},
			{"rpush", "list", "a", "b", "c"}, {"hset", "hash", "f1", "v1", "f2", "v2"},
			{"sadd", "intset", "1", "2", "3"}, {"sadd", "set", "x", "y"},
			{"zadd", "zset", "1", "a", "2.5", "b"}, {"xadd", "stream", "1-1", "f", "v"},
			{"xgroup", "create", "stream", "g", "0"}, {"pfadd", "hll", "a", "b", "c"},
			{"geoadd", "geo", "13.361389", "38.115556", "Palermo"},
			{"set", "ttl", "v"}, {"pexpireat", "ttl", far}, {"set", "ex", "v", "ex", "3600"},
		}
		for i := 0; i < 200; i++ {
			steps = append(steps, []string{"rpush", "biglist", strconv.Itoa(i)}, []string{"hset", "bighash", "f" + strconv.Itoa(i), strings.Repeat("v", i)},
				[]string{"zadd", "bigzset", strconv.Itoa(i), "m" + strconv.Itoa(i)}, []string{"sadd", "bigset", "s" + strconv.Itoa(i)})
		}
		for _, s := range steps {
			if rep := servertest.MustDo(t, c, s...); strings.HasPrefix(rep, "-") {
				t.Fatalf("%q: %s", s, rep)
			}
		}
	}
	servertest.MustDo(t, c, "select", "0")
}

// keyImage is a key's type, value and expiry time as a string two servers
// holding the same key render identically.
func keyImage(t *testing.T, c *servertest.Client, key string) string {
	t.Helper()
	typ := strings.TrimSpace(strings.TrimPrefix(servertest.MustDo(t, c, "type", key), "+"))
	var v string
	sorted := func(args ...string) string {
		els, err := servertest.Elements([]byte(servertest.MustDo(t, c, args...)))
		if err != nil {
			t.Fatal(err)
		}
		s := make([]string, len(els))
		for i, e := range els {
			s[i] = string(e)
		}
		if args[0] == "hgetall" {
			pairs := make([]string, 0, len(s)/2)
			for i := 0; i+1 < len(s); i += 2 {
				pairs = append(pairs, s[i]+"="+s[i+1])
			}
			s = pairs
		}
		sort.Strings(s)
		return strings.Join(s, ",")
	}
	switch typ {
	case "string":
		v = servertest.MustDo(t, c, "get", key)
	case "list":
		v = servertest.MustDo(t, c, "lrange", key, "0", "-1")
	case "hash":
		v = sorted("hgetall", key)
	case "set":
		v = sorted("smembers", key)
	case "zset":
		v = servertest.MustDo(t, c, "zrange", key, "0", "-1", "withscores")
	case "stream":
		v = servertest.MustDo(t, c, "xrange", key, "-", "+") + servertest.MustDo(t, c, "xinfo", "groups", key)
	default:
		t.Fatalf("key %q of type %q", key, typ)
	}
	return typ + " " + v + " exp=" + servertest.MustDo(t, c, "pexpiretime", key)
}

// dataImage is every key of pDBs as keyImage renders it.
func dataImage(t *testing.T, addr string) map[string]string {
	t.Helper()
	c := servertest.Dial(t, addr)
	out := map[string]string{}
	for _, db := range pDBs {
		servertest.MustDo(t, c, "select", strconv.Itoa(db))
		els, err := servertest.Elements([]byte(servertest.MustDo(t, c, "keys", "*")))
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range els {
			key := strings.TrimSpace(string(k[strings.IndexByte(string(k), '\n')+1:]))
			out[fmt.Sprintf("%d/%s", db, key)] = keyImage(t, c, key)
		}
	}
	return out
}

// sameData fails the test where the two servers' data differ.
func sameData(t *testing.T, primary, replica string) {
	t.Helper()
	a, b := dataImage(t, primary), dataImage(t, replica)
	if len(a) == 0 {
		t.Fatal("the primary holds no key")
	}
	for k, v := range a {
		if b[k] != v {
			t.Errorf("%s: primary %.200q, replica %.200q", k, v, b[k])
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			t.Errorf("%s: only on the replica", k)
		}
	}
}

// infoInt is an integer field of INFO.
func infoInt(t *testing.T, c *servertest.Client, section, field string) int64 {
	t.Helper()
	n, _ := strconv.ParseInt(infoField(t, c, section, field), 10, 64)
	return n
}

// waitFor polls cond every 20ms for up to 20s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// liveWrites sends n writes of every kind, spread over pDBs, in one
// pipeline, and reads their replies.
func liveWrites(t *testing.T, addr string, n int, seed int64) {
	t.Helper()
	c := servertest.Dial(t, addr)
	rng := rand.New(rand.NewSource(seed))
	var buf []byte
	for i := 0; i < n; i++ {
		db := pDBs[rng.Intn(len(pDBs))]
		k := "k" + strconv.Itoa(rng.Intn(300))
		var cmd []string
		switch rng.Intn(10) {
		case 0:
			cmd = []string{"incr", "c" + k}
		case 1:
			cmd = []string{"set", k, strconv.Itoa(i)}
		case 2:
			cmd = []string{"hset", "h" + k, "f" + strconv.Itoa(rng.Intn(5)), strconv.Itoa(i)}
		case 3:
			cmd = []string{"lpush", "l" + k, strconv.Itoa(i)}
		case 4:
			cmd = []string{"zadd", "z" + k, strconv.Itoa(rng.Intn(100)), strconv.Itoa(rng.Intn(20))}
		case 5:
			cmd = []string{"sadd", "s" + k, strconv.Itoa(rng.Intn(50))}
		case 6:
			cmd = []string{"pexpire", k, strconv.Itoa(3600000 + rng.Intn(1000))}
		case 7:
			cmd = []string{"del", "l" + k}
		case 8:
			cmd = []string{"xadd", "x" + k, "*", "f", strconv.Itoa(i)}
		case 9:
			cmd = []string{"set", "short" + k, "v", "px", "1"} // expires: a DEL follows
		}
		buf = append(buf, servertest.Encode("select", strconv.Itoa(db))...)
		buf = append(buf, servertest.Encode(cmd...)...)
	}
	if err := c.Send(buf); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2*n; i++ {
		if _, err := c.Read(); err != nil {
			t.Fatal(err)
		}
	}
}

// redisReplica starts redis-server as a replica of primary in dir (kept
// across restarts) and returns its address and a function that stops it
// with SIGTERM, or SIGKILL when kill is set.
func redisReplica(t *testing.T, primary, dir string, port int, extra ...string) (string, func(kill bool)) {
	t.Helper()
	host, pport, _ := net.SplitHostPort(primary)
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--replicaof", host, pport, "--logfile", filepath.Join(dir, "redis.log")}, extra...)
	cmd := exec.Command(servertest.RedisBin(t), args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func(kill bool) {
		if stopped {
			return
		}
		stopped = true
		sig := syscall.SIGTERM
		if kill {
			sig = syscall.SIGKILL
		}
		_ = cmd.Process.Signal(sig)
		_ = cmd.Wait()
	}
	t.Cleanup(func() { stop(true) })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	waitFor(t, "the replica to answer", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return addr, stop
}

// linkUp waits until the redis-server replica at addr is in sync.
func linkUp(t *testing.T, addr string) {
	t.Helper()
	c := servertest.Dial(t, addr)
	waitFor(t, "master_link_status:up", func() bool { return infoField(t, c, "replication", "master_link_status") == "up" })
}

// caughtUp waits until the replica's offset is the primary's.
func caughtUp(t *testing.T, primary, replica string) {
	t.Helper()
	p, r := servertest.Dial(t, primary), servertest.Dial(t, replica)
	waitFor(t, "the replica to reach the primary's offset", func() bool {
		return infoInt(t, r, "replication", "slave_repl_offset") == infoInt(t, p, "replication", "master_repl_offset")
	})
}

// TestRedisReplicaOfRecached: a redis-server replica of recached gets
// every type, expiry and several databases by a full sync (disk-based
// and diskless), then 10 000 live writes, compared key by key; WAIT
// counts its acknowledgements; ROLE and INFO show it.
func TestRedisReplicaOfRecached(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	for _, diskless := range []string{"yes", "no"} {
		t.Run("diskless="+diskless, func(t *testing.T) {
			cfg := server.DefaultConfig()
			cfg.Dir = t.TempDir()
			addr, _ := servertest.StartRecached(t, cfg)
			c := servertest.Dial(t, addr)
			servertest.MustDo(t, c, "config", "set", "repl-diskless-sync", diskless)
			fillEveryType(t, c)
			port, _ := tcp.FreePort()
			rep, _ := redisReplica(t, addr, t.TempDir(), port)
			linkUp(t, rep)
			caughtUp(t, addr, rep)
			sameData(t, addr, rep)

			liveWrites(t, addr, 10000, 1)
			if got := servertest.MustDo(t, c, "wait", "1", "10000"); got != ":1\r\n" {
				t.Errorf("WAIT 1 = %q", got)
			}
			caughtUp(t, addr, rep)
			sameData(t, addr, rep)
			if got := servertest.MustDo(t, c, "wait", "2", "50"); got != ":1\r\n" {
				t.Errorf("WAIT 2 50 with one replica = %q", got)
			}
			off := infoField(t, c, "replication", "master_repl_offset")
			role := servertest.MustDo(t, c, "role")
			want := fmt.Sprintf("*3\r\n$6\r\nmaster\r\n:%s\r\n*1\r\n*3\r\n$9\r\n127.0.0.1\r\n$%d\r\n%d\r\n", off, len(strconv.Itoa(port)), port)
			if !strings.HasPrefix(role, want) {
				t.Errorf("ROLE = %q, want prefix %q", role, want)
			}
			if got := infoField(t, c, "replication", "slave0"); !strings.HasPrefix(got, fmt.Sprintf("ip=127.0.0.1,port=%d,state=online,offset=", port)) {
				t.Errorf("slave0:%s", got)
			}
			if n := infoInt(t, c, "stats", "sync_full"); n != 1 {
				t.Errorf("sync_full = %d", n)
			}
		})
	}
}

// TestRedisReplicaContinues: a redis-server replica whose link is cut
// (CLIENT KILL TYPE replica) or that is restarted after a SHUTDOWN that
// saved its data continues with +CONTINUE: no second full sync, the
// writes made meanwhile arrive (Redis's integration/replication-psync.tcl
// and psync2-reg.tcl ideas).
func TestRedisReplicaContinues(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	cfg := server.DefaultConfig()
	cfg.Dir = t.TempDir()
	addr, _ := servertest.StartRecached(t, cfg)
	c := servertest.Dial(t, addr)
	fillEveryType(t, c)
	dir := t.TempDir()
	port, _ := tcp.FreePort()
	rep, stop := redisReplica(t, addr, dir, port)
	linkUp(t, rep)

	servertest.MustDo(t, c, "client", "kill", "type", "replica")
	liveWrites(t, addr, 2000, 2)
	waitFor(t, "sync_partial_ok:1", func() bool { return infoInt(t, c, "stats", "sync_partial_ok") == 1 })
	caughtUp(t, addr, rep)
	sameData(t, addr, rep)

	// A restart: SHUTDOWN saves the replica's data with its replication
	// id and offset, from which it asks to continue.
	if err := servertest.Dial(t, rep).Send(servertest.Encode("shutdown", "save")); err != nil {
		t.Fatal(err)
	}
	stop(false)
	liveWrites(t, addr, 2000, 3)
	rep, _ = redisReplica(t, addr, dir, port)
	linkUp(t, rep)
	if infoInt(t, c, "stats", "sync_partial_ok") != 2 {
		log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
		t.Fatalf("no partial resync after the restart: sync_full %d, sync_partial_err %d; replica's log:\n%s",
			infoInt(t, c, "stats", "sync_full"), infoInt(t, c, "stats", "sync_partial_err"), log)
	}
	caughtUp(t, addr, rep)
	sameData(t, addr, rep)
	if n := infoInt(t, c, "stats", "sync_full"); n != 1 {
		t.Errorf("sync_full = %d, want 1", n)
	}
	if n := infoInt(t, c, "stats", "sync_partial_err"); n != 0 {
		t.Errorf("sync_partial_err = %d, want 0", n)
	}
}

// TestRedisCliRDB: redis-cli --rdb against recached writes a file
// redis-server starts on with the same data.
func TestRedisCliRDB(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not installed")
	}
	cfg := server.DefaultConfig()
	cfg.Dir = t.TempDir()
	addr, _ := servertest.StartRecached(t, cfg)
	fillEveryType(t, servertest.Dial(t, addr))
	dir := t.TempDir()
	host, port, _ := net.SplitHostPort(addr)
	out, err := exec.Command(cli, "-h", host, "-p", port, "--rdb", filepath.Join(dir, "dump.rdb")).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --rdb: %v\n%s", err, out)
	}
	loaded := servertest.StartRedis(t, "--dir", dir, "--dbfilename", "dump.rdb")
	sameData(t, addr, loaded)
}

// TestPSyncProtocol speaks the replica's side by hand: PSYNC ? -1 gets
// +FULLRESYNC, an image and the stream; PSYNC with that id and the next
// offset gets +CONTINUE and the same bytes from the backlog; an offset the
// backlog does not hold or an unknown id gets a full sync counted in
// sync_partial_err (integration/replication-4.tcl's backlog ideas).
func TestPSyncProtocol(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.Dir = t.TempDir()
	addr, _ := servertest.StartRecached(t, cfg)
	c := servertest.Dial(t, addr)
	servertest.MustDo(t, c, "set", "before", "1")

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	line := func() string {
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		s, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	fmt.Fprint(conn, "REPLCONF capa eof capa psync2\r\n")
	if got := line(); got != "+OK\r\n" {
		t.Fatalf("REPLCONF: %q", got)
	}
	fmt.Fprint(conn, "PSYNC ? -1\r\n")
	full := line()
	m := regexp.MustCompile(`^\+FULLRESYNC ([0-9a-f]{40}) (\d+)\r\n$`).FindStringSubmatch(full)
	if m == nil {
		t.Fatalf("PSYNC ? -1: %q", full)
	}
	id, off0 := m[1], m[2]
	eof := line()
	if !strings.HasPrefix(eof, "$EOF:") || len(eof) != 5+40+2 {
		t.Fatalf("image header %q", eof)
	}
	mark := eof[5:45]
	var img []byte
	for !strings.HasSuffix(string(img), mark) {
		b, err := r.ReadByte()
		if err != nil {
			t.Fatal(err)
		}
		img = append(img, b)
	}
	if !strings.HasPrefix(string(img), "REDIS0010") || !strings.Contains(string(img), "before") {
		t.Fatalf("image %q", img)
	}
	fmt.Fprint(conn, "REPLCONF ACK "+off0+"\r\n")
	servertest.MustDo(t, c, "set", "after", "2")
	want := "*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$5\r\nafter\r\n$1\r\n2\r\n"
	got := make([]byte, len(want))
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := ioReadFull(r, got); err != nil || string(got) != want {
		t.Fatalf("stream %q (%v), want %q", got, err, want)
	}
	n0, _ := strconv.ParseInt(off0, 10, 64)
	if o := infoInt(t, c, "replication", "master_repl_offset"); o != n0+int64(len(want)) {
		t.Errorf("master_repl_offset %d, want %d", o, n0+int64(len(want)))
	}

	cases := []struct {
		name, id string
		off      int64
		reply    string // prefix
	}{
		{"continue", id, n0 + 1, "+CONTINUE " + id + "\r\n" + want},
		{"continue at the end", id, n0 + 1 + int64(len(want)), "+CONTINUE " + id + "\r\n"},
		{"past the end", id, n0 + 2 + int64(len(want)), "+FULLRESYNC " + id},
		{"unknown id", strings.Repeat("a", 40), n0 + 1, "+FULLRESYNC " + id},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := servertest.Dial(t, addr)
			servertest.MustDo(t, p, "replconf", "capa", "psync2")
			if err := p.Send(servertest.Encode("psync", tc.id, strconv.FormatInt(tc.off, 10))); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, len(tc.reply))
			_ = p.Conn().SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := ioReadFull(p.Conn(), buf); err != nil || string(buf) != tc.reply {
				t.Errorf("PSYNC %s %d: %q (%v), want %q", tc.id, tc.off, buf, err, tc.reply)
			}
		})
	}
	if n := infoInt(t, c, "stats", "sync_partial_ok"); n != 2 {
		t.Errorf("sync_partial_ok = %d, want 2", n)
	}
	if n := infoInt(t, c, "stats", "sync_partial_err"); n != 2 {
		t.Errorf("sync_partial_err = %d, want 2", n)
	}
}

// TestReplconfErrors compares REPLCONF's, PSYNC's and WAIT's answers to
// bad input with redis-server's.
func TestReplconfErrors(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	steps := [][]string{
		{"psync", "?", "x"}, {"psync", "a"}, {"replconf"}, {"replconf", "a"}, {"replconf", "foo", "bar"}, {"replconf", "listening-port", "x"},
		{"replconf", "listening-port", "70000"}, {"replconf", "rdb-only", "2"}, {"replconf", "rdb-only", "x"},
		{"replconf", "rdb-filter-only", ""}, {"replconf", "rdb-filter-only", "x"}, {"replconf", "capa", "foo"},
		{"replconf", "ip-address", strings.Repeat("1", 300)},
		{"wait", "x", "1"}, {"wait", "1", "x"}, {"wait", "1", "-1"}, {"wait", "0", "0"}, {"wait", "1", "10"},
		{"multi"}, {"wait", "1", "0"}, {"exec"},
	}
	recAddr, _ := servertest.StartRecached(t, server.DefaultConfig())
	var got [2][]string
	for i, addr := range []string{servertest.StartRedis(t), recAddr} {
		c := servertest.Dial(t, addr)
		for _, s := range steps {
			got[i] = append(got[i], servertest.MustDo(t, c, s...))
		}
	}
	for j, s := range steps {
		if got[0][j] != got[1][j] {
			t.Errorf("%q: redis-server %q, recached %q", s, got[0][j], got[1][j])
		}
	}
}

// ioReadFull reads len(b) bytes.
func ioReadFull(r interface{ Read([]byte) (int, error) }, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// TestPromotedReplicaContinues is Sentinel's failover by hand: a recached
// primary with a recached replica and a redis-server replica; the
// recached replica is promoted (REPLICAOF NO ONE) and the redis-server
// replica, pointed at it, continues with +CONTINUE from replid2 (PSYNC2,
// integration/psync2.tcl's idea), then receives the new primary's writes.
// A redis-server replica of the recached replica (chained) gets the
// stream the replica received, byte for byte at the same offsets.
func TestPromotedReplicaContinues(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	cfg := server.DefaultConfig()
	cfg.Dir = t.TempDir()
	a, _ := servertest.StartRecached(t, cfg)
	cfg.Dir = t.TempDir()
	b, _ := servertest.StartRecached(t, cfg)
	ca, cb := servertest.Dial(t, a), servertest.Dial(t, b)
	fillEveryType(t, ca)
	ah, ap, _ := net.SplitHostPort(a)
	servertest.MustDo(t, cb, "replicaof", ah, ap)
	port, _ := tcp.FreePort()
	c, _ := redisReplica(t, a, t.TempDir(), port)
	linkUp(t, c)
	linkUp(t, b)
	port2, _ := tcp.FreePort()
	chained, _ := redisReplica(t, b, t.TempDir(), port2)
	linkUp(t, chained)
	liveWrites(t, a, 3000, 4)
	caughtUp(t, a, b)
	caughtUp(t, a, c)
	caughtUp(t, b, chained)
	sameData(t, a, chained)

	if got := servertest.MustDo(t, cb, "replicaof", "no", "one"); got != "+OK\r\n" {
		t.Fatalf("REPLICAOF NO ONE: %q", got)
	}
	bh, bp, _ := net.SplitHostPort(b)
	servertest.MustDo(t, servertest.Dial(t, c), "replicaof", bh, bp)
	waitFor(t, "sync_partial_ok on the promoted replica", func() bool { return infoInt(t, cb, "stats", "sync_partial_ok") >= 1 })
	linkUp(t, c)
	liveWrites(t, b, 3000, 5)
	caughtUp(t, b, c)
	caughtUp(t, b, chained)
	sameData(t, b, c)
	sameData(t, b, chained)
	if n := infoInt(t, cb, "stats", "sync_full"); n != 1 {
		t.Errorf("sync_full on the promoted replica = %d, want 1 (the chained replica's)", n)
	}
}

// TestDedupMarksReplicate: DEDUP-wrapped writes reach a recached replica
// with their marks, so that after its promotion the replayed writes
// answer +DUP, while a redis-server replica of the same primary applies
// the same stream (the writes, not the marks) at the same offsets.
func TestDedupMarksReplicate(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	a, b, c := primaryAndReplicas(t)
	ca, cb := servertest.Dial(t, a), servertest.Dial(t, b)
	writes := []struct {
		args []string
		want string
	}{
		{[]string{"dedup", "cl", "1", "incr", "n"}, ":1\r\n"},
		{[]string{"dedup", "cl", "2", "incr", "n"}, ":2\r\n"},
		{[]string{"dedup", "cl", "2", "incr", "n"}, "+DUP\r\n"},
		{[]string{"dedup", "cl", "3", "get", "n"}, "$1\r\n2\r\n"}, // a mark, no change
		{[]string{"dedup", "other", "1", "mset", "x", "1", "y", "2"}, "+OK\r\n"},
		{[]string{"select", "4"}, "+OK\r\n"},
		{[]string{"dedup", "cl", "4", "rpush", "l", "a"}, ":1\r\n"},
		{[]string{"wait", "2", "10000"}, ":2\r\n"},
	}
	for _, w := range writes {
		if got := servertest.MustDo(t, ca, w.args...); got != w.want {
			t.Errorf("%q = %q, want %q", w.args, got, w.want)
		}
	}
	caughtUp(t, a, c)
	cc := servertest.Dial(t, c)
	if got := servertest.MustDo(t, cc, "get", "n"); got != "$1\r\n2\r\n" {
		t.Errorf("redis-server replica: n = %q", got)
	}
	if got := servertest.MustDo(t, cc, "mget", "x", "y"); got != "*2\r\n$1\r\n1\r\n$1\r\n2\r\n" {
		t.Errorf("redis-server replica: x, y = %q", got)
	}
	off := infoInt(t, ca, "replication", "master_repl_offset")
	if o := infoInt(t, cb, "replication", "master_repl_offset"); o != off {
		t.Errorf("recached replica at offset %d, primary %d", o, off)
	}

	servertest.MustDo(t, cb, "replicaof", "no", "one")
	replays := []struct {
		args []string
		want string
	}{
		{[]string{"dedup", "cl", "1", "incr", "n"}, "+DUP\r\n"},
		{[]string{"dedup", "cl", "2", "incr", "n"}, "+DUP\r\n"},
		{[]string{"dedup", "cl", "3", "get", "n"}, "+DUP\r\n"},
		{[]string{"dedup", "other", "1", "mset", "x", "1", "y", "2"}, "+DUP\r\n"},
		{[]string{"dedup", "cl", "4", "rpush", "l", "a"}, "+DUP\r\n"},
		{[]string{"dedup", "cl", "5", "incr", "n"}, ":3\r\n"},
	}
	for _, w := range replays {
		if got := servertest.MustDo(t, cb, w.args...); got != w.want {
			t.Errorf("after the promotion %q = %q, want %q", w.args, got, w.want)
		}
	}
}

// TestBareSyncGuarded: SYNC with no argument hands over the whole
// dataset, so a token-scoped connection gets the old arity error and a
// user without PSYNC gets NOPERM.
func TestBareSyncGuarded(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.TokenSecret = "s3cret"
	addr, _ := servertest.StartRecached(t, cfg)
	c := servertest.Dial(t, addr)
	servertest.MustDo(t, c, "acl", "setuser", "app", "on", ">pw", "+@all", "-psync", "~*")
	tok, err := recsync.SignToken([]byte("s3cret"), []string{"user:*"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	scoped := servertest.Dial(t, addr)
	if got := servertest.MustDo(t, scoped, "sync", "token", tok); got != "+OK\r\n" {
		t.Fatalf("SYNC TOKEN: %q", got)
	}
	if got := servertest.MustDo(t, scoped, "sync"); got != "-ERR wrong number of arguments for 'sync' command\r\n" {
		t.Errorf("scoped SYNC: %q", got)
	}
	app := servertest.Dial(t, addr)
	servertest.MustDo(t, app, "auth", "app", "pw")
	if got := servertest.MustDo(t, app, "sync"); !strings.HasPrefix(got, "-NOPERM") {
		t.Errorf("SYNC without PSYNC's permission: %q", got)
	}
}
