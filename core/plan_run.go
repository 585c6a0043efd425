package core

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Planner turns a Snapshot into a Plan. It is pure and deterministic: no
// clock, no IO, no goroutines; the same (now, snapshot) gives the same plan,
// and the snapshot is never modified.
type Planner struct {
	Config PlanConfig
}

// Plan plans every queued job: order, then place (conservative backfill on
// per-GPU timelines with median durations, around running jobs held until
// their P90 ends), then predict (the same placements with median and with
// P90 durations, delays cascading), then explain.
func (p Planner) Plan(now time.Time, s Snapshot) Plan {
	now = now.UTC().Truncate(time.Second)
	est := estimator(s)
	queue := p.order(now, s, est)
	tl := newTimelines(secs(now), s.Nodes)
	defer tl.release() // the plan keeps nothing of it
	running := p.runningJobs(now, s, est, &tl.work)
	return p.finish(now, s, queue, running, p.place(now, s, tl, queue, running))
}

// finish adds the median and P90 predictions to the placements and
// explains them.
func (p Planner) finish(now time.Time, s Snapshot, queue, running []queuedJob, slots passResult) Plan {
	var median, band passResult
	if !p.Config.NoBands {
		median, band = p.predict(now, queue, running, slots)
	}
	return p.explain(now, s, queue, running, slots, median, band)
}

// WhatIf plans probe as if it were submitted now, alongside the queue, and
// returns its place; nothing else changes. probe.ID should be 0; its
// estimate comes from s.Estimates[0] or its Hints.Guess.
func (p Planner) WhatIf(now time.Time, s Snapshot, probe Job) PlannedJob {
	probe.ID = 0
	if probe.SubmittedAt.IsZero() {
		probe.SubmittedAt = now
	}
	probe.State = JobQueued
	s.Queued = append(slices.Clip(s.Queued), probe)
	for _, pj := range p.Plan(now, s).Queued {
		if pj.Job == 0 {
			return pj
		}
	}
	return PlannedJob{}
}

// runningJobs returns the running jobs by ID, with their estimates and
// the ends of their holds (PlanConfig.Hold) at now.
func (p Planner) runningJobs(now time.Time, s Snapshot, est func(*Job) Estimate, w *planWork) []queuedJob {
	n := secs(now)
	sorted := byID(s.Running)
	w.running = resized(w.running, len(sorted))
	running := w.running
	for i := range sorted {
		j := &sorted[i]
		e := est(j)
		running[i] = queuedJob{Job: j, est: e, hold: p.holdEnd(n, secs(j.StartedAt), e)}
	}
	return running
}

// estimator returns a job's estimate: the snapshot's, or the default.
func estimator(s Snapshot) func(*Job) Estimate {
	return func(j *Job) Estimate {
		if e, ok := s.Estimates[j.ID]; ok && e.P50 > 0 {
			e.P90 = max(e.P90, e.P50)
			return e
		}
		return DefaultEstimator{}.Estimate(*j, time.Time{})
	}
}

// placement is where one pass put one job.
type placement struct {
	ok         bool
	start, end int64   // seconds; end is where it stops (drained or done)
	gpus       []int64 // GPU IDs
	drain      *DrainOrder
	blocker    *interval // the commitment whose end it waits for
	blockerGPU int       // timelines index of the GPU that commitment is on
	why        string    // why it could not be placed at all
}

// passResult is one placement pass: per queued job (queue order) and per running job.
type passResult struct {
	queued  []placement
	running []placement // in the order of the running jobs given to place
	tl      *timelines
	windows int // reservation intervals laid on the timelines
}

func secs(t time.Time) int64 { return t.Unix() }

// durSecs is a duration in whole seconds, at least one minute.
func durSecs(d time.Duration) int64 { return max(int64((d+time.Second-1)/time.Second), 60) }

// place is the planner's second stage: every queued job at its earliest
// start with median durations, keeping non-preemptible jobs' P90 clear of
// foreign windows, around running jobs held past their median ends
// (PlanConfig.Hold). It lays the base layer on empty timelines first.
// Where a job is placed is its slot.
func (p Planner) place(now time.Time, s Snapshot, tl *timelines, queue, running []queuedJob) passResult {
	base := p.layBase(now, s, tl, running, nil)
	for ni := range tl.nodes {
		tl.refresh(ni)
	}
	return p.placeQueue(now, tl, base, queue)
}

