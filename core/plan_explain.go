package core

import (
	"cmp"
	"slices"
	"strconv"
	"time"
)

// explain is the planner's last stage: it turns the slots and the median
// and P90 predictions into the Plan, with drain orders and a reason per
// waiting job. Without predictions (PlanConfig.NoBands, med and pes empty)
// every time is the slot's; without reasons (PlanConfig.NoReasons) only an
// unplaceable job gets one.
func (p Planner) explain(now time.Time, s Snapshot, queue, running []queuedJob, slots, med, pes passResult) Plan {
	reasons := !p.Config.NoReasons
	var names namer
	if reasons {
		names = newNamer(s, queue, running, slots, med)
	}
	at := func(t int64) time.Time { return time.Unix(t, 0).UTC() }
	out := Plan{Now: now, Queued: make([]PlannedJob, 0, len(queue))}
	n := secs(now)
	for i, j := range queue {
		m := slots.queued[i]
		pj := PlannedJob{Job: j.ID, Position: i + 1, Estimate: j.est}
		if !m.ok {
			pj.Reason = "cannot be planned: " + m.why
			out.Queued = append(out.Queued, pj)
			continue
		}
		e, q := predicted(med.queued, i, m), predicted(pes.queued, i, m)
		pj.GPUs, pj.Drain, pj.Slot = m.gpus, m.drain, at(m.start)
		pj.StartP50, pj.EndP50 = at(e.start), at(e.end)
		pj.StartP90, pj.EndP90 = at(max(q.start, m.start)), at(max(q.end, m.end, e.end))
		if d := m.drain; d != nil && secs(d.Deadline) > m.start && pj.EndP90.After(d.Deadline) && pj.StartP90.Before(d.Deadline) {
			pj.EndP90 = laterTime(d.Deadline, pj.EndP50) // drained by then whatever its speed
		}
		pj.StartNow = m.start <= n
		if reasons {
			pj.Reason = names.reason(j.Job, m, slots.tl, n)
		}
		out.Queued = append(out.Queued, pj)
		if m.drain != nil {
			out.Drains = append(out.Drains, *m.drain)
		}
	}
	if len(running) > 0 && !p.Config.NoRunning {
		out.Running = make([]PlannedJob, 0, len(running))
	}
	for i, j := range running {
		m := slots.running[i]
		if p.Config.NoRunning {
			if m.drain != nil {
				out.Drains = append(out.Drains, *m.drain)
			}
			continue
		}
		e, q := predicted(med.running, i, m), predicted(pes.running, i, m)
		pj := PlannedJob{Job: j.ID, GPUs: m.gpus, StartP50: j.StartedAt, StartP90: j.StartedAt, Slot: j.StartedAt,
			EndP50: at(e.end), EndP90: at(max(q.end, e.end)), Drain: m.drain, Estimate: j.est}
		if reasons {
			pj.Reason = "running"
		}
		if m.drain != nil {
			if reasons {
				pj.Reason = "running; will be drained by " + fmtTime(m.drain.Deadline) + " for " + ReservationName(m.drain.Reservation)
			}
			out.Drains = append(out.Drains, *m.drain)
		}
		out.Running = append(out.Running, pj)
	}
	slices.SortFunc(out.Drains, func(a, b DrainOrder) int {
		return cmp.Or(a.Deadline.Compare(b.Deadline), cmp.Compare(a.Job, b.Job))
	})
	return out
}

// predicted is the i-th placement of a prediction pass, or the slot when
// the plan has no predictions (PlanConfig.NoBands).
func predicted(ps []placement, i int, slot placement) placement {
	if ps == nil || !ps[i].ok {
		return slot
	}
	return ps[i]
}

// namer finds the owners of the jobs and reservations reasons name, and
// when the jobs they wait for are expected to end.
type namer struct {
	jobs      map[int64]namedJob
	resOwners map[int64]string // reservation → owner
}

type namedJob struct {
	owner   string
	running bool
	end     int64 // its median end (its slot's end without predictions)
}

