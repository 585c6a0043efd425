package core_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
)

// TestFinishedRunsShapeEstimates: a recurring job's finished runs change
// the next plan's estimate of the same job, with words that say so.
func TestFinishedRunsShapeEstimates(t *testing.T) {
	e := newEnv(t)
	// Three earlier runs of alice's "nightly-eval", 40 minutes each, as the
	// agent records them when they end.
	for range 3 {
		j := submit(t, e, "alice", coretest.Job(1, "a100").Name("nightly eval").Build())
		start := e.Clock.Now()
		e.Clock.Advance(40 * time.Minute)
		finish(t, e, j.ID, start, e.Clock.Now(), core.JobSucceeded)
	}
	next := submit(t, e, "alice", coretest.Job(1, "a100").Name("nightly eval").Build())
	replan(t, e)
	got := job(t, e, next.ID).Prediction.Estimate
	if got.P50 != 40*time.Minute || !strings.Contains(got.Source, "nightly-eval") || got.Samples != 3 {
		t.Errorf("estimate after three 40-minute runs = %+v, want a P50 of 40m from 3 runs of nightly-eval", got)
	}
	// A job that never ran teaches nothing; another owner's job is not
	// estimated from alice's runs of her job.
	other := submit(t, e, "bob", coretest.Job(1, "a100").Name("train").Build())
	replan(t, e)
	if est := job(t, e, other.ID).Prediction.Estimate; strings.Contains(est.Source, "nightly-eval") {
		t.Errorf("bob's job is estimated from alice's runs: %+v", est)
	}
}

// TestRunsUnderWayShapeEstimates: three runs of alice's sweep have run
// for two hours; the next one waiting for a GPU is not estimated from the
// 40 minutes of the earlier runs but at least as long as those have run.
// Her guess (1 h each time) counts too, scaled by her record, which the
// runs under way have shown to be at least twice too short.
func TestRunsUnderWayShapeEstimates(t *testing.T) {
	e := newEnv(t, coretest.Node("a100-1").GPUs(3, a100).Build())
	for range 3 {
		j := submit(t, e, "alice", coretest.Job(1, "a100").Name("sweep").Build())
		start := e.Clock.Now()
		e.Clock.Advance(40 * time.Minute)
		finish(t, e, j.ID, start, e.Clock.Now(), core.JobSucceeded)
	}
	for range 3 {
		submit(t, e, "alice", coretest.Job(1, "a100").Name("sweep").Build())
	}
	if res := replan(t, e); len(res.Started) != 3 {
		t.Fatalf("replan started %v, want the three sweeps", res.Started)
	}
	e.Clock.Advance(2 * time.Hour)
	next := submit(t, e, "alice", coretest.Job(1, "a100").Name("sweep").Build())
	replan(t, e)
	got := job(t, e, next.ID).Prediction.Estimate
	want := core.Estimate{P50: 2 * time.Hour, P90: 150 * time.Minute,
		Source: "history: 3 earlier runs of sweep by alice on 1 GPUs, and 3 under way, with alice's guess weighted 83%", Samples: 3}
	if got != want {
		t.Errorf("estimate while three sweeps have run 2h = %+v, want %+v", got, want)
	}
	// Their elapsed time counts in steps (a quarter of an hour at 2 h), so
	// the next replan, a minute later, leaves the estimate as it was.
	e.Clock.Advance(time.Minute)
	replan(t, e)
	if again := job(t, e, next.ID).Prediction.Estimate; again != got {
		t.Errorf("a minute later the estimate is %+v, was %+v", again, got)
	}
}

// TestFinishedRunsTeachThroughput: a job that states its work is first
// estimated from the FLOPs prior, then from the speed of its finished runs,
// scaled to the size of the next one.
func TestFinishedRunsTeachThroughput(t *testing.T) {
	e := newEnv(t)
	llama := func(tokens float64) core.SubmitRequest {
		return coretest.Job(8, "h100").Name("llama-ft").Hints(core.Hints{Params: 7e9, Tokens: tokens}).Build()
	}
	first := submit(t, e, "alice", llama(2e10))
	replan(t, e)
	if est := job(t, e, first.ID).Prediction.Estimate; !strings.HasPrefix(est.Source, "from the work, 8.4e+20 FLOPs on 8×h100") {
		t.Errorf("first run's estimate = %+v, want the FLOPs prior", est)
	}
	// It and a second run take a hundred hours each (30 % of the peak).
	for i := range 2 {
		id := first.ID
		if i > 0 {
			id = submit(t, e, "alice", llama(2e10)).ID
		}
		start := e.Clock.Now()
		e.Clock.Advance(100 * time.Hour)
		finish(t, e, id, start, e.Clock.Now(), core.JobSucceeded)
	}
	next := submit(t, e, "alice", llama(4e10))
	replan(t, e)
	got := job(t, e, next.ID).Prediction.Estimate
	if got.P50 != 200*time.Hour || got.P90 != 250*time.Hour || got.Source != "from 2 earlier runs of llama-ft by alice on h100, scaled to 1.7e+21 FLOPs on 8×h100" {
		t.Errorf("estimate of twice the tokens = %+v, want 200h (P90 250h) scaled from the 2 runs", got)
	}
}

// finish records that job id ran from start to end and ended in state.
func finish(t *testing.T, e *coretest.Env, id int64, start, end time.Time, state core.JobState) {
	t.Helper()
	j := job(t, e, id)
	j.State, j.StartedAt, j.EndedAt = state, start, end
	err := e.Store.Update(ctx, func(tx core.Tx) error { return tx.UpdateJob(ctx, j) })
	if err != nil {
		t.Fatalf("finishing j%d: %v", id, err)
	}
}
