package web_test

// End-to-end tests of realtime-client.js in headless Chromium against the
// real recached binary: each page imports /realtime-client.js from the
// server's realtime port and connects over WebSocket, some through a TCP
// relay the test cuts (rttest.Proxy), as an application would.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/server/servertest/browsertest"
	"github.com/recached/recached/sync/realtime/internal/rttest"
)

// chat is the script that sets a page up as a small chat: window.rt is the
// client, #state shows its state, #log the messages of chat:lobby and
// #members its presence.
const chat = `
window.setup = async (url, opts, name) => {
  const m = await import('/realtime-client.js');
  window.m = m;
  document.open();
  document.write('<!doctype html><title>chat ' + name + '</title><style>body{font:15px system-ui;margin:24px}' +
    '#state{padding:2px 8px;border-radius:8px;background:#eee}ul{border:1px solid #ccc;min-height:40px;padding:8px 28px}</style>' +
    '<h1>' + name + ' <span id="state"></span></h1><h2>Members</h2><ul id="members"></ul><h2>Messages</h2><ul id="log"></ul>');
  document.close();
  window.states = [];
  window.errors = [];
  const rt = new m.Realtime(url, {minRetry: 20, maxRetry: 300, ...opts});
  window.rt = rt;
  const show = () => { document.getElementById('state').textContent = rt.state; };
  rt.on('state', (e) => { states.push(e.current); show(); });
  rt.on('error', (e) => errors.push(e.code + ' ' + e.message));
  show();
  return true;
};
window.join = async (channel) => {
  const ch = rt.channels.get(channel);
  window.ch = ch;
  const members = () => {
    document.getElementById('members').replaceChildren(...ch.presence.members.map((p) => {
      const li = document.createElement('li');
      li.textContent = p.clientId + (p.data && p.data.status ? ' (' + p.data.status + ')' : '');
      return li;
    }));
  };
  ch.presence.subscribe(members);
  await ch.subscribe((msg) => {
    const li = document.createElement('li');
    li.textContent = msg.data.from + ': ' + msg.data.text;
    document.getElementById('log').appendChild(li);
  });
  await ch.presence.enter({status: 'here'});
  await ch.presence.get();
  members();
  return rt.connectionId;
};
window.say = (text) => ch.publish('text', {from: rt.clientId, text});
window.logText = () => [...document.querySelectorAll('#log li')].map((li) => li.textContent);
window.memberText = () => [...document.querySelectorAll('#members li')].map((li) => li.textContent);
`

// page is a browser tab with the chat script.
type page struct{ *browsertest.Page }

func open(t *testing.T, b context.Context, srv *rttest.Server, name string, first bool) page {
	t.Helper()
	p := page{browsertest.NewPage(t, b, name, first)}
	p.Run(chromedp.Navigate(srv.HTTPURL("/realtime-client.js")))
	p.Eval(browsertest.WaitFor+chat+";1", nil)
	return p
}

func (p page) setup(url, opts string) {
	p.T.Helper()
	p.Eval(`setup(`+strconv.Quote(url)+`, `+opts+`, `+strconv.Quote(p.Name)+`)`, nil)
}

func (p page) strings(script string) []string {
	p.T.Helper()
	var out []string
	p.Eval(script, &out)
	return out
}

