package agent

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucal/gpucal/core"
)

// obstinate ignores the checkpoint signal and SIGTERM and has forked
// children: only SIGKILL to the whole group ends it.
const obstinate = `trap '' TERM USR1; sleep 1000 & sleep 1000 & echo ready; wait`

// TestStopOrderDrainsObstinateJob: the server's stop order takes a job
// down its ladder; the job is reported draining, then exited by SIGKILL
// before the deadline, every process of its group gone and its GPU free.
func TestStopOrderDrainsObstinateJob(t *testing.T) {
	h := newHarness(t)
	o := shJob(8, obstinate, "GPU-a")
	h.conn.set(core.DesiredState{Run: []core.JobOrder{o}, Timing: fastTiming})
	h.start()
	running := h.awaitJob(0, 8, "running", func(r core.JobReport) bool { return r.State == core.RunRunning })
	h.awaitLog(8, "ready")

	now := time.Now()
	stop := core.StopOrder{
		Job: 8, Reason: core.StopDrain, Reservation: 3,
		CheckpointAt: now.Add(200 * time.Millisecond), TermAt: now.Add(500 * time.Millisecond),
		KillAt: now.Add(time.Second), Deadline: now.Add(2 * time.Second),
	}
	n := h.conn.set(core.DesiredState{Run: []core.JobOrder{o}, Stop: []core.StopOrder{stop}, Timing: fastTiming})
	h.awaitJob(n, 8, "draining", func(r core.JobReport) bool { return r.State == core.RunDraining })
	r := h.awaitJob(n, 8, "exited", func(r core.JobReport) bool { return r.State == core.RunExited })

	if r.Stopped != core.StopDrain || r.Signal != "SIGKILL" || r.ExitCode != -1 || r.PID != running.PID {
		t.Errorf("report %+v; want pid %d stopped for a drain, killed by SIGKILL", r, running.PID)
	}
	if r.Margin == nil || *r.Margin < 0 || r.EndedAt.After(stop.Deadline) || r.EndedAt.Before(stop.KillAt) {
		t.Errorf("ended %v, margin %v; want between the kill at %v and the deadline %v", r.EndedAt, r.Margin, stop.KillAt, stop.Deadline)
	}
	if liveGroup(t, r.PID) {
		t.Error("a process of the job's group outlived the drain")
	}
	if g := gpuIn(h.last(), "GPU-a"); len(g.Processes) != 0 || g.Fault != "" {
		t.Errorf("GPU-a after the drain: %+v; want no process and no fault", g)
	}
	if got := h.metric("gpucal_agent_drains_total", "result", drainClean); got != 1 {
		t.Errorf("gpucal_agent_drains_total{result=clean} = %v, want 1", got)
	}
}

// notesCheckpoint ignores SIGTERM, notes each checkpoint signal in its
// log, and has children that ignore both.
const notesCheckpoint = `echo started; trap '' TERM USR1; sleep 1000 & sleep 1000 &
trap 'echo checkpoint' USR1; echo ready; while :; do sleep 0.05; done`

// TestEarlierOrderReplacesLadder: an order with an earlier deadline
// replaces a ladder under way; the steps already taken are not repeated.
func TestEarlierOrderReplacesLadder(t *testing.T) {
	h := newHarness(t)
	o := shJob(21, notesCheckpoint)
	h.conn.set(core.DesiredState{Run: []core.JobOrder{o}, Timing: fastTiming})
	h.start()
	h.awaitLog(21, "ready")
	now := time.Now()
	late := core.StopOrder{Job: 21, Reason: core.StopCancelled, CheckpointAt: now, TermAt: now.Add(9 * time.Second), KillAt: now.Add(9 * time.Second), Deadline: now.Add(10 * time.Second)}
	h.conn.set(core.DesiredState{Run: []core.JobOrder{o}, Stop: []core.StopOrder{late}, Timing: fastTiming})
	h.awaitLog(21, "checkpoint")
	now = time.Now()
	soon := core.StopOrder{Job: 21, Reason: core.StopDrain, Reservation: 8, CheckpointAt: now, TermAt: now, KillAt: now.Add(300 * time.Millisecond), Deadline: now.Add(time.Second)}
	n := h.conn.set(core.DesiredState{Run: []core.JobOrder{o}, Stop: []core.StopOrder{soon}, Timing: fastTiming})
	r := h.awaitJob(n, 21, "exited", func(r core.JobReport) bool { return r.State == core.RunExited })
	if r.Stopped != core.StopDrain || r.EndedAt.After(soon.Deadline) || r.Margin == nil || *r.Margin < 0 {
		t.Errorf("report %+v; want drained by the earlier order's deadline %v", r, soon.Deadline)
	}
	if got := strings.Count(readFile(t, logFile(h, 21)), "checkpoint"); got != 1 {
		t.Errorf("checkpointed %d times, want once", got)
	}
}

