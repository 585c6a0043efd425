package run

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"
)

// pollEvery is how often Stop looks whether the job's process group is
// empty yet. Once the first process has ended, each look may read /proc,
// so it is not much more often than this.
const pollEvery = 50 * time.Millisecond

// StopPlan is the enforcement ladder of one drain order. A zero time skips
// its step; a time already past fires at once. Steps fire in the order
// checkpoint, TERM, KILL, each at its time or later.
type StopPlan struct {
	CheckpointAt time.Time
	// Checkpoint is the signal asking the job to save its state; 0 is
	// SIGUSR1.
	Checkpoint syscall.Signal
	TermAt     time.Time // SIGTERM to the group
	KillAt     time.Time // SIGKILL to the group
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
	// Gone is when Stop saw the group empty; zero when ctx ended first.
	Gone time.Time
	// Err is the first error sending a signal, other than finding the
	// group empty (a signal that failed is not in Sent).
	Err error
	// Margin is Deadline − Gone (KillAt − Gone without a Deadline): 0 or
	// more means the job's processes were all gone in time. It is 0 when
	// Gone is zero or the plan has neither time.
	Margin time.Duration
}

// Stop takes the job's process group down the ladder plan describes and
// returns once no process of the group is left, children that outlived
// the first process included, or when ctx ends. A job that ends on its own
// (at its checkpoint signal, say) ends the ladder there. Calls to Stop are
// taken one at a time.
func (p *Process) Stop(ctx context.Context, plan StopPlan) StopReport {
	p.stopMu.Lock()
	defer p.stopMu.Unlock()
	if plan.Checkpoint == 0 {
		plan.Checkpoint = syscall.SIGUSR1
	}
	steps := []SentSignal{{plan.Checkpoint, plan.CheckpointAt}, {syscall.SIGTERM, plan.TermAt}, {syscall.SIGKILL, plan.KillAt}}
	var rep StopReport
	for _, s := range steps {
		if s.At.IsZero() {
			continue
		}
		if !p.awaitUntil(ctx, s.At) {
			return p.finish(rep, plan)
		}
		err := syscall.Kill(-p.pid, s.Signal)
		if errors.Is(err, syscall.ESRCH) {
			break // emptied in the meantime
		}
		if err != nil {
			if rep.Err == nil {
				rep.Err = fmt.Errorf("sending %v to process group %d: %w", s.Signal, p.pid, err)
			}
			continue
		}
		sent := SentSignal{s.Signal, time.Now().UTC()}
		rep.Sent = append(rep.Sent, sent)
		if plan.OnSent != nil {
			plan.OnSent(sent)
		}
	}
	p.awaitUntil(ctx, time.Time{})
	return p.finish(rep, plan)
}

// awaitUntil waits until at (forever if at is zero), the group is empty or
// ctx ends. It reports whether the group is still there and ctx is not
// done: whether the ladder goes on.
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

// finish notes when the group was seen empty, if it was.
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
	return rep
}

// groupGone reports whether no live process is left in the job's process
// group. kill(-pgid, 0) still finds zombies, and a zombie left to a parent
// that never reaps it (PID 1 in some containers) would keep the group
// "alive" forever, so when kill finds the group and the first process has
// ended, /proc is asked whether any member is more than a zombie. While
// the first process runs, the group is not empty.
func (p *Process) groupGone() bool {
	if err := syscall.Kill(-p.pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	select {
	case <-p.done:
		return !liveInGroup(p.pid)
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
