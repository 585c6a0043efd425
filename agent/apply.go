package agent

import (
	"context"
	"fmt"
	"slices"

	"github.com/gpucal/gpucal/agent/gpu"
	"github.com/gpucal/gpucal/agent/progress"
	"github.com/gpucal/gpucal/agent/run"
	"github.com/gpucal/gpucal/core"
)

// job is one job the agent runs or ran.
type job struct {
	rec  record       // guarded by Agent.mu
	proc *run.Process // nil unless the agent started or adopted it and runs its supervisor
	poke chan struct{}
	pf   *progressFile // its progress file's reader; nil for a job without one
}

// newJob is the job of record r.
func newJob(r record) *job {
	j := &job{rec: r, poke: make(chan struct{}, 1)}
	if r.ProgressFile != "" {
		j.pf = &progressFile{id: r.Order.Job, path: r.ProgressFile}
	}
	return j
}

// pokeSupervisor tells the job's supervisor that its stop order changed.
func (j *job) pokeSupervisor() {
	select {
	case j.poke <- struct{}{}:
	default:
	}
}

// apply brings the node to the server's desired state:
//
//  1. take the server's interval, timing and windows, and forget the jobs
//     it acknowledged;
//  2. start each ordered job the agent has no record of;
//  3. stop jobs by the server's orders, the jobs it does not know, and by
//     the cached windows, whichever is earliest.
func (a *Agent) apply(ctx context.Context, ds core.DesiredState) error {
	if ds.Node != "" && ds.Node != a.name {
		return fmt.Errorf("the server answered for node %q, not %q", ds.Node, a.name)
	}
	a.settle(ds)
	for _, j := range a.admit(ds.Run) {
		a.start(ctx, j)
	}
	a.stopUnwanted(ds)
	return nil
}

// settle is step 1.
func (a *Agent) settle(ds core.DesiredState) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if ds.Interval > 0 {
		a.interval = max(ds.Interval, minInterval)
	}
	switch err := ds.Timing.Check(); {
	case ds.Timing == (core.DrainTiming{}):
	case err != nil:
		a.log.Warn("keeping the drain timing; the server's is not valid", "error", err)
	case ds.Timing != a.timing:
		a.timing = ds.Timing
		a.dirty = true
	}
	if ds.KillForeign != a.killForeign {
		a.killForeign, a.dirty = ds.KillForeign, true
	}
	windows := slices.Clone(ds.Windows)
	a.windows, windows = windows, a.windows
	a.pruneWindowsLocked(now)
	if !slices.EqualFunc(a.windows, windows, sameWindow) {
		a.dirty = true
	}
	for _, id := range ds.Ack {
		j, ok := a.jobs[id]
		if !ok || (j.rec.Phase != phaseExited && j.rec.Phase != phaseRefused) {
			continue
		}
		a.ackLocked(id)
		j.rec.Acked = true
		a.dirty = true
		if j.rec.LogDone || j.rec.Phase == phaseRefused {
			a.forgetLocked(id)
		}
	}
}

func sameWindow(a, b core.Window) bool {
	return a.Reservation == b.Reservation && a.Owner == b.Owner && a.Start.Equal(b.Start) && a.End.Equal(b.End) && slices.Equal(a.GPUs, b.GPUs)
}

// admit is the first half of step 2: it writes down each new order as
// starting before anything starts, so that an agent that dies while
// starting a job does not start it again, and returns their jobs.
func (a *Agent) admit(orders []core.JobOrder) []*job {
	a.mu.Lock()
	var fresh []*job
	for _, o := range orders {
		if _, known := a.jobs[o.Job]; known || a.ackedSet[o.Job] || o.Job <= 0 {
			continue
		}
		j := newJob(record{Order: o, Phase: phaseStarting, ProgressFile: a.progressPath(o.Job)})
		a.jobs[o.Job] = j
		fresh = append(fresh, j)
	}
	a.mu.Unlock()
	if len(fresh) > 0 {
		a.persist()
	}
	return fresh
}