// TestWithdrawnOrder: a stop order the server drops before its ladder
// begins is not carried out.
func TestWithdrawnOrder(t *testing.T) {
	h := newHarness(t)
	o := shJob(22, notesCheckpoint)
	h.conn.set(core.DesiredState{Run: []core.JobOrder{o}, Timing: fastTiming})
	h.start()
	h.awaitLog(22, "ready")
	now := time.Now()
	stop := core.StopOrder{Job: 22, Reason: core.StopDrain, CheckpointAt: now.Add(500 * time.Millisecond), TermAt: now.Add(time.Second), KillAt: now.Add(time.Second), Deadline: now.Add(time.Second)}
	n := h.conn.set(core.DesiredState{Run: []core.JobOrder{o}, Stop: []core.StopOrder{stop}, Timing: fastTiming})
	h.await(n+1, "the order received", func(core.Heartbeat) bool { return true })
	n = h.conn.set(core.DesiredState{Run: []core.JobOrder{o}, Timing: fastTiming})
	h.await(n+1, "the withdrawal received", func(core.Heartbeat) bool { return true })
	h.await(n, "a heartbeat after the order's deadline", func(hb core.Heartbeat) bool { return time.Now().After(stop.Deadline.Add(200 * time.Millisecond)) })
	if r, _ := jobIn(h.last(), 22); r.State != core.RunRunning || strings.Contains(h.conn.log(22), "checkpoint") {
		t.Errorf("report %+v, log %q; want it running, never signalled", r, h.conn.log(22))
	}
}

// TestUnknownJobStopped: a job the server lists in neither Run nor Stop is
// stopped with reason unknown, by the server's drain timing.
func TestUnknownJobStopped(t *testing.T) {
	h := newHarness(t)
	h.conn.set(core.DesiredState{Run: []core.JobOrder{shJob(9, obstinate)}, Timing: fastTiming})
	h.start()
	h.awaitJob(0, 9, "running", func(r core.JobReport) bool { return r.State == core.RunRunning })
	h.awaitLog(9, "ready")
	forgotten := time.Now()
	n := h.conn.set(core.DesiredState{Timing: fastTiming})
	r := h.awaitJob(n, 9, "exited", func(r core.JobReport) bool { return r.State == core.RunExited })
	if r.Stopped != core.StopUnknown || r.Signal != "SIGKILL" {
		t.Errorf("report %+v; want stopped as unknown, by SIGKILL", r)
	}
	// The ladder gives Grace: the kill comes Grace − Kill after the server forgot it.
	if d := r.EndedAt.Sub(forgotten); d < fastTiming.Grace-fastTiming.Kill {
		t.Errorf("gone %v after the server forgot it; the ladder grants %v", d, fastTiming.Grace-fastTiming.Kill)
	}
	if liveGroup(t, r.PID) {
		t.Error("a process of the job's group is left")
	}
}

// TestCutOffServerWindowDrains: the server is cut off after it sent a
// window; the agent drains the preemptible job on the window's GPU by the
// window's start from its cache, and leaves a job on another GPU alone.
func TestCutOffServerWindowDrains(t *testing.T) {
	h := newHarness(t)
	onA, onB := shJob(11, obstinate, "GPU-a"), shJob(12, obstinate, "GPU-b")
	onA.Preemptible, onB.Preemptible = true, true
	h.conn.set(core.DesiredState{Run: []core.JobOrder{onA, onB}, Timing: fastTiming})
	h.start()
	h.awaitJob(0, 11, "running", func(r core.JobReport) bool { return r.State == core.RunRunning })
	h.awaitJob(0, 12, "running", func(r core.JobReport) bool { return r.State == core.RunRunning })
	h.awaitLog(11, "ready")

	w := core.Window{Reservation: 5, Owner: "ada", GPUs: []string{"GPU-a"}, Start: time.Now().Add(2 * time.Second)}
	w.End = w.Start.Add(time.Hour)
	n := h.conn.set(core.DesiredState{Run: []core.JobOrder{onA, onB}, Windows: []core.Window{w}, Timing: fastTiming})
	h.await(n+1, "a heartbeat after the window was sent", func(core.Heartbeat) bool { return true })
	h.conn.setDown(true)

	r := h.awaitJob(n, 11, "exited", func(r core.JobReport) bool { return r.State == core.RunExited })
	if r.Stopped != core.StopDrain || r.Margin == nil || *r.Margin < 0 || r.EndedAt.After(w.Start) {
		t.Errorf("report %+v, margin %v; want drained before the window's start %v", r, r.Margin, w.Start)
	}
	if b, _ := jobIn(h.last(), 12); b.State != core.RunRunning {
		t.Errorf("the job on GPU-b is %s, want running", b.State)
	}
}

