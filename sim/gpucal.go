package sim

import (
	"cmp"
	"container/heap"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/gpucal/gpucal/core"
)

// gpuCal is the product's policy: at every instant where something changed
// it builds a core.Snapshot of the simulated cluster and starts the jobs
// core.Planner's plan starts now, on the GPUs the plan gives them. The
// snapshot is kept up to date incrementally (running jobs, queue,
// estimates, bookings), so each replan costs little more than the plan.
type gpuCal struct {
	s       *simulation
	planner *core.Replanner // keeps what did not change from one plan to the next
	nodes   []core.Node
	refs    []core.GPURef // per GPU index

	running []core.Job // sorted by ID
	// due says when running jobs' estimates are next conditioned on their
	// age (see running): first when they outlive their median.
	due       dueHeap
	queue     []core.Job
	estimates map[int64]core.Estimate

	reservations []core.Reservation // the bookings the planner may see
	bookView     int                // simulation.bookView that reservations reflects
	history      int                // simulation.history the queued estimates reflect

	// Fair share between projects (the trace's groups), as core.Service
	// computes it: decayed GPU-seconds of finished runs plus running ones.
	projects map[string]bool
	finished map[string]decayed
	usage    map[string]float64
}

// decayed is a usage value as of an instant.
type decayed struct {
	value float64
	at    time.Duration
}

// The simulated GPUs are all the same: an 80 GB A100.
const (
	simGPUName   = "NVIDIA A100-SXM4-80GB"
	simGPUMemory = 81920
)

func newGPUCal(s *simulation) *gpuCal {
	cfg := s.cfg.Plan
	if cfg == (core.PlanConfig{}) {
		cfg = core.DefaultPlanConfig
	}
	// The replay reads only the queued jobs' starts, and their bands only
	// where it records a prediction (see schedule). Leaving the rest out
	// changes nothing else.
	cfg.NoReasons, cfg.NoRunning = true, true
	p := &gpuCal{s: s, planner: core.NewReplanner(core.Planner{Config: cfg}),
		estimates: map[int64]core.Estimate{}, projects: map[string]bool{}, finished: map[string]decayed{},
		usage: map[string]float64{}, bookView: -1}
	p.nodes, p.refs = simNodes(s.c.nodes, s.c.gpn)
	return p
}

// simNodes builds the inventory core sees: nodes n0001… with GPU IDs
// 1…nodes×gpn in node order, so that GPU index i has ID i+1.
func simNodes(nodes, gpn int) ([]core.Node, []core.GPURef) {
	out := make([]core.Node, nodes)
	refs := make([]core.GPURef, 0, nodes*gpn)
	for n := range out {
		node := core.Node{ID: int64(n + 1), Name: fmt.Sprintf("n%04d", n+1), CreatedAt: epoch}
		for i := range gpn {
			g := core.GPU{ID: int64(n*gpn + i + 1), NodeID: node.ID, Node: node.Name, Index: i, Name: simGPUName,
				MemoryMiB: simGPUMemory, UUID: fmt.Sprintf("GPU-sim-%d-%d", n+1, i), State: core.GPUUp}
			node.GPUs = append(node.GPUs, g)
			refs = append(refs, g.Ref())
		}
		out[n] = node
	}
	return out, refs
}

// project is the fair-share project of a trace job: its group, else its user.
func project(t *TraceJob) string {
	if t.Group != "" {
		return t.Group
	}
	return t.User
}

// coreJob is job i as core sees it while queued.
func (p *gpuCal) coreJob(i int) core.Job {
	j := &p.s.jobs[i]
	return core.Job{ID: j.id, Owner: j.t.User, Project: project(j.t), Name: j.t.ID, Type: core.TypeOther,
		GPUs: j.t.GPUs, Class: core.ClassNormal, Preemptible: j.preemptible, State: core.JobQueued,
		SubmittedAt: at(j.t.Submit)}
}

