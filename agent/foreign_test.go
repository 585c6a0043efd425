package agent

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/gpucal/gpucal/agent/gpu"
	"github.com/gpucal/gpucal/core"
)

// TestForeignProcessesStopped: with the server's policy on, processes no
// job started on GPUs an open window holds are stopped — SIGTERM, then
// SIGKILL Timing.Term later for one that ignores it — while the window
// owner's own processes, a process of unknown owner and processes on
// other GPUs are left alone; with the policy off, nothing is signalled.
func TestForeignProcessesStopped(t *testing.T) {
	h := newHarness(t)
	spawn := func(script string) *exec.Cmd {
		cmd := exec.Command("sh", "-c", script)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }() // reap it, so that a killed one is gone rather than a zombie
		t.Cleanup(func() { cmd.Process.Kill(); <-done })
		return cmd
	}
	polite := spawn("exec sleep 30")
	obstinate := spawn(`trap '' TERM; while :; do sleep 0.05; done`)
	owners := spawn("exec sleep 30")
	unknown := spawn("exec sleep 30")
	elsewhere := spawn("exec sleep 30")
	bob := gpu.Owner{UID: 1001, User: "bob"}
	h.gpus.set(func(g *testGPUs) {
		g.foreign = map[string][]gpu.Process{
			"GPU-a": {
				{PID: polite.Process.Pid, Owner: bob, OwnerKnown: true},
				{PID: obstinate.Process.Pid, Owner: bob, OwnerKnown: true},
				{PID: owners.Process.Pid, Owner: gpu.Owner{UID: 1000, User: "alice"}, OwnerKnown: true},
				{PID: unknown.Process.Pid},
			},
			"GPU-b": {{PID: elsewhere.Process.Pid, Owner: bob, OwnerKnown: true}},
		}
	})
	alive := func(c *exec.Cmd) bool { return syscall.Kill(c.Process.Pid, 0) == nil }
	window := core.Window{Reservation: 7, Owner: "alice", GPUs: []string{"GPU-a"}, Start: time.Now().Add(-time.Second), End: time.Now().Add(time.Hour)}

	since := h.conn.set(core.DesiredState{Interval: 30 * time.Millisecond, Timing: fastTiming, Windows: []core.Window{window}})
	h.start()
	h.await(since+5, "a few rounds with the policy off", func(core.Heartbeat) bool { return true })
	if !alive(polite) || !alive(obstinate) {
		t.Fatal("foreign processes were signalled with the policy off")
	}

	h.conn.set(core.DesiredState{Interval: 30 * time.Millisecond, Timing: fastTiming, Windows: []core.Window{window}, KillForeign: true})
	start := time.Now()
	waitUntil(t, 5*time.Second, "the polite process to go", func() bool { return !alive(polite) })
	waitUntil(t, 5*time.Second, "the obstinate process to be killed", func() bool { return !alive(obstinate) })
	if took := time.Since(start); took < fastTiming.Term {
		t.Errorf("the process that ignores SIGTERM was gone after %s, before SIGKILL was due (%s)", took, fastTiming.Term)
	}
	if !alive(owners) || !alive(unknown) || !alive(elsewhere) {
		t.Errorf("alive: owner's %t, unknown owner's %t, other GPU's %t; want all left alone", alive(owners), alive(unknown), alive(elsewhere))
	}
	// The agent counts a signal after sending it: the process may be seen
	// gone a moment before the count moves.
	var term, kill float64
	for deadline := time.Now().Add(time.Second); ; time.Sleep(10 * time.Millisecond) {
		term, _ = h.lookMetric("gpucal_agent_foreign_signals_total", "signal", "SIGTERM")
		kill, _ = h.lookMetric("gpucal_agent_foreign_signals_total", "signal", "SIGKILL")
		if term == 2 && kill == 1 || time.Now().After(deadline) {
			break
		}
	}
	if term != 2 || kill != 1 {
		t.Errorf("foreign signals: %v SIGTERM, %v SIGKILL; want 2 and 1", term, kill)
	}
}

// waitUntil polls cond every 10 ms until it holds or timeout passes.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
	}
}
