package tcp_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

func start(t *testing.T) string {
	t.Helper()
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	return addr
}

// readAll reads until the server closes the connection or 5 s pass.
func readAll(t *testing.T, c net.Conn) ([]byte, bool) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return b, false
		}
	}
	return b, true
}

func TestBadInput(t *testing.T) {
	addr := start(t)
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"negative bulk", "*1\r\n$-2\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"nil bulk in array", "*2\r\n$3\r\nGET\r\n$-1\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"huge bulk", "*2\r\n$3\r\nGET\r\n$999999999999\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"bulk over 64MB", "*1\r\n$67108865\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"bad count", "*x\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"count overflow", "*99999999999999999999\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"not a bulk", "*1\r\n+PING\r\n", "-ERR Protocol error: expected '$', got '+'\r\n"},
		{"unbalanced quotes", "SET a \"b\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
		{"commands before garbage run", "PING\r\n*1\r\n$x\r\n", "+PONG\r\n-ERR Protocol error: invalid bulk length\r\n"},
		{"inline too long", strings.Repeat("a", 70000), "-ERR Protocol error: too big inline request\r\n"},
		{"binary garbage", "\x01\x02\xff\r\n", "-ERR unknown command '\x01\x02\xff', with args beginning with: \r\n"},
		{"NUL in an inline line", "\x00x y\r\nPING\r\n", "-ERR unknown command '\x00x', with args beginning with: 'y' \r\n+PONG\r\n"},
	}
	before := runtime.NumGoroutine()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write([]byte(tt.in)); err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(tt.want, "-ERR Protocol") || strings.Contains(tt.want, "Protocol error") {
				got, closed := readAll(t, c)
				if string(got) != tt.want || !closed {
					t.Fatalf("got %q closed=%v, want %q and a close", got, closed, tt.want)
				}
				return
			}
			buf := make([]byte, len(tt.want))
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.ReadFull(c, buf); err != nil || string(buf) != tt.want {
				t.Fatalf("got %q (%v), want %q", buf, err, tt.want)
			}
		})
	}
	// The server still serves.
	cl := servertest.Dial(t, addr)
	if rep, err := cl.Do("PING"); err != nil || string(rep) != "+PONG\r\n" {
		t.Fatalf("after bad input: %q %v", rep, err)
	}
	waitGoroutines(t, before+2)
}

// waitGoroutines polls until the goroutine count falls to at most n.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > n {
		t.Errorf("goroutines: %d, want at most %d", g, n)
	}
}

// TestSlowPartialFrame checks that a client stuck mid-request does not
// delay others, and that its request completes when the rest arrives.
func TestSlowPartialFrame(t *testing.T) {
	addr := start(t)
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	req := servertest.Encode("SET", "slow", strings.Repeat("x", 1<<20))
	if _, err := slow.Write(req[:len(req)/2]); err != nil {
		t.Fatal(err)
	}
	fast := servertest.Dial(t, addr)
	for i := 0; i < 100; i++ {
		if rep, err := fast.Do("INCR", "n"); err != nil || string(rep) != ":"+strconv.Itoa(i+1)+"\r\n" {
			t.Fatalf("fast client: %q %v", rep, err)
		}
	}
	if _, err := slow.Write(req[len(req)/2:]); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	_ = slow.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(slow, buf); err != nil || string(buf) != "+OK\r\n" {
		t.Fatalf("slow client: %q %v", buf, err)
	}
	if rep, _ := fast.Do("STRLEN", "slow"); string(rep) != ":1048576\r\n" {
		t.Fatalf("STRLEN: %q", rep)
	}
}

func TestPipelineAndLargeValue(t *testing.T) {
	addr := start(t)
	c := servertest.Dial(t, addr)
	var b bytes.Buffer
	const n = 20000
	for i := 0; i < n; i++ {
		b.Write(servertest.Encode("INCR", "p"))
	}
	if err := c.Send(b.Bytes()); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		rep, err := c.Read()
		if err != nil || string(rep) != ":"+strconv.Itoa(i)+"\r\n" {
			t.Fatalf("reply %d: %q %v", i, rep, err)
		}
	}
	big := strings.Repeat("v", 20<<20)
	if rep, err := c.Do("SET", "big", big); err != nil || string(rep) != "+OK\r\n" {
		t.Fatalf("SET big: %q %v", rep, err)
	}
	rep, err := c.Do("GET", "big")
	if err != nil || len(rep) != len(big)+len("$20971520\r\n\r\n") {
		t.Fatalf("GET big: %d bytes, %v", len(rep), err)
	}
}

