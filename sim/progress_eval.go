package sim

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/gpucal/gpucal/core"
)

// This file measures core's live-progress estimator (core.Progress,
// core.WithProgress) on the mini-batch timings of distributed training
// jobs in the Alibaba PAI 2020 trace: LoadMiniBatch reads a job,
// EvaluateProgress replays it and scores remaining-time predictions
// (`gpucal eval progress`).

// ProgressConfig says how a job reports its progress in EvaluateProgress.
type ProgressConfig struct {
	// Every is how many iterations pass between reports; 0 means 1. The
	// job also reports at its last iteration.
	Every int64
}

// The predictors of remaining time EvaluateProgress scores, in table order.
const (
	// PredictorGPUCal is core.WithProgress with no prior (these jobs have
	// no history): the smoothed rate of core.Progress.Advance, and its P90.
	PredictorGPUCal = "gpucal"
	// PredictorAverage is the average speed since the start:
	// elapsed × (1 − f) ÷ f.
	PredictorAverage = "average"
	// PredictorLastStep is the remaining steps × the time per step between
	// the last two reports (the last iteration's time when every iteration
	// is reported).
	PredictorLastStep = "last_step"
	// PredictorLast10Pct is the remaining steps × the mean time per step
	// over about the last 10 % of the steps done (from the latest report at
	// or before 90 % of them).
	PredictorLast10Pct = "last_10pct"
)

// progressPredictors lists the predictors in table order.
var progressPredictors = []string{PredictorGPUCal, PredictorAverage, PredictorLastStep, PredictorLast10Pct}

// PredictorScores measures one predictor's remaining-time predictions p
// against the true remaining times r, by relative error |p − r| ÷ r.
type PredictorScores struct {
	N              int     `json:"n"`
	MeanRelError   float64 `json:"mean_rel_error"`
	MedianRelError float64 `json:"median_rel_error"`
	UnderRate      float64 `json:"under_rate"` // share with p < r: too optimistic
	// P90Coverage is the share with r ≤ the predicted P90; only gpucal has one.
	P90Coverage *float64 `json:"p90_coverage,omitempty"`
}

// CheckpointScores is every predictor's scores at one point of progress.
type CheckpointScores struct {
	Progress   float64                    `json:"progress"` // share of the steps done, 0.05 … 0.95
	Predictors map[string]PredictorScores `json:"predictors"`
}

// JobProgress is one job's replay: its size and its own scores (n = 1 at
// each checkpoint).
type JobProgress struct {
	Name        string                     `json:"name"`
	Iterations  int64                      `json:"iterations"`
	Workers     int                        `json:"workers"`
	Partial     int                        `json:"partial_iterations"`
	Duration    float64                    `json:"duration"` // in the file's time unit
	Checkpoints []CheckpointScores         `json:"checkpoints"`
	All         map[string]PredictorScores `json:"all"` // over every checkpoint
}

// ProgressEvaluation is how well remaining time is predicted from live
// progress, at each checkpoint (5 %, 10 %, … 95 % of the steps) over all
// jobs, pooled over the checkpoints, and per job.
type ProgressEvaluation struct {
	Every       int64                      `json:"every"`
	Checkpoints []CheckpointScores         `json:"checkpoints"`
	All         map[string]PredictorScores `json:"all"` // pooled over jobs and checkpoints
	// SpreadFactor is what gpucal's log-space spread, ln(P90 ÷ P50) of the
	// remaining time, would have to be multiplied by for its P90 to cover
	// 90 % of the pooled checkpoints: above 1 the P90 is too tight, below 1
	// too loose. 0 when there is nothing to measure.
	SpreadFactor float64       `json:"p90_spread_factor"`
	Jobs         []JobProgress `json:"jobs"`
}

// The checkpoints, in percent of the steps done.
const (
	firstCheckpoint = 5
	lastCheckpoint  = 95
	checkpointStep  = 5
)

