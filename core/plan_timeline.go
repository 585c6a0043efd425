package core

import (
	"math"
	"slices"
	"sync"
)

// The planner works on per-GPU timelines in whole seconds since the Unix
// epoch: cheap to compare and free of time zones.

// never is the end of an open interval.
const never = math.MaxInt64 / 4

type ivKind uint8

const (
	ivJob         ivKind = iota // a running or planned job
	ivReservation               // a reservation window
)

// interval is one commitment on one GPU, [start, end).
type interval struct {
	start, end  int64
	kind        ivKind
	id          int64 // job or reservation ID
	preemptible bool  // a job that may be drained
	// protected marks a queued job's planned start that later placements
	// on its GPUs must clear by their P90 (PlanConfig.ProtectShared).
	protected bool
}

// gpuLine is one GPU and its commitments, sorted by start.
type gpuLine struct {
	id    int64 // GPU ID
	index int   // device index on its node
	up    bool
	model Model
	node  int // index into timelines.nodes
	busy  []interval
	ver   uint32 // changes whenever busy does (nodeIndex's staircases follow it)

	// Summaries for pruning, kept by refresh: considering jobs only, the
	// first free instant, the end of the last job and the longest free gap
	// between now and it; and the end of the last commitment of any kind.
	firstFree, jobTail, maxGap, allTail int64
}

// nodeLine is a node and the indexes of its GPUs in timelines.gpus.
type nodeLine struct {
	name string
	gpus []int
	ver  uint32 // changes whenever the node's GPUs do (nodeIndex's trees follow it)
	// stale says the bounds below are out of date (see summarize).
	stale bool
	// firstFree holds, sorted, the first instant each up GPU is not held
	// by a job: a lower bound on any job's start there (reservations may
	// only make it later).
	firstFree []int64
	// tail is when the node's last commitment ends: from then on it is
	// wholly free, an upper bound on any job's start there.
	tail int64
	// For the common case — all up GPUs of the node usable by a job — the
	// node's bounds without looking at its GPUs: its model when all its GPUs
	// share one (and all are up), the sorted last-job ends and last
	// commitment ends of its GPUs, and their longest gap.
	uniform  bool
	model    Model
	jobTails []int64
	allTails []int64
	maxGap   int64
}

// timelines is the planner's working copy of the cluster in time.
type timelines struct {
	protectLeft int // how many more slots this pass may protect (PlanConfig.ProtectShared)
	now         int64
	gpus        []gpuLine
	nodes       []nodeLine
	// GPU ID → index in gpus: through dense (index+1 at ID−denseFrom, 0
	// for none) when the IDs are close together, as they are in a cluster
	// numbered from one, else through byID. Use gpuIndex.
	dense     []int32
	denseFrom int64
	byID      map[int64]int

	changes []int   // the nodes refreshed, in order: the node trees' change log
	placed  []int   // the GPUs queued jobs were placed on (Replanner restores them)
	slotIDs []int64 // this plan's slots' GPU IDs (new memory for every plan: the plan keeps it)
	index   nodeIndex

	// work is a plan's working memory, kept for the next plan.
	work planWork
	// caps holds the parsed models and the usable GPUs per node for each
	// model, which change only with the inventory, and for reservations'
	// GPUs, which a Replanner forgets at every plan.
	caps capacities

	// Scratch space for searches, reused from job to job.
	sweep    gangSweep
	nodeOut  []window
	nodeNext []window
}

// planWork is the memory a plan works in that does not reach the Plan:
// per running job and per queued job, a few hundred bytes each that a
// replay would otherwise allocate and collect in every plan.
type planWork struct {
	running []queuedJob
	base    []placement // the running jobs' placements in the base layer
	queued  []placement // the slots
	median  [2][]placement
	band    [2][]placement
	free    [2][]int64 // per GPU, for the predictions: median, P90
	order   []int      // queued jobs by slot, for the predictions
	ids     []int64    // the running jobs' GPU IDs, when they do not reach the Plan
}

