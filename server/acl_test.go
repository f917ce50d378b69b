package server_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
	recsync "github.com/recached/recached/sync"
)

// aclStep is one command of an ACL scenario, run on connection conn.
type aclStep struct {
	conn string
	args []string
}

func as(conn string, args ...string) aclStep { return aclStep{conn, args} }

// TestACLMatchesRedis runs ACL scenarios on redis-server and recached and
// compares every reply byte for byte, after normalising what varies by
// run: the order of single-command rules (Redis lists them in hash order),
// ACL LOG's age-seconds and client-info (kept: user and cmd), HELLO's id
// and GENPASS's random digits (kept: their number).
func TestACLMatchesRedis(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	hash := "34344e4d60c2b6d639b7bd22e18f2b0b91bc34bf0ac5f9952744435093cfb4e6" // SHA-256 of passwd4
	setuser := func(rules ...string) aclStep { return as("a", append([]string{"acl", "setuser", "t"}, rules...)...) }
	show := []aclStep{as("a", "acl", "getuser", "t"), as("a", "acl", "list")}
	rule := func(rules ...string) []aclStep {
		return append([]aclStep{as("a", "acl", "deluser", "t"), setuser(rules...)}, show...)
	}
	cases := []struct {
		name  string
		steps []aclStep
	}{
		{"passwords", rule("on", ">p1", ">p2", "<p1", "#"+hash, "!"+hash, ">p3")},
		{"password errors", append(rule("#abc"), setuser("!"+hash[:63]+"q"), setuser("<nopw"), setuser(">p", "resetpass"), as("a", "acl", "getuser", "t"))},
		{"nopass and flags", append(rule("nopass", "on", "skip-sanitize-payload"), setuser("off", "sanitize-payload"), as("a", "acl", "getuser", "t"), setuser("reset"), as("a", "acl", "list"))},
		{"key patterns", rule("~a*", "%R~b", "%W~c", "%RW~d", "%Rw~e", "%W~e", "~a*")},
		{"key pattern errors", append(rule("%x~a"), setuser("%~a"), setuser("%RWR~a"), setuser("allkeys", "~b"), setuser("~*", "resetkeys", "%R~*"), as("a", "acl", "getuser", "t"))},
		{"channel patterns", append(rule("&x", "&y*", "&x"), setuser("allchannels", "&z"), setuser("resetchannels", "&q"), as("a", "acl", "getuser", "t"))},
		{"categories", rule("+@all", "-@string", "+get", "-@keyspace")},
		{"additive", rule("reset", "+@string", "-incr", "+acl", "+config|get", "+config|set")},
		{"subcommands", append(rule("+@all", "-client", "+client|id", "+client|setname"), setuser("-@all", "+config", "-config|get", "+config|get"), as("a", "acl", "list"))},
		{"engulfed subcommands", append(rule("-@all", "+client|id", "+client"), setuser("+@all", "+client|id"), as("a", "acl", "list"))},
		{"first args", rule("-@all", "+select|0", "+select|1")},
		{"command errors", append(rule("+nocmd"), setuser("+@nocat"), setuser("+get|x|y"), setuser("+config|get|x"), setuser("-select|0"), setuser("-config|asdf"), setuser("badrule"), setuser("get|"))},
		{"every category alone", func() []aclStep {
			var st []aclStep
			for _, c := range []string{"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap", "hyperloglog", "geo", "stream", "pubsub", "fast", "blocking", "connection", "transaction", "scripting"} {
				st = append(st, setuser("reset", "+@"+c), as("a", "acl", "getuser", "t"), setuser("reset", "+@all", "-@"+c), as("a", "acl", "getuser", "t"))
			}
			return st
		}()},
		{"selectors", append(rule("on", "(~a", "+get)", "(%R~b &c +@hash)"), setuser("clearselectors", "(+set ~q)"), as("a", "acl", "list"), setuser("(~a"), setuser("(~a badrule)"))},
		{"usernames", []aclStep{as("a", "acl", "setuser", "a b"), as("a", "acl", "getuser", "nobody"), as("a", "acl", "deluser", "nobody", "default"), as("a", "acl", "whoami")}},
		{"cat errors and help", []aclStep{as("a", "acl", "cat", "nocat"), as("a", "acl", "cat", "a", "b"), as("a", "acl", "cat"), as("a", "acl", "help"), as("a", "acl", "help", "x"), as("a", "acl", "nosub"),
			as("a", "acl", "genpass"), as("a", "acl", "genpass", "5"), as("a", "acl", "genpass", "0"), as("a", "acl", "genpass", "4097"), as("a", "acl", "genpass", "x"),
			as("a", "acl", "log", "x"), as("a", "acl", "log", "-1"), as("a", "acl", "load"), as("a", "acl", "save")}},
		{"refusals and the log", []aclStep{
			as("a", "acl", "log", "reset"),
			as("a", "acl", "setuser", "u", "on", "nopass", "+get", "+publish", "+spublish", "+eval", "+multi", "+select", "+client|getname", "~a*", "%R~r*", "%W~w*", "&ch*", "(+set ~s*)"),
			as("u", "auth", "u", "x"), as("u", "get", "b"), as("u", "set", "a", "1"), as("u", "get", "r1"), as("u", "set", "s1", "v"), as("u", "incr", "a"),
			as("u", "client", "getname"), as("u", "client", "list"), as("u", "publish", "x", "y"), as("u", "publish", "ch1", "y"), as("u", "spublish", "x", "y"),
			as("u", "get", "b"), as("u", "get", "b"),
			as("u", "eval", "return redis.call('get','b')", "0"), as("u", "eval", "return redis.pcall('set','a',1)", "0"),
			as("u", "eval", "return redis.pcall('incr','a')", "0"), as("u", "eval", "return redis.pcall('publish','zz',1)", "0"),
			as("u", "multi"), as("u", "set", "a", "1"), as("u", "get", "zz"), as("u", "incr", "x"), as("u", "exec"),
			as("u", "acl", "whoami"),
			as("a", "acl", "log"), as("a", "acl", "log", "2"),
		}},
		{"dryrun", []aclStep{
			as("a", "acl", "setuser", "u", "reset", "on", "nopass", "+get", "+publish", "+subscribe", "+psubscribe", "~a*", "&ch*", "(+set ~s*)"),
			as("a", "acl", "dryrun", "u", "get", "b"), as("a", "acl", "dryrun", "u", "get", "a"), as("a", "acl", "dryrun", "u", "set", "s1", "x"),
			as("a", "acl", "dryrun", "u", "set", "a", "1"), as("a", "acl", "dryrun", "u", "publish", "z", "1"), as("a", "acl", "dryrun", "u", "subscribe", "ch1", "x"),
			as("a", "acl", "dryrun", "u", "psubscribe", "ch*"), as("a", "acl", "dryrun", "u", "psubscribe", "ch1"), as("a", "acl", "dryrun", "u", "get"),
			as("a", "acl", "dryrun", "u", "nocmd"), as("a", "acl", "dryrun", "u", "client", "id"), as("a", "acl", "dryrun", "nobody", "get", "a"),
			as("a", "acl", "setuser", "scripter", "on", "nopass", "+@read"), as("a", "acl", "dryrun", "scripter", "eval_ro", "", "0"), as("a", "acl", "dryrun", "scripter", "fcall_ro", "", "0"),
		}},
		{"auth and hello", []aclStep{
			as("a", "acl", "log", "reset"), as("a", "acl", "setuser", "v", "on", ">pw", "+@all", "~*"),
			as("v", "auth", "nopass"), as("v", "auth", "v", "bad"), as("v", "auth", "nobody", "x"), as("v", "auth", "a", "b", "c"),
			as("v", "hello", "3", "auth", "v", "bad"), as("v", "hello", "2", "auth", "v", "pw", "setname", "n"), as("v", "acl", "whoami"),
			as("v", "client", "info"), as("v", "reset"), as("v", "acl", "whoami"),
			as("a", "acl", "setuser", "v", "off"), as("w", "auth", "v", "pw"), as("a", "acl", "log"),
			as("a", "acl", "setuser", "default", "resetpass", ">dpw"), as("x", "get", "k"), as("x", "hello", "3"), as("x", "auth", "dpw"), as("x", "get", "k"),
			as("a", "acl", "setuser", "default", "nopass"),
		}},
		{"exec re-checks queued commands", []aclStep{
			as("a", "acl", "log", "reset"), as("a", "acl", "setuser", "u", "reset", "on", "nopass", "+@all", "~*", "&*"), as("u", "auth", "u", "x"),
			as("u", "multi"), as("u", "set", "k", "v"), as("u", "get", "k"), as("u", "publish", "ch", "m"), as("u", "incr", "q"),
			as("a", "acl", "setuser", "u", "-get", "resetkeys", "~k", "resetchannels"), as("u", "exec"), as("a", "acl", "log"),
			as("a", "acl", "setuser", "u", "+@all", "~*", "&*"), as("u", "multi"), as("u", "set", "k", "v"),
			as("a", "acl", "setuser", "u", "-exec"), as("u", "exec"), as("u", "get", "k"),
		}},
		{"revoked channels close subscribers", []aclStep{
			as("a", "acl", "setuser", "u", "reset", "on", "nopass", "+@all", "~*", "&ch*", "&news", "&sh*"),
			as("c", "auth", "u", "x"), as("c", "subscribe", "ch1"),
			as("p", "auth", "u", "x"), as("p", "psubscribe", "news"),
			as("h", "hello", "3", "auth", "u", "x"), as("h", "subscribe", "ch2"),
			as("s", "auth", "u", "x"), as("s", "ssubscribe", "sh1"),
			as("n", "auth", "u", "x"), as("n", "get", "k"),
			as("a", "acl", "setuser", "u", "&more"), as("c", "ping"), as("p", "ping"),
			as("a", "acl", "setuser", "u", "resetchannels", "&ch*", "(&sh1 ~x)"), as("c", "ping"), as("s", "ping"),
			as("a", "acl", "setuser", "u", "resetchannels", "&other"), as("n", "get", "k"),
		}},
		{"deluser closes its connections", []aclStep{
			as("a", "acl", "setuser", "d", "on", "nopass", "+@all", "~*"), as("d", "auth", "d", "x"), as("a", "client", "kill", "user", "nobody"),
			as("a", "acl", "deluser", "d"), as("a", "acl", "users"),
		}},
	}
	redisAddr := servertest.StartRedis(t)
	recAddr, _ := servertest.StartRecached(t, server.DefaultConfig())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			redis := runACL(t, redisAddr, tc.steps)
			rec := runACL(t, recAddr, tc.steps)
			for i := range tc.steps {
				if redis[i] != rec[i] {
					t.Errorf("step %d %q:\nredis-server %q\nrecached     %q", i, tc.steps[i].args, redis[i], rec[i])
				}
			}
		})
	}
}

