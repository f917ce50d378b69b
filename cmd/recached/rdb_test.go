package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/server/servertest"
)

// fillCommands writes keys of every type, with an expiry, in two
// databases, and a function library.
var fillCommands = [][]string{
	{"SET", "s", "value"}, {"SET", "n", "42"}, {"SET", "long", strings.Repeat("ab", 300)},
	{"RPUSH", "l", "a", "b", "1"}, {"SADD", "set", "1", "2"}, {"SADD", "sset", "x", "y"},
	{"HSET", "h", "f", "v"}, {"ZADD", "z", "1.5", "a", "2", "b"},
	{"XADD", "st", "1-1", "f", "v"}, {"XGROUP", "CREATE", "st", "g", "0"},
	{"SET", "ttl", "v", "EX", "100000"},
	{"SELECT", "2"}, {"SET", "db2", "two"}, {"SELECT", "0"},
	{"FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', function() return 7 end)"},
}

// rdbFill runs fillCommands on redis-server, SAVEs and returns the path
// of its dump.rdb.
func rdbFill(t *testing.T, c *servertest.Client) string {
	t.Helper()
	for _, a := range append(fillCommands, []string{"SAVE"}) {
		servertest.MustDo(t, c, a...)
	}
	dir := servertest.MustDo(t, c, "CONFIG", "GET", "dir")
	parts := strings.Split(dir, "\r\n")
	return filepath.Join(parts[len(parts)-2], "dump.rdb")
}

// noPorts turns off the listeners other than RESP, whose default ports
// other tests' servers may hold.
var noPorts = []string{"--amaquet-port", "0", "--realtime-port", "0"}

// sameData compares two servers key by key through RESP.
func sameData(t *testing.T, got, want *servertest.Client) {
	t.Helper()
	for _, db := range []string{"0", "2"} {
		servertest.MustDo(t, got, "SELECT", db)
		servertest.MustDo(t, want, "SELECT", db)
		keys := strings.Split(servertest.MustDo(t, want, "KEYS", "*"), "\r\n")
		var names []string
		for i := 2; i < len(keys); i += 2 {
			names = append(names, keys[i])
		}
		slices.Sort(names)
		if g, w := servertest.MustDo(t, got, "DBSIZE"), servertest.MustDo(t, want, "DBSIZE"); g != w {
			t.Errorf("db %s: DBSIZE %q, want %q", db, g, w)
		}
		for _, k := range names {
			typ := strings.TrimSpace(strings.TrimPrefix(servertest.MustDo(t, want, "TYPE", k), "+"))
			read := map[string][]string{
				"string": {"GET", k}, "list": {"LRANGE", k, "0", "-1"}, "set": {"SORT", k, "ALPHA"},
				"hash": {"HGETALL", k}, "zset": {"ZRANGE", k, "0", "-1", "WITHSCORES"}, "stream": {"XINFO", "GROUPS", k},
			}[typ]
			for _, args := range [][]string{{"TYPE", k}, read, {"PEXPIRETIME", k}} {
				if g, w := servertest.MustDo(t, got, args...), servertest.MustDo(t, want, args...); g != w {
					t.Errorf("db %s %q: got %q, want %q", db, args, g, w)
				}
			}
		}
	}
	servertest.MustDo(t, got, "SELECT", "0")
	if g := servertest.MustDo(t, got, "FCALL", "f", "0"); g != ":7\r\n" {
		t.Errorf("FCALL f: %q", g)
	}
}

