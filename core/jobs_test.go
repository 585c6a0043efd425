package core_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
)

// submit submits req as actor and fails t on error.
func submit(t *testing.T, e *coretest.Env, actor string, req core.SubmitRequest) core.Job {
	t.Helper()
	j, err := e.Service.Submit(ctx, e.Actor(t, actor), req)
	if err != nil {
		t.Fatalf("Submit(%s, %+v): %v", actor, req, err)
	}
	return j
}

// replan replans at the env's clock and fails t on error.
func replan(t *testing.T, e *coretest.Env) core.ReplanResult {
	t.Helper()
	res, err := e.Service.Replan(ctx, e.Clock.Now())
	if err != nil {
		t.Fatalf("Replan: %v", err)
	}
	return res
}

// job reads job id from the store, unredacted.
func job(t *testing.T, e *coretest.Env, id int64) core.Job {
	t.Helper()
	j, err := e.Service.Job(ctx, core.System, id)
	if err != nil {
		t.Fatalf("Job(%d): %v", id, err)
	}
	return j
}

// jobState is what a refused job request must not change.
type jobState struct {
	Jobs   []core.Job
	Events []core.Event
	Rest   state
}

func jobSnapshot(t *testing.T, e *coretest.Env) jobState {
	t.Helper()
	s := jobState{Rest: snapshot(t, e)}
	err := e.Store.View(ctx, func(tx core.Tx) (err error) {
		if s.Jobs, err = tx.Jobs(ctx, core.JobFilter{}); err != nil {
			return err
		}
		s.Events, err = tx.Events(ctx, 0, 0)
		return err
	})
	if err != nil {
		t.Fatalf("jobSnapshot: %v", err)
	}
	return s
}

func TestSubmit(t *testing.T) {
	e := newEnv(t)
	before := snapshot(t, e)
	req := coretest.Job(4, "A100").Name("Llama FT").Type(core.TypeFinetune).Project("vision").
		Env("WANDB_PROJECT", "llama").WorkDir("/home/alice/llama").Guess(3 * hour).Build()
	got, err := e.Service.Submit(ctx, e.Actor(t, "alice"), req)
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	want := core.Job{
		ID: 1, Owner: "alice", Project: "vision", Name: "llama-ft", Type: core.TypeFinetune, GPUs: 4, Model: "a100",
		Command: []string{"python", "train.py"}, Env: map[string]string{"WANDB_PROJECT": "llama"}, WorkDir: "/home/alice/llama",
		Class: core.ClassNormal, Hints: core.Hints{Guess: 3 * hour}, State: core.JobQueued, SubmittedAt: epoch, Checkpoint: "SIGUSR1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Submit mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, job(t, e, 1)); diff != "" {
		t.Errorf("stored job mismatch (-want +got):\n%s", diff)
	}
	wantAudit := []core.AuditEntry{{Actor: "alice", Action: "job.submit", Object: "j1"}}
	if diff := cmp.Diff(wantAudit, newAudit(t, e, before)); diff != "" {
		t.Errorf("audit mismatch (-want +got):\n%s", diff)
	}
}

func TestSubmitDefaults(t *testing.T) {
	e := newEnv(t)
	r := book(t, e, "alice", coretest.Booking(4, "a100").At(epoch, 4*hour).Project("vision").Build())
	tests := []struct {
		name  string
		actor string
		req   core.SubmitRequest
		check func(j core.Job) string
	}{
		{"name from the script", "alice", coretest.Job(1, "").Command("python", "-u", "scripts/train_vit.py", "--lr", "3e-4").Build(),
			func(j core.Job) string {
				return want(j.Name, "train_vit") + want(j.Type, core.TypeOther) + want(j.Class, core.ClassNormal)
			}},
		{"name from the program", "alice", coretest.Job(1, "").Command("jupyter", "lab").Build(),
			func(j core.Job) string { return want(j.Name, "jupyter") }},
		{"low is preemptible", "alice", coretest.Job(1, "").Class(core.ClassLow).Build(),
			func(j core.Job) string { return want(j.Preemptible, true) }},
		{"any model", "alice", coretest.Job(2, "any").Build(),
			func(j core.Job) string { return want(j.Model, "") }},
		{"reservation gives class and project", "alice", coretest.Job(2, "a100").In(r.ID).Build(),
			func(j core.Job) string {
				return want(j.Class, core.ClassReserved) + want(j.Project, "vision") + want(j.Reservation, r.ID)
			}},
		{"high by a project admin", "bob", coretest.Job(1, "").Class(core.ClassHigh).Project("vision").Build(),
			func(j core.Job) string { return want(j.Class, core.ClassHigh) }},
		{"high by a site admin", "root", coretest.Job(1, "").Class(core.ClassHigh).Build(),
			func(j core.Job) string { return want(j.Class, core.ClassHigh) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if msg := tt.check(submit(t, e, tt.actor, tt.req)); msg != "" {
				t.Error(msg)
			}
		})
	}
}

