package main

import (
	"bytes"
	"context"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/digest"
	"github.com/gpucal/gpucal/store"
	"github.com/gpucal/gpucal/store/storetest"
)

// seededDemo opens a fresh SQLite database seeded as `gpucal demo` seeds
// one with nodes added by hand, at now.
func seededDemo(t *testing.T, now time.Time) *store.DB {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, storetest.SQLite(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := seedPeople(ctx, db, now); err != nil {
		t.Fatal(err)
	}
	if err := seedNodes(ctx, db, now); err != nil {
		t.Fatal(err)
	}
	if err := seedBookingsAndHistory(ctx, db, now); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestSeedHistory checks the demo's past week: finished jobs of every
// type, waits, reservations used and one no-show in the last 7 days;
// nothing holds a GPU now, no booking overlaps another, the bookings
// around now are all there, and the same now gives the same week.
func TestSeedHistory(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 3, 11, 40, 0, 0, time.UTC)
	db := seededDemo(t, now)
	svc := core.NewService(db, core.WithClock(func() time.Time { return now }))
	week := core.ReportQuery{From: now.Add(-7 * 24 * time.Hour), To: now}
	r, err := svc.Report(ctx, core.System, week)
	if err != nil {
		t.Fatal(err)
	}
	if r.GPUs != 32 || r.Utilisation < 0.2 || r.Utilisation > 0.8 {
		t.Errorf("%d GPUs at %.0f%% utilisation; want 32 at 20-80%%", r.GPUs, r.Utilisation*100)
	}
	var types []string
	for _, u := range r.ByType {
		types = append(types, u.Name)
	}
	if len(types) != 3 || !strings.Contains(strings.Join(types, ","), "train") || len(r.ByProject) < 2 || len(r.ByUser) != 2 {
		t.Errorf("types %v, projects %+v, users %+v; want train, finetune and eval by alice and bob in nlp and vision", types, r.ByProject, r.ByUser)
	}
	if r.Reservations < 5 || r.NoShows != 1 || r.BookedUsed <= 0 || r.BookedUsed >= r.Booked {
		t.Errorf("%d reservations, %d no-shows, %.1f of %.1f booked hours used; want at least 5, 1, some", r.Reservations, r.NoShows, r.BookedUsed, r.Booked)
	}
	if r.Started < 30 || r.Finished < 30 || r.AvgWait <= 0 || r.P90Wait < r.AvgWait || r.Accuracy < 0.5 || r.Accuracy > 0.95 {
		t.Errorf("%d started, %d finished, waits %s/%s, accuracy %.2f", r.Started, r.Finished, r.AvgWait, r.P90Wait, r.Accuracy)
	}

	jobs, err := svc.Jobs(ctx, core.System, core.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if !j.State.Finished() || !j.EndedAt.Before(now) {
			t.Errorf("%s is %s until %s; history jobs must be over", core.JobName(j.ID), j.State, j.EndedAt)
		}
	}
	upcoming, err := svc.Reservations(ctx, core.System, core.ReservationFilter{From: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(upcoming) != 5 {
		t.Errorf("%d reservations from now on, want seedBookings' 5", len(upcoming))
	}
	overlaps, err := db.CheckOverlaps(ctx)
	if err != nil || len(overlaps) > 0 {
		t.Errorf("overlapping slots %+v, %v", overlaps, err)
	}

	// Seeding again changes nothing; another database seeded at the same now is the same.
	if err := seedBookingsAndHistory(ctx, db, now); err != nil {
		t.Fatal(err)
	}
	if again, _ := svc.Jobs(ctx, core.System, core.JobFilter{}); len(again) != len(jobs) {
		t.Errorf("a second seeding made %d jobs, want %d", len(again), len(jobs))
	}
	other := seededDemo(t, now)
	r2, err := core.NewService(other, core.WithClock(func() time.Time { return now })).Report(ctx, core.System, week)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, r2); diff != "" {
		t.Errorf("the same now gave another week (-first +second):\n%s", diff)
	}
}

// runHere runs a gpucal command line in this process with getenv's
// variables and returns its stdout, stderr and exit code.
func runHere(t *testing.T, vars map[string]string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	vars["GPUCAL_CONFIG"] = filepath.Join(t.TempDir(), "none.json")
	e := &env{stdout: &out, stderr: &errOut, getenv: func(k string) string { return vars[k] }}
	code := run(context.Background(), e, args)
	return out.String(), errOut.String(), code
}

// checkPNG checks that path holds the digest chart.
func checkPNG(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if got := img.Bounds().Size(); got.X != digest.Width || got.Y != digest.Height {
		t.Errorf("%s is %v, want %dx%d", path, got, digest.Width, digest.Height)
	}
}

// TestDigestDemo is `gpucal digest --preview out.png --demo`: no server,
// the demo's week, the chart written and the text printed.
func TestDigestDemo(t *testing.T) {
	out := filepath.Join(t.TempDir(), "digest.png")
	stdout, stderr, code := runHere(t, map[string]string{}, "digest", "--preview", out, "--demo")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	checkPNG(t, out)
	for _, want := range []string{"GPU digest", "By project: 1. ", "alice", "bob", "1 no-show", "Waits: ", "Estimates: ", "written to " + out} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	stdout, stderr, code = runHere(t, map[string]string{}, "digest", "--demo", "--lang", "zh", "--from", "2026-11-01", "--to", "+7d")
	if code != 0 || !strings.Contains(stdout, "GPU 使用摘要：2026-11-01 至 2026-11-07") || !strings.Contains(stdout, "本期没有 GPU 使用") {
		t.Errorf("a week long before the demo's history: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, stderr, code := runHere(t, map[string]string{}, "digest", "--demo", "--lang", "fr"); code != 2 || !strings.Contains(stderr, "en or zh") {
		t.Errorf("--lang fr: exit %d: %s", code, stderr)
	}
}

// reportShape is GET /api/v1/report's answer as the server sends it
// (web.ReportJSON), written out by hand so that the client is held to
// the wire format rather than to itself.
var reportShape = `{"from":"2026-11-26T00:00:00Z","to":"2026-12-03T00:00:00Z","gpus":16,"capacity_gpu_h":2688,"used_gpu_h":1344,
"utilisation":0.5,"by_project":[{"name":"nlp","gpu_h":1000,"jobs":12},{"name":"vision","gpu_h":344,"jobs":5}],
"by_user":[{"name":"alice","gpu_h":1344,"jobs":17}],"by_type":[{"name":"train","gpu_h":1344,"jobs":17}],
"reservations":3,"booked_gpu_h":96,"booked_used_gpu_h":72,"no_shows":1,"started":17,"avg_wait_s":1800,"p90_wait_s":5400,
"finished":16,"accuracy":0.75,"heatmap":[` + heatRows + `]}`

var heatRows = strings.TrimSuffix(strings.Repeat("["+strings.TrimSuffix(strings.Repeat("0.5,", 24), ",")+"],", 7), ",")

// TestDigestServer fetches the report from a server that answers in the
// API's exact JSON shape.
func TestDigestServer(t *testing.T) {
	var query string
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/report" || r.Header.Get("Authorization") != "Bearer t0" {
			http.NotFound(w, r)
			return
		}
		query = r.URL.RawQuery
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(reportShape))
	}))
	defer fake.Close()
	out := filepath.Join(t.TempDir(), "digest.png")
	stdout, stderr, code := runHere(t, map[string]string{"GPUCAL_SERVER": fake.URL, "GPUCAL_TOKEN": "t0", "GPUCAL_TZ": "UTC"},
		"digest", "--preview", out, "--from", "2026-11-26", "--to", "2026-12-03")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if query != "from=2026-11-26T00%3A00%3A00Z&to=2026-12-03T00%3A00%3A00Z" {
		t.Errorf("query %q", query)
	}
	checkPNG(t, out)
	want := "GPU digest, 2026-11-26 to 2026-12-02 (UTC)\n" +
		"Utilisation 50% of 16 GPUs: 1,344 of 2,688 GPU-hours used.\n" +
		"By project: 1. nlp 1,000 h · 2. vision 344 h\n" +
		"By user: 1. alice 1,344 h\n" +
		"Bookings: 3, 96 GPU-h booked, 72 used (75%); 1 no-show.\n" +
		"Waits: 17 jobs started, average 30m, P90 1h 30m.\n" +
		"Estimates: 75% accurate over 16 finished jobs.\n" +
		"\nChart (1200×700) written to " + out + "\n"
	if diff := cmp.Diff(want, stdout); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
}

// TestDigestE2E runs `gpucal digest` against a real server: its report
// route answers, the chart is drawn and the text names the bookings.
func TestDigestE2E(t *testing.T) {
	s := startServer(t, storetest.SQLite(t))
	addNodes(t, s.client("t0"), 2)
	day := time.Now().UTC().Truncate(time.Hour)
	if out, errOut, code := s.cli("book", "4", "a100", "--from", day.Add(time.Hour).Format(time.RFC3339), "--for", "2h"); code != 0 {
		t.Fatalf("book: exit %d\n%s%s", code, out, errOut)
	}
	png := filepath.Join(t.TempDir(), "digest.png")
	out, errOut, code := s.cli("digest", "--preview", png, "--from", day.Add(-24*time.Hour).Format(time.RFC3339), "--to", "+48h", "--lang", "zh")
	if code != 0 {
		t.Fatalf("digest: exit %d\n%s%s", code, out, errOut)
	}
	checkPNG(t, png)
	if !strings.Contains(out, "利用率 0%（16 块 GPU）") || !strings.Contains(out, "预约：1 个") {
		t.Errorf("digest:\n%s", out)
	}
}
