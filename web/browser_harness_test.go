package web_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/store"
	"github.com/gpucal/gpucal/store/storetest"
	"github.com/gpucal/gpucal/web"
)

// The browser tests drive Debian's chromium (headless, no sandbox, no
// background networking, a fresh profile each) against a real server on a
// real SQLite database, on the real clock. They skip when chromium or the
// built calendar assets are missing, unless GPUCAL_BROWSER_TESTS=require
// (CI sets it), when they fail instead.

// chromium returns the browser to drive, or skips t.
func chromium(t *testing.T) string {
	t.Helper()
	if !web.UIBuilt() {
		skipOrFail(t, "the calendar's assets are not built (make build, or cd web/ui && npm ci && npm run build)")
	}
	for _, name := range []string{os.Getenv("GPUCAL_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	skipOrFail(t, "no chromium found (apt-get install chromium, or set GPUCAL_CHROMIUM)")
	return ""
}

func skipOrFail(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("GPUCAL_BROWSER_TESTS") == "require" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// browserEnv is a server with a demo-like cluster and a browser to look at it.
type browserEnv struct {
	url    string
	db     *store.DB
	svc    *core.Service
	tokens map[string]string // user → API token
	hour   time.Time         // the start of the current hour
	exec   string
}

// newBrowserEnv starts a server over nodes × 8 A100/H100 GPUs (half each)
// with users alice (project nlp) and bob (vision), and a browser.
func newBrowserEnv(t *testing.T, nodes int, public bool) *browserEnv {
	t.Helper()
	bin := chromium(t)
	ctx := context.Background()
	db, err := store.Open(ctx, storetest.SQLite(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc := core.NewService(db)
	e := &browserEnv{db: db, svc: svc, tokens: map[string]string{}, hour: time.Now().UTC().Truncate(time.Hour), exec: bin}
	for _, u := range []string{"alice", "bob"} {
		if e.tokens[u], err = svc.CreateToken(ctx, core.System, u, "browser test", false); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []core.Project{{Name: "nlp", Members: []core.Member{{User: "alice", Role: core.RoleAdmin}}},
		{Name: "vision", Members: []core.Member{{User: "bob", Role: core.RoleAdmin}}}} {
		if _, err := svc.AddProject(ctx, core.System, p); err != nil {
			t.Fatal(err)
		}
	}
	for i := range nodes {
		name, model, mib := fmt.Sprintf("a100-%d", i+1), "NVIDIA A100-SXM4-80GB", int64(81920)
		if i >= (nodes+1)/2 {
			name, model, mib = fmt.Sprintf("h100-%d", i+1-(nodes+1)/2), "NVIDIA H100 80GB HBM3", 81559
		}
		n := core.Node{Name: name}
		for g := range 8 {
			n.GPUs = append(n.GPUs, core.GPU{Index: g, Name: model, MemoryMiB: mib, UUID: fmt.Sprintf("GPU-%s-%d", name, g)})
		}
		if _, err := svc.AddNode(ctx, core.System, n); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(web.NewServer(web.Config{Service: svc, Keys: db, Ready: db.Ping, Public: public}))
	t.Cleanup(srv.Close)
	e.url = srv.URL
	return e
}

// tab starts a browser with a fresh profile and opens a tab whose console
// errors fail t. It ends with t.
func (e *browserEnv) tab(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(e.exec), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 1000))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		cancelTimeout()
		cancel()
		<-done
	})
	go func() {
		defer close(done)
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			// Failed requests are the tests' own doing (a wrong token, a
			// conflict); the page's errors are what fails a test.
			if m.IsException() || m.Type == chromedp.ConsoleError && m.Source != "network" {
				t.Errorf("browser console: %s", m)
			} else {
				t.Logf("browser console: %s", m)
			}
		}
	}()
	return ctx
}

// book books as user through a service whose clock is an hour behind, so
// that a booking may have begun already (as the demo seeds them).
func (e *browserEnv) book(t *testing.T, user string, req core.BookRequest) core.Reservation {
	t.Helper()
	a, err := e.svc.Authenticate(context.Background(), e.tokens[user])
	if err != nil {
		t.Fatal(err)
	}
	earlier := core.NewService(e.db, core.WithClock(func() time.Time { return e.hour.Add(-time.Hour) }))
	r, err := earlier.Book(context.Background(), a, req)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// open loads path and waits until the calendar has drawn its data.
func open(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`))); err != nil {
		t.Fatalf("opening %s: %v", url, err)
	}
}

// eval runs JavaScript in the page and returns its value.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluating %s: %v", js, err)
	}
	return v
}

// screenshot saves the whole page as name.png under the test's artifact
// folder (go test -artifacts keeps it).
func screenshot(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.ArtifactDir(), name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
	return p
}

// waitJS polls a JavaScript condition until it holds.
func waitJS(t *testing.T, ctx context.Context, what, cond string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, strings.TrimSpace(cond), err)
	}
}
