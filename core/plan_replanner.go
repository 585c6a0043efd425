package core

import (
	"slices"
	"sync"
	"time"
)

// Replanner plans one cluster again and again — the server's replan loop,
// a replay in gpucal sim — and keeps between two plans what did not change.
// Two plans a few seconds apart share the inventory, the reservations and
// nearly all running jobs; rebuilding their timelines and the node index
// on them was most of a short plan's cost. A Replanner keeps:
//
//   - the timelines laid out for the inventory, as long as the snapshot's
//     nodes and GPUs are the same;
//   - the base layer (the reservations' windows and the running jobs until
//     their predicted ends) on every GPU, re-laid only on the GPUs of the
//     running jobs that started, ended or changed since the last plan (all
//     of them when the reservations changed);
//   - the node index (per-GPU and per-node staircases, node trees), brought
//     up to date through the timelines' change log like after a placement.
//
// Each plan then restores the GPUs the last plan's queue was placed on,
// marks the GPUs whose free time as seen from the new now is not the same
// as from the last one, and places the queue exactly as Planner.Plan does.
// Its plan is Planner.Plan's for the same (now, snapshot), whatever came
// before (TestReplannerMatchesPlan); it does not modify the snapshot either.
// It is safe for concurrent use: plans are made one at a time.
type Replanner struct {
	Planner Planner

	mu      sync.Mutex
	tl      *timelines // nil before the first plan
	laidOut bool       // tl is laid out for layout
	layout  layout     // the inventory tl is laid out for
	now     int64      // the last plan's now
	base    [][]interval
	// What the base layer was laid from: the reservations laid, in order,
	// and the running jobs, by ID; GPU IDs are kept in one slice each.
	windows         []laidWindow
	jobs, spareJobs []laidJob
	ids, spare      []int64
	dirty           []int  // GPUs the last plan's queue was placed on
	logStart        int    // where the last plan's part of tl.changes begins
	affected        []bool // per GPU, scratch: its base layer is laid again
	changed         []bool // per GPU, scratch: its commitments or its view from now changed
}

// laidWindow is a reservation as the base layer laid it.
type laidWindow struct {
	id, start, end int64
	gpus           [2]int // its GPU IDs: ids[gpus[0]:gpus[1]]
}

// laidJob is a running job as the base layer laid it: everything its
// commitments depend on once the reservations are known.
type laidJob struct {
	id, start, end         int64 // end: predicted, before any drain
	preemptible, drainable bool
	reservation            int64
	gpus                   [2]int // its GPU IDs: ids[gpus[0]:gpus[1]]
}

// NewReplanner returns a Replanner that plans with p.
func NewReplanner(p Planner) *Replanner { return &Replanner{Planner: p} }

// Plan plans every queued job, as Planner.Plan does.
func (r *Replanner) Plan(now time.Time, s Snapshot) Plan {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.Planner
	now = now.UTC().Truncate(time.Second)
	est := estimator(s)
	queue := p.order(now, s, est)
	if r.tl == nil {
		r.tl = &timelines{byID: map[int64]int{}}
	}
	running := p.runningJobs(now, s, est, &r.tl.work)
	base := r.update(now, s, running)
	median := p.placeQueue(now, r.tl, base, queue)
	r.dirty = append(r.dirty[:0], r.tl.placed...)
	return p.finish(now, s, queue, running, median)
}

