package core_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
)

// agentEnv is a cluster of one node, n1 (4 H100s), that joined through an
// agent, with alice, bob and an admin.
type agentEnv struct {
	*coretest.Env
	cred string
	hb   core.Heartbeat // n1's GPUs, no jobs
}

func newAgentEnv(t *testing.T) *agentEnv {
	t.Helper()
	e := coretest.NewEnv()
	e.AddUsers(t, "alice", "bob")
	e.AddAdmin(t, "root")
	token, _, err := e.Service.CreateJoinToken(ctx, e.Actor(t, "root"), 0)
	if err != nil {
		t.Fatal(err)
	}
	hb := core.Heartbeat{Node: "n1", Agent: "test"}
	for i := range 4 {
		hb.GPUs = append(hb.GPUs, core.GPUReport{Index: i, UUID: fmt.Sprintf("GPU-n1-%d", i), Name: h100, MemoryMiB: 81559})
	}
	n, cred, err := e.Service.Join(ctx, token, hb)
	if err != nil {
		t.Fatal(err)
	}
	if n.State != core.NodeReady || len(n.GPUs) != 4 || !strings.HasPrefix(cred, "gpucal_node_") {
		t.Fatalf("joined %+v with credential %q", n, cred)
	}
	return &agentEnv{Env: e, cred: cred, hb: hb}
}

// beat sends n1's heartbeat with jobs.
func (a *agentEnv) beat(t *testing.T, jobs ...core.JobReport) core.DesiredState {
	t.Helper()
	hb := a.hb
	hb.Jobs = jobs
	ds, err := a.Service.Heartbeat(ctx, "n1", hb)
	if err != nil {
		t.Fatalf("heartbeat: %v", err)
	}
	return ds
}