// EvaluateProgress replays each job on a virtual clock, one unit of the
// file's time to a second (only ratios matter), reporting Step of Total
// to core.Progress.Advance after every cfg.Every iterations. At the first
// report past each checkpoint it predicts the remaining time with every
// predictor and compares it with the true remaining time.
//
// A logged iteration stands for itself and the unlogged ones since the
// previous logged one: the PAI files log every tenth iteration, so each
// logged time counts ten times, and reporting more often than every ten
// iterations sees the same time repeated.
func EvaluateProgress(jobs []MiniBatchJob, cfg ProgressConfig) ProgressEvaluation {
	every := max(cfg.Every, 1)
	ev := ProgressEvaluation{Every: every}
	pooled := newProgressTally()
	for _, job := range jobs {
		tl := newTimeline(job)
		outcomes := replayProgress(tl, every)
		own := newProgressTally()
		for _, o := range outcomes {
			own.add(o)
			pooled.add(o)
		}
		ev.Jobs = append(ev.Jobs, JobProgress{Name: job.Name, Iterations: tl.total(), Workers: job.Workers,
			Partial: job.Partial(), Duration: tl.duration(), Checkpoints: own.checkpoints(), All: own.all()})
	}
	ev.Checkpoints, ev.All, ev.SpreadFactor = pooled.checkpoints(), pooled.all(), pooled.spreadFactor()
	return ev
}

// timeline is a job's iterations as blocks of equal time: block k ends at
// iteration ends[k], each of its iterations takes per[k], and the clock
// reads clock[k] when it is done.
type timeline struct {
	ends  []int64
	per   []float64
	clock []float64
}

func newTimeline(job MiniBatchJob) timeline {
	var tl timeline
	var prevEnd int64
	var clock float64
	for _, it := range job.Iterations {
		t := it.Time()
		clock += float64(it.Number-prevEnd) * t
		tl.ends, tl.per, tl.clock = append(tl.ends, it.Number), append(tl.per, t), append(tl.clock, clock)
		prevEnd = it.Number
	}
	return tl
}

// total is the number of iterations.
func (tl timeline) total() int64 {
	if len(tl.ends) == 0 {
		return 0
	}
	return tl.ends[len(tl.ends)-1]
}

// duration is the virtual time the whole job takes.
func (tl timeline) duration() float64 { return tl.clockAt(tl.total()) }

// clockAt is the virtual time when iteration step is done (0 for step 0).
func (tl timeline) clockAt(step int64) float64 {
	k, _ := slices.BinarySearch(tl.ends, step)
	if step <= 0 || k == len(tl.ends) {
		return 0
	}
	start, before := int64(0), 0.0
	if k > 0 {
		start, before = tl.ends[k-1], tl.clock[k-1]
	}
	return before + float64(step-start)*tl.per[k]
}

// report is one progress report: steps done by a time on the virtual clock.
type report struct {
	step  int64
	clock float64
}

// prediction is one predictor's remaining time at a checkpoint; p90 is 0
// for a predictor without one.
type prediction struct {
	predictor string
	p50, p90  float64
}

// outcome is what happened at one checkpoint of one job.
type outcome struct {
	percent     int
	actual      float64 // the true remaining time
	predictions []prediction
}

// replayProgress runs one job's reports through core.Progress and predicts
// at each checkpoint. Checkpoints with nothing left to run are skipped.
func replayProgress(tl timeline, every int64) []outcome {
	n, end := tl.total(), tl.duration()
	var out []outcome
	var p core.Progress
	prev := report{}
	checkpoint := firstCheckpoint
	for step := int64(0); step < n && checkpoint <= lastCheckpoint; {
		step = min(step+every, n)
		now := report{step: step, clock: tl.clockAt(step)}
		p = p.Advance(core.ProgressReport{Step: step, Total: n}, instant(0), instant(now.clock))
		for ; checkpoint <= lastCheckpoint && step*100 >= int64(checkpoint)*n; checkpoint += checkpointStep {
			if actual := end - now.clock; actual > 0 {
				window := report{step: (9 * step / 10) / every * every}
				window.clock = tl.clockAt(window.step)
				out = append(out, outcome{percent: checkpoint, actual: actual, predictions: predict(p, n, prev, window, now)})
			}
		}
		prev = now
	}
	return out
}

