package sim

import (
	"bytes"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestLoadMiniBatch(t *testing.T) {
	small, err := os.ReadFile("testdata/minibatch_small.csv")
	if err != nil {
		t.Fatal(err)
	}
	const header = ",worker,gpu,time,batch_time_norm\n"
	tests := []struct {
		name    string
		in      string
		want    MiniBatchJob
		wantErr string
	}{
		{
			// Iteration 21 repeats worker 2's row; worker 2 did not log 31.
			name: "PAI layout",
			in:   string(small),
			want: MiniBatchJob{Workers: 3, GPUPercent: 25, Duplicates: 1, Iterations: []MiniBatchIteration{
				{Number: 1, Times: []WorkerTime{{0, 476}, {1, 509}, {2, 468}}},
				{Number: 11, Times: []WorkerTime{{0, 470}, {1, 505}, {2, 900}}},
				{Number: 21, Times: []WorkerTime{{0, 480}, {1, 500}, {2, 910}}},
				{Number: 31, Times: []WorkerTime{{0, 490}, {1, 495}}},
			}},
		},
		{
			name: "columns in any order, rows out of order, no gpu column",
			in:   "batch_time_norm,time,worker\n7,2,1\n5,1,1\n6,1,0\n",
			want: MiniBatchJob{Workers: 2, Iterations: []MiniBatchIteration{
				{Number: 1, Times: []WorkerTime{{0, 6}, {1, 5}}},
				{Number: 2, Times: []WorkerTime{{1, 7}}},
			}},
		},
		{name: "empty", in: "", wantErr: "no iterations"},
		{name: "header only", in: header, wantErr: "no iterations"},
		{name: "missing column", in: ",worker,gpu,time\n0,0,25,1\n", wantErr: "line 1: the header must name the columns worker, time"},
		{name: "short row", in: header + "0,0,25,1,476\n1,1,25,1\n", wantErr: "line 3"},
		{name: "worker not a number", in: header + "0,w0,25,1,476\n", wantErr: `line 2: worker "w0" is not a worker number`},
		{name: "negative worker", in: header + "0,-1,25,1,476\n", wantErr: `line 2: worker "-1"`},
		{name: "iteration zero", in: header + "0,0,25,0,476\n", wantErr: `line 2: time "0" is not an iteration number from 1`},
		{name: "iteration too large", in: header + "0,0,25,99999999999,476\n", wantErr: `line 2: time "99999999999"`},
		{name: "negative time", in: header + "0,0,25,1,-3\n", wantErr: `line 2: batch_time_norm "-3" is not a time`},
		{name: "NaN time", in: header + "0,0,25,1,NaN\n", wantErr: `line 2: batch_time_norm "NaN"`},
		{name: "zero gpu", in: header + "0,0,0,1,476\n", wantErr: `line 2: gpu "0" is not a GPU request`},
		{name: "gpu changes", in: header + "0,0,25,1,476\n1,1,50,1,476\n", wantErr: "line 3: gpu 50 differs from the 25 on line 2"},
		{
			name:    "contradicting duplicate",
			in:      header + "0,0,25,1,476\n1,1,25,1,500\n2,0,25,1,480\n",
			wantErr: "line 4: worker 0's time for iteration 1 is 480, but line 2 says 476",
		},
		{
			name:    "longer than the replay can take",
			in:      header + "0,0,25,9000000,999999\n",
			wantErr: "the iterations add up to",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadMiniBatch(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("job (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMiniBatchTimes checks that an iteration lasts as long as its slowest
// worker, and that iterations some worker did not log are counted.
func TestMiniBatchTimes(t *testing.T) {
	job := MiniBatchJob{Workers: 3, Iterations: []MiniBatchIteration{
		{Number: 1, Times: []WorkerTime{{0, 5}, {1, 9}, {2, 7}}},
		{Number: 2, Times: []WorkerTime{{0, 4}, {2, 3}}},
		{Number: 3, Times: []WorkerTime{{1, 0}}},
	}}
	var got []float64
	for _, it := range job.Iterations {
		got = append(got, it.Time())
	}
	if diff := cmp.Diff([]float64{9, 4, 0}, got); diff != "" {
		t.Errorf("iteration times (-want +got):\n%s", diff)
	}
	if got := job.Partial(); got != 2 {
		t.Errorf("Partial() = %d, want 2", got)
	}
}

// TestTimeline checks that a logged iteration stands for the unlogged ones
// before it: iterations 2 to 11 take iteration 11's time.
func TestTimeline(t *testing.T) {
	tl := newTimeline(MiniBatchJob{Iterations: []MiniBatchIteration{
		{Number: 1, Times: []WorkerTime{{0, 5}}},
		{Number: 11, Times: []WorkerTime{{0, 2}}},
		{Number: 21, Times: []WorkerTime{{0, 3}}},
	}})
	if got := tl.total(); got != 21 {
		t.Errorf("total() = %d, want 21", got)
	}
	tests := []struct {
		step int64
		want float64
	}{{0, 0}, {1, 5}, {2, 7}, {11, 25}, {12, 28}, {21, 55}}
	for _, tt := range tests {
		if got := tl.clockAt(tt.step); got != tt.want {
			t.Errorf("clockAt(%d) = %v, want %v", tt.step, got, tt.want)
		}
	}
}

// jobOf is a one-worker job logging every iteration, with these times.
func jobOf(name string, times ...float64) MiniBatchJob {
	job := MiniBatchJob{Name: name, Workers: 1}
	for i, t := range times {
		job.Iterations = append(job.Iterations, MiniBatchIteration{Number: int64(i + 1), Times: []WorkerTime{{0, t}}})
	}
	return job
}

// repeat is n copies of x.
func repeat(x float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = x
	}
	return out
}

// steady takes 100 per iteration for 100 iterations.
func steady() MiniBatchJob { return jobOf("steady", repeat(100, 100)...) }

// halving takes 100 per iteration for 50 iterations, then slows to half
// speed (200 per iteration) for 50 more.
func halving() MiniBatchJob { return jobOf("halving", append(repeat(100, 50), repeat(200, 50)...)...) }

// TestEvaluateProgress replays jobs whose errors are known. Steady: every
// predictor is exact. Halving, up to its slowdown at report s: every
// predictor expects 100 per step for the 100 − s left, which take
// 5,000 more, so the error is 5,000 ÷ (15,000 − 100 s) = 50 ÷ (150 − s).
// At 75 %, last_step and last_10pct have seen only the new speed; the
// average is 10,000 per 75 steps and predicts 3,333 for 5,000.
func TestEvaluateProgress(t *testing.T) {
	all := func(e float64) map[string]float64 {
		return map[string]float64{PredictorGPUCal: e, PredictorAverage: e, PredictorLastStep: e, PredictorLast10Pct: e}
	}
	tests := []struct {
		name        string
		job         MiniBatchJob
		every       int64
		want        map[int]map[string]float64 // mean relative error by checkpoint and predictor
		wantCovered map[int]bool               // whether gpucal's P90 held, by checkpoint
		wantReached []int                      // the checkpoints scored
	}{
		{
			name: "steady", job: steady(), every: 1,
			want:        map[int]map[string]float64{5: all(0), 10: all(0), 25: all(0), 50: all(0), 95: all(0)},
			wantCovered: map[int]bool{5: true, 10: true, 25: true, 50: true, 95: true},
			wantReached: checkpointRange(5, 95),
		},
		{
			name: "halving, every iteration reported", job: halving(), every: 1,
			want: map[int]map[string]float64{10: all(50.0 / 140), 25: all(50.0 / 125), 50: all(0.5),
				75: {PredictorAverage: 1.0 / 3, PredictorLastStep: 0, PredictorLast10Pct: 0}},
			// ln(14,000 ÷ 9,000) = 0.44 < 1.28 σ = 1.35; ln 2 = 0.69 > 1.28 σ = 0.45.
			wantCovered: map[int]bool{10: true, 25: true, 50: false},
			wantReached: checkpointRange(5, 95),
		},
		{
			// Reports at steps 25, 50, 75 and 100: 5–25 % are scored at 25,
			// and 80–95 % at the end, where nothing is left, so not at all.
			name: "halving, every 25 iterations reported", job: halving(), every: 25,
			want: map[int]map[string]float64{5: all(0.4), 10: all(0.4), 25: all(0.4), 50: all(0.5),
				75: {PredictorAverage: 1.0 / 3, PredictorLastStep: 0, PredictorLast10Pct: 0}},
			wantReached: checkpointRange(5, 75),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := EvaluateProgress([]MiniBatchJob{tt.job}, ProgressConfig{Every: tt.every})
			got := map[int]map[string]float64{}
			gotCovered := map[int]bool{}
			var reached []int
			for _, c := range ev.Checkpoints {
				pct := c.wholePercent()
				reached = append(reached, pct)
				if want, ok := tt.want[pct]; ok {
					got[pct] = map[string]float64{}
					for name := range want {
						got[pct][name] = c.Predictors[name].MeanRelError
					}
				}
				if _, ok := tt.wantCovered[pct]; ok {
					gotCovered[pct] = *c.Predictors[PredictorGPUCal].P90Coverage == 1
				}
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateApprox(0, 1e-6)); diff != "" {
				t.Errorf("relative errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCovered, gotCovered, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("gpucal P90 coverage (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantReached, reached); diff != "" {
				t.Errorf("checkpoints scored (-want +got):\n%s", diff)
			}
		})
	}
}

func checkpointRange(from, to int) []int {
	var out []int
	for p := from; p <= to; p += checkpointStep {
		out = append(out, p)
	}
	return out
}

// TestEvaluateProgressFollowsASlowdown checks that gpucal's smoothed rate
// leans toward the recent speed: once the halving job has slowed down, it
// is nearer the truth than the average since the start, and, being
// smoothed, not exact at once as last_step is.
func TestEvaluateProgressFollowsASlowdown(t *testing.T) {
	ev := EvaluateProgress([]MiniBatchJob{halving()}, ProgressConfig{})
	for _, c := range ev.Checkpoints {
		if c.wholePercent() <= 50 {
			continue
		}
		own, avg := c.Predictors[PredictorGPUCal].MeanRelError, c.Predictors[PredictorAverage].MeanRelError
		if own >= avg {
			t.Errorf("at %d%%: gpucal's error %.3f is not below the average's %.3f", c.wholePercent(), own, avg)
		}
		if c.wholePercent() == 55 && own < 0.01 {
			t.Errorf("at 55%%: gpucal's error %.4f; a smoothed rate cannot have caught up yet", own)
		}
	}
}

// TestEvaluateProgressPools checks the pooled scores of two jobs against
// their own, and that the spread factor agrees with the coverage.
func TestEvaluateProgressPools(t *testing.T) {
	ev := EvaluateProgress([]MiniBatchJob{steady(), halving()}, ProgressConfig{})
	type summary struct {
		Name       string
		Iterations int64
		Duration   float64
		N          int
	}
	var jobs []summary
	for _, j := range ev.Jobs {
		jobs = append(jobs, summary{j.Name, j.Iterations, j.Duration, j.All[PredictorAverage].N})
	}
	wantJobs := []summary{{"steady", 100, 10_000, 19}, {"halving", 100, 15_000, 19}}
	if diff := cmp.Diff(wantJobs, jobs); diff != "" {
		t.Errorf("jobs (-want +got):\n%s", diff)
	}
	var at10 PredictorScores
	for _, c := range ev.Checkpoints {
		if c.wholePercent() == 10 {
			at10 = c.Predictors[PredictorAverage]
		}
	}
	mean := 50.0 / 140 / 2
	want := PredictorScores{N: 2, MeanRelError: mean, MedianRelError: mean, UnderRate: 0.5}
	if diff := cmp.Diff(want, at10, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("average at 10%% (-want +got):\n%s", diff)
	}
	if n := ev.All[PredictorGPUCal].N; n != 38 {
		t.Errorf("pooled n = %d, want 38", n)
	}
	covered := *ev.All[PredictorGPUCal].P90Coverage >= 0.9
	if tight := ev.SpreadFactor > 1; covered == tight {
		t.Errorf("P90 coverage %.3f but spread factor %.3f: a factor above 1 means coverage below 90%%",
			*ev.All[PredictorGPUCal].P90Coverage, ev.SpreadFactor)
	}
}

// TestWriteProgressTable compares the table of the two known jobs with
// testdata/progress_table.golden; run with -update after a deliberate change.
func TestWriteProgressTable(t *testing.T) {
	var got bytes.Buffer
	if err := WriteProgressTable(&got, EvaluateProgress([]MiniBatchJob{steady(), halving()}, ProgressConfig{})); err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/progress_table.golden"
	if *update {
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestWriteProgressTable -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}

func FuzzLoadMiniBatch(f *testing.F) {
	if small, err := os.ReadFile("testdata/minibatch_small.csv"); err == nil {
		f.Add(string(small))
	}
	f.Add("batch_time_norm,time,worker\n7,2,1\n5,1,1\n6,1,0\n0,3,0\n")
	f.Add(",worker,gpu,time,batch_time_norm\n0,0,25,1,476\n1,0,25,1,476\n2,0,25,10000000,1e6\n")
	f.Add(",worker,gpu,time,batch_time_norm\n0,0,1e300,1,Inf\n")
	f.Fuzz(func(t *testing.T, in string) {
		job, err := LoadMiniBatch(strings.NewReader(in))
		if err != nil {
			return
		}
		checkMiniBatch(t, job)
		// Report often enough to score every checkpoint, rarely enough
		// that ten million iterations replay quickly.
		every := max(newTimeline(job).total()/1000, 1)
		checkProgressEvaluation(t, EvaluateProgress([]MiniBatchJob{job}, ProgressConfig{Every: every}))
	})
}

// checkMiniBatch checks what LoadMiniBatch promises of a job it returns.
func checkMiniBatch(t *testing.T, job MiniBatchJob) {
	t.Helper()
	if len(job.Iterations) == 0 {
		t.Fatal("a job without iterations")
	}
	for i, it := range job.Iterations {
		switch {
		case it.Number < 1 || i > 0 && it.Number <= job.Iterations[i-1].Number:
			t.Fatalf("iteration %d is numbered %d, out of order", i, it.Number)
		case len(it.Times) == 0 || len(it.Times) > job.Workers:
			t.Fatalf("iteration %d has %d workers of %d", it.Number, len(it.Times), job.Workers)
		}
		for k, w := range it.Times {
			if k > 0 && w.Worker <= it.Times[k-1].Worker || !(w.Time >= 0 && w.Time <= maxMiniBatchTime) {
				t.Fatalf("iteration %d: worker time %+v out of order or out of range", it.Number, w)
			}
		}
	}
}

// checkProgressEvaluation checks that every score is a share or a finite,
// non-negative error.
func checkProgressEvaluation(t *testing.T, ev ProgressEvaluation) {
	t.Helper()
	for _, c := range ev.Checkpoints {
		for name, s := range c.Predictors {
			share := func(x float64) bool { return x >= 0 && x <= 1 }
			bad := s.N < 1 || !share(s.UnderRate) || math.IsNaN(s.MeanRelError) || math.IsInf(s.MeanRelError, 0) ||
				s.MeanRelError < 0 || s.MedianRelError < 0 || s.P90Coverage != nil && !share(*s.P90Coverage)
			if bad {
				t.Fatalf("%s at %v: %+v", name, c.Progress, s)
			}
		}
	}
}
