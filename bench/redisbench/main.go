// Command redisbench runs redis-benchmark against recached and redis-server
// side by side, in rounds with the order rotated, and prints for every row
// the requests per second of both, their ratio, and each server's CPU time
// per request (utime+stime of the server process, read from /proc before and
// after the run, divided by the requests) and redis-benchmark's median
// latency. On a small machine the benchmark client saturates a core first,
// so CPU per request is the figure of merit.
//
// It also compares the resident memory growth of fresh servers loaded with
// 1 000 000 string keys; -memtypes adds the rows of hashes, sets, sorted
// sets and lists of ten elements (memtypes.go). With -datatypes it adds
// rows for streams (XADD, XREADGROUP+XACK), GEOADD and GEOSEARCH, and the
// memory row of a stream of 1 000 000 entries of three fields.
package main

import (
	"bufio"
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/recached/recached/bench/harness"
	"github.com/recached/recached/bench/procstat"
)

// row is one benchmark configuration.
type row struct {
	test     string
	clients  int
	pipeline int
	threads  int
	n        int
	extra    []string
	// setup is an inline command sent to each server before the row
	// runs (not measured), such as the SCRIPT LOAD of an EVALSHA row.
	setup []string
	// drive, when set, replaces redis-benchmark: it prepares the server
	// (not measured) and returns the load to measure, which reports the
	// requests it sent.
	drive func(addr string, n, clients, pipeline int) (func() (int, error), error)
}

func (r row) name() string {
	s := fmt.Sprintf("%s c=%d P=%d", r.test, r.clients, r.pipeline)
	if r.threads > 1 {
		s += fmt.Sprintf(" threads=%d", r.threads)
	}
	return s
}

// result is one measured run.
type result struct {
	rps     float64
	cpuNsPR float64 // server CPU nanoseconds per request
	p50     float64 // redis-benchmark's median latency in ms (0: not measured)
}

