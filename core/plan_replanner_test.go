package core

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestReplannerMatchesPlan replays random histories of a small cluster —
// jobs arrive, start as planned, end early or late, estimates change,
// reservations come and go, GPUs fail and return, time moves by nothing,
// seconds, minutes or hours, or back — and checks that every plan the Replanner
// makes, keeping what it can from the last one, is the one Planner.Plan
// makes from scratch, and that it leaves the snapshot as it was.
func TestReplannerMatchesPlan(t *testing.T) {
	tests := []struct {
		name    string
		protect int
		arrive  int  // up to this many jobs arrive between two plans
		lean    bool // no reasons, no running jobs, bands in every other plan, as gpucal sim plans
		shared  int  // PlanConfig.ProtectShared
		head    bool // PlanConfig.SharedHead
	}{
		{"conservative, short queues", 0, 4, false, 0, false},
		{"conservative, long queues", 0, 24, false, 0, false}, // the node index takes over from 32 queued jobs
		{"EASY-like", 1, 12, false, 0, false},
		{"lean", 0, 24, true, 0, false},
		{"shared starts protected", 0, 24, false, 256, false},
		{"the first two shared starts protected", 0, 24, false, 2, false},
		{"shared starts protected, shared head", 0, 24, true, 256, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range uint64(25) {
				rng := rand.New(rand.NewPCG(seed, 99))
				h := newHistory(rng, randomSnapshot(rng))
				planner := Planner{Config: DefaultPlanConfig}
				planner.Config.Protect = tt.protect
				planner.Config.ProtectShared, planner.Config.SharedHead = tt.shared, tt.head
				planner.Config.NoReasons, planner.Config.NoRunning = tt.lean, tt.lean
				r := NewReplanner(planner)
				for step := range 40 {
					var before string
					if step%10 == 9 { // printing a snapshot costs more than planning it
						before = fmt.Sprintf("%#v", h.s)
					}
					planner.Config.NoBands = tt.lean && step%2 == 1
					r.Planner = planner
					want := planner.Plan(h.now, h.s)
					got := r.Plan(h.now, h.s)
					if diff := cmp.Diff(want, got); diff != "" {
						t.Fatalf("seed %d, step %d: (-from scratch +replanner):\n%s", seed, step, diff)
					}
					if before != "" && fmt.Sprintf("%#v", h.s) != before {
						t.Fatalf("seed %d, step %d: the Replanner changed its snapshot", seed, step)
					}
					h.advance(got, tt.arrive)
				}
			}
		})
	}
}

// history evolves a snapshot the way a cluster does between two plans.
// Every step makes new slices and maps: earlier snapshots stay as they were.
type history struct {
	rng    *rand.Rand
	s      Snapshot
	now    time.Time
	nextID int64
	refs   map[int64]GPURef
}

func newHistory(rng *rand.Rand, s Snapshot) *history {
	h := &history{rng: rng, s: s, now: planNow, refs: map[int64]GPURef{}}
	for _, g := range allGPUs(s.Nodes) {
		h.refs[g.ID] = g.Ref()
	}
	for _, j := range slices.Concat(s.Running, s.Queued) {
		h.nextID = max(h.nextID, j.ID+1)
	}
	return h
}

func (h *history) advance(p Plan, arrive int) {
	rng, s := h.rng, h.s
	estimates := make(map[int64]Estimate, len(s.Estimates))
	for id, e := range s.Estimates {
		estimates[id] = e
	}
	// Running jobs end now and then, or get a new estimate.
	var running []Job
	for _, j := range s.Running {
		switch rng.IntN(8) {
		case 0:
			continue
		case 1:
			e := estimates[j.ID]
			e.P50 += hours(rng.Float64())
			estimates[j.ID] = e
		}
		running = append(running, j)
	}
	// The plan's starts happen.
	start := map[int64][]int64{}
	for _, pj := range p.Queued {
		if pj.StartNow {
			start[pj.Job] = pj.GPUs
		}
	}
	var queue []Job
	for _, j := range s.Queued {
		if gpus, ok := start[j.ID]; ok {
			j.State, j.StartedAt, j.Assigned = JobRunning, h.now, nil
			for _, id := range gpus {
				j.Assigned = append(j.Assigned, h.refs[id])
			}
			running = append(running, j)
			continue
		}
		queue = append(queue, j)
	}
	// Jobs arrive, while the queue is not too long for a quick test.
	if len(queue) > 60 {
		arrive = 0
	}
	classes := []JobClass{ClassHigh, ClassNormal, ClassNormal, ClassNormal, ClassLow}
	for range rng.IntN(arrive + 1) {
		j := Job{ID: h.nextID, Owner: "dave", Project: []string{"p1", "p2"}[rng.IntN(2)], GPUs: []int{1, 1, 1, 2, 4, 8, 12, 16}[rng.IntN(8)],
			Class: classes[rng.IntN(len(classes))], State: JobQueued, SubmittedAt: h.now, Preemptible: rng.IntN(6) == 0}
		j.Model = []string{"", "", "a100", "h100"}[rng.IntN(4)]
		estimates[j.ID] = Estimate{P50: hours(0.1 + rng.Float64()*6), P90: hours(6 + rng.Float64()*6)}
		queue = append(queue, j)
		h.nextID++
	}
	// Reservations are booked and cancelled; GPUs fail and come back.
	reservations := slices.Clone(s.Reservations)
	if rng.IntN(6) == 0 && len(reservations) > 0 {
		reservations = slices.Delete(reservations, 0, 1)
	}
	if rng.IntN(6) == 0 {
		n := s.Nodes[rng.IntN(len(s.Nodes))]
		from := h.now.Add(hours(float64(1 + rng.IntN(30))))
		reservations = append(reservations, Reservation{ID: h.nextID, Owner: "erin", Start: from, End: from.Add(hours(float64(1 + rng.IntN(6)))),
			State: Confirmed, GPUs: refs(n, 0, 1)})
		h.nextID++
	}
	nodes := s.Nodes
	if rng.IntN(10) == 0 {
		nodes = slices.Clone(s.Nodes)
		for i := range nodes {
			nodes[i].GPUs = slices.Clone(nodes[i].GPUs)
		}
		g := &nodes[rng.IntN(len(nodes))].GPUs[0]
		g.State = map[GPUState]GPUState{GPUUp: GPUDown, GPUDown: GPUUp}[g.State]
	}
	h.s = Snapshot{Nodes: nodes, Reservations: reservations, Running: running, Queued: queue, Estimates: estimates,
		Usage: s.Usage, Shares: s.Shares}
	// Time moves on: not at all, by seconds, by minutes or by hours; or a
	// clock goes back a few minutes.
	switch rng.IntN(5) {
	case 4:
		h.now = h.now.Add(-time.Duration(1+rng.IntN(10)) * time.Minute)
	case 1:
		h.now = h.now.Add(time.Duration(1+rng.IntN(59)) * time.Second)
	case 2:
		h.now = h.now.Add(time.Duration(1+rng.IntN(30)) * time.Minute)
	case 3:
		h.now = h.now.Add(hours(1 + 4*rng.Float64()))
	}
}
