package core

import (
	"testing"
	"time"
)

// sharedSnapshot is one node of four GPUs, two of them busy with j1 for two
// more hours; j2 needs the whole node, and j3 one GPU. j3 comes first in
// the order when its median is shorter than j2's GPU-time.
func sharedSnapshot(j2, j3 Estimate) Snapshot {
	nodes := cluster("a100", "NVIDIA A100-SXM4-80GB", 1, 4, 1)
	running := Job{ID: 1, Owner: "alice", GPUs: 2, Class: ClassNormal, State: JobRunning, StartedAt: planNow,
		Assigned: refs(nodes[0], 0, 1)}
	return Snapshot{Nodes: nodes, Running: []Job{running},
		Queued:    []Job{queued(2, "bob", 4, 0), queued(3, "carol", 1, 0)},
		Estimates: map[int64]Estimate{1: {P50: 2 * time.Hour, P90: 2 * time.Hour}, 2: j2, 3: j3}}
}

// TestProtectShared: with PlanConfig.ProtectShared, a job placed before the
// planned start of a job that needs several GPUs of one node must clear it
// by its P90 run, not only by its median.
func TestProtectShared(t *testing.T) {
	whole := Estimate{P50: 10 * time.Minute, P90: 20 * time.Minute} // j2 first: 40 GPU-minutes
	tests := []struct {
		name      string
		protect   int
		j3        Estimate
		wantStart time.Duration // j3's planned start from now
	}{
		{"unprotected: the median fits before j2", 0, Estimate{P50: time.Hour, P90: 3 * time.Hour}, 0},
		{"protected: the P90 run would delay j2", 1, Estimate{P50: time.Hour, P90: 3 * time.Hour}, 2*time.Hour + 10*time.Minute},
		{"protected: even the P90 run ends before j2", 1, Estimate{P50: time.Hour, P90: 90 * time.Minute}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			planner := Planner{Config: DefaultPlanConfig}
			planner.Config.ProtectShared = tt.protect
			p := planner.Plan(planNow, sharedSnapshot(whole, tt.j3))
			if got := planned(t, p, 2).StartP50.Sub(planNow); got != 2*time.Hour {
				t.Errorf("j2 starts in %s, want 2h (when j1 ends)", got)
			}
			if got := planned(t, p, 3).StartP50.Sub(planNow); got != tt.wantStart {
				t.Errorf("j3 starts in %s, want %s", got, tt.wantStart)
			}
		})
	}
}

// TestProtectSharedFirstOnly: ProtectShared protects the slots of that many
// multi-GPU jobs, the first in queue order; behind them a one-GPU job may
// backfill by its median.
func TestProtectSharedFirstOnly(t *testing.T) {
	nodes := cluster("a100", "NVIDIA A100-SXM4-80GB", 2, 4, 1)
	busy := func(id int64, n Node) Job {
		return Job{ID: id, Owner: "alice", GPUs: 2, Class: ClassNormal, State: JobRunning, StartedAt: planNow, Assigned: refs(n, 0, 1)}
	}
	whole := Estimate{P50: 10 * time.Minute, P90: 20 * time.Minute}
	s := Snapshot{Nodes: nodes, Running: []Job{busy(1, nodes[0]), busy(2, nodes[1])},
		// j3 and j4 need a whole node each, after the running jobs' two hours;
		// j3 is first in the order (the smaller GPU-time). j5 needs one GPU
		// for an hour, three at its P90.
		Queued: []Job{queued(3, "bob", 4, 0), queued(4, "bob", 4, 0), queued(5, "carol", 1, 0)},
		Estimates: map[int64]Estimate{1: {P50: 2 * time.Hour, P90: 2 * time.Hour}, 2: {P50: 2 * time.Hour, P90: 2 * time.Hour},
			3: whole, 4: {P50: 11 * time.Minute, P90: 20 * time.Minute}, 5: {P50: time.Hour, P90: 3 * time.Hour}}}
	for _, tt := range []struct {
		protect int
		want    time.Duration // j5's start
		beside  int64         // the job whose node j5 goes to
	}{
		{1, 0, 4},                            // j4's slot is not protected: j5 fits before it by its median
		{2, 2*time.Hour + 10*time.Minute, 3}, // both are: j5 waits for the first node free after them
		{0, 0, 3},                            // none is: j5 takes the first node by its median
	} {
		planner := Planner{Config: DefaultPlanConfig}
		planner.Config.ProtectShared = tt.protect
		p := planner.Plan(planNow, s)
		j5 := planned(t, p, 5)
		if got := j5.StartP50.Sub(planNow); got != tt.want {
			t.Errorf("protect %d: j5 starts in %s, want %s", tt.protect, got, tt.want)
		}
		if beside := planned(t, p, tt.beside); tt.want == 0 && !sameNode(nodes, j5.GPUs[0], beside.GPUs[0]) {
			t.Errorf("protect %d: j5 on GPU %d, want it on j%d's node (GPU %d)", tt.protect, j5.GPUs[0], tt.beside, beside.GPUs[0])
		}
	}
}

func sameNode(nodes []Node, a, b int64) bool {
	for _, n := range nodes {
		in := func(id int64) bool { return id >= n.GPUs[0].ID && id <= n.GPUs[len(n.GPUs)-1].ID }
		if in(a) {
			return in(b)
		}
	}
	return false
}

// TestSharedHead: with PlanConfig.SharedHead the first job that needs
// several GPUs of one node is placed before the jobs ordered ahead of it,
// which then fit around its start.
func TestSharedHead(t *testing.T) {
	whole := Estimate{P50: 2 * time.Hour, P90: 2 * time.Hour} // 8 GPU-hours: after j3
	single := Estimate{P50: 3 * time.Hour, P90: 3 * time.Hour}
	tests := []struct {
		name     string
		head     bool
		want2    time.Duration // planned starts from now
		want3    time.Duration
		position int // j2's position in the queue, unchanged by the head
	}{
		{"in order", false, 3 * time.Hour, 0, 2},
		{"shared head first", true, 2 * time.Hour, 4 * time.Hour, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			planner := Planner{Config: DefaultPlanConfig}
			planner.Config.SharedHead = tt.head
			p := planner.Plan(planNow, sharedSnapshot(whole, single))
			j2, j3 := planned(t, p, 2), planned(t, p, 3)
			if got := j2.StartP50.Sub(planNow); got != tt.want2 {
				t.Errorf("j2 starts in %s, want %s", got, tt.want2)
			}
			if got := j3.StartP50.Sub(planNow); got != tt.want3 {
				t.Errorf("j3 starts in %s, want %s", got, tt.want3)
			}
			if j2.Position != tt.position {
				t.Errorf("j2 at position %d, want %d", j2.Position, tt.position)
			}
		})
	}
}
