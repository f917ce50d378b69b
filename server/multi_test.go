package server_test

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// TestExecAtomic runs transactions that move both counters together while
// readers check, from other connections, that they never see them differ.
func TestExecAtomic(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	const writers, txs = 4, 300
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan string, 100)
	for r := 0; r < 2; r++ {
		c := servertest.Dial(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				rep, err := c.Do("MGET", "a", "b")
				if err != nil {
					errs <- err.Error()
					return
				}
				els, _ := servertest.Elements(rep)
				if len(els) != 2 || string(els[0]) != string(els[1]) {
					errs <- "torn read: " + string(rep)
					return
				}
			}
		}()
	}
	var ww sync.WaitGroup
	for w := 0; w < writers; w++ {
		c := servertest.Dial(t, addr)
		ww.Add(1)
		go func() {
			defer ww.Done()
			for i := 0; i < txs; i++ {
				var b []byte
				for _, cmd := range [][]string{{"MULTI"}, {"INCR", "a"}, {"INCR", "b"}, {"EXEC"}} {
					b = append(b, servertest.Encode(cmd...)...)
				}
				if err := c.Send(b); err != nil {
					errs <- err.Error()
					return
				}
				for j := 0; j < 4; j++ {
					if _, err := c.Read(); err != nil {
						errs <- err.Error()
						return
					}
				}
			}
		}()
	}
	ww.Wait()
	close(stop)
	wg.Wait()
	checkFinal(t, addr, errs, "a", writers*txs)
}

// checkFinal reports the errors the clients collected in errs, which it
// closes, and checks that key ends holding the integer want.
func checkFinal(t *testing.T, addr string, errs chan string, key string, want int) {
	t.Helper()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	c := servertest.Dial(t, addr)
	w := strconv.Itoa(want)
	if rep, _ := c.Do("GET", key); string(rep) != "$"+strconv.Itoa(len(w))+"\r\n"+w+"\r\n" {
		t.Fatalf("%s = %q, want %s", key, rep, w)
	}
}

// TestWatchRace increments a counter with optimistic WATCH transactions from
// several clients; retries on aborted EXECs must make the total exact.
func TestWatchRace(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	const clients, incs = 4, 100
	var wg sync.WaitGroup
	errs := make(chan string, clients)
	for i := 0; i < clients; i++ {
		c := servertest.Dial(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < incs; {
				if _, err := c.Do("WATCH", "ctr"); err != nil {
					errs <- err.Error()
					return
				}
				rep, _ := c.Do("GET", "ctr")
				n := 0
				if !strings.HasPrefix(string(rep), "$-1") {
					lines := strings.Split(string(rep), "\r\n")
					n, _ = strconv.Atoi(lines[1])
				}
				c.Do("MULTI")
				c.Do("SET", "ctr", strconv.Itoa(n+1))
				rep, err := c.Do("EXEC")
				if err != nil {
					errs <- err.Error()
					return
				}
				if string(rep) != "*-1\r\n" {
					done++
				}
			}
		}()
	}
	wg.Wait()
	checkFinal(t, addr, errs, "ctr", clients*incs)
}

