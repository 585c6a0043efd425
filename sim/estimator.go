package sim

import (
	"container/heap"
	"math"
	"time"

	"github.com/gpucal/gpucal/core"
)

// runtimeEstimator is how a replay learns runtimes: causally, from jobs
// as they finish. now is the replay's clock.
type runtimeEstimator interface {
	observe(j *TraceJob, ran, now time.Duration)
	estimate(j *TraceJob, now time.Duration) core.Estimate
}

// Estimators are the runtime estimators a replay can use.
const (
	// EstimatorRequest is historyEstimator below: the request scaled by
	// the user's habit, the classic of the backfilling literature.
	EstimatorRequest = "request"
	// EstimatorHistory is core.History, the server's own estimator, with
	// the trace mapped onto jobs as gpucal eval estimate maps it.
	EstimatorHistory = "history"
)

// Estimators lists the valid estimator names.
var Estimators = []string{EstimatorRequest, EstimatorHistory}

func newEstimator(name string, cfg core.HistoryConfig) runtimeEstimator {
	if name == EstimatorHistory {
		return coreEstimator{h: core.NewHistory(cfg)}
	}
	return newHistoryEstimator()
}

// coreEstimator replays with core.History. A requested time is a limit the
// job is stopped at, so no estimate exceeds it.
type coreEstimator struct{ h *core.History }

func (c coreEstimator) observe(j *TraceJob, ran, now time.Duration) { c.h.Observe(traceRun(j, now)) }

func (c coreEstimator) estimate(j *TraceJob, now time.Duration) core.Estimate {
	return c.estimateAmong(j, nil, now)
}

// estimateAmong is estimate knowing the runs under way
// (core.History.EstimateAmong).
func (c coreEstimator) estimateAmong(j *TraceJob, running []core.Run, now time.Duration) core.Estimate {
	e := c.h.EstimateAmong(traceJob(j), running, at(now))
	if j.Requested > 0 {
		e.P50, e.P90 = min(e.P50, j.Requested), min(e.P90, j.Requested)
	}
	return bounded(e)
}

// historyEstimator is the simulator's causal online runtime estimator. It
// learns only from jobs that have finished (observe), never from the
// future, and answers in this order:
//
//  1. the user's history. When the job has a requested time and the user
//     has finished runs that had one, the request times the share of their
//     requests those runs used (the average over the last two): users
//     overask by habit, so the request tells which of their jobs are long
//     and the history by how much they overask; P90 is the request.
//     Otherwise the average of the user's last two finished runtimes,
//     capped at the job's requested time (Tsafrir, Etsion and Feitelson,
//     "Backfilling using system-generated predictions rather than user
//     runtime estimates", 2007); P90 is the requested time when there is
//     one, else the larger of twice that and the longer of the two runs;
//  2. the requested time, for a user without finished jobs;
//  3. the running median (P50) and 90th percentile (P90) of the finished
//     jobs with the same GPU count, else of all finished jobs;
//  4. core.DefaultEstimator's default before anything has finished.
type historyEstimator struct {
	users  map[string]*lastTwo
	byGPUs map[int]*quantiles
	all    *quantiles
}

// lastTwo holds a user's two most recent finished runtimes and, of the
// two most recent runs that had a requested time, the share of it each
// used.
type lastTwo struct {
	runs  [2]time.Duration // runs[0] is the latest
	n     int
	used  [2]float64 // runtime ÷ requested time, at most 1; used[0] is the latest
	nUsed int
}

func newHistoryEstimator() *historyEstimator {
	return &historyEstimator{users: map[string]*lastTwo{}, byGPUs: map[int]*quantiles{}, all: newQuantiles()}
}

// observe learns from a job that finished after running for ran.
func (h *historyEstimator) observe(j *TraceJob, ran, _ time.Duration) {
	if j.User != "" {
		u := h.users[j.User]
		if u == nil {
			u = &lastTwo{}
			h.users[j.User] = u
		}
		u.runs[1], u.runs[0] = u.runs[0], ran
		u.n = min(u.n+1, 2)
		if j.Requested > 0 {
			u.used[1], u.used[0] = u.used[0], min(ran.Seconds()/j.Requested.Seconds(), 1)
			u.nUsed = min(u.nUsed+1, 2)
		}
	}
	q := h.byGPUs[j.GPUs]
	if q == nil {
		q = newQuantiles()
		h.byGPUs[j.GPUs] = q
	}
	q.add(ran)
	h.all.add(ran)
}