func main() {
	recachedBin := flag.String("recached", "bin/recached", "recached binary")
	rounds := flag.Int("rounds", 3, "rounds, order rotated each round")
	quick := flag.Bool("quick", false, "fewer requests (smoke run)")
	tests := flag.String("tests", "ping_mbulk,set,get,incr,mset", "redis-benchmark tests for the c=50 rows (empty: none, and no c=500 or threads rows)")
	extraTests := flag.String("more", "", "further tests at pipeline 16 (e.g. lpush,rpop,sadd,hset,zadd,lrange_100)")
	memKeys := flag.Int("memkeys", 1000000, "keys for the strings memory row (0 skips)")
	memTypes := flag.Bool("memtypes", false, "memory rows for 100 000 hashes, sets, sorted sets and lists of 10 elements")
	memOnly := flag.String("memonly", "", "run only these comma-separated memory rows (strings,hash,set,zset,list,stream,channels)")
	memChannels := flag.Int("memchannels", 0, "channels for a memory row of one PUBLISH to each, which recached keeps in its channel history and redis-server does not (0 skips)")
	dataTypes := flag.Bool("datatypes", false, "rows for XADD, XREADGROUP+XACK, GEOADD and GEOSEARCH at pipeline 16, and the stream memory row")
	streamEntries := flag.Int("streamentries", 1000000, "entries for the stream memory row of -datatypes (0 skips)")
	loops := flag.Int("loops", 1, "recached event loops")
	ioThreads := flag.Int("iothreads", 1, "I/O threads of both servers: redis-server's io-threads, recached's event loops (overrides -loops)")
	aof := flag.String("aof", "", `append-only log policy for both servers ("everysec", "always"); empty: no log`)
	eval := flag.Bool("eval", false, "rows for EVAL and EVALSHA of a one-INCR script at pipeline 16")
	evict := flag.Bool("evict", false, "a row for SET at pipeline 16 with maxmemory reached and allkeys-lru evicting")
	scrape := flag.Bool("metrics", false, "compare recached with a second recached whose GET /metrics is scraped every second, in place of redis-server")
	only := flag.String("only", "", "run only the rows whose name contains one of these comma-separated texts (e.g. xadd,xreadgroup)")
	var cmds cmdFlags
	flag.Var(&cmds, "cmd", `custom command row at pipeline 16: "label|COMMAND args…" (redis-benchmark's __rand_int__ placeholders take -r 1000000; repeatable)`)
	var exts extFlags
	flag.Var(&exts, "ext", `external load program run against both servers: "label|unit|program args…"; it gets -addr and prints unit=N and seconds=S (repeatable)`)
	flag.Parse()
	log.SetFlags(0)

	scale := 1
	if *quick {
		scale = 10
	}
	var rows []row
	for _, t := range strings.FieldsFunc(*tests, func(r rune) bool { return r == ',' }) {
		rows = append(rows, row{test: t, clients: 50, pipeline: 1, threads: 1, n: 200000 / scale})
		rows = append(rows, row{test: t, clients: 50, pipeline: 16, threads: 1, n: 1000000 / scale})
	}
	if *extraTests != "" {
		for _, t := range strings.Split(*extraTests, ",") {
			n := 1000000 / scale
			if strings.HasPrefix(t, "lrange") {
				n = 200000 / scale
			}
			rows = append(rows, row{test: t, clients: 50, pipeline: 16, threads: 1, n: n})
		}
	}
	if *dataTypes {
		rows = append(rows, dataTypeRows(scale)...)
	}
	if *evict {
		rows = append(rows, evictRows(scale)...)
	}
	if *eval {
		rows = append(rows, evalRows(scale)...)
	}
	for _, c := range cmds {
		rows = append(rows, row{test: c.label, clients: 50, pipeline: 16, threads: 1, n: 1000000 / scale, extra: append([]string{"-r", "1000000"}, c.args...)})
	}
	for _, t := range []string{"set", "get"} {
		if *tests == "" {
			break
		}
		rows = append(rows, row{test: t, clients: 500, pipeline: 1, threads: 1, n: 200000 / scale})
		// With two client threads a run of a million requests at
		// pipeline 16 lasts about a second and swings by a third from
		// run to run: four million, as issue 20 measures it.
		rows = append(rows, row{test: t, clients: 50, pipeline: 1, threads: 2, n: 200000 / scale})
		rows = append(rows, row{test: t, clients: 50, pipeline: 16, threads: 2, n: 4000000 / scale})
	}
	if *only != "" {
		var kept []row
		for _, rw := range rows {
			for _, o := range strings.Split(*only, ",") {
				if strings.Contains(rw.name(), o) {
					kept = append(kept, rw)
					break
				}
			}
		}
		rows = kept
	}

	dir, err := os.MkdirTemp("", "redisbench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	persist := []string{"--appendonly", "no"}
	if *aof != "" {
		persist = []string{"--appendonly", "yes", "--appendfsync", *aof}
	}
	redisArgs := []string{"--save", ""}
	if *ioThreads > 1 {
		*loops = *ioThreads
		redisArgs = append(redisArgs, "--io-threads", strconv.Itoa(*ioThreads))
	}
	servers := []*server{
		startServer("recached", *recachedBin, dir, append([]string{"--ws-port", "0", "--save", "", "--loops", strconv.Itoa(*loops)}, persist...)...),
		startServer("redis", "redis-server", dir, append(redisArgs, persist...)...),
	}
	if *scrape {
		servers[1].stop()
		ws := mustFreePort()
		servers[1] = startServer("scraped", *recachedBin, dir, append([]string{"--ws-port", strconv.Itoa(ws), "--save", "", "--loops", strconv.Itoa(*loops)}, persist...)...)
		servers[1].wsPort = strconv.Itoa(ws)
	}
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	if *scrape { // stopped before the servers are
		defer scrapeEverySecond("http://" + net.JoinHostPort("127.0.0.1", servers[1].wsPort) + "/metrics")()
	}

	res := map[string]map[string][]result{}
	if len(exts) > 0 {
		defer runExternal(servers, exts, *rounds)
	}
	for r := 0; r < *rounds; r++ {
		order := []*server{servers[0], servers[1]}
		if r%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, rw := range rows {
			for _, s := range order {
				out := s.run(rw)
				if res[rw.name()] == nil {
					res[rw.name()] = map[string][]result{}
				}
				res[rw.name()][s.name] = append(res[rw.name()][s.name], out)
			}
		}
	}

	other := servers[1].name
	fmt.Printf("\n%-34s %12s %12s %7s %12s %12s %7s %13s %8s %8s %7s\n", "row (median of rounds)", "recached/s", other+"/s", "ratio", "rc cpu/req", other+" cpu/req", "cpu x", "cpu x range", "rc p50", other+" p50", "p50 x")
	for _, rw := range rows {
		a := median(res[rw.name()]["recached"])
		b := median(res[rw.name()][other])
		lo, hi := ratioRange(res[rw.name()]["recached"], res[rw.name()][other])
		fmt.Printf("%-34s %12.0f %12.0f %6.2fx %10.0fns %10.0fns %6.2fx %5.2f-%5.2fx", rw.name(), a.rps, b.rps, a.rps/b.rps, a.cpuNsPR, b.cpuNsPR, a.cpuNsPR/b.cpuNsPR, lo, hi)
		if a.p50 > 0 && b.p50 > 0 {
			fmt.Printf(" %6.3fms %6.3fms %6.2fx", a.p50, b.p50, a.p50/b.p50)
		}
		fmt.Println()
	}

	if !*dataTypes {
		*streamEntries = 0
	}
	memoryTable(*recachedBin, dir, memRows(*memKeys, *memTypes, *streamEntries, *memChannels, *memOnly), *rounds)
}

// scrapeEverySecond fetches url every second, as a Prometheus server
// would, until the returned function is called; a failed scrape is fatal,
// so that a run never reports a scrape cost it did not pay.
func scrapeEverySecond(url string) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	c := http.Client{Timeout: 10 * time.Second}
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for n := 0; ; n++ {
			select {
			case <-done:
				fmt.Fprintf(os.Stderr, "scraped %s %d times\n", url, n)
				return
			case <-t.C:
			}
			resp, err := c.Get(url)
			if err != nil {
				log.Fatalf("scraping %s: %v", url, err)
			}
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				log.Fatalf("scraping %s: %s %v", url, resp.Status, err)
			}
		}
	}()
	return func() { close(done); <-finished }
}

