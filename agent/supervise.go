package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"syscall"
	"time"

	"github.com/gpucal/gpucal/agent/run"
	"github.com/gpucal/gpucal/core"
)

// supervisor watches one running job until its process group is gone.
// One goroutine runs it (Agent.supervise); only it calls the job's Stop.
type supervisor struct {
	a   *Agent
	j   *job
	log *slog.Logger

	leaderGone bool                // the job's first process has ended
	ladder     chan run.StopReport // while a Stop runs: its report
	cancel     context.CancelFunc  // ends the Stop that runs
	order      *core.StopOrder     // the order whose ladder runs; nil for a cleanup
}

// supervise begins the job's stop ladder when its first step is due,
// replaces it when an earlier order comes, stops what the job's first
// process left in its group when it ends by itself, and finishes the job
// once the group is gone. It returns early when ctx ends, leaving the job
// and its persisted ladder to the next agent.
func (a *Agent) supervise(ctx context.Context, j *job) {
	s := &supervisor{a: a, j: j, log: a.log.With("job", core.JobName(j.rec.Order.Job))}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	exited := j.proc.Done()
	for {
		s.next(ctx, timer)
		select {
		case <-ctx.Done():
			if s.ladder != nil {
				s.cancel()
				<-s.ladder
			}
			return
		case <-j.poke:
		case <-timer.C:
		case <-exited:
			exited = nil
			s.leaderGone = true
		case rep := <-s.ladder:
			s.ladder = nil
			s.cancel()
			if rep.Gone.IsZero() {
				if ctx.Err() != nil {
					return
				}
				continue // cut short for an earlier order
			}
			a.finish(ctx, j, rep, s.order)
			return
		}
	}
}

// next begins the ladder that is due, cuts short one an earlier order
// replaces, or sets timer for the first step of the order in force.
func (s *supervisor) next(ctx context.Context, timer *time.Timer) {
	a, j := s.a, s.j
	a.mu.Lock()
	var order *core.StopOrder
	if j.rec.Stop != nil {
		o := *j.rec.Stop
		order = &o
	}
	fired, begun := j.rec.Fired, j.rec.Begun
	a.mu.Unlock()

	switch {
	case s.ladder != nil:
		if s.order != nil && order != nil && order.Deadline.Before(s.order.Deadline) {
			s.cancel() // its report comes back without Gone; the earlier ladder follows
		}
	case order != nil && (begun || !s.leaderGone):
		plan := stopPlan(*order, j.rec.Order, fired)
		if first := firstStep(plan); !begun && time.Until(first) > 0 {
			timer.Reset(time.Until(first))
			return
		}
		s.begin(ctx, order, plan)
	case s.leaderGone:
		// What the first process left behind gets TERM now and KILL a
		// little later, but no later than a stop order in force wants.
		now := time.Now()
		kill := now.Add(a.leftoverKill)
		if order != nil && !order.KillAt.IsZero() && order.KillAt.Before(kill) {
			kill = order.KillAt
		}
		s.order = nil
		s.run(ctx, run.StopPlan{TermAt: now, KillAt: kill})
	default:
		timer.Stop()
	}
}

// begin starts the drain ladder of order: the job is draining from now,
// and each step is written down as it fires.
func (s *supervisor) begin(ctx context.Context, order *core.StopOrder, plan run.StopPlan) {
	a, j := s.a, s.j
	a.mu.Lock()
	resumed := j.rec.Begun
	j.rec.Begun, j.rec.Stopped = true, order.Reason
	a.dirty = true
	a.mu.Unlock()
	a.persist()
	if !resumed {
		s.log.Info("draining the job", "reason", order.Reason, "deadline", order.Deadline)
	}
	steps := plan
	plan.OnSent = func(sent run.SentSignal) {
		a.mu.Lock()
		markFired(&j.rec.Fired, steps, sent.Signal)
		a.dirty = true
		a.mu.Unlock()
		a.persist()
		s.log.Info("signalled the job's process group", "signal", signalName(sent.Signal), "before_deadline", order.Deadline.Sub(sent.At))
	}
	s.order = order
	s.run(ctx, plan)
}

// run starts a Stop of the job by plan.
func (s *supervisor) run(ctx context.Context, plan run.StopPlan) {
	lctx, cancel := context.WithCancel(ctx)
	ch, p := make(chan run.StopReport, 1), s.j.proc
	s.ladder, s.cancel = ch, cancel
	go func() { ch <- p.Stop(lctx, plan) }() // returns when the group is gone or lctx ends
}

