// Command realtime compares recached's realtime protocol (SPEC section 9)
// with Centrifugo on the same machine, each server started by the program
// with the same GOMAXPROCS:
//
//   - fan-out: S WebSocket subscribers of one channel, a publisher sending
//     JSON messages as fast as the subscribers take them (at most -window
//     messages not yet received by everyone); it reports deliveries per
//     second, p50/p99 from the publish to the receipt, and the server's CPU
//     time (utime+stime from /proc/PID/stat) per 1 000 deliveries;
//   - idle: C connections each subscribed to a channel of its own; it
//     reports the server's resident memory per connection.
//
// recached is driven over its JSON protocol (Publish frames on publisher
// connections, subscribers with an API key); Centrifugo over its JSON
// protocol too (connect with an HMAC connection token, subscribe), its
// publications sent through its HTTP API's /api/batch with an API key.
// Every subscriber checks that it received every message, in order.
//
// Both servers batch with their own defaults, which no option here
// changes: Centrifugo (the open-source build) writes what is queued for a
// connection when its writer wakes, as one frame of newline-separated
// pushes (its write delay and messages-per-frame options are Centrifugo
// PRO's); recached writes what is queued for a connection in one write of
// one frame per message, lets the publishers in every millisecond of a
// long pass over many connections, and after the pass waits for the
// publishing to settle, at most as long as the pass (server/realtime's
// flusher). The latencies show what each batching costs.
//
// Usage (scripts/bench-realtime.sh builds both servers):
//
//	realtimebench -recached bin/recached -centrifugo /tmp/gobin/centrifugo -subs 1000,5000 -idle 10000 -rounds 3
package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/bench/harness"
	"github.com/recached/recached/bench/procstat"
)

func main() {
	var cfg config
	recached := flag.String("recached", "bin/recached", "recached binary (empty: Centrifugo only)")
	centrifugo := flag.String("centrifugo", "", "centrifugo binary (empty: recached only)")
	subs := flag.String("subs", "1000,5000", "fan-out subscriber counts")
	flag.IntVar(&cfg.messages, "messages", 0, "messages per fan-out run (0: 1 000 000 deliveries' worth, at least 100)")
	flag.IntVar(&cfg.window, "window", 8, "messages in flight: not yet received by every subscriber")
	flag.IntVar(&cfg.idle, "idle", 10000, "idle connections (0: skip)")
	flag.IntVar(&cfg.procs, "procs", 1, "GOMAXPROCS of both servers")
	rounds := flag.Int("rounds", 1, "rounds of every scenario (the summary shows medians)")
	flag.IntVar(&cfg.publishers, "publishers", 4, "recached publisher connections (each is limited to 1 000 publishes a second)")
	flag.Parse()
	var servers []target
	if *recached != "" {
		servers = append(servers, &recachedTarget{bin: *recached})
	}
	if *centrifugo != "" {
		servers = append(servers, &centrifugoTarget{bin: *centrifugo})
	}
	var scenarios []func(target) (result, error)
	for _, f := range strings.Split(*subs, ",") {
		if strings.TrimSpace(f) == "" {
			continue // -subs "": no fan-out
		}
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fatalf("bad -subs %q", *subs)
		}
		scenarios = append(scenarios, func(t target) (result, error) { return cfg.fanout(t, n) })
	}
	if cfg.idle > 0 {
		scenarios = append(scenarios, func(t target) (result, error) { return cfg.idleConns(t, cfg.idle) })
	}
	// Each scenario runs -rounds times on every server, the servers'
	// order rotated each round; the summary takes each figure's median.
	var rows [][]result
	var all [][][]result // by scenario, server, round
	for _, run := range scenarios {
		byServer := make([][]result, len(servers))
		for round := range max(*rounds, 1) {
			for k := range servers {
				i := (k + round) % len(servers)
				// A round that loses deliveries (Centrifugo, on the
				// loaded machine, now and then drops a subscriber that
				// falls behind) is reported and run again, twice at most.
				r, err := run(servers[i])
				for try := 1; err != nil && try < 3; try++ {
					fmt.Printf("realtime server=%s failed: %v (running the round again)\n", servers[i].name(), err)
					r, err = run(servers[i])
				}
				if err != nil {
					fatalf("%s: %v", servers[i].name(), err)
				}
				fmt.Println(r.line())
				byServer[i] = append(byServer[i], r)
			}
		}
		var row []result
		for _, rs := range byServer {
			row = append(row, median(rs))
		}
		rows = append(rows, row)
		all = append(all, byServer)
	}
	if len(servers) == 2 {
		summary(rows)
		roundRatios(all)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "realtimebench: "+format+"\n", args...)
	os.Exit(1)
}

