package sim

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/gpucal/gpucal/core"
)

// Policy names a scheduling policy.
type Policy string

// The policies Run replays a trace under.
const (
	// PolicyFIFO starts jobs in strict arrival order; a job that does not
	// fit blocks everything behind it.
	PolicyFIFO Policy = "fifo"
	// PolicySJF starts the queued job with the shortest true runtime first,
	// greedily, whenever it fits: a reference no real scheduler can reach.
	PolicySJF Policy = "sjf-oracle"
	// PolicyEASY is EASY backfilling as Slurm does it: the queue head is
	// promised the earliest start the running jobs' expected ends allow, and
	// later jobs start now only if they do not delay that promise.
	PolicyEASY Policy = "easy"
	// PolicyGPUCal is the product: core.Planner's plan, replanned at every
	// event, with the history estimator's estimates.
	PolicyGPUCal Policy = "gpucal"
)

// Policies lists every policy, in the order --compare prints them.
var Policies = []Policy{PolicyFIFO, PolicySJF, PolicyEASY, PolicyGPUCal}

// Config describes one replay.
type Config struct {
	Nodes       int // nodes in the cluster
	GPUsPerNode int // identical GPUs per node
	Policy      Policy
	// Reservations is how many synthetic bookings of whole nodes are made
	// per day of trace; 0 makes none.
	Reservations float64
	// Preemptible is the share of jobs marked preemptible (chosen at random
	// from Seed): the planner may lend them time before or inside windows.
	Preemptible float64
	Limit       int   // replay only the first Limit jobs; 0 replays all
	Seed        int64 // seeds the bookings and the preemptible marks
	// Plan configures core.Planner for the gpucal policy; the zero value
	// means core.DefaultPlanConfig.
	Plan core.PlanConfig
	// Estimator names the runtime estimator every policy learns with (see
	// Estimators); "" means EstimatorRequest.
	Estimator string
	// History configures core.History for EstimatorHistory; the zero value
	// is its documented default.
	History core.HistoryConfig
}

func (c Config) validate() error {
	switch {
	case c.Nodes < 1 || c.Nodes > 1<<16:
		return fmt.Errorf("the cluster needs between 1 and %d nodes, not %d", 1<<16, c.Nodes)
	case c.GPUsPerNode < 1 || c.GPUsPerNode > 64:
		return fmt.Errorf("a node has between 1 and 64 GPUs, not %d", c.GPUsPerNode)
	case !slices.Contains(Policies, c.Policy):
		return fmt.Errorf("unknown policy %q; use one of fifo, sjf-oracle, easy, gpucal", c.Policy)
	case math.IsNaN(c.Reservations) || c.Reservations < 0 || c.Reservations > 1000:
		return fmt.Errorf("the reservation rate must be between 0 and 1000 per day, not %v", c.Reservations)
	case math.IsNaN(c.Preemptible) || c.Preemptible < 0 || c.Preemptible > 1:
		return fmt.Errorf("the preemptible share must be between 0 and 1, not %v", c.Preemptible)
	case c.Estimator != "" && !slices.Contains(Estimators, c.Estimator):
		return fmt.Errorf("unknown estimator %q; use %s", c.Estimator, strings.Join(Estimators, " or "))
	case c.Limit < 0:
		return fmt.Errorf("the job limit cannot be negative (%d)", c.Limit)
	}
	return nil
}

// epoch is the virtual instant the trace starts at when core needs a time.Time.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return epoch.Add(d) }

// simJob is one trace job during a replay.
type simJob struct {
	t           *TraceJob
	id          int64 // its core.Job ID: index + 1
	preemptible bool
	dropped     bool // larger than the cluster
	queued      bool
	running     bool
	started     bool          // has run at least once
	firstStart  time.Duration // the start that counts for waiting
	start       time.Duration // the start of the current run
	end         time.Duration // when it finished
	left        time.Duration // work still to do (less than the trace's duration after a drain)
	gpus        []int32       // the GPUs it holds while running
	gen         int32         // bumped by a drain, so that a stale end event is ignored
	est         core.Estimate // the estimator's view when it was queued
	expected    time.Duration // the runtime the baseline policies expect of the current run
	predicted   bool          // a start was predicted at submission
	predP50     time.Duration
	predP90     time.Duration
	immediate   bool // started at the instant it was submitted
}