func (a *agentEnv) events(t *testing.T, kind core.EventKind) []core.Event {
	t.Helper()
	var out []core.Event
	err := a.Store.View(ctx, func(tx core.Tx) error {
		es, err := tx.Events(ctx, 0, 10000)
		for _, ev := range es {
			if ev.Kind == kind {
				out = append(out, ev)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestJoinTokens(t *testing.T) {
	a := newAgentEnv(t)
	if _, _, err := a.Service.CreateJoinToken(ctx, a.Actor(t, "alice"), 0); core.ErrorCode(err) != core.CodeForbidden {
		t.Errorf("join token by a user: %v, want forbidden", err)
	}
	if _, _, err := a.Service.CreateJoinToken(ctx, a.Actor(t, "root"), 90*24*time.Hour); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("join token for 90 days: %v, want invalid", err)
	}
	if name, err := a.Service.AuthenticateNode(ctx, a.cred); err != nil || name != "n1" {
		t.Errorf("AuthenticateNode = %q, %v; want n1", name, err)
	}
	for _, bad := range []string{"", "gpucal_node_00", a.cred + "x", "gpucal_deadbeef"} {
		if _, err := a.Service.AuthenticateNode(ctx, bad); core.ErrorCode(err) != core.CodeUnauthorized {
			t.Errorf("AuthenticateNode(%q): %v, want unauthorized", bad, err)
		}
	}
	// The credential reports only for its own node.
	hb := a.hb
	hb.Node = "n2"
	if _, err := a.Service.Heartbeat(ctx, "n1", hb); core.ErrorCode(err) != core.CodeForbidden {
		t.Errorf("heartbeat for n2 with n1's credential: %v, want forbidden", err)
	}
	// A token is good until it expires; joining again replaces the credential.
	token, expires, err := a.Service.CreateJoinToken(ctx, a.Actor(t, "root"), time.Hour)
	if err != nil || !expires.Equal(epoch.Add(time.Hour)) {
		t.Fatalf("CreateJoinToken = %v, %v", expires, err)
	}
	if _, _, err := a.Service.Join(ctx, token, a.hb); core.ErrorCode(err) != core.CodeConflict {
		t.Fatalf("joining as n1 while n1's agent answers: %v, want conflict", err)
	}
	a.Clock.Advance(core.DefaultNodePolicy.DownAfter)
	_, cred2, err := a.Service.Join(ctx, token, a.hb)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Service.AuthenticateNode(ctx, a.cred); core.ErrorCode(err) != core.CodeUnauthorized {
		t.Errorf("the replaced credential still works: %v", err)
	}
	if name, err := a.Service.AuthenticateNode(ctx, cred2); err != nil || name != "n1" {
		t.Errorf("the new credential: %q, %v", name, err)
	}
	a.Clock.Advance(time.Hour - core.DefaultNodePolicy.DownAfter)
	if _, _, err := a.Service.Join(ctx, token, a.hb); core.ErrorCode(err) != core.CodeUnauthorized || !strings.Contains(err.Error(), "expired") {
		t.Errorf("join with an expired token: %v", err)
	}
	if _, _, err := a.Service.Join(ctx, "gpucal_join_nope", a.hb); core.ErrorCode(err) != core.CodeUnauthorized {
		t.Errorf("join with an unknown token: %v", err)
	}
	nodes, err := a.Service.Nodes(ctx, a.Actor(t, "alice"))
	if err != nil || len(nodes) != 1 || len(nodes[0].GPUs) != 4 {
		t.Fatalf("after rejoining: %d node(s), %v", len(nodes), err)
	}
}

// TestJoinAdoptsHandAddedNode: a node an admin added with placeholder
// UUIDs keeps its GPUs (and their IDs) when its agent joins, which gives
// them their real UUIDs; a GPU the agent no longer finds is out of service.
func TestJoinAdoptsHandAddedNode(t *testing.T) {
	a := newAgentEnv(t)
	added := a.AddNodes(t, coretest.Node("n2").GPUs(2, h100).Build())[0]
	token, _, _ := a.Service.CreateJoinToken(ctx, a.Actor(t, "root"), 0)
	hb := core.Heartbeat{Node: "n2", GPUs: []core.GPUReport{{Index: 0, UUID: "GPU-real-0", Name: h100, MemoryMiB: 81559}}}
	n, _, err := a.Service.Join(ctx, token, hb)
	if err != nil {
		t.Fatal(err)
	}
	if len(n.GPUs) != 2 || n.GPUs[0].ID != added.GPUs[0].ID || n.GPUs[0].UUID != "GPU-real-0" || n.GPUs[0].Fault != "" {
		t.Errorf("GPU 0 after join: %+v, want ID %d with the real UUID", n.GPUs[0], added.GPUs[0].ID)
	}
	if n.GPUs[1].ID != added.GPUs[1].ID || n.GPUs[1].Fault == "" {
		t.Errorf("GPU 1, which the agent does not find: %+v, want out of service", n.GPUs[1])
	}
}

// TestJobThroughAgent follows a job from submission to its end through
// heartbeats: the agent is told to run it on its GPUs, reports it running
// with progress, then exited; the owner hears, the GPUs come free and the
// report is acknowledged.
func TestJobThroughAgent(t *testing.T) {
	a := newAgentEnv(t)
	j := submit(t, a.Env, "alice", coretest.Job(2, "h100").Name("ft").Command("python", "train.py").Hints(core.Hints{Guess: time.Hour, Epochs: 3}).Build())
	replan(t, a.Env)
	ds := a.beat(t)
	if len(ds.Run) != 1 || ds.Run[0].Job != j.ID || len(ds.Run[0].GPUs) != 2 || ds.Run[0].User != "alice" ||
		!slices.Equal(ds.Run[0].Command, []string{"python", "train.py"}) || ds.Run[0].Checkpoint != "SIGUSR1" || ds.Run[0].Epochs != 3 {
		t.Fatalf("desired state %+v, want j%d to run as alice on 2 GPUs", ds.Run, j.ID)
	}
	if ds.Interval != core.DefaultNodePolicy.Interval || len(ds.Stop) != 0 {
		t.Errorf("interval %s, stops %+v", ds.Interval, ds.Stop)
	}
	a.Clock.Advance(time.Minute)
	started := a.Clock.Now()
	ds = a.beat(t, core.JobReport{Job: j.ID, State: core.RunRunning, PID: 4242, StartedAt: started,
		Progress: &core.ProgressReport{Step: 100, Total: 1000}})
	if got := job(t, a.Env, j.ID); got.State != core.JobRunning || got.Progress.Step != 100 {
		t.Errorf("after the running report: %s, progress %+v", got.State, got.Progress)
	}
	if len(ds.Run) != 1 || len(ds.Ack) != 0 {
		t.Errorf("a running job stays in Run and is not acknowledged: %+v", ds)
	}
	a.Clock.Advance(time.Hour)
	ds = a.beat(t, core.JobReport{Job: j.ID, State: core.RunExited, StartedAt: started, EndedAt: a.Clock.Now(), ExitCode: 0})
	if len(ds.Ack) != 0 {
		t.Errorf("acknowledged %v before its log was complete", ds.Ack)
	}
	ds = a.beat(t, core.JobReport{Job: j.ID, State: core.RunExited, StartedAt: started, EndedAt: a.Clock.Now(), ExitCode: 0, LogDone: true})
	got := job(t, a.Env, j.ID)
	if got.State != core.JobSucceeded || !got.EndedAt.Equal(a.Clock.Now()) || len(got.Runs) != 1 || got.Runs[0].Node != "n1" {
		t.Errorf("after the exit: %s at %s, runs %+v", got.State, got.EndedAt, got.Runs)
	}
	if len(ds.Run) != 0 || !slices.Equal(ds.Ack, []int64{j.ID}) {
		t.Errorf("after the exit: run %+v, ack %v; want nothing to run and j%d acknowledged", ds.Run, ds.Ack, j.ID)
	}
	if evs := a.events(t, core.EventFinished); len(evs) != 1 || evs[0].User != "alice" || !strings.Contains(evs[0].Detail, "succeeded") {
		t.Errorf("finished events %+v", evs)
	}
	// A repeat of the exit report (the ack was lost) changes nothing.
	a.beat(t, core.JobReport{Job: j.ID, State: core.RunExited, ExitCode: 3})
	if got := job(t, a.Env, j.ID); got.State != core.JobSucceeded || got.Runs[0].ExitCode != 0 {
		t.Errorf("a repeated report changed the job: %s, %+v", got.State, got.Runs)
	}
	// The GPUs are free: the next job starts.
	next := submit(t, a.Env, "bob", coretest.Job(4, "h100").Build())
	if res := replan(t, a.Env); !slices.Contains(res.Started, next.ID) {
		t.Errorf("the next job did not start: %+v", res)
	}
}

func TestFailedAndRefusedJobs(t *testing.T) {
	a := newAgentEnv(t)
	j1 := submit(t, a.Env, "alice", coretest.Job(1, "h100").Build())
	j2 := submit(t, a.Env, "bob", coretest.Job(1, "h100").Build())
	replan(t, a.Env)
	a.beat(t)
	a.beat(t, core.JobReport{Job: j1.ID, State: core.RunExited, ExitCode: 3},
		core.JobReport{Job: j2.ID, State: core.RunRefused, Error: `"python" not found in PATH`})
	if got := job(t, a.Env, j1.ID); got.State != core.JobFailed {
		t.Errorf("j1 exited 3: %s", got.State)
	}
	got := job(t, a.Env, j2.ID)
	if got.State != core.JobFailed {
		t.Errorf("j2 refused: %s", got.State)
	}
	evs := a.events(t, core.EventFinished)
	if len(evs) != 2 || !strings.Contains(evs[0].Detail+evs[1].Detail, "exit code 3") || !strings.Contains(evs[0].Detail+evs[1].Detail, "could not start") {
		t.Errorf("finished events %+v", evs)
	}
}

// TestCancelRunningJobThroughAgent: cancelling a job its agent runs makes
// it draining with a stop order; it is cancelled, and its GPUs free, once
// the agent reports it gone.
func TestCancelRunningJobThroughAgent(t *testing.T) {
	a := newAgentEnv(t)
	j := submit(t, a.Env, "alice", coretest.Job(4, "h100").Build())
	replan(t, a.Env)
	a.beat(t)
	a.beat(t, core.JobReport{Job: j.ID, State: core.RunRunning, PID: 7})
	got, err := a.Service.CancelJob(ctx, a.Actor(t, "alice"), j.ID)
	if err != nil || got.State != core.JobDraining || got.Stop == nil || got.Stop.Reason != core.StopCancelled {
		t.Fatalf("CancelJob = %+v, %v; want draining with a cancel stop", got.State, err)
	}
	if _, err := a.Service.CancelJob(ctx, a.Actor(t, "alice"), j.ID); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("cancelling again: %v, want invalid", err)
	}
	other := submit(t, a.Env, "bob", coretest.Job(4, "h100").Build())
	if res := replan(t, a.Env); len(res.Started) != 0 {
		t.Errorf("a job started on GPUs a stopping job still holds: %+v", res)
	}
	a.Clock.Advance(10 * time.Second)
	ds := a.beat(t, core.JobReport{Job: j.ID, State: core.RunDraining, PID: 7})
	g := core.DefaultDrainTiming.Grace
	if len(ds.Run) != 0 || len(ds.Stop) != 1 || ds.Stop[0].Reason != core.StopCancelled || !ds.Stop[0].Deadline.Equal(epoch.Add(g)) ||
		!ds.Stop[0].CheckpointAt.Equal(epoch) || !ds.Stop[0].KillAt.Equal(epoch.Add(g-core.DefaultDrainTiming.Kill)) {
		t.Fatalf("desired state: run %+v, stop %+v; want one cancel ladder ending %s", ds.Run, ds.Stop, epoch.Add(g))
	}
	a.beat(t, core.JobReport{Job: j.ID, State: core.RunExited, ExitCode: -1, Signal: "SIGTERM", Stopped: core.StopCancelled})
	if got := job(t, a.Env, j.ID); got.State != core.JobCancelled {
		t.Errorf("after its processes are gone: %s, want cancelled", got.State)
	}
	if res := replan(t, a.Env); !slices.Contains(res.Started, other.ID) {
		t.Errorf("the waiting job did not start once the GPUs were free: %+v", res)
	}
}

// TestCancelBeforeAgentStarts: a job cancelled while starting, before its
// agent ran it, is over at the next heartbeat that does not list it.
func TestCancelBeforeAgentStarts(t *testing.T) {
	a := newAgentEnv(t)
	j := submit(t, a.Env, "alice", coretest.Job(1, "h100").Build())
	replan(t, a.Env)
	if _, err := a.Service.CancelJob(ctx, a.Actor(t, "alice"), j.ID); err != nil {
		t.Fatal(err)
	}
	ds := a.beat(t)
	if got := job(t, a.Env, j.ID); got.State != core.JobCancelled || len(ds.Run)+len(ds.Stop) != 0 {
		t.Errorf("%s with run %+v stop %+v; want cancelled and nothing to do", got.State, ds.Run, ds.Stop)
	}
}

// TestDrainThroughAgent: a preemptible job runs on GPUs a reservation
// books from 30 minutes on. The agent gets the drain ladder and the
// window; the owner is warned when the signal time comes; the job ends
// preempted.
func TestDrainThroughAgent(t *testing.T) {
	a := newAgentEnv(t)
	j := submit(t, a.Env, "alice", coretest.Job(4, "h100").Preemptible().Guess(3*time.Hour).Build())
	replan(t, a.Env)
	a.beat(t)
	a.beat(t, core.JobReport{Job: j.ID, State: core.RunRunning, PID: 9})
	start := epoch.Add(30 * time.Minute)
	r, err := a.Service.Book(ctx, a.Actor(t, "bob"), coretest.Booking(4, "h100").Window(start, start.Add(2*time.Hour)).Build())
	if err != nil {
		t.Fatal(err)
	}
	replan(t, a.Env)
	ds := a.beat(t, core.JobReport{Job: j.ID, State: core.RunRunning, PID: 9})
	if len(ds.Windows) != 1 || ds.Windows[0].Reservation != r.ID || ds.Windows[0].Owner != "bob" || len(ds.Windows[0].GPUs) != 4 || !ds.Windows[0].Start.Equal(start) {
		t.Errorf("windows %+v, want r%d from %s on 4 GPUs", ds.Windows, r.ID, start)
	}
	if len(ds.Run) != 1 || len(ds.Stop) != 1 {
		t.Fatalf("run %+v, stop %+v; want the job running with a drain ladder", ds.Run, ds.Stop)
	}
	want := core.DefaultDrainTiming.Ladder(j.ID, core.StopDrain, start, start.Add(-10*time.Minute))
	want.Reservation = r.ID
	if ds.Stop[0] != want {
		t.Errorf("stop order %+v, want %+v", ds.Stop[0], want)
	}
	if evs := a.events(t, core.EventDrainWarning); len(evs) != 0 {
		t.Errorf("warned 30 minutes ahead: %+v", evs)
	}
	a.Clock.Set(start.Add(-10 * time.Minute))
	replan(t, a.Env)
	a.beat(t, core.JobReport{Job: j.ID, State: core.RunRunning, PID: 9})
	if evs := a.events(t, core.EventDrainWarning); len(evs) != 1 || evs[0].User != "alice" || !strings.Contains(evs[0].Detail, core.ReservationName(r.ID)) {
		t.Errorf("drain warnings %+v", evs)
	}
	a.Clock.Set(start.Add(-2 * time.Minute))
	a.beat(t, core.JobReport{Job: j.ID, State: core.RunDraining, PID: 9, Stopped: core.StopDrain})
	if got := job(t, a.Env, j.ID); got.State != core.JobDraining || got.Stop == nil || got.Stop.Reservation != r.ID {
		t.Errorf("while draining: %s, stop %+v", got.State, got.Stop)
	}
	margin := 4 * time.Second
	a.beat(t, core.JobReport{Job: j.ID, State: core.RunExited, ExitCode: -1, Signal: "SIGKILL", Stopped: core.StopDrain, Margin: &margin})
	got := job(t, a.Env, j.ID)
	if got.State != core.JobPreempted {
		t.Errorf("after the drain: %s, want preempted", got.State)
	}
	if evs := a.events(t, core.EventFinished); len(evs) != 1 || !strings.Contains(evs[0].Detail, "stopped for reservation") || !strings.Contains(evs[0].Detail, "4s before the deadline") {
		t.Errorf("finished events %+v", evs)
	}
}

// TestNodeHealth: a silent node is suspect after three intervals (nothing
// new starts there), down after DownAfter (its jobs fail, admins hear),
// and ready again at its next heartbeat. A server that just started grants
// every node its full time.
func TestNodeHealth(t *testing.T) {
	a := newAgentEnv(t)
	j := submit(t, a.Env, "alice", coretest.Job(1, "h100").Build())
	replan(t, a.Env)
	a.beat(t, core.JobReport{Job: j.ID, State: core.RunRunning})
	pol := core.DefaultNodePolicy
	since := epoch.Add(-time.Hour)

	// Last heard at 09:00:00 may have been 09:00:00.999: the silence
	// counts from a second later.
	a.Clock.Advance(3 * pol.Interval)
	if res, err := a.Service.CheckNodes(ctx, since); err != nil || len(res.Suspect)+len(res.Down) != 0 {
		t.Fatalf("after 2 missed heartbeats: %+v, %v", res, err)
	}
	a.Clock.Advance(time.Second)
	if res, _ := a.Service.CheckNodes(ctx, since); !slices.Equal(res.Suspect, []string{"n1"}) {
		t.Errorf("after 3 missed heartbeats: %+v, want n1 suspect", res)
	}
	waiting := submit(t, a.Env, "bob", coretest.Job(1, "h100").Build())
	if res := replan(t, a.Env); slices.Contains(res.Started, waiting.ID) {
		t.Error("a job started on a suspect node")
	}
	// A server that started a minute ago does not count the silence before.
	a.Clock.Set(epoch.Add(pol.DownAfter + time.Second))
	if res, _ := a.Service.CheckNodes(ctx, a.Clock.Now().Add(-time.Minute)); len(res.Down) != 0 {
		t.Errorf("down right after a server restart: %+v", res)
	}
	res, err := a.Service.CheckNodes(ctx, since)
	if err != nil || !slices.Equal(res.Down, []string{"n1"}) || !slices.Equal(res.Failed, []int64{j.ID}) {
		t.Fatalf("after DownAfter: %+v, %v; want n1 down and j%d failed", res, err, j.ID)
	}
	if got := job(t, a.Env, j.ID); got.State != core.JobFailed || !strings.Contains(got.Runs[0].Error, "stopped answering") {
		t.Errorf("the job of the down node: %s, %+v", got.State, got.Runs)
	}
	if evs := a.events(t, core.EventNodeDown); len(evs) != 1 || evs[0].User != core.Admins {
		t.Errorf("node_down events %+v", evs)
	}
	// It comes back: ready, admins hear, and the failed job it still runs
	// is not in Run, so the agent stops it.
	a.Clock.Advance(time.Minute)
	ds := a.beat(t, core.JobReport{Job: j.ID, State: core.RunRunning})
	nodes, _ := a.Service.Nodes(ctx, core.System)
	if nodes[0].State != core.NodeReady || len(a.events(t, core.EventNodeBack)) != 1 {
		t.Errorf("after a heartbeat: %s", nodes[0].State)
	}
	if slices.ContainsFunc(ds.Run, func(o core.JobOrder) bool { return o.Job == j.ID }) {
		t.Errorf("the failed job is still to run: %+v", ds.Run)
	}
}

// TestGPUFaults: a critical XID or a fault the agent found takes the GPU
// out of service (admins hear once); nothing new is planned on it.
func TestGPUFaults(t *testing.T) {
	a := newAgentEnv(t)
	a.hb.GPUs[1].XID = 79
	a.hb.GPUs[2].Fault = "process 99 outlived SIGKILL of j3"
	a.beat(t)
	a.beat(t)
	nodes, _ := a.Service.Nodes(ctx, core.System)
	if f := nodes[0].GPUs[1].Fault; f != "critical XID 79" || nodes[0].GPUs[1].Status != "down" {
		t.Errorf("GPU 1: fault %q, status %s", f, nodes[0].GPUs[1].Status)
	}
	if nodes[0].GPUs[2].Fault == "" || nodes[0].GPUs[0].Fault != "" {
		t.Errorf("faults %q, %q", nodes[0].GPUs[0].Fault, nodes[0].GPUs[2].Fault)
	}
	if evs := a.events(t, core.EventGPUFault); len(evs) != 2 || evs[0].User != core.Admins {
		t.Errorf("gpu_fault events %+v", evs)
	}
	if _, err := a.Service.Submit(ctx, a.Actor(t, "alice"), coretest.Job(3, "h100").Build()); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("a 3-GPU job on a cluster with 2 good GPUs: %v, want invalid", err)
	}
	j := submit(t, a.Env, "alice", coretest.Job(2, "h100").Build())
	replan(t, a.Env)
	if got := job(t, a.Env, j.ID); got.State != core.JobStarting || got.Assigned[0].Index != 0 || got.Assigned[1].Index != 3 {
		t.Errorf("a 2-GPU job: %s on %+v, want GPUs 0 and 3", got.State, got.Assigned)
	}
	if g := nodes[0].GPUs[0]; g.Telemetry.At.IsZero() {
		t.Errorf("no telemetry kept: %+v", g)
	}

	// An admin puts GPU 1 back; the agent repeating XID 79 does not take it
	// out again, a new XID does.
	if _, err := a.Service.ClearFault(ctx, a.Actor(t, "alice"), "n1", 1); core.ErrorCode(err) != core.CodeForbidden {
		t.Errorf("alice clears a fault: %v, want forbidden", err)
	}
	if g, err := a.Service.ClearFault(ctx, a.Actor(t, "root"), "n1", 1); err != nil || g.Fault != "" {
		t.Fatalf("ClearFault = %+v, %v", g, err)
	}
	if _, err := a.Service.ClearFault(ctx, a.Actor(t, "root"), "n1", 1); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("clearing a GPU in service: %v, want invalid", err)
	}
	if _, err := a.Service.ClearFault(ctx, a.Actor(t, "root"), "n1", 9); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("clearing a GPU that does not exist: %v, want not found", err)
	}
	a.beat(t)
	if nodes, _ := a.Service.Nodes(ctx, core.System); nodes[0].GPUs[1].Fault != "" {
		t.Errorf("the repeated XID took the cleared GPU out again: %q", nodes[0].GPUs[1].Fault)
	}
	a.hb.GPUs[1].XID = 48
	a.beat(t)
	if nodes, _ := a.Service.Nodes(ctx, core.System); nodes[0].GPUs[1].Fault != "critical XID 48" {
		t.Errorf("a new XID: fault %q", nodes[0].GPUs[1].Fault)
	}
}

