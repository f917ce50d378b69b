package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/server/tcp"
)

// infoField returns one field of INFO persistence.
func infoField(t *testing.T, c *servertest.Client, name string) string {
	t.Helper()
	rep, err := c.Do("INFO", "persistence")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(rep), "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO persistence has no %s:\n%s", name, rep)
	return ""
}

// waitAcked waits, bounded, until a holds at least n acknowledged writes.
func waitAcked(t *testing.T, a *acked, n int64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for a.n.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d acknowledged writes, want %d", a.n.Load(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestConfigSetAppendOnlyOn turns the log on at run time while clients
// write, then kills the process: a restart has every acknowledged write,
// those before the switch (in the base the switch writes) and those after
// (in the log), whether CONFIG SET ran alone or inside MULTI/EXEC.
func TestConfigSetAppendOnlyOn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the real binary")
	}
	bin := build(t)
	cases := []struct {
		name string
		set  [][]string // the commands that turn the log on, with their replies
		want []string
	}{
		{"alone", [][]string{{"CONFIG", "SET", "appendonly", "yes"}}, []string{"+OK\r\n"}},
		{"in MULTI", [][]string{{"MULTI"}, {"CONFIG", "SET", "appendonly", "yes"}, {"EXEC"}},
			[]string{"+OK\r\n", "+QUEUED\r\n", "*1\r\n+OK\r\n"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := startIn(t, bin, dir, "--appendonly", "no")
			fill(t, p.addr, 50000)
			admin := servertest.Dial(t, p.addr)
			if got := infoField(t, admin, "aof_enabled"); got != "0" {
				t.Fatalf("aof_enabled before: %s", got)
			}
			a := &acked{vals: map[string]string{}}
			stop := make(chan struct{})
			wg := writers(t, p.addr, 4, 10, stop, a, "w")
			waitAcked(t, a, 5000)
			for i, args := range tc.set {
				if got, err := admin.Do(args...); err != nil || string(got) != tc.want[i] {
					t.Fatalf("%q: %q %v, want %q", args, got, err, tc.want[i])
				}
			}
			atOK := a.n.Load()
			if got := infoField(t, admin, "aof_enabled"); got != "1" {
				t.Fatalf("aof_enabled after CONFIG SET appendonly yes: %s", got)
			}
			if got, _ := admin.Do("CONFIG", "GET", "appendonly"); string(got) != "*2\r\n$10\r\nappendonly\r\n$3\r\nyes\r\n" {
				t.Fatalf("CONFIG GET appendonly: %q", got)
			}
			// The writers keep going after the OK; kill while they do.
			waitAcked(t, a, atOK+10000)
			p.kill(t)
			close(stop)
			wg.Wait()
			t.Logf("%d writes acknowledged, %d of them after the OK", a.n.Load(), a.n.Load()-atOK)
			// The same command line: recached replays the logs it finds
			// whatever appendonly says.
			p2 := startIn(t, bin, dir, "--appendonly", "no")
			verify(t, p2.addr, a)
			// Besides the acknowledged keys, a batch each writer had sent
			// and not yet seen answered may have been applied and logged.
			if n, acked := dbsize(t, p2.addr), 50000+len(a.vals); n < acked || n > acked+4*10 {
				t.Errorf("DBSIZE after restart: %d, want %d acknowledged keys and at most 40 in flight", n, acked)
			}
		})
	}
}

// TestConfigSetAppendOnlyOff turns the log off at run time: the writes
// acknowledged before the switch survive a SIGKILL (they are in the log,
// fsynced and closed by the switch), those after it are lost, as no log
// and no save holds them. Redis loses the same ones when restarted on its
// append-only files (a config file still saying appendonly yes); restarted
// with appendonly no it loads its last RDB file and loses the earlier
// ones too.
func TestConfigSetAppendOnlyOff(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the real binary")
	}
	bin := build(t)
	dir := t.TempDir()
	p := startIn(t, bin, dir, "--appendonly", "yes", "--appendfsync", "everysec")
	c := servertest.Dial(t, p.addr)
	do := func(want string, args ...string) {
		t.Helper()
		if got, err := c.Do(args...); err != nil || string(got) != want {
			t.Fatalf("%q: %q %v, want %q", args, got, err, want)
		}
	}
	for i := 0; i < 1000; i++ {
		do("+OK\r\n", "SET", "before:"+strconv.Itoa(i), strconv.Itoa(i))
	}
	do("+OK\r\n", "CONFIG", "SET", "appendonly", "no")
	if got := infoField(t, c, "aof_enabled"); got != "0" {
		t.Fatalf("aof_enabled after CONFIG SET appendonly no: %s", got)
	}
	do("*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n", "CONFIG", "GET", "appendonly")
	for i := 0; i < 1000; i++ {
		do("+OK\r\n", "SET", "after:"+strconv.Itoa(i), strconv.Itoa(i))
	}
	do("+OK\r\n", "SET", "before:0", "changed after")
	p.kill(t)
	p2 := startIn(t, bin, dir, "--appendonly", "yes")
	c2 := servertest.Dial(t, p2.addr)
	for i := 0; i < 1000; i++ {
		k := strconv.Itoa(i)
		if got, _ := c2.Do("GET", "before:"+k); string(got) != "$"+strconv.Itoa(len(k))+"\r\n"+k+"\r\n" {
			t.Fatalf("GET before:%s after the restart: %q, want %q (written before appendonly no)", k, got, k)
		}
	}
	if n := dbsize(t, p2.addr); n != 1000 {
		t.Errorf("DBSIZE after the restart: %d, want the 1000 keys written before appendonly no", n)
	}
}

// TestConfigSetAppendOnlyRewrite checks that CONFIG REWRITE writes the
// value set at run time and that a start on the file has it on.
func TestConfigSetAppendOnlyRewrite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := build(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "recached.conf")
	if err := os.WriteFile(conf, []byte("# the log starts off\nappendonly no\nsave \"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func() *proc {
		port, err := tcp.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		return startWithConf(t, bin, addr, conf, "--port", strconv.Itoa(port), "--ws-port", "0", "--amaquet-port", "0", "--dir", dir)
	}
	p := start()
	c := servertest.Dial(t, p.addr)
	for _, args := range [][]string{{"SET", "k", "v"}, {"CONFIG", "SET", "appendonly", "yes"}, {"CONFIG", "REWRITE"}, {"SET", "k2", "v2"}} {
		if got, err := c.Do(args...); err != nil || string(got) != "+OK\r\n" {
			t.Fatalf("%q: %q %v", args, got, err)
		}
	}
	b, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\nappendonly yes\n") || !strings.Contains(string(b), "# the log starts off\n") {
		t.Fatalf("the rewritten file:\n%s", b)
	}
	p.kill(t)
	p2 := start()
	c2 := servertest.Dial(t, p2.addr)
	if got := infoField(t, c2, "aof_enabled"); got != "1" {
		t.Fatalf("aof_enabled after a start on the rewritten file: %s", got)
	}
	for k, v := range map[string]string{"k": "v", "k2": "v2"} {
		if got, _ := c2.Do("GET", k); string(got) != "$"+strconv.Itoa(len(v))+"\r\n"+v+"\r\n" {
			t.Fatalf("GET %s: %q", k, got)
		}
	}
}
