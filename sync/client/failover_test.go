package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/server/servertest/browsertest"
	recsync "github.com/recached/recached/sync"
)

// The tests of this file start real processes: recached primaries and
// replicas (the binary, SIGKILLed) and redis-server in Sentinel mode.

// startNode starts a recached process on free loopback ports, a replica of
// primary when it is not empty, with a configuration file that Sentinel's
// CONFIG REWRITE can rewrite.
func startNode(t *testing.T, bin, primary string, extra ...string) *process {
	t.Helper()
	p := &process{t: t, bin: bin, dir: t.TempDir(), port: servertest.FreePort(t), wsPort: servertest.FreePort(t),
		extra: append([]string{"--realtime-port", "0", "--amaquet-port", "0"}, extra...)}
	p.conf = filepath.Join(p.dir, "recached.conf")
	if err := os.WriteFile(p.conf, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if primary != "" {
		host, port, _ := strings.Cut(primary, ":")
		p.extra = append(p.extra, "--replicaof", host, port)
	}
	p.start()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("recached %s output:\n%s", p.addr(), p.out.String())
		}
	})
	waitUpTo(t, 10*time.Second, "the WebSocket bridge of "+p.addr(), func() bool {
		res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", p.wsPort))
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	return p
}

func (p *process) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }

func (p *process) wsURL() string { return fmt.Sprintf("ws://127.0.0.1:%d/", p.wsPort) }

// startSentinel starts redis-server in Sentinel mode monitoring primary as
// "mymaster", quorum 2, down after one second.
func startSentinel(t *testing.T, primary string) string {
	t.Helper()
	host, port, _ := strings.Cut(primary, ":")
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	text := fmt.Sprintf("dir %s\nsentinel monitor mymaster %s %s 2\nsentinel down-after-milliseconds mymaster 1000\nsentinel failover-timeout mymaster 10000\n", dir, host, port)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	sport := servertest.FreePort(t)
	var out servertest.SafeBuffer
	cmd := exec.Command(servertest.RedisBin(t), conf, "--sentinel", "--port", strconv.Itoa(sport), "--bind", "127.0.0.1")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("sentinel %d output:\n%s", sport, out.String())
		}
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sport))
	waitUpTo(t, 10*time.Second, "sentinel "+addr, func() bool { _, err := query(addr, "PING"); return err == nil })
	return addr
}

// query sends one command on a new connection and returns its reply.
func query(addr string, args ...string) (resp.Value, error) {
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return resp.Value{}, err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write(servertest.Encode(args...)); err != nil {
		return resp.Value{}, err
	}
	v, err := resp.ReadValue(bufio.NewReader(nc))
	if err == nil && v.IsError() {
		err = v.Err()
	}
	return v, err
}

// info returns field of INFO section on addr ("" when unreachable).
func info(addr, section, field string) string {
	v, err := query(addr, "INFO", section)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(v.Str), "\r\n") {
		if k, val, ok := strings.Cut(line, ":"); ok && k == field {
			return val
		}
	}
	return ""
}

