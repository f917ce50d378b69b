package server_test

import (
	"context"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/server/tcp"
)

// Failover by Redis Sentinel (redis-server --sentinel, the binary Debian's
// redis-sentinel links to): three Sentinels monitor a master, see the
// recached replica in the master's INFO and on __sentinel__:hello, and
// when the master is SIGKILLed promote the replica (MULTI, REPLICAOF NO
// ONE, CONFIG REWRITE, CLIENT KILL, EXEC, as Sentinel sends them); a
// go-redis failover client then writes to it.

// startProcess runs redis-server with args on a free port and returns its
// address and process; it is killed when the test ends.
func startProcess(t *testing.T, args ...string) (string, *exec.Cmd) {
	t.Helper()
	port, err := tcp.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	args = append(args, "--port", strconv.Itoa(port), "--bind", "127.0.0.1")
	cmd := exec.Command(servertest.RedisBin(t), args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	rWaitFor(t, "a PING reply from "+addr, func() bool {
		c := rClient(addr, 0)
		defer c.Close()
		return c.Ping(context.Background()).Err() == nil
	})
	return addr, cmd
}

// startSentinel starts a Sentinel monitoring master as "mymaster" with
// quorum 2, a one-second down-after and a short failover timeout.
func startSentinel(t *testing.T, master string) string {
	t.Helper()
	host, port, _ := strings.Cut(master, ":")
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	text := fmt.Sprintf("dir %s\nsentinel monitor mymaster %s %s 2\nsentinel down-after-milliseconds mymaster 1000\nsentinel failover-timeout mymaster 10000\nsentinel parallel-syncs mymaster 1\n", dir, host, port)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, _ := startProcess(t, conf, "--sentinel")
	return addr
}

// TestSentinelPromotesRecachedReplica: Sentinel fails a redis-server
// master over to its recached replica.
func TestSentinelPromotesRecachedReplica(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	ctx := context.Background()
	master, proc := startProcess(t, "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	host, port, _ := strings.Cut(master, ":")
	replica, _ := rStartReplica(t)
	rDo(t, replica, "REPLICAOF", host, port)
	rWaitLinkUp(t, replica)
	rDo(t, master, "SET", "before", "failover")
	rWaitCaughtUp(t, master, replica)

	var sentinels []string
	for i := 0; i < 3; i++ {
		sentinels = append(sentinels, startSentinel(t, master))
	}
	// Every Sentinel knows the replica and the two other Sentinels (from
	// the hello messages on the master and the replica).
	for _, s := range sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s})
		defer sc.Close()
		rWaitFor(t, "Sentinel "+s+" to see the replica and the other Sentinels", func() bool {
			reps, err := sc.Replicas(ctx, "mymaster").Result()
			if err != nil || len(reps) != 1 || reps[0]["flags"] != "slave" || reps[0]["port"] != strings.Split(replica, ":")[1] {
				return false
			}
			others, err := sc.Sentinels(ctx, "mymaster").Result()
			return err == nil && len(others) == 2
		})
	}

	if err := proc.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	sc := redis.NewSentinelClient(&redis.Options{Addr: sentinels[0]})
	defer sc.Close()
	for i := 0; ; i++ {
		a, err := sc.GetMasterAddrByName(ctx, "mymaster").Result()
		if err == nil && net.JoinHostPort(a[0], a[1]) == replica {
			break
		}
		if i == 3000 {
			t.Fatalf("Sentinel did not promote the recached replica within 30 s (master %v, %v)", a, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	rWaitFor(t, "the recached replica to be a master", func() bool {
		return rInfo(t, replica, "replication", "role") == "master"
	})
	fc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: sentinels, Protocol: 2})
	defer fc.Close()
	if err := fc.Set(ctx, "after", "failover", 0).Err(); err != nil {
		t.Fatalf("SET through the failover client: %v", err)
	}
	if v := rDo(t, replica, "GET", "after"); v != "failover" {
		t.Errorf("GET after on the promoted replica: %v", v)
	}
	if v := rDo(t, replica, "GET", "before"); v != "failover" {
		t.Errorf("GET before on the promoted replica: %v", v)
	}
}

