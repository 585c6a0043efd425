package core

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var planNow = time.Date(2030, 1, 7, 9, 0, 0, 0, time.UTC)

// cluster builds nodes named prefix-1.. with perNode GPUs of model each,
// numbering GPU IDs from firstID.
func cluster(prefix, model string, nodes, perNode int, firstID int64) []Node {
	var out []Node
	id := firstID
	for n := 1; n <= nodes; n++ {
		node := Node{ID: id, Name: fmt.Sprintf("%s-%d", prefix, n)}
		for i := range perNode {
			node.GPUs = append(node.GPUs, GPU{ID: id, Node: node.Name, Index: i, Name: model, MemoryMiB: 81920, UUID: fmt.Sprintf("GPU-%d", id), State: GPUUp})
			id++
		}
		out = append(out, node)
	}
	return out
}

func refs(n Node, idx ...int) []GPURef {
	var out []GPURef
	for _, i := range idx {
		out = append(out, n.GPUs[i].Ref())
	}
	return out
}

func hours(h float64) time.Duration { return time.Duration(h * float64(time.Hour)) }

func queued(id int64, owner string, gpus int, guess time.Duration) Job {
	return Job{ID: id, Owner: owner, GPUs: gpus, Class: ClassNormal, State: JobQueued, SubmittedAt: planNow, Hints: Hints{Guess: guess}}
}

func planned(t *testing.T, p Plan, id int64) PlannedJob {
	t.Helper()
	for _, pj := range append(slices.Clone(p.Queued), p.Running...) {
		if pj.Job == id {
			return pj
		}
	}
	t.Fatalf("j%d is not in the plan", id)
	return PlannedJob{}
}

func TestPlanReasons(t *testing.T) {
	nodes := cluster("a100", "NVIDIA A100-SXM4-80GB", 2, 4, 1)
	res := Reservation{ID: 7, Owner: "alice", Start: planNow.Add(-time.Hour), End: planNow.Add(4 * time.Hour), State: Confirmed, GPUs: refs(nodes[1], 0, 1, 2, 3)}
	s := Snapshot{
		Nodes:        nodes,
		Reservations: []Reservation{res},
		Running: []Job{{ID: 1, Owner: "bob", GPUs: 4, Class: ClassNormal, State: JobRunning, StartedAt: planNow.Add(-time.Hour),
			Assigned: refs(nodes[0], 0, 1, 2, 3), Hints: Hints{Guess: 3 * time.Hour}}},
		Queued: []Job{
			queued(2, "carol", 4, hours(1)),
			queued(3, "dave", 4, hours(1)),
			{ID: 4, Owner: "alice", GPUs: 2, Class: ClassReserved, Reservation: 7, State: JobQueued, SubmittedAt: planNow, Hints: Hints{Guess: hours(1)}},
		},
		// j1 holds a100-1 until its P90 end, 11:30; the reasons give medians.
		Estimates: map[int64]Estimate{1: {P50: 3 * time.Hour, P90: 3*time.Hour + 30*time.Minute}},
	}
	p := Planner{Config: DefaultPlanConfig}.Plan(planNow, s)
	tests := []struct {
		job        int64
		start      time.Duration
		startNow   bool
		reasonPart string
	}{
		{4, 0, true, "starting now"},
		{2, 2 * time.Hour, false, "waiting for 4×GPU on one node; a100-1 is busy with j1 (bob) until about 2030-01-07 11:00 UTC"},
		{3, 3 * time.Hour, false, "j2 (carol), ahead in the queue, is planned on a100-1 until about 2030-01-07 12:00 UTC"},
	}
	for _, tt := range tests {
		t.Run(JobName(tt.job), func(t *testing.T) {
			pj := planned(t, p, tt.job)
			if !pj.StartP50.Equal(planNow.Add(tt.start)) || pj.StartNow != tt.startNow {
				t.Errorf("start %s (now=%t), want %s (now=%t)", pj.StartP50, pj.StartNow, planNow.Add(tt.start), tt.startNow)
			}
			if !strings.Contains(pj.Reason, tt.reasonPart) {
				t.Errorf("reason %q, want it to contain %q", pj.Reason, tt.reasonPart)
			}
		})
	}
	// The reserved job runs inside its own reservation, on its GPUs.
	for _, g := range planned(t, p, 4).GPUs {
		if g < nodes[1].GPUs[0].ID {
			t.Errorf("reserved job on GPU %d, outside its reservation", g)
		}
	}
	// A job that needs the reserved node waits for the reservation.
	s.Queued = []Job{queued(5, "erin", 8, hours(1))}
	s.Running = nil
	p = Planner{Config: DefaultPlanConfig}.Plan(planNow, s)
	if got := planned(t, p, 5); !got.StartP50.Equal(res.End) || !strings.Contains(got.Reason, "a100-2 is reserved by alice (r7) until 2030-01-07 13:00 UTC") {
		t.Errorf("8-GPU job: start %s, reason %q; want the reservation's end and its name", got.StartP50, got.Reason)
	}
}