// waitUpTo polls cond every 20 ms until it holds, or fails the test after
// limit.
func waitUpTo(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitLinkUp waits for replica's link to primary to be up and its offset
// to reach the primary's.
func waitCaughtUp(t *testing.T, primary, replica string) {
	t.Helper()
	_, port, _ := strings.Cut(primary, ":")
	waitUpTo(t, 30*time.Second, replica+" to catch up with "+primary, func() bool {
		if info(replica, "replication", "master_port") != port || info(replica, "replication", "master_link_status") != "up" {
			return false
		}
		off := info(primary, "replication", "master_repl_offset")
		return off != "" && info(replica, "replication", "slave_repl_offset") == off
	})
}

// recordOpens makes opts send the address of every session it opens on
// the returned channel.
func recordOpens(opts *Options) <-chan string {
	opened := make(chan string, 16)
	opts.OnState = func(e Event) {
		if e.State == StateOpen {
			opened <- e.Addr
		}
	}
	return opened
}

// TestFailoverURLs: a WebSocket client given the bridges of a replica and
// its primary, the replica first, establishes its session on the primary
// (ROLE). The two swap roles by hand (REPLICAOF): the client's next write
// is answered -READONLY by the demoted server, and the client moves to the
// promoted one, where its writes continue; every write applies once.
func TestFailoverURLs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the recached binary")
	}
	bin := recachedBinary(t)
	a := startNode(t, bin, "")
	b := startNode(t, bin, a.addr())
	waitCaughtUp(t, a.addr(), b.addr())
	opts := Options{URL: b.wsURL(), URLs: []string{a.wsURL()}, OutboxSaveInterval: -1}
	opened := recordOpens(&opts)
	c := newClient(t, opts)
	if got := <-opened; got != a.wsURL() {
		t.Fatalf("session opened on %s, want the primary %s", got, a.wsURL())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 10; i++ {
		if _, err := c.Write("INCR", "n").Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waitCaughtUp(t, a.addr(), b.addr())
	if _, err := query(b.addr(), "REPLICAOF", "NO", "ONE"); err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(b.addr(), ":")
	if _, err := query(a.addr(), "REPLICAOF", host, port); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if _, err := c.Write("INCR", "n").Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := <-opened; got != b.wsURL() {
		t.Fatalf("session reopened on %s, want the promoted %s", got, b.wsURL())
	}
	if v, err := query(b.addr(), "GET", "n"); err != nil || string(v.Str) != "20" {
		t.Fatalf("GET n on the new primary: %q %v, want 20", v.Str, err)
	}
}

// TestFailoverReplicaOK: a client allowed to stay on a replica hydrates
// its live query there and follows the primary's writes through the
// replicated stream's pushes; its first write is answered -READONLY, and
// it moves to the primary, which runs the write once. A token-scoped
// client, which may not ask ROLE, does the same without ReplicaOK.
func TestFailoverReplicaOK(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the recached binary")
	}
	bin := recachedBinary(t)
	secret := "failover-secret"
	token, err := recsync.SignToken([]byte(secret), []string{"k:*"}, time.Now().Add(time.Hour).Unix())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		extra []string
		opts  Options
	}{
		{"replica-ok", nil, Options{ReplicaOK: true}},
		{"token", []string{"--token-secret", secret}, Options{Token: token}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := startNode(t, bin, "", tt.extra...)
			b := startNode(t, bin, a.addr(), tt.extra...)
			if _, err := query(a.addr(), "SET", "k:1", "before"); err != nil {
				t.Fatal(err)
			}
			waitCaughtUp(t, a.addr(), b.addr())
			opts := tt.opts
			opts.URL, opts.URLs, opts.OutboxSaveInterval = b.wsURL(), []string{a.wsURL()}, -1
			opened := recordOpens(&opts)
			c := newClient(t, opts)
			c.Query("k:*", func(string, Value) {})
			if got := <-opened; got != b.wsURL() {
				t.Fatalf("session opened on %s, want the replica %s", got, b.wsURL())
			}
			waitFor(t, "the replica's qstate", func() bool { v, ok := c.Get("k:1"); return ok && string(v.Str) == "before" })
			if _, err := query(a.addr(), "SET", "k:2", "pushed"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the replica's push", func() bool { v, ok := c.Get("k:2"); return ok && string(v.Str) == "pushed" })
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			v, err := c.Write("INCR", "k:n").Wait(ctx)
			if err != nil || v.Int != 1 {
				t.Fatalf("INCR through the replica: %v %v, want 1", v, err)
			}
			if got := <-opened; got != a.wsURL() {
				t.Fatalf("session reopened on %s, want the primary %s", got, a.wsURL())
			}
			if v, err := query(a.addr(), "GET", "k:n"); err != nil || string(v.Str) != "1" {
				t.Fatalf("GET k:n on the primary: %q %v, want 1", v.Str, err)
			}
		})
	}
}