// TestStartOnRedisDump starts recached on a directory holding only a
// redis-server dump.rdb, restarts it without that file (its own snapshot
// holds the keys), exports the data as RDB and starts redis-server on the
// export; recached import converts the same file offline.
func TestStartOnRedisDump(t *testing.T) {
	redis := servertest.Dial(t, servertest.StartRedis(t))
	src := rdbFill(t, redis)
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	bin := build(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dump.rdb"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	p := startIn(t, bin, dir, noPorts...)
	c := servertest.Dial(t, p.addr)
	sameData(t, c, redis)
	// The snapshot of what was loaded is saved in the background; once it
	// is, the directory no longer needs dump.rdb.
	waitBgsave(t, c)
	if _, err := os.Stat(filepath.Join(dir, "rdb-base")); !os.IsNotExist(err) {
		t.Errorf("rdb-base after the first save: %v", err)
	}
	p.kill(t)
	os.Remove(filepath.Join(dir, "dump.rdb"))
	p = startIn(t, bin, dir, noPorts...)
	sameData(t, servertest.Dial(t, p.addr), redis)
	p.kill(t)

	out := t.TempDir()
	if b, err := exec.Command(bin, "export", "--dir", dir, filepath.Join(out, "dump.rdb")).CombinedOutput(); err != nil {
		t.Fatalf("export: %v\n%s", err, b)
	}
	back := servertest.Dial(t, servertest.StartRedis(t, "--dir", out))
	sameData(t, back, redis)
	// A directory with no recached data (here, only a dump.rdb) is not
	// exported, nor started on.
	if b, err := exec.Command(bin, "export", "--dir", out, filepath.Join(t.TempDir(), "x.rdb")).CombinedOutput(); err == nil || !strings.Contains(string(b), "no recached") {
		t.Errorf("export of a directory without recached data: %v\n%s", err, b)
	}
	if _, err := os.Stat(filepath.Join(out, "rdb-base")); !os.IsNotExist(err) {
		t.Errorf("the refused export left rdb-base: %v", err)
	}

	imp := t.TempDir()
	if b, err := exec.Command(bin, "import", "--dir", imp, src).CombinedOutput(); err != nil {
		t.Fatalf("import: %v\n%s", err, b)
	}
	p = startIn(t, bin, imp, noPorts...)
	sameData(t, servertest.Dial(t, p.addr), redis)
	p.kill(t)
	// A directory that has its own data refuses an import.
	if b, err := exec.Command(bin, "import", "--dir", imp, src).CombinedOutput(); err == nil || !strings.Contains(string(b), "already") {
		t.Errorf("a second import into %s: %v\n%s", imp, err, b)
	}
}

// TestCorruptRedisDump: a damaged dump.rdb stops the start with the file
// and the offset.
func TestCorruptRedisDump(t *testing.T) {
	redis := servertest.Dial(t, servertest.StartRedis(t))
	data, err := os.ReadFile(rdbFill(t, redis))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "dump.rdb"), data[:len(data)/2], 0o644)
	code, logs := runFailing(t, build(t), dir)
	if code == 0 || !strings.Contains(logs, filepath.Join(dir, "dump.rdb")+": offset ") {
		t.Fatalf("exit %d, logs:\n%s", code, logs)
	}
}

// TestSaveRDB: with --snapshot-format rdb, SAVE and BGSAVE also write
// dump.rdb, which redis-server starts on with the same data; a JSON key,
// which RDB has no type for and the file holds as an AUX field, is left
// out by redis-server.
func TestSaveRDB(t *testing.T) {
	bin := build(t)
	for _, save := range []string{"SAVE", "BGSAVE"} {
		t.Run(save, func(t *testing.T) {
			dir := t.TempDir()
			p := startIn(t, bin, dir, append(noPorts, "--snapshot-format", "rdb")...)
			c := servertest.Dial(t, p.addr)
			for _, a := range fillCommands {
				servertest.MustDo(t, c, a...)
			}
			servertest.MustDo(t, c, "SELECT", "5")
			servertest.MustDo(t, c, "JSET", "doc", "$", `{"a":1}`)
			servertest.MustDo(t, c, "SELECT", "0")
			servertest.MustDo(t, c, save)
			waitBgsave(t, c)
			if _, err := os.Stat(filepath.Join(dir, "dump.rdb")); err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			data, _ := os.ReadFile(filepath.Join(dir, "dump.rdb"))
			os.WriteFile(filepath.Join(out, "dump.rdb"), data, 0o644)
			redis := servertest.Dial(t, servertest.StartRedis(t, "--dir", out))
			sameData(t, c, redis)
			servertest.MustDo(t, redis, "SELECT", "5")
			if n := servertest.MustDo(t, redis, "DBSIZE"); n != ":0\r\n" {
				t.Errorf("db 5 in the RDB file: %q keys", n)
			}
		})
	}
}

