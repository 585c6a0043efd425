package core

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// FairShareHalfLife is how fast past GPU use stops counting against a
// project in fair share: use from one half-life ago counts half.
const FairShareHalfLife = 7 * 24 * time.Hour

// usageWindow is how far back usage is read: ten half-lives, after which
// a GPU-second weighs less than a thousandth.
const usageWindow = 10 * FairShareHalfLife

// ReplanResult says what one replan did.
type ReplanResult struct {
	PlannedAt time.Time
	Queued    int     // queued jobs planned
	Running   int     // jobs holding GPUs
	Started   []int64 // jobs moved to starting, in queue order
	Deferred  []int64 // jobs the plan started whose GPUs were taken meanwhile; the next replan retries them
	Updated   int     // predictions that changed and were stored
	Events    int     // events written to the outbox (duplicates included)
}

// Replan plans the whole queue at now and commits the plan (DESIGN §3):
//
//  1. load a Snapshot in one View;
//  2. Plan it (pure: the Replanner keeps what did not change since the
//     last replan, and plans as Planner.Plan would from scratch);
//  3. in one Update: start the jobs whose time has come (state starting,
//     with their GPUs) after checking that nobody took those GPUs since the
//     View, store every prediction that changed, and write the events of
//     the difference between the previous plan and this one. A plan that
//     starts nothing and changes nothing writes nothing.
func (s *Service) Replan(ctx context.Context, now time.Time) (ReplanResult, error) {
	now = now.UTC().Truncate(time.Second)
	snap, err := s.snapshot(ctx, now)
	if err != nil {
		return ReplanResult{}, err
	}
	plan := s.replanner.Plan(now, snap)

	jobs := make(map[int64]Job, len(snap.Queued)+len(snap.Running))
	for _, j := range slices.Concat(snap.Queued, snap.Running) {
		jobs[j.ID] = j
	}
	prev := persistedPlan(snap)
	gpus := map[int64]GPU{}
	for _, g := range allGPUs(snap.Nodes) {
		gpus[g.ID] = g
	}
	res := ReplanResult{PlannedAt: now, Queued: len(plan.Queued), Running: len(plan.Running)}
	if !slices.ContainsFunc(plan.Queued, func(pj PlannedJob) bool { return pj.StartNow }) {
		if out := outcomeOf(plan, prev, jobs, nil, now); len(out.changed) == 0 && len(out.events) == 0 {
			return res, nil
		}
	}
	err = s.store.Update(ctx, func(tx Tx) error {
		started, err := s.startJobs(ctx, tx, plan, gpus, now)
		if err != nil {
			return err
		}
		out := outcomeOf(plan, prev, jobs, started, now)
		nameGPUs(out.events, plan, gpus)
		if err := tx.SetPredictions(ctx, out.changed); err != nil {
			return err
		}
		res.Started, res.Deferred, res.Updated, res.Events = out.started, out.deferred, len(out.changed), len(out.events)
		return tx.InsertEvents(ctx, out.events)
	})
	if err != nil {
		return ReplanResult{}, err
	}
	return res, nil
}

// nameGPUs adds the GPUs a started job got, by name ("node-3/0, node-3/1"),
// to its started event, and says where in its sentence.
func nameGPUs(events []Event, plan Plan, gpus map[int64]GPU) {
	planned := make(map[int64][]int64, len(plan.Queued))
	for _, pj := range plan.Queued {
		planned[pj.Job] = pj.GPUs
	}
	for i, e := range events {
		if e.Kind != EventStarted {
			continue
		}
		var names []string
		for _, id := range planned[e.Job] {
			if g, ok := gpus[id]; ok {
				names = append(names, g.Label())
			}
		}
		if len(names) > 0 {
			events[i].Data[DataGPU] = strings.Join(names, ", ")
			events[i].Detail = e.Detail + " (" + events[i].Data[DataGPU] + ")"
		}
	}
}

// outcome is what committing a plan writes besides the starts.
type outcome struct {
	started, deferred []int64              // in queue order
	changed           map[int64]Prediction // predictions to store (not those of started jobs: startJobs stored them)
	events            []Event
}

// outcomeOf works out, once it is known which of the plan's starts
// happened, what users are told: the jobs that stay queued numbered 1, 2, …
// in plan order, the predictions that changed, and the events.
func outcomeOf(plan, prev Plan, jobs map[int64]Job, started map[int64]bool, now time.Time) outcome {
	var out outcome
	next := plan
	next.Queued = slices.Clone(plan.Queued)
	position := 0
	for i, pj := range next.Queued {
		switch {
		case started[pj.Job]:
			out.started = append(out.started, pj.Job)
			continue
		case pj.StartNow:
			next.Queued[i].StartNow = false
			out.deferred = append(out.deferred, pj.Job)
		}
		position++
		next.Queued[i].Position = position
	}
	out.changed = map[int64]Prediction{}
	for _, pj := range slices.Concat(next.Queued, next.Running) {
		if started[pj.Job] {
			continue
		}
		if p := predictionOf(pj, now); !samePrediction(jobs[pj.Job].Prediction, p) {
			out.changed[pj.Job] = p
		}
	}
	out.events = DiffPlans(prev, next, jobs)
	return out
}

