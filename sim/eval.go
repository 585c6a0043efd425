package sim

import (
	"bufio"
	"cmp"
	"container/heap"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpucal/gpucal/core"
)

// EvalConfig says how to replay a trace for Evaluate.
type EvalConfig struct {
	Limit   int // evaluate only the first N jobs (0: all)
	History core.HistoryConfig
	// Waits is each job's time from submission to start, by trace job ID,
	// when the trace records it (ReadSWFWaits). A job not in it counts as
	// started at its submission, which lets its runtime be known a little
	// early: say so when reporting such a trace.
	Waits map[string]time.Duration
}

// Scores measures point predictions p (with an upper bound p90) against
// true runtimes r.
type Scores struct {
	N           int     `json:"n"`
	Accuracy    float64 `json:"accuracy"`      // mean of min(p, r) / max(p, r)
	MAE         float64 `json:"mae_s"`         // mean |p − r| in seconds
	Within10    float64 `json:"within_10pct"`  // share with |p − r| ≤ 10 % of r
	Within50    float64 `json:"within_50pct"`  // … 50 %
	Within100   float64 `json:"within_100pct"` // … 100 %
	UnderRate   float64 `json:"under_rate"`    // share with p < r
	P90Coverage float64 `json:"p90_coverage"`  // share with r ≤ P90
}

// Evaluation is how well core.History predicts a trace's runtimes, and the
// baselines it is measured against: user_request (the trace's requested
// time, on jobs that have one), last_two (the mean of the user's last two
// finished runtimes capped at the request; Tsafrir, Etsion and Feitelson
// 2007) and global_median (the median of every runtime finished so far).
type Evaluation struct {
	Scores
	Baselines map[string]Scores `json:"baselines"`
}

// The baselines' names.
const (
	BaselineRequest = "user_request"
	BaselineLastTwo = "last_two"
	BaselineMedian  = "global_median"
)

// Evaluate replays t in time order and scores every job's estimate at its
// submission. An estimate may use only jobs that finished before that
// submission (at equal instants finishes come first, in job order), and of
// the user's jobs still running, how long they have run so far
// (core.History.EstimateAmong). A job starts at submission + wait
// (EvalConfig.Waits) and finishes runtime later.
//
// Trace fields map to core's as: user → owner, group → project, GPUs (or
// processors) → GPU count, requested time → the submitter's guess and, for
// want of job names, the name (see recurringName).
// A requested time is a limit the job is stopped at, so no estimate exceeds
// it, and a run that reached 99 % of it counts as killed at its limit.
func Evaluate(t Trace, cfg EvalConfig) Evaluation {
	jobs := t.Jobs
	if cfg.Limit > 0 && cfg.Limit < len(jobs) {
		jobs = jobs[:cfg.Limit]
	}
	hist := core.NewHistory(cfg.History)
	base := newBaselines()
	var own, request, lastTwo, median scorer
	pending, starting := &finishQueue{}, &finishQueue{}
	running := map[string][]int{} // by user, the jobs started and not finished, in job order
	for i := range jobs {
		j := &jobs[i]
		// 1. Learn from every job that finished by this submission; note
		//    the ones that have started since the last.
		for starting.Len() > 0 && (*starting)[0].at <= j.Submit {
			s := heap.Pop(starting).(finish)
			if u := jobs[s.job].User; u != "" {
				running[u] = append(running[u], s.job)
				slices.Sort(running[u])
			}
		}
		for pending.Len() > 0 && (*pending)[0].at <= j.Submit {
			f := heap.Pop(pending).(finish)
			done := &jobs[f.job]
			hist.Observe(traceRun(done, f.at))
			base.observe(done)
			if u := done.User; u != "" {
				running[u] = slices.DeleteFunc(running[u], func(k int) bool { return k == f.job })
			}
		}
		// 2. Predict this job, then score against what it really ran.
		var under []core.Run
		if j.User != "" {
			for _, k := range running[j.User] {
				q := &jobs[k]
				r := traceRun(q, j.Submit)
				r.Duration = j.Submit - q.Submit - cfg.Waits[q.ID] // so far
				under = append(under, r)
			}
		}
		e := hist.EstimateAmong(traceJob(j), under, at(j.Submit))
		if j.Requested > 0 {
			e.P50, e.P90 = min(e.P50, j.Requested), min(e.P90, j.Requested)
			request.add(j.Requested, j.Requested, j.Duration)
		}
		own.add(e.P50, e.P90, j.Duration)
		p := base.lastTwo(j)
		lastTwo.add(p, p, j.Duration)
		p = base.median()
		median.add(p, p, j.Duration)
		heap.Push(starting, finish{at: j.Submit + cfg.Waits[j.ID], job: i})
		heap.Push(pending, finish{at: j.Submit + cfg.Waits[j.ID] + j.Duration, job: i})
	}
	ev := Evaluation{Scores: own.scores(), Baselines: map[string]Scores{
		BaselineLastTwo: lastTwo.scores(), BaselineMedian: median.scores()}}
	if request.n > 0 {
		ev.Baselines[BaselineRequest] = request.scores()
	}
	return ev
}

