package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/web"
)

func train(gpus int, guess string) web.SubmitRequest {
	return web.SubmitRequest{GPUs: gpus, Model: "a100", Name: "llama-ft", Type: "finetune",
		Command: []string{"python", "train.py", "--epochs", "3"}, Env: map[string]string{"WANDB_API_KEY": "secret"},
		Hints: &web.Hints{Guess: guess, Params: 7e9}}
}

func TestJobLifecycle(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	before := f.changes.Load()
	j1, err := f.alice.Submit(ctx, train(6, "2h"), "")
	if err != nil {
		t.Fatal(err)
	}
	want := web.Job{ID: "j1", Owner: "alice", Name: "llama-ft", Type: "finetune", GPUs: 6, Model: "a100",
		Command: []string{"python", "train.py", "--epochs", "3"}, Env: map[string]string{"WANDB_API_KEY": "secret"},
		Class: "normal", Hints: &web.Hints{Params: 7e9, Guess: "2h0m0s"}, State: "queued", SubmittedAt: now, Checkpoint: "SIGUSR1"}
	if diff := cmp.Diff(want, j1); diff != "" {
		t.Errorf("submitted job (-want +got):\n%s", diff)
	}
	j2, err := f.bob.Submit(ctx, web.SubmitRequest{GPUs: 4, Command: []string{"python", "eval.py"}, Type: "eval", Class: "low"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !j2.Preemptible || j2.Class != "low" || j2.Name != "eval" {
		t.Errorf("low job = %+v, want preemptible, named eval", j2)
	}
	if got := f.changes.Load() - before; got != 2 {
		t.Errorf("OnChange called %d times for 2 submissions", got)
	}

	seen, err := f.bob.Job(ctx, "j1")
	if err != nil {
		t.Fatal(err)
	}
	if seen.Command != nil || seen.Env != nil || seen.Name != "llama-ft" {
		t.Errorf("bob sees alice's job as %+v; want it without command and env", seen)
	}
	for _, tc := range []struct {
		q    web.JobQuery
		want []string
	}{
		{web.JobQuery{}, []string{"j2", "j1"}},
		{web.JobQuery{Mine: true}, []string{"j1"}},
		{web.JobQuery{User: "bob"}, []string{"j2"}},
		{web.JobQuery{Types: []string{"eval", "train"}}, []string{"j2"}},
		{web.JobQuery{States: []string{"running"}}, nil},
		{web.JobQuery{Limit: 1}, []string{"j2"}},
	} {
		js, err := f.alice.Jobs(ctx, tc.q)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, j := range js {
			got = append(got, j.ID)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Jobs(%+v) (-want +got):\n%s", tc.q, diff)
		}
	}

	q, err := f.bob.Queue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Queued) != 2 || q.Queued[0].Prediction != nil || !q.PlannedAt.IsZero() {
		t.Errorf("queue before any plan = %+v, want both jobs without predictions", q)
	}
	// Class first: alice's normal job starts; bob's low one waits for its GPUs.
	if _, err := f.svc.Replan(ctx, now); err != nil {
		t.Fatal(err)
	}
	q, err = f.bob.Queue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Running) != 1 || q.Running[0].ID != "j1" || q.Running[0].State != "starting" || len(q.Running[0].Assigned) != 6 {
		t.Fatalf("running = %+v, want j1 starting on 6 GPUs", q.Running)
	}
	if len(q.Queued) != 1 || q.Queued[0].ID != "j2" || q.Queued[0].Prediction == nil {
		t.Fatalf("queued = %+v, want j2 with a prediction", q.Queued)
	}
	p := q.Queued[0].Prediction
	if p.Position != 1 || p.StartP50.Before(now.Add(2*time.Hour)) || p.StartP90.Before(p.StartP50) || len(p.GPUs) != 4 ||
		p.GPUs[0].Node != "a100-1" || p.Reason == "" || p.Estimate.Source != "default" || !q.PlannedAt.Equal(now) {
		t.Errorf("j2's prediction = %+v, want position 1 after j1's end, 4 named GPUs, a reason, the default estimate", p)
	}

	if _, err := f.bob.CancelJob(ctx, "j1"); apiErr(t, err).Status != http.StatusForbidden {
		t.Errorf("bob cancelling alice's job: %v, want 403", err)
	}
	got, err := f.alice.CancelJob(ctx, "j1")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "cancelled" || !got.EndedAt.Equal(now) || len(got.Assigned) != 6 {
		t.Errorf("cancelled job = %+v, want cancelled now, its GPUs remembered", got)
	}
	if _, err := f.alice.CancelJob(ctx, "j1"); apiErr(t, err).Status != http.StatusUnprocessableEntity {
		t.Errorf("cancelling twice: %v, want 422", err)
	}
	if got, err := f.bob.CancelJob(ctx, "j2"); err != nil || got.State != "cancelled" {
		t.Errorf("cancelling a queued job: %+v, %v", got, err)
	}
	audit, err := f.admin.Audit(ctx, "", "j1", 0)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, a := range audit {
		actions = append(actions, a.Actor+" "+a.Action)
	}
	if diff := cmp.Diff([]string{"alice job.cancel", "gpucal job.start", "alice job.submit"}, actions); diff != "" {
		t.Errorf("audit of j1 (-want +got):\n%s", diff)
	}
}

