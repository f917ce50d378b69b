// Command amaquetbench compares recached's Amaquet protocol with
// redis-server's RESP under the same load: GET and SET over one
// connection with 64 requests in flight (Amaquet: 64 concurrent calls on
// one sync/amaquet Conn, answered out of order; RESP: one connection
// pipelining 64 commands at a time, against redis-server and, for
// reference, recached's own RESP port). For each it prints requests per
// second and the server's CPU time per request (utime+stime from /proc,
// bench/procstat), in rounds with the order rotated, and the ratios to
// redis-server. Then the latency of GETs on an Amaquet connection while
// 32 BLPOPs on the same connection stay blocked, next to the same GETs
// with nothing blocked (RESP cannot answer a GET on a connection whose
// BLPOP is blocked at all).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/recached/recached/bench/harness"
	"github.com/recached/recached/bench/procstat"
	"github.com/recached/recached/sync/amaquet"
)

func main() {
	bin := flag.String("recached", "bin/recached", "recached binary")
	rounds := flag.Int("rounds", 3, "rounds, order rotated each round")
	n := flag.Int("n", 300000, "requests per throughput run")
	inflight := flag.Int("inflight", 64, "requests in flight (Amaquet) and pipeline depth (RESP)")
	keys := flag.Int("keys", 100000, "distinct keys (16-byte values)")
	blocked := flag.Int("blocked", 32, "BLPOPs kept blocked during the latency run")
	latN := flag.Int("latn", 20000, "GETs timed in the latency run")
	cpu := flag.String("server-cpu", "", "run the servers under taskset -c with this CPU list (run the bench itself under taskset -c with others), so that client and servers do not share caches; off by default on a machine others use")
	only := flag.String("only", "", "run only these comma-separated loads (amaquet, amq-pipe, redis, rc-resp), e.g. to profile one")
	flag.Parse()
	log.SetFlags(0)
	cfg := config{bin: *bin, rounds: *rounds, n: *n, inflight: *inflight, keys: *keys, blocked: *blocked, latN: *latN, only: *only, cpu: *cpu}
	if err := run(cfg); err != nil {
		log.Fatal(err)
	}
}

// config is the command line: the recached binary, rounds, requests per
// run, requests in flight, distinct keys, BLPOPs blocked and GETs timed in
// the latency run, the loads to run (empty: all) and the servers' CPUs
// (empty: any).
type config struct {
	bin, only, cpu                           string
	rounds, n, inflight, keys, blocked, latN int
}