// startRecachedProcess runs the recached binary with a configuration file
// of its own (CONFIG REWRITE, which Sentinel sends, writes it) in dir on
// port, and returns its process; it is killed when the test ends.
func startRecachedProcess(t *testing.T, bin, dir string, port int, extra ...string) *exec.Cmd {
	t.Helper()
	conf := filepath.Join(dir, "recached.conf")
	if _, err := os.Stat(conf); err != nil {
		if err := os.WriteFile(conf, []byte(fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nappendonly yes\n", port, dir)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := append([]string{conf, "--ws-port", "0", "--realtime-port", "0", "--amaquet-port", "0"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	rWaitFor(t, "a PING reply from "+addr, func() bool {
		c := rClient(addr, 0)
		defer c.Close()
		return c.Ping(context.Background()).Err() == nil
	})
	return cmd
}

// TestSentinelFailoverRecached: three Sentinels monitor a recached
// primary (a process) with two recached replicas; the primary is
// SIGKILLed, Sentinel promotes one replica and points the other at it,
// which continues with +CONTINUE from the promoted one's replid2; a
// go-redis failover client follows. The old primary, restarted, is made a
// replica of the new one and gets its data.
func TestSentinelFailoverRecached(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	ctx := context.Background()
	bin := servertest.BuildRecached(t)
	var addrs [3]string
	var dirs [3]string
	var procs [3]*exec.Cmd
	for i := range addrs {
		port := servertest.FreePort(t)
		dirs[i] = t.TempDir()
		addrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		var extra []string
		if i > 0 {
			extra = []string{"--replicaof", "127.0.0.1", strings.Split(addrs[0], ":")[1]}
		}
		procs[i] = startRecachedProcess(t, bin, dirs[i], port, extra...)
	}
	for _, r := range addrs[1:] {
		rWaitLinkUp(t, r)
	}
	rDo(t, addrs[0], "SET", "before", "failover")
	var sentinels []string
	for i := 0; i < 3; i++ {
		sentinels = append(sentinels, startSentinel(t, addrs[0]))
	}
	for _, s := range sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s})
		defer sc.Close()
		rWaitFor(t, "Sentinel "+s+" to see both replicas and the other Sentinels", func() bool {
			reps, err := sc.Replicas(ctx, "mymaster").Result()
			if err != nil || len(reps) != 2 {
				return false
			}
			others, err := sc.Sentinels(ctx, "mymaster").Result()
			return err == nil && len(others) == 2
		})
	}
	for _, r := range addrs[1:] {
		rWaitCaughtUp(t, addrs[0], r)
	}
	partial := map[string]string{}
	for _, r := range addrs[1:] {
		partial[r] = rInfo(t, r, "stats", "sync_partial_ok")
	}

	if err := procs[0].Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = procs[0].Wait()
	sc := redis.NewSentinelClient(&redis.Options{Addr: sentinels[0]})
	defer sc.Close()
	var primary, other string
	for i := 0; primary == ""; i++ {
		a, err := sc.GetMasterAddrByName(ctx, "mymaster").Result()
		if err == nil {
			if p := net.JoinHostPort(a[0], a[1]); p != addrs[0] {
				primary = p
			}
		}
		if i == 3000 {
			t.Fatalf("Sentinel did not fail over within 30 s (master %v, %v)", a, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, r := range addrs[1:] {
		if r != primary {
			other = r
		}
	}
	if other == "" {
		t.Fatalf("Sentinel promoted %s, not one of the replicas %v", primary, addrs[1:])
	}
	// Sentinel reconfiguring an instance sends CLIENT KILL TYPE normal,
	// which may close the connection of a poll: that poll counts as not
	// yet.
	replIs := func(addr, field, want string) bool {
		v, err := rInfoTry(addr, "replication", field)
		return err == nil && v == want
	}
	rWaitFor(t, "the promoted replica to be a master", func() bool {
		return replIs(primary, "role", "master")
	})
	fc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: sentinels, Protocol: 2})
	defer fc.Close()
	if err := fc.Set(ctx, "after", "failover", 0).Err(); err != nil {
		t.Fatalf("SET through the failover client: %v", err)
	}
	// The other replica follows the promoted one, continuing its stream.
	rWaitFor(t, "the other replica to follow the promoted one", func() bool {
		return replIs(other, "master_port", strings.Split(primary, ":")[1]) &&
			replIs(other, "master_link_status", "up")
	})
	rWaitCaughtUp(t, primary, other)
	for _, r := range []string{primary, other} {
		for k, want := range map[string]string{"before": "failover", "after": "failover"} {
			if v := rDo(t, r, "GET", k); v != want {
				t.Errorf("GET %s on %s: %v, want %s", k, r, v, want)
			}
		}
	}
	if got := rInfo(t, primary, "stats", "sync_partial_ok"); got == partial[primary] {
		t.Errorf("the promoted replica's sync_partial_ok stayed %s: the other replica did a full sync", got)
	}

	// The old primary comes back and is made a replica of the new one.
	port, _ := strconv.Atoi(strings.Split(addrs[0], ":")[1])
	startRecachedProcess(t, bin, dirs[0], port)
	// Sentinel looks at a returning instance's INFO every 10 s. Making it
	// a replica, it kills the clients as above. On a loaded
	// machine a Sentinel may miss the new primary's replies for its 1 s
	// and fail over again, to the other replica: the old primary is then
	// to follow whichever Sentinel names now.
	current := primary
	rWaitUpTo(t, 60*time.Second, "the old primary to become a replica of the new one", func() bool {
		if a, err := sc.GetMasterAddrByName(ctx, "mymaster").Result(); err == nil {
			current = net.JoinHostPort(a[0], a[1])
		}
		return replIs(addrs[0], "master_port", strings.Split(current, ":")[1]) &&
			replIs(addrs[0], "master_link_status", "up")
	})
	rWaitCaughtUp(t, current, addrs[0])
	if v := rDo(t, addrs[0], "GET", "after"); v != "failover" {
		t.Errorf("GET after on the old primary: %v", v)
	}
}