// traceJob is a trace job as core sees it at submission: nothing it ran.
func traceJob(j *TraceJob) core.Job {
	return core.Job{Owner: j.User, Project: j.Group, Name: recurringName(j), GPUs: j.GPUs, Type: core.TypeOther,
		Hints: core.Hints{Guess: j.Requested}, State: core.JobQueued, SubmittedAt: at(j.Submit)}
}

// traceRun is a finished trace job as History learns from it.
func traceRun(j *TraceJob, ended time.Duration) core.Run {
	return core.Run{Owner: j.User, Project: j.Group, Name: recurringName(j), GPUs: j.GPUs, Guess: j.Requested,
		Duration: j.Duration, EndedAt: at(ended), Outcome: traceOutcome(j)}
}

// traceOutcome reads how a trace job ended.
func traceOutcome(j *TraceJob) core.Outcome {
	switch {
	case j.Requested > 0 && j.Duration >= j.Requested*99/100:
		return core.OutcomeKilledAtLimit
	case j.Status == "cancelled":
		return core.OutcomeCancelled
	case j.Status == "failed":
		return core.OutcomeFailed
	}
	return core.OutcomeCompleted
}

// finish is the end of job (an index into the evaluated jobs) at a time.
type finish struct {
	at  time.Duration
	job int
}

// finishQueue is a min-heap of finishes, earliest first, ties by job.
type finishQueue []finish

func (q finishQueue) Len() int { return len(q) }
func (q finishQueue) Less(a, b int) bool {
	return cmp.Or(cmp.Compare(q[a].at, q[b].at), cmp.Compare(q[a].job, q[b].job)) < 0
}
func (q finishQueue) Swap(a, b int) { q[a], q[b] = q[b], q[a] }
func (q *finishQueue) Push(x any)   { *q = append(*q, x.(finish)) }
func (q *finishQueue) Pop() any {
	old := *q
	f := old[len(old)-1]
	*q = old[:len(old)-1]
	return f
}

// baselines holds what the simple predictors know: each user's last two
// finished runtimes and the running median of all of them.
type baselines struct {
	users map[string][2]time.Duration // latest first; 0 for a run not seen yet
	lo    maxHeap                     // the smaller half of finished runtimes
	hi    minHeap                     // the larger half
}

func newBaselines() *baselines { return &baselines{users: map[string][2]time.Duration{}} }

// fallback is the prediction before anything has finished: the default estimate.
var fallback = core.DefaultEstimator{}.Estimate(core.Job{}, time.Time{}).P50

func (b *baselines) observe(j *TraceJob) {
	if j.User != "" {
		u := b.users[j.User]
		b.users[j.User] = [2]time.Duration{max(j.Duration, 1), u[0]}
	}
	if b.lo.Len() == 0 || j.Duration <= b.lo.minHeap[0] {
		heap.Push(&b.lo, j.Duration)
	} else {
		heap.Push(&b.hi, j.Duration)
	}
	if b.lo.Len() > b.hi.Len()+1 {
		heap.Push(&b.hi, heap.Pop(&b.lo))
	} else if b.hi.Len() > b.lo.Len() {
		heap.Push(&b.lo, heap.Pop(&b.hi))
	}
}

// lastTwo is the mean of the user's last two finished runtimes (or the one
// there is) capped at the request; else the request; else the median.
func (b *baselines) lastTwo(j *TraceJob) time.Duration {
	u, ok := b.users[j.User]
	switch {
	case j.User != "" && ok && u[1] > 0:
		return capAt((u[0]+u[1])/2, j.Requested)
	case j.User != "" && ok:
		return capAt(u[0], j.Requested)
	case j.Requested > 0:
		return j.Requested
	}
	return b.median()
}