// policy is what a scheduling policy does during a replay. The simulation
// tells it about arrivals, drained jobs coming back and jobs leaving the
// GPUs; after every batch of events at one instant it calls schedule, which
// starts jobs with simulation.start.
type policy interface {
	arrive(j int)
	requeue(j int)
	stopped(j int)
	schedule() error
	queued() int
}

// eventKind orders the events of one instant: jobs end first, then windows
// close, open and get booked; wake-ups come last. Arrivals follow them all.
type eventKind uint8

const (
	evEnd eventKind = iota
	evWindowEnd
	evWindowStart
	evBooked
	evWake
)

type event struct {
	at   time.Duration
	kind eventKind
	i    int   // job or booking index
	gen  int32 // the job's generation for evEnd
}

type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.at != b.at {
		return a.at < b.at
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.i < b.i
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// simulation is one replay in progress.
type simulation struct {
	cfg      Config
	jobs     []simJob
	c        *cluster
	est      runtimeEstimator
	history  int              // bumped whenever est learns something
	underWay map[string][]int // by user, the jobs running now, in job order
	bookings []booking
	visible  []int // bookings made whose window has not ended, in booking order
	bookView int   // bumped whenever visible changes
	events   eventHeap
	next     int // the next job to arrive
	now      time.Duration
	pol      policy
	wake     time.Duration // the pending wake-up, or -1
	replans  int           // schedule calls
	drained  drainStats
}

type drainStats struct {
	jobs     int
	evicted  int // of them, not preemptible
	gpuHours float64
}

// Run replays tr under cfg and measures the outcome. It stops early, with
// ctx's error, when ctx ends.
func Run(ctx context.Context, tr Trace, cfg Config) (Result, error) {
	began := time.Now()
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	s, err := newSimulation(tr, cfg)
	if err != nil {
		return Result{}, err
	}
	if err := s.run(ctx); err != nil {
		return Result{}, fmt.Errorf("%s policy at %v into the trace: %w", cfg.Policy, s.now, err)
	}
	r := s.result()
	r.Wall = round(time.Since(began).Seconds(), 3)
	return r, nil
}

func newSimulation(tr Trace, cfg Config) (*simulation, error) {
	jobs := tr.Jobs
	if cfg.Limit > 0 && cfg.Limit < len(jobs) {
		jobs = jobs[:cfg.Limit]
	}
	s := &simulation{cfg: cfg, c: newCluster(cfg.Nodes, cfg.GPUsPerNode), est: newEstimator(cfg.Estimator, cfg.History), wake: -1,
		underWay: map[string][]int{}}
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x9e3779b97f4a7c15))
	s.jobs = make([]simJob, len(jobs))
	var last time.Duration
	for i := range jobs {
		t := &jobs[i]
		if t.Duration < 0 || t.Submit < 0 || (i > 0 && t.Submit < jobs[i-1].Submit) {
			return nil, fmt.Errorf("job %s: submit times must be non-negative and in order, durations non-negative", t.ID)
		}
		j := &s.jobs[i]
		*j = simJob{t: t, id: int64(i + 1), left: t.Duration, preemptible: rng.Float64() < cfg.Preemptible}
		j.dropped = t.GPUs < 1 || t.GPUs > cfg.Nodes*cfg.GPUsPerNode || s.c.nodesFor(t.GPUs) > cfg.Nodes
		last = t.Submit
	}
	if cfg.Reservations > 0 {
		s.bookings = makeBookings(last, cfg.Nodes, cfg.GPUsPerNode, cfg.Reservations, cfg.Seed)
		for i, b := range s.bookings {
			heap.Push(&s.events, event{at: b.booked, kind: evBooked, i: i})
		}
	}
	switch cfg.Policy {
	case PolicyFIFO:
		s.pol = &fifo{s: s}
	case PolicySJF:
		s.pol = &sjf{s: s}
	case PolicyEASY:
		s.pol = &easy{s: s}
	case PolicyGPUCal:
		s.pol = newGPUCal(s)
	}
	return s, nil
}