// runACL runs steps on fresh connections to addr ("a" the default user's)
// and returns each step's normalised reply. Users a case made are deleted
// first, so cases are independent.
func runACL(t *testing.T, addr string, steps []aclStep) []string {
	t.Helper()
	conns := map[string]*servertest.Client{}
	conn := func(name string) *servertest.Client {
		if conns[name] == nil {
			conns[name] = servertest.Dial(t, addr)
		}
		return conns[name]
	}
	a := conn("a")
	servertest.MustDo(t, a, "acl", "deluser", "t", "u", "v", "d", "scripter")
	servertest.MustDo(t, a, "acl", "setuser", "default", "reset", "on", "nopass", "~*", "&*", "+@all")
	out := make([]string, len(steps))
	for i, s := range steps {
		rep, err := conn(s.conn).Do(s.args...)
		if err != nil {
			rep = []byte("closed")
			delete(conns, s.conn)
		}
		out[i] = normalizeACL(string(rep))
	}
	// Whether a connection of a deleted user was closed, in name order.
	names := make([]string, 0, len(conns))
	for name := range conns {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, err := conns[name].Do("ping"); err != nil {
			out[len(out)-1] += " " + name + " closed"
		}
	}
	return out
}

var (
	aclAge        = regexp.MustCompile(`(\$11\r\nage-seconds\r\n)(\$\d+\r\n[^\r]*|,[^\r]*)\r\n`)
	aclClientInfo = regexp.MustCompile(`(\$11\r\nclient-info\r\n)\$\d+\r\n([^\r]*)\r\n`)
	aclHelloID    = regexp.MustCompile(`\$2\r\nid\r\n:\d+\r\n`)
	aclGenpass    = regexp.MustCompile(`^\$(\d+)\r\n[0-9a-f]+\r\n$`)
	aclClientLine = regexp.MustCompile(`(?s)^[$=]\d+\r\n(txt:)?id=.*\r\n$`)
	aclField      = regexp.MustCompile(` (user|cmd|name)=(\S*)`)
)

