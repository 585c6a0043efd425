package coretest_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
)

// withJobs returns the seeded store with two queued jobs of alice, j1 and j2.
func withJobs(t *testing.T) *coretest.MemStore {
	t.Helper()
	s := seeded(t)
	err := s.Update(ctx, func(tx core.Tx) error {
		for range 2 {
			j := core.Job{Owner: "alice", GPUs: 1, Command: []string{"x"}, Env: map[string]string{"A": "1"}, State: core.JobQueued, SubmittedAt: epoch}
			if err := tx.InsertJob(ctx, &j); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func start(tx core.Tx, id, gpu int64) error {
	j, err := tx.Job(ctx, id)
	if err != nil {
		return err
	}
	j.State, j.StartedAt, j.Assigned = core.JobRunning, epoch, []core.GPURef{{ID: gpu}}
	return tx.UpdateJob(ctx, j)
}

func TestMemStoreJobErrors(t *testing.T) {
	tests := []struct {
		name string
		fn   func(tx core.Tx) error
		want core.Code
	}{
		{"two jobs on one GPU", func(tx core.Tx) error {
			if err := start(tx, 1, 1); err != nil {
				return err
			}
			return start(tx, 2, 1)
		}, core.CodeConflict},
		{"two GPUs", func(tx core.Tx) error {
			if err := start(tx, 1, 1); err != nil {
				return err
			}
			return start(tx, 2, 2)
		}, ""},
		{"a finished job frees its GPU", func(tx core.Tx) error {
			if err := start(tx, 1, 1); err != nil {
				return err
			}
			j, _ := tx.Job(ctx, 1)
			j.State = core.JobCancelled
			if err := tx.UpdateJob(ctx, j); err != nil {
				return err
			}
			return start(tx, 2, 1)
		}, ""},
		{"missing job", func(tx core.Tx) error { _, err := tx.Job(ctx, 9); return err }, core.CodeNotFound},
		{"update missing", func(tx core.Tx) error { return tx.UpdateJob(ctx, core.Job{ID: 9}) }, core.CodeNotFound},
		{"job for nobody", func(tx core.Tx) error { return tx.InsertJob(ctx, &core.Job{Owner: "bob"}) }, core.CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := withJobs(t)
			if got := core.ErrorCode(s.Update(ctx, tt.fn)); got != tt.want {
				t.Errorf("code = %q, want %q", got, tt.want)
			}
		})
	}
	s := withJobs(t)
	if err := s.View(ctx, func(tx core.Tx) error { return start(tx, 1, 1) }); err == nil {
		t.Error("UpdateJob inside View succeeded")
	}
}

func TestMemStoreJobs(t *testing.T) {
	s := withJobs(t)
	err := s.Update(ctx, func(tx core.Tx) error {
		if err := start(tx, 1, 1); err != nil {
			return err
		}
		p := core.Prediction{PlannedAt: epoch, Position: 1, GPUs: []int64{2}}
		if err := tx.SetPredictions(ctx, map[int64]core.Prediction{1: p, 2: p, 9: p}); err != nil {
			return err
		}
		ev := core.Event{Kind: core.EventStarted, Job: 1, User: "alice", At: epoch, DedupKey: "started:j1"}
		return tx.InsertEvents(ctx, []core.Event{ev, ev})
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.View(ctx, func(tx core.Tx) error {
		js, _ := tx.Jobs(ctx, core.JobFilter{States: []core.JobState{core.JobRunning}})
		if len(js) != 1 || js[0].ID != 1 || js[0].Prediction.Position != 1 {
			t.Errorf("running jobs = %+v, want j1 with its new prediction", js)
		}
		js[0].Env["A"], js[0].Prediction.GPUs[0] = "changed", 99
		again, _ := tx.Job(ctx, 1)
		if again.Env["A"] != "1" || again.Prediction.GPUs[0] != 2 {
			t.Errorf("changing a returned job changed the store: %+v", again)
		}
		es, _ := tx.Events(ctx, 0, 0)
		if diff := cmp.Diff([]string{"started:j1"}, keys(es)); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		us, _ := tx.Usage(ctx, epoch)
		if len(us) != 1 || us[0].Job != 1 || us[0].GPUs != 1 || !us[0].End.IsZero() {
			t.Errorf("usage = %+v, want j1 on 1 GPU, still running", us)
		}
		return nil
	})
}

func keys(es []core.Event) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.DedupKey)
	}
	return out
}