func TestPlanGangs(t *testing.T) {
	nodes := cluster("h100", "NVIDIA H100 80GB HBM3", 3, 8, 1)
	tests := []struct {
		gpus      int
		wantNodes int
	}{{16, 2}, {12, 2}, {24, 3}, {8, 1}}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.gpus), func(t *testing.T) {
			s := Snapshot{Nodes: nodes, Queued: []Job{queued(1, "alice", tt.gpus, hours(2))}}
			pj := planned(t, Planner{Config: DefaultPlanConfig}.Plan(planNow, s), 1)
			if len(pj.GPUs) != tt.gpus || !pj.StartNow {
				t.Fatalf("got %d GPUs (start now %t), want %d now", len(pj.GPUs), pj.StartNow, tt.gpus)
			}
			used := map[int64]int{}
			for _, g := range pj.GPUs {
				used[(g-1)/8]++
			}
			if len(used) != tt.wantNodes {
				t.Errorf("spread over %d nodes, want %d", len(used), tt.wantNodes)
			}
			whole := 0
			for _, n := range used {
				if n == 8 {
					whole++
				}
			}
			if whole < tt.wantNodes-1 {
				t.Errorf("%d whole nodes, want at least %d", whole, tt.wantNodes-1)
			}
		})
	}
	// A gang waits until enough whole nodes are free together.
	s := Snapshot{Nodes: nodes,
		Running: []Job{{ID: 1, Owner: "bob", GPUs: 1, State: JobRunning, StartedAt: planNow, Assigned: refs(nodes[0], 3), Hints: Hints{Guess: hours(1)}},
			{ID: 2, Owner: "bob", GPUs: 1, State: JobRunning, StartedAt: planNow, Assigned: refs(nodes[1], 5), Hints: Hints{Guess: hours(2)}}},
		Queued: []Job{queued(3, "alice", 24, hours(1))},
	}
	if pj := planned(t, Planner{Config: DefaultPlanConfig}.Plan(planNow, s), 3); !pj.StartP50.Equal(planNow.Add(2 * time.Hour)) {
		t.Errorf("24-GPU gang starts %s, want when the last node frees (%s)", pj.StartP50, planNow.Add(2*time.Hour))
	}
}

func TestPlanOrder(t *testing.T) {
	nodes := cluster("a100", "NVIDIA A100-SXM4-80GB", 1, 1, 1)
	old := queued(1, "alice", 1, hours(10))
	old.SubmittedAt = planNow.Add(-100 * time.Hour)
	high := queued(2, "bob", 1, hours(5))
	high.Class = ClassHigh
	short := queued(3, "carol", 1, hours(1))
	short.Project = "steady"
	long := queued(4, "dave", 1, hours(3))
	long.Project = "steady"
	low := queued(5, "erin", 1, hours(0.5))
	low.Class, low.Preemptible = ClassLow, true
	heavy := queued(6, "frank", 1, hours(1))
	heavy.Project = "greedy"
	light := queued(7, "grace", 1, hours(1))
	light.Project = "modest"
	s := Snapshot{Nodes: nodes, Queued: []Job{long, short, old, low, high, heavy, light},
		Usage: map[string]float64{"greedy": 1000, "steady": 300, "modest": 10}}
	var got []int64
	for _, pj := range (Planner{Config: DefaultPlanConfig}).Plan(planNow, s).Queued {
		got = append(got, pj.Job)
	}
	// high first; then by aged, fair-shared GPU-time: the 100-hour-old job,
	// the modest project's hour, the steady project's hour, its 3 hours
	// (factor 0.73 × 3), the greedy project's hour (factor 3.6); low last.
	want := []int64{2, 1, 7, 3, 4, 6, 5}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("queue order (-want +got):\n%s", diff)
	}
}

