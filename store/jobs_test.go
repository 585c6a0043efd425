package store

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/store/storetest"
)

// newJob returns a queued job of owner for n GPUs, submitted at t0.
func newJob(owner string, n int) core.Job {
	return core.Job{Owner: owner, Name: "train", Type: core.TypeTrain, GPUs: n, Model: "a100",
		Command: []string{"python", "train.py"}, Class: core.ClassNormal, State: core.JobQueued, SubmittedAt: t0}
}

// insertJob stores j and returns it with its ID.
func (f *fixture) insertJob(t testing.TB, j core.Job) core.Job {
	t.Helper()
	update(t, f.db, func(tx core.Tx) error { return tx.InsertJob(context.Background(), &j) })
	return j
}

func (f *fixture) job(t testing.TB, id int64) core.Job {
	t.Helper()
	var j core.Job
	view(t, f.db, func(tx core.Tx) (err error) { j, err = tx.Job(context.Background(), id); return err })
	return j
}

func TestJobs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		r := f.book(t, reservation("alice", hours(0), hours(4), f.a100.GPUs[0], f.a100.GPUs[1]))

		full := newJob("alice", 2)
		full.Project, full.Type, full.Class, full.Preemptible, full.Reservation = "ml", core.TypeFinetune, core.ClassReserved, true, r.ID
		full.Env = map[string]string{"WANDB_PROJECT": "llama", "QUOTE": `"'\`}
		full.WorkDir = "/home/alice/ünïcode"
		full.Command = []string{"torchrun", "--nproc-per-node", "2", "train.py", "--lr=3e-4"}
		full.Hints = core.Hints{Framework: "pytorch", Params: 7e9, Tokens: 1.5e12, Dataset: 10000, Epochs: 3, BatchSize: 64, Steps: 9000, Guess: 3 * time.Hour}
		full = f.insertJob(t, full)
		plain := f.insertJob(t, newJob("bob", 1))
		eval := newJob("alice", 4)
		eval.Type = core.TypeEval
		eval = f.insertJob(t, eval)
		if full.ID == 0 || plain.ID <= full.ID || eval.ID <= plain.ID {
			t.Fatalf("IDs %d, %d, %d: want increasing, non-zero", full.ID, plain.ID, eval.ID)
		}
		if diff := cmp.Diff(full, f.job(t, full.ID)); diff != "" {
			t.Errorf("Job (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(plain, f.job(t, plain.ID)); diff != "" {
			t.Errorf("Job without extras (-want +got):\n%s", diff)
		}

		t.Run("not found", func(t *testing.T) {
			err := f.db.View(ctx, func(tx core.Tx) error { _, err := tx.Job(ctx, 42); return err })
			wantCode(t, err, core.CodeNotFound, "job j42 not found")
			err = f.db.Update(ctx, func(tx core.Tx) error { return tx.UpdateJob(ctx, core.Job{ID: 42, State: core.JobCancelled}) })
			wantCode(t, err, core.CodeNotFound, "job j42 not found")
		})
		t.Run("unknown owner", func(t *testing.T) {
			err := f.db.Update(ctx, func(tx core.Tx) error { j := newJob("ghost", 1); return tx.InsertJob(ctx, &j) })
			wantCode(t, err, core.CodeInvalid, "")
		})

		// plain starts on two GPUs given out of order; eval is cancelled.
		plain.State, plain.StartedAt = core.JobRunning, hours(1)
		plain.Assigned = []core.GPURef{f.h100.GPUs[0].Ref(), f.a100.GPUs[3].Ref()}
		eval.State, eval.EndedAt = core.JobCancelled, hours(2)
		update(t, f.db, func(tx core.Tx) error {
			if err := tx.UpdateJob(ctx, plain); err != nil {
				return err
			}
			return tx.UpdateJob(ctx, eval)
		})
		plain.Assigned = []core.GPURef{f.a100.GPUs[3].Ref(), f.h100.GPUs[0].Ref()}
		if diff := cmp.Diff(plain, f.job(t, plain.ID)); diff != "" {
			t.Errorf("Job after UpdateJob (-want +got):\n%s", diff)
		}

		for _, tc := range []struct {
			name   string
			filter core.JobFilter
			want   []int64
		}{
			{"all, newest first", core.JobFilter{}, []int64{eval.ID, plain.ID, full.ID}},
			{"owner", core.JobFilter{Owner: "alice"}, []int64{eval.ID, full.ID}},
			{"project", core.JobFilter{Project: "ml"}, []int64{full.ID}},
			{"states", core.JobFilter{States: []core.JobState{core.JobQueued, core.JobRunning}}, []int64{plain.ID, full.ID}},
			{"types", core.JobFilter{Types: []core.JobType{core.TypeEval, core.TypeTrain}}, []int64{eval.ID, plain.ID}},
			{"limit", core.JobFilter{Limit: 1}, []int64{eval.ID}},
			{"ended since, at the instant", core.JobFilter{EndedSince: hours(2)}, []int64{eval.ID}},
			{"ended since, after it", core.JobFilter{EndedSince: hours(2).Add(time.Second)}, nil},
		} {
			t.Run("filter "+tc.name, func(t *testing.T) {
				var js []core.Job
				view(t, f.db, func(tx core.Tx) (err error) { js, err = tx.Jobs(ctx, tc.filter); return err })
				var got []int64
				for _, j := range js {
					got = append(got, j.ID)
					if j.ID == plain.ID && len(j.Assigned) != 2 {
						t.Errorf("%s lists %d assigned GPUs, want 2", core.JobName(j.ID), len(j.Assigned))
					}
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("Jobs (-want +got):\n%s", diff)
				}
			})
		}
	})
}

// TestJobHolds checks the database's own guard: a GPU is held by at most
// one holding job; a finished job's GPUs are free again but remembered.
func TestJobHolds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		g := f.a100.GPUs[0].Ref()
		first, second := f.insertJob(t, newJob("alice", 1)), f.insertJob(t, newJob("bob", 1))
		first.State, first.StartedAt, first.Assigned = core.JobStarting, t0, []core.GPURef{g}
		update(t, f.db, func(tx core.Tx) error { return tx.UpdateJob(ctx, first) })

		second.State, second.StartedAt, second.Assigned = core.JobRunning, t0, []core.GPURef{g}
		err := f.db.Update(ctx, func(tx core.Tx) error { return tx.UpdateJob(ctx, second) })
		wantCode(t, err, core.CodeConflict, "")

		first.State, first.EndedAt = core.JobCancelled, hours(1)
		update(t, f.db, func(tx core.Tx) error {
			if err := tx.UpdateJob(ctx, first); err != nil {
				return err
			}
			return tx.UpdateJob(ctx, second)
		})
		if got := f.job(t, first.ID).Assigned; len(got) != 1 || got[0].ID != g.ID {
			t.Errorf("the cancelled job's GPUs are %v, want the one it had", got)
		}
		if got := f.job(t, second.ID); got.State != core.JobRunning || len(got.Assigned) != 1 {
			t.Errorf("second job %s on %v, want running on the freed GPU", got.State, got.Assigned)
		}
	})
}

func TestPredictionsAndUsage(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		queued := f.insertJob(t, newJob("alice", 2))
		done := newJob("bob", 1)
		done.Project = "ml"
		done = f.insertJob(t, done)
		old := f.insertJob(t, newJob("bob", 1))
		running := f.insertJob(t, newJob("alice", 2))

		p := core.Prediction{PlannedAt: t0, Position: 1, StartP50: hours(1), StartP90: hours(2), EndP50: hours(3), EndP90: hours(5),
			GPUs: []int64{f.a100.GPUs[2].ID, f.a100.GPUs[3].ID}, Reason: "waiting for 2×a100 on one node",
			Estimate: core.Estimate{P50: 2 * time.Hour, P90: 3 * time.Hour, Source: "guess", Samples: 0},
			Drain:    &core.DrainOrder{Job: queued.ID, Reservation: 7, SignalAt: hours(3), Deadline: hours(4)}}
		update(t, f.db, func(tx core.Tx) error {
			done.State, done.StartedAt, done.EndedAt = core.JobSucceeded, hours(-3), hours(-1)
			done.Assigned = []core.GPURef{f.a100.GPUs[0].Ref()}
			old.State, old.StartedAt, old.EndedAt = core.JobFailed, hours(-24*100), hours(-24*99)
			old.Assigned = []core.GPURef{f.a100.GPUs[1].Ref()}
			running.State, running.StartedAt = core.JobRunning, hours(-2)
			running.Assigned = []core.GPURef{f.h100.GPUs[0].Ref(), f.h100.GPUs[1].Ref()}
			for _, j := range []core.Job{done, old, running} {
				if err := tx.UpdateJob(ctx, j); err != nil {
					return err
				}
			}
			return tx.SetPredictions(ctx, map[int64]core.Prediction{queued.ID: p, done.ID: p})
		})
		if diff := cmp.Diff(p, f.job(t, queued.ID).Prediction); diff != "" {
			t.Errorf("stored prediction (-want +got):\n%s", diff)
		}
		if got := f.job(t, done.ID).Prediction; !got.PlannedAt.IsZero() {
			t.Errorf("a finished job's prediction changed to %+v", got)
		}

		var usage []core.UsageRecord
		view(t, f.db, func(tx core.Tx) (err error) { usage, err = tx.Usage(ctx, hours(-24*70)); return err })
		want := []core.UsageRecord{
			{Job: done.ID, Project: "ml", GPUs: 1, Start: hours(-3), End: hours(-1)},
			{Job: running.ID, GPUs: 2, Start: hours(-2)},
		}
		if diff := cmp.Diff(want, usage); diff != "" {
			t.Errorf("Usage (-want +got):\n%s", diff)
		}
	})
}

func TestProgress(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		j := f.insertJob(t, newJob("alice", 1))
		if got := f.job(t, j.ID).Progress; got.Reported() {
			t.Fatalf("a new job has progress %+v", got)
		}
		p := core.Progress{Fraction: 0.125, Step: 125, Total: 1000, At: hours(1), Rate: 1.0 / 7200}
		update(t, f.db, func(tx core.Tx) error { return tx.SetProgress(ctx, j.ID, p) })
		if diff := cmp.Diff(p, f.job(t, j.ID).Progress); diff != "" {
			t.Errorf("stored progress (-want +got):\n%s", diff)
		}
		// Updating the job's state or prediction keeps its progress.
		got := f.job(t, j.ID)
		got.State = core.JobCancelled
		got.EndedAt = hours(2)
		update(t, f.db, func(tx core.Tx) error { return tx.UpdateJob(ctx, got) })
		if diff := cmp.Diff(p, f.job(t, j.ID).Progress); diff != "" {
			t.Errorf("progress after UpdateJob (-want +got):\n%s", diff)
		}
		err := f.db.Update(ctx, func(tx core.Tx) error { return tx.SetProgress(ctx, 9999, p) })
		wantCode(t, err, core.CodeNotFound, "job j9999 not found")
		// The database refuses a fraction no job can have.
		err = f.db.Update(ctx, func(tx core.Tx) error { return tx.SetProgress(ctx, j.ID, core.Progress{Fraction: 1.5, At: hours(3)}) })
		if err == nil {
			t.Error("SetProgress stored a fraction of 1.5")
		}
	})
}

func TestEvents(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		j := f.insertJob(t, newJob("alice", 1))
		ev := func(kind core.EventKind, key string) core.Event {
			return core.Event{Kind: kind, Job: j.ID, User: "alice", At: t0, Detail: string(kind), DedupKey: key}
		}
		update(t, f.db, func(tx core.Tx) error {
			return tx.InsertEvents(ctx, []core.Event{ev(core.EventStarted, "started:j1"), ev(core.EventStartsSoon, "starts_soon:j1")})
		})
		// A retried replan: the same keys again, and one new one.
		update(t, f.db, func(tx core.Tx) error {
			return tx.InsertEvents(ctx, []core.Event{ev(core.EventStarted, "started:j1"), ev(core.EventWillBeDrained, "will_be_drained:j1:r1:1")})
		})
		update(t, f.db, func(tx core.Tx) error { return tx.InsertEvents(ctx, nil) })
		var got []core.Event
		view(t, f.db, func(tx core.Tx) (err error) { got, err = tx.Events(ctx, 0, 0); return err })
		var keys []string
		for i, e := range got {
			keys = append(keys, e.DedupKey)
			if e.ID == 0 || (i > 0 && e.ID <= got[i-1].ID) || e.User != "alice" || e.Job != j.ID || !e.At.Equal(t0) {
				t.Errorf("event %d = %+v", i, e)
			}
		}
		if diff := cmp.Diff([]string{"started:j1", "starts_soon:j1", "will_be_drained:j1:r1:1"}, keys); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		view(t, f.db, func(tx core.Tx) (err error) { got, err = tx.Events(ctx, got[0].ID, 1); return err })
		if len(got) != 1 || got[0].DedupKey != "starts_soon:j1" {
			t.Errorf("Events(after the first, 1) = %+v, want the second", got)
		}
	})
}

// TestLockGPUs checks that two transactions locking a GPU run one after
// the other: the second sees what the first committed.
func TestLockGPUs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		g := f.a100.GPUs[0]
		locked := make(chan struct{})
		release := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			update(t, f.db, func(tx core.Tx) error {
				if err := tx.LockGPUs(ctx, []int64{g.ID, f.a100.GPUs[1].ID}); err != nil {
					return err
				}
				j := newJob("alice", 1)
				if err := tx.InsertJob(ctx, &j); err != nil {
					return err
				}
				close(locked)
				<-release
				return nil
			})
		})
		<-locked
		var seen int
		done := make(chan struct{})
		go func() {
			defer close(done)
			update(t, f.db, func(tx core.Tx) error {
				if err := tx.LockGPUs(ctx, []int64{g.ID}); err != nil {
					return err
				}
				js, err := tx.Jobs(ctx, core.JobFilter{})
				seen = len(js)
				return err
			})
		}()
		select {
		case <-done:
			t.Fatal("the second transaction locked a GPU the first one holds")
		case <-time.After(200 * time.Millisecond):
		}
		close(release)
		wg.Wait()
		<-done
		if seen != 1 {
			t.Errorf("the second transaction saw %d jobs, want the first one's", seen)
		}
		view(t, f.db, func(tx core.Tx) error { return tx.LockGPUs(ctx, []int64{g.ID}) })
	})
}
