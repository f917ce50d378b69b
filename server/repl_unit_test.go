package server_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/server/tcp"
	"github.com/recached/recached/snapshot/rdb"
)

// streamReader is a raw replica: it syncs with PSYNC ? -1 (diskless) and
// then reads the primary's stream command by command.
type streamReader struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

// rawReplica attaches a raw replica to the recached primary at addr.
func rawReplica(t *testing.T, addr string) *streamReader {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	sr := &streamReader{t: t, conn: conn, r: bufio.NewReader(conn)}
	fmt.Fprint(conn, "REPLCONF capa eof capa psync2\r\n")
	if got := sr.line(); got != "+OK\r\n" {
		t.Fatalf("REPLCONF: %q", got)
	}
	fmt.Fprint(conn, "PSYNC ? -1\r\n")
	m := regexp.MustCompile(`^\+FULLRESYNC [0-9a-f]{40} (\d+)\r\n$`).FindStringSubmatch(sr.line())
	if m == nil {
		t.Fatal("no +FULLRESYNC")
	}
	eof := sr.line()
	if !strings.HasPrefix(eof, "$EOF:") || len(eof) != 47 {
		t.Fatalf("image header %q", eof)
	}
	mark := []byte(eof[5:45])
	var img []byte
	for !bytes.HasSuffix(img, mark) {
		b, err := sr.r.ReadByte()
		if err != nil {
			t.Fatal(err)
		}
		img = append(img, b)
	}
	fmt.Fprint(conn, "REPLCONF ACK "+m[1]+"\r\n")
	return sr
}

func (sr *streamReader) line() string {
	sr.t.Helper()
	_ = sr.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	s, err := sr.r.ReadString('\n')
	if err != nil {
		sr.t.Fatal(err)
	}
	return s
}

// next returns the stream's next command but PING and REPLCONF (the
// primary's keep-alive and WAIT's GETACK), its verb in upper case and a
// DEDUP mark's PING as "MARK <message>".
func (sr *streamReader) next() []string {
	sr.t.Helper()
	for {
		n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(sr.line(), "*")))
		if err != nil {
			sr.t.Fatalf("stream: %v", err)
		}
		args := make([]string, n)
		for i := range args {
			size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(sr.line(), "$")))
			if err != nil {
				sr.t.Fatalf("stream: %v", err)
			}
			b := make([]byte, size+2)
			if _, err := ioReadFull(sr.r, b); err != nil {
				sr.t.Fatal(err)
			}
			args[i] = string(b[:size])
		}
		args[0] = strings.ToUpper(args[0])
		switch {
		case args[0] == "PING" && len(args) == 2 && strings.HasPrefix(args[1], "recached-dedup "):
			return []string{"MARK", args[1]}
		case args[0] == "PING" || args[0] == "REPLCONF":
			continue
		}
		return args
	}
}

// verbs reads n commands of the stream and returns their verbs.
func (sr *streamReader) verbs(n int) string {
	sr.t.Helper()
	v := make([]string, n)
	for i := range v {
		v[i] = sr.next()[0]
	}
	return strings.Join(v, " ")
}

// primaryAndReplicas starts a recached primary with a recached replica and
// a redis-server replica, both linked up, and returns their addresses.
func primaryAndReplicas(t *testing.T) (primary, recachedReplica, redisReplicaAddr string) {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Dir = t.TempDir()
	a, _ := servertest.StartRecached(t, cfg)
	cfg.Dir = t.TempDir()
	b, _ := servertest.StartRecached(t, cfg)
	ah, ap, _ := net.SplitHostPort(a)
	servertest.MustDo(t, servertest.Dial(t, b), "replicaof", ah, ap)
	port, _ := tcp.FreePort()
	rr, _ := redisReplica(t, a, t.TempDir(), port)
	linkUp(t, b)
	linkUp(t, rr)
	return a, b, rr
}