func capAt(d, limit time.Duration) time.Duration {
	if limit > 0 {
		return min(d, limit)
	}
	return d
}

// median is the median finished runtime (the lower middle one for an even
// count), or the default estimate before any.
func (b *baselines) median() time.Duration {
	if b.lo.Len() == 0 {
		return fallback
	}
	return b.lo.minHeap[0]
}

type minHeap []time.Duration

func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h minHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *minHeap) Push(x any)        { *h = append(*h, x.(time.Duration)) }
func (h *minHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type maxHeap struct{ minHeap }

func (h maxHeap) Less(i, j int) bool { return h.minHeap[i] > h.minHeap[j] }

// scorer accumulates Scores.
type scorer struct {
	n                                             int
	acc, absErr                                   float64
	within10, within50, within100, under, covered int
}

func (s *scorer) add(p, p90, r time.Duration) {
	s.n++
	ps, rs := p.Seconds(), r.Seconds()
	if hi := max(ps, rs); hi > 0 {
		s.acc += min(ps, rs) / hi
	} else {
		s.acc++ // both zero: exact
	}
	diff := math.Abs(ps - rs)
	s.absErr += diff
	for _, w := range []struct {
		share float64
		n     *int
	}{{0.1, &s.within10}, {0.5, &s.within50}, {1, &s.within100}} {
		if diff <= w.share*rs {
			*w.n++
		}
	}
	if p < r {
		s.under++
	}
	if r <= p90 {
		s.covered++
	}
}

func (s *scorer) scores() Scores {
	if s.n == 0 {
		return Scores{}
	}
	n := float64(s.n)
	return Scores{N: s.n, Accuracy: s.acc / n, MAE: s.absErr / n, Within10: float64(s.within10) / n,
		Within50: float64(s.within50) / n, Within100: float64(s.within100) / n,
		UnderRate: float64(s.under) / n, P90Coverage: float64(s.covered) / n}
}

// WriteEvalTable prints an Evaluation as a table, the estimator first.
func WriteEvalTable(w io.Writer, ev Evaluation) error {
	fmt.Fprintf(w, "%-14s %7s %8s %9s %6s %6s %7s %6s %7s\n",
		"predictor", "n", "accuracy", "MAE", "±10%", "±50%", "±100%", "under", "P90 cov")
	row := func(name string, s Scores) {
		fmt.Fprintf(w, "%-14s %7d %8.3f %8.0fs %5.1f%% %5.1f%% %6.1f%% %5.1f%% %6.1f%%\n", name, s.N, s.Accuracy,
			s.MAE, 100*s.Within10, 100*s.Within50, 100*s.Within100, 100*s.UnderRate, 100*s.P90Coverage)
	}
	row("history", ev.Scores)
	for _, name := range []string{BaselineRequest, BaselineLastTwo, BaselineMedian} {
		if s, ok := ev.Baselines[name]; ok {
			row(name, s)
		}
	}
	_, err := fmt.Fprintln(w, "\nP50 is the point prediction; baselines have no P90, so their point prediction stands in for it.")
	return err
}

// ReadSWFWaits reads field 3 (wait) of an SWF trace by job ID, so that
// Evaluate knows when each job started. Lines it cannot read are left out:
// LoadSWF reports those.
func ReadSWFWaits(r io.Reader) (map[string]time.Duration, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	waits := map[string]time.Duration{}
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 18 || strings.HasPrefix(f[0], ";") {
			continue
		}
		v, err := strconv.ParseFloat(f[2], 64)
		if err != nil || v < 0 {
			continue
		}
		if d, err := seconds(v); err == nil {
			waits[f[0]] = d
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("swf trace: %w", err)
	}
	return waits, nil
}

// recurringName names a trace job for History's name levels. The traces
// carry no job names (KTH's executable field is always -1), so a user's jobs
// with the same requested time count as the same recurring job: people
// resubmit a script with the limit they gave it last time. The request is
// known at submission, so this uses nothing from the future.
func recurringName(j *TraceJob) string {
	if j.Requested <= 0 {
		return ""
	}
	return "limit " + j.Requested.String()
}