// TestFailoverChaosClient is issue 17's failover chaos test with the
// reference client: one recached primary, two recached replicas, three
// Sentinels. A writer sends DEDUP-wrapped INCRs through a client that
// follows Sentinel and keeps each write until WAIT 1 confirms it; the
// primary is SIGKILLed twice at random moments. The final counter equals
// the number of writes on every server (none lost, none applied twice),
// and the local stores of two readers that stay on any server, a Go client
// and recached-edge in Chromium, built over the WebSocket bridges from
// qstate and pushes, equal the server. The writes a kill leaves answered
// but not confirmed are replayed: +DUP for those the promoted replica had.
func TestFailoverChaosClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs recached and Sentinel processes")
	}
	const writes = 10000
	bin := recachedBinary(t)
	nodes := []*process{startNode(t, bin, "")}
	for i := 0; i < 2; i++ {
		nodes = append(nodes, startNode(t, bin, nodes[0].addr()))
	}
	var sentinels []string
	for i := 0; i < 3; i++ {
		sentinels = append(sentinels, startSentinel(t, nodes[0].addr()))
	}
	// whole waits for Sentinel to name a primary with both other nodes
	// replicating from it, links up, and returns it.
	whole := func() *process {
		var primary *process
		waitUpTo(t, 90*time.Second, "a primary with two replicas up", func() bool {
			v, err := query(sentinels[0], "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")
			if err != nil || len(v.Elems) != 2 {
				return false
			}
			port := string(v.Elems[1].Str)
			n := 0
			for _, p := range nodes {
				if strconv.Itoa(p.port) == port {
					primary = p
				} else if info(p.addr(), "replication", "master_port") == port && info(p.addr(), "replication", "master_link_status") == "up" {
					n++
				}
			}
			return primary != nil && n == 2
		})
		return primary
	}
	whole()

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>3))
	kills := []int{writes/10 + rng.IntN(writes*3/10), writes*6/10 + rng.IntN(writes*3/10)}
	start := time.Now()
	logState := func(who string) func(Event) {
		return func(e Event) {
			if e.State != StateConnecting {
				t.Logf("%v %s: %v %s %v", time.Since(start).Round(time.Millisecond), who, e.State, e.Addr, e.Err)
			}
		}
	}
	var urls []string
	for _, p := range nodes {
		urls = append(urls, p.wsURL())
	}
	reader := newClient(t, Options{URL: urls[1], URLs: []string{urls[2], urls[0]}, ReplicaOK: true, OutboxSaveInterval: -1,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 300 * time.Millisecond, OnState: logState("reader")})
	reader.Query("counter", func(string, Value) {})
	page := browserReader(t, nodes[1], urls)
	writer := newClient(t, Options{URL: "tcp://" + nodes[0].addr(), Sentinels: sentinels, MasterName: "mymaster",
		WaitReplicas: 1, WaitTimeout: 500 * time.Millisecond, OutboxSaveInterval: -1, DialTimeout: time.Second,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 300 * time.Millisecond, OnState: logState("writer")})

	var progress atomic.Int64
	ready := []chan struct{}{make(chan struct{}), make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		var inflight []*Write
		settle := func(n int) error {
			for len(inflight) > n {
				w := inflight[0]
				inflight = inflight[1:]
				if _, err := w.Wait(ctx); err != nil {
					return fmt.Errorf("write %d: %w", w.ID&(1<<32-1), err)
				}
				progress.Add(1)
			}
			return nil
		}
		for i := 1; i <= writes; i++ {
			for k, at := range kills {
				if i == at {
					if err := settle(0); err != nil {
						done <- err
						return
					}
					<-ready[k]
				}
			}
			inflight = append(inflight, writer.Write("INCR", "counter"))
			if err := settle(100); err != nil {
				done <- err
				return
			}
		}
		done <- settle(0)
	}()
	for k, at := range kills {
		waitUpTo(t, 3*time.Minute, "the writer to reach write "+strconv.Itoa(at), func() bool { return progress.Load() >= int64(at-1) })
		primary := whole()
		close(ready[k])
		time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
		t.Logf("%v SIGKILL of the primary %s after %d confirmed writes", time.Since(start).Round(time.Millisecond), primary.addr(), progress.Load())
		primary.kill()
		waitUpTo(t, 60*time.Second, "Sentinel to fail over", func() bool {
			v, err := query(sentinels[0], "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")
			return err == nil && len(v.Elems) == 2 && string(v.Elems[1].Str) != strconv.Itoa(primary.port)
		})
		primary.start()
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(4 * time.Minute):
		t.Fatal("the writer did not finish")
	}
	st := writer.Stats()
	t.Logf("%v: %d writes, %d sent again after a failover, %d of them answered +DUP, %d sessions", time.Since(start).Round(time.Millisecond), writes, st.Resent, st.Dups, st.Connects)
	primary := whole()
	want := strconv.Itoa(writes)
	for _, p := range nodes {
		if p != primary {
			waitCaughtUp(t, primary.addr(), p.addr())
		}
		if v, err := query(p.addr(), "GET", "counter"); err != nil || string(v.Str) != want {
			t.Errorf("counter on %s: %q %v, want %s", p.addr(), v.Str, err, want)
		}
	}
	waitUpTo(t, 30*time.Second, "the reader's store to hold the counter "+want, func() bool {
		v, ok := reader.Get("counter")
		return ok && string(v.Str) == want
	})
	if page != nil {
		if got := page.Str(`waitFor(() => c.get('counter') === '` + want + `').then(() => c.get('counter'), () => String(c.get('counter')))`); got != want {
			t.Errorf("the browser's store holds the counter %s, want %s", got, want)
		}
	}
}

