package sim

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/gpucal/gpucal/core"
)

// TestEvaluateRecurringJob replays ten runs of one user's job, each 100 s
// with a 400 s limit: the first is predicted at its limit, every later one
// exactly, by the estimator and by last-two alike.
func TestEvaluateRecurringJob(t *testing.T) {
	var tr Trace
	for i := range 10 {
		tr.Jobs = append(tr.Jobs, TraceJob{ID: string(rune('a' + i)), Submit: time.Duration(i) * 1000 * time.Second,
			GPUs: 1, Duration: 100 * time.Second, Requested: 400 * time.Second, User: "u1", Group: "g1", Status: "completed"})
	}
	got := Evaluate(tr, EvalConfig{})
	first := 0.25 // 100 s predicted as 400 s
	want := Evaluation{
		Scores: Scores{N: 10, Accuracy: (first + 9) / 10, MAE: 30, Within10: 0.9, Within50: 0.9, Within100: 0.9,
			UnderRate: 0, P90Coverage: 1},
		Baselines: map[string]Scores{
			BaselineRequest: {N: 10, Accuracy: 0.25, MAE: 300, P90Coverage: 1},
			BaselineLastTwo: {N: 10, Accuracy: (first + 9) / 10, MAE: 30, Within10: 0.9, Within50: 0.9, Within100: 0.9,
				P90Coverage: 1},
			// Nothing finished before the first: the 4 h default.
			BaselineMedian: {N: 10, Accuracy: (100.0/14400 + 9) / 10, MAE: (14400 - 100) / 10.0, Within10: 0.9,
				Within50: 0.9, Within100: 0.9, P90Coverage: 1},
		},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestEvaluateIsCausal checks that a prediction sees a job only once it has
// finished: a finish at the very instant of a submission counts, one a
// second later does not, and a recorded wait delays the finish.
func TestEvaluateIsCausal(t *testing.T) {
	pair := func(second time.Duration) Trace {
		return Trace{Jobs: []TraceJob{
			{ID: "1", Submit: 0, GPUs: 1, Duration: 1000 * time.Second, Requested: 4000 * time.Second, User: "u"},
			{ID: "2", Submit: second, GPUs: 1, Duration: 1000 * time.Second, Requested: 4000 * time.Second, User: "u"},
		}}
	}
	tests := []struct {
		name  string
		trace Trace
		waits map[string]time.Duration
		sees  bool // whether the second job's prediction knows the first's runtime
	}{
		{"finished at the submission", pair(1000 * time.Second), nil, true},
		{"still running", pair(999 * time.Second), nil, false},
		{"waited before it started", pair(1000 * time.Second), map[string]time.Duration{"1": time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Evaluate(tt.trace, EvalConfig{Waits: tt.waits}).Baselines[BaselineLastTwo].Accuracy
			want := 0.25 // both predicted by the request
			if tt.sees {
				want = (0.25 + 1) / 2
			}
			if math.Abs(got-want) > 1e-9 {
				t.Errorf("last_two accuracy %v, want %v", got, want)
			}
		})
	}
}

// TestEvaluateRunsUnderWay checks that a prediction knows how long the
// user's runs still going have run so far, and only that: the third job is
// predicted at least as long as the second has run (2,500 s of its 5,000,
// rounded down to 40 minutes) when that one has started, and from the first
// job's 100 s when it waits.
func TestEvaluateRunsUnderWay(t *testing.T) {
	tr := Trace{Jobs: []TraceJob{
		{ID: "1", Submit: 0, GPUs: 1, Duration: 100 * time.Second, User: "u"},
		{ID: "2", Submit: 2000 * time.Second, GPUs: 1, Duration: 5000 * time.Second, User: "u"},
		{ID: "3", Submit: 4500 * time.Second, GPUs: 1, Duration: 5000 * time.Second, User: "u"},
	}}
	first, second := 100.0/14400, 100.0/5000 // the 4 h default, then the first job's 100 s
	tests := []struct {
		name  string
		waits map[string]time.Duration
		third float64 // the third job's accuracy
	}{
		{"running for 2500 s", nil, 2400.0 / 5000},
		{"still waiting to start", map[string]time.Duration{"2": 3000 * time.Second}, 100.0 / 5000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// k tiny: the user's own runs decide, the everyone group does not dilute them.
			got := Evaluate(tr, EvalConfig{Waits: tt.waits, History: core.HistoryConfig{Prior: 1e-6}}).Accuracy
			if want := (first + second + tt.third) / 3; math.Abs(got-want) > 1e-6 {
				t.Errorf("accuracy %v, want %v", got, want)
			}
		})
	}
}

// TestEvaluateCensoredRuns checks that runs killed at their limit do not
// pull the estimator's median below them.
func TestEvaluateCensoredRuns(t *testing.T) {
	var tr Trace
	for i := range 6 {
		tr.Jobs = append(tr.Jobs, TraceJob{ID: string(rune('a' + i)), Submit: time.Duration(i) * 10000 * time.Second,
			GPUs: 1, Duration: 3600 * time.Second, Requested: 3600 * time.Second, User: "u", Status: "failed"})
	}
	got := Evaluate(tr, EvalConfig{})
	if got.UnderRate != 0 || got.Accuracy != 1 {
		t.Errorf("jobs killed at their one-hour limit: under-prediction %v, accuracy %v; want 0 and 1", got.UnderRate, got.Accuracy)
	}
}

func TestEvaluateLimit(t *testing.T) {
	tr := Trace{Jobs: []TraceJob{{ID: "1", GPUs: 1, Duration: time.Hour}, {ID: "2", Submit: time.Hour, GPUs: 1, Duration: time.Hour}}}
	if got := Evaluate(tr, EvalConfig{Limit: 1}); got.N != 1 {
		t.Errorf("--limit 1 scored %d jobs", got.N)
	}
	if _, ok := Evaluate(tr, EvalConfig{}).Baselines[BaselineRequest]; ok {
		t.Error("a trace without requested times has a user_request baseline")
	}
}
