// Command pubsub measures publish/subscribe fan-out against a Redis-compatible
// server: one publisher and N subscribers of one channel, a fixed number of
// messages published one by one (mode p1) or in pipelines (p16), and the
// deliveries per second until every subscriber has received every message.
//
// It prints one line per mode, for scripts:
//
//	pubsub mode=p1 subscribers=200 messages=20000 size=64 deliveries=4000000 seconds=1.234 deliveries_per_sec=3241491
//
// Every subscriber checks the bytes it receives against the expected stream,
// so a wrong or missing delivery is an error, not a fast result.
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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/recached/recached/resp"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	subs := flag.Int("subs", 200, "subscriber connections")
	messages := flag.Int("messages", 20000, "messages published per mode")
	pipelines := flag.String("pipeline", "1,16", "comma-separated pipeline depths, one mode each")
	size := flag.Int("size", 64, "payload bytes")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up on a mode after this long")
	flag.Parse()
	if *subs < 1 || *messages < 1 || *size < 0 {
		fmt.Fprintln(os.Stderr, "pubsub: -subs and -messages must be positive, -size not negative")
		os.Exit(2)
	}
	for _, f := range strings.Split(*pipelines, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || p < 1 {
			fmt.Fprintf(os.Stderr, "pubsub: bad pipeline depth %q\n", f)
			os.Exit(2)
		}
		r := run{addr: *addr, subs: *subs, messages: *messages, pipeline: p, size: *size, timeout: *timeout}
		secs, err := r.measure()
		if err != nil {
			fmt.Fprintf(os.Stderr, "pubsub: mode p%d: %v\n", p, err)
			os.Exit(1)
		}
		n := int64(*subs) * int64(*messages)
		fmt.Printf("pubsub mode=p%d subscribers=%d messages=%d size=%d deliveries=%d seconds=%.3f deliveries_per_sec=%.0f\n",
			p, *subs, *messages, *size, n, secs, float64(n)/secs)
	}
}

// run is one mode's configuration.
type run struct {
	addr     string
	subs     int
	messages int
	pipeline int
	size     int
	timeout  time.Duration
}

// measure subscribes, publishes every message and waits until every
// subscriber has received all of them; it returns the elapsed seconds from
// the first publish to the last delivery.
func (r run) measure() (float64, error) {
	channel := fmt.Sprintf("bench:pubsub:%d:p%d", os.Getpid(), r.pipeline)
	payload := bytes.Repeat([]byte("x"), r.size)
	frame := encode('*', "message", channel, string(payload))
	deadline := time.Now().Add(r.timeout)

	conns := make([]net.Conn, 0, r.subs+1)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	readers := make([]*bufio.Reader, r.subs)
	for i := range readers {
		c, err := net.Dial("tcp", r.addr)
		if err != nil {
			return 0, err
		}
		conns = append(conns, c)
		_ = c.SetDeadline(deadline)
		if _, err := c.Write(encode('*', "SUBSCRIBE", channel)); err != nil {
			return 0, err
		}
		readers[i] = bufio.NewReaderSize(c, 64<<10)
	}
	confirm := encode('*', "subscribe", channel, ":1")
	for i, rd := range readers {
		got := make([]byte, len(confirm))
		if _, err := io.ReadFull(rd, got); err != nil {
			return 0, fmt.Errorf("subscriber %d: %w", i, err)
		}
		if !bytes.Equal(got, confirm) {
			return 0, fmt.Errorf("subscriber %d: SUBSCRIBE replied %q", i, got)
		}
	}
	pc, err := net.Dial("tcp", r.addr)
	if err != nil {
		return 0, err
	}
	conns = append(conns, pc)
	_ = pc.SetDeadline(deadline)
	pub := bufio.NewReader(pc)

	var wg sync.WaitGroup
	errs := make(chan error, r.subs+1)
	start := time.Now()
	for i, rd := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := expectStream(rd, frame, r.messages); err != nil {
				errs <- fmt.Errorf("subscriber %d: %w", i, err)
			}
		}()
	}
	if err := r.publish(pc, pub, channel, payload); err != nil {
		return 0, err
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return secs, nil
}

// publish sends the messages in pipelines of r.pipeline and checks that
// every reply counts every subscriber.
func (r run) publish(c net.Conn, rd *bufio.Reader, channel string, payload []byte) error {
	one := encode('*', "PUBLISH", channel, string(payload))
	batch := bytes.Repeat(one, r.pipeline)
	want := ":" + strconv.Itoa(r.subs) + "\r\n"
	for sent := 0; sent < r.messages; {
		n := min(r.pipeline, r.messages-sent)
		if _, err := c.Write(batch[:n*len(one)]); err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			line, err := rd.ReadString('\n')
			if err != nil {
				return fmt.Errorf("publisher: %w", err)
			}
			if line != want {
				return fmt.Errorf("publisher: PUBLISH replied %q, want %q", line, want)
			}
		}
		sent += n
	}
	return nil
}

// expectStream reads n copies of frame from rd, comparing every byte.
func expectStream(rd *bufio.Reader, frame []byte, n int) error {
	total := len(frame) * n
	off := 0 // position in frame
	for read := 0; read < total; {
		buf, _ := rd.Peek(min(rd.Buffered(), total-read)) // never more than is buffered
		if len(buf) == 0 {
			if _, err := rd.Peek(1); err != nil {
				return fmt.Errorf("after %d of %d bytes: %w", read, total, err)
			}
			continue
		}
		for len(buf) > 0 {
			k := min(len(buf), len(frame)-off)
			if !bytes.Equal(buf[:k], frame[off:off+k]) {
				return errors.New("unexpected bytes in the message stream: " + strconv.Quote(string(buf[:k])))
			}
			if _, err := rd.Discard(k); err != nil {
				return err
			}
			buf = buf[k:]
			read += k
			off = (off + k) % len(frame)
		}
	}
	return nil
}

// encode builds a RESP array of bulk strings; an element starting with ':'
// is written as an integer.
func encode(kind byte, els ...string) []byte {
	b := resp.AppendHeader(nil, kind, len(els))
	for _, e := range els {
		if strings.HasPrefix(e, ":") {
			b = append(b, e+"\r\n"...)
			continue
		}
		b = resp.AppendBulkString(b, e)
	}
	return b
}