// TestForeignProcesses: a process gpucal did not start on GPUs a window
// holds now is reported to the holder and to its owner; the holder's own
// processes are theirs.
func TestForeignProcesses(t *testing.T) {
	a := newAgentEnv(t)
	if _, err := a.Service.Book(ctx, a.Actor(t, "alice"), coretest.Booking(4, "h100").At(epoch, time.Hour).Build()); err != nil {
		t.Fatal(err)
	}
	a.hb.GPUs[0].Processes = []core.ProcessReport{{PID: 100, User: "bob", UsedMiB: 2000}, {PID: 101, User: "alice", UsedMiB: 500}}
	if ds := a.beat(t); ds.KillForeign {
		t.Error("the agent is told to kill foreign processes by default")
	}
	pol := core.DefaultNodePolicy
	pol.KillForeign = true
	strict := core.NewService(a.Store, core.WithClock(a.Clock.Now), core.WithNodePolicy(pol))
	if ds, err := strict.Heartbeat(ctx, "n1", a.hb); err != nil || !ds.KillForeign {
		t.Errorf("with the policy on: kill_foreign %t, %v", ds.KillForeign, err)
	}
	evs := a.events(t, core.EventForeignProcess)
	if len(evs) != 2 {
		t.Fatalf("foreign_process events %+v, want one to alice and one to bob", evs)
	}
	users := []string{evs[0].User, evs[1].User}
	slices.Sort(users)
	if !slices.Equal(users, []string{"alice", "bob"}) || !strings.Contains(evs[0].Detail, "Process 100 of bob") {
		t.Errorf("foreign_process events %+v", evs)
	}
}

