package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpucal/gpucal/store"
	"github.com/gpucal/gpucal/store/storetest"
	"github.com/gpucal/gpucal/web"
)

// The end-to-end tests build the real binary and drive it as a user and an
// operator would: start the server, use the CLI, kill -9 it, restart it.

var binary string // the gpucal binary built by TestMain

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gpucal-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "gpucal")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building gpucal: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is a running `gpucal server` process.
type server struct {
	t   *testing.T
	cmd *exec.Cmd
	url string
	db  string
}

var listening = regexp.MustCompile(`url=(http://\S+)`)

// startServer runs `gpucal server` on db with the bootstrap token t0 and
// waits until it is ready. flags come after the defaults and so override
// them (--addr, say).
func startServer(t *testing.T, db string, flags ...string) *server {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"server", "--addr", "127.0.0.1:0", "--db", db}, flags...)...)
	cmd.Env = append(os.Environ(), "GPUCAL_BOOTSTRAP_TOKEN=t0", "HOME="+t.TempDir())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, cmd: cmd, db: db}
	t.Cleanup(s.kill)
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case s.url = <-urls:
	case <-time.After(60 * time.Second):
		t.Fatal("the server did not start within 60 s")
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(s.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server at %s is not ready: %v", s.url, err)
		}
	}
}

// kill ends the server the hard way (SIGKILL), as a crash would.
func (s *server) kill() {
	if s.cmd.ProcessState == nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
	}
}

func (s *server) client(token string) *web.Client { return &web.Client{BaseURL: s.url, Token: token} }

// cli runs a client command against s and returns its stdout, stderr and exit code.
func (s *server) cli(args ...string) (string, string, int) {
	s.t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "GPUCAL_SERVER="+s.url, "GPUCAL_TOKEN=t0", "GPUCAL_TZ=UTC", "HOME="+s.t.TempDir())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		s.t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// TestServeBookRestart is the acceptance path, through the CLI: a