// predict asks every predictor for the remaining time of a job of n steps
// at report now, given the report before it and the one that starts the
// last-10 % window.
func predict(p core.Progress, n int64, prev, window, now report) []prediction {
	left := float64(n - now.step)
	perStep := func(from report) float64 { return (now.clock - from.clock) / float64(now.step-from.step) }
	elapsed := instant(now.clock).Sub(instant(0))
	e := core.WithProgress(core.Estimate{}, p, elapsed, instant(now.clock))
	return []prediction{
		{PredictorGPUCal, max(e.P50-elapsed, 0).Seconds(), max(e.P90-elapsed, 0).Seconds()},
		{PredictorAverage, left * perStep(report{}), 0},
		{PredictorLastStep, left * perStep(prev), 0},
		{PredictorLast10Pct, left * perStep(window), 0},
	}
}

// instant is a reading of the virtual clock as a time; every job starts
// at instant(0).
func instant(clock float64) time.Time {
	return time.Unix(0, 0).UTC().Add(time.Duration(math.Round(clock * float64(time.Second))))
}

// progressTally collects predictions' errors by checkpoint and predictor.
type progressTally struct {
	byPercent map[int]map[string]*predictorTally
	overall   map[string]*predictorTally
	// spread holds, for each gpucal prediction, ln(actual ÷ P50) ÷
	// ln(P90 ÷ P50): how many of its spreads the truth lay above its median.
	spread []float64
}

// predictorTally is one predictor's relative errors, and how many
// predictions were too low and how many P90s held.
type predictorTally struct {
	errs           []float64
	under, covered int
	hasP90         bool
}

func newProgressTally() *progressTally {
	return &progressTally{byPercent: map[int]map[string]*predictorTally{}, overall: map[string]*predictorTally{}}
}

func (t *progressTally) add(o outcome) {
	if t.byPercent[o.percent] == nil {
		t.byPercent[o.percent] = map[string]*predictorTally{}
	}
	for _, p := range o.predictions {
		for _, m := range []map[string]*predictorTally{t.byPercent[o.percent], t.overall} {
			if m[p.predictor] == nil {
				m[p.predictor] = &predictorTally{}
			}
			m[p.predictor].add(p, o.actual)
		}
		if p.p90 > p.p50 && p.p50 > 0 {
			t.spread = append(t.spread, math.Log(o.actual/p.p50)/math.Log(p.p90/p.p50))
		}
	}
}

func (pt *predictorTally) add(p prediction, actual float64) {
	pt.errs = append(pt.errs, math.Abs(p.p50-actual)/actual)
	if p.p50 < actual {
		pt.under++
	}
	if p.p90 > 0 {
		pt.hasP90 = true
		if actual <= p.p90 {
			pt.covered++
		}
	}
}

func (pt *predictorTally) scores() PredictorScores {
	n := float64(len(pt.errs))
	s := PredictorScores{N: len(pt.errs), MeanRelError: sum(pt.errs) / n, MedianRelError: median(pt.errs),
		UnderRate: float64(pt.under) / n}
	if pt.hasP90 {
		c := float64(pt.covered) / n
		s.P90Coverage = &c
	}
	return s
}

// checkpoints lists the scores at each checkpoint that any job reached.
func (t *progressTally) checkpoints() []CheckpointScores {
	var out []CheckpointScores
	for percent := firstCheckpoint; percent <= lastCheckpoint; percent += checkpointStep {
		if m, ok := t.byPercent[percent]; ok {
			out = append(out, CheckpointScores{Progress: float64(percent) / 100, Predictors: scoresOf(m)})
		}
	}
	return out
}