// update brings the kept timelines to the base layer of (now, s) and
// returns it, in five steps.
func (r *Replanner) update(now time.Time, s Snapshot, running []queuedJob) baseLayer {
	n := secs(now)
	// 1. A new inventory starts everything afresh.
	fresh := !r.laidOut || !r.layout.same(s.Nodes)
	if fresh {
		r.tl.reset(n, s.Nodes)
		r.laidOut = true
		r.layout.set(s.Nodes)
		r.base = resized(r.base, len(r.tl.gpus))
		r.dirty, r.windows, r.jobs = r.dirty[:0], r.windows[:0], r.jobs[:0]
	}
	tl := r.tl
	for key := range tl.caps.counts { // a reservation's GPUs may have changed
		if key.reservation != 0 {
			delete(tl.caps.counts, key)
		}
	}
	tl.caps.last = nil
	r.affected = resized(r.affected, len(tl.gpus))
	r.changed = resized(r.changed, len(tl.gpus))
	clear(r.affected)
	clear(r.changed)

	// 2. Which GPUs' base layer changes: all of them when the inventory or
	//    the reservations did, else those of the running jobs that did.
	r.ids, r.spare = r.spare[:0], r.ids
	windows, oldIDs := r.laidWindows(now, s), r.spare
	all := fresh || !slices.EqualFunc(windows, r.windows, func(a, b laidWindow) bool {
		return a.id == b.id && a.start == b.start && a.end == b.end &&
			slices.Equal(r.ids[a.gpus[0]:a.gpus[1]], oldIDs[b.gpus[0]:b.gpus[1]])
	})
	jobs, ok := r.laidJobs(n, running)
	if all || !ok {
		for gi := range r.affected {
			r.affected[gi] = true
		}
	} else {
		r.diffJobs(jobs, oldIDs)
	}
	r.windows, r.jobs, r.spareJobs = windows, jobs, r.jobs
	if !ok {
		r.laidOut = false // a list cut short cannot be compared with: start afresh next time
	}

	// 3. GPUs the last queue was placed on go back to their base layer;
	//    affected ones are emptied and laid again.
	for _, gi := range r.dirty {
		r.changed[gi] = true
	}
	for gi := range tl.gpus {
		if r.affected[gi] || r.changed[gi] {
			r.changed[gi] = true
			tl.gpus[gi].busy = tl.gpus[gi].busy[:0]
			if !r.affected[gi] {
				tl.gpus[gi].busy = append(tl.gpus[gi].busy, r.base[gi]...)
			}
		}
	}
	base := r.Planner.layBase(now, s, tl, running, r.affected)
	for gi, a := range r.affected {
		if a {
			r.base[gi] = append(r.base[gi][:0], tl.gpus[gi].busy...)
		}
	}

	// 4. A GPU's free time as seen from now (its staircases, its node's
	//    bounds) is the same as from the last plan's now when a job held
	//    it all the time in between; others are recomputed.
	if n != r.now {
		from, to := min(r.now, n), max(r.now, n) // a clock may go back
		for gi := range tl.gpus {
			if !r.changed[gi] && !heldThrough(tl.gpus[gi].busy, from, to) {
				r.changed[gi] = true
			}
		}
		for ni := range tl.nodes {
			tl.nodes[ni].stale = true
		}
	}
	r.now, tl.now = n, n

	// 5. The node index catches up with the changed GPUs through the
	//    change log, which keeps only what the trees still to be used have
	//    not read.
	r.trimLog()
	last := -1
	for gi, c := range r.changed {
		if !c {
			continue
		}
		tl.gpus[gi].ver++
		if ni := tl.gpus[gi].node; ni != last {
			tl.refresh(ni)
			last = ni
		}
	}
	if fresh { // as Planner.place: every node, those without GPUs too
		for ni := range tl.nodes {
			tl.refresh(ni)
		}
	}
	tl.placed = tl.placed[:0]
	return base
}

// laidWindows lists the reservations the base layer lays at now, in the
// snapshot's order, their GPU IDs appended to r.ids.
func (r *Replanner) laidWindows(now time.Time, s Snapshot) []laidWindow {
	var out []laidWindow // a new list: the last one is compared with it
	for _, res := range s.Reservations {
		if !res.State.Holds() || !res.End.After(now) {
			continue
		}
		from := len(r.ids)
		for _, g := range res.GPUs {
			r.ids = append(r.ids, g.ID)
		}
		out = append(out, laidWindow{id: res.ID, start: secs(res.Start), end: secs(res.End), gpus: [2]int{from, len(r.ids)}})
	}
	return out
}

// laidJobs lists the running jobs as the base layer lays them, by ID,
// their GPU IDs appended to r.ids; ok is false when two share an ID.
func (r *Replanner) laidJobs(n int64, running []queuedJob) ([]laidJob, bool) {
	out := r.spareJobs[:0] // not the last list: it is compared with this one
	for i, rj := range running {
		j := rj.Job
		if i > 0 && running[i-1].ID >= j.ID {
			return out, false
		}
		start := secs(j.StartedAt)
		from := len(r.ids)
		for _, g := range j.Assigned {
			r.ids = append(r.ids, g.ID)
		}
		out = append(out, laidJob{id: j.ID, start: start, end: rj.hold,
			preemptible: j.Preemptible, drainable: j.Preemptible || j.Class == ClassLow, reservation: j.Reservation,
			gpus: [2]int{from, len(r.ids)}})
	}
	return out, true
}