// TestTransactionsReplicateAsUnits: the writes of EXEC, of a script
// (EVAL, FCALL) and of DEDUP-wrapped commands inside EXEC reach the
// replicas as one MULTI … EXEC, as Redis 7.0 propagates them, so that a
// replica applies them atomically; a transaction or script that wrote
// nothing sends nothing, and plain writes stay bare. A redis-server
// replica and a recached replica of the primary end with its data at
// its offset, and the recached one, promoted, has every mark.
func TestTransactionsReplicateAsUnits(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	a, b, rr := primaryAndReplicas(t)
	ca, cb := servertest.Dial(t, a), servertest.Dial(t, b)
	sr := rawReplica(t, a)
	servertest.MustDo(t, ca, "function", "load", "#!lua name=lib\nredis.register_function('two', function(keys) redis.call('set', keys[1], 'f') return redis.call('incr', keys[2]) end)")
	if got := sr.verbs(2); got != "SELECT FUNCTION" {
		t.Fatalf("FUNCTION LOAD: %s", got)
	}
	steps := []struct {
		name string
		cmds [][]string
		want string // the stream's verbs
	}{
		{"plain write", [][]string{{"set", "x", "1"}}, "SET"},
		{"transaction", [][]string{{"multi"}, {"set", "a", "1"}, {"incr", "n"}, {"lpush", "l", "x"}, {"exec"}}, "MULTI SET SET LPUSH EXEC"},
		{"one write in a transaction", [][]string{{"multi"}, {"get", "a"}, {"set", "b", "1"}, {"exec"}}, "MULTI SET EXEC"},
		{"transaction without writes", [][]string{{"multi"}, {"get", "a"}, {"exec"}, {"set", "y", "1"}}, "SET"},
		{"script", [][]string{{"eval", "redis.call('set', KEYS[1], '1') redis.call('rpush', KEYS[2], 'a', 'b') return 1", "2", "s1", "s2"}}, "MULTI SET RPUSH EXEC"},
		{"flagged script", [][]string{{"eval", "#!lua\nredis.call('sadd', 'st', 'a') return redis.call('del', 'y')", "0"}}, "MULTI SADD DEL EXEC"},
		{"function", [][]string{{"fcall", "two", "2", "f1", "f2"}}, "MULTI SET SET EXEC"},
		{"script without writes", [][]string{{"eval", "return redis.call('get', 'x')", "0"}, {"set", "y", "2"}}, "SET"},
		{"script in a transaction", [][]string{{"multi"}, {"set", "q", "1"}, {"eval", "redis.call('incr', 'q') return redis.call('incr', 'q')", "0"}, {"exec"}}, "MULTI SET SET SET EXEC"},
		{"databases", [][]string{{"multi"}, {"select", "3"}, {"set", "z", "1"}, {"select", "0"}, {"set", "z0", "1"}, {"exec"}}, "MULTI SELECT SET SELECT SET EXEC"},
		{"DEDUP in a transaction", [][]string{{"multi"}, {"dedup", "cl", "1", "incr", "m"}, {"dedup", "cl", "2", "get", "m"}, {"dedup", "cl", "3", "incr", "m"}, {"exec"}}, "MULTI MARK SET MARK MARK SET EXEC"},
		{"DEDUP alone", [][]string{{"dedup", "cl", "4", "incr", "m"}}, "MULTI MARK SET EXEC"},
	}
	for _, st := range steps {
		for _, c := range st.cmds {
			if got := servertest.MustDo(t, ca, c...); strings.HasPrefix(got, "-") {
				t.Fatalf("%s: %q: %s", st.name, c, got)
			}
		}
		if got := sr.verbs(len(strings.Fields(st.want))); got != st.want {
			t.Errorf("%s: the stream has %s, want %s", st.name, got, st.want)
		}
	}
	if got := servertest.MustDo(t, ca, "wait", "2", "10000"); got != ":2\r\n" {
		t.Errorf("WAIT 2: %q", got)
	}
	caughtUp(t, a, rr)
	caughtUp(t, a, b)
	sameData(t, a, rr)
	sameData(t, a, b)
	for _, k := range []string{"n", "q", "m", "f2", "z0"} {
		if got, want := servertest.MustDo(t, servertest.Dial(t, rr), "get", k), servertest.MustDo(t, ca, "get", k); got != want {
			t.Errorf("redis-server replica: %s = %q, primary %q", k, got, want)
		}
	}
	servertest.MustDo(t, cb, "replicaof", "no", "one")
	for id := 1; id <= 4; id++ {
		if got := servertest.MustDo(t, cb, "dedup", "cl", strconv.Itoa(id), "incr", "m"); got != "+DUP\r\n" {
			t.Errorf("promoted replica: DEDUP cl %d = %q, want +DUP", id, got)
		}
	}
}