// randomSnapshot makes a valid snapshot: GPUs held by running jobs do not
// overlap each other or foreign reservations now, reservations do not
// overlap, reserved jobs name their owner's reservation.
func randomSnapshot(rng *rand.Rand) Snapshot {
	nodes := cluster("a100", "NVIDIA A100-SXM4-80GB", 1+rng.IntN(4), 8, 1)
	nodes = append(nodes, cluster("h100", "NVIDIA H100 80GB HBM3", 1+rng.IntN(3), 4, 1000)...)
	s := Snapshot{Nodes: nodes, Estimates: map[int64]Estimate{}, Usage: map[string]float64{"p1": rng.Float64() * 100, "p2": rng.Float64() * 100}}
	taken := map[int64][][2]time.Time{} // GPU → windows held
	free := func(g int64, a, b time.Time) bool {
		for _, w := range taken[g] {
			if a.Before(w[1]) && w[0].Before(b) {
				return false
			}
		}
		return true
	}
	owners := []string{"alice", "bob", "carol"}
	for r := int64(1); r <= int64(rng.IntN(6)); r++ {
		n := nodes[rng.IntN(len(nodes))]
		start := planNow.Add(hours(float64(rng.IntN(48)) - 4))
		end := start.Add(hours(float64(1 + rng.IntN(12))))
		var gs []GPURef
		for _, g := range n.GPUs {
			if rng.IntN(2) == 0 && free(g.ID, start, end) {
				gs = append(gs, g.Ref())
				taken[g.ID] = append(taken[g.ID], [2]time.Time{start, end})
			}
		}
		if len(gs) > 0 && end.After(planNow) {
			s.Reservations = append(s.Reservations, Reservation{ID: r, Owner: owners[rng.IntN(3)], Start: start, End: end, State: Confirmed, GPUs: gs})
		}
	}
	id := int64(1)
	for range rng.IntN(10) {
		n := nodes[rng.IntN(len(nodes))]
		k := 1 + rng.IntN(len(n.GPUs))
		started := planNow.Add(-hours(rng.Float64() * 5))
		var gs []GPURef
		for _, g := range n.GPUs {
			if len(gs) < k && free(g.ID, started, planNow.Add(time.Minute)) {
				gs = append(gs, g.Ref())
			}
		}
		if len(gs) == 0 {
			continue
		}
		pre := rng.IntN(3) == 0
		for _, g := range gs {
			taken[g.ID] = append(taken[g.ID], [2]time.Time{started, planNow.Add(time.Minute)})
		}
		s.Running = append(s.Running, Job{ID: id, Owner: owners[rng.IntN(3)], GPUs: len(gs), Class: ClassNormal, Preemptible: pre,
			State: JobRunning, StartedAt: started, Assigned: gs})
		s.Estimates[id] = Estimate{P50: hours(0.5 + rng.Float64()*6), P90: hours(7 + rng.Float64()*6)}
		id++
	}
	classes := []JobClass{ClassHigh, ClassNormal, ClassNormal, ClassLow}
	for range rng.IntN(40) {
		j := Job{ID: id, Owner: owners[rng.IntN(3)], Project: []string{"p1", "p2", ""}[rng.IntN(3)], GPUs: []int{1, 1, 2, 4, 8, 12, 16}[rng.IntN(7)],
			Class: classes[rng.IntN(4)], State: JobQueued, SubmittedAt: planNow.Add(-hours(rng.Float64() * 20))}
		j.Model = []string{"", "a100", "h100"}[rng.IntN(3)]
		j.Preemptible = j.Class == ClassLow || rng.IntN(5) == 0
		if len(s.Reservations) > 0 && rng.IntN(5) == 0 {
			r := s.Reservations[rng.IntN(len(s.Reservations))]
			j.Class, j.Reservation, j.Owner, j.Preemptible, j.Model = ClassReserved, r.ID, r.Owner, false, ""
			j.GPUs = 1 + rng.IntN(len(r.GPUs))
		}
		s.Estimates[id] = Estimate{P50: hours(0.2 + rng.Float64()*8), P90: hours(8.5 + rng.Float64()*8)}
		s.Queued = append(s.Queued, j)
		id++
	}
	return s
}