func TestWhatIfAPI(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.alice.Book(ctx, web.BookRequest{GPUs: 8, Start: at(0), End: at(3)}, ""); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, f)
	ans, err := f.bob.WhatIf(ctx, web.WhatIfRequest{GPUs: 8, Model: "a100", Duration: "12h"})
	if err != nil {
		t.Fatal(err)
	}
	a := ans.Asked
	if a.Kind != "asked" || a.GPUs != 8 || len(a.Assigned) != 8 || !a.StartP50.Equal(now.Add(3*time.Hour)) ||
		!a.EndP50.Equal(now.Add(15*time.Hour)) || !strings.Contains(a.Reason, "r1") || a.Estimate.P50 != 12*3600 {
		t.Errorf("asked = %+v: want 8 GPUs after r1 ends, for 12h, the reason naming r1", a)
	}
	var kinds []string
	for _, o := range ans.Alternatives {
		kinds = append(kinds, o.Kind)
	}
	if diff := cmp.Diff([]string{"fewer", "fewer"}, kinds); diff != "" {
		t.Errorf("alternatives (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, snapshot(t, f)); diff != "" {
		t.Errorf("a what-if changed the database (-before +after):\n%s", diff)
	}
}

func TestCalendarJobsAPI(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, guess := range []string{"2h", "3h"} {
		if _, err := f.alice.Submit(ctx, train(8, guess), ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.svc.Replan(ctx, now); err != nil {
		t.Fatal(err)
	}
	cal, err := f.bob.Calendar(ctx, web.CalendarQuery{From: now, To: now.Add(24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(cal.Items) != 2 {
		t.Fatalf("calendar items = %+v, want the running and the planned job", cal.Items)
	}
	run, planned := cal.Items[0], cal.Items[1]
	if run.Kind != "job" || run.ID != "j1" || run.State != "starting" || run.Planned || len(run.GPUs) != 8 || !run.End.Equal(now.Add(2*time.Hour)) {
		t.Errorf("running item = %+v", run)
	}
	if planned.ID != "j2" || !planned.Planned || planned.State != "queued" || planned.Type != "finetune" ||
		!planned.Start.Equal(run.End) || planned.EndP90.Before(planned.End) || planned.StartP90.Before(planned.Start) {
		t.Errorf("planned item = %+v, want j2 after j1 with bands", planned)
	}
}

// TestJobBadInput is TestBadInput for the job, queue and what-if routes.
func TestJobBadInput(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.bob.Book(ctx, web.BookRequest{GPUs: 2, Start: at(1), End: at(3)}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := f.alice.Submit(ctx, train(1, "1h"), ""); err != nil {
		t.Fatal(err)
	}
	before := jobSnapshot(t, f)
	job := func(edit func(r *web.SubmitRequest)) string {
		r := train(2, "1h")
		edit(&r)
		b, _ := json.Marshal(r)
		return string(b)
	}
	tests := []struct {
		name, method, path, token, body string
		status                          int
		msg                             string
	}{
		{"no token", "POST", "/api/v1/jobs", "", job(func(*web.SubmitRequest) {}), 401, "token is required"},
		{"malformed json", "POST", "/api/v1/jobs", "alice", `{"gpus":`, 400, "malformed JSON"},
		{"empty body", "POST", "/api/v1/jobs", "alice", ``, 400, "empty"},
		{"unknown field", "POST", "/api/v1/jobs", "alice", `{"gpus":1,"command":["x"],"priority":9}`, 400, "priority"},
		{"unknown hint", "POST", "/api/v1/jobs", "alice", `{"gpus":1,"command":["x"],"hints":{"speed":9}}`, 400, "speed"},
		{"gpus as string", "POST", "/api/v1/jobs", "alice", `{"gpus":"two","command":["x"]}`, 400, "gpus"},
		{"command as string", "POST", "/api/v1/jobs", "alice", `{"gpus":1,"command":"python train.py"}`, 400, "command"},
		{"env as list", "POST", "/api/v1/jobs", "alice", `{"gpus":1,"command":["x"],"env":["A=1"]}`, 400, "env"},
		{"zero gpus", "POST", "/api/v1/jobs", "alice", job(func(r *web.SubmitRequest) { r.GPUs = 0 }), 422, "at least 1"},
		{"huge gpus", "POST", "/api/v1/jobs", "alice", job(func(r *web.SubmitRequest) { r.GPUs = 1 << 40 }), 422, "only 8"},
		{"unknown model", "POST", "/api/v1/jobs", "alice", job(func(r *web.SubmitRequest) { r.Model = "h100" }), 422, "models here"},
		{"no command", "POST", "/api/v1/jobs", "alice", job(func(r *web.SubmitRequest) { r.Command = nil }), 422, "needs a command"},
		{"bad env key", "POST", "/api/v1/jobs", "alice", job(func(r *web.SubmitRequest) { r.Env = map[string]string{"A-B": "1"} }), 422, "A-B"},
		{"agent env", "POST", "/api/v1/jobs", "alice", job(func(r *web.SubmitRequest) { r.Env = map[string]string{"CUDA_VISIBLE_DEVICES": "0"} }), 422, "agent"},
		{"relative workdir", "POST", "/api/v1/jobs", "alice", job(func(r *web.SubmitRequest) { r.WorkDir = "llama" }), 422, "absolute"},
		{"bad class", "POST", "/api/v1/jobs", "alice", job(func(r *web.SubmitRequest) { r.Class = "urgent" }), 422, "high, normal or low"},
		{"high by a user", "POST", "/api/v1/jobs", "alice", job(func(r *web.SubmitRequest) { r.Class = "high" }), 403, "class high"},
		{"bad type", "POST", "/api/v1/jobs", "alice", job(func(r *web.SubmitRequest) { r.Type = "pretrain" }), 422, "job type"},
		{"bad reservation", "POST", "/api/v1/jobs", "alice", job(func(r *web.SubmitRequest) { r.Reservation = "banana" }), 422, "reservation ID"},
		{"missing reservation", "POST", "/api/v1/jobs", "alice", job(func(r *web.SubmitRequest) { r.Reservation = "r99" }), 422, "no reservation r99"},
		{"someone else's reservation", "POST", "/api/v1/jobs", "alice", job(func(r *web.SubmitRequest) { r.Reservation = "r1" }), 403, "belongs to bob"},
		{"bad guess", "POST", "/api/v1/jobs", "alice", job(func(r *web.SubmitRequest) { r.Hints.Guess = "soon" }), 422, "guess"},
		{"negative guess", "POST", "/api/v1/jobs", "alice", job(func(r *web.SubmitRequest) { r.Hints.Guess = "-1h" }), 422, "guess"},
		{"long guess", "POST", "/api/v1/jobs", "alice", job(func(r *web.SubmitRequest) { r.Hints.Guess = "30d" }), 422, "longest"},
		{"negative params", "POST", "/api/v1/jobs", "alice", job(func(r *web.SubmitRequest) { r.Hints.Params = -1 }), 422, "params"},
		{"unknown project", "POST", "/api/v1/jobs", "alice", job(func(r *web.SubmitRequest) { r.Project = "nope" }), 422, "project"},
		{"get bad id", "GET", "/api/v1/jobs/banana", "alice", ``, 404, "job ID"},
		{"get missing", "GET", "/api/v1/jobs/j999", "alice", ``, 404, "j999"},
		{"cancel missing", "DELETE", "/api/v1/jobs/j999", "alice", ``, 404, "j999"},
		{"cancel reservation id", "DELETE", "/api/v1/jobs/r1", "alice", ``, 404, "job ID"},
		{"cancel someone else's", "POST", "/api/v1/jobs/j1/cancel", "bob", ``, 403, "belongs to alice"},
		{"list bad state", "GET", "/api/v1/jobs?state=happy", "alice", ``, 422, "state"},
		{"list bad type", "GET", "/api/v1/jobs?type=pretrain", "alice", ``, 422, "type"},
		{"list bad limit", "GET", "/api/v1/jobs?limit=-1", "alice", ``, 422, "limit"},
		{"queue without token", "GET", "/api/v1/queue", "", ``, 401, "token"},
		{"whatif malformed", "POST", "/api/v1/whatif", "alice", `{"gpus":`, 400, "malformed"},
		{"whatif unknown field", "POST", "/api/v1/whatif", "alice", `{"gpus":1,"when":"now"}`, 400, "when"},
		{"whatif zero gpus", "POST", "/api/v1/whatif", "alice", `{"gpus":0}`, 422, "at least 1"},
		{"whatif too many", "POST", "/api/v1/whatif", "alice", `{"gpus":9}`, 422, "only 8"},
		{"whatif bad duration", "POST", "/api/v1/whatif", "alice", `{"gpus":1,"duration":"ages"}`, 422, "duration"},
		{"whatif too long", "POST", "/api/v1/whatif", "alice", `{"gpus":1,"duration":"30d"}`, 422, "longest"},
		{"whatif bad class", "POST", "/api/v1/whatif", "alice", `{"gpus":1,"class":"reserved"}`, 422, "high, normal or low"},
		{"whatif bad model", "POST", "/api/v1/whatif", "alice", `{"gpus":1,"model":"!!"}`, 422, "not a GPU model"},
	}
	tokens := map[string]string{"alice": f.alice.Token, "bob": f.bob.Token, "": ""}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, f.srv.URL+tt.path, strings.NewReader(tt.body))
			if tok := tokens[tt.token]; tok != "" {
				req.Header.Set("Authorization", "Bearer "+tok)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body web.ErrorBody
			data, _ := io.ReadAll(resp.Body)
			if err := json.Unmarshal(data, &body); err != nil {
				t.Fatalf("body %q is not the error JSON: %v", data, err)
			}
			if resp.StatusCode != tt.status {
				t.Errorf("status = %d, want %d (%s)", resp.StatusCode, tt.status, data)
			}
			if !strings.Contains(body.Error.Message, tt.msg) {
				t.Errorf("message = %q, want it to mention %q", body.Error.Message, tt.msg)
			}
			if body.Error.Code == "" {
				t.Errorf("error code is empty")
			}
		})
	}
	if diff := cmp.Diff(before, jobSnapshot(t, f)); diff != "" {
		t.Errorf("bad requests changed the database (-before +after):\n%s", diff)
	}
}

// jobSnapshot is snapshot plus the jobs.
func jobSnapshot(t *testing.T, f *fixture) string {
	t.Helper()
	js, err := f.admin.Jobs(context.Background(), web.JobQuery{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(js)
	return snapshot(t, f) + string(b)
}

func TestProgressAPI(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.alice.Submit(ctx, train(4, "10h"), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := f.bob.Submit(ctx, web.SubmitRequest{GPUs: 8, Class: "low", Command: []string{"python", "eval.py"}}, ""); err != nil {
		t.Fatal(err)
	}
	// j1 started an hour ago; j2 waits for the whole node.
	if _, err := f.svc.Replan(ctx, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	half, tenth := 0.5, 0.1
	step, total, zero := int64(250), int64(1000), int64(0)
	refused := []struct {
		name   string
		c      *web.Client
		id     string
		req    web.ProgressRequest
		status int
	}{
		{"both forms", f.alice, "j1", web.ProgressRequest{Fraction: &half, Step: &step, Total: &total}, http.StatusUnprocessableEntity},
		{"neither", f.alice, "j1", web.ProgressRequest{}, http.StatusUnprocessableEntity},
		{"a step alone", f.alice, "j1", web.ProgressRequest{Step: &step}, http.StatusUnprocessableEntity},
		{"no steps in all", f.alice, "j1", web.ProgressRequest{Step: &zero, Total: &zero}, http.StatusUnprocessableEntity},
		{"past the end", f.alice, "j1", web.ProgressRequest{Step: &total, Total: &step}, http.StatusUnprocessableEntity},
		{"someone else's job", f.bob, "j1", web.ProgressRequest{Fraction: &tenth}, http.StatusForbidden},
		{"a queued job", f.bob, "j2", web.ProgressRequest{Fraction: &tenth}, http.StatusUnprocessableEntity},
		{"no such job", f.alice, "j9", web.ProgressRequest{Fraction: &tenth}, http.StatusNotFound},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			before := f.changes.Load()
			if _, err := tt.c.ReportProgress(ctx, tt.id, tt.req); apiErr(t, err).Status != tt.status {
				t.Errorf("ReportProgress: %v, want %d", err, tt.status)
			}
			if got := f.changes.Load(); got != before {
				t.Errorf("a refused report asked for a replan")
			}
		})
	}
	if j, err := f.alice.Job(ctx, "j1"); err != nil || j.Progress != nil {
		t.Fatalf("after refused reports j1 = %+v, %v; want no progress", j, err)
	}

	before := f.changes.Load()
	j, err := f.alice.ReportProgress(ctx, "j1", web.ProgressRequest{Step: &step, Total: &total})
	if err != nil {
		t.Fatal(err)
	}
	want := &web.Progress{Fraction: 0.25, Step: 250, Total: 1000, At: now, Rate: 0.25 / 3600}
	if diff := cmp.Diff(want, j.Progress); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
	if f.changes.Load() != before+1 {
		t.Errorf("a report did not ask for a replan")
	}
	// The next plan reads the job's end off its speed: three more hours.
	if _, err := f.svc.Replan(ctx, now); err != nil {
		t.Fatal(err)
	}
	j, err = f.bob.Job(ctx, "j1")
	if err != nil {
		t.Fatal(err)
	}
	if e := j.Prediction.Estimate; !strings.HasPrefix(e.Source, "25% done at 14.4 s/it") || e.P50 >= 10*3600 || e.P50 < 4*3600 {
		t.Errorf("estimate after a quarter in an hour = %+v, want between 4h and 10h from progress", e)
	}
}
