// Package browsertest drives headless Chromium for the end-to-end tests of
// the browser clients (sync/web, sync/realtime/web): a browser with a fresh
// profile, tabs whose console output is shown when a test fails, scripts
// evaluated with their promise awaited, screenshots.
//
// It needs Debian's chromium (scripts/install-test-deps.sh installs it);
// without it a test is skipped with a message saying so, or fails under CI.
package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/recached/recached/server/servertest"
)

// Chromium returns the path of the browser, or skips the test.
func Chromium(tb testing.TB) string {
	tb.Helper()
	for _, p := range []string{os.Getenv("RECACHED_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		tb.Fatal("chromium not found and CI is set: run scripts/install-test-deps.sh (or set RECACHED_CHROMIUM)")
	}
	tb.Skip("chromium not found: run scripts/install-test-deps.sh (or set RECACHED_CHROMIUM)")
	return ""
}

// Browser starts headless Chromium with a fresh profile; its first tab is
// the returned context. It stops when the test ends.
func Browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 820),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx); err != nil {
		cancelBrowser()
		cancelAlloc()
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	return bctx
}

// Page is one browser tab.
type Page struct {
	T    *testing.T
	Name string
	Ctx  context.Context
	Logs *servertest.SafeBuffer // the tab's console output
}

// NewPage opens a tab (the browser's first one when first is set) and
// collects its console output, shown when the test fails.
func NewPage(t *testing.T, bctx context.Context, name string, first bool) *Page {
	t.Helper()
	ctx := bctx
	if !first {
		var cancel context.CancelFunc
		ctx, cancel = chromedp.NewContext(bctx)
		t.Cleanup(cancel)
		if err := chromedp.Do(ctx); err != nil {
			t.Fatalf("open tab %s: %v", name, err)
		}
	}
	p := &Page{T: t, Name: name, Ctx: ctx, Logs: &servertest.SafeBuffer{}}
	lctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range chromedp.Console(lctx) {
			if err != nil {
				return
			}
			fmt.Fprintf(p.Logs, "%s\n", m)
		}
	}()
	t.Cleanup(func() {
		stop()
		<-done
		if t.Failed() && p.Logs.String() != "" {
			t.Logf("console of %s:\n%s", name, p.Logs.String())
		}
	})
	return p
}

// Run runs actions with a time limit.
func (p *Page) Run(actions ...chromedp.Action[chromedp.Void]) {
	p.T.Helper()
	ctx, cancel := context.WithTimeout(p.Ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.T.Fatalf("%s: %v", p.Name, err)
	}
}

// Eval evaluates a script (awaiting a promise it returns) and decodes its
// JSON value into out (nil: ignore it).
func (p *Page) Eval(script string, out any) {
	p.T.Helper()
	if err := p.TryEval(script, out); err != nil {
		p.T.Fatalf("%s: %v\nscript: %s", p.Name, err, script)
	}
}

// TryEval is Eval returning its error.
func (p *Page) TryEval(script string, out any) error {
	ctx, cancel := context.WithTimeout(p.Ctx, 90*time.Second)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](script, chromedp.EvalAwaitPromise))
	if err != nil {
		return err
	}
	if out != nil && len(raw) > 0 {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// Str evaluates a script whose value is a string.
func (p *Page) Str(script string) string {
	p.T.Helper()
	var s string
	p.Eval(script, &s)
	return s
}

// Screenshot captures the tab as PNG.
func (p *Page) Screenshot() []byte {
	p.T.Helper()
	ctx, cancel := context.WithTimeout(p.Ctx, 30*time.Second)
	defer cancel()
	img, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.T.Fatalf("screenshot of %s: %v", p.Name, err)
	}
	return img
}

// ArtifactDir returns test-artifacts/ at the module root, where tests leave
// screenshots for people to look at.
func ArtifactDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(servertest.ModuleRoot(t), "test-artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// WaitFor is a script defining window.waitFor(f, ms): a promise resolved
// with f()'s first truthy value, polled every 5 ms, rejected after ms
// (default 30 s). Evaluate it once per page load.
const WaitFor = `
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
`