// timelinesPool keeps the timelines of finished plans for the next one:
// a plan lays thousands of commitments on thousands of GPUs, and reusing
// that memory spares the collector most of a plan's garbage. Everything a
// plan reads is reset by newTimelines; nothing but memory carries over.
var timelinesPool sync.Pool

// newTimelines returns empty timelines for the GPUs of nodes at now, from
// the pool when it has some. release hands them back.
func newTimelines(now int64, nodes []Node) *timelines {
	tl, _ := timelinesPool.Get().(*timelines)
	if tl == nil {
		tl = &timelines{byID: map[int64]int{}}
	}
	tl.reset(now, nodes)
	return tl
}

// release hands tl back to the pool; nothing may use it afterwards.
func (tl *timelines) release() {
	tl.slotIDs = nil // the plan's, not the pool's
	timelinesPool.Put(tl)
}

// reset makes tl the empty timelines of nodes at now, keeping its memory:
// each GPU's commitment list, the GPU and node slices, the ID index and
// the node index's per-GPU staircases. The node index's trees start anew.
func (tl *timelines) reset(now int64, nodes []Node) {
	total := 0
	for _, n := range nodes {
		total += len(n.GPUs)
	}
	// Every GPU gets room for a few commitments; lists that grew in an
	// earlier plan keep their memory.
	const room = 4
	old := tl.gpus[:cap(tl.gpus)]
	var arena []interval
	if len(old) < total {
		arena = make([]interval, room*(total-len(old)))
	}
	busy := func(i int) []interval {
		switch {
		case i >= len(old):
			j := i - len(old)
			return arena[room*j : room*j : room*(j+1)]
		case old[i].busy != nil:
			return old[i].busy[:0]
		}
		return make([]interval, 0, room)
	}
	if cap(tl.gpus) < total {
		tl.gpus = make([]gpuLine, 0, total)
	}
	gpus := tl.gpus[:0]
	clear(tl.byID)
	if tl.caps.models == nil {
		tl.caps = capacities{models: map[string]Model{}, counts: map[capKey]capacity{}}
	}
	clear(tl.caps.counts)
	tl.caps.last = nil
	tl.dense = tl.dense[:0]
	if lo, hi, ok := idRange(nodes); ok && hi-lo < int64(4*total+64) {
		tl.dense, tl.denseFrom = resized(tl.dense, int(hi-lo+1)), lo
		clear(tl.dense)
	}
	tl.now, tl.changes, tl.placed = now, tl.changes[:0], tl.placed[:0]
	tl.index = tl.index.next()

	type nameMem struct {
		name string
		mib  int64
	}
	models := map[nameMem]Model{} // parsing a model name is slow; clusters have few
	var last nameMem
	var m Model
	indexes := make([]int, total) // every node's GPU list, in one allocation
	if cap(tl.nodes) < len(nodes) {
		tl.nodes = slices.Grow(tl.nodes[:0], len(nodes))
	}
	oldNodes := tl.nodes[:cap(tl.nodes)]
	tl.nodes = tl.nodes[:0]
	for ni, n := range nodes {
		first := len(gpus)
		nl := nodeLine{name: n.Name, gpus: indexes[first : first+len(n.GPUs) : first+len(n.GPUs)]}
		o := &oldNodes[ni] // the bounds' lists keep their memory
		nl.firstFree, nl.jobTails, nl.allTails = o.firstFree[:0], o.jobTails[:0], o.allTails[:0]
		for i, g := range n.GPUs {
			if key := (nameMem{g.Name, g.MemoryMiB}); key != last || len(gpus) == 0 {
				var ok bool
				if m, ok = models[key]; !ok {
					m = g.Model()
					models[key] = m
				}
				last = key
			}
			gi := len(gpus)
			if len(tl.dense) > 0 {
				tl.dense[g.ID-tl.denseFrom] = int32(gi + 1)
			} else {
				tl.byID[g.ID] = gi
			}
			nl.gpus[i] = gi
			gpus = append(gpus, gpuLine{id: g.ID, index: g.Index, up: g.State == GPUUp, model: m, node: ni, ver: 1, busy: busy(gi)})
		}
		tl.nodes = append(tl.nodes, nl)
	}
	tl.gpus = gpus
}