func TestWatchInvalidation(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	c := servertest.Dial(t, addr)
	other := servertest.Dial(t, addr)
	steps := []struct {
		c    *servertest.Client
		args []string
		want string
	}{
		// Another connection's write aborts the transaction.
		{c, []string{"SET", "w", "1"}, "+OK\r\n"},
		{c, []string{"WATCH", "w"}, "+OK\r\n"},
		{other, []string{"SET", "w", "2"}, "+OK\r\n"},
		{c, []string{"MULTI"}, "+OK\r\n"},
		{c, []string{"GET", "w"}, "+QUEUED\r\n"},
		{c, []string{"EXEC"}, "*-1\r\n"},
		// Expiry of a watched key aborts it too.
		{c, []string{"SET", "e", "1", "PX", "50"}, "+OK\r\n"},
		{c, []string{"WATCH", "e"}, "+OK\r\n"},
		{c, []string{"MULTI"}, "+OK\r\n"},
		{c, []string{"GET", "e"}, "+QUEUED\r\n"},
		{nil, nil, ""},
		{c, []string{"EXEC"}, "*-1\r\n"},
		// FLUSHALL touches watched keys that exist.
		{c, []string{"SET", "f", "1"}, "+OK\r\n"},
		{c, []string{"WATCH", "f"}, "+OK\r\n"},
		{other, []string{"FLUSHALL"}, "+OK\r\n"},
		{c, []string{"MULTI"}, "+OK\r\n"},
		{c, []string{"EXEC"}, "*-1\r\n"},
		// An untouched watch lets EXEC run; UNWATCH forgets.
		{c, []string{"WATCH", "u"}, "+OK\r\n"},
		{c, []string{"MULTI"}, "+OK\r\n"},
		{c, []string{"SET", "u", "1"}, "+QUEUED\r\n"},
		{c, []string{"EXEC"}, "*1\r\n+OK\r\n"},
		{c, []string{"WATCH", "u"}, "+OK\r\n"},
		{other, []string{"SET", "u", "2"}, "+OK\r\n"},
		{c, []string{"UNWATCH"}, "+OK\r\n"},
		{c, []string{"MULTI"}, "+OK\r\n"},
		{c, []string{"GET", "u"}, "+QUEUED\r\n"},
		{c, []string{"EXEC"}, "*1\r\n$1\r\n2\r\n"},
		// SMOVE of a member the destination holds leaves it untouched.
		{c, []string{"SADD", "src", "a", "b"}, ":2\r\n"},
		{c, []string{"SADD", "dst", "a"}, ":1\r\n"},
		{c, []string{"WATCH", "dst"}, "+OK\r\n"},
		{other, []string{"SMOVE", "src", "dst", "a"}, ":1\r\n"},
		{c, []string{"MULTI"}, "+OK\r\n"},
		{c, []string{"SCARD", "dst"}, "+QUEUED\r\n"},
		{c, []string{"EXEC"}, "*1\r\n:1\r\n"},
		{c, []string{"WATCH", "dst"}, "+OK\r\n"},
		{other, []string{"SMOVE", "src", "dst", "b"}, ":1\r\n"},
		{c, []string{"MULTI"}, "+OK\r\n"},
		{c, []string{"SCARD", "dst"}, "+QUEUED\r\n"},
		{c, []string{"EXEC"}, "*-1\r\n"},
	}
	for i, st := range steps {
		if st.c == nil {
			time.Sleep(120 * time.Millisecond)
			continue
		}
		rep, err := st.c.Do(st.args...)
		if err != nil || string(rep) != st.want {
			t.Fatalf("step %d %q: got %q (%v), want %q", i, st.args, rep, err, st.want)
		}
	}
}

// TestExecSelectNonCanonical runs MULTI / SELECT 01 / INCR / EXEC (and +1)
// while other clients INCR the same key in database 0. SELECT refuses those
// indexes, so the queued INCR runs in database 0 and EXEC must take database
// 0's locks for it: every increment counts, and -race sees no race.
func TestExecSelectNonCanonical(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.Loops = 4
	addr, _ := servertest.StartRecached(t, cfg)
	const clients, rounds = 4, 300
	var wg sync.WaitGroup
	errs := make(chan string, 2*clients)
	for i := 0; i < clients; i++ {
		index := []string{"01", "+1", "1 ", "-0"}[i]
		for _, tx := range []bool{true, false} {
			c := servertest.Dial(t, addr)
			wg.Add(1)
			go func() {
				defer wg.Done()
				var b []byte
				cmds := [][]string{{"INCR", "ctr"}}
				if tx {
					cmds = [][]string{{"MULTI"}, {"SELECT", index}, {"INCR", "ctr"}, {"EXEC"}}
				}
				for _, cmd := range cmds {
					b = append(b, servertest.Encode(cmd...)...)
				}
				for r := 0; r < rounds; r++ {
					if err := c.Send(b); err != nil {
						errs <- err.Error()
						return
					}
					var last []byte
					for range cmds {
						rep, err := c.Read()
						if err != nil {
							errs <- err.Error()
							return
						}
						last = rep
					}
					if tx && !strings.HasPrefix(string(last), "*2\r\n-ERR value is not an integer or out of range\r\n:") {
						errs <- "EXEC with SELECT " + index + ": " + strconv.Quote(string(last))
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	checkFinal(t, addr, errs, "ctr", 2*clients*rounds)
}
