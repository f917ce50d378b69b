package server_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// closedWithin reports whether the server closes c within d: a read
// returns EOF or a reset. Anything the server sends first is discarded.
func closedWithin(t *testing.T, c net.Conn, d time.Duration) bool {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return true
}

// alive reports whether c still answers PING.
func alive(c *servertest.Client) bool {
	_ = c.Conn().SetDeadline(time.Now().Add(5 * time.Second))
	rep, err := c.Do("PING")
	return err == nil && (string(rep) == "+PONG\r\n" || strings.Contains(string(rep), "pong"))
}

// TestTimeoutClosesIdleClients sets timeout at run time and checks that an
// idle client is closed while a subscriber and a blocked client, which
// Redis exempts, are not; then that the blocked one is served.
func TestTimeoutClosesIdleClients(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	admin := servertest.Dial(t, addr)
	idle := servertest.Dial(t, addr)
	sub := servertest.Dial(t, addr)
	blocked := servertest.Dial(t, addr)
	if got := servertest.MustDo(t, sub, "SUBSCRIBE", "ch"); !strings.Contains(got, "subscribe") {
		t.Fatalf("SUBSCRIBE: %q", got)
	}
	if err := blocked.Send(servertest.Encode("BLPOP", "list", "0")); err != nil {
		t.Fatal(err)
	}
	// Blocked before timeout applies: one whose BLPOP the server has not
	// run yet is an idle client, rightly closed (seen under -race in CI).
	waitBlocked(t, admin, 1)
	if got := servertest.MustDo(t, idle, "PING"); got != "+PONG\r\n" {
		t.Fatalf("PING: %q", got)
	}
	if got := servertest.MustDo(t, admin, "CONFIG", "SET", "timeout", "1"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET timeout: %q", got)
	}
	// The idle client goes after a bit more than a second; poll up to 15 s,
	// with the admin connection kept busy so that it is not idle itself.
	deadline := time.Now().Add(15 * time.Second)
	closed := false
	for !closed && time.Now().Before(deadline) {
		servertest.MustDo(t, admin, "PING")
		closed = closedWithin(t, idle.Conn(), 200*time.Millisecond)
	}
	if !closed {
		t.Fatal("the idle client was not closed within 15 s of timeout 1")
	}
	if got := servertest.MustDo(t, admin, "CONFIG", "SET", "timeout", "0"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET timeout 0: %q", got)
	}
	if !alive(sub) {
		t.Error("the subscriber was closed")
	}
	servertest.MustDo(t, admin, "LPUSH", "list", "x")
	_ = blocked.Conn().SetReadDeadline(time.Now().Add(5 * time.Second))
	if rep, err := blocked.Read(); err != nil || !strings.Contains(string(rep), "list") {
		t.Errorf("the blocked client: %q %v", rep, err)
	}
}

// TestOutputLimitNormalClass checks client-output-buffer-limit's normal
// class: a client that pipelines large replies without reading is closed
// once the server holds more than the hard limit for it, and with the
// default (no limit) the same pipeline is served to the end.
func TestOutputLimitNormalClass(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	admin := servertest.Dial(t, addr)
	servertest.MustDo(t, admin, "SET", "big", strings.Repeat("x", 512<<10))
	const gets = 200 // 100 MB of replies, far more than socket buffers hold
	var pipeline bytes.Buffer
	for i := 0; i < gets; i++ {
		pipeline.Write(servertest.Encode("GET", "big"))
	}
	// read sends the pipeline, waits until the server holds output for
	// the connection (or has closed it), then reads every reply it can and
	// returns how many were complete.
	read := func() int {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// A PING answered first: the server has registered the client, so
		// its absence from CLIENT LIST below means it was closed, not that
		// it is not there yet (under -race it was not, and the test read
		// every reply at once).
		pong := make([]byte, len("+PONG\r\n"))
		if _, err := c.Write(servertest.Encode("PING")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, pong); err != nil || string(pong) != "+PONG\r\n" {
			t.Fatalf("PING: %q %v", pong, err)
		}
		if _, err := c.Write(pipeline.Bytes()); err != nil {
			t.Fatal(err)
		}
		// Not reading: wait until the server holds output for us or
		// has closed us (CLIENT LIST's omem, or the client gone).
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			list := servertest.MustDo(t, admin, "CLIENT", "LIST")
			if !strings.Contains(list, c.LocalAddr().String()) || strings.Contains(list, "omem=") && omemOf(list, c.LocalAddr().String()) > 1<<20 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		r := bufio.NewReaderSize(c, 1<<20)
		n := 0
		for n < gets {
			line, err := r.ReadString('\n')
			if err != nil || line != "$524288\r\n" {
				break
			}
			if _, err := r.Discard(512<<10 + 2); err != nil {
				break
			}
			n++
		}
		return n
	}
	if n := read(); n != gets {
		t.Fatalf("without a limit: %d of %d replies", n, gets)
	}
	if got := servertest.MustDo(t, admin, "CONFIG", "SET", "client-output-buffer-limit", "normal 1mb 0 0"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET: %q", got)
	}
	if n := read(); n >= gets {
		t.Fatalf("with normal 1mb: all %d replies arrived; the client should have been closed", n)
	}
	if !alive(admin) {
		t.Fatal("the admin client, which reads, was closed")
	}
}

