package core

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// explain is the planner's last stage: it turns the two placement passes
// into the Plan, with bands, drain orders and a reason per waiting job.
func (p Planner) explain(now time.Time, s Snapshot, queue []Job, est func(Job) Estimate, med, pes passResult) Plan {
	owners := map[int64]string{}
	for _, j := range s.Running {
		owners[j.ID] = j.Owner
	}
	for _, j := range s.Queued {
		owners[j.ID] = j.Owner
	}
	resOwners := map[int64]string{}
	for _, r := range s.Reservations {
		resOwners[r.ID] = r.Owner
	}
	isRunning := map[int64]bool{}
	for _, j := range s.Running {
		isRunning[j.ID] = true
	}
	at := func(t int64) time.Time { return time.Unix(t, 0).UTC() }
	out := Plan{Now: now, Queued: make([]PlannedJob, 0, len(queue))}
	n := secs(now)
	for i, j := range queue {
		m, q := med.queued[i], pes.queued[i]
		pj := PlannedJob{Job: j.ID, Position: i + 1, Estimate: est(j)}
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
		pj.Reason = reason(j, m, med.tl, owners, resOwners, n, isRunning)
		out.Queued = append(out.Queued, pj)
		if m.drain != nil {
			out.Drains = append(out.Drains, *m.drain)
		}
	}
	running := byID(s.Running)
	for _, j := range running {
		m, q := med.running[j.ID], pes.running[j.ID]
		pj := PlannedJob{Job: j.ID, GPUs: m.gpus, StartP50: j.StartedAt, StartP90: j.StartedAt,
			EndP50: at(m.end), EndP90: at(max(q.end, m.end)), Drain: m.drain, Estimate: est(j), Reason: "running"}
		if m.drain != nil {
			pj.Reason = fmt.Sprintf("running; will be drained by %s for %s", fmtTime(m.drain.Deadline), ReservationName(m.drain.Reservation))
			out.Drains = append(out.Drains, *m.drain)
		}
		out.Running = append(out.Running, pj)
	}
	slices.SortFunc(out.Drains, func(a, b DrainOrder) int {
		return cmp.Or(a.Deadline.Compare(b.Deadline), cmp.Compare(a.Job, b.Job))
	})
	return out
}

// reason says, in words a user understands, why a job is not running yet.
func reason(j Job, m placement, tl *timelines, owners, resOwners map[int64]string, now int64, isRunning map[int64]bool) string {
	var why string
	switch {
	case m.start <= now:
		why = "starting now"
	case j.Class == ClassReserved && m.blocker == nil:
		why = fmt.Sprintf("waiting for its reservation %s to open at %s", ReservationName(j.Reservation), fmtTime(time.Unix(m.start, 0)))
	default:
		why = "waiting for " + demandWords(j, len(m.gpus), tl, m.gpus)
		if b := m.blocker; b != nil {
			node := tl.nodes[tl.gpus[m.blockerGPU].node].name
			until := fmtTime(time.Unix(b.end, 0))
			switch {
			case b.kind == ivReservation:
				why += fmt.Sprintf("; %s is reserved by %s (%s) until %s", node, resOwners[b.id], ReservationName(b.id), until)
			case isRunning[b.id]:
				why += fmt.Sprintf("; %s is busy with %s (%s) until about %s", node, JobName(b.id), owners[b.id], until)
			default:
				why += fmt.Sprintf("; %s (%s), ahead in the queue, is planned on %s until about %s", JobName(b.id), owners[b.id], node, until)
			}
		}
	}
	if m.drain != nil {
		why += fmt.Sprintf("; will be drained by %s for %s", fmtTime(m.drain.Deadline), ReservationName(m.drain.Reservation))
	}
	return why
}

// demandWords describes what a job waits for: "4×a100 on one node".
func demandWords(j Job, n int, tl *timelines, gpus []int64) string {
	model := j.Model
	if model == "" {
		model = "GPU"
	}
	nodes := map[int]bool{}
	for _, id := range gpus {
		nodes[tl.gpus[tl.byID[id]].node] = true
	}
	if len(nodes) > 1 {
		return fmt.Sprintf("%d×%s on %d whole nodes", n, model, len(nodes))
	}
	return fmt.Sprintf("%d×%s on one node", n, model)
}
