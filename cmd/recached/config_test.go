package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/server/tcp"
)

func TestParseFlagsConfigFile(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(conf, []byte("port 7001\nappendonly no\nmaxclients 50\ntimeout 30\nsave 900 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, c server.Config)
	}{
		{"file first", []string{conf}, func(t *testing.T, c server.Config) {
			if c.Port != 7001 || c.AppendOnly || c.MaxClients != 50 || c.Params["timeout"] != "30" || c.Save != "900 1" || c.ConfigFile != conf {
				t.Errorf("got %+v", c)
			}
		}},
		{"--config", []string{"--config", conf, "--ws-port", "0"}, func(t *testing.T, c server.Config) {
			if c.Port != 7001 || c.WSPort != 0 || c.ConfigFile != conf {
				t.Errorf("got %+v", c)
			}
		}},
		{"--config=", []string{"--config=" + conf}, func(t *testing.T, c server.Config) {
			if c.Port != 7001 {
				t.Errorf("got %+v", c)
			}
		}},
		{"flags override the file", []string{conf, "--port", "7002", "--appendonly", "yes", "--maxclients=9"}, func(t *testing.T, c server.Config) {
			if c.Port != 7002 || !c.AppendOnly || c.MaxClients != 9 {
				t.Errorf("got %+v", c)
			}
		}},
		{"redis-style directives", []string{conf, "--timeout", "5", "--hash-max-ziplist-entries", "64", "--daemonize", "no", "--oom-score-adj-values", "0", "100", "200"}, func(t *testing.T, c server.Config) {
			if c.Params["timeout"] != "5" || c.Params["hash-max-listpack-entries"] != "64" || c.Params["daemonize"] != "no" || c.Params["oom-score-adj-values"] != "0 100 200" {
				t.Errorf("params %v", c.Params)
			}
		}},
		{"directive without a file", []string{"--tcp-keepalive", "60"}, func(t *testing.T, c server.Config) {
			if c.Params["tcp-keepalive"] != "60" || c.ConfigFile != "" {
				t.Errorf("got %+v", c)
			}
		}},
		// The cases of Redis's "redis-server command line arguments" tests.
		{"name and value in one argument", []string{"--tcp-keepalive 60", "--port 7003"}, func(t *testing.T, c server.Config) {
			if c.Params["tcp-keepalive"] != "60" || c.Port != 7003 {
				t.Errorf("got %+v", c)
			}
		}},
		{"value with the -- prefix", []string{"--proc-title-template", "--my--title--template", "--loglevel", "verbose"}, func(t *testing.T, c server.Config) {
			if c.Params["proc-title-template"] != "--my--title--template" || c.Params["loglevel"] != "verbose" {
				t.Errorf("params %v", c.Params)
			}
		}},
		{"one value with the -- prefix in one argument", []string{"--proc-title-template --my--title--template", "--loglevel verbose"}, func(t *testing.T, c server.Config) {
			if c.Params["proc-title-template"] != "--my--title--template" || c.Params["loglevel"] != "verbose" {
				t.Errorf("params %v", c.Params)
			}
		}},
		{"save with empty input first", []string{"--save", "--loglevel", "verbose"}, func(t *testing.T, c server.Config) {
			if c.Save != "" || c.Params["loglevel"] != "verbose" {
				t.Errorf("got %+v", c)
			}
		}},
		{"save with empty input last", []string{"--loglevel", "verbose", "--save"}, func(t *testing.T, c server.Config) {
			if c.Save != "" || c.Params["loglevel"] != "verbose" {
				t.Errorf("got %+v", c)
			}
		}},
		{"save empty string", []string{"--save", "", "--loglevel", "verbose"}, func(t *testing.T, c server.Config) {
			if c.Save != "" {
				t.Errorf("got %+v", c)
			}
		}},
		{"title --save then save", []string{"--proc-title-template", "--save", "--save", "", "--loglevel", "verbose"}, func(t *testing.T, c server.Config) {
			if c.Params["proc-title-template"] != "--save" || c.Save != "" || c.Params["loglevel"] != "verbose" {
				t.Errorf("got %+v", c)
			}
		}},
		{"save rules as redis-server takes them", []string{"--save", "900", "1", "300", "10"}, func(t *testing.T, c server.Config) {
			if c.Save != "900 1 300 10" {
				t.Errorf("save %q", c.Save)
			}
		}},
		{"save as the flag took it", []string{"--save", "900 1"}, func(t *testing.T, c server.Config) {
			if c.Save != "900 1" {
				t.Errorf("save %q", c.Save)
			}
		}},
		{"multi-arg value", []string{"--shutdown-on-sigint", "nosave", "force", "now", "--shutdown-on-sigterm", "nosave force"}, func(t *testing.T, c server.Config) {
			if c.Params["shutdown-on-sigint"] != "nosave now force" || c.Params["shutdown-on-sigterm"] != "nosave force" {
				t.Errorf("params %v", c.Params)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			cfg, err := parseFlags(tt.args, &out)
			if err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			tt.check(t, cfg)
		})
	}
	bad := []struct {
		args []string
		want string
	}{
		{[]string{filepath.Join(dir, "none.conf")}, "can't open config file"},
		{[]string{conf, "--nosuch", "1"}, "Usage: recached"},
		{[]string{conf, "--timeout", "x"}, "argument couldn't be parsed into an integer"},
		{[]string{"--config"}, "--config needs a file"},
		// Redis's error cases (those with a flag of ours are the flag's).
		{[]string{"--loglevel"}, ">>> 'loglevel'\nwrong number of arguments"},
		{[]string{"--loglevel", "--timeout", "5"}, ">>> 'loglevel \"--timeout\" \"5\"'\nwrong number of arguments"},
		{[]string{"--logfile", "--my--log--file", "--loglevel", "--bla"}, ">>> 'loglevel \"--bla\"'\nargument(s) must be one of the following"},
		{[]string{"--shutdown-on-sigint"}, ">>> 'shutdown-on-sigint'\nwrong number of arguments"},
		{[]string{"--shutdown-on-sigint", "now force", "--shutdown-on-sigterm"}, ">>> 'shutdown-on-sigterm'\nwrong number of arguments"},
	}
	for _, tt := range bad {
		var out bytes.Buffer
		if _, err := parseFlags(tt.args, &out); err == nil || !strings.Contains(out.String(), tt.want) {
			t.Errorf("%q: err %v, output %q; want %q", tt.args, err, out.String(), tt.want)
		}
	}
}

// noExtraPorts returns the flags turning off every listener but RESP's
// (the WebSocket, and whichever others the binary has).
func noExtraPorts() []string {
	var out []string
	for _, f := range []string{"ws-port", "amaquet-port", "realtime-port"} {
		if _, err := parseFlags([]string{"--" + f, "0"}, io.Discard); err == nil {
			out = append(out, "--"+f, "0")
		}
	}
	return out
}

// freeAddr returns a free loopback port and its address.
func freeAddr(t *testing.T) (string, string) {
	t.Helper()
	port, err := tcp.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(port), net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// debianConf copies Debian's redis.conf (Redis 7.0's shipped file) into
// dir, unchanged.
func debianConf(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/redis.conf")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// confDirectives returns the directives of a configuration file, one
// "name args" line each, sorted.
func confDirectives(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		args, ok := server.SplitConfigArgs(line)
		if !ok || len(args) == 0 {
			t.Fatalf("%s: bad line %q", path, line)
		}
		out = append(out, strings.Join(args, " "))
	}
	sort.Strings(out)
	return out
}

// TestDebianRedisConf starts recached on Debian's redis.conf, changing
// only what a user must (the port and directory, on the command line as
// redis-server takes them), and compares CONFIG GET of every directive in
// the file with redis-server started the same way.
func TestDebianRedisConf(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	bin := build(t)
	dirs := []string{t.TempDir(), t.TempDir()}
	rport, raddr := freeAddr(t)
	oport, oaddr := freeAddr(t)
	rconf, oconf := debianConf(t, dirs[0]), debianConf(t, dirs[1])
	// redis-server must not daemonize or write Debian's pid and log files.
	redisArgs := []string{rconf, "--port", rport, "--dir", dirs[0], "--daemonize", "no", "--pidfile", "", "--logfile", ""}
	startWithConf(t, servertest.RedisBin(t), raddr, redisArgs...)
	p := startWithConf(t, bin, oaddr, append([]string{oconf, "--port", oport, "--dir", dirs[1]}, noExtraPorts()...)...)
	rc, oc := servertest.Dial(t, raddr), servertest.Dial(t, oaddr)
	// Set by the command line differently, or a documented difference:
	// recached listens on the first address of bind.
	differ := map[string]bool{"port": true, "dir": true, "daemonize": true, "pidfile": true, "logfile": true, "bind": true}
	for _, d := range confDirectives(t, oconf) {
		name := strings.Fields(d)[0]
		if differ[name] {
			continue
		}
		want := servertest.MustDo(t, rc, "CONFIG", "GET", name)
		got := servertest.MustDo(t, oc, "CONFIG", "GET", name)
		if got != want {
			t.Errorf("CONFIG GET %s: recached %q, redis-server %q", name, got, want)
		}
	}
	if got := servertest.MustDo(t, oc, "CONFIG", "GET", "daemonize"); !strings.Contains(got, "yes") {
		t.Errorf("daemonize from the file: %q", got)
	}
	if info := servertest.MustDo(t, oc, "INFO", "server"); !strings.Contains(info, "config_file:"+oconf+"\r\n") {
		t.Errorf("INFO config_file missing:\n%s", info)
	}
	_ = p
}

// TestConfigRewriteAgainstRedis starts both servers on Debian's file,
// applies the same CONFIG SETs, rewrites, and compares the two files'
// directives; then restarts recached on its rewritten file and checks the
// values survived.
func TestConfigRewriteAgainstRedis(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	bin := build(t)
	dirs := []string{t.TempDir(), t.TempDir()}
	rport, raddr := freeAddr(t)
	oport, oaddr := freeAddr(t)
	rconf, oconf := debianConf(t, dirs[0]), debianConf(t, dirs[1])
	startWithConf(t, servertest.RedisBin(t), raddr, rconf, "--port", rport, "--dir", dirs[0], "--daemonize", "no", "--pidfile", "", "--logfile", "")
	p := startWithConf(t, bin, oaddr, append([]string{oconf, "--port", oport, "--dir", dirs[1], "--daemonize", "no", "--pidfile", "", "--logfile", ""}, noExtraPorts()...)...)
	rc, oc := servertest.Dial(t, raddr), servertest.Dial(t, oaddr)
	sets := [][]string{
		{"CONFIG", "SET", "timeout", "30", "maxclients", "500"},
		{"CONFIG", "SET", "hz", "20", "tcp-keepalive", "60"},
		{"CONFIG", "SET", "client-output-buffer-limit", "pubsub 64mb 16mb 90"},
		{"CONFIG", "SET", "hash-max-listpack-entries", "128", "zset-max-ziplist-value", "1kb"},
		{"CONFIG", "SET", "save", "900 1 300 10"},
		{"CONFIG", "SET", "notify-keyspace-events", "KEA"},
		{"CONFIG", "SET", "slowlog-max-len", "1000", "proto-max-bulk-len", "2000000"},
		{"CONFIG", "SET", "lazyfree-lazy-user-del", "yes", "maxmemory-clients", "10%"},
		{"CONFIG", "SET", "requirepass", "s3cret"},
		{"CONFIG", "REWRITE"},
	}
	for _, s := range sets {
		want := servertest.MustDo(t, rc, s...)
		if got := servertest.MustDo(t, oc, s...); got != want {
			t.Fatalf("%q: recached %q, redis-server %q", s, got, want)
		}
	}
	// What differs by design: the command line's port and directory, the
	// user line Redis's ACLs write (recached has no ACL file), the bind
	// list (recached listens on its first address), the append-only
	// default (yes in recached).
	norm := func(lines []string, dir string) []string {
		var out []string
		for _, l := range lines {
			switch strings.Fields(l + " ")[0] {
			case "user", "bind", "port", "daemonize", "pidfile", "logfile", "ws-port":
				continue
			}
			if l == "dir "+dir {
				l = "dir DIR"
			}
			out = append(out, l)
		}
		return out
	}
	want := norm(confDirectives(t, rconf), dirs[0])
	got := norm(confDirectives(t, oconf), dirs[1])
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rewritten directives differ:\n%s", lineDiff(got, want))
	}
	// Comments are kept: every comment line of the original is still there.
	orig, _ := os.ReadFile("testdata/redis.conf")
	now, _ := os.ReadFile(oconf)
	for _, l := range strings.Split(string(orig), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "#") && !strings.Contains(string(now), l) {
			t.Errorf("comment lost: %q", l)
			break
		}
	}
	// A restart reads the rewritten file back.
	_ = p.cmd.Process.Kill()
	p.wait(t)
	startWithConf(t, bin, oaddr, append([]string{oconf, "--port", oport}, noExtraPorts()...)...)
	oc = servertest.Dial(t, oaddr)
	servertest.MustDo(t, oc, "AUTH", "s3cret")
	for name, v := range map[string]string{"timeout": "30", "hz": "20", "save": "900 1 300 10", "notify-keyspace-events": "AKE", "hash-max-listpack-entries": "128", "maxmemory-clients": "10%"} {
		if got := servertest.MustDo(t, oc, "CONFIG", "GET", name); !strings.HasSuffix(got, "\r\n"+v+"\r\n") {
			t.Errorf("after restart, %s: %q, want %q", name, got, v)
		}
	}
}

// lineDiff lists the lines only one side has.
func lineDiff(got, want []string) string {
	in := func(l string, s []string) bool {
		i := sort.SearchStrings(s, l)
		return i < len(s) && s[i] == l
	}
	var b strings.Builder
	for _, l := range got {
		if !in(l, want) {
			b.WriteString("recached only:     " + l + "\n")
		}
	}
	for _, l := range want {
		if !in(l, got) {
			b.WriteString("redis-server only: " + l + "\n")
		}
	}
	return b.String()
}

// TestConfigFileErrorExits checks that a bad file stops the start with a
// non-zero exit and Redis's message, the same lines redis-server prints
// (recached adds the file name to the line-number line).
func TestConfigFileErrorExits(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	tests := []struct{ name, content string }{
		{"unknown directive", "port 0\nnosuch directive\n"},
		{"bad value", "# c\nmaxclients many\n"},
		{"wrong arity", "timeout 1 2\n"},
		{"quotes", "requirepass \"open\n"},
		{"dbfilename path", "port 0\ndbfilename sub/dump.rdb\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".conf")
			if err := os.WriteFile(conf, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(bin, append([]string{conf, "--dir", dir}, noExtraPorts()...)...).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() == 0 {
				t.Fatalf("exit %v, output %q", err, out)
			}
			got := string(out)
			if i := strings.Index(got, "\n*** FATAL"); i >= 0 {
				got = got[i:]
			}
			got = strings.Replace(got, " of "+conf, "", 1)
			if servertest.HaveRedis() {
				rout, _ := exec.Command(servertest.RedisBin(t), conf).CombinedOutput()
				if strings.TrimSpace(got) != strings.TrimSpace(string(rout)) {
					t.Errorf("recached:\n%s\nredis-server:\n%s", got, rout)
				}
			}
			if !strings.Contains(string(out), "Reading the configuration file, at line ") || !strings.Contains(string(out), conf) {
				t.Errorf("no file and line: %q", out)
			}
		})
	}
}
