package core

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestWorkOf(t *testing.T) {
	tests := []struct {
		name string
		t    JobType
		h    Hints
		want Work
	}{
		{"nothing", TypeTrain, Hints{}, Work{}},
		{"training FLOPs", TypeTrain, Hints{Params: 7e9, Tokens: 2e10}, Work{FLOPs: 8.4e20}},
		{"fine-tuning trains too", TypeFinetune, Hints{Params: 1e9, Tokens: 1e9}, Work{FLOPs: 6e18}},
		{"inference is forward only", TypeInference, Hints{Params: 1e9, Tokens: 1e9}, Work{FLOPs: 2e18}},
		{"evaluation is forward only", TypeEval, Hints{Params: 1e9, Tokens: 1e9}, Work{FLOPs: 2e18}},
		{"parameters alone", TypeTrain, Hints{Params: 7e9}, Work{}},
		{"steps", TypeTrain, Hints{Steps: 9000}, Work{Steps: 9000}},
		{"steps from the dataset", TypeTrain, Hints{Dataset: 1000, Epochs: 3, BatchSize: 64}, Work{Steps: 47}},
		{"stated steps win", TypeTrain, Hints{Steps: 10, Dataset: 1000, Epochs: 3, BatchSize: 64}, Work{Steps: 10}},
		{"no batch size", TypeTrain, Hints{Dataset: 1000, Epochs: 3}, Work{}},
		{"both kinds", TypeTrain, Hints{Params: 1e9, Tokens: 1e9, Steps: 5}, Work{FLOPs: 6e18, Steps: 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WorkOf(tt.t, tt.h); got != tt.want {
				t.Errorf("WorkOf(%s, %+v) = %+v, want %+v", tt.t, tt.h, got, tt.want)
			}
		})
	}
}

// near reports whether got is within 2 % of want: estimates are whole seconds.
func near(got, want time.Duration) bool {
	return math.Abs(float64(got-want)) <= 0.02*float64(want)
}

func TestWorkPrior(t *testing.T) {
	h := NewHistory(HistoryConfig{})
	// 8.4e20 FLOPs on 8 H100s: 1.05e20 per GPU at 35 % of 989 TFLOP/s.
	j := Job{Owner: "alice", Name: "llama-ft", Type: TypeTrain, GPUs: 8, Model: "h100",
		Hints: Hints{Params: 7e9, Tokens: 2e10}}
	e := h.Estimate(j, histNow)
	seconds := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	p50, p90 := seconds(1.05e20/(0.35*989e12)), seconds(1.05e20/(0.12*989e12))
	if !near(e.P50, p50) || !near(e.P90, p90) {
		t.Errorf("prior estimate = %v (P90 %v), want %v (P90 %v)", e.P50, e.P90, p50, p90)
	}
	want := "from the work, 8.4e+20 FLOPs on 8×h100 at 12–55% of the h100 peak of 989 TFLOP/s (no earlier runs)"
	if e.Source != want || e.Samples != 0 {
		t.Errorf("source = %q (%d samples), want %q", e.Source, e.Samples, want)
	}
	// Twice the GPUs: half the time. An unknown GPU has no peak, so no prior.
	j.GPUs = 16
	if e2 := h.Estimate(j, histNow); !near(e2.P50, p50/2) {
		t.Errorf("on 16 GPUs: %v, want %v", e2.P50, p50/2)
	}
	j.Model = "xyz9000"
	if e3 := h.Estimate(j, histNow); e3.Source != "default" {
		t.Errorf("on an unknown GPU: %+v, want the default", e3)
	}
}