// TestJobLogs: the agent appends at the size the server has; a wrong
// offset is refused with the size; only the job's node may append, only
// those who may change the job may read; past MaxLog bytes are counted,
// not kept.
func TestJobLogs(t *testing.T) {
	pol := core.DefaultNodePolicy
	pol.MaxLog = 10
	a := newAgentEnv(t)
	svc := core.NewService(a.Store, core.WithClock(a.Clock.Now), core.WithNodePolicy(pol))
	j := submit(t, a.Env, "alice", coretest.Job(1, "h100").Build())
	replan(t, a.Env)
	if size, err := svc.AppendLog(ctx, "n1", j.ID, 0, []byte("hello\n")); err != nil || size != 6 {
		t.Fatalf("first append: %d, %v", size, err)
	}
	if size, err := svc.AppendLog(ctx, "n1", j.ID, 3, []byte("again")); core.ErrorCode(err) != core.CodeConflict || size != 6 {
		t.Errorf("append at the wrong offset: %d, %v; want conflict and size 6", size, err)
	}
	if _, err := svc.AppendLog(ctx, "n2", j.ID, 6, []byte("x")); core.ErrorCode(err) != core.CodeForbidden {
		t.Errorf("append from another node: %v, want forbidden", err)
	}
	if size, err := svc.AppendLog(ctx, "n1", j.ID, 6, []byte("world\n")); err != nil || size != 12 {
		t.Fatalf("second append: %d, %v", size, err)
	}
	p, err := svc.Log(ctx, a.Actor(t, "alice"), j.ID, 0, 0)
	if err != nil || string(p.Data) != "hello\nworl" || p.Dropped != 2 || p.Size != 12 || p.Done {
		t.Errorf("Log = %q dropped %d size %d done %t, %v", p.Data, p.Dropped, p.Size, p.Done, err)
	}
	if p, err := svc.Log(ctx, a.Actor(t, "alice"), j.ID, 2, 3); err != nil || string(p.Data) != "llo" {
		t.Errorf("Log(2, 3) = %q, %v", p.Data, err)
	}
	if _, err := svc.Log(ctx, a.Actor(t, "bob"), j.ID, 0, 0); core.ErrorCode(err) != core.CodeForbidden {
		t.Errorf("bob reads alice's log: %v, want forbidden", err)
	}
	if _, err := svc.Log(ctx, a.Actor(t, "alice"), j.ID, 13, 0); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("offset past the end: %v, want invalid", err)
	}
	a.beat(t, core.JobReport{Job: j.ID, State: core.RunExited})
	if p, _ := svc.Log(ctx, a.Actor(t, "root"), j.ID, 12, 0); p.Done {
		t.Error("done before the agent said its log is complete")
	}
	a.beat(t, core.JobReport{Job: j.ID, State: core.RunExited, LogSize: 12, LogDone: true})
	if p, _ := svc.Log(ctx, a.Actor(t, "root"), j.ID, 12, 0); !p.Done || p.State != core.JobSucceeded {
		t.Errorf("at the end of a finished job's log: done %t, state %s", p.Done, p.State)
	}
}

