package web_test

// End-to-end tests of recached-edge in real headless Chromium against a real
// recached process: the page imports /recached-edge.js from the server and
// talks to it over the WebSocket bridge, exactly as an application would.
//
// They need Debian's chromium (scripts/install-test-deps.sh installs it);
// without it they are skipped with a message saying so.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/server/servertest/browsertest"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/recached/recached/resp"
)

// server is a recached process on loopback ports, restartable on the same
// ports and directory.
type server struct {
	t      *testing.T
	bin    string
	dir    string
	port   int
	wsPort int
	args   []string
	cmd    *exec.Cmd
	out    *servertest.SafeBuffer
	exited chan struct{}
}

func startServer(t *testing.T, bin string, extra ...string) *server {
	t.Helper()
	s := &server{t: t, bin: bin, dir: t.TempDir(), port: servertest.FreePort(t), wsPort: servertest.FreePort(t), args: extra, out: &servertest.SafeBuffer{}}
	s.start()
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("server output:\n%s", s.out.String())
		}
	})
	return s
}

func (s *server) start() {
	s.t.Helper()
	// The realtime and Amaquet listeners are off: their default ports may be
	// taken (another test, a developer's server).
	args := append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(s.port), "--ws-port", strconv.Itoa(s.wsPort), "--realtime-port", "0", "--amaquet-port", "0", "--dir", s.dir}, s.args...)
	s.cmd = exec.Command(s.bin, args...)
	s.cmd.Stdout = s.out
	s.cmd.Stderr = s.out
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start recached: %v", err)
	}
	s.exited = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Wait()
		close(done)
	}(s.cmd, s.exited)
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := http.Get(s.httpURL("/healthz"))
		if err == nil {
			res.Body.Close()
			if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.port)); err == nil {
				c.Close()
				return
			}
		}
		select {
		case <-s.exited:
			s.t.Fatalf("recached exited at start:\n%s", s.out.String())
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("recached did not start in time:\n%s", s.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM (the server writes its snapshot and exits) and waits.
func (s *server) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		s.t.Errorf("recached did not stop on SIGTERM in time")
	}
	s.cmd = nil
}

func (s *server) restart() {
	s.t.Helper()
	s.stop()
	s.start()
}

func (s *server) httpURL(path string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", s.wsPort, path)
}