// baseLayer is what a plan lays on the timelines before the queue: the
// holding reservations' windows and the running jobs until their holds
// end (PlanConfig.Hold).
type baseLayer struct {
	windows map[int64]Reservation // the reservations laid, by ID
	laid    int                   // reservation intervals laid on GPUs
	running []placement           // per running job, in the order given
}

// layBase lays the base layer on the GPUs for which only is true (every
// GPU when only is nil), whose commitment lists must be empty, and returns
// it with every running job's placement. Other GPUs must hold the same
// reservations already (a preemptible job's drain reads them).
func (p Planner) layBase(now time.Time, s Snapshot, tl *timelines, running []queuedJob, only []bool) baseLayer {
	n := secs(now)
	base := baseLayer{windows: map[int64]Reservation{}}
	laying := func(gi int) bool { return only == nil || only[gi] }
	// 1. Reservations block their GPUs for their windows.
	for _, r := range s.Reservations {
		if !r.State.Holds() || !r.End.After(now) {
			continue
		}
		base.windows[r.ID] = r
		for _, g := range r.GPUs {
			if gi, ok := tl.gpuIndex(g.ID); ok {
				base.laid++
				if laying(gi) {
					tl.add(gi, interval{start: secs(r.Start), end: secs(r.End), kind: ivReservation, id: r.ID})
				}
			}
		}
	}
	// 2. Running jobs hold their GPUs until their hold ends; preemptible
	//    ones only until the first foreign window on their GPUs opens.
	base.running = tl.work.base[:0]
	var gis []int
	held := 0
	for _, rj := range running {
		held += len(rj.Assigned)
	}
	var ids []int64
	if p.Config.NoRunning { // not in the plan: the memory is the next plan's too
		ids = slices.Grow(tl.work.ids[:0], held)
		tl.work.ids = ids
	} else {
		ids = make([]int64, 0, held) // every running job's GPU IDs, in one allocation
	}
	for _, rj := range running {
		j := rj.Job
		start := secs(j.StartedAt)
		end := rj.hold
		gis = gis[:0]
		from := len(ids)
		for _, g := range j.Assigned {
			if gi, ok := tl.gpuIndex(g.ID); ok {
				gis = append(gis, gi)
				ids = append(ids, g.ID)
			}
		}
		pl := placement{ok: true, start: start, end: end}
		if j.Preemptible || j.Class == ClassLow {
			pl.end, pl.drain = p.drainBefore(tl, gis, j, start, end, n)
		}
		for _, gi := range gis {
			if laying(gi) {
				tl.add(gi, interval{start: start, end: pl.end, kind: ivJob, id: j.ID, preemptible: j.Preemptible})
			}
		}
		pl.gpus = ids[from:len(ids):len(ids)]
		base.running = append(base.running, pl)
	}
	tl.work.base = base.running
	return base
}

// placeQueue places the queued jobs, in order, each at its earliest start
// (conservative backfill), on timelines that hold the base layer.
func (p Planner) placeQueue(now time.Time, tl *timelines, base baseLayer, queue []queuedJob) passResult {
	n := secs(now)
	res := passResult{tl: tl, running: base.running, windows: base.laid}
	windows := base.windows
	limit := n + int64(p.horizon()/time.Second)
	var buf []window
	caps := &tl.caps
	// The node index costs a pass over the nodes per tree it builds; a
	// short queue is placed faster by scanning the nodes.
	indexed := len(queue) >= indexMinQueue
	tl.work.queued = resized(tl.work.queued, len(queue))
	res.queued = tl.work.queued
	clear(res.queued)
	tl.protectLeft = p.Config.ProtectShared
	total := 0
	for _, j := range queue {
		total += j.GPUs
	}
	tl.slotIDs = make([]int64, 0, total) // every slot's GPU IDs in one allocation: the plan keeps them
	protect := len(queue)
	if p.Config.Protect > 0 {
		protect = min(p.Config.Protect, len(queue))
	}
	place := func(i int, limit int64) {
		j := queue[i]
		res.queued[i] = p.placeJob(tl, windows, caps, j.Job, durSecs(j.est.P50), durSecs(j.est.P90), n, limit, indexed, &buf)
	}
	// The shared head, if any, goes right after the reserved jobs.
	head, headPlaced := -1, false
	if p.Config.SharedHead && protect == len(queue) {
		head = sharedHead(tl, queue)
	}
	for i := range protect {
		if head >= 0 && !headPlaced && (i == head || queue[i].Class != ClassReserved) {
			place(head, limit)
			headPlaced = true
		}
		if i != head {
			place(i, limit)
		}
	}
	// Behind the protected jobs, whatever fits now starts now, in queue
	// order; then the rest are placed around everything so far.
	for i := protect; i < len(queue); i++ {
		place(i, n)
	}
	for i := protect; i < len(queue); i++ {
		if !res.queued[i].ok {
			place(i, limit)
		}
	}
	return res
}