func (t *progressTally) all() map[string]PredictorScores { return scoresOf(t.overall) }

func scoresOf(m map[string]*predictorTally) map[string]PredictorScores {
	out := make(map[string]PredictorScores, len(m))
	for name, pt := range m {
		out[name] = pt.scores()
	}
	return out
}

// spreadFactor is the smallest multiple of gpucal's spread that covers
// 90 % of the truths (the nearest-rank 90th percentile of spread).
func (t *progressTally) spreadFactor() float64 {
	if len(t.spread) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(t.spread))
	return s[int(math.Ceil(0.9*float64(len(s))))-1]
}

// median is the middle of xs (the mean of the two middle ones for an even
// count); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if h := len(s) / 2; len(s)%2 == 0 {
		return (s[h-1] + s[h]) / 2
	}
	return s[len(s)/2]
}

// wholePercent is the checkpoint in whole percent.
func (c CheckpointScores) wholePercent() int { return int(math.Round(100 * c.Progress)) }

// headlineCheckpoints are the rows WriteProgressTable prints, in percent.
var headlineCheckpoints = []int{10, 25, 50}

// WriteProgressTable prints a ProgressEvaluation: each predictor at 10 %,
// 25 % and 50 % progress and pooled over 5–95 %, then each job's errors.
func WriteProgressTable(w io.Writer, ev ProgressEvaluation) error {
	fmt.Fprintf(w, "%-9s %-11s %4s %13s %15s %7s %8s\n",
		"progress", "predictor", "n", "mean rel err", "median rel err", "under", "P90 cov")
	block := func(label string, m map[string]PredictorScores) {
		for i, name := range progressPredictors {
			s, ok := m[name]
			if !ok {
				continue
			}
			if i > 0 {
				label = ""
			}
			cov := "—"
			if s.P90Coverage != nil {
				cov = percent(*s.P90Coverage)
			}
			fmt.Fprintf(w, "%-9s %-11s %4d %13s %15s %7s %8s\n", label, name, s.N,
				percent(s.MeanRelError), percent(s.MedianRelError), percent(s.UnderRate), cov)
		}
	}
	for _, c := range ev.Checkpoints {
		if pct := c.wholePercent(); slices.Contains(headlineCheckpoints, pct) {
			block(strconv.Itoa(pct)+"%", c.Predictors)
		}
	}
	block("5–95%", ev.All)
	fmt.Fprintf(w, "\nMean relative error per job (|predicted − actual| ÷ actual remaining time):\n%-20s %-11s", "job", "predictor")
	for _, p := range headlineCheckpoints {
		fmt.Fprintf(w, " %7s", strconv.Itoa(p)+"%")
	}
	fmt.Fprintf(w, " %7s\n", "5–95%")
	for _, j := range ev.Jobs {
		for i, name := range progressPredictors {
			label := ""
			if i == 0 {
				label = j.Name
			}
			fmt.Fprintf(w, "%-20s %-11s", label, name)
			for _, p := range headlineCheckpoints {
				fmt.Fprintf(w, " %7s", jobError(j, p, name))
			}
			fmt.Fprintf(w, " %7s\n", percent(j.All[name].MeanRelError))
		}
	}
	_, err := fmt.Fprintf(w, "\nP90 spread factor %.2f: gpucal's P90 would cover 90%% of the checkpoints 5–95%% with its spread ×%.2f.\n",
		ev.SpreadFactor, ev.SpreadFactor)
	return err
}

// jobError is a job's relative error at a checkpoint, "—" when it has none.
func jobError(j JobProgress, pct int, predictor string) string {
	for _, c := range j.Checkpoints {
		if c.wholePercent() == pct {
			if s, ok := c.Predictors[predictor]; ok {
				return percent(s.MeanRelError)
			}
		}
	}
	return "—"
}