func normalizeACL(rep string) string {
	rep = aclAge.ReplaceAllString(rep, "${1}AGE\r\n")
	rep = aclClientInfo.ReplaceAllStringFunc(rep, func(m string) string {
		sub := aclClientInfo.FindStringSubmatch(m)
		return sub[1] + clientFields(sub[2]) + "\r\n"
	})
	rep = aclHelloID.ReplaceAllString(rep, "$$2\r\nid\r\n:ID\r\n")
	if aclClientLine.MatchString(rep) {
		return clientFields(rep)
	}
	if m := aclGenpass.FindStringSubmatch(rep); m != nil {
		return "genpass of " + m[1]
	}
	lines := strings.Split(rep, "\r\n")
	for i, l := range lines {
		if strings.Contains(l, "@all") {
			lines[i] = sortCommandRules(l)
		}
	}
	return strings.Join(lines, "\r\n")
}

// clientFields keeps the CLIENT LIST fields both servers fill alike.
func clientFields(line string) string {
	var b strings.Builder
	for _, m := range aclField.FindAllStringSubmatch(" "+line, -1) {
		b.WriteString(" " + m[1] + "=" + m[2])
	}
	return "CLIENT" + b.String()
}

// sortCommandRules sorts each run of single-command rules (+get -set) in
// a rules string, which Redis writes in hash-table order.
func sortCommandRules(l string) string {
	toks := strings.Split(l, " ")
	single := func(t string) bool {
		t = strings.Trim(t, "()")
		return len(t) > 1 && (t[0] == '+' || t[0] == '-') && t[1] != '@'
	}
	for i := 0; i < len(toks); {
		if !single(toks[i]) {
			i++
			continue
		}
		j := i
		for j < len(toks) && single(toks[j]) && !strings.HasPrefix(toks[j], "(") {
			j++
			if strings.HasSuffix(toks[j-1], ")") {
				break
			}
		}
		run := toks[i:j]
		closing := strings.HasSuffix(run[len(run)-1], ")")
		if closing {
			run[len(run)-1] = strings.TrimSuffix(run[len(run)-1], ")")
		}
		sort.Strings(run)
		if closing {
			run[len(run)-1] += ")"
		}
		if j == i {
			j++
		}
		i = j
	}
	return strings.Join(toks, " ")
}