// finish records how the job ended once its process group is gone, checks
// that none of its processes is left on its GPUs, and reports it exited.
// drain is the order whose ladder ended it, nil when it ended by itself.
func (a *Agent) finish(ctx context.Context, j *job, rep run.StopReport, drain *core.StopOrder) {
	res := j.proc.Wait() // the last of the log read
	a.readProgress(j)    // and the last the job wrote to its progress file
	a.mu.Lock()
	r := &j.rec
	id, pid, gpus := r.Order.Job, r.PID, r.Order.GPUs
	r.Phase = phaseChecking
	r.EndedAt = rep.Gone
	r.ExitCode, r.Signal = res.ExitCode, signalName(res.Signal)
	if res.Started.IsZero() {
		r.Error = "the agent was restarted while the job ran, so its exit status is unknown"
	}
	r.CPUSeconds = max(r.CPUSeconds, (res.UserTime + res.SystemTime).Seconds())
	r.MaxRSS = max(r.MaxRSS, res.MaxRSS)
	if u, ok := j.proc.Usage(); ok { // the cgroup's last count, every process of the job
		r.CPUSeconds = max(r.CPUSeconds, u.CPU().Seconds())
		r.MaxRSS = max(r.MaxRSS, u.MemoryPeak)
	}
	if drain != nil {
		m := rep.Margin
		r.Margin = &m
	}
	pids := append([]int{pid}, r.GPUPIDs...)
	a.dirty = true
	a.mu.Unlock()
	a.persist()

	a.setBusy(gpus, pid, false)
	left := a.awaitGPUsFree(ctx, gpus, pids)
	if ctx.Err() != nil {
		return // the next agent reports it
	}
	killed := slices.ContainsFunc(rep.Sent, func(s run.SentSignal) bool { return s.Signal == syscall.SIGKILL })
	log := a.log.With("job", core.JobName(id))
	if rep.CgroupErr != nil {
		log.Warn("the job is gone but its cgroup is left behind", "error", rep.CgroupErr)
	}
	for uuid, p := range left {
		log.Error("a process of the job is still on its GPU; reporting the GPU faulty", "gpu", uuid, "pid", p)
	}
	if drain != nil {
		result := drainClean
		switch {
		case len(left) > 0 || rep.Err != nil:
			result = drainFailed
		case rep.Margin < 0:
			result = drainLate
		}
		a.metrics.drains.WithLabelValues(result).Inc()
		log.Info("drained the job", "reason", drain.Reason, "result", result, "margin", rep.Margin, "signal", signalName(res.Signal), "error", rep.Err)
	} else {
		if len(rep.Sent) > 0 {
			log.Info("stopped the processes the job's first process left behind", "signals", len(rep.Sent))
		}
		log.Info("the job ended", "exit_code", res.ExitCode, "signal", signalName(res.Signal))
	}

	a.mu.Lock()
	for uuid, p := range left {
		a.faults[uuid] = fault{PID: p, Job: id, Text: faultText(p, id, killed)}
	}
	r.Phase = phaseExited
	a.dirty = true
	a.mu.Unlock()
	a.persist()
	a.wakeUp()
}

// faultText is the fault reported on a GPU that process pid of job id
// would not leave.
func faultText(pid int, id int64, killed bool) string {
	if killed {
		return fmt.Sprintf("process %d outlived SIGKILL of %s", pid, core.JobName(id))
	}
	return fmt.Sprintf("process %d of %s is still on the GPU after its process group ended", pid, core.JobName(id))
}

// awaitGPUsFree reads the GPUs until none of pids is on any of gpus, for
// up to gpuCheckFor, and returns those still there by GPU. The driver
// frees a GPU when the process is reaped, so this normally takes one read.
func (a *Agent) awaitGPUsFree(ctx context.Context, gpus []string, pids []int) map[string]int {
	if len(gpus) == 0 {
		return nil
	}
	deadline := time.Now().Add(a.gpuCheckFor)
	for {
		s := a.sampler.Refresh(ctx)
		left := map[string]int{}
		for _, d := range s.Devices {
			if !slices.Contains(gpus, d.UUID) {
				continue
			}
			for _, p := range d.Processes {
				if slices.Contains(pids, p.PID) {
					left[d.UUID] = p.PID
				}
			}
		}
		if s.Err == nil && len(left) == 0 {
			return nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			if s.Err != nil {
				a.log.Warn("could not check that a stopped job left its GPUs", "gpus", gpus, "error", s.Err)
			}
			return left
		}
		select {
		case <-ctx.Done():
		case <-time.After(a.gpuCheckEvery):
		}
	}
}

// resume takes over the jobs the state file lists: it adopts those still
// running, with their stop ladders as persisted, and reports the others
// ended. Then it applies the cached windows.
func (a *Agent) resume(ctx context.Context) {
	a.mu.Lock()
	var live, ended []*job
	for _, id := range a.jobIDsLocked() {
		j := a.jobs[id]
		r := &j.rec
		switch r.Phase {
		case phaseStarting:
			r.Phase, r.EndedAt, r.ExitCode = phaseExited, a.now().UTC(), -1
			r.Error = "the agent stopped while starting the job; it may have begun and been lost"
		case phaseChecking:
			r.Phase = phaseExited
		case phaseRunning:
			p, err := run.Adopt(run.Orphan{PID: r.PID, StartTicks: r.StartTicks, Cgroup: r.Cgroup, LogPath: a.logPath(id), OnProgress: a.onProgress(id)})
			if err != nil {
				r.Phase, r.EndedAt, r.ExitCode = phaseExited, a.now().UTC(), -1
				r.Error = "the job ended while the agent was not running, so its exit status is unknown"
				if !errors.Is(err, run.ErrGone) {
					r.Error = "the agent could not take the job over after a restart: " + err.Error()
				}
				a.log.Warn("a job ended while the agent was not running", "job", core.JobName(id), "pid", r.PID, "error", err)
				ended = append(ended, j)
				a.dirty = true
				continue
			}
			j.proc = p
			r.Cgroup = p.Cgroup() // "" if it went meanwhile
			live = append(live, j)
			a.log.Info("took over a running job", "job", core.JobName(id), "pid", r.PID, "cgroup", r.Cgroup, "draining", r.Begun)
		default:
			continue
		}
		a.dirty = true
	}
	a.mu.Unlock()
	for _, j := range ended {
		a.readProgress(j) // what it wrote while the agent was away
	}
	a.enforceCached()
	a.persistIfDirty()
	for _, j := range live {
		a.setBusy(j.rec.Order.GPUs, j.rec.PID, true)
		a.wg.Go(func() { a.supervise(ctx, j) })
	}
}
