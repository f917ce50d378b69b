// Command persist measures persistence against a running server (recached
// or redis-server, at -addr): it fills it with N keys of 16-byte values
// through a pipelined connection, times SAVE, and times how long a freshly
// started server takes to answer PING with all its keys loaded, so that a
// bench script can compare the two side by side.
//
// Usage:
//
//	persist -addr 127.0.0.1:6379 -mode fill -n 1000000
//	persist -addr 127.0.0.1:6379 -mode save
//	persist -addr 127.0.0.1:6379 -mode waitload -n 1000000
//
// Each mode prints one line "<mode> <seconds> <detail>".
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/recached/recached/resp"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	mode := flag.String("mode", "fill", "fill, save or waitload")
	n := flag.Int("n", 1000000, "number of keys (fill; waitload waits for DBSIZE to reach it)")
	size := flag.Int("size", 16, "value size in bytes")
	pipeline := flag.Int("pipeline", 1000, "requests per round trip")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up after this long")
	flag.Parse()
	log.SetFlags(0)
	var err error
	switch *mode {
	case "fill":
		err = fill(*addr, *n, *size, *pipeline)
	case "save":
		err = save(*addr)
	case "waitload":
		err = waitLoad(*addr, *n, *timeout)
	default:
		err = fmt.Errorf("unknown mode %q", *mode)
	}
	if err != nil {
		log.Fatalf("persist: %v", err)
	}
}

// client is a minimal RESP client.
type client struct {
	c   net.Conn
	r   *bufio.Reader
	w   *bufio.Writer
	out []byte // scratch for the request being sent
}

func dial(addr string) (*client, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &client{c: c, r: bufio.NewReaderSize(c, 1<<16), w: bufio.NewWriterSize(c, 1<<16)}, nil
}

func (c *client) send(args ...[]byte) {
	c.out = resp.AppendCommand(c.out[:0], args...)
	c.w.Write(c.out)
}

// reply reads one reply and returns its first line (a bulk string's
// contents for $).
func (c *client) reply() (string, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if len(line) == 0 {
		return "", errors.New("empty reply")
	}
	switch line[0] {
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return line, err
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, b); err != nil {
			return "", err
		}
		return string(b[:n]), nil
	case '*', '%', '>':
		return line, errors.New("aggregate replies are not expected")
	}
	return line, nil
}

func (c *client) do(args ...string) (string, error) {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	c.send(b...)
	if err := c.w.Flush(); err != nil {
		return "", err
	}
	return c.reply()
}

func fill(addr string, n, size, pipeline int) error {
	c, err := dial(addr)
	if err != nil {
		return err
	}
	defer c.c.Close()
	val := bytes.Repeat([]byte("v"), size)
	set := []byte("SET")
	var key []byte
	start := time.Now()
	for done := 0; done < n; {
		batch := min(pipeline, n-done)
		for i := 0; i < batch; i++ {
			key = strconv.AppendInt(append(key[:0], "key:"...), int64(done+i), 10)
			c.send(set, key, val)
		}
		if err := c.w.Flush(); err != nil {
			return err
		}
		for i := 0; i < batch; i++ {
			rep, err := c.reply()
			if err != nil {
				return err
			}
			if rep != "+OK" {
				return fmt.Errorf("SET: %s", rep)
			}
		}
		done += batch
	}
	el := time.Since(start)
	fmt.Printf("fill %.3f %d keys, %.0f keys/s\n", el.Seconds(), n, float64(n)/el.Seconds())
	return nil
}

func save(addr string) error {
	c, err := dial(addr)
	if err != nil {
		return err
	}
	defer c.c.Close()
	start := time.Now()
	rep, err := c.do("SAVE")
	if err != nil {
		return err
	}
	if rep != "+OK" {
		return fmt.Errorf("SAVE: %s", rep)
	}
	fmt.Printf("save %.3f\n", time.Since(start).Seconds())
	return nil
}

// waitLoad polls until the server answers PING (Redis answers -LOADING
// while it loads) and holds n keys, and prints the time since the program
// started: run it right after starting the server.
func waitLoad(addr string, n int, timeout time.Duration) error {
	start := time.Now()
	for time.Since(start) < timeout {
		c, err := dial(addr)
		if err != nil {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		for time.Since(start) < timeout {
			rep, err := c.do("PING")
			if err != nil {
				break
			}
			if rep != "+PONG" {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			rep, err = c.do("DBSIZE")
			if err != nil {
				break
			}
			if got, _ := strconv.Atoi(strings.TrimPrefix(rep, ":")); got >= n {
				c.c.Close()
				fmt.Printf("waitload %.3f %d keys\n", time.Since(start).Seconds(), got)
				return nil
			}
			time.Sleep(5 * time.Millisecond)
		}
		c.c.Close()
	}
	fmt.Fprintln(os.Stderr, "persist: timed out waiting for the load")
	return errors.New("timeout")
}