// gpuIndex returns the index in gpus of the GPU with ID id.
func (tl *timelines) gpuIndex(id int64) (int, bool) {
	if len(tl.dense) > 0 {
		if i := id - tl.denseFrom; i >= 0 && i < int64(len(tl.dense)) && tl.dense[i] > 0 {
			return int(tl.dense[i]) - 1, true
		}
		return 0, false
	}
	gi, ok := tl.byID[id]
	return gi, ok
}

// mustIndex is gpuIndex for a GPU of the timelines (a placement's): 0
// for an unknown ID, as the map it replaces gave.
func (tl *timelines) mustIndex(id int64) int {
	gi, _ := tl.gpuIndex(id)
	return gi
}

// idRange returns the smallest and largest GPU ID of nodes.
func idRange(nodes []Node) (lo, hi int64, ok bool) {
	for _, n := range nodes {
		for _, g := range n.GPUs {
			if !ok || g.ID < lo {
				lo = g.ID
			}
			if !ok || g.ID > hi {
				hi = g.ID
			}
			ok = true
		}
	}
	return lo, hi, ok
}

// add inserts iv on the GPU at index gi, keeping the list sorted.
func (tl *timelines) add(gi int, iv interval) {
	busy := tl.gpus[gi].busy
	i, _ := slices.BinarySearchFunc(busy, iv.start, func(a interval, t int64) int {
		switch {
		case a.start < t:
			return -1
		case a.start > t:
			return 1
		}
		return 0
	})
	tl.gpus[gi].busy = slices.Insert(busy, i, iv)
	tl.gpus[gi].ver++
}

// refresh records that a node's GPUs changed: its version moves on, the
// node trees will catch up, and its bounds are recomputed when next asked.
func (tl *timelines) refresh(ni int) {
	n := &tl.nodes[ni]
	n.ver++
	n.stale = true
	tl.changes = append(tl.changes, ni)
}

// summarize recomputes a node's bounds if its GPUs changed since.
func (tl *timelines) summarize(ni int) {
	n := &tl.nodes[ni]
	if !n.stale {
		return
	}
	n.stale = false
	n.firstFree = n.firstFree[:0]
	n.jobTails, n.allTails = n.jobTails[:0], n.allTails[:0]
	n.tail, n.maxGap, n.uniform = tl.now, 0, len(n.gpus) > 0
	for _, gi := range n.gpus {
		g := &tl.gpus[gi]
		n.model = tl.gpus[n.gpus[0]].model
		n.uniform = n.uniform && g.up && g.model == n.model
		g.firstFree, g.jobTail, g.maxGap, g.allTail = -1, tl.now, 0, tl.now
		for _, iv := range g.busy {
			g.allTail = max(g.allTail, iv.end)
			if iv.kind != ivJob || iv.end <= tl.now {
				continue
			}
			if iv.start > g.jobTail {
				if g.firstFree < 0 {
					g.firstFree = g.jobTail
				}
				g.maxGap = max(g.maxGap, iv.start-g.jobTail)
			}
			g.jobTail = max(g.jobTail, iv.end)
		}
		if g.firstFree < 0 {
			g.firstFree = g.jobTail
		}
		n.tail = max(n.tail, g.allTail)
		n.maxGap = max(n.maxGap, g.maxGap)
		n.jobTails = append(n.jobTails, g.jobTail)
		n.allTails = append(n.allTails, g.allTail)
		if g.up {
			n.firstFree = append(n.firstFree, g.firstFree)
		}
	}
	slices.Sort(n.firstFree)
	slices.Sort(n.jobTails)
	slices.Sort(n.allTails)
}