// sharedHead returns the index of the first job in queue, not reserved,
// that needs several GPUs of one node (PlanConfig.SharedHead), or -1.
func sharedHead(tl *timelines, queue []queuedJob) int {
	largest := 0
	for _, nl := range tl.nodes {
		largest = max(largest, len(nl.gpus))
	}
	for i, j := range queue {
		if j.Class != ClassReserved && j.GPUs >= 2 && j.GPUs <= largest {
			return i
		}
	}
	return -1
}

func (p Planner) horizon() time.Duration {
	if p.Config.Horizon > 0 {
		return p.Config.Horizon
	}
	return DefaultPlanConfig.Horizon
}

// holdEnd is when a running job that started at start stops holding its
// GPUs for placing the queue (PlanConfig.Hold).
func (p Planner) holdEnd(now, start int64, e Estimate) int64 {
	h := min(max(p.Config.Hold, 0), 1)
	d50, d90 := durSecs(e.P50), durSecs(max(e.P90, e.P50))
	d := d50
	switch {
	case h == 1:
		d = d90
	case h > 0 && d90 > d50:
		d = min(int64(math.Round(float64(d50)*powRatio(float64(d90)/float64(d50), h))), d90)
	}
	// A job past its hold is held a step of 5 % of it (at least a minute)
	// at a time, in steps counted from its start: the hold then changes
	// once a step, not at every plan, and the Replanner, which lays a job
	// again when its hold changes, keeps it.
	end := start + d
	if end <= now {
		step := max(d/20, 60)
		end += ((now-end)/step + 1) * step
	}
	return end
}

// powRatio is r^h. Every plan asks it for every running job, and math.Pow
// took a sixth of a replay: the quarters are square roots.
func powRatio(r, h float64) float64 {
	switch h {
	case 0.75:
		s := math.Sqrt(r)
		return s * math.Sqrt(s)
	case 0.5:
		return math.Sqrt(r)
	case 0.25:
		return math.Sqrt(math.Sqrt(r))
	}
	return math.Pow(r, h)
}

// runningEnd predicts when a running job ends. A job already past its
// estimate is expected to end a little later rather than in the past.
func runningEnd(now, start int64, e Estimate, p90 bool) int64 {
	d := durSecs(e.P50)
	if p90 {
		d = durSecs(e.P90)
	}
	end := start + d
	if end <= now {
		end = now + max(d/20, 60)
	}
	return end
}

// maxTieChecks is how many nodes tied at the best start a search compares
// for fit (fewest idle GPUs, tightest gap) before it takes the best so far.
const maxTieChecks = 4

// indexMinQueue is the queue length from which placement uses the node
// index (plan_index.go) rather than scanning every node for every job.
const indexMinQueue = 32