func TestBrowserChatSurvivesCutsAndRestarts(t *testing.T) {
	srv := rttest.Start(t, servertest.BuildRecached(t), "--appendfsync", "always")
	proxy := rttest.NewProxy(t, fmt.Sprintf("127.0.0.1:%d", srv.RTPort))
	b := browsertest.Browser(t)
	alice := open(t, b, srv, "alice", true)
	bob := open(t, b, srv, "bob", false)
	alice.setup(proxy.URL(), `{key: '`+rttest.Key1+`', clientId: 'alice'}`)
	bob.setup(srv.URL(), `{key: '`+rttest.Key1+`', clientId: 'bob'}`)
	alice.Eval(`join('chat:lobby')`, nil)
	bob.Eval(`join('chat:lobby')`, nil)
	for _, p := range []page{alice, bob} {
		p.Eval(`waitFor(() => memberText().join() === 'alice (here),bob (here)')`, nil)
	}

	alice.Eval(`say('hello bob')`, nil)
	bob.Eval(`say('hi alice')`, nil)
	want := []string{"alice: hello bob", "bob: hi alice"}
	for _, p := range []page{alice, bob} {
		p.Eval(`waitFor(() => logText().length === 2)`, nil)
		if got := p.strings(`logText()`); !slices.Equal(got, want) {
			t.Fatalf("%s shows %v", p.Name, got)
		}
	}

	// Alice's network goes down while bob writes; bob sees her leave.
	firstID := alice.Str(`rt.connectionId`)
	proxy.Block()
	alice.Eval(`waitFor(() => rt.state !== 'connected')`, nil)
	bob.Eval(`waitFor(() => memberText().join() === 'bob (here)')`, nil)
	for i := 1; i <= 5; i++ {
		bob.Eval(`say('while you were away `+strconv.Itoa(i)+`')`, nil)
	}
	proxy.Unblock()
	for i := 1; i <= 5; i++ {
		want = append(want, "bob: while you were away "+strconv.Itoa(i))
	}
	alice.Eval(`waitFor(() => rt.state === 'connected' && logText().length >= 7)`, nil)
	bob.Eval(`waitFor(() => memberText().join() === 'alice (here),bob (here)')`, nil)
	if alice.Str(`rt.connectionId`) == firstID {
		t.Fatal("alice's connection id did not change: no reconnect happened")
	}

	// The server is killed and started again on the same port and
	// directory; alice stays away until bob wrote on the new process.
	proxy.Block()
	srv.Kill()
	srv.Start()
	bob.Eval(`waitFor(() => rt.state === 'connected' && ch.presence.members.length > 0)`, nil)
	bob.Eval(`say('after the restart')`, nil)
	proxy.Unblock()
	want = append(want, "bob: after the restart")
	alice.Eval(`say('back again')`, nil)
	want = append(want, "alice: back again")
	for _, p := range []page{alice, bob} {
		p.Eval(`waitFor(() => logText().length >= `+strconv.Itoa(len(want))+` && memberText().join() === 'alice (here),bob (here)')`, nil)
	}
	// Nothing lost, nothing twice, in order: a marker written last is the
	// last line.
	bob.Eval(`say('the end')`, nil)
	want = append(want, "bob: the end")
	alice.Eval(`waitFor(() => logText().includes('bob: the end'))`, nil)
	got := alice.strings(`logText()`)
	if !slices.Equal(got, want) {
		t.Fatalf("alice's log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	states := alice.strings(`states`)
	if !slices.Contains(states, "disconnected") || states[len(states)-1] != "connected" {
		t.Fatalf("alice's states %v", states)
	}

	shot := alice.Screenshot()
	if err := os.WriteFile(filepath.Join(browsertest.ArtifactDir(t), "realtime-chat.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	var dom struct {
		State   string   `json:"state"`
		Members []string `json:"members"`
		Title   string   `json:"title"`
	}
	alice.Eval(`({state: document.getElementById('state').textContent, members: memberText(), title: document.title})`, &dom)
	if dom.State != "connected" || !slices.Equal(dom.Members, []string{"alice (here)", "bob (here)"}) || dom.Title != "chat alice" {
		t.Fatalf("alice's page shows %+v", dom)
	}
}

func TestBrowserTokenRenewedBeforeExpiry(t *testing.T) {
	bin := servertest.BuildRecached(t)
	srv := rttest.Start(t, bin)
	b := browsertest.Browser(t)
	p := open(t, b, srv, "renewing", true)
	var minted atomic.Int32
	p.Run(chromedp.ExposeFunc("mintToken", func(context.Context, string) (string, error) {
		minted.Add(1)
		return rttest.MintToken(bin, srv.KeysFile, "k1", 3*time.Second, "", "carol")
	}))
	p.setup(srv.URL(), `{authCallback: () => mintToken(''), renewBefore: 1500, clientId: 'carol'}`)
	p.Eval(`join('chat:tok')`, nil)
	id := p.Str(`rt.connectionId`)
	// Tokens live 3 s and are renewed 1.5 s ahead: by the fourth the
	// connection has outlived two of them.
	deadline := time.Now().Add(30 * time.Second)
	for minted.Load() < 4 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if minted.Load() < 4 {
		t.Fatalf("authCallback called %d times; states %v, errors %v", minted.Load(), p.strings(`states`), p.strings(`errors`))
	}
	p.Eval(`say('still here')`, nil)
	p.Eval(`waitFor(() => logText().includes('carol: still here'))`, nil)
	if states := p.strings(`states`); !slices.Equal(states, []string{"connecting", "connected"}) {
		t.Fatalf("states %v: the connection should have stayed up through the renewals", states)
	}
	if got := p.Str(`rt.connectionId`); got != id {
		t.Fatalf("connection id changed from %q to %q", id, got)
	}
	if errs := p.strings(`errors`); len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
}

func TestBrowserForbiddenChannelLeavesOthersWorking(t *testing.T) {
	srv := rttest.Start(t, servertest.BuildRecached(t))
	b := browsertest.Browser(t)
	p := open(t, b, srv, "limited", true)
	p.setup(srv.URL(), `{key: '`+rttest.Key2+`', clientId: 'dan'}`)
	p.Eval(`join('open:room')`, nil)
	var res map[string]string
	p.Eval(`(async () => {
	  const outcome = (pr) => pr.then(() => 'ok', (e) => String(e.code));
	  return {
	    publish: await outcome(rt.channels.get('ro:news').publish('x', 1)),
	    subscribe: await outcome(rt.channels.get('secret').subscribe(() => {})),
	    enter: await outcome(rt.channels.get('ro:news').presence.enter()),
	    allowed: await outcome(rt.channels.get('ro:news').subscribe((m) => window.ro = m.data)),
	  };
	})()`, &res)
	if fmt.Sprint(res) != "map[allowed:ok enter:403 publish:403 subscribe:403]" {
		t.Fatalf("outcomes %v", res)
	}
	other := open(t, b, srv, "full", false)
	other.setup(srv.URL(), `{key: '`+rttest.Key1+`', clientId: 'erin'}`)
	other.Eval(`join('open:room')`, nil)
	other.Eval(`say('can you hear me').then(() => rt.channels.get('ro:news').publish('n', 42))`, nil)
	p.Eval(`waitFor(() => logText().includes('erin: can you hear me') && window.ro === 42)`, nil)
	p.Eval(`say('yes')`, nil)
	other.Eval(`waitFor(() => logText().includes('dan: yes'))`, nil)
	if st := p.Str(`rt.state`); st != "connected" {
		t.Fatalf("state %s after the 403s", st)
	}
}

func TestBrowserUnauthorizedIsTerminal(t *testing.T) {
	srv := rttest.Start(t, servertest.BuildRecached(t))
	b := browsertest.Browser(t)
	p := open(t, b, srv, "intruder", true)
	p.setup(srv.URL(), `{key: 'wrong.k1'}`)
	var got map[string]any
	p.Eval(`rt.whenState('connected').then(() => ({}), (e) => ({code: e.code, states}))`, &got)
	if got["code"] != float64(401) || fmt.Sprint(got["states"]) != "[connecting failed]" {
		t.Fatalf("got %v, want 401 and [connecting failed]", got)
	}
}