// TestACLCategoriesMatchRedis checks ACL CAT of every category against
// redis-server over the commands both servers have: the categories come
// from the command table's rows.
func TestACLCategoriesMatchRedis(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	redis := servertest.Dial(t, servertest.StartRedis(t))
	recAddr, _ := servertest.StartRecached(t, server.DefaultConfig())
	rec := servertest.Dial(t, recAddr)
	names := func(c *servertest.Client, args ...string) map[string]bool {
		rep, err := c.Do(args...)
		if err != nil {
			t.Fatal(err)
		}
		els, err := servertest.Elements(rep)
		if err != nil {
			t.Fatalf("%q: %v", rep, err)
		}
		m := map[string]bool{}
		for _, e := range els {
			m[string(e)] = true
		}
		return m
	}
	cats := names(redis, "acl", "cat")
	if got := names(rec, "acl", "cat"); len(got) != len(cats) {
		t.Fatalf("categories: %v, redis-server %v", got, cats)
	}
	all := func(c *servertest.Client) map[string]bool {
		m := map[string]bool{}
		for cat := range cats {
			for n := range names(c, "acl", "cat", cat) {
				m[n] = true
			}
		}
		return m
	}
	redisAll, recAll := all(redis), all(rec)
	for cat := range cats {
		want, got := names(redis, "acl", "cat", cat), names(rec, "acl", "cat", cat)
		for n := range want {
			if recAll[n] && !got[n] {
				t.Errorf("@%s: recached lacks %s", cat, n)
			}
		}
		for n := range got {
			if redisAll[n] && !want[n] {
				t.Errorf("@%s: recached has %s, redis-server does not", cat, n)
			}
		}
	}
}

