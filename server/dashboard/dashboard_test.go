package dashboard_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/server/servertest/browsertest"
	recsync "github.com/recached/recached/sync"
)

// TestFilesServed checks that the bridge serves every file of the page.
func TestFilesServed(t *testing.T) {
	s := servertest.StartServers(t, server.Config{}, nil)
	for _, tc := range []struct{ path, ctype, has string }{
		{"/dashboard/", "text/html", `<script src="dashboard.js">`},
		{"/dashboard/dashboard.js", "javascript", "/dashboard/live"},
		{"/dashboard/dashboard.css", "text/css", ".tile"},
	} {
		resp, err := http.Get("http://" + s.WS + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s, %v", tc.path, resp.Status, err)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.Contains(ct, tc.ctype) {
			t.Errorf("GET %s: Content-Type %q, want %s", tc.path, ct, tc.ctype)
		}
		if !strings.Contains(string(body), tc.has) {
			t.Errorf("GET %s: no %q in the body", tc.path, tc.has)
		}
	}
}

// TestDashboardInChromium loads the dashboard in headless Chromium after a
// known workload, takes a screenshot, and checks what its DOM shows.
func TestDashboardInChromium(t *testing.T) {
	b := browsertest.Browser(t)
	const secret = "s3cret"
	s := servertest.StartServers(t, server.Config{TokenSecret: secret}, nil)
	c := servertest.Dial(t, s.RESP)
	const keys = 25
	for i := 0; i < keys; i++ {
		servertest.MustDo(t, c, "SET", fmt.Sprintf("k%d", i), "v")
	}
	servertest.MustDo(t, c, "GET", "k0")

	// A sync client scoped by its token; once it answers, the engine
	// counts the WebSocket session.
	wc := syncClient(t, s.WS, secret, "user:42:*", "room:1")
	defer wc.Close()

	p := browsertest.NewPage(t, b, "dashboard", true)
	p.Run(chromedp.Navigate("http://" + s.WS + "/dashboard/"))
	p.Eval(browsertest.WaitFor+";1", nil)
	// Two updates: the commands per second need a previous one.
	p.Eval(`waitFor(() => window.dashboard && window.dashboard.updates >= 2)`, nil)
	shot := p.Screenshot()
	if err := os.WriteFile(filepath.Join(browsertest.ArtifactDir(t), "dashboard.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}

	text := func(sel string) string {
		return p.Str(`document.querySelector(` + strconv.Quote(sel) + `).textContent`)
	}
	// The RESP client and a WebSocket sync client (the page's own socket
	// is the dashboard's, not a client).
	checks := []struct{ sel, want string }{
		{"#status", "live"},
		{"#clients", "2"},
		{"#keys", strconv.Itoa(keys)},
		{"#wsconns", "1"},
		{"#keyspace tbody tr td:nth-child(1)", "db0"},
		{"#keyspace tbody tr td:nth-child(2)", strconv.Itoa(keys)},
	}
	for _, tc := range checks {
		if got := text(tc.sel); got != tc.want {
			t.Errorf("%s = %q, want %q", tc.sel, got, tc.want)
		}
	}
	var lat map[string][]string
	p.Eval(`Object.fromEntries([...document.querySelectorAll('#latency tbody tr')].map(tr => [tr.cells[0].textContent, [...tr.cells].slice(1).map(td => td.textContent)]))`, &lat)
	if row := lat["set"]; len(row) != 4 || row[0] != strconv.Itoa(keys) || row[1] == "" {
		t.Errorf("latency row of set: %q (all rows %q)", row, lat)
	}
	if ops := text("#ops"); ops == "–" || ops == "" {
		t.Errorf("#ops = %q, want a rate", ops)
	}
	if mem := text("#memory"); !strings.HasSuffix(mem, "B") {
		t.Errorf("#memory = %q, want a size", mem)
	}

	// The sync connections table follows connections as they come and
	// go, each with its token's patterns.
	scopes := func() []string {
		var rows []string
		p.Eval(`[...document.querySelectorAll('#sync tbody tr')].map(tr => tr.cells[2].textContent + ' ' + tr.cells[4].textContent)`, &rows)
		return rows
	}
	if got := scopes(); len(got) != 1 || got[0] != "websocket user:42:* room:1" {
		t.Errorf("sync connections: %q, want the scoped client's", got)
	}
	second := syncClient(t, s.WS, secret, "doc:*")
	p.Eval(`waitFor(() => document.querySelectorAll('#sync tbody tr').length == 2)`, nil)
	if got := scopes(); len(got) != 2 || got[1] != "websocket doc:*" {
		t.Errorf("sync connections after a second client: %q", got)
	}
	shot = p.Screenshot()
	if err := os.WriteFile(filepath.Join(browsertest.ArtifactDir(t), "dashboard-sync.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	wc.Close()
	p.Eval(`waitFor(() => document.querySelectorAll('#sync tbody tr').length == 1)`, nil)
	if got := scopes(); len(got) != 1 || got[0] != "websocket doc:*" {
		t.Errorf("sync connections after the first left: %q", got)
	}
	second.Close()
}

// syncClient opens a WebSocket bridge connection scoped by a token for
// patterns, signed with secret, and waits for the bridge to take it.
func syncClient(t *testing.T, addr, secret string, patterns ...string) *websocket.Conn {
	t.Helper()
	tok, err := recsync.SignToken([]byte(secret), patterns, 0)
	if err != nil {
		t.Fatal(err)
	}
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	wc, resp, err := d.Dial("ws://"+addr+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := wc.WriteMessage(websocket.TextMessage, servertest.Encode("SYNC", "TOKEN", tok)); err != nil {
		t.Fatal(err)
	}
	wc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, msg, err := wc.ReadMessage(); err != nil || len(msg) == 0 || msg[0] == '-' {
		t.Fatalf("SYNC TOKEN over WebSocket: %q, %v", msg, err)
	}
	return wc
}
