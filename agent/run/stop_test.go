package run

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sentSignals lists the signals of a report, in order.
func sentSignals(rep StopReport) []syscall.Signal {
	var out []syscall.Signal
	for _, s := range rep.Sent {
		out = append(out, s.Signal)
	}
	return out
}

func sameSignals(a, b []syscall.Signal) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// checkLadder checks what every report must show: signals sent in order of
// time, none before its planned time, and the group seen empty after the
// last of them.
func checkLadder(t *testing.T, plan StopPlan, rep StopReport) {
	t.Helper()
	if rep.Err != nil {
		t.Errorf("Stop: %v", rep.Err)
	}
	planned := map[syscall.Signal]time.Time{syscall.SIGTERM: plan.TermAt, syscall.SIGKILL: plan.KillAt}
	planned[plan.Checkpoint] = plan.CheckpointAt
	if plan.Checkpoint == 0 {
		planned[syscall.SIGUSR1] = plan.CheckpointAt
	}
	for i, s := range rep.Sent {
		if s.At.Before(planned[s.Signal]) {
			t.Errorf("%v sent at %v, before its time %v", s.Signal, s.At, planned[s.Signal])
		}
		if i > 0 && s.At.Before(rep.Sent[i-1].At) {
			t.Errorf("%v sent before %v", s.Signal, rep.Sent[i-1].Signal)
		}
	}
	if rep.Gone.IsZero() {
		t.Fatalf("the group was never seen empty: %+v", rep)
	}
	if n := len(rep.Sent); n > 0 && rep.Gone.Before(rep.Sent[n-1].At) {
		t.Errorf("gone at %v, before the last signal at %v", rep.Gone, rep.Sent[n-1].At)
	}
}

// TestStopForkingJobIgnoringTerm is the drain the end-to-end test
// describes: a job that ignores the checkpoint signal and SIGTERM and has
// forked children is killed at KillAt, and the group is empty before the
// window starts.
func TestStopForkingJobIgnoringTerm(t *testing.T) {
	p, log := start(t, Spec{}, `trap "" TERM USR1; sleep 60 & sleep 60 & echo ready; wait`)
	awaitLog(t, log, "ready")
	now := time.Now()
	plan := StopPlan{
		CheckpointAt: now,
		TermAt:       now.Add(200 * time.Millisecond),
		KillAt:       now.Add(500 * time.Millisecond),
		Deadline:     now.Add(5 * time.Second), // generous: a loaded machine must not flake
	}
	rep := p.Stop(context.Background(), plan)
	checkLadder(t, plan, rep)
	want := []syscall.Signal{syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGKILL}
	if got := sentSignals(rep); !sameSignals(got, want) {
		t.Errorf("sent %v, want %v", got, want)
	}
	if rep.Margin < 0 {
		t.Errorf("margin %v: the group outlived the deadline", rep.Margin)
	}
	// kill(-pgid, 0) may still find the children as zombies when nobody
	// reaps them (PID 1 of this container does not), so ask /proc.
	if liveInGroup(p.PID()) {
		t.Error("a live process is left in the group after Stop")
	}
	if r := p.Wait(); r.Signal != syscall.SIGKILL {
		t.Errorf("the job ended with %+v, want killed by SIGKILL", r)
	}
	t.Logf("killed at %v, gone %v later, margin %v before the deadline",
		rep.Sent[2].At.Sub(now), rep.Gone.Sub(rep.Sent[2].At), rep.Margin)
}

// TestStopChildrenOutliveLeader: the first process dies at the checkpoint
// signal, its child ignores everything but SIGKILL; the ladder goes on
// until the child is gone too.
func TestStopChildrenOutliveLeader(t *testing.T) {
	// The child says ready once its trap is set.
	p, log := start(t, Spec{}, `(trap "" TERM USR1; echo ready; exec sleep 60) & wait`)
	awaitLog(t, log, "ready")
	now := time.Now()
	plan := StopPlan{CheckpointAt: now, TermAt: now.Add(200 * time.Millisecond), KillAt: now.Add(400 * time.Millisecond)}
	rep := p.Stop(context.Background(), plan)
	checkLadder(t, plan, rep)
	want := []syscall.Signal{syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGKILL}
	if got := sentSignals(rep); !sameSignals(got, want) {
		t.Errorf("sent %v, want %v: the child outlived its parent and needed the kill", got, want)
	}
	r := p.Wait()
	if r.Signal != syscall.SIGUSR1 {
		t.Errorf("the first process ended with %+v, want killed by SIGUSR1", r)
	}
	if !r.Ended.Before(rep.Gone) {
		t.Errorf("the first process ended at %v, not before the group at %v", r.Ended, rep.Gone)
	}
	// Without a Deadline the margin is measured against KillAt: the kill
	// takes a moment, so it is a little below 0.
	if rep.Margin > 0 || rep.Margin < -5*time.Second {
		t.Errorf("margin %v, want a little below 0 (gone just after KillAt)", rep.Margin)
	}
}