// placeJob finds the earliest placement for j and commits it to tl.
func (p Planner) placeJob(tl *timelines, windows map[int64]Reservation, caps *capacities, j *Job, dur, clear, now, limit int64, indexed bool, buf *[]window) placement {
	model := caps.model(j.Model)
	sk := seeker{model: model, preemptible: j.Preemptible || j.Class == ClassLow, dur: dur, clear: clear, one: j.GPUs == 1}
	from := now
	var only map[int64]bool
	if j.Class == ClassReserved {
		r, ok := windows[j.Reservation]
		if !ok {
			return placement{why: "its reservation " + ReservationName(j.Reservation) + " is over or was cancelled"}
		}
		sk.reservation = r.ID
		from = max(now, secs(r.Start))
		only = map[int64]bool{}
		for _, g := range r.GPUs {
			only[g.ID] = true
		}
	}
	usable := func(g *gpuLine) bool { return sk.usable(g) && (only == nil || only[g.id]) }

	// How many usable GPUs each node has decides between one node and a gang.
	c := caps.of(tl, model, sk.reservation, usable)
	counts, total, largest := c.counts, c.total, c.largest
	if j.GPUs > total {
		return placement{why: "it asks for more GPUs of its model than exist"}
	}
	var best fit
	var found bool
	indexed = indexed && only == nil
	switch {
	case j.GPUs <= largest && indexed:
		best, found = p.fitOneNodeIndexed(tl, sk, usable, counts, j.GPUs, from, limit, buf)
	case j.GPUs <= largest:
		best, found = p.fitOneNode(tl, sk, usable, counts, j.GPUs, from, limit, buf)
	case indexed:
		best, found = p.fitGangIndexed(tl, sk, usable, counts, j.GPUs, from, limit, buf)
	default:
		best, found = p.fitGang(tl, sk, usable, counts, j.GPUs, from, limit, buf)
	}
	if !found {
		return placement{why: "it cannot start within the planning horizon"}
	}

	pl := placement{ok: true, start: best.start, end: best.start + dur}
	// A start to come on several GPUs of one node is kept clear of later
	// placements' P90 runs, for the first PlanConfig.ProtectShared such jobs.
	protected := tl.protectLeft > 0 && best.start > now && j.GPUs >= 2 && j.GPUs <= largest
	if protected {
		tl.protectLeft--
	}
	if sk.preemptible {
		pl.end, pl.drain = p.drainBefore(tl, best.gpus, j, pl.start, pl.end, now)
	}
	if !p.Config.NoReasons { // only reasons name the blocker
		pl.blocker, pl.blockerGPU = blockerOf(tl, sk, best.gpus, best.start, now)
	}
	var nodes [8]int // the nodes it touches: one, or a gang's few
	touched := nodes[:0]
	tl.placed = append(tl.placed, best.gpus...)
	first := len(tl.slotIDs)
	for _, gi := range best.gpus {
		tl.add(gi, interval{start: pl.start, end: pl.end, kind: ivJob, id: j.ID, preemptible: sk.preemptible, protected: protected})
		tl.slotIDs = append(tl.slotIDs, tl.gpus[gi].id)
		if ni := tl.gpus[gi].node; !slices.Contains(touched, ni) {
			touched = append(touched, ni)
		}
	}
	pl.gpus = tl.slotIDs[first:len(tl.slotIDs):len(tl.slotIDs)]
	for _, ni := range touched {
		tl.refresh(ni)
	}
	return pl
}

// fitOneNode finds the best single-node placement: the earliest start,
// then the best fit in space and time. Per-node bounds keep the search
// small: nothing can start later than the earliest instant some node is
// free for good, and a node whose lower bound is later than the best start
// so far is skipped. Among nodes tied at the best start, at most
// maxTieChecks more are compared for fit.
func (p Planner) fitOneNode(tl *timelines, sk seeker, usable func(*gpuLine) bool, counts []int, k int, from, limit int64, buf *[]window) (fit, bool) {
	s := seekerOnly{seeker: sk, usable: usable}
	lbs := make([]int64, len(tl.nodes))
	first := -1
	for ni := range tl.nodes {
		lbs[ni] = never
		if counts[ni] < k {
			continue
		}
		lb, ub, ok := tl.bounds(ni, k, sk.dur, usable)
		if !ok {
			continue
		}
		lbs[ni] = max(lb, from)
		limit = min(limit, max(ub, from))
		if first < 0 || lbs[ni] < lbs[first] {
			first = ni
		}
	}
	if first < 0 {
		return fit{}, false
	}
	best, found := s.earliestOn(tl, first, k, from, limit, buf)
	ties := 0
	for ni := range tl.nodes {
		bound := limit
		if found {
			bound = best.start
		}
		if ni == first || lbs[ni] > bound {
			continue
		}
		if found && lbs[ni] == best.start {
			if ties++; ties > maxTieChecks {
				continue
			}
		}
		if f, ok := s.earliestOn(tl, ni, k, from, bound, buf); ok && (!found || f.better(best)) {
			best, found = f, true
		}
	}
	return best, found
}

// fitOneNodeIndexed is fitOneNode for a job that may use any usable GPU:
// the node index visits only the nodes whose lower bound is no later than
// the best start found so far, earliest first.
func (p Planner) fitOneNodeIndexed(tl *timelines, sk seeker, usable func(*gpuLine) bool, counts []int, k int, from, limit int64, buf *[]window) (fit, bool) {
	s := seekerOnly{seeker: sk, usable: usable}
	var best fit
	found, ties := false, 0
	t := tl.tree(treeKey{sem: sk.semantics(), model: sk.model, k: k})
	t.search(sk.dur, limit, func(ni int, lb int64) int64 {
		// No later than k of the node's GPUs are free for good.
		bound := min(limit, t.v[t.size+ni].at(never))
		if found {
			bound = best.start
			if lb == best.start {
				ties++
			}
		}
		if counts[ni] >= k {
			if f, ok := s.earliestOn(tl, ni, k, max(from, lb), bound, buf); ok && (!found || f.better(best)) {
				best, found = f, true
			}
		}
		switch {
		case !found:
			return limit
		case ties >= maxTieChecks:
			return best.start - 1 // only strictly earlier starts from here on
		}
		return best.start
	})
	return best, found
}

