// Command repl measures replication, recached against redis-server, each
// replicating to a replica of its own kind (a recached primary with a
// recached replica, a redis-server primary with a redis-server replica),
// in rounds whose order rotates:
//
//   - the primary's CPU per request for SET at pipeline 16 (redis-benchmark)
//     with the replica attached, and the replica's CPU per request to apply
//     the stream; the run ends when the replica has the primary's offset;
//   - a full sync of a dataset of -keys keys (plus the up to 100 000 the
//     SET row wrote): the time from a fresh replica's start until it serves
//     every key, and the primary's CPU spent sending the image.
//
// Both primaries run with repl-diskless-sync yes and
// repl-diskless-sync-delay 0, so that neither waits for more replicas.
//
// Usage:
//
//	repl -recached bin/recached -requests 1000000 -keys 1000000 -rounds 3
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
	"strconv"
	"strings"
	"time"

	"github.com/recached/recached/bench/harness"
	"github.com/recached/recached/bench/procstat"
	"github.com/recached/recached/resp"
)

func main() {
	bin := flag.String("recached", "bin/recached", "recached binary")
	requests := flag.Int("requests", 1000000, "SET requests of the throughput row")
	keys := flag.Int("keys", 1000000, "keys of the full-sync row")
	rounds := flag.Int("rounds", 3, "rounds (the order of the servers rotates)")
	flag.Parse()
	log.SetFlags(0)
	work, err := os.MkdirTemp("", "replbench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(work)
	names := []string{"redis", "recached"}
	res := map[string][]result{}
	for r := 0; r < *rounds; r++ {
		for i := range names {
			name := names[(i+r)%len(names)]
			x, err := round(name, *bin, work, *requests, *keys)
			if err != nil {
				log.Fatalf("repl: %s: %v", name, err)
			}
			res[name] = append(res[name], x)
		}
	}
	rows := []struct {
		name string
		get  func(result) float64
		unit string
	}{
		{"SET P=16 primary CPU/request", func(x result) float64 { return x.primaryNs / 1000 }, "us"},
		{"SET P=16 replica CPU/request", func(x result) float64 { return x.replicaNs / 1000 }, "us"},
		{fmt.Sprintf("full sync of %d keys", *keys), func(x result) float64 { return x.syncSecs }, "s"},
		{"full sync primary CPU", func(x result) float64 { return x.syncCPU }, "s"},
	}
	fmt.Printf("replication, %d rounds (medians; ratio recached/redis per round: median and range)\n", *rounds)
	for _, row := range rows {
		var ratios []float64
		for r := 0; r < *rounds; r++ {
			ratios = append(ratios, row.get(res["recached"][r])/row.get(res["redis"][r]))
		}
		fmt.Printf("%-36s redis %8.3f %s  recached %8.3f %s  ratio %s\n", row.name,
			median(res["redis"], row.get), row.unit, median(res["recached"], row.get), row.unit,
			harness.Spread(ratios))
	}
}

// result is one round of one server kind.
type result struct {
	primaryNs, replicaNs float64 // CPU ns per SET
	syncSecs, syncCPU    float64
}

func median(rs []result, get func(result) float64) float64 {
	v := make([]float64, len(rs))
	for i, x := range rs {
		v[i] = get(x)
	}
	return harness.Median(v)
}

// round runs both rows for one server kind.
func round(name, bin, work string, requests, keys int) (result, error) {
	var x result
	dir, err := os.MkdirTemp(work, name)
	if err != nil {
		return x, err
	}
	defer os.RemoveAll(dir)
	pport, err := harness.FreePort()
	if err != nil {
		return x, err
	}
	primary, err := server(name, bin, filepath.Join(dir, "primary"), pport, 0)
	if err != nil {
		return x, err
	}
	defer stop(primary)
	rport, err := harness.FreePort()
	if err != nil {
		return x, err
	}
	replica, err := server(name, bin, filepath.Join(dir, "replica"), rport, pport)
	if err != nil {
		return x, err
	}
	defer stop(replica)
	if err := waitUntil(time.Minute, func() bool { return info(rport, "master_link_status") == "up" }); err != nil {
		return x, fmt.Errorf("the replica's link: %w", err)
	}

	p0, r0 := procstat.CPUTicks(primary.Process.Pid), procstat.CPUTicks(replica.Process.Pid)
	bench := exec.Command("redis-benchmark", "-p", strconv.Itoa(pport), "-t", "set", "-P", "16", "-c", "50",
		"-n", strconv.Itoa(requests), "-r", "100000", "-q")
	if out, err := bench.CombinedOutput(); err != nil {
		return x, fmt.Errorf("redis-benchmark: %v: %s", err, out)
	}
	p1 := procstat.CPUTicks(primary.Process.Pid)
	if err := waitUntil(time.Minute, func() bool {
		off := info(pport, "master_repl_offset")
		return off != "" && info(rport, "slave_repl_offset") == off
	}); err != nil {
		return x, fmt.Errorf("the replica catching up: %w", err)
	}
	r1 := procstat.CPUTicks(replica.Process.Pid)
	x.primaryNs = procstat.NsPer(p1-p0, requests)
	x.replicaNs = procstat.NsPer(r1-r0, requests)
	stop(replica)

	// The image holds the keys SET wrote too: -keys more than those.
	if err := fill(pport, keys); err != nil {
		return x, err
	}
	total := dbsize(pport)
	sport, err := harness.FreePort()
	if err != nil {
		return x, err
	}
	s0 := procstat.CPUTicksWithChildren(primary.Process.Pid)
	start := time.Now()
	fresh, err := server(name, bin, filepath.Join(dir, "fresh"), sport, pport)
	if err != nil {
		return x, err
	}
	defer stop(fresh)
	if err := waitUntil(5*time.Minute, func() bool {
		return info(sport, "master_link_status") == "up" && dbsize(sport) == total
	}); err != nil {
		return x, fmt.Errorf("the full sync: %w", err)
	}
	x.syncSecs = time.Since(start).Seconds()
	// The primary's CPU with its children's: redis-server forks one to
	// write the image.
	x.syncCPU = float64(procstat.CPUTicksWithChildren(primary.Process.Pid)-s0) / procstat.TicksPerSecond
	return x, nil
}

// server starts a server of kind name in dir on port, a replica of the
// server on master when master is not 0.
func server(name, bin, dir string, port, master int) (*exec.Cmd, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--appendonly", "no", "--save", "",
		"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"}
	if master != 0 {
		args = append(args, "--replicaof", "127.0.0.1", strconv.Itoa(master))
	}
	cmd := exec.Command("redis-server", args...)
	if name == "recached" {
		cmd = exec.Command(bin, append(args, "--ws-port", "0", "--amaquet-port", "0", "--realtime-port", "0")...)
	}
	f, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	if err := waitUntil(10*time.Second, func() bool { return dbsize(port) >= 0 }); err != nil {
		stop(cmd)
		return nil, err
	}
	return cmd, nil
}

