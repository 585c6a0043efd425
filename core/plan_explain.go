package core

import (
	"cmp"
	"slices"
	"strconv"
	"time"
)

// explain is the planner's last stage: it turns the two placement passes
// into the Plan, with bands, drain orders and a reason per waiting job.
func (p Planner) explain(now time.Time, s Snapshot, queue, running []queuedJob, med, pes passResult) Plan {
	names := namer{owners: make(map[int64]string, len(s.Running)+len(s.Queued)), running: make(map[int64]bool, len(s.Running)),
		resOwners: make(map[int64]string, len(s.Reservations))}
	for _, j := range s.Running {
		names.owners[j.ID] = j.Owner
		names.running[j.ID] = true
	}
	for _, j := range s.Queued {
		names.owners[j.ID] = j.Owner
	}
	for _, r := range s.Reservations {
		names.resOwners[r.ID] = r.Owner
	}
	at := func(t int64) time.Time { return time.Unix(t, 0).UTC() }
	out := Plan{Now: now, Queued: make([]PlannedJob, 0, len(queue))}
	n := secs(now)
	for i, j := range queue {
		m, q := med.queued[i], pes.queued[i]
		pj := PlannedJob{Job: j.ID, Position: i + 1, Estimate: j.est}
		if !m.ok {
			pj.Reason = "cannot be planned: " + m.why
			out.Queued = append(out.Queued, pj)
			continue
		}
		pj.GPUs, pj.Drain = m.gpus, m.drain
		pj.StartP50, pj.EndP50 = at(m.start), at(m.end)
		pj.StartP90, pj.EndP90 = pj.StartP50, pj.EndP50
		if q.ok {
			pj.StartP90, pj.EndP90 = at(max(q.start, m.start)), at(max(q.end, m.end))
		}
		if d := m.drain; d != nil && secs(d.Deadline) > m.start && pj.EndP90.After(d.Deadline) {
			pj.EndP90 = laterTime(d.Deadline, pj.EndP50) // drained by then whatever its speed
		}
		pj.StartNow = m.start <= n
		pj.Reason = names.reason(j.Job, m, med.tl, n)
		out.Queued = append(out.Queued, pj)
		if m.drain != nil {
			out.Drains = append(out.Drains, *m.drain)
		}
	}
	if len(running) > 0 {
		out.Running = make([]PlannedJob, 0, len(running))
	}
	for i, j := range running {
		m, q := med.running[i], pes.running[i]
		pj := PlannedJob{Job: j.ID, GPUs: m.gpus, StartP50: j.StartedAt, StartP90: j.StartedAt,
			EndP50: at(m.end), EndP90: at(max(q.end, m.end)), Drain: m.drain, Estimate: j.est, Reason: "running"}
		if m.drain != nil {
			pj.Reason = "running; will be drained by " + fmtTime(m.drain.Deadline) + " for " + ReservationName(m.drain.Reservation)
			out.Drains = append(out.Drains, *m.drain)
		}
		out.Running = append(out.Running, pj)
	}
	slices.SortFunc(out.Drains, func(a, b DrainOrder) int {
		return cmp.Or(a.Deadline.Compare(b.Deadline), cmp.Compare(a.Job, b.Job))
	})
	return out
}

// namer finds the owners of the jobs and reservations reasons name.
type namer struct {
	owners    map[int64]string // job → owner
	running   map[int64]bool
	resOwners map[int64]string // reservation → owner
}

// reason says, in words a user understands, why a job is not running yet.
// It builds the words with concatenation: a plan explains every queued job.
func (nm namer) reason(j *Job, m placement, tl *timelines, now int64) string {
	var why string
	switch {
	case m.start <= now:
		why = "starting now"
	case j.Class == ClassReserved && m.blocker == nil:
		why = "waiting for its reservation " + ReservationName(j.Reservation) + " to open at " + fmtTime(time.Unix(m.start, 0))
	default:
		why = "waiting for " + demandWords(j, len(m.gpus), tl, m.gpus)
		if b := m.blocker; b != nil {
			node := tl.nodes[tl.gpus[m.blockerGPU].node].name
			until := fmtTime(time.Unix(b.end, 0))
			switch {
			case b.kind == ivReservation:
				why += "; " + node + " is reserved by " + nm.resOwners[b.id] + " (" + ReservationName(b.id) + ") until " + until
			case nm.running[b.id]:
				why += "; " + node + " is busy with " + JobName(b.id) + " (" + nm.owners[b.id] + ") until about " + until
			default:
				why += "; " + JobName(b.id) + " (" + nm.owners[b.id] + "), ahead in the queue, is planned on " + node + " until about " + until
			}
		}
	}
	if m.drain != nil {
		why += "; will be drained by " + fmtTime(m.drain.Deadline) + " for " + ReservationName(m.drain.Reservation)
	}
	return why
}

// demandWords describes what a job waits for: "4×a100 on one node".
func demandWords(j *Job, n int, tl *timelines, gpus []int64) string {
	model := j.Model
	if model == "" {
		model = "GPU"
	}
	var nodes []int
	for _, id := range gpus {
		if ni := tl.gpus[tl.byID[id]].node; !slices.Contains(nodes, ni) {
			nodes = append(nodes, ni)
		}
	}
	count := strconv.Itoa(n) + "×" + model
	if len(nodes) > 1 {
		return count + " on " + strconv.Itoa(len(nodes)) + " whole nodes"
	}
	return count + " on one node"
}