// run starts both servers, measures and prints, and stops the servers
// whatever happens.
func run(cfg config) error {
	dir, err := os.MkdirTemp("", "amaquetbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	rc, err := start("recached", cfg.bin, filepath.Join(dir, "recached"), true, cfg.cpu)
	if err != nil {
		return err
	}
	defer rc.stop()
	rd, err := start("redis", "redis-server", filepath.Join(dir, "redis"), false, cfg.cpu)
	if err != nil {
		return err
	}
	defer rd.stop()

	ctx := context.Background()
	conn, err := amaquet.Dial(ctx, rc.amaquet, amaquet.Options{TrustOnFirstUse: true})
	if err != nil {
		return fmt.Errorf("dial Amaquet %s: %v", rc.amaquet, err)
	}
	defer conn.Close()
	if need := max(cfg.inflight, cfg.blocked+1); conn.Hello().MaxInflight < need {
		return fmt.Errorf("server's max_inflight %d is below the %d requests in flight this bench needs", conn.Hello().MaxInflight, need)
	}
	respRC, err := dialRESP(rc.resp)
	if err != nil {
		return err
	}
	respRD, err := dialRESP(rd.resp)
	if err != nil {
		return err
	}

	pipe, err := dialPipe(rc.amaquet)
	if err != nil {
		return err
	}

	type target struct {
		name string
		p    *proc
		run  func(cmd string, n int) error
	}
	targets := []target{
		{"amaquet", rc, func(cmd string, n int) error { return amaquetLoad(conn, cmd, n, cfg.inflight, cfg.keys) }},
		{"amq-pipe", rc, func(cmd string, n int) error { return pipe.load(cmd, n, cfg.inflight, cfg.keys) }},
		{"redis", rd, func(cmd string, n int) error { return respRD.load(cmd, n, cfg.inflight, cfg.keys) }},
		{"rc-resp", rc, func(cmd string, n int) error { return respRC.load(cmd, n, cfg.inflight, cfg.keys) }},
	}
	if cfg.only != "" {
		var kept []target
		for _, t := range targets {
			if slices.Contains(strings.Split(cfg.only, ","), t.name) {
				kept = append(kept, t)
			}
		}
		targets = kept
	}
	res := map[string]map[string][]result{}
	cmds := []string{"SET", "GET"}
	for r := 0; r < cfg.rounds; r++ {
		order := append([]target(nil), targets...)
		for i := 0; i < r%len(order); i++ {
			order = append(order[1:], order[0])
		}
		for _, cmd := range cmds {
			for _, t := range order {
				r0, w0 := syscalls(t.p.pid())
				before, t0 := procstat.CPUTicks(t.p.pid()), time.Now()
				if err := t.run(cmd, cfg.n); err != nil {
					return fmt.Errorf("%s %s: %v", t.name, cmd, err)
				}
				el, after := time.Since(t0), procstat.CPUTicks(t.p.pid())
				r1, w1 := syscalls(t.p.pid())
				out := result{rps: float64(cfg.n) / el.Seconds(), cpuNs: procstat.NsPer(after-before, cfg.n)}
				fmt.Fprintf(os.Stderr, "%-8s %-4s %10.0f req/s %8.0f ns cpu/req %6.1f req/read %6.1f req/write\n", t.name, cmd, out.rps, out.cpuNs,
					float64(cfg.n)/float64(max(1, r1-r0)), float64(cfg.n)/float64(max(1, w1-w0)))
				if res[cmd] == nil {
					res[cmd] = map[string][]result{}
				}
				res[cmd][t.name] = append(res[cmd][t.name], out)
			}
		}
	}

	fmt.Printf("\none connection, %d requests in flight (Amaquet) / pipeline %d (RESP): median of %d rounds, CPU ratio to redis-server per round (median, range)\n", cfg.inflight, cfg.inflight, cfg.rounds)
	fmt.Printf("%-5s %-9s %12s %12s %22s\n", "", "load", "req/s", "cpu/req", "cpu x redis [range]")
	for _, cmd := range cmds {
		rd := res[cmd]["redis"]
		for _, t := range targets {
			rs := res[cmd][t.name]
			m := median(rs)
			if t.name == "redis" || len(rd) != len(rs) {
				fmt.Printf("%-5s %-9s %12.0f %10.0fns\n", cmd, t.name, m.rps, m.cpuNs)
				continue
			}
			var ratios []float64
			for i := range rs {
				ratios = append(ratios, rs[i].cpuNs/rd[i].cpuNs)
			}
			fmt.Printf("%-5s %-9s %12.0f %10.0fns %22s\n", cmd, t.name, m.rps, m.cpuNs, harness.Spread(ratios))
		}
	}
	fmt.Println("  amaquet: 64 goroutines sharing one sync/amaquet Conn; amq-pipe: one goroutine keeping 64 raw frames in flight (a new request per response), as the RESP client keeps a pipeline of 64")

	fmt.Printf("\nGET latency on one Amaquet connection, %d GETs one at a time:\n", cfg.latN)
	idle, err := getLatencies(conn, cfg.latN, cfg.keys)
	if err != nil {
		return err
	}
	printLatency("nothing else in flight", idle)
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var calls []*amaquet.Call
	for i := 0; i < cfg.blocked; i++ {
		calls = append(calls, conn.Start(bctx, "BLPOP", fmt.Sprintf("bench:never:%d", i), 0))
	}
	busy, err := getLatencies(conn, cfg.latN, cfg.keys)
	if err != nil {
		return err
	}
	for _, c := range calls {
		select {
		case <-c.Done():
			_, err := c.Result()
			return fmt.Errorf("a BLPOP ended while it should block: %v", err)
		default:
		}
	}
	printLatency(fmt.Sprintf("%d BLPOPs blocked", cfg.blocked), busy)
	cancel()
	for _, c := range calls {
		if _, err := c.Result(); err == nil {
			return fmt.Errorf("a cancelled BLPOP returned a result")
		}
	}
	rdLat, err := respRD.getLatencies(cfg.latN, cfg.keys)
	if err != nil {
		return err
	}
	printLatency("redis-server RESP, nothing blocked", rdLat)
	fmt.Println("  (redis-server cannot answer a GET on a connection whose BLPOP is blocked)")
	return nil
}

// syscalls returns the read and write system calls process pid has made
// (/proc/pid/io), to show how many requests each one carries.
func syscalls(pid int) (reads, writes int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		name, v, _ := strings.Cut(l, ": ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch name {
		case "syscr":
			reads = n
		case "syscw":
			writes = n
		}
	}
	return reads, writes
}