// run is the event loop: take every event of the next instant, then let the
// policy schedule once.
func (s *simulation) run(ctx context.Context) error {
	for batch := 0; ; batch++ {
		if batch%64 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		now, ok := s.nextInstant()
		if !ok {
			break
		}
		s.now = now
		changed := false
		for len(s.events) > 0 && s.events[0].at == now {
			changed = s.handle(heap.Pop(&s.events).(event)) || changed
		}
		for ; s.next < len(s.jobs) && s.jobs[s.next].t.Submit == now; s.next++ {
			if j := &s.jobs[s.next]; !j.dropped {
				j.queued = true
				j.est = s.queuedEstimate(s.next)
				j.expected = s.expectation(s.next)
				s.pol.arrive(s.next)
				changed = true
			}
		}
		if changed && s.pol.queued() > 0 {
			s.replans++
			if err := s.pol.schedule(); err != nil {
				return err
			}
		}
	}
	if n := s.pol.queued(); n > 0 {
		return fmt.Errorf("%d jobs are still queued with nothing left to run or arrive; the policy never placed them", n)
	}
	return nil
}

func (s *simulation) nextInstant() (time.Duration, bool) {
	next, ok := time.Duration(math.MaxInt64), false
	if len(s.events) > 0 {
		next, ok = s.events[0].at, true
	}
	if s.next < len(s.jobs) && s.jobs[s.next].t.Submit < next {
		next, ok = s.jobs[s.next].t.Submit, true
	}
	return next, ok
}

// handle applies one event and reports whether it changed anything a
// policy might act on.
func (s *simulation) handle(e event) bool {
	switch e.kind {
	case evEnd:
		j := &s.jobs[e.i]
		if !j.running || j.gen != e.gen {
			return false
		}
		s.leave(e.i)
		j.done()
		j.end = s.now
		s.est.observe(j.t, j.t.Duration, s.now)
		s.history++
		s.pol.stopped(e.i)
	case evBooked:
		b := &s.bookings[e.i]
		if !s.book(b) {
			return false
		}
		for _, n := range b.nodes {
			s.c.book(n, window{start: b.start, end: b.end, booking: e.i})
		}
		s.visible = append(s.visible, e.i)
		s.bookView++
		heap.Push(&s.events, event{at: b.start, kind: evWindowStart, i: e.i})
		heap.Push(&s.events, event{at: b.end, kind: evWindowEnd, i: e.i})
	case evWindowStart:
		s.open(e.i)
	case evWindowEnd:
		for _, n := range s.bookings[e.i].nodes {
			s.c.unbook(n, e.i)
		}
		s.visible = slices.DeleteFunc(s.visible, func(b int) bool { return b == e.i })
		s.bookView++
	case evWake:
		if s.wake != e.at {
			return false
		}
		s.wake = -1
	}
	return true
}

func (j *simJob) done() { j.running, j.queued, j.left = false, false, 0 }

// open enforces a window as it opens, as the agent does: every job still
// on its GPUs is stopped and queued again with the work it has left (the
// drain's checkpoint signal lets it resume). The window then starts on
// time if its GPUs are free. It is undisturbed when only preemptible jobs
// had to go; a non-preemptible one found there had outrun what its policy
// expected of it and is counted as evicted.
func (s *simulation) open(b int) {
	bk := &s.bookings[b]
	bk.undisturbed = true
	for _, n := range bk.nodes {
		for g := n * s.c.gpn; g < (n+1)*s.c.gpn; g++ {
			h := s.c.holder[g]
			if h < 0 {
				continue
			}
			j := &s.jobs[h]
			if !j.preemptible {
				bk.undisturbed = false
				s.drained.evicted++
			}
			s.leave(int(h))
			ran := s.now - j.start
			j.left -= ran
			j.queued = true
			s.drained.jobs++
			s.drained.gpuHours += float64(j.t.GPUs) * ran.Hours()
			s.pol.stopped(int(h))
			j.est = s.queuedEstimate(int(h))
			j.expected = s.expectation(int(h))
			s.pol.requeue(int(h))
		}
	}
	bk.onTime = true
	for _, n := range bk.nodes {
		for g := n * s.c.gpn; g < (n+1)*s.c.gpn; g++ {
			bk.onTime = bk.onTime && s.c.holder[g] < 0
		}
	}
}

