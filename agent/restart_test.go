package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpucal/gpucal/agent/gpu"
	"github.com/gpucal/gpucal/core"
)

// TestRestartKeepsDeadline: an agent stopped mid-drain (its context
// cancelled, as when it is killed or upgraded) leaves the job running. A
// new agent on the same state directory, with the server cut off, adopts
// the job and kills it at the persisted time: no fresh grace, no second
// checkpoint signal, and the job is not started again.
func TestRestartKeepsDeadline(t *testing.T) {
	h := newHarness(t)
	// The children ignore USR1 and TERM; the shell only notes the checkpoint.
	o := shJob(10, `echo started; trap '' TERM USR1; sleep 1000 & sleep 1000 &
trap 'echo checkpoint' USR1; echo ready; while :; do sleep 0.05; done`, "GPU-a")
	h.conn.set(core.DesiredState{Run: []core.JobOrder{o}, Timing: fastTiming})
	h.start()
	first := h.awaitJob(0, 10, "running", func(r core.JobReport) bool { return r.State == core.RunRunning })
	h.awaitLog(10, "ready")

	now := time.Now()
	stop := core.StopOrder{
		Job: 10, Reason: core.StopDrain, Reservation: 4,
		CheckpointAt: now.Add(100 * time.Millisecond), TermAt: now.Add(300 * time.Millisecond),
		KillAt: now.Add(2500 * time.Millisecond), Deadline: now.Add(3 * time.Second),
	}
	n := h.conn.set(core.DesiredState{Run: []core.JobOrder{o}, Stop: []core.StopOrder{stop}, Timing: fastTiming})
	h.awaitJob(n, 10, "draining", func(r core.JobReport) bool { return r.State == core.RunDraining })
	awaitState(t, h.dir, "the TERM step persisted", func(st savedState) bool {
		return len(st.Jobs) == 1 && st.Jobs[0].Fired == [3]bool{true, true, false}
	})
	h.stop()
	if !groupAlive(first.PID) {
		t.Fatal("stopping the agent ended the job")
	}

	h.conn.setDown(true)
	m := h.beats()
	h.start()
	h.awaitJob(m, 10, "draining after the restart", func(r core.JobReport) bool { return r.State == core.RunDraining })
	r := h.awaitJob(m, 10, "exited", func(r core.JobReport) bool { return r.State == core.RunExited })
	if r.PID != first.PID || r.Stopped != core.StopDrain || r.ExitCode != -1 || !strings.Contains(r.Error, "restarted") {
		t.Errorf("report %+v; want pid %d, stopped for a drain, exit code unknown because the agent restarted", r, first.PID)
	}
	if r.EndedAt.Before(stop.KillAt) || r.EndedAt.After(stop.Deadline) || r.Margin == nil || *r.Margin < 0 {
		t.Errorf("gone at %v (margin %v); want between the persisted kill at %v and the deadline %v", r.EndedAt, r.Margin, stop.KillAt, stop.Deadline)
	}
	if liveGroup(t, first.PID) {
		t.Error("a process of the adopted job is left")
	}
	log := readFile(t, logFile(h, 10))
	if strings.Count(log, "started") != 1 || strings.Count(log, "checkpoint") != 1 {
		t.Errorf("log %q; want the job started once and checkpointed once", log)
	}
}