// TestGangThroughAgents: a job on two whole nodes gets an order on each,
// with the gang's nodes and each node's rank; it runs once either part
// runs and ends once both have ended, failed if either failed.
func TestGangThroughAgents(t *testing.T) {
	a := newAgentEnv(t)
	token, _, _ := a.Service.CreateJoinToken(ctx, a.Actor(t, "root"), 0)
	hb2 := core.Heartbeat{Node: "n2"}
	for i := range 4 {
		hb2.GPUs = append(hb2.GPUs, core.GPUReport{Index: i, UUID: fmt.Sprintf("GPU-n2-%d", i), Name: h100, MemoryMiB: 81559})
	}
	if _, _, err := a.Service.Join(ctx, token, hb2); err != nil {
		t.Fatal(err)
	}
	j := submit(t, a.Env, "alice", coretest.Job(8, "h100").Name("gang").Build())
	replan(t, a.Env)
	beat2 := func(jobs ...core.JobReport) core.DesiredState {
		t.Helper()
		hb := hb2
		hb.Jobs = jobs
		ds, err := a.Service.Heartbeat(ctx, "n2", hb)
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	d1, d2 := a.beat(t), beat2()
	if len(d1.Run) != 1 || len(d2.Run) != 1 || len(d1.Run[0].GPUs) != 4 || len(d2.Run[0].GPUs) != 4 {
		t.Fatalf("orders %+v / %+v; want 4 GPUs on each node", d1.Run, d2.Run)
	}
	if !slices.Equal(d1.Run[0].Nodes, []string{"n1", "n2"}) || d1.Run[0].Rank != 0 || d2.Run[0].Rank != 1 {
		t.Errorf("gang nodes %v, ranks %d and %d", d1.Run[0].Nodes, d1.Run[0].Rank, d2.Run[0].Rank)
	}
	a.beat(t, core.JobReport{Job: j.ID, State: core.RunRunning, PID: 1})
	if got := job(t, a.Env, j.ID); got.State != core.JobRunning {
		t.Errorf("one part running: %s", got.State)
	}
	beat2(core.JobReport{Job: j.ID, State: core.RunRunning, PID: 2})
	a.beat(t, core.JobReport{Job: j.ID, State: core.RunExited, ExitCode: 0, LogDone: true})
	if got := job(t, a.Env, j.ID); got.State != core.JobRunning {
		t.Errorf("one part ended, the other running: %s", got.State)
	}
	beat2(core.JobReport{Job: j.ID, State: core.RunExited, ExitCode: 1, LogDone: true})
	got := job(t, a.Env, j.ID)
	if got.State != core.JobFailed || len(got.Runs) != 2 {
		t.Errorf("both parts ended, one with 1: %s, runs %+v", got.State, got.Runs)
	}
	if evs := a.events(t, core.EventFinished); len(evs) != 1 || !strings.Contains(evs[0].Detail, "n2: exit code 1") {
		t.Errorf("finished events %+v", evs)
	}
}

// TestAgentBeganDrain: an agent that began a drain by itself (a cached
// window the plan has not drained yet) is stopped by its own deadline,
// never sooner.
func TestAgentBeganDrain(t *testing.T) {
	a := newAgentEnv(t)
	j := submit(t, a.Env, "alice", coretest.Job(1, "h100").Preemptible().Build())
	replan(t, a.Env)
	a.beat(t, core.JobReport{Job: j.ID, State: core.RunRunning, PID: 5})
	deadline := epoch.Add(90 * time.Second)
	ds := a.beat(t, core.JobReport{Job: j.ID, State: core.RunDraining, PID: 5, Stopped: core.StopDrain, Deadline: deadline, Reservation: 3})
	got := job(t, a.Env, j.ID)
	if got.State != core.JobDraining || got.Stop == nil || !got.Stop.Deadline.Equal(deadline) || got.Stop.Reservation != 3 {
		t.Fatalf("%s with stop %+v; want draining by %s for r3", got.State, got.Stop, deadline)
	}
	if len(ds.Stop) != 1 || !ds.Stop[0].Deadline.Equal(deadline) || !ds.Stop[0].KillAt.Equal(deadline.Add(-core.DefaultDrainTiming.Kill)) {
		t.Errorf("stop order %+v; want the agent's deadline", ds.Stop)
	}
}

// TestGangPartFails: when one part of a gang fails or its node goes down,
// the other parts are stopped, and the job ends failed once they are gone.
func TestGangPartFails(t *testing.T) {
	for _, how := range []string{"refused", "node down"} {
		t.Run(strings.ReplaceAll(how, " ", "-"), func(t *testing.T) {
			a := newAgentEnv(t)
			token, _, _ := a.Service.CreateJoinToken(ctx, a.Actor(t, "root"), 0)
			hb2 := core.Heartbeat{Node: "n2"}
			for i := range 4 {
				hb2.GPUs = append(hb2.GPUs, core.GPUReport{Index: i, UUID: fmt.Sprintf("GPU-n2-%d", i), Name: h100, MemoryMiB: 81559})
			}
			if _, _, err := a.Service.Join(ctx, token, hb2); err != nil {
				t.Fatal(err)
			}
			j := submit(t, a.Env, "alice", coretest.Job(8, "h100").Build())
			replan(t, a.Env)
			a.beat(t, core.JobReport{Job: j.ID, State: core.RunRunning, PID: 1})
			switch how {
			case "refused":
				hb := hb2
				hb.Jobs = []core.JobReport{{Job: j.ID, State: core.RunRefused, Error: "no user alice"}}
				if _, err := a.Service.Heartbeat(ctx, "n2", hb); err != nil {
					t.Fatal(err)
				}
			case "node down":
				a.Clock.Advance(core.DefaultNodePolicy.DownAfter - 10*time.Second)
				a.beat(t, core.JobReport{Job: j.ID, State: core.RunRunning, PID: 1})
				a.Clock.Advance(20 * time.Second)
				if res, err := a.Service.CheckNodes(ctx, epoch.Add(-time.Hour)); err != nil || !slices.Equal(res.Down, []string{"n2"}) {
					t.Fatalf("CheckNodes = %+v, %v; want n2 down", res, err)
				}
			}
			got := job(t, a.Env, j.ID)
			if got.State != core.JobDraining || got.Stop == nil || got.Stop.Reason != core.StopFailed {
				t.Fatalf("after one part ended badly: %s, stop %+v; want the rest stopped", got.State, got.Stop)
			}
			ds := a.beat(t, core.JobReport{Job: j.ID, State: core.RunDraining, PID: 1})
			if len(ds.Stop) != 1 || ds.Stop[0].Reason != core.StopFailed {
				t.Errorf("n1's stop orders %+v", ds.Stop)
			}
			a.beat(t, core.JobReport{Job: j.ID, State: core.RunExited, ExitCode: -1, Signal: "SIGTERM", Stopped: core.StopFailed, LogDone: true})
			if got := job(t, a.Env, j.ID); got.State != core.JobFailed {
				t.Errorf("once n1's part is gone: %s, want failed", got.State)
			}
		})
	}
}

// TestLostGPUAndLateLog: a GPU the agent stops listing is taken out of
// service; an ended job is acknowledged only once the server has its log.
func TestLostGPUAndLateLog(t *testing.T) {
	a := newAgentEnv(t)
	j := submit(t, a.Env, "alice", coretest.Job(1, "h100").Build())
	replan(t, a.Env)
	ds := a.beat(t, core.JobReport{Job: j.ID, State: core.RunExited, LogDone: true, LogSize: 5})
	if len(ds.Ack) != 0 {
		t.Errorf("acknowledged %v before the server had its 5 bytes of log", ds.Ack)
	}
	if _, err := a.Service.AppendLog(ctx, "n1", j.ID, 0, []byte("done\n")); err != nil {
		t.Fatal(err)
	}
	if ds := a.beat(t, core.JobReport{Job: j.ID, State: core.RunExited, LogDone: true, LogSize: 5}); !slices.Equal(ds.Ack, []int64{j.ID}) {
		t.Errorf("ack %v once the log is there", ds.Ack)
	}
	a.hb.GPUs = a.hb.GPUs[:3]
	a.beat(t)
	nodes, _ := a.Service.Nodes(ctx, core.System)
	if g := nodes[0].GPUs[3]; g.Fault == "" || g.Status != "down" {
		t.Errorf("GPU 3, no longer listed: fault %q, status %s", g.Fault, g.Status)
	}
}

// TestRejoinRenumbered: a node whose cards were renumbered (one removed,
// the others shifted down; or two swapped) joins again; each GPU keeps
// its ID under its UUID, and a card that is gone is out of service at an
// index past any real one.
func TestRejoinRenumbered(t *testing.T) {
	a := newAgentEnv(t)
	before, _ := a.Service.Nodes(ctx, core.System)
	ids := map[string]int64{}
	for _, g := range before[0].GPUs {
		ids[g.UUID] = g.ID
	}
	rejoin := func(uuids ...string) []core.GPUStatus {
		t.Helper()
		a.Clock.Advance(core.DefaultNodePolicy.DownAfter + time.Second)
		if _, err := a.Service.CheckNodes(ctx, epoch.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
		token, _, _ := a.Service.CreateJoinToken(ctx, a.Actor(t, "root"), 0)
		hb := core.Heartbeat{Node: "n1"}
		for i, u := range uuids {
			hb.GPUs = append(hb.GPUs, core.GPUReport{Index: i, UUID: u, Name: h100, MemoryMiB: 81559})
		}
		if _, _, err := a.Service.Join(ctx, token, hb); err != nil {
			t.Fatalf("rejoin with %v: %v", uuids, err)
		}
		nodes, _ := a.Service.Nodes(ctx, core.System)
		return nodes[0].GPUs
	}
	// GPU 0 removed, 1–3 shifted down.
	gs := rejoin("GPU-n1-1", "GPU-n1-2", "GPU-n1-3")
	for i, g := range gs[:3] {
		if want := fmt.Sprintf("GPU-n1-%d", i+1); g.UUID != want || g.Index != i || g.ID != ids[want] || g.Fault != "" {
			t.Errorf("GPU at %d: %s id %d fault %q; want %s id %d in service", i, g.UUID, g.ID, g.Fault, want, ids[want])
		}
	}
	if g := gs[3]; g.UUID != "GPU-n1-0" || g.Index < 4 || g.Fault == "" || g.ID != ids["GPU-n1-0"] {
		t.Errorf("the removed GPU: %+v", g.GPU)
	}
	// Two swapped.
	gs = rejoin("GPU-n1-2", "GPU-n1-1", "GPU-n1-3")
	if gs[0].UUID != "GPU-n1-2" || gs[1].UUID != "GPU-n1-1" || gs[0].ID != ids["GPU-n1-2"] {
		t.Errorf("after a swap: %s, %s", gs[0].UUID, gs[1].UUID)
	}
}

// TestPrune: logs go once their job ended LogRetention ago (reading one
// then says so), expired join tokens a day after expiring.
func TestPrune(t *testing.T) {
	a := newAgentEnv(t)
	j := submit(t, a.Env, "alice", coretest.Job(1, "h100").Build())
	replan(t, a.Env)
	if _, err := a.Service.AppendLog(ctx, "n1", j.ID, 0, []byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	a.beat(t, core.JobReport{Job: j.ID, State: core.RunExited, LogDone: true, LogSize: 6})
	if res, err := a.Service.Prune(ctx); err != nil || res.LogChunks != 0 {
		t.Errorf("Prune right after the job = %+v, %v; want nothing", res, err)
	}
	a.Clock.Advance(core.DefaultNodePolicy.LogRetention + time.Hour)
	res, err := a.Service.Prune(ctx)
	if err != nil || res.LogChunks != 1 || res.JoinTokens != 1 {
		t.Errorf("Prune after the retention = %+v, %v; want the chunk and the expired join token", res, err)
	}
	if _, err := a.Service.Log(ctx, a.Actor(t, "alice"), j.ID, 0, 0); core.ErrorCode(err) != core.CodeNotFound || !strings.Contains(err.Error(), "keeps logs for 30 days") {
		t.Errorf("reading a pruned log: %v", err)
	}
}