// estimate returns the runtime distribution for a job about to be queued.
func (h *historyEstimator) estimate(j *TraceJob, _ time.Duration) core.Estimate {
	if u := h.users[j.User]; j.User != "" && u != nil && j.Requested > 0 && u.nUsed > 0 {
		used := u.used[0]
		if u.nUsed == 2 {
			used = (u.used[0] + u.used[1]) / 2
		}
		p50 := time.Duration(used * float64(j.Requested))
		return bounded(core.Estimate{P50: p50, P90: j.Requested, Source: "history:user+request", Samples: u.nUsed})
	}
	if u := h.users[j.User]; j.User != "" && u != nil {
		p50 := u.runs[0]
		longest := u.runs[0]
		if u.n == 2 {
			p50 = (u.runs[0] + u.runs[1]) / 2
			longest = max(u.runs[0], u.runs[1])
		}
		p90 := max(2*p50, longest)
		if j.Requested > 0 {
			p50 = min(p50, j.Requested)
			p90 = j.Requested
		}
		return bounded(core.Estimate{P50: p50, P90: p90, Source: "history:user", Samples: u.n})
	}
	if j.Requested > 0 {
		return bounded(core.Estimate{P50: j.Requested, P90: j.Requested, Source: "request"})
	}
	if q := h.byGPUs[j.GPUs]; q != nil {
		return bounded(core.Estimate{P50: q.p50(), P90: q.p90(), Source: "history:gpus", Samples: q.n()})
	}
	if h.all.n() > 0 {
		return bounded(core.Estimate{P50: h.all.p50(), P90: h.all.p90(), Source: "history:global", Samples: h.all.n()})
	}
	return core.DefaultEstimator{}.Estimate(core.Job{}, time.Time{})
}

// running returns e conditioned on a job having run for elapsed already:
// unchanged while the job is younger than its median; past it, a job is
// expected to run about as long again (the median remaining life of a
// heavy-tailed runtime equals its age), up to its requested time; past the
// requested time, it is expected to end within minutes.
func running(e core.Estimate, elapsed, requested time.Duration) core.Estimate {
	if elapsed < e.P50 {
		return e
	}
	switch {
	case requested > elapsed:
		e.P50 = min(2*elapsed, requested)
		e.P90 = requested
	case requested > 0:
		e.P50 = elapsed + time.Minute
		e.P90 = elapsed + 10*time.Minute
	default:
		e.P50 = 2 * elapsed
		e.P90 = max(e.P90, 4*elapsed)
	}
	return bounded(e)
}

// Estimates are kept between a second and maxEstimate, with P90 ≥ P50.
const maxEstimate = 10 * 365 * 24 * time.Hour

func bounded(e core.Estimate) core.Estimate {
	e.P50 = min(max(e.P50, time.Second), maxEstimate)
	e.P90 = min(max(e.P90, e.P50), maxEstimate)
	return e
}

// quantiles tracks the exact running median and 90th percentile of a
// stream, each with a pair of heaps: O(log n) per value.
type quantiles struct {
	median, ninety splitHeap
}

func newQuantiles() *quantiles {
	return &quantiles{median: splitHeap{q: 0.5}, ninety: splitHeap{q: 0.9}}
}

func (q *quantiles) add(d time.Duration) { q.median.add(d); q.ninety.add(d) }
func (q *quantiles) n() int              { return q.median.lo.Len() + q.median.hi.Len() }
func (q *quantiles) p50() time.Duration  { return q.median.value() }
func (q *quantiles) p90() time.Duration  { return q.ninety.value() }

// splitHeap keeps the smallest ceil(q·n) values in a max-heap (lo) and the
// rest in a min-heap (hi), so that lo's top is the q-quantile.
type splitHeap struct {
	q      float64
	lo, hi durationHeap
}

func (s *splitHeap) add(d time.Duration) {
	if s.lo.Len() > 0 && d > -s.lo[0] {
		heap.Push(&s.hi, d)
	} else {
		heap.Push(&s.lo, -d) // lo holds negated values: a max-heap
	}
	want := max(1, int(math.Ceil(s.q*float64(s.lo.Len()+s.hi.Len()))))
	for s.lo.Len() > want {
		heap.Push(&s.hi, -heap.Pop(&s.lo).(time.Duration))
	}
	for s.lo.Len() < want && s.hi.Len() > 0 {
		heap.Push(&s.lo, -heap.Pop(&s.hi).(time.Duration))
	}
}

func (s *splitHeap) value() time.Duration {
	if s.lo.Len() == 0 {
		return 0
	}
	return -s.lo[0]
}

// durationHeap is a min-heap of durations.
type durationHeap []time.Duration

func (h durationHeap) Len() int           { return len(h) }
func (h durationHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h durationHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *durationHeap) Push(x any)        { *h = append(*h, x.(time.Duration)) }
func (h *durationHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
