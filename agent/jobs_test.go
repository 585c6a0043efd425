package agent

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gpucal/gpucal/agent/progress"
	"github.com/gpucal/gpucal/core"
)

// TestJobRunsExitsIsAckedAndForgotten: a JobOrder starts the job with
// gpucal's environment; its exit is reported with its whole log shipped;
// once acknowledged it is forgotten, and never started again although the
// server still lists it.
func TestJobRunsExitsIsAckedAndForgotten(t *testing.T) {
	h := newHarness(t)
	o := shJob(7, `echo "CUDA=$CUDA_VISIBLE_DEVICES JOB=$GPUCAL_JOB FOO=$FOO SERVER=$GPUCAL_SERVER NODES=$GPUCAL_NODES RANK=$GPUCAL_NODE_RANK"; exit 3`, "GPU-b", "GPU-a")
	o.Env = map[string]string{"FOO": "bar"}
	o.Nodes, o.Rank = []string{"node-0", node}, 1
	h.conn.set(core.DesiredState{Run: []core.JobOrder{o}})
	h.start()

	r := h.awaitJob(0, 7, "exited with its log shipped", func(r core.JobReport) bool { return r.State == core.RunExited && r.LogSize > 0 })
	if r.ExitCode != 3 || r.Signal != "" || r.Error != "" || r.Stopped != "" || r.Margin != nil {
		t.Errorf("report %+v; want exit code 3 and nothing else wrong", r)
	}
	if r.PID <= 0 || r.StartedAt.IsZero() || r.EndedAt.Before(r.StartedAt) {
		t.Errorf("pid %d, started %v, ended %v", r.PID, r.StartedAt, r.EndedAt)
	}
	want := "CUDA=GPU-b,GPU-a JOB=j7 FOO=bar SERVER=https://gpucal.example.org NODES=node-0,node-1 RANK=1\n"
	if got := h.conn.log(7); got != want {
		t.Errorf("the server's log %q, want %q", got, want)
	}
	if r.LogSize != int64(len(want)) {
		t.Errorf("log size %d, want %d", r.LogSize, len(want))
	}

	n := h.conn.set(core.DesiredState{Run: []core.JobOrder{o}, Ack: []int64{7}})
	h.await(n+1, "j7 forgotten", func(hb core.Heartbeat) bool { _, found := jobIn(hb, 7); return !found })
	m := h.beats()
	h.await(m+5, "five more heartbeats", func(core.Heartbeat) bool { return true })
	h.conn.mu.Lock()
	for _, hb := range h.conn.beats[m:] {
		if r, found := jobIn(hb, 7); found {
			t.Errorf("j7 reported after it was forgotten: %+v", r)
		}
	}
	h.conn.mu.Unlock()
	if got := strings.Count(readFile(t, logFile(h, 7)), "CUDA="); got != 1 {
		t.Errorf("the job ran %d times, want once", got)
	}
	h.stop()
	st, err := loadState(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Jobs) != 0 || !slices.Contains(st.Acked, 7) {
		t.Errorf("persisted jobs %+v, acked %v; want none, and j7 acknowledged", st.Jobs, st.Acked)
	}
}

func TestRefused(t *testing.T) {
	tests := []struct {
		name  string
		order core.JobOrder
		want  string
	}{
		{"no such program", core.JobOrder{Job: 1, Command: []string{"no-such-program-gpucal"}, GPUs: []string{"GPU-a"}}, `"no-such-program-gpucal" not found in the job's PATH`},
		{"a GPU not on the node", shJob(1, "true", "GPU-a", "GPU-z"), "GPU GPU-z is not on node node-1"},
		{"gpucal's variables", core.JobOrder{Job: 1, Command: []string{"true"}, Env: map[string]string{"GPUCAL_JOB": "j2"}}, "GPUCAL_JOB is set by gpucal's agent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.conn.set(core.DesiredState{Run: []core.JobOrder{tt.order}})
			h.start()
			r := h.awaitJob(0, 1, "refused", func(r core.JobReport) bool { return r.State == core.RunRefused })
			if !strings.Contains(r.Error, tt.want) || r.PID != 0 {
				t.Errorf("report %+v; want no PID and an error saying %q", r, tt.want)
			}
			m := h.beats()
			h.awaitJob(m+3, 1, "still refused", func(r core.JobReport) bool { return r.State == core.RunRefused })
			if _, err := os.Stat(logFile(h, 1)); err == nil {
				t.Error("a log was written for a job that never started")
			}
		})
	}
}

// TestProgress: a tqdm bar in the job's output reaches the heartbeat.
func TestProgress(t *testing.T) {
	h := newHarness(t)
	script := `printf 'loading\n 50%%|#####     | 5/10 [00:01<00:01,  5.00it/s]\r'; sleep 0.3
printf ' 60%%|######    | 6/10 [00:01<00:01,  5.00it/s]\r'; exec sleep 1000`
	h.conn.set(core.DesiredState{Run: []core.JobOrder{shJob(3, script, "GPU-a")}})
	h.start()
	// A drawing is read when the next begins: 5/10 while 6/10 shows.
	r := h.awaitJob(0, 3, "at step 5 of 10", func(r core.JobReport) bool { return r.Progress != nil && r.Progress.Step == 5 })
	if r.State != core.RunRunning || *r.Progress != (core.ProgressReport{Step: 5, Total: 10}) {
		t.Errorf("report %+v, progress %+v; want running at 5 of 10", r, *r.Progress)
	}
	hb := h.awaitJob(0, 3, "GPU use", func(r core.JobReport) bool { return r.GPUUtil > 0 })
	if hb.GPUUtil != 95 || hb.GPUMemMiB != 30000 {
		t.Errorf("GPU use %v%%, %d MiB; want 95%% and 30000 MiB (the test GPUs' busy readings)", hb.GPUUtil, hb.GPUMemMiB)
	}
	g := gpuIn(h.last(), "GPU-a")
	if len(g.Processes) != 1 || g.Processes[0].Job != 3 || g.Processes[0].PID != r.PID {
		t.Errorf("GPU-a processes %+v; want the job's process, marked j3", g.Processes)
	}
	if l := h.agent.Labels("GPU-a"); l.Job != "j3" || l.Project != "llm" {
		t.Errorf("Labels(GPU-a) = %+v, want j3 of project llm", l)
	}
	if l := h.agent.Labels("GPU-b"); l.Job != "" {
		t.Errorf("Labels(GPU-b) = %+v, want none", l)
	}
}