// browserReader opens recached-edge in headless Chromium, on a page of
// origin's bridge, with every bridge in urls and replicaOK, and registers
// the live query "counter": a browser-side replica built from qstate and
// pushes. Without Chromium (outside CI) it returns nil and the test goes
// on with the Go reader only.
func browserReader(t *testing.T, origin *process, urls []string) *browsertest.Page {
	t.Helper()
	if _, err := exec.LookPath("chromium"); err != nil && os.Getenv("RECACHED_CHROMIUM") == "" && os.Getenv("CI") == "" {
		t.Logf("no Chromium: the browser reader is left out (%v)", err)
		return nil
	}
	p := browsertest.NewPage(t, browsertest.Browser(t), "reader", true)
	p.Run(chromedp.Navigate(fmt.Sprintf("http://127.0.0.1:%d/healthz", origin.wsPort)))
	list, _ := json.Marshal(urls)
	p.Eval(`window.waitFor = (f, ms = 30000) => new Promise((resolve, reject) => {
	  const t0 = Date.now();
	  const tick = () => f() ? resolve(true) : Date.now() - t0 > ms ? reject(new Error('timed out')) : setTimeout(tick, 10);
	  tick();
	});
	import('/recached-edge.js').then(async (m) => {
	  const urls = `+string(list)+`;
	  window.c = m.connect(urls[0], {urls: urls.slice(1), replicaOK: true, name: 'chaos', minBackoff: 20, maxBackoff: 300});
	  c.query('counter', () => {});
	  await c.ready;
	  return true;
	})`, nil)
	return p
}

// TestWaitReplicas: with WaitReplicas, a write answered by a primary that
// has no replica stays in the outbox, unresolved, while WAIT answers 0 and
// is asked again; once a replica (redis-server, REPLICAOF the recached
// primary) acknowledges, the write resolves with its own reply, over both
// transports.
func TestWaitReplicas(t *testing.T) {
	s := startServer(t, server.Config{})
	writes := make(map[string]*Write)
	for _, tr := range transports {
		c := newClient(t, Options{URL: s.url(tr), WaitReplicas: 1, WaitTimeout: 20 * time.Millisecond, OutboxSaveInterval: -1})
		writes[tr] = c.Write("INCR", "wait:"+tr)
		waitFor(t, "the "+tr+" write to run", func() bool { v, _ := query(s.tcp, "GET", "wait:"+tr); return string(v.Str) == "1" })
	}
	time.Sleep(200 * time.Millisecond)
	for tr, w := range writes {
		select {
		case <-w.Done():
			t.Fatalf("%s: the write resolved with no replica to confirm it", tr)
		default:
		}
	}
	host, port, _ := strings.Cut(s.tcp, ":")
	servertest.StartRedis(t, "--replicaof", host, port)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for tr, w := range writes {
		v, err := w.Wait(ctx)
		if err != nil || v.Int != 1 || w.Dup() {
			t.Errorf("%s: the write resolved with %v %v, want 1", tr, v, err)
		}
	}
}