// seekerOnly is a seeker restricted to some GPUs (a reserved job's).
type seekerOnly struct {
	seeker
	usable func(*gpuLine) bool
}

func (s seekerOnly) earliestOn(tl *timelines, ni, k int, from, limit int64, buf *[]window) (fit, bool) {
	ws := (*buf)[:0]
	for _, gi := range tl.nodes[ni].gpus {
		if s.usable(&tl.gpus[gi]) {
			ws = s.windows(tl, gi, from, limit, ws)
		}
	}
	*buf = ws
	return s.seeker.best(tl, ws, k, limit)
}

// drainBefore cuts a preemptible job's run at the first foreign
// reservation window on its GPUs that opens after it starts, and returns
// the drain order: its deadline is that window's start, or the job's own
// start when it begins inside a window (drainable at once).
func (p Planner) drainBefore(tl *timelines, gis []int, j *Job, start, end, now int64) (int64, *DrainOrder) {
	var deadline, cut int64 = never, end
	var res int64
	for _, gi := range gis {
		for _, iv := range tl.gpus[gi].busy {
			if iv.kind != ivReservation || iv.id == j.Reservation || iv.end <= start || iv.start >= end {
				continue
			}
			if d := max(iv.start, start); d < deadline || (d == deadline && iv.id < res) {
				deadline, res = d, iv.id
			}
			if iv.start > start {
				cut = min(cut, iv.start)
			}
		}
	}
	if deadline == never {
		return end, nil
	}
	lead := int64(p.Config.DrainLead / time.Second)
	signal := max(deadline-lead, start, now)
	return cut, &DrainOrder{Job: j.ID, Reservation: res, SignalAt: time.Unix(signal, 0).UTC(), Deadline: time.Unix(deadline, 0).UTC()}
}

// blockerOf finds the commitment a job placed at start waits for: the
// blocking interval on its GPUs that ends last at or before start.
func blockerOf(tl *timelines, sk seeker, gis []int, start, now int64) (*interval, int) {
	if start <= now {
		return nil, 0
	}
	var best interval
	found, bestGPU := false, 0
	for _, gi := range gis {
		for _, iv := range tl.gpus[gi].busy {
			if !sk.blocks(iv) || iv.end > start || iv.end <= now {
				continue
			}
			if !found || iv.end > best.end || (iv.end == best.end && iv.kind > best.kind) {
				best, found, bestGPU = iv, true, gi
			}
		}
	}
	if !found {
		return nil, 0
	}
	return &best, bestGPU
}

// capacities caches, for one pass, what does not change while jobs are
// placed: parsed model names and how many usable GPUs each node has for a
// model (and a reservation's GPUs).
type capacities struct {
	models map[string]Model
	counts map[capKey]capacity
	// The last answer of of: most jobs ask for the same (any model, no
	// reservation), and hashing a model's names is a map lookup's cost.
	lastKey capKey
	last    *capacity
}

type capKey struct {
	model       Model
	reservation int64
}

type capacity struct {
	counts         []int // usable GPUs per node
	total, largest int
}

func (c *capacities) model(name string) Model {
	m, ok := c.models[name]
	if !ok {
		m, _ = ParseModel(name)
		c.models[name] = m
	}
	return m
}

func (c *capacities) of(tl *timelines, m Model, reservation int64, usable func(*gpuLine) bool) capacity {
	key := capKey{m, reservation}
	if c.last != nil && c.lastKey == key {
		return *c.last
	}
	if got, ok := c.counts[key]; ok {
		c.lastKey, c.last = key, &got
		return got
	}
	got := capacity{counts: make([]int, len(tl.nodes))}
	for ni, nl := range tl.nodes {
		for _, gi := range nl.gpus {
			if usable(&tl.gpus[gi]) {
				got.counts[ni]++
			}
		}
		got.total += got.counts[ni]
		got.largest = max(got.largest, got.counts[ni])
	}
	c.counts[key] = got
	c.lastKey, c.last = key, &got
	return got
}

// byID returns jobs ordered by ID, copying only when they are not already.
func byID(jobs []Job) []Job {
	sorted := true
	for i := 1; i < len(jobs) && sorted; i++ { // by index: a Job is large to pass around
		sorted = jobs[i-1].ID <= jobs[i].ID
	}
	if sorted {
		return jobs
	}
	out := slices.Clone(jobs)
	slices.SortFunc(out, func(a, b Job) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