// newNamer knows every running and queued job with its end in med, or
// in slots where med is empty.
func newNamer(s Snapshot, queue, running []queuedJob, slots, med passResult) namer {
	names := namer{jobs: make(map[int64]namedJob, len(running)+len(queue)), resOwners: make(map[int64]string, len(s.Reservations))}
	for i, j := range running {
		names.jobs[j.ID] = namedJob{owner: j.Owner, running: true, end: predicted(med.running, i, slots.running[i]).end}
	}
	for i, j := range queue {
		names.jobs[j.ID] = namedJob{owner: j.Owner, end: predicted(med.queued, i, slots.queued[i]).end}
	}
	for _, r := range s.Reservations {
		names.resOwners[r.ID] = r.Owner
	}
	return names
}

// reason says, in words a user understands, why a job is not running yet.
// It appends the words to one buffer: a plan explains every queued job.
func (nm namer) reason(j *Job, m placement, tl *timelines, now int64) string {
	var b []byte
	switch {
	case m.start <= now:
		b = append(b, "starting now"...)
	case j.Class == ClassReserved && m.blocker == nil:
		b = append(b, "waiting for its reservation "...)
		b = append(b, ReservationName(j.Reservation)...)
		b = append(b, " to open at "...)
		b = appendTime(b, m.start)
	default:
		b = make([]byte, 0, 128)
		b = append(b, "waiting for "...)
		b = appendDemand(b, j, len(m.gpus), tl, m.gpus)
		if iv := m.blocker; iv != nil {
			node := tl.nodes[tl.gpus[m.blockerGPU].node].name
			switch {
			case iv.kind == ivReservation:
				b = append(append(append(append(append(b, "; "...), node...), " is reserved by "...), nm.resOwners[iv.id]...), " ("...)
				b = append(append(b, ReservationName(iv.id)...), ") until "...)
			case nm.jobs[iv.id].running:
				b = append(append(append(append(b, "; "...), node...), " is busy with "...), JobName(iv.id)...)
				b = append(append(append(b, " ("...), nm.jobs[iv.id].owner...), ") until about "...)
			default:
				b = append(append(append(append(b, "; "...), JobName(iv.id)...), " ("...), nm.jobs[iv.id].owner...)
				b = append(append(append(b, "), ahead in the queue, is planned on "...), node...), " until about "...)
			}
			end := iv.end
			if iv.kind == ivJob {
				end = nm.jobs[iv.id].end
			}
			b = appendTime(b, end)
		}
	}
	if d := m.drain; d != nil {
		b = append(b, "; will be drained by "...)
		b = appendTime(b, secs(d.Deadline))
		b = append(b, " for "...)
		b = append(b, ReservationName(d.Reservation)...)
	}
	return string(b)
}

// appendTime appends an instant as fmtTime writes it.
func appendTime(b []byte, t int64) []byte {
	return time.Unix(t, 0).UTC().AppendFormat(b, "2006-01-02 15:04 UTC")
}

// appendDemand appends what a job waits for: "4×a100 on one node".
func appendDemand(b []byte, j *Job, n int, tl *timelines, gpus []int64) []byte {
	model := j.Model
	if model == "" {
		model = "GPU"
	}
	first, nodes := -1, 0
	for _, id := range gpus {
		ni := tl.gpus[tl.mustIndex(id)].node
		if first < 0 {
			first, nodes = ni, 1
		} else if ni != first {
			nodes = 2 // placements hold one node or several whole ones; count them below
			break
		}
	}
	if nodes > 1 {
		var seen []int
		for _, id := range gpus {
			if ni := tl.gpus[tl.mustIndex(id)].node; !slices.Contains(seen, ni) {
				seen = append(seen, ni)
			}
		}
		nodes = len(seen)
	}
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(append(b, "×"...), model...)
	if nodes > 1 {
		b = append(b, " on "...)
		b = strconv.AppendInt(b, int64(nodes), 10)
		return append(b, " whole nodes"...)
	}
	return append(b, " on one node"...)
}