// result is one measured run.
type result struct {
	rps, cpuNs float64
}

func median(rs []result) result {
	if len(rs) == 0 {
		return result{}
	}
	a := append([]result(nil), rs...)
	sort.Slice(a, func(i, j int) bool { return a[i].rps < a[j].rps })
	b := append([]result(nil), rs...)
	sort.Slice(b, func(i, j int) bool { return b[i].cpuNs < b[j].cpuNs })
	return result{rps: a[len(a)/2].rps, cpuNs: b[len(b)/2].cpuNs}
}

func key(i, keys int) string { return "key:" + strconv.Itoa(i%keys) }

const value = "value:0123456789" // 16 bytes

// amaquetLoad runs n commands as inflight goroutines sharing conn, so that
// inflight requests are outstanding at every moment.
func amaquetLoad(conn *amaquet.Conn, cmd string, n, inflight, keys int) error {
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, inflight)
	for w := 0; w < inflight; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += inflight {
				var err error
				if cmd == "SET" {
					_, err = conn.Do(ctx, "SET", key(i, keys), value)
				} else {
					_, err = conn.Do(ctx, "GET", key(i, keys))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func getLatencies(conn *amaquet.Conn, n, keys int) ([]time.Duration, error) {
	ctx := context.Background()
	lat := make([]time.Duration, n)
	for i := range lat {
		t0 := time.Now()
		v, err := conn.Do(ctx, "GET", key(i, keys))
		lat[i] = time.Since(t0)
		if err != nil {
			return nil, err
		}
		if v != value {
			return nil, fmt.Errorf("GET %s = %v, want %q (the SET rows fill every key)", key(i, keys), v, value)
		}
	}
	return lat, nil
}

func printLatency(what string, lat []time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(f float64) time.Duration { return lat[min(len(lat)-1, int(f*float64(len(lat))))] }
	fmt.Printf("  %-36s p50 %8v  p99 %8v  p99.9 %8v  max %8v\n", what, q(0.5).Round(time.Microsecond), q(0.99).Round(time.Microsecond), q(0.999).Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))
}

// respConn is one RESP connection that pipelines.
type respConn struct {
	c net.Conn
	w *bufio.Writer
	r *bufio.Reader
}

func dialRESP(addr string) (*respConn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &respConn{c: c, w: bufio.NewWriterSize(c, 64<<10), r: bufio.NewReaderSize(c, 64<<10)}, nil
}

func (rc *respConn) send(args ...string) {
	fmt.Fprintf(rc.w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(rc.w, "$%d\r\n%s\r\n", len(a), a)
	}
}

// reply reads one reply of a GET or SET (a simple string, an error or a
// bulk string).
func (rc *respConn) reply() error {
	line, err := rc.r.ReadSlice('\n')
	if err != nil {
		return err
	}
	switch line[0] {
	case '+':
		return nil
	case '-':
		return fmt.Errorf("server error %q", line)
	case '$':
		n, err := strconv.Atoi(string(line[1 : len(line)-2]))
		if err != nil {
			return fmt.Errorf("bad bulk length %q", line)
		}
		if n >= 0 {
			_, err = rc.r.Discard(n + 2)
		}
		return err
	}
	return fmt.Errorf("unexpected reply %q", line)
}

// load sends n commands in pipelines of depth.
func (rc *respConn) load(cmd string, n, depth, keys int) error {
	for i := 0; i < n; i += depth {
		m := min(depth, n-i)
		for j := 0; j < m; j++ {
			if cmd == "SET" {
				rc.send("SET", key(i+j, keys), value)
			} else {
				rc.send("GET", key(i+j, keys))
			}
		}
		if err := rc.w.Flush(); err != nil {
			return err
		}
		for j := 0; j < m; j++ {
			if err := rc.reply(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (rc *respConn) getLatencies(n, keys int) ([]time.Duration, error) {
	lat := make([]time.Duration, n)
	for i := range lat {
		t0 := time.Now()
		rc.send("GET", key(i, keys))
		if err := rc.w.Flush(); err != nil {
			return nil, err
		}
		if err := rc.reply(); err != nil {
			return nil, err
		}
		lat[i] = time.Since(t0)
	}
	return lat, nil
}

// pipeConn is one Amaquet connection driven as the RESP client drives
// its pipeline, without the Go client: raw frames, one goroutine.
type pipeConn struct {
	c   net.Conn
	w   *bufio.Writer
	r   *bufio.Reader
	hdr []byte
	buf []byte
}

func dialPipe(addr string) (*pipeConn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &pipeConn{c: c, w: bufio.NewWriterSize(c, 64<<10), r: bufio.NewReaderSize(c, 64<<10), hdr: make([]byte, amaquet.HeaderSize)}, nil
}

// load keeps depth requests in flight until n have been answered: each
// response read lets one more request go, and what is queued is written
// once no response is left to read. Responses are matched to requests by
// ID, in whatever order they come.
func (pc *pipeConn) load(cmd string, n, depth, keys int) error {
	outstanding := make(map[uint64]bool, depth)
	sent := 0
	send := func() {
		p := append(pc.buf[:0], `{"command":"`...)
		p = append(p, cmd...)
		p = append(p, `","args":["`...)
		p = append(p, key(sent, keys)...)
		if cmd == "SET" {
			p = append(p, `","`...)
			p = append(p, value...)
		}
		p = append(p, `"]}`...)
		pc.buf = p
		sent++
		id := uint64(sent)
		outstanding[id] = true
		_, _ = pc.w.Write(amaquet.AppendFrame(pc.hdr[:0:0], amaquet.KindRequest, amaquet.OpCommand, id, p))
	}
	for sent < min(depth, n) {
		send()
	}
	for done := 0; done < n; done++ {
		if pc.r.Buffered() == 0 {
			if err := pc.w.Flush(); err != nil {
				return err
			}
		}
		f, err := amaquet.ReadFrame(pc.r, pc.hdr, amaquet.HardMaxPayload)
		if err != nil {
			return err
		}
		if !outstanding[f.ID] || !strings.HasPrefix(string(f.Payload), `{"ok":true,`) {
			return fmt.Errorf("response %d: %s", f.ID, f.Payload)
		}
		delete(outstanding, f.ID)
		if sent < n {
			send()
		}
	}
	return nil
}

// proc is a server process.
type proc struct {
	cmd           *exec.Cmd
	resp, amaquet string
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// start runs a server on free loopback ports with persistence off, under
// taskset -c cpu when cpu is set, and waits until it listens (recached:
// its Amaquet port). The server gets SIGTERM if the bench dies first.
func start(name, bin, dir string, amq bool, cpu string) (*proc, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	port, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	p := &proc{resp: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no"}
	wait := p.resp
	if amq {
		aport, err := harness.FreePort()
		if err != nil {
			return nil, err
		}
		p.amaquet = net.JoinHostPort("127.0.0.1", strconv.Itoa(aport))
		args = append(args, "--ws-port", "0", "--realtime-port", "0", "--amaquet-port", strconv.Itoa(aport))
		wait = p.amaquet
	}
	if filepath.Base(bin) != bin { // a path, not a name to look up in $PATH
		if bin, err = filepath.Abs(bin); err != nil {
			return nil, err
		}
	}
	if cpu != "" {
		// taskset execs the server: the process, its pid, are the server.
		args = append([]string{"-c", cpu, bin}, args...)
		bin = "taskset"
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	p.cmd.Stdout, p.cmd.Stderr = io.Discard, io.Discard
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %v", name, err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", wait, time.Second)
		if err == nil {
			c.Close()
			return p, nil
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("%s did not listen on %s within 15s", name, wait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the server with SIGTERM, so that recached flushes a CPU
// profile (RECACHED_CPUPROFILE), and kills it if it has not exited within
// ten seconds.
func (p *proc) stop() { harness.Stop(p.cmd) }