type config struct {
	messages, window, idle, procs, publishers int
}

// result is one scenario's numbers on one server.
type result struct {
	server, scenario string
	deliveries       int64
	perSec           float64
	p50, p99         time.Duration
	cpuPer1k         time.Duration // server CPU per 1 000 deliveries
	writesPer1k      float64       // server write system calls per 1 000 deliveries
	conns            int
	rssPerConn       float64 // bytes
}

func (r result) line() string {
	if r.conns > 0 {
		return fmt.Sprintf("realtime server=%s scenario=%q conns=%d rss_per_conn_bytes=%.0f", r.server, r.scenario, r.conns, r.rssPerConn)
	}
	return fmt.Sprintf("realtime server=%s scenario=%q deliveries=%d deliveries_per_sec=%.0f p50_ms=%.2f p99_ms=%.2f cpu_ms_per_1000=%.3f writes_per_1000=%.0f",
		r.server, r.scenario, r.deliveries, r.perSec, ms(r.p50), ms(r.p99), ms(r.cpuPer1k), r.writesPer1k)
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// median returns each figure's median over rounds of one scenario.
func median(rs []result) result {
	m := rs[0]
	mid := func(get func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = get(r)
		}
		return harness.Median(v)
	}
	m.perSec = mid(func(r result) float64 { return r.perSec })
	m.p50 = time.Duration(mid(func(r result) float64 { return float64(r.p50) }))
	m.p99 = time.Duration(mid(func(r result) float64 { return float64(r.p99) }))
	m.cpuPer1k = time.Duration(mid(func(r result) float64 { return float64(r.cpuPer1k) }))
	m.writesPer1k = mid(func(r result) float64 { return r.writesPer1k })
	m.rssPerConn = mid(func(r result) float64 { return r.rssPerConn })
	return m
}

// summary prints recached's numbers beside Centrifugo's with the ratios.
func summary(rows [][]result) {
	fmt.Println()
	fmt.Printf("%-22s %14s %14s %7s   %9s %9s   %9s %9s   %12s %12s %7s\n", "scenario", "recached/s", "centrifugo/s", "ratio",
		"p50 ms", "(centr.)", "p99 ms", "(centr.)", "cpu/1k ms", "(centr.)", "ratio")
	for _, row := range rows {
		a, b := row[0], row[1]
		if a.conns > 0 {
			fmt.Printf("%-22s RSS per connection: recached %.1f KiB, centrifugo %.1f KiB, ratio %.2fx\n", a.scenario, a.rssPerConn/1024, b.rssPerConn/1024, a.rssPerConn/b.rssPerConn)
			continue
		}
		fmt.Printf("%-22s %14.0f %14.0f %6.2fx   %9.2f %9.2f   %9.2f %9.2f   %12.3f %12.3f %6.2fx\n", a.scenario, a.perSec, b.perSec, a.perSec/b.perSec,
			ms(a.p50), ms(b.p50), ms(a.p99), ms(b.p99), ms(a.cpuPer1k), ms(b.cpuPer1k), float64(a.cpuPer1k)/float64(b.cpuPer1k))
	}
}

// roundRatios prints, for each scenario, the ratio of recached's figure to
// Centrifugo's in each round (the two servers ran one after the other in
// it, under the same load): the median and the range.
func roundRatios(all [][][]result) {
	fmt.Println()
	for _, byServer := range all {
		a, b := byServer[0], byServer[1]
		spread := func(get func(result) float64) string {
			var v []float64
			for k := range min(len(a), len(b)) {
				v = append(v, get(a[k])/get(b[k]))
			}
			return harness.Spread(v)
		}
		if a[0].conns > 0 {
			fmt.Printf("%-22s per-round ratio: RSS per connection %s\n", a[0].scenario, spread(func(r result) float64 { return r.rssPerConn }))
			continue
		}
		fmt.Printf("%-22s per-round ratios: deliveries/s %s, CPU per delivery %s, p50 %s, p99 %s\n", a[0].scenario,
			spread(func(r result) float64 { return r.perSec }), spread(func(r result) float64 { return float64(r.cpuPer1k) }),
			spread(func(r result) float64 { return float64(r.p50) }), spread(func(r result) float64 { return float64(r.p99) }))
	}
}