// bounds returns, for k GPUs of node ni for which usable holds and a job of
// duration d, a lower bound on the earliest start (a GPU whose gaps are all
// shorter than d cannot start before its last job ends) and an upper bound
// (the instant from which k of them are free for good). ok is false when
// the node has fewer than k usable GPUs.
func (tl *timelines) bounds(ni, k int, d int64, usable func(*gpuLine) bool) (lb, ub int64, ok bool) {
	tl.summarize(ni)
	if n := &tl.nodes[ni]; n.uniform && d > n.maxGap && usable(&tl.gpus[n.gpus[0]]) {
		// No gap on the node is long enough: every GPU starts after its last job.
		if k > len(n.jobTails) {
			return 0, 0, false
		}
		return n.jobTails[k-1], n.allTails[k-1], true
	}
	var lows, highs [maxGPUsPerNode]int64
	n := 0
	for _, gi := range tl.nodes[ni].gpus {
		g := &tl.gpus[gi]
		if !usable(g) {
			continue
		}
		l := g.jobTail
		if g.maxGap >= d {
			l = g.firstFree
		}
		lows[n], highs[n] = l, g.allTail
		n++
	}
	if n < k {
		return 0, 0, false
	}
	slices.Sort(lows[:n])
	slices.Sort(highs[:n])
	return lows[k-1], highs[k-1], true
}

// lowerBound returns the earliest instant k GPUs of node ni could all be
// free, or never when it has fewer than k up GPUs.
func (tl *timelines) lowerBound(ni, k int) int64 {
	tl.summarize(ni)
	ff := tl.nodes[ni].firstFree
	if k > len(ff) {
		return never
	}
	return ff[k-1]
}

// seeker answers "when could this job run here" for one job: which
// commitments block it and which GPUs it may use.
type seeker struct {
	model       Model
	reservation int64 // the job's own reservation: its window does not block it
	preemptible bool  // reservation windows do not block it (it is drained instead)
	dur         int64
	// clear is how long before a foreign reservation window (or a
	// protected planned start) a job must be able to start: its P90
	// duration for non-preemptible jobs, so that one that runs longer than
	// its median still leaves the window free.
	clear int64
	// one says the job needs one GPU: only each GPU's first window matters.
	one bool
}

func (s seeker) blocks(iv interval) bool {
	if iv.kind == ivJob {
		return true
	}
	return !s.preemptible && iv.id != s.reservation
}

// semantics says which commitments the node index counts as blocking.
func (s seeker) semantics() semantics {
	if s.preemptible {
		return semJobs
	}
	return semAll
}

func (s seeker) usable(g *gpuLine) bool {
	return g.up && s.model.Matches(g.model)
}

// window is a range of feasible starts [from, to] on one GPU; gapEnd is
// where the free time it belongs to ends (for best fit in time).
type window struct {
	from, to, gapEnd int64
	gpu              int
	run              int64 // set by fitAt for preemptible jobs
}

// windows appends gi's feasible start windows within [from, limit].
func (s seeker) windows(tl *timelines, gi int, from, limit int64, out []window) []window {
	cursor := from
	busy := tl.gpus[gi].busy
	next, nextAt := -1, int64(never) // the next blocking window at or after i, found once per window
	for i, iv := range busy {
		if iv.end <= cursor || !s.blocks(iv) {
			continue
		}
		if cursor > limit {
			return out
		}
		to := iv.start - s.dur
		if s.clear > s.dur {
			if next < i {
				next, nextAt = s.nextWindow(busy, i)
			}
			to = min(to, nextAt-s.clear)
		}
		if to >= cursor {
			out = append(out, window{from: cursor, to: to, gapEnd: iv.start, gpu: gi})
			if s.one {
				return out
			}
		}
		cursor = max(cursor, iv.end)
	}
	if cursor <= limit {
		out = append(out, window{from: cursor, to: never, gapEnd: never, gpu: gi})
	}
	return out
}

