// Command rdb measures how fast recached starts on a Redis RDB file
// against redis-server loading the same file: redis-server fills a
// dataset (strings, and small hashes, lists, sets and sorted sets in their
// listpack and intset encodings), SAVEs it, and then each server is
// started on a fresh copy of that dump.rdb, rounds rotating the order.
// It reports the time from the process's start until every key is served
// (DBSIZE), the peak and final resident memory, and the ratio.
//
// Usage:
//
//	rdb -recached bin/recached -keys 1000000 -rounds 3
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/recached/recached/bench/harness"
	"github.com/recached/recached/bench/procstat"
	"github.com/recached/recached/resp"
)

func main() {
	bin := flag.String("recached", "bin/recached", "recached binary")
	keys := flag.Int("keys", 1000000, "number of keys")
	rounds := flag.Int("rounds", 3, "rounds (the order of the servers rotates)")
	reuse := flag.String("dump", "", "keep the dump at this path and use it when it exists (for profiling)")
	flag.Parse()
	log.SetFlags(0)
	work, err := os.MkdirTemp("", "rdbbench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(work)
	dump := *reuse
	if _, err := os.Stat(dump); dump == "" || err != nil {
		if dump, err = makeDump(work, *keys); err != nil {
			log.Fatalf("rdb: making the dump: %v", err)
		}
		if *reuse != "" {
			copyFile(dump, *reuse)
		}
	}
	st, _ := os.Stat(dump)
	fmt.Printf("dump.rdb of %d keys by redis-server: %.1f MB\n", *keys, float64(st.Size())/1e6)
	res := map[string][]result{}
	names := []string{"redis", "recached"}
	for r := 0; r < *rounds; r++ {
		for i := range names {
			name := names[(i+r)%len(names)]
			x, err := startOn(name, *bin, work, dump, *keys)
			if err != nil {
				log.Fatalf("rdb: %s: %v", name, err)
			}
			res[name] = append(res[name], x)
		}
	}
	med := func(name string) result {
		rs := slices.Clone(res[name])
		slices.SortFunc(rs, func(a, b result) int { return int(a.secs*1e6 - b.secs*1e6) })
		return rs[len(rs)/2]
	}
	for _, n := range names {
		m := med(n)
		fmt.Printf("%-9s start on dump.rdb until %d keys served %6.3f s, CPU %6.3f s (median of %d)   RSS loaded %6.1f MB, peak %6.1f MB\n", n, *keys, m.secs, m.cpu, *rounds, float64(m.final)/1e6, float64(m.peak)/1e6)
	}
	// Each round's ratios (the two servers ran back to back on the same
	// machine load), then their median and range.
	ratios := map[string][]float64{}
	for r := 0; r < *rounds; r++ {
		rd, rc := res["redis"][r], res["recached"][r]
		x := map[string]float64{"time": rc.secs / rd.secs, "CPU": rc.cpu / rd.cpu, "RSS loaded": float64(rc.final) / float64(rd.final), "peak": float64(rc.peak) / float64(rd.peak)}
		x["CPU with the save"] = rc.saved / rd.saved
		fmt.Printf("round %d: redis %.3f s %.3f s CPU %.1f MB; recached %.3f s %.3f s CPU (%.3f s once its background save is done) %.1f MB; time %.2fx CPU %.2fx (%.2fx) RSS %.2fx\n", r+1, rd.secs, rd.cpu, float64(rd.final)/1e6, rc.secs, rc.cpu, rc.saved, float64(rc.final)/1e6, x["time"], x["CPU"], x["CPU with the save"], x["RSS loaded"])
		for k, v := range x {
			ratios[k] = append(ratios[k], v)
		}
	}
	fmt.Printf("recached/redis-server, median [range] of %d rounds:", *rounds)
	for i, k := range []string{"time", "CPU", "CPU with the save", "RSS loaded", "peak"} {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Printf("%s %s %s", sep, k, harness.Spread(ratios[k]))
	}
	fmt.Println()
}

type result struct {
	secs        float64
	cpu         float64 // CPU seconds (user and system) the process used
	saved       float64 // the same once no background save runs
	peak, final int64   // resident memory: the most seen while loading, and once loaded
}

// server starts a server of the given kind on a directory.
func server(name, bin, dir string, port int) (*exec.Cmd, error) {
	var cmd *exec.Cmd
	p := strconv.Itoa(port)
	switch name {
	case "redis":
		cmd = exec.Command("redis-server", "--port", p, "--bind", "127.0.0.1", "--dir", dir, "--appendonly", "no", "--save", "")
	default:
		// The start saves recached's own snapshot of what it loaded
		// (before serving, so a crash cannot lose it): that is counted.
		cmd = exec.Command(bin, "--port", p, "--ws-port", "0", "--amaquet-port", "0", "--realtime-port", "0", "--dir", dir, "--appendonly", "no", "--save", "")
	}
	f, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = f, f
	return cmd, cmd.Start()
}

func stop(cmd *exec.Cmd) {
	cmd.Process.Kill()
	cmd.Wait()
}

// makeDump has redis-server build the dataset and save it.
func makeDump(work string, n int) (string, error) {
	dir := filepath.Join(work, "source")
	os.MkdirAll(dir, 0o755)
	port, err := harness.FreePort()
	if err != nil {
		return "", err
	}
	cmd, err := server("redis", "", dir, port)
	if err != nil {
		return "", err
	}
	defer stop(cmd)
	c, err := harness.DialWait(port, 10*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	w := bufio.NewWriterSize(c, 1<<16)
	r := bufio.NewReaderSize(c, 1<<16)
	var buf []byte
	pending := 0
	flush := func() error {
		if err := w.Flush(); err != nil {
			return err
		}
		for ; pending > 0; pending-- {
			l, err := r.ReadString('\n')
			if err != nil {
				return err
			}
			if strings.HasPrefix(l, "-") {
				return fmt.Errorf("fill: %s", l)
			}
		}
		return nil
	}
	b := func(s string) []byte { return []byte(s) }
	for i := 0; i < n; i++ {
		k := "key:" + strconv.Itoa(i)
		var args [][]byte
		switch i % 20 {
		case 0, 1:
			args = [][]byte{b("HSET"), b(k), b("name"), b("user" + strconv.Itoa(i)), b("age"), b(strconv.Itoa(i % 90)), b("city"), b("somewhere")}
		case 2, 3:
			args = [][]byte{b("RPUSH"), b(k), b("a"), b("b"), b(strconv.Itoa(i)), b("item-number-four")}
		case 4:
			args = [][]byte{b("SADD"), b(k), b("1"), b("2"), b(strconv.Itoa(i))}
		case 5:
			args = [][]byte{b("ZADD"), b(k), b("1"), b("one"), b("2.5"), b("two"), b(strconv.Itoa(i)), b("three")}
		case 6:
			args = [][]byte{b("SET"), b(k), b(strconv.Itoa(i))}
		default:
			args = [][]byte{b("SET"), b(k), b(fmt.Sprintf("value-%010d", i))}
		}
		buf = resp.AppendCommand(buf[:0], args...)
		w.Write(buf)
		if pending++; pending == 1000 {
			if err := flush(); err != nil {
				return "", err
			}
		}
	}
	if err := flush(); err != nil {
		return "", err
	}
	fmt.Fprintf(w, "SAVE\r\n")
	pending = 1
	if err := flush(); err != nil {
		return "", err
	}
	return filepath.Join(dir, "dump.rdb"), nil
}

// startOn starts a server on a fresh copy of dump and times it until
// DBSIZE reports every key (redis-server answers -LOADING until then),
// sampling its resident memory on the way.
func startOn(name, bin, work, dump string, n int) (result, error) {
	dir, err := os.MkdirTemp(work, name)
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	if err := copyFile(dump, filepath.Join(dir, "dump.rdb")); err != nil {
		return result{}, err
	}
	port, err := harness.FreePort()
	if err != nil {
		return result{}, err
	}
	start := time.Now()
	cmd, err := server(name, bin, dir, port)
	if err != nil {
		return result{}, err
	}
	defer stop(cmd)
	var peak int64
	deadline := start.Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		peak = max(peak, procstat.RSS(cmd.Process.Pid))
		if dbsize(port) == n {
			secs := time.Since(start).Seconds()
			final := procstat.RSS(cmd.Process.Pid)
			cpu := float64(procstat.CPUTicks(cmd.Process.Pid)) / procstat.TicksPerSecond
			// recached then goes on saving what it loaded as its own
			// snapshot, in the background while it serves: its CPU is
			// reported apart.
			for time.Now().Before(deadline) && saving(port) {
				time.Sleep(10 * time.Millisecond)
			}
			saved := float64(procstat.CPUTicks(cmd.Process.Pid)) / procstat.TicksPerSecond
			return result{secs: secs, cpu: cpu, saved: saved, peak: max(peak, final), final: final}, nil
		}
		time.Sleep(2 * time.Millisecond)
	}
	return result{}, fmt.Errorf("not all %d keys served within 5 minutes", n)
}

// saving reports whether the server's INFO says a background save runs.
func saving(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, "INFO persistence\r\n"); err != nil {
		return false
	}
	r := bufio.NewReader(c)
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			return false
		}
		if strings.HasPrefix(l, "rdb_bgsave_in_progress:") {
			return strings.TrimSpace(l) == "rdb_bgsave_in_progress:1"
		}
	}
}

// dbsize returns DBSIZE, or -1 while the server does not answer it.
func dbsize(port int) int {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return -1
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, "DBSIZE\r\n"); err != nil {
		return -1
	}
	l, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.HasPrefix(l, ":") {
		return -1
	}
	v, _ := strconv.Atoi(strings.TrimSpace(l[1:]))
	return v
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}