// TestPlanProperties checks the planner's promises on random snapshots.
func TestPlanProperties(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 42))
		s := randomSnapshot(rng)
		before := fmt.Sprintf("%#v", s)
		planner := Planner{Config: DefaultPlanConfig}
		planner.Config.Protect = []int{0, 1, 3}[seed%3] // conservative, EASY-like, in between
		// Shared starts protected, with and without the shared head.
		planner.Config.ProtectShared, planner.Config.SharedHead = []int{0, 0, 256, 3}[seed%4], seed%4 == 3
		p := planner.Plan(planNow, s)
		if after := fmt.Sprintf("%#v", s); after != before {
			t.Fatalf("seed %d: Plan changed its snapshot", seed)
		}
		// The same input, in another order, gives the same plan.
		shuffled := s
		shuffled.Queued = slices.Clone(s.Queued)
		shuffled.Running = slices.Clone(s.Running)
		rng.Shuffle(len(shuffled.Queued), func(i, j int) { shuffled.Queued[i], shuffled.Queued[j] = shuffled.Queued[j], shuffled.Queued[i] })
		rng.Shuffle(len(shuffled.Running), func(i, j int) { shuffled.Running[i], shuffled.Running[j] = shuffled.Running[j], shuffled.Running[i] })
		if diff := cmp.Diff(p, planner.Plan(planNow, shuffled)); diff != "" {
			t.Fatalf("seed %d: plan depends on input order (-first +shuffled):\n%s", seed, diff)
		}
		checkPlan(t, seed, s, p)
	}
}

func checkPlan(t *testing.T, seed uint64, s Snapshot, p Plan) {
	t.Helper()
	type span struct {
		job        int64
		start, end time.Time
	}
	held := map[int64][]span{}
	jobs := map[int64]Job{}
	for _, j := range append(slices.Clone(s.Running), s.Queued...) {
		jobs[j.ID] = j
	}
	if len(p.Queued) != len(s.Queued) || len(p.Running) != len(s.Running) {
		t.Fatalf("seed %d: plan has %d queued and %d running, snapshot %d and %d", seed, len(p.Queued), len(p.Running), len(s.Queued), len(s.Running))
	}
	capacity := map[string]int{}
	for _, g := range allGPUs(s.Nodes) {
		capacity[""]++
		capacity[g.Model().Family]++
	}
	for _, pj := range append(slices.Clone(p.Queued), p.Running...) {
		j := jobs[pj.Job]
		if pj.GPUs == nil {
			if j.GPUs <= capacity[j.Model] && j.Class != ClassReserved {
				t.Errorf("seed %d: j%d (%d×%q) was not placed: %s", seed, j.ID, j.GPUs, j.Model, pj.Reason)
			}
			continue
		}
		if len(pj.GPUs) != j.GPUs {
			t.Errorf("seed %d: j%d planned on %d GPUs, asked for %d", seed, j.ID, len(pj.GPUs), j.GPUs)
		}
		if pj.StartP90.Before(pj.StartP50) || pj.EndP90.Before(pj.EndP50) || !pj.EndP50.After(pj.StartP50) {
			t.Errorf("seed %d: j%d bands out of order: %s %s %s %s", seed, j.ID, pj.StartP50, pj.StartP90, pj.EndP50, pj.EndP90)
		}
		for _, g := range pj.GPUs {
			held[g] = append(held[g], span{j.ID, pj.StartP50, pj.EndP50})
		}
		pre := j.Preemptible || j.Class == ClassLow
		for _, r := range s.Reservations {
			if r.ID == j.Reservation {
				if pj.StartP50.Before(r.Start) || !slices.ContainsFunc(r.GPUs, func(g GPURef) bool { return g.ID == pj.GPUs[0] }) {
					t.Errorf("seed %d: reserved j%d planned outside its reservation", seed, j.ID)
				}
				continue
			}
			overlaps := r.Start.Before(pj.EndP50) && pj.StartP50.Before(r.End) &&
				slices.ContainsFunc(r.GPUs, func(g GPURef) bool { return slices.Contains(pj.GPUs, g.ID) })
			if !overlaps || pj.Position == 0 && !pre {
				continue // running non-preemptible jobs were placed before the planner saw them
			}
			if !pre {
				t.Errorf("seed %d: non-preemptible j%d overlaps r%d", seed, j.ID, r.ID)
			} else if pj.Drain != nil && pj.StartP50.Before(pj.Drain.Deadline) && pj.EndP90.After(pj.Drain.Deadline) {
				t.Errorf("seed %d: j%d is drained by %s but its P90 end is %s", seed, j.ID, pj.Drain.Deadline, pj.EndP90)
			} else if pj.Drain == nil || pj.Drain.Deadline.After(laterOf(r.Start, pj.StartP50)) || (pj.StartP50.Before(r.Start) && pj.EndP50.After(r.Start)) {
				t.Errorf("seed %d: preemptible j%d overlaps r%d without a drain before it (drain %+v)", seed, j.ID, r.ID, pj.Drain)
			}
		}
	}
	for g, spans := range held {
		slices.SortFunc(spans, func(a, b span) int { return a.start.Compare(b.start) })
		for i := 1; i < len(spans); i++ {
			if spans[i].start.Before(spans[i-1].end) {
				t.Errorf("seed %d: GPU %d holds j%d and j%d at once", seed, g, spans[i-1].job, spans[i].job)
			}
		}
	}
}

