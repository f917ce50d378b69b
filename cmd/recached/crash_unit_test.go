package main

import (
	"bytes"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recached/recached/server/servertest"
)

// TestKillKeepsTransactionsWhole kills the process while clients run
// transactions (MULTI/EXEC and scripts that each increment two counters)
// and other clients write: after the restart every pair of counters is
// equal (no transaction is half applied) and at least as high as the
// transactions acknowledged. Under everysec the log is written by each
// connection's Commit and by the once-a-second flush, so a transaction's
// first effects may reach the file before the rest; the log's transaction
// records keep the restart from applying such a part.
func TestKillKeepsTransactionsWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the real binary")
	}
	bin := build(t)
	for _, fsync := range []string{"everysec", "always"} {
		t.Run(fsync, func(t *testing.T) {
			dir := t.TempDir()
			p := startIn(t, bin, dir, "--appendfsync", fsync)
			a := &acked{vals: map[string]string{}}
			stop := make(chan struct{})
			wg := writers(t, p.addr, 2, 10, stop, a, "w")
			const clients = 3
			var done [clients]atomic.Int64
			var tx sync.WaitGroup
			for c := 0; c < clients; c++ {
				conn := servertest.Dial(t, p.addr)
				x, y := "x"+strconv.Itoa(c), "y"+strconv.Itoa(c)
				tx.Add(1)
				go func() {
					defer tx.Done()
					for round := 0; round < 1_000_000; round++ {
						select {
						case <-stop:
							return
						default:
						}
						var batch bytes.Buffer
						want := 0
						for i := 0; i < 8; i++ {
							if c == 0 {
								batch.Write(servertest.Encode("EVAL", "redis.call('INCR', KEYS[1]); return redis.call('INCR', KEYS[2])", "2", x, y))
								want++
								continue
							}
							batch.Write(servertest.Encode("MULTI"))
							batch.Write(servertest.Encode("INCR", x))
							batch.Write(servertest.Encode("INCR", y))
							batch.Write(servertest.Encode("EXEC"))
							want += 4
						}
						if err := conn.Send(batch.Bytes()); err != nil {
							return
						}
						for i := 0; i < want; i++ {
							rep, err := conn.Read()
							if err != nil {
								return
							}
							if rep[0] == '-' {
								t.Errorf("client %d: %q", c, rep)
								return
							}
							if c == 0 || i%4 == 3 {
								done[c].Add(1)
							}
						}
					}
				}()
			}
			deadline := time.Now().Add(30 * time.Second)
			for done[0].Load()+done[1].Load()+done[2].Load() < 3000 && time.Now().Before(deadline) {
				time.Sleep(2 * time.Millisecond)
			}
			p.kill(t)
			close(stop)
			wg.Wait()
			tx.Wait()
			p2 := startIn(t, bin, dir, "--appendfsync", fsync)
			verify(t, p2.addr, a)
			c := servertest.Dial(t, p2.addr)
			for i := 0; i < clients; i++ {
				x := counter(t, c, "x"+strconv.Itoa(i))
				y := counter(t, c, "y"+strconv.Itoa(i))
				if x != y || x < done[i].Load() {
					t.Errorf("client %d: x=%d y=%d after the restart; %d transactions acknowledged", i, x, y, done[i].Load())
				}
			}
			t.Logf("transactions acknowledged before kill -9: %d %d %d", done[0].Load(), done[1].Load(), done[2].Load())
		})
	}
}

// counter returns the integer at key, 0 when it does not exist.
func counter(t *testing.T, c *servertest.Client, key string) int64 {
	t.Helper()
	rep, err := c.Do("GET", key)
	if err != nil {
		t.Fatal(err)
	}
	if string(rep) == "$-1\r\n" {
		return 0
	}
	lines := bytes.Split(rep, []byte("\r\n"))
	n, err := strconv.ParseInt(string(lines[1]), 10, 64)
	if err != nil {
		t.Fatalf("GET %s: %q", key, rep)
	}
	return n
}
