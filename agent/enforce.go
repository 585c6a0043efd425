package agent

import (
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/gpucal/gpucal/agent/run"
	"github.com/gpucal/gpucal/core"
)

// windowStop is the stop the cached windows impose on a job that started
// at started: a preemptible job must be off a window's GPUs by its start
// when the window is not its own reservation's and opens after the job
// started. The earliest such window sets the deadline; the ladder is
// timing's, decided now. A job started inside an already-open window was
// put there by the server, knowing the window, and only the server's
// orders stop it. Nil when no window applies.
func windowStop(o core.JobOrder, started time.Time, windows []core.Window, timing core.DrainTiming, now time.Time) *core.StopOrder {
	if !o.Preemptible {
		return nil
	}
	var first *core.Window
	for i := range windows {
		w := &windows[i]
		switch {
		case o.Reservation != 0 && w.Reservation == o.Reservation:
		case !w.Start.After(started), !w.End.After(now):
		case !slices.ContainsFunc(w.GPUs, func(g string) bool { return slices.Contains(o.GPUs, g) }):
		case first == nil || w.Start.Before(first.Start):
			first = w
		}
	}
	if first == nil {
		return nil
	}
	s := timing.Ladder(o.Job, core.StopDrain, first.Start, now)
	s.Reservation = first.Reservation
	return &s
}

// earlier returns the stop order with the earlier deadline, a on a tie; a
// nil order is none.
func earlier(a, b *core.StopOrder) *core.StopOrder {
	if a == nil || (b != nil && b.Deadline.Before(a.Deadline)) {
		return b
	}
	return a
}

// setStopLocked makes want job j's stop order. Until the ladder in force
// has begun, want replaces it whatever it says — a later deadline (the
// reservation moved), none at all (the server withdrew it); want is what
// the server's answer and the fresh windows say, or, while the server is
// unreachable, the earlier of the order in force and the cached windows'.
// Once the ladder has begun it can only be brought forward: a begun
// ladder cannot be taken back. It reports whether the order changed.
// a.mu is held.
func (a *Agent) setStopLocked(j *job, want *core.StopOrder) bool {
	cur := j.rec.Stop
	switch {
	case want == nil && cur != nil && !j.rec.Begun:
		j.rec.Stop = nil
	case want != nil && !j.rec.Begun && (cur == nil || *cur != *want):
		w := *want
		j.rec.Stop = &w
	case want != nil && earlier(cur, want) != cur:
		w := *want
		j.rec.Stop = &w
	default:
		return false
	}
	a.dirty = true
	j.pokeSupervisor()
	return true
}

// enforceCached applies the cached windows to the running jobs, on top of
// the stop orders in force, when the server's answer is missing.
func (a *Agent) enforceCached() {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	a.pruneWindowsLocked(now)
	for _, id := range a.jobIDsLocked() {
		j := a.jobs[id]
		if j.rec.Phase != phaseRunning {
			continue
		}
		local := windowStop(j.rec.Order, j.rec.StartedAt, a.windows, a.timing, now)
		if a.setStopLocked(j, earlier(j.rec.Stop, local)) {
			a.log.Info("stopping a job before a cached window", "job", core.JobName(id), "reservation", local.Reservation, "deadline", local.Deadline)
		}
	}
}

// pruneWindowsLocked forgets the windows that have ended. a.mu is held.
func (a *Agent) pruneWindowsLocked(now time.Time) {
	a.windows = slices.DeleteFunc(a.windows, func(w core.Window) bool { return !w.End.After(now) })
}

// The steps of a ladder, as indexes of record.Fired.
const (
	stepCheckpoint = iota
	stepTerm
	stepKill
)

// stopPlan is the run.StopPlan of order s for the job ordered as o,
// without the steps already fired: an agent that resumes or replaces a
// ladder does not send a step twice.
func stopPlan(s core.StopOrder, o core.JobOrder, fired [3]bool) run.StopPlan {
	p := run.StopPlan{
		CheckpointAt: s.CheckpointAt,
		Checkpoint:   checkpointSignal(o.Checkpoint),
		TermAt:       s.TermAt,
		KillAt:       s.KillAt,
		Deadline:     s.Deadline,
	}
	if p.CheckpointAt.IsZero() && p.TermAt.IsZero() && p.KillAt.IsZero() {
		p.KillAt = s.Deadline // an order without steps still ends the job
	}
	for step, at := range []*time.Time{&p.CheckpointAt, &p.TermAt, &p.KillAt} {
		if fired[step] {
			*at = time.Time{}
		}
	}
	return p
}

// firstStep is when the first step of p is due; zero when p has none.
func firstStep(p run.StopPlan) time.Time {
	var first time.Time
	for _, at := range []time.Time{p.CheckpointAt, p.TermAt, p.KillAt} {
		if !at.IsZero() && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first
}

// markFired notes that sig went out for plan p: the first step not yet
// fired that sends sig (the checkpoint signal may be SIGTERM too; steps go
// in order).
func markFired(fired *[3]bool, p run.StopPlan, sig syscall.Signal) {
	steps := []struct {
		sig syscall.Signal
		at  time.Time
	}{{p.Checkpoint, p.CheckpointAt}, {syscall.SIGTERM, p.TermAt}, {syscall.SIGKILL, p.KillAt}}
	for i, s := range steps {
		if !fired[i] && !s.at.IsZero() && s.sig == sig {
			fired[i] = true
			return
		}
	}
}

// signals names the signals a job may end by or be asked to checkpoint
// with.
var signals = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT", syscall.SIGILL: "SIGILL",
	syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT", syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE",
	syscall.SIGKILL: "SIGKILL", syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM", syscall.SIGXCPU: "SIGXCPU",
	syscall.SIGXFSZ: "SIGXFSZ", syscall.SIGVTALRM: "SIGVTALRM", syscall.SIGPROF: "SIGPROF", syscall.SIGSYS: "SIGSYS",
}

// signalName is the report's name for sig: "SIGKILL"; "" for none.
func signalName(sig syscall.Signal) string {
	if sig == 0 {
		return ""
	}
	if n, ok := signals[sig]; ok {
		return n
	}
	return "SIG" + strconv.Itoa(int(sig))
}

// checkpointSignal is the signal a job asked to be checkpointed with;
// SIGUSR1 when it named none or one gpucal does not send (core refuses
// those at submit).
func checkpointSignal(name string) syscall.Signal {
	n, err := core.CheckpointSignal(name)
	if err != nil {
		return syscall.SIGUSR1
	}
	for sig, s := range signals {
		if s == n {
			return sig
		}
	}
	return syscall.SIGUSR1
}
