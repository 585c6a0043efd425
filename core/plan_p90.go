package core

import (
	"cmp"
	"slices"
	"time"
)

// pessimistic is the planner's P90 stage: when would every job start and
// end if each ran for its P90 rather than its median, on the GPUs the
// median pass gave it? Delays cascade along each GPU: a job starts when the
// last job before it on any of its GPUs has ended, and a job that may not
// overlap a foreign window moves past it. Working in the median plan's
// order, every job's predecessors are settled before it, so the stage
// costs one pass over the placements rather than a second placement search.
//
// Keeping the median assignment is the pessimistic reading on purpose: a
// replan would move a delayed job to GPUs that freed up meanwhile, so the
// real start is no later than this one, which is what a P90 should be.
func (p Planner) pessimistic(now time.Time, queue, running []queuedJob, med passResult) passResult {
	n := secs(now)
	tl := med.tl
	w := &tl.work
	w.free = resized(w.free, len(tl.gpus)) // per GPU, when its last settled job ends
	free := w.free
	clear(free)
	w.band[0], w.band[1] = resized(w.band[0], len(queue)), resized(w.band[1], len(running))
	res := passResult{tl: tl, queued: w.band[0], running: w.band[1]}
	clear(res.queued)
	// Each GPU's reservation windows, all in one allocation (none when
	// the plan has no reservations: the common case, and a short plan).
	var windows [][]interval
	if med.windows > 0 {
		windows = make([][]interval, len(tl.gpus))
		all := make([]interval, 0, med.windows)
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
		m := med.running[i]
		settle(m.gpus)
		end := runningEnd(n, m.start, rj.est, true)
		if rj.Preemptible || rj.Class == ClassLow {
			end = cutAtWindow(windows, gis, rj.Job, m.start, end)
		}
		res.running[i] = placement{ok: true, start: m.start, end: end, gpus: m.gpus, drain: m.drain}
		for _, gi := range gis {
			free[gi] = max(free[gi], end)
		}
	}

	order := make([]int, 0, len(queue))
	for i := range queue {
		if med.queued[i].ok {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(med.queued[a].start, med.queued[b].start), cmp.Compare(a, b))
	})
	for _, i := range order {
		m, j := med.queued[i], queue[i]
		settle(m.gpus)
		start := m.start
		for _, gi := range gis {
			start = max(start, free[gi])
		}
		dur := durSecs(j.est.P90)
		end := start + dur
		switch {
		case j.Preemptible || j.Class == ClassLow:
			end = cutAtWindow(windows, gis, j.Job, start, end)
		default:
			start = pastWindows(windows, gis, j.Job, start, dur)
			end = start + dur
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