// TestFailoverChaosDedup: exactly-once across failovers. A writer sends
// 10 000 DEDUP-wrapped INCRs, each followed by WAIT 1, through a go-redis
// failover client; a write counts as acknowledged once WAIT reports a
// replica, and anything else (an error, a WAIT of 0) makes it send the
// same wire id again, as the reference client's outbox replays. The
// primary is SIGKILLed twice at random moments (and restarted, to come
// back as a replica); at the end the counter equals the number of writes:
// none lost, none applied twice.
func TestFailoverChaosDedup(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	const writes = 10000
	ctx := context.Background()
	bin := servertest.BuildRecached(t)
	dirs := map[string]string{}
	procs := map[string]*exec.Cmd{}
	var first string
	for i := 0; i < 3; i++ {
		port := servertest.FreePort(t)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		dirs[addr] = t.TempDir()
		var extra []string
		if i == 0 {
			first = addr
		} else {
			extra = []string{"--replicaof", "127.0.0.1", strings.Split(first, ":")[1]}
		}
		procs[addr] = startRecachedProcess(t, bin, dirs[addr], port, extra...)
	}
	var sentinels []string
	for i := 0; i < 3; i++ {
		sentinels = append(sentinels, startSentinel(t, first))
	}
	sc := redis.NewSentinelClient(&redis.Options{Addr: sentinels[0]})
	defer sc.Close()
	// waitReplicas waits for the primary Sentinel names to have two
	// replicas with their links up, and returns it.
	waitReplicas := func() string {
		var primary string
		rWaitUpTo(t, 90*time.Second, "a primary with two replicas up", func() bool {
			a, err := sc.GetMasterAddrByName(ctx, "mymaster").Result()
			if err != nil {
				return false
			}
			primary = net.JoinHostPort(a[0], a[1])
			n := 0
			for addr := range dirs {
				// A server Sentinel is reconfiguring kills its clients
				// (CLIENT KILL TYPE normal): an error means not yet.
				port, err1 := rInfoTry(addr, "replication", "master_port")
				link, err2 := rInfoTry(addr, "replication", "master_link_status")
				if addr != primary && err1 == nil && err2 == nil && port == a[1] && link == "up" {
					n++
				}
			}
			return n == 2
		})
		return primary
	}
	waitReplicas()

	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	kills := []int{1000 + rng.Intn(3000), 6000 + rng.Intn(3000)}
	var progress, resent, dups atomic.Int64
	// The writer stops at each kill's write until the cluster is whole
	// again, then goes on while the primary is killed.
	ready := []chan struct{}{make(chan struct{}), make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		fc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: sentinels, Protocol: 2, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 3 * time.Second})
		defer fc.Close()
		deadline := time.Now().Add(4 * time.Minute)
		for i := 1; i <= writes; i++ {
			for k, at := range kills {
				if i == at {
					<-ready[k]
				}
			}
			for try := 0; ; try++ {
				if time.Now().After(deadline) {
					done <- fmt.Errorf("write %d not acknowledged within the test's time", i)
					return
				}
				if try > 0 {
					resent.Add(1)
				}
				v, err := fc.Do(ctx, "DEDUP", "chaos", strconv.Itoa(i), "INCR", "counter").Result()
				if v == "DUP" {
					dups.Add(1)
				}
				if err == nil {
					var n int64
					if n, err = fc.Do(ctx, "WAIT", "1", "1000").Int64(); err == nil && n >= 1 {
						break
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
			progress.Store(int64(i))
		}
		done <- nil
	}()
	for k, at := range kills {
		rWaitUpTo(t, 3*time.Minute, "the writer to reach "+strconv.Itoa(at), func() bool { return progress.Load() >= int64(at-1) })
		primary := waitReplicas()
		close(ready[k])
		time.Sleep(time.Duration(rng.Intn(50)) * time.Millisecond)
		t.Logf("SIGKILL of the primary %s at write %d", primary, progress.Load())
		port, _ := strconv.Atoi(strings.Split(primary, ":")[1])
		_ = procs[primary].Process.Kill()
		_ = procs[primary].Wait()
		rWaitUpTo(t, 60*time.Second, "Sentinel to fail over", func() bool {
			a, err := sc.GetMasterAddrByName(ctx, "mymaster").Result()
			return err == nil && net.JoinHostPort(a[0], a[1]) != primary
		})
		procs[primary] = startRecachedProcess(t, bin, dirs[primary], port)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Minute):
		t.Fatal("the writer did not finish")
	}
	t.Logf("writes sent again: %d, answered +DUP: %d", resent.Load(), dups.Load())
	primary := waitReplicas()
	if v := rDo(t, primary, "GET", "counter"); v != strconv.Itoa(writes) {
		t.Fatalf("counter on the primary %s: %v, want %d", primary, v, writes)
	}
	for addr := range dirs {
		if addr == primary {
			continue
		}
		rWaitCaughtUp(t, primary, addr)
		if v := rDo(t, addr, "GET", "counter"); v != strconv.Itoa(writes) {
			t.Errorf("counter on the replica %s: %v, want %d", addr, v, writes)
		}
	}
}