// snapshot loads what the planner looks at, in one View.
func (s *Service) snapshot(ctx context.Context, now time.Time) (Snapshot, error) {
	if err := s.learn(ctx); err != nil {
		return Snapshot{}, err
	}
	var snap Snapshot
	var jobs []Job
	var usage []UsageRecord
	err := s.store.View(ctx, func(tx Tx) (err error) {
		if snap.Nodes, err = tx.Nodes(ctx); err != nil {
			return err
		}
		outOfService(snap.Nodes)
		snap.Reservations, err = tx.Reservations(ctx, ReservationFilter{From: now, States: []ReservationState{Confirmed, Released, NoShow}})
		if err != nil {
			return err
		}
		if jobs, err = tx.Jobs(ctx, JobFilter{States: openStates}); err != nil {
			return err
		}
		usage, err = tx.Usage(ctx, now.Add(-usageWindow))
		return err
	})
	if err != nil {
		return Snapshot{}, err
	}
	slices.SortFunc(jobs, func(a, b Job) int { return cmp.Compare(a.ID, b.ID) })
	snap.Estimates = make(map[int64]Estimate, len(jobs))
	underWay := runsUnderWay(jobs, now)
	for _, j := range jobs {
		snap.Estimates[j.ID] = s.estimateAmong(j, underWay, now)
		if j.State == JobQueued {
			snap.Queued = append(snap.Queued, j)
		} else {
			snap.Running = append(snap.Running, j)
		}
	}
	snap.Usage = decayedUsage(usage, now, FairShareHalfLife)
	return snap, nil
}

// decayedUsage returns each project's GPU-seconds with exponential decay:
// a GPU-second at t counts 2^(-(now-t)/halfLife). Over a run [start, end)
// that integrates to GPUs × h/ln2 × (2^(-(now-end)/h) − 2^(-(now-start)/h)).
// Jobs without a project count under "".
func decayedUsage(rs []UsageRecord, now time.Time, halfLife time.Duration) map[string]float64 {
	h := halfLife.Seconds()
	weight := func(t time.Time) float64 { return math.Exp2(-now.Sub(t).Seconds() / h) }
	out := map[string]float64{}
	// Sum in a fixed order: float addition is not associative.
	slices.SortFunc(rs, func(a, b UsageRecord) int { return cmp.Compare(a.Job, b.Job) })
	for _, r := range rs {
		end := r.End
		if end.IsZero() || end.After(now) {
			end = now
		}
		if !end.After(r.Start) {
			continue
		}
		out[r.Project] += float64(r.GPUs) * h / math.Ln2 * (weight(end) - weight(r.Start))
	}
	return out
}

// startJobs moves the jobs that plan starts now to starting. It locks
// their GPUs first and then looks again at what holds them: a job whose
// GPUs another job took since the snapshot, or (unless it may be drained)
// that a reservation booked since then now needs, is left queued for the
// next replan. It returns the jobs it started.
func (s *Service) startJobs(ctx context.Context, tx Tx, plan Plan, gpus map[int64]GPU, now time.Time) (map[int64]bool, error) {
	var ids []int64
	end := now.Add(time.Second)
	for _, pj := range plan.Queued {
		if pj.StartNow && len(pj.GPUs) > 0 {
			ids = append(ids, pj.GPUs...)
			end = laterTime(end, pj.EndP50)
		}
	}
	started := map[int64]bool{}
	if len(ids) == 0 {
		return started, nil
	}
	slices.Sort(ids)
	if err := tx.LockGPUs(ctx, slices.Compact(ids)); err != nil {
		return nil, err
	}
	holding, err := tx.Jobs(ctx, JobFilter{States: holdingStates})
	if err != nil {
		return nil, err
	}
	held := map[int64]int64{} // GPU → job
	for _, j := range holding {
		for _, g := range j.Assigned {
			held[g.ID] = j.ID
		}
	}
	slots, err := tx.Slots(ctx, now, end)
	if err != nil {
		return nil, err
	}
	for _, pj := range plan.Queued {
		if !pj.StartNow || len(pj.GPUs) == 0 {
			continue
		}
		j, err := tx.Job(ctx, pj.Job)
		if ErrorCode(err) == CodeNotFound {
			continue
		}
		if err != nil {
			return nil, err
		}
		if j.State != JobQueued || !startable(j, pj, gpus, held, slots, now) {
			continue
		}
		j.State, j.StartedAt, j.Assigned = JobStarting, now, nil
		for _, id := range pj.GPUs {
			j.Assigned = append(j.Assigned, gpus[id].Ref())
			held[id] = j.ID
		}
		j.Prediction = predictionOf(pj, now)
		j.Prediction.Position = 0
		if err := tx.UpdateJob(ctx, j); err != nil {
			return nil, err
		}
		if err := tx.Audit(ctx, AuditEntry{At: now, Actor: System.User, Action: "job.start", Object: JobName(j.ID),
			Detail: fmt.Sprintf("%d GPU(s) %s for %s", len(j.Assigned), gpuLabels(j.Assigned), j.Owner)}); err != nil {
			return nil, err
		}
		started[j.ID] = true
	}
	return started, nil
}