// TestFaultAfterDrain: a process that stays on the GPU after its job's
// group was killed makes the GPU faulty until it is gone.
func TestFaultAfterDrain(t *testing.T) {
	h := newHarness(t)
	h.gpus.set(func(g *testGPUs) { g.sticky["GPU-a"] = true })
	h.conn.set(core.DesiredState{Run: []core.JobOrder{shJob(13, obstinate, "GPU-a")}, Timing: fastTiming})
	h.start(func(a *Agent) { a.gpuCheckFor = 200 * time.Millisecond })
	running := h.awaitJob(0, 13, "running", func(r core.JobReport) bool { return r.State == core.RunRunning })
	h.awaitLog(13, "ready")
	now := time.Now()
	n := h.conn.set(core.DesiredState{Stop: []core.StopOrder{{Job: 13, Reason: core.StopCancelled, KillAt: now, Deadline: now.Add(time.Second)}}, Timing: fastTiming})
	h.awaitJob(n, 13, "exited", func(r core.JobReport) bool { return r.State == core.RunExited })
	want := fmt.Sprintf("process %d outlived SIGKILL of j13", running.PID)
	h.await(n, "GPU-a faulty", func(hb core.Heartbeat) bool { return gpuIn(hb, "GPU-a").Fault == want })
	if got := h.metric("gpucal_agent_drains_total", "result", drainFailed); got != 1 {
		t.Errorf("gpucal_agent_drains_total{result=failed} = %v, want 1", got)
	}
	h.gpus.set(func(g *testGPUs) { g.procs["GPU-a"] = nil })
	m := h.beats()
	h.await(m, "the fault cleared", func(hb core.Heartbeat) bool { return gpuIn(hb, "GPU-a").Fault == "" })
}

// TestNVMLError: a failed read of the GPUs is reported, not fatal.
func TestNVMLError(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.gpus.set(func(g *testGPUs) { g.err = fmt.Errorf("GPU 1 (GPU-b): GetMemoryInfo: ERROR_UNKNOWN") })
	hb := h.await(0, "the NVML error", func(hb core.Heartbeat) bool { return hb.NVML != "" })
	if !strings.Contains(hb.NVML, "ERROR_UNKNOWN") || len(hb.GPUs) != 0 {
		t.Errorf("heartbeat NVML %q with %d GPUs; want the error and none", hb.NVML, len(hb.GPUs))
	}
}