func stop(cmd *exec.Cmd) {
	if cmd.ProcessState == nil {
		cmd.Process.Kill()
		cmd.Wait()
	}
}

// fill writes n keys with pipelined MSETs of 100 keys.
func fill(port, n int) error {
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	defer c.Close()
	w := bufio.NewWriterSize(c, 1<<16)
	r := bufio.NewReaderSize(c, 1<<16)
	var buf []byte
	args := make([][]byte, 0, 201)
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
			if !strings.HasPrefix(l, "+OK") {
				return fmt.Errorf("fill: %s", l)
			}
		}
		return nil
	}
	for i := 0; i < n; i += 100 {
		args = append(args[:0], []byte("MSET"))
		for j := i; j < min(i+100, n); j++ {
			args = append(args, []byte("key:"+strconv.Itoa(j)), []byte(fmt.Sprintf("value-%010d", j)))
		}
		buf = resp.AppendCommand(buf[:0], args...)
		w.Write(buf)
		if pending++; pending == 100 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// waitUntil polls cond every 5 ms for up to limit.
func waitUntil(limit time.Duration, cond func() bool) error {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not done within %v", limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// query sends one inline command and returns the reply's bytes, "" when
// the server does not answer.
func query(port int, cmd string) string {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return ""
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, cmd+"\r\n"); err != nil {
		return ""
	}
	r := bufio.NewReader(c)
	l, err := r.ReadString('\n')
	if err != nil {
		return ""
	}
	if !strings.HasPrefix(l, "$") {
		return l
	}
	n, _ := strconv.Atoi(strings.TrimSpace(l[1:]))
	if n < 0 {
		return ""
	}
	b := make([]byte, n+2)
	if _, err := io.ReadFull(r, b); err != nil {
		return ""
	}
	return string(b[:n])
}

// info returns one field of INFO replication.
func info(port int, field string) string {
	for _, l := range strings.Split(query(port, "INFO replication"), "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return v
		}
	}
	return ""
}

// dbsize returns DBSIZE, or -1 while the server does not answer it.
func dbsize(port int) int {
	l := query(port, "DBSIZE")
	if !strings.HasPrefix(l, ":") {
		return -1
	}
	v, _ := strconv.Atoi(strings.TrimSpace(l[1:]))
	return v
}