// omemOf is the omem= of the CLIENT LIST line of the client at addr.
func omemOf(list, addr string) int {
	for _, line := range strings.Split(list, "\n") {
		if !strings.Contains(line, "addr="+addr+" ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "omem="); ok {
				n, _ := strconv.Atoi(v)
				return n
			}
		}
	}
	return 0
}

// TestOutputLimitPubSubConfigured checks that the pub/sub class follows
// CONFIG SET: with a 1 MB hard limit a subscriber that does not read is
// dropped after a few MB of messages.
func TestOutputLimitPubSubConfigured(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	admin := servertest.Dial(t, addr)
	if got := servertest.MustDo(t, admin, "CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 0 0"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET: %q", got)
	}
	sub := servertest.Dial(t, addr)
	servertest.MustDo(t, sub, "SUBSCRIBE", "ch")
	msg := strings.Repeat("m", 64<<10)
	// 32 MB at most: far past 1 MB plus what the socket buffers take.
	for i := 0; i < 512; i++ {
		servertest.MustDo(t, admin, "PUBLISH", "ch", msg)
		if got := servertest.MustDo(t, admin, "PUBSUB", "NUMSUB", "ch"); strings.HasSuffix(got, ":0\r\n") {
			return
		}
	}
	t.Fatal("the subscriber was not dropped after 32 MB with a 1 MB hard limit")
}

// rawExchange sends raw bytes to addr and returns what the server sends
// back until it closes the connection (or 10 s pass).
func rawExchange(t *testing.T, addr string, prelude []string, raw []byte) (string, bool) {
	t.Helper()
	c := servertest.Dial(t, addr)
	for _, cmd := range prelude {
		servertest.MustDo(t, c, strings.Fields(cmd)...)
	}
	// The server may close the connection before it has taken all of raw
	// (the query buffer limit): a failed write is what the read shows next.
	_ = c.Send(raw)
	_ = c.Conn().SetReadDeadline(time.Now().Add(10 * time.Second))
	var out bytes.Buffer
	_, err := io.Copy(&out, c.Conn())
	var ne net.Error
	timedOut := errors.As(err, &ne) && ne.Timeout()
	return out.String(), !timedOut
}

// TestRequestLimitsAgainstRedis compares proto-max-bulk-len and
// client-query-buffer-limit with redis-server: the reply (or none) and
// whether the connection is closed.
func TestRequestLimitsAgainstRedis(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	redis := servertest.StartRedis(t)
	ours, _ := servertest.StartRecached(t, server.DefaultConfig())
	bulk := func(n int) []byte {
		return []byte(fmt.Sprintf("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n%s\r\n", n, strings.Repeat("v", n)))
	}
	tests := []struct {
		name    string
		prelude []string
		raw     []byte
	}{
		{"bulk over proto-max-bulk-len", []string{"CONFIG SET proto-max-bulk-len 1mb"}, bulk(1<<20 + 1)},
		{"bulk at proto-max-bulk-len", []string{"CONFIG SET proto-max-bulk-len 1mb"}, append(bulk(1<<20), "QUIT\r\n"...)},
		// A bulk announced at 3 MB with 2 MB sent: the query buffer passes
		// the 1 MB limit before the request is complete.
		{"query buffer limit", []string{"CONFIG SET proto-max-bulk-len 64mb client-query-buffer-limit 1mb"}, bulk(3 << 20)[:2<<20]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, wantClosed := rawExchange(t, redis, tt.prelude, tt.raw)
			got, gotClosed := rawExchange(t, ours, tt.prelude, tt.raw)
			if got != want || gotClosed != wantClosed {
				t.Errorf("recached %q closed=%v; redis-server %q closed=%v", got, gotClosed, want, wantClosed)
			}
		})
	}
}