// node of 8 GPUs, a booking of 4, an overlapping booking of 8 refused with
// the conflict named, the calendar, and the booking still there after a
// restart.
func TestServeBookRestart(t *testing.T) {
	db := storetest.SQLite(t)
	s := startServer(t, db)
	if out, errOut, code := s.cli("node", "add", "node-1", "--gpus", "8", "--model", "NVIDIA A100-SXM4-80GB", "--memory", "81920"); code != 0 {
		t.Fatalf("node add: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code := s.cli("book", "4", "a100", "--from", "2099-01-05 09:00", "--to", "2099-01-05 13:00", "--note", "llama finetune")
	_ = out
	if code == 0 || !strings.Contains(errOut, "ahead") {
		t.Fatalf("a booking 73 years ahead should be refused for the horizon; exit %d: %s", code, errOut)
	}
	day := time.Now().UTC().AddDate(0, 0, 2).Format("2006-01-02")
	out, errOut, code = s.cli("book", "4", "a100", "--from", day+" 09:00", "--to", day+" 13:00", "--note", "llama finetune")
	if code != 0 || !strings.HasPrefix(out, "Booked r1: 4×a100-80gb on node-1/") {
		t.Fatalf("book: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	out, errOut, code = s.cli("book", "8", "a100", "--from", day+" 12:00", "--to", day+" 15:00")
	if code != 1 || !strings.Contains(errOut, "held by r1 (admin)") || !strings.Contains(errOut, "gpucal book 8 a100 --from \""+day+" 13:00\"") {
		t.Fatalf("overlapping book: exit %d, want 1 with the conflict named and the next free window\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	out, _, code = s.cli("calendar", "--from", day, "--days", "1")
	if code != 0 || !strings.Contains(out, "r1") || strings.Count(out, strings.Repeat("A", 16)+".") != 4 {
		t.Fatalf("calendar: exit %d, want r1 on 4 rows of 4 hours:\n%s", code, out)
	}

	s.kill()
	s = startServer(t, db)
	out, errOut, code = s.cli("show", "r1", "--json")
	if code != 0 {
		t.Fatalf("show after restart: exit %d: %s", code, errOut)
	}
	var r web.Reservation
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.ID != "r1" || len(r.GPUs) != 4 || r.Note != "llama finetune" || r.Start.Format("2006-01-02 15:04") != day+" 09:00" {
		t.Errorf("after restart r1 = %+v", r)
	}
}

// databases runs f once on SQLite and once on PostgreSQL (skipped without one).
func databases(t *testing.T, f func(t *testing.T, dsn string)) {
	t.Run("sqlite", func(t *testing.T) { f(t, storetest.SQLite(t)) })
	t.Run("postgres", func(t *testing.T) { f(t, storetest.Postgres(t)) })
}

// addNodes adds n nodes of 8 A100s.
func addNodes(t *testing.T, c *web.Client, n int) {
	t.Helper()
	for i := range n {
		nn := web.NewNode{Name: fmt.Sprintf("node-%d", i)}
		for g := range 8 {
			nn.GPUs = append(nn.GPUs, web.NewGPU{Index: g, Name: "NVIDIA A100-SXM4-80GB", Memory: 81920, UUID: fmt.Sprintf("GPU-%d-%d", i, g)})
		}
		if _, err := c.AddNode(context.Background(), nn); err != nil {
			t.Fatal(err)
		}
	}
}

// checkNoOverlaps asks the database itself, with a SQL self-join, whether
// any GPU is held by two reservations at once.
func checkNoOverlaps(t *testing.T, dsn string) {
	t.Helper()
	db, err := store.Open(context.Background(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	overlaps, err := db.CheckOverlaps(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(overlaps) > 0 {
		t.Errorf("%d overlapping GPU slots, first %+v", len(overlaps), overlaps[0])
	}
}

// TestConcurrentBookings has 200 clients book overlapping windows at once:
// the winners never overlap and every loser gets a 409.
func TestConcurrentBookings(t *testing.T) {
	databases(t, func(t *testing.T, dsn string) {
		s := startServer(t, dsn)
		addNodes(t, s.client("t0"), 4)
		base := time.Now().UTC().Truncate(time.Hour).Add(24 * time.Hour)
		const clients = 200
		var (
			mu      sync.Mutex
			won     []web.Reservation
			lost    int
			wrong   []string
			wg      sync.WaitGroup
			started = make(chan struct{})
		)
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(i), 1))
				start := base.Add(time.Duration(rng.IntN(8)) * time.Hour)
				req := web.BookRequest{GPUs: 1 + rng.IntN(8), Model: "a100",
					Start: start.Format(time.RFC3339), End: start.Add(time.Duration(2+rng.IntN(2)) * time.Hour).Format(time.RFC3339)}
				c := s.client("t0")
				c.HTTP = &http.Client{Timeout: 2 * time.Minute}
				<-started
				r, err := c.Book(context.Background(), req, "")
				mu.Lock()
				defer mu.Unlock()
				var apiErr *web.APIError
				switch {
				case err == nil:
					won = append(won, r)
				case errors.As(err, &apiErr) && apiErr.Status == http.StatusConflict && apiErr.Code == "conflict":
					lost++
				default:
					wrong = append(wrong, err.Error())
				}
			}()
		}
		close(started)
		wg.Wait()
		if len(wrong) > 0 {
			t.Errorf("%d clients got neither 201 nor 409, first: %s", len(wrong), wrong[0])
		}
		if len(won) == 0 || lost == 0 {
			t.Errorf("%d won and %d lost; the test should produce both", len(won), lost)
		}
		t.Logf("%d bookings won, %d refused with 409", len(won), lost)
		checkNoOverlaps(t, dsn)
		rs, err := s.client("t0").Reservations(context.Background(), web.ReservationQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != len(won) {
			t.Errorf("the database holds %d reservations, %d were acknowledged", len(rs), len(won))
		}
	})
}

// TestCrashDuringBookings kills the server with SIGKILL in the middle of a
// burst of bookings, restarts it, and checks that every booking that was
// acknowledged with a 2xx is there and that nothing overlaps.
func TestCrashDuringBookings(t *testing.T) {
	databases(t, func(t *testing.T, dsn string) {
		s := startServer(t, dsn)
		addNodes(t, s.client("t0"), 2)
		base := time.Now().UTC().Truncate(time.Hour).Add(24 * time.Hour)
		var (
			mu    sync.Mutex
			acked []web.Reservation
			wg    sync.WaitGroup
		)
		ctx, stop := context.WithCancel(context.Background())
		for w := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 2))
				c := s.client("t0")
				c.HTTP = &http.Client{Timeout: 10 * time.Second}
				for ctx.Err() == nil {
					start := base.Add(time.Duration(rng.IntN(200)) * 30 * time.Minute)
					r, err := c.Book(ctx, web.BookRequest{GPUs: 1 + rng.IntN(4), Start: start.Format(time.RFC3339),
						End: start.Add(time.Duration(1+rng.IntN(3)) * time.Hour).Format(time.RFC3339)}, fmt.Sprintf("w%d-%d", w, rng.Uint64()))
					if err == nil {
						mu.Lock()
						acked = append(acked, r)
						mu.Unlock()
					}
				}
			}()
		}
		// Let the burst get going, then crash the server mid-flight.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			mu.Lock()
			n := len(acked)
			mu.Unlock()
			if n >= 40 || time.Now().After(deadline) {
				break
			}
		}
		s.kill()
		stop()
		wg.Wait()
		if len(acked) < 40 {
			t.Fatalf("only %d bookings were acknowledged before the crash", len(acked))
		}

		s = startServer(t, dsn)
		c := s.client("t0")
		for _, want := range acked {
			got, err := c.Reservation(context.Background(), want.ID)
			if err != nil {
				t.Errorf("acknowledged %s lost after the crash: %v", want.ID, err)
				continue
			}
			if !got.Start.Equal(want.Start) || !got.End.Equal(want.End) || len(got.GPUs) != len(want.GPUs) {
				t.Errorf("%s changed across the crash: got %+v, want %+v", want.ID, got, want)
			}
		}
		t.Logf("%d acknowledged bookings survived kill -9", len(acked))
		checkNoOverlaps(t, dsn)
	})
}

// TestSubmitQueue is the planner's path through the CLI: a job that fits
// starts at once, a second that does not fit waits in the queue with a
// predicted start after the first one's end and a reason; what-if and
// cancel work on them.
func TestSubmitQueue(t *testing.T) {
	s := startServer(t, storetest.SQLite(t))
	if out, errOut, code := s.cli("node", "add", "node-1", "--gpus", "8", "--model", "NVIDIA A100-SXM4-80GB", "--memory", "81920"); code != 0 {
		t.Fatalf("node add: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code := s.cli("submit", "--gpus", "6", "--model", "a100", "--name", "llama-ft", "--type", "finetune", "--guess", "2h",
		"--env", "WANDB_MODE=offline", "--", "python", "train.py", "--epochs", "3")
	if code != 0 || !strings.HasPrefix(out, "Submitted j1: 6×a100 finetune llama-ft, class normal, for admin.") {
		t.Fatalf("submit: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	// Once planned (submit waits up to 3 s for it), it says how long it takes.
	if !strings.Contains(out, "comes with the next plan") && !strings.Contains(out, "Estimated 2h (90%: 3h) — guess.") {
		t.Errorf("submit did not give the estimate:\n%s", out)
	}
	// The replan loop starts it within its debounce.
	q := waitQueue(t, s, func(q web.Queue) bool { return len(q.Running) == 1 })
	if r := q.Running[0]; r.ID != "j1" || r.State != "starting" || len(r.Assigned) != 6 || r.Prediction == nil || r.Prediction.EndP50.IsZero() {
		t.Fatalf("running = %+v, want j1 starting on 6 GPUs with a predicted end", r)
	}
	end := q.Running[0].Prediction.EndP50

	out, errOut, code = s.cli("submit", "--gpus", "4", "--model", "a100", "--guess", "1h", "--json", "--", "python", "eval.py")
	if code != 0 || !strings.Contains(out, `"id": "j2"`) {
		t.Fatalf("second submit: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	q = waitQueue(t, s, func(q web.Queue) bool { return len(q.Queued) == 1 && q.Queued[0].Prediction != nil })
	p := q.Queued[0].Prediction
	if q.Queued[0].ID != "j2" || p.Position != 1 || p.StartP50.Before(end) || len(p.GPUs) != 4 || !strings.Contains(p.Reason, "j1") {
		t.Errorf("queued = %+v with %+v: want j2 first, starting after j1 ends (%s), waiting for j1", q.Queued[0], p, end)
	}

	out, _, code = s.cli("queue")
	if code != 0 || !strings.Contains(out, "WHY IT WAITS") || !strings.Contains(out, "j2") || !strings.Contains(out, "Running:") {
		t.Errorf("queue: exit %d:\n%s", code, out)
	}
	out, errOut, code = s.cli("when", "8", "a100", "3h")
	if code != 0 || !strings.Contains(out, "8×a100 for 3h could start") || !strings.Contains(out, "Nothing was changed") {
		t.Errorf("when: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	out, _, code = s.cli("jobs", "--type", "finetune")
	if code != 0 || !strings.Contains(out, "j1") || strings.Contains(out, "j2") {
		t.Errorf("jobs --type finetune: exit %d:\n%s", code, out)
	}
	out, _, code = s.cli("job", "j1")
	if code != 0 || !strings.Contains(out, "WANDB_MODE=offline") || !strings.Contains(out, "python train.py --epochs 3") {
		t.Errorf("job j1: exit %d:\n%s", code, out)
	}
	out, errOut, code = s.cli("progress", "j1", "250/1000")
	if code != 0 || !strings.HasPrefix(out, "Recorded: j1 is 25% done (250 of 1000 steps") {
		t.Errorf("progress j1 250/1000: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if _, errOut, code = s.cli("progress", "j1", "2/1"); code == 0 || !strings.Contains(errOut, "past the total") {
		t.Errorf("progress j1 2/1: exit %d, stderr: %s; want refused by the server", code, errOut)
	}
	out, _, code = s.cli("job", "j1")
	if code != 0 || !strings.Contains(out, "Progress") || !strings.Contains(out, "25% done (250 of 1000 steps") {
		t.Errorf("job j1 after progress: exit %d:\n%s", code, out)
	}
	out, errOut, code = s.cli("cancel", "j2")
	if code != 0 || !strings.HasPrefix(out, "Cancelled j2 (now cancelled)") {
		t.Errorf("cancel j2: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	waitQueue(t, s, func(q web.Queue) bool { return len(q.Queued) == 0 })
}

// waitQueue polls `gpucal queue --json` until ok holds: the replan loop
// runs in the server, a moment after each change.
func waitQueue(t *testing.T, s *server, ok func(web.Queue) bool) web.Queue {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, errOut, code := s.cli("queue", "--json")
		if code != 0 {
			t.Fatalf("queue --json: exit %d: %s", code, errOut)
		}
		var q web.Queue
		if err := json.Unmarshal([]byte(out), &q); err != nil {
			t.Fatalf("queue --json: %v\n%s", err, out)
		}
		if ok(q) {
			return q
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queue never got there: %s", out)
		}
	}
}
