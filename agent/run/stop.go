package run

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"time"
)

// pollEvery is how often Stop looks whether the job is gone yet. Once the
// first process has ended, each look may read /proc, so it is not much
// more often than this.
const pollEvery = 50 * time.Millisecond

// StopPlan is the enforcement ladder of one drain order. A zero time skips
// its step; a time already past fires at once. Steps fire in the order
// checkpoint, TERM, KILL, each at its time or later.
type StopPlan struct {
	CheckpointAt time.Time
	// Checkpoint is the signal asking the job to save its state; 0 is
	// SIGUSR1. It goes to the process group only.
	Checkpoint syscall.Signal
	// TermAt: SIGTERM to the group, and to the other processes of the
	// job's cgroup.
	TermAt time.Time
	// KillAt: SIGKILL to the group, and the whole cgroup killed
	// (cgroup.kill).
	KillAt time.Time
	// Deadline is when the group must be empty, the start of the window
	// the drain makes room for; zero means KillAt. It only measures: a
	// group killed at KillAt is gone a little after KillAt, so a Deadline
	// a little after KillAt is what makes a Margin of 0 or more possible.
	Deadline time.Time
	// OnSent, if not nil, is told of each signal right after it went, from
	// Stop's goroutine, so that an agent can write down which steps are
	// taken before it might be restarted. It must not block long.
	OnSent func(SentSignal)
}

// SentSignal is one step of the ladder taken.
type SentSignal struct {
	Signal syscall.Signal
	At     time.Time
}

// StopReport is what Stop did and saw.
type StopReport struct {
	Sent []SentSignal // in the order sent
	// Gone is when Stop saw the job gone: no live process left in its
	// group, nor in its cgroup; zero when ctx ended first.
	Gone time.Time
	// Err is the first error sending a signal, other than finding the
	// job gone (a signal that reached no process is not in Sent).
	Err error
	// Margin is Deadline − Gone (KillAt − Gone without a Deadline): 0 or
	// more means the job's processes were all gone in time. It is 0 when
	// Gone is zero or the plan has neither time.
	Margin time.Duration
	// CgroupErr says why the job's emptied cgroup could not be removed;
	// the directory is left behind, the job is gone all the same.
	CgroupErr error
}

// Stop takes the job down the ladder plan describes and returns once no
// process of it is left — none in its process group and none in its
// cgroup, children that outlived the first process or left its group
// (setsid, a double fork) included — or when ctx ends. A job that ends on
// its own (at its checkpoint signal, say) ends the ladder there. Once the
// job is gone Stop removes its cgroup, after a last reading of its Usage.
// Calls to Stop are taken one at a time.
func (p *Process) Stop(ctx context.Context, plan StopPlan) StopReport {
	p.stopMu.Lock()
	defer p.stopMu.Unlock()
	if plan.Checkpoint == 0 {
		plan.Checkpoint = syscall.SIGUSR1
	}
	steps := []SentSignal{{plan.Checkpoint, plan.CheckpointAt}, {syscall.SIGTERM, plan.TermAt}, {syscall.SIGKILL, plan.KillAt}}
	var rep StopReport
	for i, s := range steps {
		if s.At.IsZero() {
			continue
		}
		if !p.awaitUntil(ctx, s.At) {
			return p.finish(rep, plan)
		}
		reached, err := p.signal(s.Signal, i == 0)
		if err != nil && rep.Err == nil {
			rep.Err = err
		}
		if !reached {
			continue // emptied in the meantime, or failed; the next look tells
		}
		sent := SentSignal{s.Signal, time.Now().UTC()}
		rep.Sent = append(rep.Sent, sent)
		if plan.OnSent != nil {
			plan.OnSent(sent)
		}
	}
	if p.cgroup != "" && slices.ContainsFunc(rep.Sent, func(s SentSignal) bool { return s.Signal == syscall.SIGKILL }) {
		// Killed process by process (without cgroup.kill), the cgroup may
		// have forked a new one meanwhile: kill again at every look.
		for p.awaitUntil(ctx, time.Now().Add(pollEvery)) {
			_, _ = signalCgroup(p.cgroup, syscall.SIGKILL, p.pid)
		}
	}
	p.awaitUntil(ctx, time.Time{})
	return p.finish(rep, plan)
}