// TestHzAndKeepAlive checks that hz is clamped as Redis clamps it and
// shown by INFO, and that tcp-keepalive is set on new connections: the
// kernel shows a keep-alive timer on the server's end of the socket
// (/proc/net/tcp) with the period configured, none with 0.
func TestHzAndKeepAlive(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	admin := servertest.Dial(t, addr)
	for _, tt := range []struct{ set, want string }{{"100", "100"}, {"1000", "500"}, {"0", "1"}, {"10", "10"}} {
		servertest.MustDo(t, admin, "CONFIG", "SET", "hz", tt.set)
		if got := servertest.MustDo(t, admin, "CONFIG", "GET", "hz"); !strings.HasSuffix(got, "$"+strconv.Itoa(len(tt.want))+"\r\n"+tt.want+"\r\n") {
			t.Errorf("hz %s: CONFIG GET %q", tt.set, got)
		}
		if info := servertest.MustDo(t, admin, "INFO", "server"); !strings.Contains(info, "\r\nhz:"+tt.want+"\r\n") {
			t.Errorf("hz %s: INFO lacks hz:%s", tt.set, tt.want)
		}
	}
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp")
	}
	for _, tt := range []struct {
		secs  int
		timer bool
	}{{60, true}, {0, false}} {
		servertest.MustDo(t, admin, "CONFIG", "SET", "tcp-keepalive", strconv.Itoa(tt.secs))
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		cl := servertest.Dial(t, addr) // a PING on c's neighbour proves the server accepted c
		servertest.MustDo(t, cl, "PING")
		timer, when := serverSocketTimer(t, addr, c.LocalAddr().String())
		if timer != tt.timer {
			t.Errorf("tcp-keepalive %d: keep-alive timer %v", tt.secs, timer)
		}
		if tt.timer && (when <= 0 || when > time.Duration(tt.secs)*time.Second) {
			t.Errorf("tcp-keepalive %d: timer due in %v", tt.secs, when)
		}
		c.Close()
	}
}

// serverSocketTimer finds in /proc/net/tcp the server's end of the
// connection from client to server and returns whether its keep-alive
// timer runs and when it is due.
func serverSocketTimer(t *testing.T, server, client string) (bool, time.Duration) {
	t.Helper()
	hexAddr := func(a string) string {
		h, p, _ := net.SplitHostPort(a)
		ip := net.ParseIP(h).To4()
		port, _ := strconv.Atoi(p)
		return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], port)
	}
	local, remote := hexAddr(server), hexAddr(client)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile("/proc/net/tcp")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) < 6 || f[1] != local || f[2] != remote {
				continue
			}
			// f[5] is "timer:jiffies until due" in hex; timer 2 is
			// keep-alive, 1 retransmission (right after a write: wait).
			tm, due, _ := strings.Cut(f[5], ":")
			if tm != "00" && tm != "02" && time.Now().Before(deadline) {
				continue
			}
			j, _ := strconv.ParseUint(due, 16, 64)
			return tm == "02", time.Duration(j) * time.Second / 100
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no socket %s -> %s in /proc/net/tcp", client, server)
	return false, 0
}

// TestTimeoutSparesSlowUpload checks that a client sending a large request
// slowly, each part within timeout, is not closed as idle, as in Redis
// (its last interaction is its last read): the request completes.
func TestTimeoutSparesSlowUpload(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	admin := servertest.Dial(t, addr)
	servertest.MustDo(t, admin, "CONFIG", "SET", "timeout", "1")
	slow := servertest.Dial(t, addr)
	const parts, size = 20, 5000 // 20 parts 250 ms apart: 5 s, past the timeout
	if err := slow.Send([]byte(fmt.Sprintf("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n", parts*size))); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < parts; i++ {
		time.Sleep(250 * time.Millisecond) // the pace of the slow client under test
		if err := slow.Send(bytes.Repeat([]byte("v"), size)); err != nil {
			t.Fatalf("part %d: %v (closed as idle?)", i, err)
		}
	}
	if err := slow.Send([]byte("\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = slow.Conn().SetReadDeadline(time.Now().Add(5 * time.Second))
	if rep, err := slow.Read(); err != nil || string(rep) != "+OK\r\n" {
		t.Fatalf("the slow upload: %q %v", rep, err)
	}
}
