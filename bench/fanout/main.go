// Command fanout measures sync-push fan-out over the WebSocket bridge: many
// WebSocket clients each SYNCed on its own key pattern, plus a group sharing
// one pattern, while writers SET keys over the RESP port. Every write to a
// client's own key is pushed to that client; every write to the shared
// pattern is pushed to the whole group.
//
// It runs two modes against a running server: "full", writers at full
// speed, and "rate", writers paced at -rate writes per second. Each prints
// one line for scripts:
//
//	fanout mode=full clients=1000 shared=100 writers=4 seconds=5.00 writes=… writes_per_sec=… pushes=… pushes_per_sec=… p50_ms=… p99_ms=… max_ms=… lost=0
//
// Latency is measured from the write's acknowledgment (the writer reading
// its reply) to the push's receipt by a client; a push that arrives before
// its write's reply is read counts as 0. Every client checks that each push
// is the SET it expects, and the run fails if a push is missing.
//
// Usage (a server on its own ports, persistence off):
//
//	recached --port 7379 --ws-port 7380 --appendonly no --save ""
//	go run ./bench/fanout -tcp 127.0.0.1:7379 -ws 127.0.0.1:7380
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/resp"
)

func main() {
	cfg := config{}
	flag.StringVar(&cfg.tcp, "tcp", "127.0.0.1:6379", "RESP address of the server")
	flag.StringVar(&cfg.ws, "ws", "127.0.0.1:6380", "WebSocket address of the server")
	flag.IntVar(&cfg.clients, "clients", 1000, "WebSocket clients with a pattern of their own")
	flag.IntVar(&cfg.shared, "shared", 100, "WebSocket clients sharing one pattern")
	flag.IntVar(&cfg.writers, "writers", 4, "TCP writer connections")
	flag.IntVar(&cfg.pipeline, "pipeline", 32, "writes in flight per writer in full mode")
	flag.IntVar(&cfg.sharedEvery, "shared-every", 10, "one write in this many goes to the shared pattern")
	flag.IntVar(&cfg.rate, "rate", 10000, "writes per second in rate mode")
	flag.DurationVar(&cfg.duration, "duration", 5*time.Second, "length of each mode")
	flag.IntVar(&cfg.size, "size", 16, "value bytes (at least the write id's digits)")
	modes := flag.String("modes", "full,rate", "modes to run: full, rate")
	flag.Parse()
	if cfg.clients < 1 || cfg.shared < 0 || cfg.writers < 1 || cfg.pipeline < 1 || cfg.sharedEvery < 1 || cfg.rate < 1 {
		fmt.Fprintln(os.Stderr, "fanout: counts must be positive")
		os.Exit(2)
	}
	for _, m := range strings.Split(*modes, ",") {
		if m != "full" && m != "rate" {
			fmt.Fprintf(os.Stderr, "fanout: unknown mode %q\n", m)
			os.Exit(2)
		}
		res, err := cfg.run(m)
		if err != nil {
			fmt.Fprintf(os.Stderr, "fanout: mode %s: %v\n", m, err)
			os.Exit(1)
		}
		fmt.Println(res)
	}
}

// config is one benchmark's settings.
type config struct {
	tcp, ws         string
	clients, shared int
	writers         int
	pipeline        int
	sharedEvery     int
	rate            int
	duration        time.Duration
	size            int
}

// receipt is one push's write id and arrival time.
type receipt struct {
	id uint32
	at int64 // nanoseconds since the run's start
}

// subscriber is one WebSocket client.
type subscriber struct {
	c        *websocket.Conn
	key      string // the key its pushes are about (its own or the shared one)
	received atomic.Int64
	receipts []receipt
	err      error
	done     chan struct{}
}