func (p *gpuCal) arrive(i int) {
	p.queue = append(p.queue, p.coreJob(i))
	p.estimates[p.s.jobs[i].id] = p.s.jobs[i].est
	p.projects[project(p.s.jobs[i].t)] = true
}

func (p *gpuCal) requeue(i int) {
	p.queue = append(p.queue, p.coreJob(i))
	p.estimates[p.s.jobs[i].id] = p.s.jobs[i].est
}

func (p *gpuCal) queued() int { return len(p.queue) }

// stopped takes job i out of the running list and counts its use.
func (p *gpuCal) stopped(i int) {
	j := &p.s.jobs[i]
	if k, ok := p.runningIndex(j.id); ok {
		p.running = slices.Delete(p.running, k, k+1)
	}
	delete(p.estimates, j.id)
	if len(p.projects) > 1 {
		proj := project(j.t)
		u := p.finished[proj]
		p.finished[proj] = decayed{value: u.valueAt(p.s.now) + runUsage(j.t.GPUs, j.start, p.s.now, p.s.now), at: p.s.now}
	}
}

// runningIndex finds a job in the running list, which is kept sorted by ID:
// the planner sorts its copy by ID, and sorted input sorts in linear time.
func (p *gpuCal) runningIndex(id int64) (int, bool) {
	return slices.BinarySearchFunc(p.running, id, func(j core.Job, id int64) int { return cmp.Compare(j.ID, id) })
}

// schedule replans and starts what the plan starts now.
func (p *gpuCal) schedule() error {
	s := p.s
	p.refresh()
	snap := core.Snapshot{Nodes: p.nodes, Reservations: p.reservations, Running: p.running, Queued: p.queue,
		Estimates: p.estimates}
	if len(p.projects) > 1 {
		snap.Usage = p.usage
	}
	p.planner.Planner.Config.NoBands = !slices.ContainsFunc(p.queue, func(j core.Job) bool { return !s.jobs[j.ID-1].predicted })
	plan := p.planner.Plan(at(s.now), snap)
	if len(plan.Queued) != len(p.queue) {
		return fmt.Errorf("the plan has %d queued jobs, the snapshot %d", len(plan.Queued), len(p.queue))
	}
	next := time.Duration(math.MaxInt64)
	for _, pj := range plan.Queued {
		i := int(pj.Job - 1)
		if i < 0 || i >= len(s.jobs) || !s.jobs[i].queued {
			return fmt.Errorf("the plan has a job j%d that is not queued", pj.Job)
		}
		j := &s.jobs[i]
		if !j.predicted && !pj.StartP50.IsZero() {
			j.predicted, j.predP50, j.predP90 = true, pj.StartP50.Sub(epoch), pj.StartP90.Sub(epoch)
		}
		if !pj.StartNow {
			if !pj.Slot.IsZero() {
				next = min(next, pj.Slot.Sub(epoch))
			}
			continue
		}
		gpus := make([]int32, len(pj.GPUs))
		for k, id := range pj.GPUs {
			gpus[k] = int32(id - 1)
		}
		if err := s.start(i, gpus); err != nil {
			return fmt.Errorf("starting a job the plan starts now: %w", err)
		}
		p.started(i)
	}
	p.queue = slices.DeleteFunc(p.queue, func(j core.Job) bool { return !s.jobs[j.ID-1].queued })
	p.wake(next)
	return nil
}

// started adds job i to the running list.
func (p *gpuCal) started(i int) {
	j := &p.s.jobs[i]
	cj := p.coreJob(i)
	cj.State, cj.StartedAt = core.JobRunning, at(p.s.now)
	cj.Assigned = make([]core.GPURef, len(j.gpus))
	for k, g := range j.gpus {
		cj.Assigned[k] = p.refs[g]
	}
	k, _ := p.runningIndex(cj.ID)
	p.running = slices.Insert(p.running, k, cj)
	heap.Push(&p.due, due{at: p.s.now + j.est.P50, job: i, gen: j.gen})
}

