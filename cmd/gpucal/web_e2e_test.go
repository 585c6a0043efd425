package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpucal/gpucal/web"
)

// TestDemoCalendar is the web calendar's demo check: `gpucal demo` (what
// `make run` starts), a few jobs submitted to it, and headless chromium
// photographing its calendar: GPUs as rows, the seeded reservations and the
// jobs (running, and planned with their P90 tails) on them. The PNGs go to
// the test's artifact folder (make test keeps them under test-artifacts/).
func TestDemoCalendar(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the demo's agents run jobs on Linux only")
	}
	bin := browserOrSkip(t)
	url, aliceToken := startDemo(t, `alice (gpucal_\S+)`)
	ctx := context.Background()
	alice := &web.Client{BaseURL: url, Token: aliceToken}
	waitFor(t, 30*time.Second, "the seeded reservations", func() bool {
		rs, err := alice.Reservations(ctx, web.ReservationQuery{})
		return err == nil && len(rs) >= 5
	})
	// A job that runs now, and one that must wait for bob's and alice's
	// H100 windows: the calendar draws it at its planned place.
	for _, req := range []web.SubmitRequest{
		{GPUs: 2, Model: "a100", Name: "tokenize", Type: "other", Hints: &web.Hints{Guess: "2h"}, Command: []string{"sleep", "3600"}},
		{GPUs: 16, Model: "h100", Name: "moe-pretrain", Type: "train", Hints: &web.Hints{Guess: "5h"}, Command: []string{"sleep", "3600"}},
	} {
		if _, err := alice.Submit(ctx, req, ""); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 30*time.Second, "the plan", func() bool {
		q, err := alice.Queue(ctx)
		return err == nil && len(q.Queued) == 1 && q.Queued[0].Prediction != nil && len(q.Running) >= 1
	})

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1500, 1100))
	alloc, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	bctx, cancel = context.WithTimeout(bctx, 90*time.Second)
	defer cancel()

	shoot := func(path, name string) {
		t.Helper()
		if err := chromedp.Do(bctx, chromedp.Navigate(url+path), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`))); err != nil {
			t.Fatalf("opening %s: %v", path, err)
		}
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.ArtifactDir(), name+".png")
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	}
	shoot("/?days=2", "demo-day")
	count := func(sel string) int {
		n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll('`+sel+`').length`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(`.gpu-name[data-gpu]`); n != 32 {
		t.Errorf("%d GPU rows, want the demo's 32", n)
	}
	if n := count(`.ec-event.k-reservation`); n < 4+8+2+8+4 {
		t.Errorf("%d reservation bars, want at least the 26 GPU-windows the demo seeds", n)
	}
	if n := count(`.ec-event.planned`); n != 16 {
		t.Errorf("%d planned job bars, want 16 (moe-pretrain on 16 H100s)", n)
	}
	if n := count(`.ec-event.running`); n < 2 {
		t.Errorf("%d running job bars, want the tokenize job's 2", n)
	}
	shoot("/?view=week", "demo-week")
	shoot("/?days=2&lang=zh", "demo-day-zh")
}

// browserOrSkip returns chromium's path, or skips t without it or without
// the calendar's built assets (unless GPUCAL_BROWSER_TESTS=require).
func browserOrSkip(t *testing.T) string {
	t.Helper()
	skip := func(why string) {
		if os.Getenv("GPUCAL_BROWSER_TESTS") == "require" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	if !web.UIBuilt() {
		skip("the calendar's assets are not built (make build)")
	}
	for _, name := range []string{os.Getenv("GPUCAL_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); name != "" && err == nil {
			return p
		}
	}
	skip("no chromium found (apt-get install chromium)")
	return ""
}