func TestMaxClients(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.MaxClients = 3
	addr, _ := servertest.StartRecached(t, cfg)
	var conns []*servertest.Client
	for i := 0; i < 3; i++ {
		c := servertest.Dial(t, addr)
		if rep, err := c.Do("PING"); err != nil || string(rep) != "+PONG\r\n" {
			t.Fatalf("client %d: %q %v", i, rep, err)
		}
		conns = append(conns, c)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, closed := readAll(t, c)
	if string(got) != "-ERR max number of clients reached\r\n" || !closed {
		t.Fatalf("got %q closed=%v", got, closed)
	}
	conns[0].Conn().Close()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		c := servertest.Dial(t, addr)
		if rep, _ := c.Do("PING"); string(rep) == "+PONG\r\n" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("a slot did not free up after a client left")
}

func TestAuth(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.RequirePass = "s3cret"
	addr, _ := servertest.StartRecached(t, cfg)
	c := servertest.Dial(t, addr)
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"GET", "k"}, "-NOAUTH Authentication required.\r\n"},
		{[]string{"NOSUCH"}, "-ERR unknown command 'NOSUCH', with args beginning with: \r\n"},
		{[]string{"GET"}, "-ERR wrong number of arguments for 'get' command\r\n"},
		{[]string{"AUTH", "wrong"}, "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{[]string{"AUTH", "other", "s3cret"}, "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{[]string{"AUTH", "s3cret"}, "+OK\r\n"},
		{[]string{"GET", "k"}, "$-1\r\n"},
		{[]string{"RESET"}, "+RESET\r\n"},
		{[]string{"GET", "k"}, "-NOAUTH Authentication required.\r\n"},
		{[]string{"AUTH", "default", "s3cret"}, "+OK\r\n"},
		{[]string{"PING"}, "+PONG\r\n"},
	}
	for _, st := range steps {
		if rep, err := c.Do(st.args...); err != nil || string(rep) != st.want {
			t.Fatalf("%q: got %q (%v), want %q", st.args, rep, err, st.want)
		}
	}
}

func TestGoRedis(t *testing.T) {
	addr := start(t)
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto})
		defer rdb.Close()
		if err := rdb.Set(ctx, "gr", "v", time.Minute).Err(); err != nil {
			t.Fatalf("proto %d SET: %v", proto, err)
		}
		if v, err := rdb.Get(ctx, "gr").Result(); err != nil || v != "v" {
			t.Fatalf("proto %d GET: %q %v", proto, v, err)
		}
		if _, err := rdb.Get(ctx, "missing").Result(); err != redis.Nil {
			t.Fatalf("proto %d GET missing: %v", proto, err)
		}
		pipe := rdb.Pipeline()
		for i := 0; i < 100; i++ {
			pipe.Incr(ctx, fmt.Sprintf("ctr%d", proto))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if v, _ := rdb.Get(ctx, fmt.Sprintf("ctr%d", proto)).Int(); v != 100 {
			t.Fatalf("proto %d counter %d", proto, v)
		}
		if ttl, err := rdb.TTL(ctx, "gr").Result(); err != nil || ttl <= 0 || ttl > time.Minute {
			t.Fatalf("proto %d TTL %v %v", proto, ttl, err)
		}
		if err := rdb.Set(ctx, "n", "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Incr(ctx, "n").Err(); err == nil || err.Error() != "ERR value is not an integer or out of range" {
			t.Fatalf("proto %d INCR on text: %v", proto, err)
		}
		if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "tx", "1", 0)
			p.Incr(ctx, "tx")
			return nil
		}); err != nil {
			t.Fatalf("proto %d MULTI/EXEC: %v", proto, err)
		}
		if v, _ := rdb.Get(ctx, "tx").Result(); v != "2" {
			t.Fatalf("proto %d tx = %q", proto, v)
		}
	}
}

func TestRedisCLIAndBenchmark(t *testing.T) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatal("redis-cli not installed: run make test")
	}
	addr := start(t)
	_, port, _ := net.SplitHostPort(addr)
	out, err := exec.Command("redis-cli", "-p", port, "SET", "cli", "hello").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "OK" {
		t.Fatalf("redis-cli SET: %q %v", out, err)
	}
	out, err = exec.Command("redis-cli", "-p", port, "GET", "cli").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "hello" {
		t.Fatalf("redis-cli GET: %q %v", out, err)
	}
	// redis-cli builds its interactive hints from COMMAND DOCS: the SET
	// entry must carry its arguments and tokens.
	out, err = exec.Command("redis-cli", "-p", port, "COMMAND", "DOCS", "set").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"arguments", "key", "value", "NX", "XX", "GET", "EX", "KEEPTTL", "optional"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("COMMAND DOCS set lacks %q:\n%s", want, out)
		}
	}
	// Interactive mode, as a person uses it, fed on stdin.
	cmd := exec.Command("redis-cli", "-p", port)
	cmd.Stdin = strings.NewReader("SET a 1\nINCR a\nGET a\n")
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "2") {
		t.Fatalf("interactive redis-cli: %q %v", out, err)
	}
	out, err = exec.Command("redis-benchmark", "-p", port, "-t", "ping,set,get,incr,mset", "-n", "2000", "-q").CombinedOutput()
	if err != nil {
		t.Fatalf("redis-benchmark: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "ERR") || strings.Count(string(out), "requests per second") < 6 {
		t.Fatalf("redis-benchmark output:\n%s", out)
	}
	// Every default test (no -t): PING, SET, GET, INCR, lists, sets, hashes,
	// sorted sets, the LRANGEs and MSET, 20 in all.
	out, err = exec.Command("redis-benchmark", "-p", port, "-n", "1000", "-q").CombinedOutput()
	if err != nil {
		t.Fatalf("redis-benchmark (all tests): %v\n%s", err, out)
	}
	if strings.Contains(string(out), "ERR") || strings.Count(string(out), "requests per second") < 20 {
		t.Fatalf("redis-benchmark (all tests) output:\n%s", out)
	}
}