// refresh brings the snapshot's estimates, bookings and usage up to now:
// queued jobs are estimated again when the estimator has learned something,
// and running jobs that have outlived their median are conditioned on
// their age.
func (p *gpuCal) refresh() {
	s := p.s
	if p.history != s.history {
		p.history = s.history
		for _, cj := range p.queue {
			i := int(cj.ID - 1)
			s.jobs[i].est = s.queuedEstimate(i)
			p.estimates[cj.ID] = s.jobs[i].est
		}
	}
	for len(p.due) > 0 && p.due[0].at <= s.now {
		d := heap.Pop(&p.due).(due)
		j := &s.jobs[d.job]
		if !j.running || j.gen != d.gen {
			continue
		}
		age := s.now - j.start
		e := running(j.est, age, j.requestLeft())
		p.estimates[j.id] = e
		// Past its median a job's estimate grows with its age; refreshing
		// it once the age has grown by a twentieth (at least a minute)
		// keeps it within 5 % of that at a fraction of the cost.
		heap.Push(&p.due, due{at: j.start + max(age+age/20, age+time.Minute), job: d.job, gen: d.gen})
	}
	if p.bookView != s.bookView {
		p.bookView = s.bookView
		p.reservations = p.reservations[:0]
		for _, b := range s.visible {
			p.reservations = append(p.reservations, p.reservation(b))
		}
	}
	if len(p.projects) > 1 {
		clear(p.usage)
		for proj, u := range p.finished {
			p.usage[proj] = u.valueAt(s.now)
		}
		for _, cj := range p.running {
			j := &s.jobs[cj.ID-1]
			p.usage[cj.Project] += runUsage(j.t.GPUs, j.start, s.now, s.now)
		}
	}
}

// reservation is booking b as core sees it.
func (p *gpuCal) reservation(b int) core.Reservation {
	bk := &p.s.bookings[b]
	r := core.Reservation{ID: int64(b + 1), Owner: "booker", Project: "bookings", Start: at(bk.start), End: at(bk.end),
		State: core.Confirmed, CreatedAt: at(bk.booked), UpdatedAt: at(bk.booked), Note: "synthetic booking"}
	for _, n := range bk.nodes {
		r.GPUs = append(r.GPUs, p.refs[n*p.s.c.gpn:(n+1)*p.s.c.gpn]...)
	}
	return r
}

// wake asks for a replan at the earliest planned start when nothing else
// would happen before it (a planned start can pass without an event when
// a running job outlives its estimate). Wake-ups come at least a minute
// apart, the planner's own resolution for late jobs.
func (p *gpuCal) wake(next time.Duration) {
	s := p.s
	if next == time.Duration(math.MaxInt64) {
		return
	}
	next = max(next, s.now+time.Minute)
	if t, ok := s.nextInstant(); ok && t <= next {
		return
	}
	s.wakeAt(next)
}

// valueAt is the usage decayed to now.
func (u decayed) valueAt(now time.Duration) float64 {
	if u.value == 0 {
		return 0
	}
	return u.value * math.Exp2(-(now-u.at).Seconds()/core.FairShareHalfLife.Seconds())
}

// runUsage is the decayed GPU-seconds, as of now, of a run of gpus GPUs over
// [start, end): each GPU-second at t counts 2^(−(now−t)/half-life).
func runUsage(gpus int, start, end, now time.Duration) float64 {
	h := core.FairShareHalfLife.Seconds()
	w := func(t time.Duration) float64 { return math.Exp2(-(now - t).Seconds() / h) }
	return float64(gpus) * h / math.Ln2 * (w(end) - w(start))
}

// due is when a running job (of generation gen) outlives its median estimate.
type due struct {
	at  time.Duration
	job int
	gen int32
}

type dueHeap []due

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].job < h[j].job
}
func (h dueHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)   { *h = append(*h, x.(due)) }
func (h *dueHeap) Pop() any {
	old := *h
	d := old[len(old)-1]
	*h = old[:len(old)-1]
	return d
}