// start is the second half of step 2: it starts the job, or records why
// it could not as refused.
func (a *Agent) start(ctx context.Context, j *job) {
	o := j.rec.Order // set once, before j was shared
	id := o.Job
	spec := run.Spec{
		Command: o.Command, Env: o.Env, WorkDir: o.WorkDir, User: o.User, MinUID: a.minUID,
		GPUs: o.GPUs, JobID: core.JobName(id), Server: a.server,
		JobToken:     o.Token,
		ProgressFile: j.rec.ProgressFile,
		LogPath:      a.logPath(id),
		OnProgress:   a.onProgress(id),
		Cgroup:       a.cgroupPath(id),
		Nodes:        o.Nodes, Rank: o.Rank,
	}
	if a.runAsSelf {
		spec.User = ""
	}
	err := a.checkGPUs(o.GPUs)
	if err == nil {
		err = makeProgressDir(a.progressDir) // in case it was removed under the agent
	}
	var p *run.Process
	if err == nil {
		p, err = run.Start(ctx, spec)
	}
	if err != nil && ctx.Err() != nil {
		// The agent is stopping: the job was not started, and the next
		// agent starts it.
		a.mu.Lock()
		a.forgetLocked(id)
		a.mu.Unlock()
		a.persist()
		return
	}
	a.mu.Lock()
	now := a.now().UTC()
	if err != nil {
		j.rec.Phase, j.rec.Error, j.rec.EndedAt = phaseRefused, err.Error(), now
	} else {
		j.rec.Phase, j.rec.PID, j.rec.StartTicks, j.rec.StartedAt = phaseRunning, p.PID(), p.StartTicks(), now
		j.rec.Cgroup = p.Cgroup()
		j.proc = p
	}
	a.mu.Unlock()
	a.persist()
	log := a.log.With("job", core.JobName(id))
	if err != nil {
		log.Warn("refused a job", "error", err)
		a.wakeUp()
		return
	}
	a.noteCgroup(id, p.CgroupErr())
	log.Info("started a job", "pid", p.PID(), "user", o.User, "gpus", o.GPUs, "cgroup", p.Cgroup())
	a.setBusy(o.GPUs, p.PID(), true)
	a.wg.Go(func() { a.supervise(ctx, j) })
}

// checkGPUs refuses GPUs the node does not have, when the last read of
// the GPUs succeeded.
func (a *Agent) checkGPUs(uuids []string) error {
	s := a.sampler.Latest()
	if s.Err != nil || s.At.IsZero() {
		return nil
	}
	for _, u := range uuids {
		if !slices.ContainsFunc(s.Devices, func(d gpu.Device) bool { return d.UUID == u }) {
			return fmt.Errorf("GPU %s is not on node %s", u, a.name)
		}
	}
	return nil
}

// stopUnwanted is step 3.
func (a *Agent) stopUnwanted(ds core.DesiredState) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	orders := map[int64]core.StopOrder{}
	for _, s := range ds.Stop {
		if _, dup := orders[s.Job]; !dup {
			orders[s.Job] = s
		}
	}
	for _, id := range a.jobIDsLocked() {
		j := a.jobs[id]
		if j.rec.Phase != phaseRunning {
			continue
		}
		var want *core.StopOrder
		if s, ok := orders[id]; ok {
			want = &s
		} else if !slices.ContainsFunc(ds.Run, func(o core.JobOrder) bool { return o.Job == id }) {
			u := a.timing.Ladder(id, core.StopUnknown, now.Add(a.timing.Grace), now)
			if cur := j.rec.Stop; cur != nil && cur.Reason == core.StopUnknown {
				u = *cur // the grace counts from when the server first did not know it
			}
			want = &u
		}
		want = earlier(want, windowStop(j.rec.Order, j.rec.StartedAt, a.windows, a.timing, now))
		before := j.rec.Stop
		if a.setStopLocked(j, want) {
			a.logStopChange(id, before, j.rec.Stop)
		}
	}
}

// logStopChange says why a job's stop order changed.
func (a *Agent) logStopChange(id int64, before, after *core.StopOrder) {
	log := a.log.With("job", core.JobName(id))
	if after == nil {
		log.Info("the server withdrew the job's stop order before its ladder began", "reason", before.Reason)
		return
	}
	log.Info("stopping a job", "reason", after.Reason, "reservation", after.Reservation, "kill_at", after.KillAt, "deadline", after.Deadline)
}

// onProgress keeps the latest progress of job id read from its log,
// unless its progress file has given one: the job knows better than a bar
// in its output.
func (a *Agent) onProgress(id int64) func(progress.Report) {
	return func(r progress.Report) {
		a.mu.Lock()
		defer a.mu.Unlock()
		j, ok := a.jobs[id]
		if !ok || j.rec.FileProgress {
			return
		}
		if p, ok := progressReport(r, j.rec.Order.Epochs); ok {
			j.rec.Progress = &p
			a.dirty = true
		}
	}
}

// progressReport turns what a job's log says into what a heartbeat
// carries: a plain bar's step of total, else the fraction of the whole
// job. A fraction of the current epoch only (Lightning's default bar) is
// placed in the whole job by the job's epochs hint: epoch 3 of 10 half
// done is 25 %. Without the hint, or past the epochs it gives, it is no
// fraction of the job and is left out.
func progressReport(r progress.Report, epochs int64) (core.ProgressReport, bool) {
	if r.WithinEpoch() {
		if epochs <= 0 || int64(r.Epoch) > epochs {
			return core.ProgressReport{}, false
		}
		p := core.ProgressReport{Fraction: (float64(r.Epoch-1) + r.Fraction) / float64(epochs)}
		return p, p.Check() == nil
	}
	p := core.ProgressReport{Fraction: r.Fraction}
	if r.Total > 0 && r.Epoch == 0 && r.Epochs == 0 {
		p = core.ProgressReport{Step: r.Step, Total: r.Total}
	}
	return p, p.Check() == nil
}

// setBusy tells Config.Busy about a job's GPUs.
func (a *Agent) setBusy(uuids []string, pid int, busy bool) {
	if a.busy == nil {
		return
	}
	for _, u := range uuids {
		a.busy(u, pid, busy)
	}
}