// TestACLFileRoundTrip saves users to an aclfile with ACL SAVE, changes
// them, loads the file back with ACL LOAD on both servers and compares
// the files and ACL LIST; a file with a duplicate user is refused and
// changes nothing; connections of replaced users are closed.
func TestACLFileRoundTrip(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	start := "user alice on allcommands allkeys &* >alice\nuser bob on -@all +@set +acl ~set* &* >bob\nuser default on nopass ~* &* +@all\n"
	rdir, cdir := t.TempDir(), t.TempDir()
	for _, d := range []string{rdir, cdir} {
		if err := os.WriteFile(filepath.Join(d, "users.acl"), []byte(start), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	redisAddr := servertest.StartRedis(t, "--dir", rdir, "--aclfile", "users.acl")
	cfg := server.DefaultConfig()
	cfg.Dir = cdir
	cfg.Params = map[string]string{"aclfile": "users.acl"}
	recAddr, _ := servertest.StartRecached(t, cfg)
	steps := [][]string{
		{"acl", "list"},
		{"auth", "bob", "bob"}, {"sadd", "set1", "a"}, {"set", "k", "v"},
		{"auth", "alice", "alice"},
		{"acl", "setuser", "eve", "+get", "allkeys", ">eve", "on", "(~x +set)"},
		{"acl", "save"}, {"acl", "setuser", "eve", "-get"}, {"acl", "setuser", "zed", "on"},
		{"acl", "load"},
	}
	run := func(addr, dir string) []string {
		c := servertest.Dial(t, addr)
		var out []string
		for _, s := range steps {
			rep, err := c.Do(s...)
			if err != nil {
				rep = []byte("closed")
			}
			out = append(out, normalizeACL(string(rep)))
		}
		c = servertest.Dial(t, addr)
		out = append(out, normalizeACL(servertest.MustDo(t, c, "acl", "list")))
		out = append(out, normalizeACL(servertest.MustDo(t, c, "auth", "eve", "eve")), normalizeACL(servertest.MustDo(t, c, "get", "k")))
		data, err := os.ReadFile(filepath.Join(dir, "users.acl"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		for i := range lines {
			lines[i] = sortCommandRules(lines[i])
		}
		out = append(out, strings.Join(lines, "\n"))
		// A duplicate user: refused, the users stay.
		if err := os.WriteFile(filepath.Join(dir, "users.acl"), append(data, "user alice on nopass ~* -@all\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		c = servertest.Dial(t, addr)
		out = append(out, normalizeACL(servertest.MustDo(t, c, "acl", "load")), normalizeACL(servertest.MustDo(t, c, "acl", "getuser", "alice")))
		return out
	}
	redis, rec := run(redisAddr, rdir), run(recAddr, cdir)
	for i := range redis {
		if i >= len(rec) || redis[i] != rec[i] {
			t.Errorf("step %d:\nredis-server %q\nrecached     %q", i, redis[i], rec[i])
		}
	}
}

// TestACLWebSocketUserAndToken checks that a WebSocket connection
// authenticated as an ACL user is limited by both its user and its sync
// token: a key the token allows but the user does not is refused with
// NOPERM, one the user allows outside the token with the scope's error.
func TestACLWebSocketUserAndToken(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.TokenSecret = "s3cret"
	srvs := servertest.StartServers(t, cfg, nil)
	admin := servertest.Dial(t, srvs.RESP)
	servertest.MustDo(t, admin, "acl", "setuser", "web", "on", ">pw", "+@all", "~user:*", "~other:*")
	tok, err := recsync.SignToken([]byte("s3cret"), []string{"user:*", "room:*"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	w := dialWS(t, srvs.WS)
	do := func(args ...string) string {
		w.send(servertest.Encode(args...))
		return w.next()
	}
	if rep := do("auth", "web", "pw"); rep != "+OK\r\n" {
		t.Fatalf("auth: %q", rep)
	}
	if rep := do("sync", "token", tok); strings.HasPrefix(rep, "-") {
		t.Fatalf("sync token: %q", rep)
	}
	if rep := do("set", "user:1", "v"); rep != "+OK\r\n" {
		t.Errorf("a key both allow: %q", rep)
	}
	if rep := do("set", "room:1", "v"); rep != "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n" {
		t.Errorf("a key the token allows, the user not: %q", rep)
	}
	log := servertest.MustDo(t, admin, "acl", "log", "1")
	if !strings.Contains(log, "room:1") || !strings.Contains(log, "web") {
		t.Errorf("ACL LOG after the user's refusal: %q", log)
	}
	// The scope's refusal has the same text and is no ACL denial.
	if rep := do("set", "other:1", "v"); !strings.HasPrefix(rep, "-NOPERM") {
		t.Errorf("a key the user allows, the token not: %q", rep)
	}
	if l := servertest.MustDo(t, admin, "acl", "log", "1"); l != log && !strings.Contains(l, "room:1") {
		t.Errorf("ACL LOG after the scope's refusal: %q", l)
	}
	if rep := do("acl", "list"); !strings.HasPrefix(rep, "-NOPERM") {
		t.Errorf("an admin command on the WebSocket port: %q", rep)
	}
	if rep := servertest.MustDo(t, admin, "exists", "room:1", "other:1"); rep != ":0\r\n" {
		t.Errorf("refused writes ran: %q", rep)
	}
}

// TestACLScriptRefusedKey checks that redis.call is checked against the
// user running the script: a key outside its patterns fails the call and
// is logged with the lua context, whatever the script declared.
func TestACLScriptRefusedKey(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.DefaultConfig())
	admin := servertest.Dial(t, addr)
	servertest.MustDo(t, admin, "acl", "setuser", "s", "on", "nopass", "+@all", "~ok:*")
	c := servertest.Dial(t, addr)
	servertest.MustDo(t, c, "auth", "s", "x")
	if rep := servertest.MustDo(t, c, "eval", "return redis.call('set', KEYS[1], 'v')", "1", "ok:1"); rep != "+OK\r\n" {
		t.Fatalf("allowed key: %q", rep)
	}
	rep := servertest.MustDo(t, c, "eval", "return redis.call('set', 'secret', 'v')", "0")
	if !strings.HasPrefix(rep, "-ERR The user executing the script can't access at least one of the keys mentioned in the command arguments script: ") {
		t.Fatalf("refused key: %q", rep)
	}
	if rep := servertest.MustDo(t, admin, "exists", "secret"); rep != ":0\r\n" {
		t.Fatalf("the refused write ran: %q", rep)
	}
	log := servertest.MustDo(t, admin, "acl", "log", "1")
	for _, want := range []string{"\r\nkey\r\n", "\r\nlua\r\n", "\r\nsecret\r\n", "\r\ns\r\n"} {
		if !strings.Contains(log, want) {
			t.Errorf("ACL LOG lacks %q: %q", want, log)
		}
	}
}

// TestRequirePassIsDefaultPassword checks that requirepass, at start and
// by CONFIG SET, is the default user's password, as in Redis.
func TestRequirePassIsDefaultPassword(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.RequirePass = "first"
	addr, _ := servertest.StartRecached(t, cfg)
	c := servertest.Dial(t, addr)
	if rep := servertest.MustDo(t, c, "get", "k"); !strings.HasPrefix(rep, "-NOAUTH") {
		t.Fatalf("before AUTH: %q", rep)
	}
	servertest.MustDo(t, c, "auth", "default", "first")
	servertest.MustDo(t, c, "config", "set", "requirepass", "second")
	list := servertest.MustDo(t, c, "acl", "getuser", "default")
	if strings.Contains(list, "nopass") {
		t.Errorf("default after CONFIG SET requirepass: %q", list)
	}
	d := servertest.Dial(t, addr)
	if rep := servertest.MustDo(t, d, "auth", "first"); !strings.HasPrefix(rep, "-WRONGPASS") {
		t.Errorf("old password: %q", rep)
	}
	if rep := servertest.MustDo(t, d, "auth", "second"); rep != "+OK\r\n" {
		t.Errorf("new password: %q", rep)
	}
	servertest.MustDo(t, c, "config", "set", "requirepass", "")
	e := servertest.Dial(t, addr)
	if rep := servertest.MustDo(t, e, "get", "k"); rep != "$-1\r\n" {
		t.Errorf("without a password: %q", rep)
	}
}