func TestWorkLearnsThroughput(t *testing.T) {
	// alice trained llama-ft on 2e10 tokens in 100 hours (30 % of the
	// H100's peak), three times.
	run := Run{Owner: "alice", Project: "nlp", Name: "llama-ft", GPUs: 8, Family: "h100", Duration: 100 * time.Hour,
		Work: Work{FLOPs: 8.4e20}, Outcome: OutcomeCompleted}
	h := newHistoryOf(runs(3, run))
	job := func(owner, name string, gpus int, tokens float64) Job {
		return Job{Owner: owner, Project: "nlp", Name: name, Type: TypeTrain, GPUs: gpus, Model: "h100",
			Hints: Hints{Params: 7e9, Tokens: tokens}}
	}
	t.Run("the same job, twice the tokens", func(t *testing.T) {
		e := h.Estimate(job("alice", "llama-ft", 8, 4e10), histNow)
		if !near(e.P50, 200*time.Hour) || e.Samples != 3 {
			t.Errorf("estimate = %+v, want 200h from 3 runs", e)
		}
		if want := "from 3 earlier runs of llama-ft by alice on h100, scaled to 1.7e+21 FLOPs on 8×h100"; e.Source != want {
			t.Errorf("source = %q, want %q", e.Source, want)
		}
	})
	t.Run("the same job on twice the GPUs", func(t *testing.T) {
		if e := h.Estimate(job("alice", "llama-ft", 16, 2e10), histNow); !near(e.P50, 50*time.Hour) {
			t.Errorf("on 16 GPUs: %+v, want 50h", e)
		}
	})
	t.Run("another job of hers", func(t *testing.T) {
		e := h.Estimate(job("alice", "mistral", 8, 1e10), histNow)
		if !strings.HasPrefix(e.Source, "from 3 earlier runs by alice on h100, scaled to 4.2e+20 FLOPs") {
			t.Errorf("source = %q", e.Source)
		}
		// Her throughput (shrunk a little toward the prior), not the
		// durations of her other job, which was twice the size.
		if !near(e.P50, 50*time.Hour) {
			t.Errorf("estimate = %+v, want 50h", e)
		}
	})
	t.Run("someone else on the same GPUs", func(t *testing.T) {
		e := h.Estimate(job("bob", "gpt", 8, 2e10), histNow)
		if want := "from 3 earlier runs on h100, scaled to 8.4e+20 FLOPs on 8×h100"; e.Source != want || !near(e.P50, 100*time.Hour) {
			t.Errorf("estimate = %+v, want 100h %s", e, want)
		}
	})
	t.Run("a prior against the durations of earlier runs", func(t *testing.T) {
		// Earlier runs of dave's job had no hints: the tight history of
		// the same job outweighs the wide FLOPs prior.
		h := newHistoryOf(runs(5, Run{Owner: "dave", Name: "sweep", GPUs: 8, Family: "h100", Duration: 2 * time.Hour,
			Outcome: OutcomeCompleted}))
		e := h.Estimate(job("dave", "sweep", 8, 2e10), histNow)
		if !near(e.P50, 2*time.Hour) || !strings.HasPrefix(e.Source, "history: 5 earlier runs of sweep by dave on 8 GPUs, with the work hints weighted ") {
			t.Errorf("estimate = %+v, want 2h from the history, the work hints weighted in", e)
		}
	})
	t.Run("a run no GPU could do teaches nothing", func(t *testing.T) {
		// bob typed 7 parameters for 7e9: his "run" reached a millionth of
		// a percent of the peak; 8.4e20 FLOPs in a minute, far above it.
		slow, fast := run, run
		slow.Owner, slow.Work = "bob", Work{FLOPs: 6 * 7 * 2e10}
		fast.Owner, fast.Duration = "bob", time.Minute
		h := newHistoryOf(runs(3, run), runs(1, slow), runs(1, fast))
		e := h.Estimate(job("carol", "gpt", 8, 2e10), histNow)
		if !near(e.P50, 100*time.Hour) || e.P90 > 400*time.Hour {
			t.Errorf("after two impossible runs = %+v, want alice's 100h with a sane P90", e)
		}
	})
	t.Run("failed runs teach no throughput", func(t *testing.T) {
		failed := run
		failed.Owner, failed.Duration, failed.Outcome = "carol", time.Minute, OutcomeFailed
		h := newHistoryOf(runs(3, failed))
		if e := h.Estimate(job("carol", "llama-ft", 8, 2e10), histNow); strings.Contains(e.Source, "scaled") {
			t.Errorf("estimate after three crashes = %+v, want no learned throughput", e)
		}
	})
}

func TestWorkSteps(t *testing.T) {
	// bob's resnet: 1000 steps in an hour on 4 GPUs.
	h := newHistoryOf(runs(4, Run{Owner: "bob", Name: "resnet", GPUs: 4, Duration: time.Hour,
		Work: Work{Steps: 1000}, Outcome: OutcomeCompleted}))
	j := Job{Owner: "bob", Name: "resnet", Type: TypeTrain, GPUs: 4, Hints: Hints{Dataset: 64000, Epochs: 6, BatchSize: 128}}
	e := h.Estimate(j, histNow)
	if !near(e.P50, 3*time.Hour) {
		t.Errorf("3000 steps = %+v, want 3h", e)
	}
	if want := "from 4 earlier runs of resnet by bob on 4 GPUs, scaled to 3000 steps on 4×GPU"; e.Source != want {
		t.Errorf("source = %q, want %q", e.Source, want)
	}
	// Steps say nothing across jobs: another job of his is estimated from
	// durations only.
	other := Job{Owner: "bob", Name: "vit", Type: TypeTrain, GPUs: 4, Hints: Hints{Steps: 3000}}
	if e := h.Estimate(other, histNow); strings.Contains(e.Source, "steps") {
		t.Errorf("another job = %+v, want no steps throughput", e)
	}
}