// ratioRange returns the smallest and largest ratio of CPU per request
// between a and b over the rounds, each round's pair run back to back.
func ratioRange(a, b []result) (lo, hi float64) {
	for i := 0; i < len(a) && i < len(b); i++ {
		if b[i].cpuNsPR == 0 {
			continue
		}
		r := a[i].cpuNsPR / b[i].cpuNsPR
		if lo == 0 || r < lo {
			lo = r
		}
		hi = max(hi, r)
	}
	return lo, hi
}

func median(rs []result) result {
	if len(rs) == 0 {
		return result{}
	}
	a := append([]result(nil), rs...)
	sort.Slice(a, func(i, j int) bool { return a[i].rps < a[j].rps })
	b := append([]result(nil), rs...)
	sort.Slice(b, func(i, j int) bool { return b[i].cpuNsPR < b[j].cpuNsPR })
	c := append([]result(nil), rs...)
	sort.Slice(c, func(i, j int) bool { return c[i].p50 < c[j].p50 })
	return result{rps: a[len(a)/2].rps, cpuNsPR: b[len(b)/2].cpuNsPR, p50: c[len(c)/2].p50}
}

// server is one server process under test.
type server struct {
	name   string
	addr   string
	cmd    *exec.Cmd
	wsPort string // -metrics: the scraped server's WebSocket port
}

func startServer(name, bin, dir string, args ...string) *server {
	port := mustFreePort()
	wd := filepath.Join(dir, name)
	if err := os.MkdirAll(wd, 0o755); err != nil {
		log.Fatal(err)
	}
	if strings.Contains(bin, "/") {
		if abs, err := filepath.Abs(bin); err == nil {
			bin = abs
		}
	}
	all := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", wd}, args...)
	cmd := exec.Command(bin, all...)
	cmd.Dir = wd
	if err := cmd.Start(); err != nil {
		log.Fatalf("start %s: %v", name, err)
	}
	s := &server{name: name, addr: fmt.Sprintf("127.0.0.1:%d", port), cmd: cmd}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if s.do("PING") == "+PONG" {
			return s
		}
		time.Sleep(50 * time.Millisecond)
	}
	log.Fatalf("%s did not start", name)
	return nil
}

