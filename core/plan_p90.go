package core

import (
	"cmp"
	"slices"
	"time"
)

// predict is the planner's prediction stage: when would every job start
// and end if each ran for its median, and if each ran for its P90, on the
// GPUs the placement gave it? Delays cascade along each GPU: a job starts
// when the last job before it on any of its GPUs has ended, and a job that
// may not overlap a foreign window moves past it, by its P90 run as the
// placement keeps it clear. Working in the placements' order, every job's
// predecessors are settled before it, so the stage costs one pass over the
// placements rather than another placement search; the median and the P90
// cascade share it.
//
// The P90 band never starts a job before its slot: keeping the slot's
// assignment is the pessimistic reading on purpose, since a replan would
// move a delayed job to GPUs that freed up meanwhile, so the real start is
// no later than this one, which is what a P90 should be. The median
// cascade usually starts a job before its slot: the slot waits for running
// jobs' holds past their medians (PlanConfig.Hold), and a job whose GPUs'
// holders end at their medians starts when they do. (It can start after
// the slot only when a holder past its median, expected to end a little
// after now, outlasts its hold.) Reserved and preemptible jobs start no
// earlier than their slots: the one waits for its window, the other's
// drain order was made for its slot.
func (p Planner) predict(now time.Time, queue, running []queuedJob, slots passResult) (median, band passResult) {
	n := secs(now)
	tl := slots.tl
	w := &tl.work
	// Per GPU, when its last settled job ends: [0] median, [1] P90.
	w.free[0], w.free[1] = resized(w.free[0], len(tl.gpus)), resized(w.free[1], len(tl.gpus))
	free50, free90 := w.free[0], w.free[1]
	clear(free50)
	clear(free90)
	res := [2]*passResult{&median, &band}
	for k, out := range []*[2][]placement{&w.median, &w.band} {
		out[0], out[1] = resized(out[0], len(queue)), resized(out[1], len(running))
		*res[k] = passResult{tl: tl, queued: out[0], running: out[1]}
		clear(res[k].queued)
	}
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
	for i, rj := range running {
		m := slots.running[i]
		gis = gis[:0]
		for _, id := range m.gpus {
			gis = append(gis, tl.mustIndex(id))
		}
		end50 := runningEnd(n, m.start, rj.est, false)
		end90 := max(runningEnd(n, m.start, rj.est, true), end50) // a job past its median ends after now
		if rj.Preemptible || rj.Class == ClassLow {
			end50, end90 = cutAtWindow(windows, gis, rj.Job, m.start, end50), cutAtWindow(windows, gis, rj.Job, m.start, end90)
		}
		median.running[i] = placement{ok: true, start: m.start, end: end50, gpus: m.gpus, drain: m.drain}
		band.running[i] = placement{ok: true, start: m.start, end: end90, gpus: m.gpus, drain: m.drain}
		for _, gi := range gis {
			free50[gi], free90[gi] = max(free50[gi], end50), max(free90[gi], end90)
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
		gis = gis[:0]
		for _, id := range m.gpus {
			gis = append(gis, tl.mustIndex(id))
		}
		pre := j.Preemptible || j.Class == ClassLow
		start50, start90 := n, m.start
		if j.Class == ClassReserved || pre {
			start50 = m.start
		}
		for _, gi := range gis {
			start50, start90 = max(start50, free50[gi]), max(start90, free90[gi])
		}
		dur50, dur90 := durSecs(j.est.P50), durSecs(j.est.P90)
		var end50, end90 int64
		if pre {
			end50, end90 = cutAtWindow(windows, gis, j.Job, start50, start50+dur50), cutAtWindow(windows, gis, j.Job, start90, start90+dur90)
		} else {
			start50 = pastWindows(windows, gis, j.Job, start50, max(dur50, dur90))
			start90 = pastWindows(windows, gis, j.Job, start90, dur90)
			end50, end90 = start50+dur50, start90+dur90
		}
		median.queued[i] = placement{ok: true, start: start50, end: end50, gpus: m.gpus, drain: m.drain}
		band.queued[i] = placement{ok: true, start: start90, end: end90, gpus: m.gpus, drain: m.drain}
		for _, gi := range gis {
			free50[gi], free90[gi] = max(free50[gi], end50), max(free90[gi], end90)
		}
	}
	return median, band
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