// nextWindow returns the index and start of the first reservation window
// that blocks the seeker, or protected planned start, at or after busy[i],
// or (len(busy), never).
func (s seeker) nextWindow(busy []interval, i int) (int, int64) {
	for ; i < len(busy); i++ {
		if iv := busy[i]; iv.protected || (iv.kind == ivReservation && s.blocks(iv)) {
			return i, iv.start
		}
	}
	return len(busy), never
}

// fit is a candidate placement on one node.
type fit struct {
	start int64
	gpus  []int // indexes into timelines.gpus, best candidates first
	idle  int   // usable GPUs of the node left free at start
	slack int64 // free time left after the job on the chosen GPUs (less is a tighter fit)
	// run is how long a preemptible job runs there before a reservation
	// drains it (its whole duration when nothing does).
	run int64
}

// better orders candidate placements: earlier, then (for preemptible jobs)
// longer before a drain, then fewer GPUs left idle on the node (space),
// then less free time cut off after the job (time).
func (f fit) better(g fit) bool {
	if f.start != g.start {
		return f.start < g.start
	}
	if f.run != g.run {
		return f.run > g.run
	}
	if f.idle != g.idle {
		return f.idle < g.idle
	}
	return f.slack < g.slack
}

// best finds the earliest start in ws (no later than limit) at which k of
// the windows' GPUs are all free for the seeker's duration.
func (s seeker) best(tl *timelines, ws []window, k int, limit int64) (fit, bool) {
	if k == 1 {
		// The earliest window's start fits one GPU: no need to sort them.
		t := int64(never)
		for _, w := range ws {
			t = min(t, w.from)
		}
		if len(ws) == 0 || t > limit {
			return fit{}, false
		}
		return s.fitAt(tl, ws, t, 1)
	}
	slices.SortFunc(ws, func(a, b window) int {
		switch {
		case a.from < b.from:
			return -1
		case a.from > b.from:
			return 1
		}
		return a.gpu - b.gpu
	})
	for _, c := range ws {
		if c.from > limit {
			break
		}
		if f, ok := s.fitAt(tl, ws, c.from, k); ok {
			return f, true
		}
	}
	return fit{}, false
}

// fitAt checks whether k GPUs among ws can all start at t, and picks the
// ones whose free time ends soonest after the job (tightest in time).
func (s seeker) fitAt(tl *timelines, ws []window, t int64, k int) (fit, bool) {
	var scratch [16]window
	cands := scratch[:0]
	for _, w := range ws {
		if w.from <= t && t <= w.to {
			cands = append(cands, w)
		}
	}
	if len(cands) < k {
		return fit{}, false
	}
	if s.preemptible { // how long each could run before a reservation drains it
		for i := range cands {
			cands[i].run = s.runFor(tl, cands[i].gpu, t)
		}
	}
	slices.SortFunc(cands, func(a, b window) int {
		if a.run != b.run {
			if a.run > b.run {
				return -1
			}
			return 1
		}
		if a.gapEnd != b.gapEnd {
			if a.gapEnd < b.gapEnd {
				return -1
			}
			return 1
		}
		return tl.gpus[a.gpu].index - tl.gpus[b.gpu].index
	})
	f := fit{start: t, idle: len(cands) - k, run: s.dur, gpus: make([]int, 0, k)}
	for _, w := range cands[:k] {
		f.gpus = append(f.gpus, w.gpu)
		if s.preemptible {
			f.run = min(f.run, w.run)
		}
		if w.gapEnd == never {
			f.slack += 1 << 40 // open-ended free time: the loosest fit
		} else {
			f.slack += w.gapEnd - (t + s.dur)
		}
	}
	return f, true
}

// runFor returns how long a preemptible job starting at t on GPU gi runs
// before a foreign reservation window needs the GPU: 0 when t is inside
// one, its whole duration when none comes.
func (s seeker) runFor(tl *timelines, gi int, t int64) int64 {
	run := s.dur
	for _, iv := range tl.gpus[gi].busy {
		if iv.kind != ivReservation || iv.id == s.reservation || iv.end <= t {
			continue
		}
		if iv.start >= t+run {
			break
		}
		run = max(iv.start-t, 0)
	}
	return run
}