// signal sends sig to the job's process group and, unless groupOnly, to
// the rest of its cgroup. It reports whether any process was sent it, and
// the first error other than finding nobody. p.stopMu is held.
func (p *Process) signal(sig syscall.Signal, groupOnly bool) (reached bool, err error) {
	if !p.groupEmpty {
		switch e := syscall.Kill(-p.pid, sig); {
		case e == nil:
			reached = true
		case !errors.Is(e, syscall.ESRCH):
			err = fmt.Errorf("sending %v to process group %d: %w", sig, p.pid, e)
		}
	}
	if p.cgroup == "" || groupOnly {
		return reached, err
	}
	n, e := signalCgroup(p.cgroup, sig, p.pid)
	if e != nil && err == nil {
		err = fmt.Errorf("sending %v to cgroup %s: %w", sig, p.cgroup, e)
	}
	return reached || n > 0, err
}

// awaitUntil waits until at (forever if at is zero), the job is gone or
// ctx ends. It reports whether the job is still there and ctx is not
// done: whether the ladder goes on. p.stopMu is held.
func (p *Process) awaitUntil(ctx context.Context, at time.Time) bool {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	exited := p.done // nil once seen closed: children may outlive the first process
	for {
		if ctx.Err() != nil || p.groupGone() {
			return false
		}
		if !at.IsZero() && !time.Now().Before(at) {
			return true
		}
		select {
		case <-ctx.Done():
		case <-exited:
			exited = nil
		case <-t.C:
		}
	}
}

// finish notes when the job was seen gone, if it was, and then removes
// its cgroup. p.stopMu is held.
func (p *Process) finish(rep StopReport, plan StopPlan) StopReport {
	if !p.groupGone() {
		return rep
	}
	rep.Gone = time.Now().UTC()
	deadline := plan.Deadline
	if deadline.IsZero() {
		deadline = plan.KillAt
	}
	if !deadline.IsZero() {
		rep.Margin = deadline.Sub(rep.Gone)
	}
	if p.cgroup != "" && !p.cgroupRemoved {
		p.Usage() // the last reading, kept
		rep.CgroupErr = removeCgroup(p.cgroup)
		p.cgroupRemoved = rep.CgroupErr == nil
	}
	return rep
}

// groupGone reports whether no live process of the job is left: none in
// its cgroup (when it has one) and none in its process group. p.stopMu
// is held.
func (p *Process) groupGone() bool {
	if p.cgroup != "" && !cgroupEmpty(p.cgroup) {
		return false
	}
	return p.pgroupGone()
}

// pgroupGone reports whether no live process is left in the job's
// process group. kill(-pgid, 0) still finds zombies, and a zombie left to
// a parent that never reaps it (PID 1 in some containers) would keep the
// group "alive" forever, so when kill finds the group and the first
// process has ended, /proc is asked whether any member is more than a
// zombie. While the first process runs, the group is not empty. Once seen
// empty, it stays so: its ID is free for the kernel to give away.
// p.stopMu is held.
func (p *Process) pgroupGone() bool {
	if p.groupEmpty {
		return true
	}
	if err := syscall.Kill(-p.pid, 0); errors.Is(err, syscall.ESRCH) {
		p.groupEmpty = true
		return true
	}
	select {
	case <-p.done:
		p.groupEmpty = !liveInGroup(p.pid)
		return p.groupEmpty
	default:
		return false
	}
}

// liveInGroup reports whether /proc lists a process of group pgid that is
// not a zombie. When /proc cannot be read it answers true: Stop then
// relies on kill alone.
func liveInGroup(pgid int) bool {
	procs, err := Processes()
	if err != nil {
		return true
	}
	for _, s := range procs {
		if s.PGID == pgid && s.Live() {
			return true
		}
	}
	return false
}
