package core

import (
	"cmp"
	"slices"
	"time"
)

// cascade is the planner's prediction stage: when would every job start
// and end if each ran for its median (p90 false) or its P90 (p90 true), on
// the GPUs the placement gave it? Delays cascade along each GPU: a job
// starts when the last job before it on any of its GPUs has ended, and a
// job that may not overlap a foreign window moves past it, by its P90 run
// as the placement keeps it clear. Working in the placements' order, every
// job's predecessors are settled before it, so the stage costs one pass
// over the placements rather than another placement search.
//
// The P90 band never starts a job before its slot: keeping the slot's
// assignment is the pessimistic reading on purpose, since a replan would
// move a delayed job to GPUs that freed up meanwhile, so the real start is
// no later than this one, which is what a P90 should be. The median
// cascade may start a job before its slot, never after: the slot waits for
// running jobs' P90 ends (PlanConfig.HoldMedian), and a job whose GPUs'
// holders end at their medians starts when they do. Reserved and
// preemptible jobs keep their slots: the one waits for its window, the
// other's drain order was made for its slot.
func (p Planner) cascade(now time.Time, queue, running []queuedJob, slots passResult, p90 bool) passResult {
	n := secs(now)
	tl := slots.tl
	w := &tl.work
	w.free = resized(w.free, len(tl.gpus)) // per GPU, when its last settled job ends
	free := w.free
	clear(free)
	out := &w.median
	if p90 {
		out = &w.band
	}
	out[0], out[1] = resized(out[0], len(queue)), resized(out[1], len(running))
	res := passResult{tl: tl, queued: out[0], running: out[1]}
	clear(res.queued)
	// Each GPU's reservation windows, all in one allocation (none when
	// the plan has no reservations: the common case, and a short plan).
	var windows [][]interval
	if slots.windows > 0 {
		windows = make([][]interval, len(tl.gpus))
		all := make([]interval, 0, slots.windows)
		for gi := range tl.gpus {
			from := len(all)
			for _, iv := range tl.gpus[gi].busy {
				if iv.kind == ivReservation {
					all = append(all, iv)
				}
			}
			windows[gi] = all[from:len(all):len(all)]
		}
	}
	gis := make([]int, 0, 64)
	settle := func(gpus []int64) {
		gis = gis[:0]
		for _, id := range gpus {
			gis = append(gis, tl.mustIndex(id))
		}
	}
	for i, rj := range running {
		m := slots.running[i]
		settle(m.gpus)
		end := runningEnd(n, m.start, rj.est, p90)
		if rj.Preemptible || rj.Class == ClassLow {
			end = cutAtWindow(windows, gis, rj.Job, m.start, end)
		}
		res.running[i] = placement{ok: true, start: m.start, end: end, gpus: m.gpus, drain: m.drain}
		for _, gi := range gis {
			free[gi] = max(free[gi], end)
		}
	}

	order := w.order[:0]
	for i := range queue {
		if slots.queued[i].ok {
			order = append(order, i)
		}
	}
	w.order = order
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(slots.queued[a].start, slots.queued[b].start), cmp.Compare(a, b))
	})
	for _, i := range order {
		m, j := slots.queued[i], queue[i]
		settle(m.gpus)
		start := n
		pre := j.Preemptible || j.Class == ClassLow
		if p90 || j.Class == ClassReserved || pre {
			// The P90 band starts no job before its slot; a reserved job
			// waits for its window, and a preemptible job keeps the start
			// its drain order was made for.
			start = m.start
		}
		for _, gi := range gis {
			start = max(start, free[gi])
		}
		dur, clearance := durSecs(j.est.P50), durSecs(j.est.P90)
		if p90 {
			dur = clearance
		}
		end := start + dur
		switch {
		case pre:
			end = cutAtWindow(windows, gis, j.Job, start, end)
		default:
			start = pastWindows(windows, gis, j.Job, start, max(dur, clearance))
			end = start + dur
		}
		if !p90 && start > m.start { // never later than the slot, which is feasible
			start, end = m.start, m.end
		}
		res.queued[i] = placement{ok: true, start: start, end: end, gpus: m.gpus, drain: m.drain}
		for _, gi := range gis {
			free[gi] = max(free[gi], end)
		}
	}
	return res
}

// pastWindows returns the earliest start from start on at which j, running
// for dur on GPUs gis, overlaps no window but its own reservation's;
// windows holds each GPU's reservation windows (nil: there are none).
func pastWindows(windows [][]interval, gis []int, j *Job, start, dur int64) int64 {
	if windows == nil {
		return start
	}
	for moved := true; moved; {
		moved = false
		for _, gi := range gis {
			for _, iv := range windows[gi] {
				if iv.id != j.Reservation && iv.start < start+dur && iv.end > start {
					start, moved = iv.end, true
				}
			}
		}
	}
	return start
}

// cutAtWindow returns when preemptible job j, running on GPUs gis from
// start, is stopped: at end, or where the first window (but its own
// reservation's) after its start opens.
func cutAtWindow(windows [][]interval, gis []int, j *Job, start, end int64) int64 {
	if windows == nil {
		return end
	}
	for _, gi := range gis {
		for _, iv := range windows[gi] {
			if iv.id != j.Reservation && iv.start > start && iv.start < end {
				end = iv.start
			}
		}
	}
	return end
}