func TestWindowStop(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	started := t0.Add(-time.Hour)
	job := core.JobOrder{Job: 1, GPUs: []string{"GPU-a", "GPU-b"}, Preemptible: true}
	window := func(res int64, gpu string, start time.Duration) core.Window {
		return core.Window{Reservation: res, GPUs: []string{gpu}, Start: t0.Add(start), End: t0.Add(start + time.Hour)}
	}
	timing := core.DrainTiming{Grace: 2 * time.Minute, Term: 30 * time.Second, Kill: 5 * time.Second}
	tests := []struct {
		name    string
		job     core.JobOrder
		windows []core.Window
		want    *core.StopOrder
	}{
		{"no window", job, nil, nil},
		{"a window ahead on its GPU", job, []core.Window{window(5, "GPU-b", 10*time.Minute)},
			&core.StopOrder{Job: 1, Reason: core.StopDrain, Reservation: 5, CheckpointAt: t0.Add(8 * time.Minute), TermAt: t0.Add(9*time.Minute + 30*time.Second), KillAt: t0.Add(9*time.Minute + 55*time.Second), Deadline: t0.Add(10 * time.Minute)}},
		{"the earliest window", job, []core.Window{window(6, "GPU-a", 20*time.Minute), window(5, "GPU-b", 10*time.Minute)},
			&core.StopOrder{Job: 1, Reason: core.StopDrain, Reservation: 5, CheckpointAt: t0.Add(8 * time.Minute), TermAt: t0.Add(9*time.Minute + 30*time.Second), KillAt: t0.Add(9*time.Minute + 55*time.Second), Deadline: t0.Add(10 * time.Minute)}},
		{"a window soon: steps already due are now", job, []core.Window{window(5, "GPU-a", time.Minute)},
			&core.StopOrder{Job: 1, Reason: core.StopDrain, Reservation: 5, CheckpointAt: t0, TermAt: t0.Add(30 * time.Second), KillAt: t0.Add(55 * time.Second), Deadline: t0.Add(time.Minute)}},
		{"a window opened since it started: every step is due", job, []core.Window{window(5, "GPU-a", -time.Minute)},
			&core.StopOrder{Job: 1, Reason: core.StopDrain, Reservation: 5, CheckpointAt: t0.Add(-time.Minute), TermAt: t0.Add(-time.Minute), KillAt: t0.Add(-time.Minute), Deadline: t0.Add(-time.Minute)}},
		{"a window on other GPUs", job, []core.Window{window(5, "GPU-c", 10*time.Minute)}, nil},
		{"not preemptible", core.JobOrder{Job: 1, GPUs: []string{"GPU-a"}}, []core.Window{window(5, "GPU-a", 10*time.Minute)}, nil},
		{"its own reservation's window", core.JobOrder{Job: 1, GPUs: []string{"GPU-a"}, Preemptible: true, Reservation: 5}, []core.Window{window(5, "GPU-a", 10*time.Minute)}, nil},
		{"started inside an open window", job, []core.Window{window(5, "GPU-a", -2*time.Hour)}, nil},
		{"a window that has ended", job, []core.Window{{Reservation: 5, GPUs: []string{"GPU-a"}, Start: t0.Add(-50 * time.Minute), End: t0}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := windowStop(tt.job, started, tt.windows, timing, t0)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("windowStop (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStopPlan(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	order := core.StopOrder{Job: 1, CheckpointAt: t0, TermAt: t0.Add(time.Second), KillAt: t0.Add(2 * time.Second), Deadline: t0.Add(3 * time.Second)}
	p := stopPlan(order, core.JobOrder{Checkpoint: "usr2"}, [3]bool{true, false, false})
	if !p.CheckpointAt.IsZero() || !p.TermAt.Equal(order.TermAt) || p.Checkpoint != syscall.SIGUSR2 || !firstStep(p).Equal(order.TermAt) {
		t.Errorf("plan %+v; want the checkpoint (SIGUSR2) skipped as fired, TERM first", p)
	}
	if p := stopPlan(core.StopOrder{Deadline: t0}, core.JobOrder{}, [3]bool{}); !p.KillAt.Equal(t0) || p.Checkpoint != syscall.SIGUSR1 {
		t.Errorf("an order without steps gives %+v; want a kill at the deadline", p)
	}
	// A checkpoint by SIGTERM: the first SIGTERM is the checkpoint, the second the TERM step.
	p = stopPlan(order, core.JobOrder{Checkpoint: "SIGTERM"}, [3]bool{})
	var fired [3]bool
	markFired(&fired, p, syscall.SIGTERM)
	if fired != [3]bool{true, false, false} {
		t.Errorf("after one SIGTERM fired %v", fired)
	}
	markFired(&fired, p, syscall.SIGTERM)
	markFired(&fired, p, syscall.SIGKILL)
	if fired != [3]bool{true, true, true} {
		t.Errorf("after all steps fired %v", fired)
	}
}

func TestEarlier(t *testing.T) {
	t0 := time.Now()
	a, b := &core.StopOrder{Job: 1, Deadline: t0}, &core.StopOrder{Job: 1, Deadline: t0.Add(time.Second)}
	for _, c := range []struct{ x, y, want *core.StopOrder }{{a, b, a}, {b, a, a}, {nil, b, b}, {a, nil, a}, {nil, nil, nil}, {a, &core.StopOrder{Deadline: t0}, a}} {
		if got := earlier(c.x, c.y); got != c.want {
			t.Errorf("earlier(%v, %v) = %v, want %v", c.x, c.y, got, c.want)
		}
	}
}

func TestSignalNames(t *testing.T) {
	if got := signalName(syscall.SIGKILL); got != "SIGKILL" {
		t.Errorf("signalName(SIGKILL) = %q", got)
	}
	if got := signalName(0); got != "" {
		t.Errorf("signalName(0) = %q", got)
	}
	for name, want := range map[string]syscall.Signal{"": syscall.SIGUSR1, "usr2": syscall.SIGUSR2, "SIGINT": syscall.SIGINT, "SIGBOGUS": syscall.SIGUSR1} {
		if got := checkpointSignal(name); got != want {
			t.Errorf("checkpointSignal(%q) = %v, want %v", name, got, want)
		}
	}
}