// TestProgressWithinEpoch: PyTorch Lightning's bar counts within an epoch;
// the job's epochs hint places it in the whole job.
func TestProgressWithinEpoch(t *testing.T) {
	h := newHarness(t)
	o := shJob(4, `printf 'Epoch 1:  50%%|#####     | 5/10 [00:01<00:01,  5.00it/s, v_num=0]\r'; sleep 0.3
printf 'Epoch 1:  60%%|######    | 6/10 [00:01<00:01,  5.00it/s, v_num=0]\r'; exec sleep 1000`, "GPU-a")
	o.Epochs = 4
	h.conn.set(core.DesiredState{Run: []core.JobOrder{o}})
	h.start()
	// Lightning's "Epoch 1" is the second: (1 + 0.5) ÷ 4.
	r := h.awaitJob(0, 4, "progress", func(r core.JobReport) bool { return r.Progress != nil })
	if *r.Progress != (core.ProgressReport{Fraction: 0.375}) {
		t.Errorf("progress %+v, want 37.5 %% of the job", *r.Progress)
	}
}

// TestProgressReport: what a heartbeat carries for each kind of line.
func TestProgressReport(t *testing.T) {
	tests := []struct {
		name   string
		r      progress.Report
		epochs int64
		want   core.ProgressReport
		ok     bool
	}{
		{"a plain bar", progress.Report{Fraction: 0.5, Step: 5, Total: 10}, 0, core.ProgressReport{Step: 5, Total: 10}, true},
		{"epochs on the line", progress.Report{Fraction: 0.35, Step: 5, Total: 10, Epoch: 4, Epochs: 10}, 0, core.ProgressReport{Fraction: 0.35}, true},
		{"a fraction alone", progress.Report{Fraction: 0.42}, 3, core.ProgressReport{Fraction: 0.42}, true},
		{"within an epoch, no hint", progress.Report{Fraction: 0.5, Step: 5, Total: 10, Epoch: 2}, 0, core.ProgressReport{}, false},
		{"within the first epoch of 4", progress.Report{Fraction: 0.5, Step: 5, Total: 10, Epoch: 1}, 4, core.ProgressReport{Fraction: 0.125}, true},
		{"the last epoch done", progress.Report{Fraction: 1, Step: 10, Total: 10, Epoch: 4}, 4, core.ProgressReport{Fraction: 1}, true},
		{"past the hint's epochs", progress.Report{Fraction: 0.5, Step: 5, Total: 10, Epoch: 5}, 4, core.ProgressReport{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := progressReport(tt.r, tt.epochs)
			if ok != tt.ok || (ok && got != tt.want) {
				t.Errorf("progressReport(%+v, %d) = %+v, %v; want %+v, %v", tt.r, tt.epochs, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestLeftoversStopped: when a job's first process ends, what it left in
// its process group is stopped (TERM, then KILL), and the job is reported
// exited by itself with the first process's status once the group is gone.
func TestLeftoversStopped(t *testing.T) {
	h := newHarness(t)
	h.conn.set(core.DesiredState{Run: []core.JobOrder{shJob(19, `(trap '' TERM; echo ready; exec sleep 1000) & sleep 0.2; exit 4`, "GPU-a")}})
	h.start()
	r := h.awaitJob(0, 19, "exited", func(r core.JobReport) bool { return r.State == core.RunExited })
	if r.ExitCode != 4 || r.Stopped != "" || r.Margin != nil {
		t.Errorf("report %+v; want exit code 4, not stopped", r)
	}
	if liveGroup(t, r.PID) {
		t.Error("the process the job left behind is still there")
	}
	h.awaitLog(19, "ready") // the child ran
}

// TestRunAsSelf: a job is run as its owner, unless the agent runs every
// job as itself.
func TestRunAsSelf(t *testing.T) {
	o := shJob(20, "echo hi")
	o.User = "no-such-user-gpucal"
	for _, self := range []bool{false, true} {
		t.Run(fmt.Sprint("self=", self), func(t *testing.T) {
			h := newHarness(t)
			h.conn.set(core.DesiredState{Run: []core.JobOrder{o}})
			h.start(func(a *Agent) { a.runAsSelf = self })
			r := h.awaitJob(0, 20, "ended", func(r core.JobReport) bool { return r.State == core.RunExited || r.State == core.RunRefused })
			switch {
			case self && (r.State != core.RunExited || r.ExitCode != 0):
				t.Errorf("report %+v; want it run as the agent's user", r)
			case !self && (r.State != core.RunRefused || !strings.Contains(r.Error, "no-such-user-gpucal")):
				t.Errorf("report %+v; want it refused for its unknown owner", r)
			}
		})
	}
}