// target is one server under test.
type target interface {
	name() string
	// start starts a fresh server process in dir.
	start(dir string, procs int) (*process, error)
	// subscribe opens a connection subscribed to channel.
	subscribe(p *process, channel string) (*websocket.Conn, error)
	// publisher returns a function that publishes each payload to channel,
	// payload i on stream i%streams: order is kept within a stream only.
	publisher(p *process, channel string, conns int) (publish func([][]byte) error, streams int, closeFn func(), err error)
}

// process is a running server.
type process struct {
	cmd    *exec.Cmd
	port   int // WebSocket (and, for Centrifugo, HTTP API) port
	log    *bytes.Buffer
	exited chan struct{}
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// launch starts cmd and waits until port accepts connections.
func launch(cmd *exec.Cmd, port int) (*process, error) {
	p := &process{cmd: cmd, port: port, log: &bytes.Buffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return nil, fmt.Errorf("%s exited at start: %s", cmd.Path, p.log.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
			c.Close()
			return p, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.stop()
	return nil, fmt.Errorf("%s did not listen on %d", cmd.Path, port)
}

func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

var dialer = &websocket.Dialer{HandshakeTimeout: 30 * time.Second, ReadBufferSize: 4096, WriteBufferSize: 1024}

// connectAll opens n subscribed connections, 64 at a time.
func connectAll(t target, p *process, n int, channel func(i int) string) ([]*websocket.Conn, error) {
	conns := make([]*websocket.Conn, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				c, err := t.subscribe(p, channel(i))
				if err != nil {
					mu.Lock()
					first = cmpErr(first, fmt.Errorf("connection %d: %w", i, err))
					mu.Unlock()
					return
				}
				conns[i] = c
			}
		}()
	}
	wg.Wait()
	if first != nil {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		return nil, first
	}
	return conns, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// fanout runs one fan-out scenario on a fresh server.
func (cfg config) fanout(t target, subs int) (result, error) {
	dir, err := os.MkdirTemp("", "realtimebench")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	p, err := t.start(dir, cfg.procs)
	if err != nil {
		return result{}, err
	}
	defer p.stop()
	messages := cfg.messages
	if messages <= 0 {
		messages = max(100, 1000000/subs)
	}
	conns, err := connectAll(t, p, subs, func(int) string { return "bench" })
	if err != nil {
		return result{}, err
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	publish, streams, closePub, err := t.publisher(p, "bench", cfg.publishers)
	if err != nil {
		return result{}, err
	}
	defer closePub()

	start := time.Now()
	var delivered, last atomic.Int64
	readers := make([]*reader, subs)
	var wg sync.WaitGroup
	for i, c := range conns {
		r := &reader{c: c, last: slices.Repeat([]int{-1}, streams), lat: make([]int64, 0, messages)}
		readers[i] = r
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.run(start, &delivered, &last)
		}()
	}

	total := int64(subs) * int64(messages)
	cpu0, w0, t0 := procstat.CPUTicks(p.pid()), procstat.WriteCalls(p.pid()), time.Now()
	sent := 0
	for sent < messages {
		done := int(delivered.Load() / int64(subs))
		k := min(messages, done+cfg.window) - sent
		if k <= 0 {
			time.Sleep(50 * time.Microsecond)
			continue
		}
		batch := make([][]byte, k)
		now := time.Since(start).Nanoseconds()
		for j := range batch {
			batch[j] = fmt.Appendf(nil, `{"t":%d,"i":%d}`, now, sent+j)
		}
		if err := publish(batch); err != nil {
			return result{}, fmt.Errorf("publish: %w", err)
		}
		sent += k
	}
	deadline := time.Now().Add(60 * time.Second)
	for delivered.Load() < total && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cpu1, w1 := procstat.CPUTicks(p.pid()), procstat.WriteCalls(p.pid())
	got := delivered.Load()
	elapsed := time.Duration(last.Load()) - t0.Sub(start)
	for _, c := range conns {
		c.Close()
	}
	wg.Wait()
	for i, r := range readers {
		if r.err != nil {
			return result{}, fmt.Errorf("subscriber %d: %w", i, r.err)
		}
	}
	if got < total {
		return result{}, fmt.Errorf("%d of %d deliveries arrived (server log: %.500s)", got, total, p.log.String())
	}
	var lats []int64
	for _, r := range readers {
		lats = append(lats, r.lat...)
	}
	slices.Sort(lats)
	pct := func(q float64) time.Duration { return time.Duration(lats[min(len(lats)-1, int(q*float64(len(lats))))]) }
	return result{
		server: t.name(), scenario: fmt.Sprintf("fan-out %d subs", subs), deliveries: got,
		perSec: float64(got) / elapsed.Seconds(), p50: pct(0.50), p99: pct(0.99),
		cpuPer1k:    time.Duration(procstat.NsPer(cpu1-cpu0, int(got)) * 1000),
		writesPer1k: float64(w1-w0) * 1000 / float64(got),
	}, nil
}

// reader is one fan-out subscriber.
type reader struct {
	c    *websocket.Conn
	last []int   // by publisher stream: the last message index received
	lat  []int64 // publish-to-receipt, ns
	err  error
}

// run reads deliveries until the connection closes, checking that the
// messages of each publisher stream arrive in order, each once (fanout then
// checks the count), and noting their latency. A frame may hold several JSON
// texts separated by newlines (Centrifugo batches pushes that way); an
// empty object is Centrifugo's ping, answered with one.
func (r *reader) run(start time.Time, delivered, last *atomic.Int64) {
	buf := make([]byte, 0, 512)
	for {
		_, rd, err := r.c.NextReader()
		if err != nil {
			return // closed by fanout
		}
		buf, err = readAll(rd, buf[:0])
		if err != nil {
			return
		}
		at := time.Since(start).Nanoseconds()
		for line := range bytes.SplitSeq(buf, []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			if string(line) == "{}" {
				_ = r.c.WriteMessage(websocket.TextMessage, []byte("{}"))
				continue
			}
			t, i, ok := stamp(line)
			if !ok {
				continue // an Ack or another frame without a message
			}
			if st := i % len(r.last); i <= r.last[st] {
				r.err = fmt.Errorf("message %d arrived after %d of the same publisher", i, r.last[st])
				return
			} else {
				r.last[st] = i
			}
			r.lat = append(r.lat, at-t)
			delivered.Add(1)
			for {
				l := last.Load()
				if at <= l || last.CompareAndSwap(l, at) {
					break
				}
			}
		}
	}
}

// stamp finds the benchmark's {"t":…,"i":…} in a delivery frame.
func stamp(b []byte) (t int64, i int, ok bool) {
	k := bytes.Index(b, []byte(`{"t":`))
	if k < 0 {
		return 0, 0, false
	}
	b = b[k+5:]
	end := bytes.IndexByte(b, ',')
	if end < 0 {
		return 0, 0, false
	}
	t, err := strconv.ParseInt(string(b[:end]), 10, 64)
	if err != nil || !bytes.HasPrefix(b[end:], []byte(`,"i":`)) {
		return 0, 0, false
	}
	b = b[end+5:]
	end = bytes.IndexByte(b, '}')
	if end < 0 {
		return 0, 0, false
	}
	n, err := strconv.Atoi(string(b[:end]))
	return t, n, err == nil
}

func readAll(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, cap(buf))
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// idleConns measures the server's resident memory per subscribed, idle
// connection.
func (cfg config) idleConns(t target, n int) (result, error) {
	dir, err := os.MkdirTemp("", "realtimebench")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	p, err := t.start(dir, cfg.procs)
	if err != nil {
		return result{}, err
	}
	defer p.stop()
	// Warm the server up with a few connections so that the baseline
	// includes what any connected server allocates once.
	warm, err := connectAll(t, p, 10, func(i int) string { return "warm-" + strconv.Itoa(i) })
	if err != nil {
		return result{}, err
	}
	defer closeAll(warm)
	time.Sleep(500 * time.Millisecond)
	before := procstat.RSS(p.pid())
	conns, err := connectAll(t, p, n, func(i int) string { return "idle-" + strconv.Itoa(i) })
	if err != nil {
		return result{}, err
	}
	defer closeAll(conns)
	time.Sleep(2 * time.Second) // let the server settle: RSS has no completion to wait for
	after := procstat.RSS(p.pid())
	return result{server: t.name(), scenario: fmt.Sprintf("idle %d conns", n), conns: n, rssPerConn: float64(after-before) / float64(n)}, nil
}

func closeAll(cs []*websocket.Conn) {
	for _, c := range cs {
		c.Close()
	}
}

// recachedTarget is recached's realtime port with one all-powerful API key.
type recachedTarget struct{ bin string }

const recachedKey = "bench-secret.bench"

func (*recachedTarget) name() string { return "recached" }

func (r *recachedTarget) start(dir string, procs int) (*process, error) {
	keys := filepath.Join(dir, "keys.json")
	if err := os.WriteFile(keys, []byte(`[{"id":"bench","secret":"bench-secret","capability":{"*":["subscribe","publish","presence"]}}]`), 0o600); err != nil {
		return nil, err
	}
	port := mustFreePort()
	cmd := exec.Command(r.bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(mustFreePort()), "--ws-port", "0",
		"--realtime-port", strconv.Itoa(port), "--amaquet-port", "0", "--api-keys", keys, "--appendonly", "no", "--save", "", "--dir", dir,
		"--maxclients", "1000000", "--realtime-max-conns-per-key", "1000000", "--procs", strconv.Itoa(procs))
	return launch(cmd, port)
}

func (r *recachedTarget) dial(p *process) (*websocket.Conn, error) {
	c, hr, err := dialer.Dial(fmt.Sprintf("ws://127.0.0.1:%d/?key=%s", p.port, recachedKey), nil)
	if hr != nil {
		hr.Body.Close()
	}
	if err != nil {
		return nil, err
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, b, err := c.ReadMessage()
	if err != nil || !bytes.Contains(b, []byte(`"op":12`)) {
		c.Close()
		return nil, fmt.Errorf("want Connected, got %s %v", b, err)
	}
	return c, nil
}

func (r *recachedTarget) subscribe(p *process, channel string) (*websocket.Conn, error) {
	c, err := r.dial(p)
	if err != nil {
		return nil, err
	}
	if err := c.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `{"op":13,"id":"s","channel":%q}`, channel)); err != nil {
		c.Close()
		return nil, err
	}
	for {
		_, b, err := c.ReadMessage()
		if err != nil {
			c.Close()
			return nil, err
		}
		if bytes.Contains(b, []byte(`"op":9`)) {
			break
		}
		if bytes.Contains(b, []byte(`"op":10`)) {
			c.Close()
			return nil, fmt.Errorf("subscribe: %s", b)
		}
	}
	_ = c.SetReadDeadline(time.Time{})
	return c, nil
}

// publisher sends Publish frames with ids round-robin over conns
// connections (one is limited to 1 000 publishes a second) and fails on
// the first Nack.
func (r *recachedTarget) publisher(p *process, channel string, conns int) (func([][]byte) error, int, func(), error) {
	var cs []*websocket.Conn
	var nack atomic.Value
	var wg sync.WaitGroup
	for range max(conns, 1) {
		c, err := r.dial(p)
		if err != nil {
			closeAll(cs)
			return nil, 0, nil, err
		}
		cs = append(cs, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				_, b, err := c.ReadMessage()
				if err != nil {
					return
				}
				if bytes.Contains(b, []byte(`"op":10`)) {
					nack.CompareAndSwap(nil, string(b))
				}
			}
		}()
	}
	var n int
	var out []byte
	publish := func(payloads [][]byte) error {
		if v := nack.Load(); v != nil {
			return fmt.Errorf("nack: %s", v)
		}
		for _, pl := range payloads {
			c := cs[n%len(cs)] // payload n on connection n%len(cs), as its stream says
			n++
			out = fmt.Appendf(out[:0], `{"op":3,"id":"%d","channel":%q,"name":"m","data":%s}`, n, channel, pl)
			if err := c.WriteMessage(websocket.TextMessage, out); err != nil {
				return err
			}
		}
		return nil
	}
	return publish, len(cs), func() { closeAll(cs); wg.Wait() }, nil
}