// TestStopExitAtCheckpoint: a job that saves its state and exits at its
// checkpoint signal ends the ladder there.
func TestStopExitAtCheckpoint(t *testing.T) {
	tests := []struct {
		name   string
		signal syscall.Signal
		want   syscall.Signal
	}{
		{"default SIGUSR1", 0, syscall.SIGUSR1},
		{"SIGUSR2", syscall.SIGUSR2, syscall.SIGUSR2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Short sleeps in a loop, not "sleep 60 & wait": a background
			// child forked just before the signal can take it in the
			// shell's handler before its exec, and then sleep on.
			p, log := start(t, Spec{}, `trap "echo checkpointed; exit 0" USR1 USR2; echo ready; while :; do sleep 0.05; done`)
			awaitLog(t, log, "ready")
			now := time.Now()
			plan := StopPlan{CheckpointAt: now, Checkpoint: tt.signal, TermAt: now.Add(30 * time.Second), KillAt: now.Add(60 * time.Second)}
			rep := p.Stop(context.Background(), plan)
			checkLadder(t, plan, rep)
			if got := sentSignals(rep); !sameSignals(got, []syscall.Signal{tt.want}) {
				t.Errorf("sent %v, want only %v", got, tt.want)
			}
			if !rep.Gone.Before(plan.TermAt) || rep.Margin <= 0 {
				t.Errorf("gone at %v with margin %v; want before TERM and a positive margin", rep.Gone, rep.Margin)
			}
			if r := p.Wait(); r.ExitCode != 0 {
				t.Errorf("the job ended with %+v, want exit 0", r)
			}
			awaitLog(t, log, "checkpointed")
		})
	}
}

// TestStopPastTimes: an agent restarted mid-drain passes the persisted
// times, all in the past: the steps fire at once, in order.
func TestStopPastTimes(t *testing.T) {
	p, log := start(t, Spec{}, `trap "" TERM USR1; sleep 60 & echo ready; wait`)
	awaitLog(t, log, "ready")
	now := time.Now()
	plan := StopPlan{CheckpointAt: now.Add(-3 * time.Second), TermAt: now.Add(-2 * time.Second), KillAt: now.Add(-time.Second)}
	rep := p.Stop(context.Background(), plan)
	checkLadder(t, plan, rep)
	want := []syscall.Signal{syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGKILL}
	if got := sentSignals(rep); !sameSignals(got, want) {
		t.Errorf("sent %v, want %v", got, want)
	}
	if rep.Margin > -time.Second {
		t.Errorf("margin %v; KillAt was a second ago", rep.Margin)
	}
}

func TestStopSkipsZeroTimes(t *testing.T) {
	p, log := start(t, Spec{}, `sleep 60 & echo ready; wait`)
	awaitLog(t, log, "ready")
	plan := StopPlan{TermAt: time.Now()}
	rep := p.Stop(context.Background(), plan)
	checkLadder(t, plan, rep)
	if got := sentSignals(rep); !sameSignals(got, []syscall.Signal{syscall.SIGTERM}) {
		t.Errorf("sent %v, want only SIGTERM", got)
	}
	if rep.Margin != 0 {
		t.Errorf("margin %v without KillAt or Deadline, want 0", rep.Margin)
	}
}

func TestStopContextEnds(t *testing.T) {
	p, log := start(t, Spec{}, `trap "" TERM; sleep 60 & echo ready; wait`)
	awaitLog(t, log, "ready")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	now := time.Now()
	rep := p.Stop(ctx, StopPlan{TermAt: now, KillAt: now.Add(time.Minute)})
	if got := sentSignals(rep); !sameSignals(got, []syscall.Signal{syscall.SIGTERM}) {
		t.Errorf("sent %v, want only SIGTERM before ctx ended", got)
	}
	if !rep.Gone.IsZero() || rep.Margin != 0 {
		t.Errorf("gone %v, margin %v; want neither: the job still runs", rep.Gone, rep.Margin)
	}
	if err := syscall.Kill(-p.PID(), 0); err != nil {
		t.Errorf("kill(-pgid, 0) = %v; the job should still run", err)
	}
}

func TestStopFinishedJob(t *testing.T) {
	p, log := start(t, Spec{}, `echo done`)
	p.Wait()
	now := time.Now()
	plan := StopPlan{CheckpointAt: now, TermAt: now, KillAt: now.Add(time.Minute)}
	rep := p.Stop(context.Background(), plan)
	checkLadder(t, plan, rep)
	if len(rep.Sent) != 0 {
		t.Errorf("sent %v to a job that had ended", sentSignals(rep))
	}
	if !strings.Contains(readLog(t, log), "done") {
		t.Error("log lost")
	}
}

func TestLiveInGroup(t *testing.T) {
	p, log := start(t, Spec{}, `sleep 60 & echo ready; wait`)
	awaitLog(t, log, "ready")
	if !liveInGroup(p.PID()) {
		t.Error("liveInGroup = false for a running job")
	}
	_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
	p.Wait()
	rep := p.Stop(context.Background(), StopPlan{})
	if rep.Gone.IsZero() {
		t.Error("the killed group was never seen empty")
	}
	if liveInGroup(p.PID()) {
		t.Error("liveInGroup = true after the group was killed and seen gone")
	}
}
