package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/web"
)

// rowsOf returns, for each element drawn for item id, the GPU whose row it
// sits on: the ID of the GPU label whose row head spans the element's middle.
const rowsOf = `((id) => {
  const heads = [...document.querySelectorAll('.gpu-name[data-gpu]')].map((l) => [Number(l.dataset.gpu), l.closest('.ec-row-head').getBoundingClientRect()]);
  return [...document.querySelectorAll('[data-item="' + id + '"]')].map((el) => {
    const r = el.getBoundingClientRect(), y = (r.top + r.bottom) / 2;
    const h = heads.find(([, b]) => b.top <= y && y < b.bottom);
    return h ? h[0] : -1;
  }).sort((a, b) => a - b);
})`

func gpuIDs(r core.Reservation) []int64 {
	var ids []int64
	for _, g := range r.GPUs {
		ids = append(ids, g.ID)
	}
	slices.Sort(ids)
	return ids
}

// TestBrowserCalendar loads the public calendar without signing in: the
// reservations are drawn on their GPUs' rows; filtering by user hides the
// others' bookings; the day and week views are photographed.
func TestBrowserCalendar(t *testing.T) {
	e := newBrowserEnv(t, 4, true)
	h := e.hour
	alice := e.book(t, "alice", core.BookRequest{GPUs: 4, Model: "a100", Node: "a100-1", Start: h.Add(-time.Hour), End: h.Add(3 * time.Hour), Project: "nlp", Note: "llama-7b finetune"})
	bob := e.book(t, "bob", core.BookRequest{GPUs: 8, Model: "h100", SameNode: true, Start: h.Add(time.Hour), End: h.Add(7 * time.Hour), Project: "vision", Note: "vit-l pretraining"})
	bob2 := e.book(t, "bob", core.BookRequest{GPUs: 2, Model: "a100", Start: h.Add(2 * time.Hour), End: h.Add(5 * time.Hour), Project: "vision", Note: "eval sweep"})
	ctx := e.tab(t)
	open(t, ctx, e.url+"/?days=2")

	for _, r := range []core.Reservation{alice, bob, bob2} {
		got := eval[[]int64](t, ctx, rowsOf+`("`+r.Name()+`")`)
		if want := gpuIDs(r); !slices.Equal(got, want) {
			t.Errorf("%s (%s) is drawn on the rows of GPUs %v, want %v", r.Name(), r.Owner, got, want)
		}
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('.gpu-name[data-gpu]').length`); n != 32 {
		t.Errorf("%d GPU rows, want 32", n)
	}
	screenshot(t, ctx, "day")

	// Filter by user: only alice's booking stays.
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#f-user"), "alice"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('f-user').dispatchEvent(new Event('change'))`)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "bob's bookings to go", `document.querySelectorAll('[data-item="`+bob.Name()+`"], [data-item="`+bob2.Name()+`"]').length === 0`)
	if n := eval[int](t, ctx, `document.querySelectorAll('[data-item="`+alice.Name()+`"]').length`); n != 4 {
		t.Errorf("alice's %s is drawn %d times after filtering, want 4", alice.Name(), n)
	}

	// The week view, unfiltered.
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#f-user"), ""),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('f-user').dispatchEvent(new Event('change'))`),
		chromedp.Click(chromedp.CSS("#view-week"))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the week view", `!!document.querySelector('.ec-week-view') && document.querySelectorAll('[data-item="`+bob.Name()+`"]').length === 8`)
	screenshot(t, ctx, "week")
}