// diffJobs marks as affected the GPUs of every running job that started,
// ended or changed since the last plan (old GPU IDs in oldIDs).
func (r *Replanner) diffJobs(jobs []laidJob, oldIDs []int64) {
	mark := func(ids []int64) {
		for _, id := range ids {
			if gi, ok := r.tl.gpuIndex(id); ok {
				r.affected[gi] = true
			}
		}
	}
	old := r.jobs
	i, k := 0, 0
	for i < len(jobs) || k < len(old) {
		switch {
		case k == len(old) || (i < len(jobs) && jobs[i].id < old[k].id): // started
			mark(r.ids[jobs[i].gpus[0]:jobs[i].gpus[1]])
			i++
		case i == len(jobs) || old[k].id < jobs[i].id: // ended
			mark(oldIDs[old[k].gpus[0]:old[k].gpus[1]])
			k++
		default:
			a, b := jobs[i], old[k]
			ga, gb := r.ids[a.gpus[0]:a.gpus[1]], oldIDs[b.gpus[0]:b.gpus[1]]
			a.gpus, b.gpus = [2]int{}, [2]int{}
			if a != b || !slices.Equal(ga, gb) {
				mark(ga)
				mark(gb)
			}
			i++
			k++
		}
	}
}

// heldThrough says whether a job holds the GPU from before `from` until
// after to: then its staircases and bounds are the same from either.
func heldThrough(busy []interval, from, to int64) bool {
	for _, iv := range busy {
		if iv.start > from {
			return false
		}
		if iv.kind == ivJob && iv.end > to {
			return true
		}
	}
	return false
}

// trimLog drops the trees the last plan did not use (the next plan builds
// them again, in their memory) and the part of the change log that every
// other tree has read.
func (r *Replanner) trimLog() {
	tl := r.tl
	ix := &tl.index
	done := len(tl.changes)
	ix.last = nil
	for key, t := range ix.trees {
		if t.seen < r.logStart {
			ix.keptTrees[key] = t
			delete(ix.trees, key)
			continue
		}
		done = min(done, t.seen)
	}
	tl.changes = tl.changes[:copy(tl.changes, tl.changes[done:])]
	for _, t := range ix.trees {
		t.seen -= done
	}
	r.logStart = len(tl.changes)
}

// layout is what timelines take from an inventory: the nodes' names and
// GPU counts, and per GPU what a gpuLine holds. Kept compact: a Replanner
// compares it with every snapshot's inventory.
type layout struct {
	nodes []layoutNode
	gpus  []layoutGPU
}

type layoutNode struct {
	name string
	gpus int
}

type layoutGPU struct {
	id, memoryMiB int64
	index         int
	up            bool
	name          string
}

func gpuLayout(g *GPU) layoutGPU {
	return layoutGPU{id: g.ID, memoryMiB: g.MemoryMiB, index: g.Index, up: g.State == GPUUp, name: g.Name}
}

// set makes l the layout of nodes.
func (l *layout) set(nodes []Node) {
	l.nodes, l.gpus = l.nodes[:0], l.gpus[:0]
	for i := range nodes {
		l.nodes = append(l.nodes, layoutNode{name: nodes[i].Name, gpus: len(nodes[i].GPUs)})
		for k := range nodes[i].GPUs {
			l.gpus = append(l.gpus, gpuLayout(&nodes[i].GPUs[k]))
		}
	}
}

// same says whether nodes give the timelines laid out for l.
func (l *layout) same(nodes []Node) bool {
	if len(nodes) != len(l.nodes) {
		return false
	}
	gi := 0
	for i := range nodes {
		n := &nodes[i]
		if n.Name != l.nodes[i].name || len(n.GPUs) != l.nodes[i].gpus {
			return false
		}
		for k := range n.GPUs {
			// Field by field: building each GPU's layout to compare it was
			// a thirtieth of a replay.
			g, lg := &n.GPUs[k], &l.gpus[gi]
			if g.ID != lg.id || g.Index != lg.index || g.MemoryMiB != lg.memoryMiB || (g.State == GPUUp) != lg.up || g.Name != lg.name {
				return false
			}
			gi++
		}
	}
	return true
}