// do runs one command on the RESP port and returns its reply.
func (s *server) do(args ...string) resp.Value {
	s.t.Helper()
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.port), 5*time.Second)
	if err != nil {
		s.t.Fatalf("dial RESP port: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return sendRecv(s.t, c, bufio.NewReader(c), args...)
}

func sendRecv(t *testing.T, c net.Conn, r *bufio.Reader, args ...string) resp.Value {
	t.Helper()
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	if _, err := c.Write(resp.AppendCommand(nil, b...)); err != nil {
		t.Fatalf("write %v: %v", args, err)
	}
	v, err := resp.ReadValue(r)
	if err != nil {
		t.Fatalf("read reply to %v: %v", args, err)
	}
	return v
}

// page is a browser tab with the recached-edge harness.
type page struct{ *browsertest.Page }

// newPage opens a tab (the browser's first one when first is set).
func newPage(t *testing.T, bctx context.Context, name string, first bool) *page {
	t.Helper()
	return &page{browsertest.NewPage(t, bctx, name, first)}
}

// harness is the script that sets a test page up: waitFor polls a
// condition; setup(options) connects window.c.
const harness = `
window.waitFor = (f, ms = 30000) => new Promise((resolve, reject) => {
  const t0 = Date.now();
  const tick = () => {
    let v;
    try { v = f(); } catch (e) { v = undefined; }
    if (v) return resolve(v);
    if (Date.now() - t0 > ms) return reject(new Error('timed out waiting for ' + f));
    setTimeout(tick, 5);
  };
  tick();
});
window.setup = async (opts) => {
  const m = await import('/recached-edge.js');
  window.m = m;
  const c = m.connect('ws://' + location.host + '/', opts);
  window.c = c;
  window.states = [];
  c.on('state', (e) => window.states.push(e));
  c.on('error', (e) => console.warn('recached-edge error: ' + e.message));
  await c.ready;
  return c.clientId;
};
`

// open loads a blank page of the server's origin and connects a client.
func (p *page) open(s *server, opts string) string {
	p.T.Helper()
	p.Run(chromedp.Navigate(s.httpURL("/healthz")))
	p.Eval(harness+";1", nil)
	return p.Str(`setup(` + opts + `)`)
}

// waitOpen waits for the client's session to be established.
func (p *page) waitOpen() {
	p.T.Helper()
	p.Eval(`waitFor(() => c.state === 'open')`, nil)
}

func TestBrowserTwoPagesSeeEachOthersWritesLive(t *testing.T) {
	bin := servertest.BuildRecached(t)
	s := startServer(t, bin, "--appendonly", "no")
	b := browsertest.Browser(t)
	a := newPage(t, b, "A", true)
	bb := newPage(t, b, "B", false)
	opts := `{patterns: ['e2e:*'], name: 'e2e'}`
	idA := a.open(s, opts)
	idB := bb.open(s, opts)
	if idA == idB || idA == "" {
		t.Fatalf("two tabs share client id %q and %q: each tab needs its own", idA, idB)
	}
	for _, p := range []*page{a, bb} {
		p.Eval(`window.changes = []; c.query('e2e:*', (k, v) => changes.push([k, v])).ready`, nil)
		p.waitOpen()
	}

	// A writes; B sees every write without asking.
	a.Eval(`(async () => {
	  await c.set('e2e:greeting', 'hello');
	  for (let i = 0; i < 5; i++) await c.incr('e2e:n');
	  await c.hset('e2e:h', {a: '1', b: '2'});
	  await c.sadd('e2e:s', 'x', 'y');
	  await c.zadd('e2e:z', {m: 2, n: 1});
	})()`, nil)
	var got map[string]any
	bb.Eval(`waitFor(() => c.get('e2e:greeting') === 'hello' && c.get('e2e:n') === '5' && c.hget('e2e:h', 'b') === '2' &&
	  c.scard('e2e:s') === 2 && c.zcard('e2e:z') === 2).then(() => ({
	    greeting: c.get('e2e:greeting'), n: c.get('e2e:n'), h: c.hgetall('e2e:h'), s: c.smembers('e2e:s'),
	    z: c.zrange('e2e:z'), changed: [...new Set(changes.map((x) => x[0]))].sort()}))`, &got)
	want := map[string]any{
		"greeting": "hello", "n": "5", "h": map[string]any{"a": "1", "b": "2"}, "s": []any{"x", "y"}, "z": []any{"n", "m"},
		"changed": []any{"e2e:greeting", "e2e:h", "e2e:n", "e2e:s", "e2e:z"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("B sees %v, want %v", got, want)
	}

	// B writes back; A sees it, and so does a backend on the RESP port.
	bb.Eval(`c.rpush('e2e:list', 'from B').then(() => c.del('e2e:greeting'))`, nil)
	a.Eval(`waitFor(() => c.lrange('e2e:list').join() === 'from B' && c.get('e2e:greeting') === null)`, nil)
	if v := s.do("LRANGE", "e2e:list", "0", "-1"); len(v.Elems) != 1 || v.Elems[0].Text() != "from B" {
		t.Fatalf("server list = %+v", v)
	}

	// A backend write on the RESP port reaches both pages.
	s.do("SET", "e2e:tcp", "from the backend")
	for _, p := range []*page{a, bb} {
		p.Eval(`waitFor(() => c.get('e2e:tcp') === 'from the backend')`, nil)
	}
}

func TestBrowserOfflineWritesSurviveReloadAndRestartExactlyOnce(t *testing.T) {
	bin := servertest.BuildRecached(t)
	help, _ := exec.Command(bin, "--help").CombinedOutput()
	if !bytes.Contains(help, []byte("appendfsync")) {
		t.Skip("this recached binary has no --appendonly/--appendfsync: the restart variant needs persistence")
	}
	s := startServer(t, bin, "--appendonly", "yes", "--appendfsync", "always")
	b := browsertest.Browser(t)
	p := newPage(t, b, "page", true)
	opts := `{patterns: ['ctr:*'], name: 'offline'}`
	id := p.open(s, opts)
	p.Eval(`c.query('ctr:*', () => {}).ready`, nil)
	p.waitOpen()
	var epoch1 int
	p.Eval(`c.epoch`, &epoch1)

	// The test closes the page's WebSocket and keeps it offline; the page
	// writes 500 times: 250 INCR and 250 RPUSH, interleaved.
	p.Eval(`c.goOffline(); waitFor(() => c.state === 'offline')`, nil)
	var local map[string]any
	p.Eval(`(() => {
	  for (let i = 0; i < 500; i++) {
	    const w = i % 2 === 0 ? c.incr('ctr:a') : c.rpush('ctr:log', String(i));
	    w.catch(() => {}); // the page reloads before the replies
	  }
	  return c.persisted().then(() => ({outbox: c.outboxSize, a: c.get('ctr:a'), log: c.llen('ctr:log')}));
	})()`, &local)
	if fmt.Sprint(local) != "map[a:250 log:250 outbox:500]" {
		t.Fatalf("offline page shows %v, want a=250, log=250, outbox=500", local)
	}
	if v := s.do("EXISTS", "ctr:a", "ctr:log"); v.Int != 0 {
		t.Fatalf("offline writes reached the server: EXISTS = %d", v.Int)
	}

	// Reload: the new page finds its identity and the saved outbox. It
	// reconnects and replays; when half the outbox is acknowledged it drops
	// the connection (the other half is in flight, fate unknown) ...
	p.Run(chromedp.Reload())
	p.Eval(harness+";1", nil)
	p.Eval(`window.paused = new Promise((resolve) => {
	  let fired = false;
	  window.pauseHook = (n) => { if (!fired && n <= 250 && window.c && c.state === 'open') { fired = true; c.goOffline(); resolve(n); } };
	}); 1`, nil)
	p.Eval(`(async () => {
	  const m = await import('/recached-edge.js');
	  window.m = m;
	  const c = m.connect('ws://' + location.host + '/', `+opts+`);
	  window.c = c;
	  c.on('outbox', (n) => pauseHook(n));
	  c.on('error', (e) => console.warn('recached-edge error: ' + e.message));
	  c.query('ctr:*', () => {});
	  await c.ready;
	  return c.clientId;
	})()`, nil)
	var after struct {
		ID     string `json:"id"`
		Epoch  int    `json:"epoch"`
		Outbox int    `json:"outbox"`
	}
	p.Eval(`waitFor(() => c.epoch).then(() => ({id: c.clientId, epoch: c.epoch, outbox: c.outboxSize}))`, &after)
	if after.ID != id || after.Epoch != epoch1+1 {
		t.Fatalf("after reload: client id %q epoch %d, want %q and epoch %d", after.ID, after.Epoch, id, epoch1+1)
	}
	var left int
	p.Eval(`paused`, &left)
	t.Logf("replay paused with %d writes unacknowledged", left)

	// ... and the server restarts in the middle of it.
	before := s.do("GET", "ctr:a").Text()
	s.restart()
	t.Logf("server counter before the restart %q, after %q", before, s.do("GET", "ctr:a").Text())

	// Back online: the rest of the outbox replays; writes the server had
	// already executed answer +DUP and do not apply again.
	var final map[string]any
	p.Eval(`c.goOnline(); waitFor(() => c.state === 'open' && c.outboxSize === 0, 60000).then(() =>
	  ({a: c.get('ctr:a'), log: c.llen('ctr:log'), dups: c.stats.dups}))`, &final)
	t.Logf("after replay: %v", final)
	if final["a"] != "250" || final["log"] != float64(250) {
		t.Fatalf("page shows %v, want a=250 and 250 log entries", final)
	}
	if v := s.do("GET", "ctr:a"); v.Text() != "250" {
		t.Fatalf("server counter = %q, want 250: a write was lost or applied twice", v.Text())
	}
	v := s.do("LRANGE", "ctr:log", "0", "-1")
	var log []int
	for _, e := range v.Elems {
		n, _ := strconv.Atoi(e.Text())
		log = append(log, n)
	}
	var wantLog []int
	for i := 1; i < 500; i += 2 {
		wantLog = append(wantLog, i)
	}
	if !slices.Equal(log, wantLog) {
		t.Fatalf("server log has %d entries %v…, want the 250 odd numbers in order, each once", len(log), log[:min(len(log), 10)])
	}
}

func TestBrowserScopedTokenCannotReachOutOfScope(t *testing.T) {
	bin := servertest.BuildRecached(t)
	const secret = "e2e-secret"
	s := startServer(t, bin, "--appendonly", "no", "--token-secret", secret)
	out, err := exec.Command(bin, "token", "--secret", secret, "--patterns", "user:1:*").Output()
	if err != nil {
		t.Fatalf("recached token: %v", err)
	}
	token := strings.TrimSpace(string(out))
	s.do("SET", "user:1:name", "alice")
	s.do("SET", "user:2:secret", "bob's")

	b := browsertest.Browser(t)
	p := newPage(t, b, "scoped", true)
	p.open(s, `{token: `+strconv.Quote(token)+`, name: 'scoped'}`)
	p.Eval(`c.query('user:*', () => {}).ready`, nil)
	p.waitOpen()
	var keys []string
	p.Eval(`c.keys('*')`, &keys)
	if !slices.Equal(keys, []string{"user:1:name"}) {
		t.Fatalf("scoped page sees keys %v, want only user:1:name", keys)
	}

	var results map[string]string
	p.Eval(`(async () => {
	  const r = {};
	  const outcome = (pr) => pr.then((v) => 'ok ' + v, (e) => e.message);
	  r.writeOut = await outcome(c.set('user:2:secret', 'stolen'));
	  r.readOut = await outcome(c.command('GET', 'user:2:secret'));
	  r.watchOut = await outcome(c.watch('user:2:secret', () => {}).ready);
	  r.subscribeOut = await outcome(c.subscribe('user:2:inbox', () => {}).ready);
	  r.writeIn = await outcome(c.set('user:1:x', 'mine'));
	  r.readIn = await outcome(c.command('GET', 'user:1:name'));
	  r.local = String(c.get('user:2:secret'));
	  return r;
	})()`, &results)
	for k, want := range map[string]string{
		"writeOut": "NOPERM", "readOut": "NOPERM", "watchOut": "NOPERM", "subscribeOut": "NOPERM",
		"writeIn": "ok OK", "readIn": "ok alice", "local": "null",
	} {
		if !strings.HasPrefix(results[k], want) {
			t.Errorf("%s = %q, want %q…", k, results[k], want)
		}
	}
	if v := s.do("GET", "user:2:secret"); v.Text() != "bob's" {
		t.Fatalf("out-of-scope key changed to %q", v.Text())
	}

	// Writes by a backend out of scope never reach the page: a write in
	// scope made after them arrives, and they still have not.
	s.do("SET", "user:2:secret", "rotated")
	s.do("SET", "user:1:name", "alice2")
	p.Eval(`waitFor(() => c.get('user:1:name') === 'alice2')`, nil)
	var seen []string
	p.Eval(`c.keys('*')`, &seen)
	if slices.Contains(seen, "user:2:secret") {
		t.Fatalf("out-of-scope key reached the page: %v", seen)
	}

	// Without a token the server refuses open mode; a forged token ends the
	// session with the server's reason.
	q := newPage(t, b, "forged", false)
	q.open(s, `{token: `+strconv.Quote(token[:len(token)-2]+"xx")+`, name: 'forged'}`)
	var st map[string]any
	q.Eval(`waitFor(() => c.state === 'closed').then(() => states[states.length - 1])`, &st)
	if st["reason"] != "NOPERM invalid token" {
		t.Fatalf("forged token: state %v, want closed with NOPERM invalid token", st)
	}
	r := newPage(t, b, "open-mode", false)
	r.open(s, `{patterns: ['user:*'], name: 'open'}`)
	r.Eval(`waitFor(() => c.state === 'closed').then(() => states[states.length - 1])`, &st)
	if reason, _ := st["reason"].(string); !strings.HasPrefix(reason, "NOPERM") {
		t.Fatalf("open mode on a strict server: state %v, want closed with NOPERM", st)
	}
}

func TestDemoSyncsTwoTabsAndQueuesOffline(t *testing.T) {
	bin := servertest.BuildRecached(t)
	s := startServer(t, bin, "--appendonly", "no")
	b := browsertest.Browser(t)
	a := newPage(t, b, "demo A", true)
	bb := newPage(t, b, "demo B", false)
	for _, p := range []*page{a, bb} {
		p.Run(chromedp.Navigate(s.httpURL("/demo/")))
		p.Eval(`new Promise((resolve, reject) => {
		  const t0 = Date.now();
		  const tick = () => document.getElementById('conn-label').textContent === 'open' ? resolve(true)
		    : Date.now() - t0 > 30000 ? reject(new Error('demo did not connect')) : setTimeout(tick, 10);
		  tick();
		})`, nil)
	}
	waitText := func(p *page, cond string) {
		t.Helper()
		p.Eval(`new Promise((resolve, reject) => {
		  const t0 = Date.now();
		  const $ = (id) => document.getElementById(id).textContent;
		  const tick = () => { try { if (`+cond+`) return resolve(true); } catch (e) {}
		    if (Date.now() - t0 > 30000) return reject(new Error('timed out: `+strings.ReplaceAll(cond, "'", "\\'")+`; page shows: ' +
		      ['conn-label', 'outbox', 'list', 'count', 'tabs-count'].map((id) => id + '=' + JSON.stringify($(id))).join(' ') + '; client has ' + JSON.stringify({keys: demo.client.keys('*'), stats: demo.client.stats})));
		    setTimeout(tick, 10); };
		  tick();
		})`, nil)
	}

	// Tab A adds a todo and bumps the counter through the UI; tab B shows both.
	a.Run(
		chromedp.SendKeys(chromedp.CSS("#text"), "Buy oat milk"),
		chromedp.Click(chromedp.CSS("#add button")),
		chromedp.Click(chromedp.CSS("#inc")),
		chromedp.Click(chromedp.CSS("#inc")),
		chromedp.Click(chromedp.CSS("#inc")),
	)
	a.Run(chromedp.SendKeys(chromedp.CSS("#text"), "Write the release notes"), chromedp.Click(chromedp.CSS("#add button")))
	waitText(bb, `$('list').includes('Buy oat milk') && $('list').includes('Write the release notes') && $('count') === '3' && $('tabs-count') === '2'`)
	// B ticks the first todo off; A sees it.
	bb.Run(chromedp.Click(chromedp.CSS(`#list li:first-child input[type=checkbox]`)))
	waitText(a, `document.querySelector('#list li.done') && document.querySelector('#list li.done').textContent.includes('Buy oat milk') && $('left') === '1 item left'`)

	// A goes offline with the toggle: its writes queue, B does not see them.
	a.Run(chromedp.Click(chromedp.CSS(".switch")))
	waitText(a, `document.getElementById('conn').dataset.state === 'offline'`)
	a.Run(chromedp.SendKeys(chromedp.CSS("#text"), "Queued while offline"), chromedp.Click(chromedp.CSS("#add button")), chromedp.Click(chromedp.CSS("#inc")))
	waitText(a, `$('outbox') === '2' && $('list').includes('Queued while offline') && $('count') === '4'`)
	shotOffline := a.Screenshot()
	if bb.Str(`document.getElementById('list').textContent`) != "" && strings.Contains(bb.Str(`document.getElementById('list').textContent`), "Queued while offline") {
		t.Fatal("a write made offline reached the other tab before the replay")
	}
	// Back online: the outbox replays and B shows the queued writes.
	a.Run(chromedp.Click(chromedp.CSS(".switch")))
	waitText(a, `$('outbox') === '0' && $('conn-label') === 'open'`)
	waitText(bb, `$('list').includes('Queued while offline') && $('count') === '4' && $('tabs-count') === '2'`)

	shot := bb.Screenshot()
	dir := browsertest.ArtifactDir(t)
	for name, img := range map[string][]byte{"demo.png": shot, "demo-offline.png": shotOffline} {
		if err := os.WriteFile(filepath.Join(dir, name), img, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// What B shows, as a person reads it.
	var shown struct {
		Todos []string `json:"todos"`
		Done  []string `json:"done"`
		Count string   `json:"count"`
		Left  string   `json:"left"`
		Tabs  string   `json:"tabs"`
		Conn  string   `json:"conn"`
		Box   string   `json:"outbox"`
	}
	bb.Eval(`(() => {
	  const $ = (id) => document.getElementById(id).textContent;
	  const items = [...document.querySelectorAll('#list li[data-key] .text')];
	  return {todos: items.map((e) => e.textContent), done: [...document.querySelectorAll('#list li.done .text')].map((e) => e.textContent),
	    count: $('count'), left: $('left'), tabs: $('tabs-count'), conn: $('conn-label'), outbox: $('outbox')};
	})()`, &shown)
	if !slices.Equal(shown.Todos, []string{"Buy oat milk", "Write the release notes", "Queued while offline"}) ||
		!slices.Equal(shown.Done, []string{"Buy oat milk"}) || shown.Count != "4" || shown.Left != "2 items left" ||
		shown.Tabs != "2" || shown.Conn != "open" || shown.Box != "0" {
		t.Fatalf("demo tab B shows %+v", shown)
	}
	if v := s.do("GET", "demo:counter"); v.Text() != "4" {
		t.Fatalf("server counter = %q, want 4", v.Text())
	}
}

// TestBrowserKeychangeLatency measures the time from a write on the RESP
// port to the keychange callback in the page, over 1 000 writes one at a
// time, and logs the percentiles (run with -v to see them). It asserts
// nothing about time.
func TestBrowserKeychangeLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("browser benchmark skipped in -short mode")
	}
	bin := servertest.BuildRecached(t)
	s := startServer(t, bin, "--appendonly", "no")
	b := browsertest.Browser(t)
	p := newPage(t, b, "bench", true)
	type seen struct {
		value string
		at    float64 // page clock, Unix ms
		recv  time.Time
	}
	got := make(chan seen, 16)
	p.Run(chromedp.ExposeFunc("benchSeen", func(_ context.Context, args []any) (chromedp.Void, error) {
		if len(args) != 2 {
			return chromedp.Void{}, errors.New("want (value, time)")
		}
		v, _ := args[0].(string)
		at, _ := args[1].(float64)
		got <- seen{value: v, at: at, recv: time.Now()}
		return chromedp.Void{}, nil
	}))
	p.open(s, `{name: 'bench'}`)
	p.waitOpen()
	p.Eval(`c.watch('bench:k', (k, v) => benchSeen(v, performance.timeOrigin + performance.now())).ready`, nil)

	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.port))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	const warmup, n = 50, 1000
	var pageLat, observed []time.Duration
	for i := range warmup + n {
		val := strconv.Itoa(i)
		start := time.Now()
		if v := sendRecv(t, conn, r, "SET", "bench:k", val); v.IsError() {
			t.Fatalf("SET: %s", v.Text())
		}
		var sn seen
		select {
		case sn = <-got:
		case <-time.After(30 * time.Second):
			t.Fatalf("no keychange callback for write %d", i)
		}
		if sn.value != val {
			t.Fatalf("callback saw %q, want %q", sn.value, val)
		}
		if i < warmup {
			continue
		}
		startMs := float64(start.UnixNano()) / 1e6
		pageLat = append(pageLat, time.Duration((sn.at-startMs)*float64(time.Millisecond)))
		observed = append(observed, sn.recv.Sub(start))
	}
	pct := func(d []time.Duration, q float64) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[min(len(s)-1, int(q*float64(len(s))))]
	}
	t.Logf("TCP write → keychange callback in the page, %d writes: p50 %v, p99 %v (page clock); as seen back by the test over CDP: p50 %v, p99 %v",
		n, pct(pageLat, 0.50).Round(time.Microsecond), pct(pageLat, 0.99).Round(time.Microsecond),
		pct(observed, 0.50).Round(time.Microsecond), pct(observed, 0.99).Round(time.Microsecond))
}