// startable checks, inside the committing transaction, what the plan
// assumed about a start: every GPU exists, is up and is held by no other
// job; a job in a reservation starts only inside it while it holds those
// GPUs; any other job that may not be drained meets no reservation on its
// GPUs before its median end.
func startable(j Job, pj PlannedJob, gpus map[int64]GPU, held map[int64]int64, slots []Slot, now time.Time) bool {
	mine := map[int64]bool{}
	for _, id := range pj.GPUs {
		if g, ok := gpus[id]; !ok || g.State != GPUUp {
			return false
		}
		if _, taken := held[id]; taken {
			return false
		}
		mine[id] = true
	}
	drainable := j.Preemptible || j.Class == ClassLow
	inside := map[int64]bool{}
	for _, sl := range slots {
		if !mine[sl.GPUID] {
			continue
		}
		switch {
		case j.Class == ClassReserved && sl.Reservation == j.Reservation && sl.Overlaps(now, now.Add(time.Second)):
			inside[sl.GPUID] = true
		case j.Class != ClassReserved && !drainable && sl.Overlaps(now, laterTime(pj.EndP50, now.Add(time.Second))):
			return false
		}
	}
	return j.Class != ClassReserved || len(inside) == len(mine)
}

// predictionOf is what a planned job's entry says, at second precision.
func predictionOf(pj PlannedJob, now time.Time) Prediction {
	sec := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		return t.UTC().Truncate(time.Second)
	}
	p := Prediction{
		PlannedAt: now, Position: pj.Position, StartP50: sec(pj.StartP50), StartP90: sec(pj.StartP90),
		EndP50: sec(pj.EndP50), EndP90: sec(pj.EndP90), GPUs: slices.Clone(pj.GPUs), Reason: pj.Reason, Estimate: pj.Estimate,
	}
	if pj.Drain != nil {
		d := *pj.Drain
		d.SignalAt, d.Deadline = sec(d.SignalAt), sec(d.Deadline)
		p.Drain = &d
	}
	return p
}

// samePrediction reports whether two predictions say the same, whenever
// they were made.
func samePrediction(a, b Prediction) bool {
	return a.Position == b.Position && a.StartP50.Equal(b.StartP50) && a.StartP90.Equal(b.StartP90) &&
		a.EndP50.Equal(b.EndP50) && a.EndP90.Equal(b.EndP90) && slices.Equal(a.GPUs, b.GPUs) &&
		a.Reason == b.Reason && a.Estimate == b.Estimate && sameDrain(a.Drain, b.Drain) && !a.PlannedAt.IsZero()
}

// persistedPlan rebuilds the previous plan from the predictions stored
// with the jobs, so that a restarted server diffs against what users were
// last told.
func persistedPlan(snap Snapshot) Plan {
	var p Plan
	entry := func(j Job) PlannedJob {
		pr := j.Prediction
		if pr.PlannedAt.After(p.Now) {
			p.Now = pr.PlannedAt
		}
		return PlannedJob{Job: j.ID, Position: pr.Position, GPUs: pr.GPUs, StartP50: pr.StartP50, StartP90: pr.StartP90,
			EndP50: pr.EndP50, EndP90: pr.EndP90, Reason: pr.Reason, Drain: pr.Drain, Estimate: pr.Estimate}
	}
	for _, j := range snap.Queued {
		if !j.Prediction.PlannedAt.IsZero() {
			p.Queued = append(p.Queued, entry(j))
		}
	}
	for _, j := range snap.Running {
		if !j.Prediction.PlannedAt.IsZero() {
			p.Running = append(p.Running, entry(j))
		}
	}
	slices.SortFunc(p.Queued, func(a, b PlannedJob) int {
		return cmp.Or(cmp.Compare(a.Position, b.Position), cmp.Compare(a.Job, b.Job))
	})
	return p
}

func laterTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// outOfService marks, in a snapshot, the GPUs nothing new may use as
// down: those with a fault and those of nodes whose agent is not heard
// from (suspect or down). Jobs already on them keep running.
func outOfService(nodes []Node) {
	for i := range nodes {
		n := &nodes[i]
		for k := range n.GPUs {
			if !n.GPUs[k].Schedulable() || n.State == NodeSuspect || n.State == NodeDown {
				n.GPUs[k].State = GPUDown
			}
		}
	}
}
