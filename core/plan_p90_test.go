package core

import (
	"testing"
	"time"
)

// TestPessimisticBand: the P90 band keeps the median plan's GPUs and lets
// delays cascade along them; a job that must keep clear of a window moves
// past it, a preemptible one stops where it opens.
func TestPessimisticBand(t *testing.T) {
	nodes := cluster("a100", "NVIDIA A100-SXM4-80GB", 1, 1, 1)
	at := func(h float64) time.Time { return planNow.Add(hours(h)) }
	// j1 runs (P50 1h, P90 2h); j2 and j3 wait for the one GPU, one after
	// the other; bob has booked it from +6h to +8h.
	window := Reservation{ID: 9, Owner: "bob", Start: at(6), End: at(8), State: Confirmed, GPUs: refs(nodes[0], 0)}
	base := Snapshot{
		Nodes: nodes,
		Running: []Job{{ID: 1, Owner: "alice", GPUs: 1, Class: ClassNormal, State: JobRunning, StartedAt: planNow,
			Assigned: refs(nodes[0], 0)}},
		Queued:    []Job{queued(2, "carol", 1, hours(1)), queued(3, "dave", 1, hours(1))},
		Estimates: map[int64]Estimate{1: {P50: hours(1), P90: hours(2)}, 2: {P50: hours(1), P90: hours(2)}, 3: {P50: hours(1), P90: hours(2)}},
	}
	tests := []struct {
		name       string
		change     func(s *Snapshot)
		job        int64
		start, p90 time.Time // P50 and P90 starts
		end90      time.Time
	}{
		{"the first in line waits for the running job's P90", nil, 2, at(1), at(2), at(4)},
		{"delays cascade", nil, 3, at(2), at(4), at(6)},
		{"a window in the way is waited out", func(s *Snapshot) {
			s.Reservations = []Reservation{window}
			s.Estimates[3] = Estimate{P50: hours(1), P90: hours(3)} // its P90 ends at +7h
		}, 3, at(2), at(8), at(11)},
		{"a preemptible job pushed past the window's start does not end before it starts", func(s *Snapshot) {
			s.Reservations = []Reservation{window}
			s.Queued[1].Preemptible = true
			s.Estimates[1] = Estimate{P50: hours(1), P90: hours(5)}
			s.Estimates[3] = Estimate{P50: hours(5), P90: hours(6)} // drained at +6h in the median plan
		}, 3, at(2), at(10), at(16)}, // j2 waits out the window, j3 follows it: no drain before +10h
		{"a preemptible job stops where the window opens", func(s *Snapshot) {
			s.Reservations = []Reservation{window}
			s.Queued[1].Preemptible = true
			s.Estimates[3] = Estimate{P50: hours(1), P90: hours(3)}
		}, 3, at(2), at(4), at(6)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base
			s.Queued = append([]Job(nil), base.Queued...)
			s.Estimates = map[int64]Estimate{}
			for k, v := range base.Estimates {
				s.Estimates[k] = v
			}
			if tt.change != nil {
				tt.change(&s)
			}
			// Slots from medians, so that the band's cascade is what moves.
			planner := Planner{Config: DefaultPlanConfig}
			planner.Config.Hold = 0
			pj := planned(t, planner.Plan(planNow, s), tt.job)
			if !pj.StartP50.Equal(tt.start) || !pj.StartP90.Equal(tt.p90) || !pj.EndP90.Equal(tt.end90) {
				t.Errorf("j%d: start %s (P90 %s), P90 end %s; want %s (%s), %s", tt.job,
					pj.StartP50.Format(time.Kitchen), pj.StartP90.Format(time.Kitchen), pj.EndP90.Format(time.Kitchen),
					tt.start.Format(time.Kitchen), tt.p90.Format(time.Kitchen), tt.end90.Format(time.Kitchen))
			}
		})
	}
}

