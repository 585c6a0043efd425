package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucal/gpucal/core"
)

func TestHistoryEstimator(t *testing.T) {
	h := time.Hour
	type run struct {
		job TraceJob
		ran time.Duration
	}
	tests := []struct {
		name string
		past []run
		job  TraceJob
		want core.Estimate
	}{
		{
			name: "nothing finished yet: the default",
			job:  TraceJob{GPUs: 1},
			want: core.DefaultEstimator{}.Estimate(core.Job{}, time.Time{}),
		},
		{
			name: "no history but a request: the request",
			job:  TraceJob{GPUs: 1, User: "u1", Requested: 3 * h},
			want: core.Estimate{P50: 3 * h, P90: 3 * h, Source: "request"},
		},
		{
			name: "the user's last two runs, averaged; P90 twice that",
			past: []run{{TraceJob{User: "u1", GPUs: 1}, 9 * h}, {TraceJob{User: "u1", GPUs: 1}, 1 * h}, {TraceJob{User: "u1", GPUs: 1}, 3 * h}},
			job:  TraceJob{GPUs: 4, User: "u1"},
			want: core.Estimate{P50: 2 * h, P90: 4 * h, Source: "history:user", Samples: 2},
		},
		{
			name: "past runs without requests: capped at the request, which is the P90",
			past: []run{{TraceJob{User: "u1", GPUs: 1}, 5 * h}, {TraceJob{User: "u1", GPUs: 1}, 7 * h}},
			job:  TraceJob{GPUs: 1, User: "u1", Requested: 4 * h},
			want: core.Estimate{P50: 4 * h, P90: 4 * h, Source: "history:user", Samples: 2},
		},
		{
			name: "the request times the share of their requests the last two runs used",
			past: []run{
				{TraceJob{User: "u1", GPUs: 1, Requested: 10 * h}, 10 * h}, // older than the last two: forgotten
				{TraceJob{User: "u1", GPUs: 1, Requested: 4 * h}, h},       // used a quarter
				{TraceJob{User: "u1", GPUs: 1}, 9 * h},                     // no request: not a share
				{TraceJob{User: "u1", GPUs: 1, Requested: 2 * h}, 3 * h},   // overran: counts as all of it
			},
			job:  TraceJob{GPUs: 1, User: "u1", Requested: 8 * h},
			want: core.Estimate{P50: 5 * h, P90: 8 * h, Source: "history:user+request", Samples: 2},
		},
		{
			name: "one past run with a request",
			past: []run{{TraceJob{User: "u1", GPUs: 1, Requested: 4 * h}, h}},
			job:  TraceJob{GPUs: 1, User: "u1", Requested: 2 * h},
			want: core.Estimate{P50: 30 * time.Minute, P90: 2 * h, Source: "history:user+request", Samples: 1},
		},
		{
			name: "one past run: P90 the larger of twice it and it",
			past: []run{{TraceJob{User: "u2", GPUs: 1}, 30 * time.Minute}},
			job:  TraceJob{GPUs: 1, User: "u2"},
			want: core.Estimate{P50: 30 * time.Minute, P90: h, Source: "history:user", Samples: 1},
		},
		{
			name: "no users: median and 90th percentile of the same GPU count",
			past: []run{
				{TraceJob{GPUs: 8}, 1 * h}, {TraceJob{GPUs: 8}, 2 * h}, {TraceJob{GPUs: 8}, 3 * h}, {TraceJob{GPUs: 8}, 4 * h},
				{TraceJob{GPUs: 8}, 5 * h}, {TraceJob{GPUs: 1}, 100 * h},
			},
			job:  TraceJob{GPUs: 8},
			want: core.Estimate{P50: 3 * h, P90: 5 * h, Source: "history:gpus", Samples: 5},
		},
		{
			name: "an unseen GPU count: all finished jobs",
			past: []run{{TraceJob{GPUs: 8}, 1 * h}, {TraceJob{GPUs: 1}, 3 * h}},
			job:  TraceJob{GPUs: 2},
			want: core.Estimate{P50: 1 * h, P90: 3 * h, Source: "history:global", Samples: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			est := newHistoryEstimator()
			for _, r := range tt.past {
				est.observe(&r.job, r.ran, 0)
			}
			if diff := cmp.Diff(tt.want, est.estimate(&tt.job, 0)); diff != "" {
				t.Errorf("estimate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunningEstimate(t *testing.T) {
	h := time.Hour
	base := core.Estimate{P50: 2 * h, P90: 6 * h, Source: "history:user", Samples: 2}
	tests := []struct {
		name               string
		elapsed, requested time.Duration
		wantP50, wantP90   time.Duration
	}{
		{"younger than its median: unchanged", h, 0, 2 * h, 6 * h},
		{"past its median: as long again", 4 * h, 0, 8 * h, 16 * h},
		{"past its median, with a request", 3 * h, 5 * h, 5 * h, 5 * h},
		{"past its request: ends within minutes", 5 * h, 4 * h, 5*h + time.Minute, 5*h + 10*time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := running(base, tt.elapsed, tt.requested)
			if got.P50 != tt.wantP50 || got.P90 != tt.wantP90 {
				t.Errorf("running(%v, %v) = P50 %v, P90 %v; want %v, %v", tt.elapsed, tt.requested, got.P50, got.P90, tt.wantP50, tt.wantP90)
			}
		})
	}
}

// TestQuantiles checks the streaming quantiles against sorting.
func TestQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	q := newQuantiles()
	var all []time.Duration
	for i := range 2000 {
		d := time.Duration(rng.IntN(10000)) * time.Second
		q.add(d)
		all = append(all, d)
		sorted := slices.Sorted(slices.Values(all))
		nearest := func(p float64) time.Duration { return sorted[max(1, int(math.Ceil(p*float64(len(sorted)))))-1] }
		if q.p50() != nearest(0.5) || q.p90() != nearest(0.9) {
			t.Fatalf("after %d values: p50 %v p90 %v, want %v %v", i+1, q.p50(), q.p90(), nearest(0.5), nearest(0.9))
		}
	}
}

// TestHistoryAmongRunsUnderWay: with --estimator history a job is
// estimated knowing how long the user's running jobs have run: the third
// arrives when the second has run 2,500 s (rounded down to 40 minutes), and
// is estimated at least that long, not at the first one's 100 s.
func TestHistoryAmongRunsUnderWay(t *testing.T) {
	tr := traceOf(tj(0, 1, 100, 0), tj(200, 1, 5000, 0), tj(2700, 1, 5000, 0))
	for i := range tr.Jobs {
		tr.Jobs[i].User = "u"
	}
	tests := []struct {
		estimator string
		want      time.Duration
	}{
		{EstimatorHistory, 40 * time.Minute},
		{EstimatorRequest, 100 * time.Second}, // the user's last run: it knows nothing of running ones
	}
	for _, tt := range tests {
		t.Run(tt.estimator, func(t *testing.T) {
			// k tiny: the user's own runs decide, the everyone group does not dilute them.
			s := replay(t, tr, Config{Nodes: 1, GPUsPerNode: 2, Policy: PolicyFIFO, Estimator: tt.estimator,
				History: core.HistoryConfig{Prior: 1e-6}})
			if got := s.jobs[2].est.P50; got != tt.want {
				t.Errorf("third job's P50 %v, want %v", got, tt.want)
			}
			if len(s.underWay["u"]) != 0 {
				t.Errorf("after the replay %v are still under way", s.underWay["u"])
			}
		})
	}
}