// run performs one mode and returns its result line.
func (cfg config) run(mode string) (string, error) {
	tag := fmt.Sprintf("fan:%d:%s", os.Getpid(), mode)
	start := time.Now()
	subs, err := cfg.connect(tag)
	defer func() {
		for _, s := range subs {
			_ = s.c.Close()
		}
	}()
	if err != nil {
		return "", err
	}
	for _, s := range subs {
		go s.read(start)
	}

	// Writers: write i goes to the shared key when i%sharedEvery == 0, to
	// client (i/writers)%clients's key otherwise; acks[i] is its ack time.
	maxWrites := cfg.duration.Seconds() * 2e6
	if mode == "rate" {
		maxWrites = cfg.duration.Seconds()*float64(cfg.rate)*1.1 + 1000
	}
	acks := make([]atomic.Int64, int(maxWrites))
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, cfg.writers)
	t0 := time.Now()
	deadline := t0.Add(cfg.duration)
	for w := 0; w < cfg.writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cfg.write(mode, tag, start, deadline, &next, acks); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(t0)
	close(errs)
	if err := <-errs; err != nil {
		return "", err
	}
	writes := int(min(next.Load(), int64(len(acks))))
	// Expected pushes: one per own write, one per client of the group per
	// shared write.
	var want int64
	sharedWrites := 0
	for i := 0; i < writes; i++ {
		if i%cfg.sharedEvery == 0 {
			sharedWrites++
		}
	}
	want = int64(writes-sharedWrites) + int64(sharedWrites*cfg.shared)
	// Wait for the stragglers, then stop the readers.
	waitUntil := time.Now().Add(10 * time.Second)
	for time.Now().Before(waitUntil) {
		var got int64
		for _, s := range subs {
			got += s.received.Load()
		}
		if got >= want {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	deliveredBy := time.Since(t0)
	for _, s := range subs {
		_ = s.c.Close()
		<-s.done
	}
	var got int64
	var lats []int64
	for _, s := range subs {
		if s.err != nil {
			return "", s.err
		}
		got += s.received.Load()
		for _, r := range s.receipts {
			if int(r.id) >= writes {
				continue
			}
			ack := acks[r.id].Load()
			lats = append(lats, max(0, r.at-ack))
		}
	}
	slices.Sort(lats)
	pct := func(p float64) float64 {
		if len(lats) == 0 {
			return 0
		}
		return float64(lats[min(len(lats)-1, int(p*float64(len(lats))))]) / 1e6
	}
	maxMs := 0.0
	if len(lats) > 0 {
		maxMs = float64(lats[len(lats)-1]) / 1e6
	}
	secs := elapsed.Seconds()
	return fmt.Sprintf("fanout mode=%s clients=%d shared=%d writers=%d seconds=%.2f writes=%d writes_per_sec=%.0f pushes=%d pushes_per_sec=%.0f p50_ms=%.2f p99_ms=%.2f max_ms=%.2f lost=%d",
		mode, cfg.clients, cfg.shared, cfg.writers, secs, writes, float64(writes)/secs,
		got, float64(got)/deliveredBy.Seconds(), pct(0.50), pct(0.99), maxMs, max(0, want-got)), nil
}

// connect opens and SYNCs every WebSocket client.
func (cfg config) connect(tag string) ([]*subscriber, error) {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, ReadBufferSize: 64 << 10, WriteBufferSize: 4 << 10}
	var subs []*subscriber
	for i := 0; i < cfg.clients+cfg.shared; i++ {
		c, hr, err := d.Dial("ws://"+cfg.ws+"/", nil)
		if err != nil {
			return subs, fmt.Errorf("client %d: %w", i, err)
		}
		hr.Body.Close()
		s := &subscriber{c: c, done: make(chan struct{})}
		subs = append(subs, s)
		pattern := fmt.Sprintf("%s:shared:*", tag)
		s.key = fmt.Sprintf("%s:shared:k", tag)
		if i < cfg.clients {
			pattern = fmt.Sprintf("%s:c%d:*", tag, i)
			s.key = fmt.Sprintf("%s:c%d:k", tag, i)
		}
		if err := c.WriteMessage(websocket.TextMessage, resp.AppendCommand(nil, []byte("SYNC"), []byte(pattern))); err != nil {
			return subs, err
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, b, err := c.ReadMessage()
		if err != nil || string(b) != "+OK\r\n" {
			return subs, fmt.Errorf("client %d: SYNC: %q %v", i, b, err)
		}
		_ = c.SetReadDeadline(time.Time{})
	}
	return subs, nil
}

// read receives pushes until the connection closes, checking each is a SET
// of the client's key and noting its write id and arrival time.
func (s *subscriber) read(start time.Time) {
	defer close(s.done)
	prefix := []byte(fmt.Sprintf(">3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$", len(s.key), s.key))
	buf := make([]byte, 0, 256)
	for {
		_, r, err := s.c.NextReader()
		if err != nil {
			return // closed by run
		}
		buf, err = readAll(r, buf[:0])
		if err != nil {
			return
		}
		at := time.Since(start).Nanoseconds()
		if !bytes.HasPrefix(buf, prefix) {
			s.err = fmt.Errorf("client of %s: unexpected frame %.80q", s.key, buf)
			return
		}
		rest := buf[len(prefix):]
		i := bytes.Index(rest, []byte("\r\n"))
		if i < 0 {
			s.err = fmt.Errorf("bad push %q", buf)
			return
		}
		val := rest[i+2 : len(rest)-2]
		if j := bytes.IndexByte(val, '.'); j >= 0 {
			val = val[:j]
		}
		id, err := strconv.ParseUint(string(val), 10, 32)
		if err != nil {
			s.err = fmt.Errorf("bad value in %q", buf)
			return
		}
		s.receipts = append(s.receipts, receipt{uint32(id), at})
		s.received.Add(1)
	}
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

// write runs one writer connection until the deadline: in full mode with
// up to cfg.pipeline writes in flight, in rate mode paced so that all the
// writers together make cfg.rate writes per second.
func (cfg config) write(mode, tag string, start, deadline time.Time, next *atomic.Int64, acks []atomic.Int64) error {
	c, err := net.DialTimeout("tcp", cfg.tcp, 10*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	r := bufio.NewReaderSize(c, 64<<10)
	var out []byte
	var ids []int64
	set := []byte("SET")
	batch := cfg.pipeline
	var tick *time.Ticker
	perWriter := float64(cfg.rate) / float64(cfg.writers)
	if mode == "rate" {
		tick = time.NewTicker(time.Millisecond)
		defer tick.Stop()
	}
	began := time.Now()
	sent := 0
	for time.Now().Before(deadline) {
		if tick != nil {
			// Pace by elapsed time, so that a slow round is caught up on.
			<-tick.C
			batch = int(time.Since(began).Seconds()*perWriter) - sent
			if batch <= 0 {
				continue
			}
		}
		sent += batch
		out, ids = out[:0], ids[:0]
		for j := 0; j < batch; j++ {
			id := next.Add(1) - 1
			if id >= int64(len(acks)) {
				return nil
			}
			ids = append(ids, id)
			key := fmt.Sprintf("%s:shared:k", tag)
			if id%int64(cfg.sharedEvery) != 0 {
				key = fmt.Sprintf("%s:c%d:k", tag, (id/int64(cfg.writers))%int64(cfg.clients))
			}
			val := strconv.FormatInt(id, 10)
			if pad := cfg.size - len(val) - 1; pad > 0 {
				val += "." + strings.Repeat("x", pad)
			}
			out = resp.AppendCommand(out, set, []byte(key), []byte(val))
		}
		if _, err := c.Write(out); err != nil {
			return err
		}
		for _, id := range ids {
			line, err := r.ReadSlice('\n')
			if err != nil {
				return err
			}
			if string(line) != "+OK\r\n" {
				return fmt.Errorf("SET replied %q", line)
			}
			acks[id].Store(time.Since(start).Nanoseconds())
		}
	}
	return nil
}