// centrifugoTarget is Centrifugo with an HMAC connection-token secret and
// an HTTP API key, every channel open to subscribers.
type centrifugoTarget struct{ bin string }

const (
	cfSecret = "bench-hmac-secret"
	cfAPIKey = "bench-api-key"
)

func (*centrifugoTarget) name() string { return "centrifugo" }

func (c *centrifugoTarget) start(dir string, procs int) (*process, error) {
	port := mustFreePort()
	conf := map[string]any{
		"client": map[string]any{
			"token":           map[string]any{"hmac_secret_key": cfSecret},
			"allowed_origins": []string{"*"},
			// The slow-consumer bound recached has (8 MB queued per
			// connection), instead of Centrifugo's default 1 MB.
			"queue_max_size": 8 << 20,
		},
		"http_api":    map[string]any{"key": cfAPIKey},
		"channel":     map[string]any{"without_namespace": map[string]any{"allow_subscribe_for_client": true}},
		"log":         map[string]any{"level": "error"},
		"http_server": map[string]any{"address": "127.0.0.1", "port": port},
		"usage_stats": map[string]any{"disabled": true},
	}
	b, _ := json.Marshal(conf)
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(c.bin, "-c", path)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(procs))
	return launch(cmd, port)
}

// token is a Centrifugo connection JWT (HS256, sub only).
func cfToken() string {
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	body := enc.EncodeToString([]byte(`{"sub":"bench"}`))
	m := hmac.New(sha256.New, []byte(cfSecret))
	m.Write([]byte(head + "." + body))
	return head + "." + body + "." + enc.EncodeToString(m.Sum(nil))
}