// TestRestartAdoptsRunningJob: a job running when the agent restarts is
// adopted, reported running under the same PID, not started again, and
// reported exited (status unknown) when it ends.
func TestRestartAdoptsRunningJob(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	o := shJob(14, `echo started; while [ ! -e `+dir+`/go ]; do sleep 0.05; done; exit 0`, "GPU-b")
	h.conn.set(core.DesiredState{Run: []core.JobOrder{o}, Timing: fastTiming})
	h.start()
	first := h.awaitJob(0, 14, "running", func(r core.JobReport) bool { return r.State == core.RunRunning })
	h.stop()

	m := h.beats()
	h.start()
	r := h.awaitJob(m, 14, "running", func(r core.JobReport) bool { return r.State == core.RunRunning })
	if r.PID != first.PID || !r.StartedAt.Equal(first.StartedAt) {
		t.Errorf("adopted %+v; want pid %d started at %v", r, first.PID, first.StartedAt)
	}
	if g := gpuIn(h.last(), "GPU-b"); len(g.Processes) != 1 || g.Processes[0].Job != 14 {
		t.Errorf("GPU-b processes %+v; want the adopted job's", g.Processes)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r = h.awaitJob(m, 14, "exited", func(r core.JobReport) bool { return r.State == core.RunExited })
	if r.ExitCode != -1 || r.Stopped != "" || !strings.Contains(r.Error, "restarted") {
		t.Errorf("report %+v; want an end by itself with its status unknown", r)
	}
	if got := strings.Count(readFile(t, logFile(h, 14)), "started"); got != 1 {
		t.Errorf("started %d times, want once", got)
	}
}

// TestRestartWhileStarting: an agent that died between writing a job down
// and learning its PID does not start it again; it reports it ended.
func TestRestartWhileStarting(t *testing.T) {
	h := newHarness(t)
	o := shJob(15, `echo started`)
	st := savedState{Version: stateVersion, Node: node, Jobs: []record{{Order: o, Phase: phaseStarting}}, Timing: fastTiming}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeState(h.dir, b); err != nil {
		t.Fatal(err)
	}
	h.conn.set(core.DesiredState{Run: []core.JobOrder{o}, Timing: fastTiming})
	h.start()
	r := h.awaitJob(0, 15, "exited", func(r core.JobReport) bool { return r.State == core.RunExited })
	if r.PID != 0 || r.ExitCode != -1 || !strings.Contains(r.Error, "while starting") {
		t.Errorf("report %+v; want no PID and an error saying the agent stopped while starting it", r)
	}
	h.await(h.beats()+3, "three more heartbeats", func(core.Heartbeat) bool { return true })
	if _, err := os.Stat(logFile(h, 15)); err == nil {
		t.Error("the job was started again")
	}
}

func TestStateFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	sampler := gpu.NewSampler(newTestGPUs("GPU-a"), gpu.SamplerConfig{})
	a, err := New(Config{Name: node, Conn: newFakeConn(), Sampler: sampler, StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	a.jobs[3] = &job{rec: record{Order: shJob(3, "true"), Phase: phaseExited, ExitCode: 2, LogShipped: 10}}
	a.ackLocked(2)
	a.mu.Unlock()
	a.persist()

	dirMode := os.FileMode(0o700)
	if os.Geteuid() == 0 { // a root agent's jobs' users pass through to their progress files
		dirMode = 0o711
	}
	modes := map[string]os.FileMode{dir: dirMode, filepath.Join(dir, stateFile): 0o600, filepath.Join(dir, "progress"): 0o711}
	for path, want := range modes {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 { // state.json, logs/ and progress/
		t.Errorf("the state directory holds %d entries, want state.json, logs and progress (no temporary files)", len(entries))
	}
	st, err := loadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Jobs) != 1 || st.Jobs[0].ExitCode != 2 || st.Jobs[0].LogShipped != 10 || len(st.Acked) != 1 || st.Timing != core.DefaultDrainTiming {
		t.Errorf("read back %+v", st)
	}

	if err := os.WriteFile(filepath.Join(dir, stateFile), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Name: node, Conn: newFakeConn(), Sampler: sampler, StateDir: dir}); err == nil || !strings.Contains(err.Error(), "move it away") {
		t.Errorf("New over a broken state file: %v; want an error saying what to do", err)
	}
}

// awaitState waits until the persisted state satisfies ok.
func awaitState(t *testing.T, dir, what string, ok func(savedState) bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if st, err := loadState(dir); err == nil && ok(st) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the persisted state never showed %s", what)
		}
	}
}