// stop ends the server with SIGTERM, so that recached flushes a CPU
// profile (RECACHED_CPUPROFILE), and kills it if it has not exited within
// ten seconds.
func (s *server) stop() { harness.Stop(s.cmd) }

// do sends one inline command and returns the first reply line.
func (s *server) do(args ...string) string {
	c, err := net.DialTimeout("tcp", s.addr, time.Second)
	if err != nil {
		return ""
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(c, "%s\r\n", strings.Join(args, " "))
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line)
}

// cpu returns the process's utime+stime in clock ticks.
func (s *server) cpu() int64 { return procstat.CPUTicks(s.cmd.Process.Pid) }

// rss returns the resident set size in bytes.
func (s *server) rss() int64 { return procstat.RSS(s.cmd.Process.Pid) }

const ticksPerSecond = procstat.TicksPerSecond

func (s *server) run(r row) result {
	if r.drive != nil {
		return s.runDriver(r)
	}
	if r.setup != nil {
		if got := s.do(r.setup...); strings.HasPrefix(got, "-") || got == "" {
			log.Fatalf("%s: %v against %s: %q", r.name(), r.setup, s.name, got)
		}
	}
	host, port, _ := net.SplitHostPort(s.addr)
	args := []string{"-h", host, "-p", port, "-c", strconv.Itoa(r.clients), "-P", strconv.Itoa(r.pipeline),
		"-n", strconv.Itoa(r.n), "-t", r.test, "--csv"}
	if r.threads > 1 {
		args = append(args, "--threads", strconv.Itoa(r.threads))
	}
	args = append(args, r.extra...)
	before, csBefore := s.cpu(), procstat.ContextSwitches(s.cmd.Process.Pid)
	out, err := exec.Command("redis-benchmark", args...).CombinedOutput()
	after, csAfter := s.cpu(), procstat.ContextSwitches(s.cmd.Process.Pid)
	if err != nil {
		log.Fatalf("redis-benchmark %v against %s: %v\n%s", args, s.name, err, out)
	}
	if strings.Contains(string(out), "ERR") {
		log.Printf("WARNING: %s %s printed an error:\n%s", s.name, r.name(), out)
	}
	rps, p50 := 0.0, 0.0
	for _, l := range strings.Split(string(out), "\n") {
		// A CSV line: the test's name (quoted, and for a command row the
		// command itself, commas included), the rate, then the average,
		// smallest and median latencies (and more).
		f, err := csv.NewReader(strings.NewReader(l)).Read()
		if err == nil && len(f) >= 2 && f[0] != "test" {
			if v, err := strconv.ParseFloat(f[1], 64); err == nil {
				rps = v
			}
			if len(f) >= 5 {
				p50, _ = strconv.ParseFloat(f[4], 64)
			}
		}
	}
	cpuNs := float64(after-before) * 1e9 / ticksPerSecond / float64(r.n)
	// Context switches per request tell a round in which the server woke
	// threads of its own (a runtime handing its processor around while
	// the event loop waits) from one slowed by the machine's load.
	cs := float64(csAfter-csBefore) / float64(r.n)
	fmt.Fprintf(os.Stderr, "%-9s %-34s %10.0f req/s %8.0f ns cpu/req p50 %.3f ms %.3f cs/req\n", s.name, r.name(), rps, cpuNs, p50, cs)
	return result{rps: rps, cpuNsPR: cpuNs, p50: p50}
}

// runDriver measures a row with a drive function: requests per second of
// wall time and server CPU per request.
func (s *server) runDriver(r row) result {
	load, err := r.drive(s.addr, r.n, r.clients, r.pipeline)
	if err != nil {
		log.Fatalf("%s against %s: %v", r.name(), s.name, err)
	}
	before, start := s.cpu(), time.Now()
	reqs, err := load()
	elapsed, after := time.Since(start), s.cpu()
	if err != nil {
		log.Fatalf("%s against %s: %v", r.name(), s.name, err)
	}
	rps := float64(reqs) / elapsed.Seconds()
	cpuNs := float64(after-before) * 1e9 / ticksPerSecond / float64(reqs)
	fmt.Fprintf(os.Stderr, "%-9s %-34s %10.0f req/s %8.0f ns cpu/req\n", s.name, r.name(), rps, cpuNs)
	return result{rps: rps, cpuNsPR: cpuNs}
}