// TestReplicaDropsPartialUnit: a master (this test, speaking the
// protocol) sends a recached replica a write, then a transaction cut by
// the end of the connection before its EXEC. The replica applies the
// write, not the transaction's part, and offers the master the offset
// before its MULTI; sent again whole after +CONTINUE, the transaction
// applies.
func TestReplicaDropsPartialUnit(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var img bytes.Buffer
	w := rdb.NewWriter(&img, time.Now().Unix())
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	const id = "0123456789012345678901234567890123456789"
	pre := string(servertest.Encode("select", "0")) + string(servertest.Encode("set", "pre", "1"))
	unit := string(servertest.Encode("multi")) + string(servertest.Encode("set", "a", "1")) + string(servertest.Encode("set", "b", "1"))
	end := string(servertest.Encode("exec"))
	psyncs := make(chan string, 2)
	proceed := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(proceed) }) }
	defer release()
	go func() {
		for i := 0; i < 2; i++ {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			r := bufio.NewReader(conn)
			for {
				args := readCommand(r)
				if args == nil {
					break
				}
				switch strings.ToLower(args[0]) {
				case "ping":
					fmt.Fprint(conn, "+PONG\r\n")
				case "replconf":
					if !strings.EqualFold(args[1], "ack") {
						fmt.Fprint(conn, "+OK\r\n")
					}
					continue
				case "psync":
					psyncs <- args[1] + " " + args[2]
					if i == 0 {
						fmt.Fprintf(conn, "+FULLRESYNC %s 100\r\n$%d\r\n%s", id, img.Len(), img.Bytes())
						time.Sleep(200 * time.Millisecond)
						fmt.Fprint(conn, pre+unit)
						time.Sleep(500 * time.Millisecond)
					} else {
						<-proceed // the test looks at the replica first
						fmt.Fprintf(conn, "+CONTINUE %s\r\n%s", id, unit+end)
						time.Sleep(time.Second)
					}
				default:
					fmt.Fprint(conn, "-ERR unexpected\r\n")
					continue
				}
				if strings.EqualFold(args[0], "psync") {
					break
				}
			}
			conn.Close()
		}
	}()
	cfg := server.DefaultConfig()
	cfg.Dir = t.TempDir()
	addr, _ := servertest.StartRecached(t, cfg)
	c := servertest.Dial(t, addr)
	mh, mp, _ := net.SplitHostPort(ln.Addr().String())
	servertest.MustDo(t, c, "replicaof", mh, mp)
	<-psyncs // the replica's own id and offset: a full sync follows
	select {
	case got := <-psyncs:
		want := id + " " + strconv.Itoa(100+len(pre)+1)
		if got != want {
			t.Errorf("second PSYNC %q, want %q (the offset before MULTI)", got, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no second PSYNC")
	}
	// Between the two links: the write applied, not the cut transaction.
	if got := servertest.MustDo(t, c, "mget", "pre", "a", "b"); got != "*3\r\n$1\r\n1\r\n$-1\r\n$-1\r\n" {
		t.Errorf("after the cut: pre, a, b = %q", got)
	}
	release()
	waitFor(t, "the whole transaction", func() bool {
		return servertest.MustDo(t, c, "mget", "a", "b") == "*2\r\n$1\r\n1\r\n$1\r\n1\r\n"
	})
	if o := infoInt(t, c, "replication", "slave_repl_offset"); o != int64(100+len(pre)+len(unit)+len(end)) {
		t.Errorf("slave_repl_offset %d, want %d", o, 100+len(pre)+len(unit)+len(end))
	}
}

// readCommand reads one RESP array of bulk strings, nil at the end of
// the connection.
func readCommand(r *bufio.Reader) []string {
	line, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "*") {
		return nil
	}
	n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
	args := make([]string, 0, n)
	for i := 0; i < n; i++ {
		h, err := r.ReadString('\n')
		if err != nil {
			return nil
		}
		size, _ := strconv.Atoi(strings.TrimSpace(h[1:]))
		b := make([]byte, size+2)
		if _, err := ioReadFull(r, b); err != nil {
			return nil
		}
		args = append(args, string(b[:size]))
	}
	return args
}

