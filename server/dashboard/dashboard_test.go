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
	s := servertest.StartServers(t, server.Config{}, nil)
	c := servertest.Dial(t, s.RESP)
	const keys = 25
	for i := 0; i < keys; i++ {
		servertest.MustDo(t, c, "SET", fmt.Sprintf("k%d", i), "v")
	}
	servertest.MustDo(t, c, "GET", "k0")

	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	wc, resp, err := d.Dial("ws://"+s.WS+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	defer wc.Close()
	// Once it answers, the engine counts the WebSocket session.
	if err := wc.WriteMessage(websocket.TextMessage, servertest.Encode("PING")); err != nil {
		t.Fatal(err)
	}
	wc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, msg, err := wc.ReadMessage(); err != nil || string(msg) != "+PONG\r\n" {
		t.Fatalf("PING over WebSocket: %q, %v", msg, err)
	}

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
}