// ext is an external load program: its label, the key=value unit it counts
// (deliveries, pushes, …) and its command line.
type ext struct {
	label, unit string
	argv        []string
}

type extFlags []ext

// cmdRow is a -cmd row: a label and the command redis-benchmark repeats.
type cmdRow struct {
	label string
	args  []string
}

// cmdFlags collects the -cmd flags.
type cmdFlags []cmdRow

func (c *cmdFlags) String() string { return fmt.Sprint(len(*c)) }

func (c *cmdFlags) Set(v string) error {
	label, cmd, ok := strings.Cut(v, "|")
	if !ok || label == "" || strings.TrimSpace(cmd) == "" {
		return fmt.Errorf(`-cmd wants "label|COMMAND args…", got %q`, v)
	}
	*c = append(*c, cmdRow{label: label, args: strings.Fields(cmd)})
	return nil
}

func (e *extFlags) String() string { return fmt.Sprint(len(*e)) }

func (e *extFlags) Set(v string) error {
	f := strings.SplitN(v, "|", 3)
	if len(f) != 3 || strings.TrimSpace(f[2]) == "" {
		return fmt.Errorf("want label|unit|program args…")
	}
	*e = append(*e, ext{label: f[0], unit: f[1], argv: strings.Fields(f[2])})
	return nil
}

// runExternal runs each external program against both servers in rotated
// rounds and prints units per second and server CPU per unit side by side.
func runExternal(servers []*server, exts []ext, rounds int) {
	fmt.Printf("\n%-34s %12s %12s %7s %12s %12s %7s\n", "external (median of rounds)", "recached/s", "redis/s", "ratio", "rc cpu/unit", "redis cpu/unit", "cpu x")
	for _, x := range exts {
		got := map[string][]result{}
		for r := 0; r < rounds; r++ {
			order := []*server{servers[0], servers[1]}
			if r%2 == 1 {
				order[0], order[1] = order[1], order[0]
			}
			for _, s := range order {
				args := append(append([]string(nil), x.argv[1:]...), "-addr", s.addr)
				before := s.cpu()
				out, err := exec.Command(x.argv[0], args...).CombinedOutput()
				after := s.cpu()
				if err != nil {
					log.Printf("%s against %s: %v\n%s", x.label, s.name, err, out)
					continue
				}
				units, secs := kv(string(out), x.unit), kv(string(out), "seconds")
				if units <= 0 || secs <= 0 {
					log.Printf("%s against %s: no %s= or seconds= in output:\n%s", x.label, s.name, x.unit, out)
					continue
				}
				res := result{rps: units / secs, cpuNsPR: float64(after-before) * 1e9 / ticksPerSecond / units}
				fmt.Fprintf(os.Stderr, "%-9s %-34s %10.0f %s/s %8.0f ns cpu/%s\n", s.name, x.label, res.rps, x.unit, res.cpuNsPR, x.unit)
				got[s.name] = append(got[s.name], res)
			}
		}
		a, b := median(got["recached"]), median(got["redis"])
		fmt.Printf("%-34s %12.0f %12.0f %6.2fx %10.0fns %10.0fns %6.2fx\n", x.label, a.rps, b.rps, a.rps/b.rps, a.cpuNsPR, b.cpuNsPR, a.cpuNsPR/b.cpuNsPR)
	}
}

// kv finds the last "key=number" in out.
func kv(out, key string) float64 {
	v := 0.0
	for _, f := range strings.Fields(out) {
		if strings.HasPrefix(f, key+"=") {
			if x, err := strconv.ParseFloat(strings.TrimPrefix(f, key+"="), 64); err == nil {
				v = x
			}
		}
	}
	return v
}

// mustFreePort is harness.FreePort for a benchmark that cannot go on
// without one.
func mustFreePort() int {
	p, err := harness.FreePort()
	if err != nil {
		log.Fatal(err)
	}
	return p
}