func (c *centrifugoTarget) subscribe(p *process, channel string) (*websocket.Conn, error) {
	ws, hr, err := dialer.Dial(fmt.Sprintf("ws://127.0.0.1:%d/connection/websocket", p.port), nil)
	if hr != nil {
		hr.Body.Close()
	}
	if err != nil {
		return nil, err
	}
	cmds := fmt.Appendf(nil, "{\"id\":1,\"connect\":{\"token\":%q}}\n{\"id\":2,\"subscribe\":{\"channel\":%q}}", cfToken(), channel)
	if err := ws.WriteMessage(websocket.TextMessage, cmds); err != nil {
		ws.Close()
		return nil, err
	}
	_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		_, b, err := ws.ReadMessage()
		if err != nil {
			ws.Close()
			return nil, err
		}
		if bytes.Contains(b, []byte(`"error"`)) {
			ws.Close()
			return nil, fmt.Errorf("centrifugo: %s", b)
		}
		if bytes.Contains(b, []byte(`"id":2`)) {
			break
		}
	}
	_ = ws.SetReadDeadline(time.Time{})
	return ws, nil
}

// publisher posts each batch to /api/batch.
func (c *centrifugoTarget) publisher(p *process, channel string, _ int) (func([][]byte) error, int, func(), error) {
	client := &http.Client{Timeout: 30 * time.Second}
	url := fmt.Sprintf("http://127.0.0.1:%d/api/batch", p.port)
	var body bytes.Buffer
	publish := func(payloads [][]byte) error {
		body.Reset()
		body.WriteString(`{"commands":[`)
		for i, pl := range payloads {
			if i > 0 {
				body.WriteByte(',')
			}
			fmt.Fprintf(&body, `{"publish":{"channel":%q,"data":%s}}`, channel, pl)
		}
		body.WriteString(`]}`)
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body.Bytes()))
		if err != nil {
			return err
		}
		req.Header.Set("X-API-Key", cfAPIKey)
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		rb, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || bytes.Contains(rb, []byte(`"error"`)) {
			return fmt.Errorf("centrifugo /api/batch: %s %s", res.Status, rb)
		}
		return nil
	}
	return publish, 1, func() { client.CloseIdleConnections() }, nil
}

// mustFreePort is harness.FreePort for a benchmark that cannot go on
// without one.
func mustFreePort() int {
	p, err := harness.FreePort()
	if err != nil {
		fatalf("%v", err)
	}
	return p
}