func TestWhatIfChangesNothing(t *testing.T) {
	s := randomSnapshot(rand.New(rand.NewPCG(7, 7)))
	before := fmt.Sprintf("%#v", s)
	planner := Planner{Config: DefaultPlanConfig}
	want := planner.Plan(planNow, s)
	pj := planner.WhatIf(planNow, s, Job{Owner: "zoe", GPUs: 2, Class: ClassNormal, Hints: Hints{Guess: hours(3)}})
	if pj.GPUs == nil || pj.StartP50.Before(planNow) {
		t.Errorf("what-if answer %+v, want a placement", pj)
	}
	if fmt.Sprintf("%#v", s) != before {
		t.Error("WhatIf changed the snapshot")
	}
	if diff := cmp.Diff(want, planner.Plan(planNow, s)); diff != "" {
		t.Errorf("the plan changed after WhatIf (-before +after):\n%s", diff)
	}
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// TestPreemptibleAvoidsDrains: a preemptible job that can start now on a
// node where nothing will drain it goes there, not where a reservation
// opens soon — even when that node is the tighter fit.
func TestPreemptibleAvoidsDrains(t *testing.T) {
	nodes := cluster("a100", "NVIDIA A100-SXM4-80GB", 2, 4, 1)
	soon := Reservation{ID: 1, Owner: "alice", Start: planNow.Add(15 * time.Minute), End: planNow.Add(5 * time.Hour), State: Confirmed, GPUs: refs(nodes[0], 0, 1, 2, 3)}
	busy := Job{ID: 1, Owner: "bob", GPUs: 2, Class: ClassNormal, State: JobRunning, StartedAt: planNow, Assigned: refs(nodes[1], 0, 1), Hints: Hints{Guess: hours(10)}}
	low := queued(2, "carol", 2, hours(6))
	low.Class, low.Preemptible = ClassLow, true
	p := Planner{Config: DefaultPlanConfig}.Plan(planNow, Snapshot{Nodes: nodes, Reservations: []Reservation{soon}, Running: []Job{busy}, Queued: []Job{low}})
	pj := planned(t, p, 2)
	if !pj.StartNow || pj.Drain != nil || pj.GPUs[0] < nodes[1].GPUs[0].ID {
		t.Errorf("preemptible job: start now %t on %v, drain %+v; want now on a100-2 with no drain", pj.StartNow, pj.GPUs, pj.Drain)
	}
}

// TestClearsWindowsByP90: a non-preemptible job whose median run would end
// before a reservation but whose P90 run would not waits until after it.
func TestClearsWindowsByP90(t *testing.T) {
	nodes := cluster("a100", "NVIDIA A100-SXM4-80GB", 1, 2, 1)
	r := Reservation{ID: 1, Owner: "alice", Start: planNow.Add(2 * time.Hour), End: planNow.Add(4 * time.Hour), State: Confirmed, GPUs: refs(nodes[0], 0, 1)}
	j := queued(1, "bob", 2, 0)
	s := Snapshot{Nodes: nodes, Reservations: []Reservation{r}, Queued: []Job{j},
		Estimates: map[int64]Estimate{1: {P50: time.Hour, P90: 3 * time.Hour}}}
	if pj := planned(t, Planner{Config: DefaultPlanConfig}.Plan(planNow, s), 1); !pj.StartP50.Equal(r.End) {
		t.Errorf("start %s, want after the window (%s): its P90 run would overlap it", pj.StartP50, r.End)
	}
	s.Estimates[1] = Estimate{P50: time.Hour, P90: 90 * time.Minute}
	if pj := planned(t, Planner{Config: DefaultPlanConfig}.Plan(planNow, s), 1); !pj.StartNow {
		t.Errorf("start %s, want now: even its P90 run ends before the window", pj.StartP50)
	}
}

// TestPlansShareOnlyMemory: plans reuse the timelines of earlier plans
// (timelinesPool); a plan of one cluster between two plans of another, a
// larger and a smaller one, changes nothing in the second.
func TestPlansShareOnlyMemory(t *testing.T) {
	planner := Planner{Config: DefaultPlanConfig}
	rng := rand.New(rand.NewPCG(5, 5))
	a, big, small := randomSnapshot(rng), benchSnapshot(300), randomSnapshot(rng)
	first := planner.Plan(planNow, a)
	planner.Plan(planNow.Add(time.Hour), big)
	planner.Plan(planNow, small)
	if diff := cmp.Diff(first, planner.Plan(planNow, a)); diff != "" {
		t.Errorf("the same snapshot planned again after others (-first +again):\n%s", diff)
	}
}

// TestLeanPlans: a plan without reasons, bands or running jobs
// (PlanConfig.NoReasons, NoBands, NoRunning) is the full plan less those,
// on random snapshots.
func TestLeanPlans(t *testing.T) {
	tests := []struct {
		name                          string
		noReasons, noBands, noRunning bool
	}{
		{"no reasons", true, false, false},
		{"no bands", false, true, false},
		{"no running jobs", false, false, true},
		{"none of them", true, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range uint64(100) {
				s := randomSnapshot(rand.New(rand.NewPCG(seed, 7)))
				full := Planner{Config: DefaultPlanConfig}
				full.Config.Protect = int(seed % 2)
				lean := full
				lean.Config.NoReasons, lean.Config.NoBands, lean.Config.NoRunning = tt.noReasons, tt.noBands, tt.noRunning
				want, got := full.Plan(planNow, s), lean.Plan(planNow, s)
				if tt.noRunning {
					want.Running = nil
				}
				for _, jobs := range [][]PlannedJob{want.Queued, want.Running, got.Queued, got.Running} {
					for i := range jobs {
						pj := &jobs[i]
						if tt.noReasons && pj.GPUs != nil {
							pj.Reason = ""
						}
					}
				}
				if tt.noBands { // every time is the slot's, the reasons' too
					for i := range got.Queued {
						g := got.Queued[i]
						if g.StartP50 != g.Slot || g.StartP90 != g.Slot || g.EndP50 != g.EndP90 {
							t.Fatalf("seed %d: j%d without bands: %s, %s, %s to %s; want the slot's times", seed, g.Job, g.Slot, g.StartP50, g.StartP90, g.EndP90)
						}
					}
					for _, jobs := range [][]PlannedJob{want.Queued, want.Running, got.Queued, got.Running} {
						for i := range jobs {
							pj := &jobs[i]
							pj.StartP50, pj.StartP90, pj.EndP50, pj.EndP90 = time.Time{}, time.Time{}, time.Time{}, time.Time{}
							if pj.Reason != "" && !strings.HasPrefix(pj.Reason, "cannot") {
								pj.Reason = "…"
							}
						}
					}
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("seed %d: (-full less reasons or bands +lean):\n%s", seed, diff)
				}
			}
		})
	}
}