// waitBgsave waits until INFO says no save runs (bounded: the saves here
// are small).
func waitBgsave(t *testing.T, c *servertest.Client) {
	t.Helper()
	for i := 0; i < 1000; i++ {
		if strings.Contains(servertest.MustDo(t, c, "INFO", "persistence"), "rdb_bgsave_in_progress:0") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the save did not end within 10 s")
}

// TestRedisConfDBFilename: a redis.conf's dir and dbfilename act as the
// flags do: recached started on Debian's file, with dir and dbfilename
// naming a dump written by redis-server, serves its keys. With protected
// configs enabled, CONFIG SET dbfilename moves where the next save in RDB
// format goes, as redis-server's next save, and redis-server starts on
// that file; a path is refused with Redis's error. A dbfilename that is
// not there means an empty start, as for redis-server.
func TestRedisConfDBFilename(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	redis := servertest.Dial(t, servertest.StartRedis(t, "--enable-protected-configs", "yes"))
	src := rdbFill(t, redis)
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	bin := build(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "from-redis.rdb"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	port, addr := freeAddr(t)
	conf := debianConf(t, t.TempDir())
	extra := "\nport " + port + "\ndir " + dir + "\ndbfilename from-redis.rdb\nenable-protected-configs yes\ndaemonize no\npidfile \"\"\nlogfile \"\"\n"
	f, err := os.OpenFile(conf, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(extra); err != nil {
		t.Fatal(err)
	}
	f.Close()
	p := startWithConf(t, bin, addr, append([]string{conf, "--snapshot-format", "rdb"}, noExtraPorts()...)...)
	c := servertest.Dial(t, addr)
	sameData(t, c, redis)
	if got := servertest.MustDo(t, c, "CONFIG", "GET", "dbfilename"); got != "*2\r\n$10\r\ndbfilename\r\n$14\r\nfrom-redis.rdb\r\n" {
		t.Errorf("CONFIG GET dbfilename: %q", got)
	}
	waitBgsave(t, c)

	for _, args := range [][]string{
		{"CONFIG", "SET", "dbfilename", "sub/next.rdb"},
		{"CONFIG", "SET", "dbfilename", "next.rdb"},
		{"CONFIG", "GET", "dbfilename"},
	} {
		got, err := c.Do(args...)
		if err != nil {
			t.Fatal(err)
		}
		want, err := redis.Do(args...)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%q: recached %q, redis-server %q", args, got, want)
		}
	}
	servertest.MustDo(t, c, "SAVE")
	p.kill(t)
	if _, err := os.Stat(filepath.Join(dir, "next.rdb")); err != nil {
		t.Fatalf("the save after CONFIG SET dbfilename: %v", err)
	}
	back := servertest.Dial(t, servertest.StartRedis(t, "--dir", dir, "--dbfilename", "next.rdb"))
	sameData(t, back, redis)

	// A dbfilename that is not in dir: an empty start, as redis-server's.
	empty := t.TempDir()
	port, addr = freeAddr(t)
	conf2 := filepath.Join(t.TempDir(), "redis.conf")
	if err := os.WriteFile(conf2, []byte("port "+port+"\ndir "+empty+"\ndbfilename absent.rdb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	startWithConf(t, bin, addr, append([]string{conf2}, noExtraPorts()...)...)
	if got := servertest.MustDo(t, servertest.Dial(t, addr), "DBSIZE"); got != ":0\r\n" {
		t.Errorf("DBSIZE with no dump: %q", got)
	}
}