// TestBrowserBookByDrag signs in with an API token, drags across free
// hours on a GPU's row, books them in the form the drag opened, and finds
// the reservation through the API; then an event the server pushes (bob
// books through the API) shows without a reload.
func TestBrowserBookByDrag(t *testing.T) {
	e := newBrowserEnv(t, 2, false)
	ctx := e.tab(t)

	// Signing in with a wrong token says so; the right one lands on the calendar.
	if err := chromedp.Do(ctx, chromedp.Navigate(e.url+"/"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SetValue(chromedp.CSS("#token"), "gpucal_wrong"), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS(".error"))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#token"), e.tokens["alice"]), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`))); err != nil {
		t.Fatal(err)
	}
	open(t, ctx, e.url+"/?days=2")
	if me := eval[string](t, ctx, `document.getElementById('me').textContent`); me != "alice" {
		t.Fatalf("signed in as %q, want alice", me)
	}

	// Drag on a100-1's GPU 3 from the start of the slot two hours ahead to
	// the end of the slot four hours ahead.
	var gpu int64
	for _, n := range eval[[]web.Node](t, ctx, `fetch('/api/v1/nodes').then((r) => r.json())`) {
		if n.Name == "a100-1" {
			gpu = n.GPUs[3].ID
		}
	}
	type point struct{ X, Y float64 }
	type drag struct {
		From, To   point
		Start, End string
	}
	d := eval[drag](t, ctx, fmt.Sprintf(`(() => {
  const row = document.querySelector('.gpu-name[data-gpu="%d"]').closest('.ec-row-head').getBoundingClientRect();
  const slots = [...document.querySelectorAll('.ec-header .ec-slot time')];
  const now = Date.now();
  const i = slots.findIndex((s) => new Date(s.getAttribute('datetime')).getTime() > now + 3600e3);
  const a = slots[i].parentElement, b = slots[i + 2].parentElement;
  a.scrollIntoView({block: 'nearest', inline: 'center'});
  const ra = a.getBoundingClientRect(), rb = b.getBoundingClientRect(), r2 = document.querySelector('.gpu-name[data-gpu="%d"]').closest('.ec-row-head').getBoundingClientRect();
  const y = (r2.top + r2.bottom) / 2;
  return {From: {X: ra.left + 4, Y: y}, To: {X: rb.right - 4, Y: y},
    Start: new Date(slots[i].getAttribute('datetime')).toISOString(),
    End: new Date(new Date(slots[i + 2].getAttribute('datetime')).getTime() + 3600e3).toISOString()};
})()`, gpu, gpu))
	held := func(p *input.DispatchMouseEventParams) { p.Button, p.Buttons = input.MouseButtonLeft, 1 }
	steps := []chromedp.Action[chromedp.Void]{chromedp.MouseEvent(chromedp.MouseMoved, d.From.X, d.From.Y),
		chromedp.MouseEvent(chromedp.MousePressed, d.From.X, d.From.Y, held, chromedp.ClickCount(1))}
	for i := 1; i <= 8; i++ {
		x := d.From.X + (d.To.X-d.From.X)*float64(i)/8
		steps = append(steps, chromedp.MouseEvent(chromedp.MouseMoved, x, d.From.Y, held))
	}
	steps = append(steps, chromedp.MouseEvent(chromedp.MouseReleased, d.To.X, d.To.Y, held, chromedp.ClickCount(1)),
		chromedp.WaitVisible(chromedp.CSS("#book-dialog[open]")))
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("dragging: %v", err)
	}
	if node := eval[string](t, ctx, `document.getElementById('b-node').value`); node != "a100-1" {
		t.Errorf("the form says node %q, want a100-1", node)
	}
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#b-note"), "dragged"), chromedp.SetValue(chromedp.CSS("#b-project"), "nlp")); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "booking-form")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#book-submit")), chromedp.WaitVisible(chromedp.CSS(`#book-result[data-state]`))); err != nil {
		t.Fatal(err)
	}
	if st := eval[string](t, ctx, `document.getElementById('book-result').dataset.state + ': ' + document.getElementById('book-result').textContent`); st[:6] != "booked" {
		t.Fatalf("the form answered %q, want booked", st)
	}
	id := eval[string](t, ctx, `document.getElementById('book-result').dataset.reservation`)
	alice := &web.Client{BaseURL: e.url, Token: e.tokens["alice"]}
	r, err := alice.Reservation(context.Background(), id)
	if err != nil {
		t.Fatalf("the API does not know %s: %v", id, err)
	}
	start, end := r.Start.Format(time.RFC3339), r.End.Format(time.RFC3339)
	if r.Owner != "alice" || r.Project != "nlp" || r.Note != "dragged" || len(r.GPUs) != 1 || r.GPUs[0].Node != "a100-1" ||
		start != mustUTC(t, d.Start) || end != mustUTC(t, d.End) {
		t.Errorf("booked %+v; want alice's 1 GPU on a100-1 from %s to %s, noted", r, d.Start, d.End)
	}
	// A second booking on top of it is refused with alternatives, in the form.
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#b-gpus"), "8"), chromedp.Click(chromedp.CSS("#book-submit")),
		chromedp.WaitVisible(chromedp.CSS(`#book-result[data-state="refused"] .alts`))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "booking-conflict")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#book-close"))); err != nil {
		t.Fatal(err)
	}

	// Live: bob books through the API; the page shows it without reloading.
	eval[chromedp.Void](t, ctx, `window.gpucalNoReload = 1`)
	b := &web.Client{BaseURL: e.url, Token: e.tokens["bob"]}
	br, err := b.Book(context.Background(), web.BookRequest{GPUs: 8, Model: "h100", Start: e.hour.Add(3 * time.Hour).Format(time.RFC3339),
		End: e.hour.Add(6 * time.Hour).Format(time.RFC3339), Note: "pushed"}, "")
	if err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, br.ID+" to appear", `document.querySelectorAll('[data-item="`+br.ID+`"]').length === 8 && window.gpucalNoReload === 1`)
	screenshot(t, ctx, "after-push")
}

func mustUTC(t *testing.T, s string) string {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v.UTC().Format(time.RFC3339)
}