func TestBrowserJSONDocumentsAndRateLimitersSync(t *testing.T) {
	bin := servertest.BuildRecached(t)
	s := startServer(t, bin, "--appendonly", "no")
	b := browsertest.Browser(t)
	a := newPage(t, b, "A", true)
	opts := `{patterns: ['doc:*'], name: 'json'}`
	a.open(s, opts)
	a.Eval(`c.query('doc:*', () => {}).ready`, nil)
	a.waitOpen()

	// A backend's json writes on the RESP port reach the page's store with
	// every digit of the numbers and the server's member order.
	mustOK := func(args ...string) {
		t.Helper()
		if v := s.do(args...); v.IsError() {
			t.Fatalf("%q: %s", args, v.Text())
		}
	}
	mustOK("JSET", "doc:1", "$", `{"n": 9007199254740993, "tags": ["a"], "o": {"x": 1}, "2": 2, "1": 1}`)
	a.Eval(`waitFor(() => c.jget('doc:1', '$.n') === '9007199254740993')`, nil)
	mustOK("JMERGE", "doc:1", "$.o", `{"x": null, "y": [1.50, {"z": null}]}`)
	mustOK("JSET", "doc:1", `$.tags[-1]`, `"b"`)
	mustOK("JDEL", "doc:1", "$['2']")
	want := `{"n":9007199254740993,"tags":["b"],"o":{"y":[1.50,{"z":null}]},"1":1}`
	if v := s.do("JGET", "doc:1"); v.Text() != want {
		t.Fatalf("server JGET doc:1 = %s, want %s", v.Text(), want)
	}
	var got string
	a.Eval(`waitFor(() => c.jget('doc:1') === `+strconv.Quote(want)+`).then(() => c.jget('doc:1'))`, &got)
	if got != want {
		t.Fatalf("page sees %s, want %s", got, want)
	}
	var types []string
	a.Eval(`[c.type('doc:1'), c.jtype('doc:1', '$.n'), c.jtype('doc:1', '$.o.y[0]'), c.jtype('doc:1', '$.o.y[-1].z')]`, &types)
	if !slices.Equal(types, []string{"json", "integer", "number", "null"}) {
		t.Fatalf("types %v", types)
	}

	// The page's own json writes reach the server as the page shows them.
	a.Eval(`(async () => {
	  const p = c.jset('doc:2', '$', '{"big": 12345678901234567890, "list": []}');
	  if (c.jget('doc:2', '$.big') !== '12345678901234567890') throw new Error('jset is not shown at once');
	  await p;
	  await c.jarrappend('doc:2', '$.list', {k: 'v'}, 2);
	  await c.jmerge('doc:1', '$', {o: null, m: {deep: true}});
	  await c.jnumincrby('doc:1', '$.n', 1);
	})()`, nil)
	for key, want := range map[string]string{
		"doc:1": `{"n":9007199254740994,"tags":["b"],"1":1,"m":{"deep":true}}`,
		"doc:2": `{"big":12345678901234567890,"list":[{"k":"v"},2]}`,
	} {
		if v := s.do("JGET", key); v.Text() != want {
			t.Fatalf("server JGET %s = %s, want %s", key, v.Text(), want)
		}
		a.Eval(`waitFor(() => c.jget(`+strconv.Quote(key)+`) === `+strconv.Quote(want)+`)`, nil)
	}

	// Times to live and a rate limiter, then a new page hydrates from the
	// live query's qstate and the pushes that follow it.
	mustOK("PEXPIRE", "doc:1", "600000")
	mustOK("SET", "doc:s", "v", "PX", "600000")
	mustOK("THROTTLE", "doc:rl", "5", "1", "60")
	a.Eval(`waitFor(() => c.type('doc:rl') === 'ratelimit' && c.pttl('doc:rl') > 0 && c.pttl('doc:1') > 0)`, nil)

	bb := newPage(t, b, "B", false)
	bb.open(s, `{patterns: ['doc:*'], name: 'json-b'}`)
	bb.Eval(`c.query('doc:*', () => {}).ready`, nil)
	bb.waitOpen()
	var state map[string]any
	bb.Eval(`waitFor(() => c.pttl('doc:rl') > 0 && c.pttl('doc:1') > 0 && c.pttl('doc:s') > 0).then(() => ({
	  doc1: c.jget('doc:1'), doc2: c.jget('doc:2'), rl: c.type('doc:rl'), rlTTL: c.pttl('doc:rl') <= 60000,
	  doc1TTL: c.pttl('doc:1') <= 600000, doc2TTL: c.pttl('doc:2'), sTTL: c.pttl('doc:s') <= 600000,
	  keys: c.keys('doc:*'), unknown: c.stats.unknownEffects}))`, &state)
	wantState := map[string]any{
		"doc1": `{"n":9007199254740994,"tags":["b"],"1":1,"m":{"deep":true}}`, "doc2": `{"big":12345678901234567890,"list":[{"k":"v"},2]}`,
		"rl": "ratelimit", "rlTTL": true, "doc1TTL": true, "doc2TTL": float64(-1), "sTTL": true,
		"keys": []any{"doc:1", "doc:2", "doc:rl", "doc:s"}, "unknown": float64(0),
	}
	if fmt.Sprint(state) != fmt.Sprint(wantState) {
		t.Fatalf("hydrated page B sees %v, want %v", state, wantState)
	}

	// A key made persistent while a page is away has no expiry after its
	// re-hydration.
	bb.Eval(`c.goOffline()`, nil)
	mustOK("PERSIST", "doc:s")
	mustOK("JMERGE", "doc:1", "$", "null")
	bb.Eval(`c.goOnline(); waitFor(() => c.state === 'open' && c.pttl('doc:s') === -1 && c.type('doc:1') === 'none')`, nil)
	a.Eval(`waitFor(() => c.pttl('doc:s') === -1 && c.jget('doc:1') === null)`, nil)
}