// leave takes a running job off its GPUs.
func (s *simulation) leave(i int) {
	j := &s.jobs[i]
	s.c.release(j.gpus)
	j.gpus = nil
	j.running = false
	j.gen++
	if u := j.t.User; u != "" {
		if k, ok := slices.BinarySearch(s.underWay[u], i); ok {
			s.underWay[u] = slices.Delete(s.underWay[u], k, k+1)
		}
	}
}

// start puts job i on gpus now. It refuses a placement that breaks the
// model (a GPU held twice, too few GPUs, a non-preemptible job inside an
// open window): from the gpucal policy that is a planner bug.
func (s *simulation) start(i int, gpus []int32) error {
	j := &s.jobs[i]
	if !j.queued || j.running {
		return fmt.Errorf("job %s (j%d) was started but is not queued", j.t.ID, j.id)
	}
	if len(gpus) < j.t.GPUs {
		return fmt.Errorf("job %s (j%d) needs %d GPUs and was given %d", j.t.ID, j.id, j.t.GPUs, len(gpus))
	}
	for _, g := range gpus {
		if g < 0 || int(g) >= len(s.c.holder) {
			return fmt.Errorf("job %s (j%d) was given GPU %d, which does not exist", j.t.ID, j.id, g+1)
		}
		if h := s.c.holder[g]; h >= 0 {
			return fmt.Errorf("job %s (j%d) was given GPU %d, which job %s (j%d) holds", j.t.ID, j.id, g+1, s.jobs[h].t.ID, s.jobs[h].id)
		}
		if !j.preemptible && !s.c.clear(int(g)/s.c.gpn, s.now, 0) {
			return fmt.Errorf("job %s (j%d) is not preemptible but was started on GPU %d inside a reservation window", j.t.ID, j.id, g+1)
		}
		s.c.take(i, []int32{g})
	}
	j.gpus = gpus
	j.queued, j.running = false, true
	j.start = s.now
	if u := j.t.User; u != "" {
		k, _ := slices.BinarySearch(s.underWay[u], i)
		s.underWay[u] = slices.Insert(s.underWay[u], k, i)
	}
	if !j.started {
		j.started, j.firstStart, j.immediate = true, s.now, s.now == j.t.Submit
	}
	heap.Push(&s.events, event{at: s.now + j.left, kind: evEnd, i: i, gen: j.gen})
	return nil
}

// wakeAt asks for a schedule call at t even if nothing happens then.
func (s *simulation) wakeAt(t time.Duration) {
	if t <= s.now || (s.wake >= 0 && s.wake <= t) {
		return
	}
	s.wake = t
	heap.Push(&s.events, event{at: t, kind: evWake})
}

// expectation is the runtime the baseline policies expect of job i's next
// run: the user's requested time when the trace has one, else the
// estimator's P90; less the work done before a drain.
func (s *simulation) expectation(i int) time.Duration {
	j := &s.jobs[i]
	if r := j.requestLeft(); r > 0 {
		return r
	}
	return max(j.est.P90, time.Second)
}

// queuedEstimate is the estimator's view of the work job i has left.
func (s *simulation) queuedEstimate(i int) core.Estimate {
	j := &s.jobs[i]
	var e core.Estimate
	if ce, ok := s.est.(coreEstimator); ok {
		e = ce.estimateAmong(j.t, s.runsUnderWay(j.t.User), s.now)
	} else {
		e = s.est.estimate(j.t, s.now)
	}
	if done := j.t.Duration - j.left; done > 0 {
		e = running(e, done, j.t.Requested)
		e.P50, e.P90 = e.P50-done, e.P90-done
		e = bounded(e)
	}
	return e
}

// runsUnderWay is what core.History may know of the user's running jobs:
// each as a run as long as it has run so far, drains included.
func (s *simulation) runsUnderWay(user string) []core.Run {
	var out []core.Run
	for _, k := range s.underWay[user] {
		j := &s.jobs[k]
		r := traceRun(j.t, s.now)
		r.Duration = j.t.Duration - j.left + s.now - j.start
		out = append(out, r)
	}
	return out
}

// requestLeft is what remains of the job's requested time after the work
// it did before a drain (at least a second); 0 when the trace has none.
func (j *simJob) requestLeft() time.Duration {
	if j.t.Requested <= 0 {
		return 0
	}
	return max(j.t.Requested-(j.t.Duration-j.left), time.Second)
}