// TestFullSyncCarriesJSONAndRateLimits: JSON documents and rate limiters,
// which RDB has no type for, travel in the full-sync image as AUX fields
// (snapshot/rdb/extras.go): a recached replica, disk-based and diskless,
// has them with their expiry; a redis-server replica of the same primary
// loads the image with every other key and without them.
func TestFullSyncCarriesJSONAndRateLimits(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	for _, diskless := range []string{"yes", "no"} {
		t.Run("diskless="+diskless, func(t *testing.T) {
			cfg := server.DefaultConfig()
			cfg.Dir = t.TempDir()
			a, _ := servertest.StartRecached(t, cfg)
			ca := servertest.Dial(t, a)
			servertest.MustDo(t, ca, "config", "set", "repl-diskless-sync", diskless)
			far := strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)
			big := `{"list":[` + strings.Repeat(`"item",`, 2000) + `1],"n":9007199254740993,"s":"\u00e9\n"}`
			setup := [][]string{
				{"set", "plain", "1"},
				{"jset", "doc", "$", big},
				{"jset", "ttl", "$", `{"a":[1,2,{"b":null}]}`}, {"pexpireat", "ttl", far},
				{"throttle", "rl", "10", "10", "3600", "3"},
				{"select", "2"},
				{"jset", "doc2", "$", `"x"`},
				{"throttle", "rl2", "5", "1", "60"}, {"pexpireat", "rl2", far},
				{"select", "0"},
			}
			for _, c := range setup {
				if got := servertest.MustDo(t, ca, c...); strings.HasPrefix(got, "-") {
					t.Fatalf("%q: %s", c, got)
				}
			}
			cfg.Dir = t.TempDir()
			b, _ := servertest.StartRecached(t, cfg)
			cb := servertest.Dial(t, b)
			ah, ap, _ := net.SplitHostPort(a)
			servertest.MustDo(t, cb, "replicaof", ah, ap)
			port, _ := tcp.FreePort()
			rr, _ := redisReplica(t, a, t.TempDir(), port)
			linkUp(t, b)
			linkUp(t, rr)
			for _, db := range []string{"0", "2"} {
				servertest.MustDo(t, ca, "select", db)
				servertest.MustDo(t, cb, "select", db)
				keys := map[string][]string{"0": {"plain", "doc", "ttl", "rl"}, "2": {"doc2", "rl2"}}[db]
				for _, k := range keys {
					for _, q := range [][]string{{"type", k}, {"pexpiretime", k}, {"jget", k}} {
						if q[0] == "jget" && strings.HasPrefix(k, "rl") || q[0] == "jget" && k == "plain" {
							continue
						}
						if got, want := servertest.MustDo(t, cb, q...), servertest.MustDo(t, ca, q...); got != want {
							t.Errorf("db %s: %q on the replica %.100q, on the primary %.100q", db, q, got, want)
						}
					}
				}
			}
			// The limiters' state: promoted, the replica answers THROTTLE
			// as the primary does.
			servertest.MustDo(t, cb, "replicaof", "no", "one")
			for _, db := range []string{"0", "2"} {
				servertest.MustDo(t, ca, "select", db)
				servertest.MustDo(t, cb, "select", db)
				k := map[string]string{"0": "rl", "2": "rl2"}[db]
				q := []string{"throttle", k, "10", "10", "3600", "0"}
				if db == "2" {
					q = []string{"throttle", k, "5", "1", "60", "0"}
				}
				if got, want := servertest.MustDo(t, cb, q...), servertest.MustDo(t, ca, q...); got != want {
					t.Errorf("db %s: %q on the promoted replica %q, on the primary %q", db, q, got, want)
				}
			}
			cr := servertest.Dial(t, rr)
			if got := servertest.MustDo(t, cr, "mget", "plain", "doc"); got != "*2\r\n$1\r\n1\r\n$-1\r\n" {
				t.Errorf("redis-server replica: plain, doc = %q", got)
			}
			servertest.MustDo(t, cr, "select", "2")
			if got := servertest.MustDo(t, cr, "dbsize"); got != ":0\r\n" {
				t.Errorf("redis-server replica: db 2 holds %q keys", got)
			}
		})
	}
}