// TestProtect: with Protect 1 the head of the queue keeps its planned
// start, and a job behind it that fits now starts now, even though that
// delays another unprotected job; with every job protected (0) it waits.
func TestProtect(t *testing.T) {
	nodes := append(cluster("a100", "NVIDIA A100-SXM4-80GB", 1, 1, 1), cluster("h100", "NVIDIA H100 80GB HBM3", 1, 1, 2)...)
	high := func(id int64, gpus int, model string, h float64) Job {
		j := queued(id, "alice", gpus, hours(h))
		j.Class, j.Model = ClassHigh, model
		return j
	}
	s := Snapshot{
		Nodes: nodes, // the A100 is free; the H100 runs j1 for an hour
		Running: []Job{{ID: 1, Owner: "bob", GPUs: 1, Class: ClassNormal, State: JobRunning, StartedAt: planNow,
			Assigned: refs(nodes[1], 0), Hints: Hints{Guess: hours(1)}}},
		Queued: []Job{
			high(2, 1, "h100", 1),           // the head: the H100 from +1h
			high(3, 2, "", 1),               // both nodes, from +2h
			queued(4, "carol", 1, hours(4)), // four hours on any GPU
		},
	}
	at := func(h float64) time.Time { return planNow.Add(hours(h)) }
	for _, tt := range []struct {
		protect    int
		j3, j4     time.Time
		j4StartNow bool
	}{
		{0, at(2), at(3), false},
		{1, at(4), planNow, true},
	} {
		cfg := DefaultPlanConfig
		cfg.Protect = tt.protect
		p := Planner{Config: cfg}.Plan(planNow, s)
		j2, j3, j4 := planned(t, p, 2), planned(t, p, 3), planned(t, p, 4)
		if !j2.StartP50.Equal(at(1)) || !j3.StartP50.Equal(tt.j3) || !j4.StartP50.Equal(tt.j4) || j4.StartNow != tt.j4StartNow {
			t.Errorf("Protect %d: j2 at %s, j3 at %s, j4 at %s (now: %t); want %s, %s, %s (%t)", tt.protect,
				j2.StartP50.Format(time.Kitchen), j3.StartP50.Format(time.Kitchen), j4.StartP50.Format(time.Kitchen), j4.StartNow,
				at(1).Format(time.Kitchen), tt.j3.Format(time.Kitchen), tt.j4.Format(time.Kitchen), tt.j4StartNow)
		}
	}
}

// TestHolds: the plan places a queued job around running jobs held past
// their medians (PlanConfig.Hold), so it waits for the GPU surely free
// soonest; its median start is when that GPU's holder ends at its median.
// Held until their medians, it waits for the earliest median end instead.
func TestHolds(t *testing.T) {
	nodes := cluster("a100", "NVIDIA A100-SXM4-80GB", 2, 1, 1)
	at := func(h float64) time.Time { return planNow.Add(hours(h)) }
	run := func(id int64, n Node) Job {
		return Job{ID: id, Owner: "alice", GPUs: 1, Class: ClassNormal, State: JobRunning, StartedAt: planNow, Assigned: refs(n, 0)}
	}
	s := Snapshot{
		Nodes:   nodes,
		Running: []Job{run(1, nodes[0]), run(2, nodes[1])},
		Queued:  []Job{queued(3, "bob", 1, 0)},
		Estimates: map[int64]Estimate{
			1: {P50: hours(1), P90: hours(16)}, // likely soon, maybe very late
			2: {P50: hours(2), P90: hours(2)},  // surely by 2h
			3: {P50: hours(1), P90: hours(2)},
		},
	}
	tests := []struct {
		name           string
		hold           float64
		node           Node
		slot, p50, p90 time.Time
	}{
		{"held until P90", 1, nodes[1], at(2), at(2), at(2)},
		{"held three quarters of the way (log scale): j1 until 8h", 0.75, nodes[1], at(2), at(2), at(2)},
		{"held a quarter of the way: j1 until 2h, a tie broken by the tighter fit", 0.25, nodes[0], at(2), at(1), at(16)},
		{"held until the median", 0, nodes[0], at(1), at(1), at(16)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			planner := Planner{Config: DefaultPlanConfig}
			planner.Config.Hold = tt.hold
			p := planner.Plan(planNow, s)
			pj := planned(t, p, 3)
			if pj.GPUs[0] != tt.node.GPUs[0].ID || !pj.Slot.Equal(tt.slot) || !pj.StartP50.Equal(tt.p50) || !pj.StartP90.Equal(tt.p90) {
				t.Errorf("j3 on GPU %d, slot %s, P50 %s, P90 %s; want GPU %d, %s, %s, %s", pj.GPUs[0],
					pj.Slot.Format(time.Kitchen), pj.StartP50.Format(time.Kitchen), pj.StartP90.Format(time.Kitchen),
					tt.node.GPUs[0].ID, tt.slot.Format(time.Kitchen), tt.p50.Format(time.Kitchen), tt.p90.Format(time.Kitchen))
			}
			if r := planned(t, p, 1); !r.EndP50.Equal(at(1)) || !r.EndP90.Equal(at(16)) {
				t.Errorf("j1 ends %s (P90 %s), want its median and P90 whatever the hold", r.EndP50.Format(time.Kitchen), r.EndP90.Format(time.Kitchen))
			}
			if pj.StartNow {
				t.Error("j3 starts now; both GPUs are busy")
			}
		})
	}
}