// want returns "" when got equals w and a message otherwise.
func want[T comparable](got, w T) string {
	if got == w {
		return ""
	}
	return "got " + strings.TrimSpace(strings.ReplaceAll(cmp.Diff(w, got), "\n", " ")) + "; "
}

func TestSubmitRefused(t *testing.T) {
	valid := func() *coretest.JobBuilder { return coretest.Job(2, "a100") }
	long := strings.Repeat("x", 40<<10)
	tests := []struct {
		name     string
		actor    string
		req      func(r core.Reservation) core.SubmitRequest
		code     core.Code
		fragment string
	}{
		{"no GPUs", "alice", fixed(coretest.Job(0, "a100").Build()), core.CodeInvalid, "at least 1 GPU"},
		{"more GPUs than exist", "alice", fixed(coretest.Job(13, "a100").Build()), core.CodeInvalid, "only 12"},
		{"not a model", "alice", fixed(coretest.Job(1, "banana").Build()), core.CodeInvalid, `"banana" is not a GPU model`},
		{"model not here", "alice", fixed(coretest.Job(1, "v100").Build()), core.CodeInvalid, "models here"},
		{"no command", "alice", fixed(valid().Command().Build()), core.CodeInvalid, "needs a command"},
		{"blank command", "alice", fixed(valid().Command(" ", "x").Build()), core.CodeInvalid, "needs a command"},
		{"command too long", "alice", fixed(valid().Command("python", long).Build()), core.CodeInvalid, "bytes long"},
		{"NUL in command", "alice", fixed(valid().Command("python", "a\x00b").Build()), core.CodeInvalid, "NUL"},
		{"bad env key", "alice", fixed(valid().Env("1X", "y").Build()), core.CodeInvalid, `"1X"`},
		{"env set by the agent", "alice", fixed(valid().Env("CUDA_VISIBLE_DEVICES", "0").Build()), core.CodeInvalid, "set by gpucal's agent"},
		{"gpucal env", "alice", fixed(valid().Env("GPUCAL_JOB", "1").Build()), core.CodeInvalid, "set by gpucal's agent"},
		{"env value too long", "alice", fixed(valid().Env("X", long).Build()), core.CodeInvalid, "bytes long"},
		{"relative workdir", "alice", fixed(valid().WorkDir("llama").Build()), core.CodeInvalid, "absolute path"},
		{"unknown type", "alice", fixed(valid().Type("pretrain").Build()), core.CodeInvalid, "job type"},
		{"unknown class", "alice", fixed(valid().Class("urgent").Build()), core.CodeInvalid, "high, normal or low"},
		{"reserved without reservation", "alice", fixed(valid().Class(core.ClassReserved).Build()), core.CodeInvalid, "high, normal or low"},
		{"high by a member", "alice", fixed(valid().Class(core.ClassHigh).Project("vision").Build()), core.CodeForbidden, "class high"},
		{"high without project", "bob", fixed(valid().Class(core.ClassHigh).Build()), core.CodeForbidden, "class high"},
		{"negative params", "alice", fixed(valid().Hints(core.Hints{Params: -1}).Build()), core.CodeInvalid, "params"},
		{"NaN tokens", "alice", fixed(valid().Hints(core.Hints{Tokens: math.NaN()}).Build()), core.CodeInvalid, "tokens"},
		{"negative epochs", "alice", fixed(valid().Hints(core.Hints{Epochs: -3}).Build()), core.CodeInvalid, "epochs"},
		{"negative guess", "alice", fixed(valid().Guess(-hour).Build()), core.CodeInvalid, "negative"},
		{"guess too long", "alice", fixed(valid().Guess(15 * 24 * hour).Build()), core.CodeInvalid, "longest allowed"},
		{"bad name", "alice", fixed(valid().Name("llama!").Build()), core.CodeInvalid, "job name"},
		{"not a member", "dave", fixed(valid().Project("vision").Build()), core.CodeForbidden, "not a member"},
		{"unknown project", "alice", fixed(valid().Project("nope").Build()), core.CodeInvalid, `project "nope" does not exist`},
		{"someone else's reservation", "carol", func(r core.Reservation) core.SubmitRequest { return valid().In(r.ID).Build() },
			core.CodeForbidden, "belongs to alice"},
		{"no such reservation", "alice", fixed(valid().In(99).Build()), core.CodeInvalid, "no reservation r99"},
		{"reservation too small", "alice", func(r core.Reservation) core.SubmitRequest { return coretest.Job(3, "").In(r.ID).Build() },
			core.CodeInvalid, "holds 2 GPU(s)"},
		{"reservation of another model", "alice", func(r core.Reservation) core.SubmitRequest { return coretest.Job(1, "h100").In(r.ID).Build() },
			core.CodeInvalid, "holds 0 h100"},
		{"reservation with a class", "alice", func(r core.Reservation) core.SubmitRequest {
			return valid().In(r.ID).Class(core.ClassHigh).Build()
		}, core.CodeInvalid, "class reserved"},
		{"reservation of another project", "alice", func(r core.Reservation) core.SubmitRequest {
			return valid().In(r.ID).Project("other").Build()
		}, core.CodeInvalid, `booked for project ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			r := book(t, e, "alice", coretest.Booking(2, "a100").At(epoch.Add(hour), 2*hour).Build())
			before := jobSnapshot(t, e)
			_, err := e.Service.Submit(ctx, e.Actor(t, tt.actor), tt.req(r))
			wantError(t, err, tt.code, tt.fragment)
			if diff := cmp.Diff(before, jobSnapshot(t, e)); diff != "" {
				t.Errorf("a refused submission changed the store (-before +after):\n%s", diff)
			}
		})
	}
	t.Run("finished reservation", func(t *testing.T) {
		e := newEnv(t)
		r := book(t, e, "alice", coretest.Booking(2, "a100").At(epoch.Add(hour), 2*hour).Build())
		mustCancel(e, r)
		_, err := e.Service.Submit(ctx, e.Actor(t, "alice"), valid().In(r.ID).Build())
		wantError(t, err, core.CodeInvalid, "r1 is cancelled")
	})
}

func fixed(r core.SubmitRequest) func(core.Reservation) core.SubmitRequest {
	return func(core.Reservation) core.SubmitRequest { return r }
}

func TestCancelJob(t *testing.T) {
	tests := []struct {
		actor   string
		project string // the job's project
		allowed bool
	}{
		{"alice", "", true},        // the owner
		{"carol", "", false},       // a stranger
		{"carol", "vision", false}, // a member of the job's project
		{"bob", "vision", true},    // an admin of the job's project
		{"bob", "", false},         // a project admin, but the job has no project
		{"root", "", true},         // a site admin
	}
	for _, tt := range tests {
		t.Run(tt.actor+" "+tt.project, func(t *testing.T) {
			e := newEnv(t)
			j := submit(t, e, "alice", coretest.Job(1, "a100").Project(tt.project).Build())
			before := jobSnapshot(t, e)
			got, err := e.Service.CancelJob(ctx, e.Actor(t, tt.actor), j.ID)
			if !tt.allowed {
				wantError(t, err, core.CodeForbidden, "only its owner")
				if diff := cmp.Diff(before, jobSnapshot(t, e)); diff != "" {
					t.Errorf("a refused cancel changed the store (-before +after):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("CancelJob: %v", err)
			}
			if got.State != core.JobCancelled || !got.EndedAt.Equal(epoch) {
				t.Errorf("cancelled job: state %s, ended %s; want cancelled at %s", got.State, got.EndedAt, epoch)
			}
			wantAudit := []core.AuditEntry{{Actor: tt.actor, Action: "job.cancel", Object: "j1"}}
			if diff := cmp.Diff(wantAudit, newAudit(t, e, before.Rest)); diff != "" {
				t.Errorf("audit mismatch (-want +got):\n%s", diff)
			}
			_, err = e.Service.CancelJob(ctx, e.Actor(t, tt.actor), j.ID)
			wantError(t, err, core.CodeInvalid, "already cancelled")
		})
	}
	t.Run("missing", func(t *testing.T) {
		e := newEnv(t)
		_, err := e.Service.CancelJob(ctx, e.Actor(t, "alice"), 42)
		wantError(t, err, core.CodeNotFound, "j42")
	})
	t.Run("running job frees its GPUs", func(t *testing.T) {
		e := newEnv(t)
		first := submit(t, e, "alice", coretest.Job(8, "h100").Guess(hour).Build())
		second := submit(t, e, "bob", coretest.Job(8, "h100").Guess(10*hour).Build())
		replan(t, e)
		if got := job(t, e, first.ID).State; got != core.JobStarting {
			t.Fatalf("first job is %s, want starting", got)
		}
		if _, err := e.Service.CancelJob(ctx, e.Actor(t, "alice"), first.ID); err != nil {
			t.Fatal(err)
		}
		e.Clock.Advance(time.Minute)
		res := replan(t, e)
		if diff := cmp.Diff([]int64{second.ID}, res.Started); diff != "" {
			t.Errorf("started after the cancel (-want +got):\n%s", diff)
		}
	})
}

func TestJobsVisibility(t *testing.T) {
	e := newEnv(t)
	submit(t, e, "alice", coretest.Job(1, "a100").Type(core.TypeEval).Env("TOKEN", "secret").Project("vision").Build())
	submit(t, e, "dave", coretest.Job(1, "h100").Type(core.TypeTrain).Build())
	tests := []struct {
		name    string
		actor   string
		filter  core.JobFilter
		want    []int64
		command []bool // per job: is the command shown
	}{
		{"all, as alice", "alice", core.JobFilter{}, []int64{2, 1}, []bool{false, true}},
		{"all, as a project admin", "bob", core.JobFilter{}, []int64{2, 1}, []bool{false, true}},
		{"all, as root", "root", core.JobFilter{}, []int64{2, 1}, []bool{true, true}},
		{"by owner", "dave", core.JobFilter{Owner: "alice"}, []int64{1}, []bool{false}},
		{"by project", "dave", core.JobFilter{Project: "vision"}, []int64{1}, []bool{false}},
		{"by type", "dave", core.JobFilter{Types: []core.JobType{core.TypeTrain}}, []int64{2}, []bool{true}},
		{"by state", "dave", core.JobFilter{States: []core.JobState{core.JobRunning}}, nil, nil},
		{"limit", "dave", core.JobFilter{Limit: 1}, []int64{2}, []bool{true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			js, err := e.Service.Jobs(ctx, e.Actor(t, tt.actor), tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			var shown []bool
			for _, j := range js {
				ids = append(ids, j.ID)
				shown = append(shown, j.Command != nil)
				if j.Command == nil && j.Env != nil {
					t.Errorf("%s: environment shown without the command", core.JobName(j.ID))
				}
			}
			if diff := cmp.Diff(tt.want, ids); diff != "" {
				t.Errorf("jobs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.command, shown); diff != "" {
				t.Errorf("command shown (-want +got):\n%s", diff)
			}
		})
	}
	for _, f := range []core.JobFilter{{States: []core.JobState{"happy"}}, {Types: []core.JobType{"pretrain"}}} {
		_, err := e.Service.Jobs(ctx, e.Actor(t, "alice"), f)
		wantError(t, err, core.CodeInvalid, "filter by")
	}
	if _, err := e.Service.Job(ctx, e.Actor(t, "alice"), 99); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("Job(99): %v, want not found", err)
	}
}