// TestBrowserSignInLink signs in with a one-time link, as /gpu web sends
// it: the link's page asks first, the button signs in, and the link works
// once. Signed in, alice cancels her booking from its details.
func TestBrowserSignInLink(t *testing.T) {
	e := newBrowserEnv(t, 1, false)
	r := e.book(t, "alice", core.BookRequest{GPUs: 2, Start: e.hour.Add(2 * time.Hour), End: e.hour.Add(4 * time.Hour), Note: "to cancel"})
	a, err := e.svc.Authenticate(context.Background(), e.tokens["alice"])
	if err != nil {
		t.Fatal(err)
	}
	link, _, err := e.svc.CreateSignInLink(context.Background(), a, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := e.tab(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(e.url+"/signin/link?t="+link), chromedp.Click(chromedp.CSS("#link-signin")),
		chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`))); err != nil {
		t.Fatal(err)
	}
	if me := eval[string](t, ctx, `document.getElementById('me').textContent`); me != "alice" {
		t.Errorf("signed in as %q, want alice", me)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-item="`+r.Name()+`"]`)),
		chromedp.Click(chromedp.CSS(`#details form.cancel button`)), chromedp.WaitVisible(chromedp.CSS(`#details .ok`))); err != nil {
		t.Fatal(err)
	}
	got, err := (&web.Client{BaseURL: e.url, Token: e.tokens["alice"]}).Reservation(context.Background(), r.Name())
	if err != nil || got.State != "cancelled" {
		t.Errorf("after cancelling in the page: %+v, %v; want cancelled", got, err)
	}
	// A second tab (another browser profile would do the same) cannot reuse the link.
	ctx2 := e.tab(t)
	if err := chromedp.Do(ctx2, chromedp.Navigate(e.url+"/signin/link?t="+link), chromedp.Click(chromedp.CSS("#link-signin")),
		chromedp.WaitVisible(chromedp.CSS(".error"))); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserFirstRender measures the first render of a 64-GPU, two-day
// calendar full of bookings and jobs: from navigation start until the
// calendar has drawn its data (docs/performance.md). It checks that every
// row and item is drawn and reports the time; it asserts no time.
func TestBrowserFirstRender(t *testing.T) {
	e := newBrowserEnv(t, 8, true)
	items := seed64(t, e)
	ctx := e.tab(t)
	var runs []float64
	for i := range 3 { // the first load also warms the browser's caches
		open(t, ctx, e.url+"/?days=2")
		ms, err := strconv.ParseFloat(eval[string](t, ctx, `document.body.dataset.firstRenderMs`), 64)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, ms)
		t.Logf("load %d: %s", i+1, eval[string](t, ctx, `JSON.stringify({...document.body.dataset, nav: performance.getEntriesByType('navigation')[0].toJSON()})`))
		if i == 0 {
			if n := eval[int](t, ctx, `document.querySelectorAll('.gpu-name[data-gpu]').length`); n != 64 {
				t.Errorf("%d GPU rows, want 64", n)
			}
			drawn := eval[int](t, ctx, `new Set([...document.querySelectorAll('[data-item]')].map((e) => e.dataset.item)).size`)
			if want, _ := strconv.Atoi(eval[string](t, ctx, `document.body.dataset.items`)); drawn != want || drawn < items/2 {
				t.Errorf("%d bookings drawn, want all %d in the range (of %d booked)", drawn, want, items)
			}
		}
	}
	report := fmt.Sprintf("first render of 64 GPUs × 2 days, %d bookings: %.0f ms cold, %.0f and %.0f ms warm (navigation start to calendar drawn)\n", items, runs[0], runs[1], runs[2])
	t.Log(report)
	if p := os.Getenv("GPUCAL_PERF_REPORT"); p != "" {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprint(f, report)
			f.Close()
		}
	}
	os.WriteFile(filepath.Join(t.ArtifactDir(), "first-render.txt"), []byte(report), 0o644)
	screenshot(t, ctx, "64-gpus")
}

// seed64 books every GPU of e's nodes with bookings of 2–5 hours with gaps
// of 1–3 hours over the next two days, and returns how many.
func seed64(t *testing.T, e *browserEnv) int {
	t.Helper()
	nodes, err := e.svc.Nodes(context.Background(), core.System)
	if err != nil {
		t.Fatal(err)
	}
	items := 0
	for ni, n := range nodes {
		for gi := range n.GPUs {
			at := e.hour.Add(time.Duration((ni+gi)%4) * time.Hour)
			for k := 0; at.Before(e.hour.Add(46 * time.Hour)); k++ {
				length := time.Duration(2+(ni+gi+k)%4) * time.Hour
				user := []string{"alice", "bob"}[(gi+k)%2]
				e.book(t, user, core.BookRequest{GPUs: 1, Node: n.Name, Model: n.GPUs[0].Model().String(), Start: at, End: at.Add(length),
					Note: fmt.Sprintf("run %d", k)})
				items++
				at = at.Add(length + time.Duration(1+(gi+k)%3)*time.Hour)
			}
		}
	}
	return items
}
