package core

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// benchSnapshot is the benchmark cluster: 1,024 nodes × 8 GPUs,
// 5,000 running jobs, 1,000 reservations of whole nodes over the next week,
// and queued jobs sized like the Philly trace (mostly 1 GPU, a few gangs).
func benchSnapshot(queuedJobs int) Snapshot {
	rng := rand.New(rand.NewPCG(1, 2))
	nodes := cluster("node", "NVIDIA A100-SXM4-80GB", 1024, 8, 1)
	s := Snapshot{Nodes: nodes, Estimates: map[int64]Estimate{}, Usage: map[string]float64{}}
	logUniform := func(lo, hi time.Duration) time.Duration {
		return time.Duration(math.Exp(math.Log(float64(lo)) + rng.Float64()*(math.Log(float64(hi))-math.Log(float64(lo)))))
	}
	sizes := []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 4, 8, 16}
	id := int64(1)
	gpu := 0
	for range 5000 {
		k := sizes[rng.IntN(len(sizes)-1)] // no gangs among the running
		node := nodes[(gpu/8)%len(nodes)]
		if gpu%8+k > 8 {
			gpu += 8 - gpu%8
			node = nodes[(gpu/8)%len(nodes)]
		}
		var gs []GPURef
		for i := range k {
			gs = append(gs, node.GPUs[(gpu+i)%8].Ref())
		}
		gpu += k
		s.Running = append(s.Running, Job{ID: id, Owner: "u", GPUs: k, Class: ClassNormal, State: JobRunning,
			StartedAt: planNow.Add(-logUniform(time.Minute, 10*time.Hour)), Assigned: gs})
		e := logUniform(10*time.Minute, 24*time.Hour)
		s.Estimates[id] = Estimate{P50: e, P90: 2 * e}
		id++
	}
	for r := range 1000 {
		n := nodes[(r*7)%len(nodes)]
		start := planNow.Add(time.Duration(24+r/100*12) * time.Hour)
		var gs []GPURef
		for _, g := range n.GPUs {
			gs = append(gs, g.Ref())
		}
		s.Reservations = append(s.Reservations, Reservation{ID: int64(r + 1), Owner: "owner", Start: start, End: start.Add(4 * time.Hour), State: Confirmed, GPUs: gs})
	}
	for range queuedJobs {
		j := Job{ID: id, Owner: fmt.Sprintf("u%d", rng.IntN(50)), Project: fmt.Sprintf("p%d", rng.IntN(8)), GPUs: sizes[rng.IntN(len(sizes))],
			Class: ClassNormal, State: JobQueued, SubmittedAt: planNow.Add(-logUniform(time.Minute, 48*time.Hour))}
		if rng.IntN(10) == 0 {
			j.Class, j.Preemptible = ClassLow, true
		}
		e := logUniform(5*time.Minute, 24*time.Hour)
		s.Estimates[id] = Estimate{P50: e, P90: 2 * e}
		s.Queued = append(s.Queued, j)
		id++
	}
	for p := range 8 {
		s.Usage[fmt.Sprintf("p%d", p)] = float64(p * 1000)
	}
	return s
}

func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		s := benchSnapshot(n)
		planner := Planner{Config: DefaultPlanConfig}
		b.Run(fmt.Sprintf("queued=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				planner.Plan(planNow, s)
			}
		})
	}
}

// BenchmarkReplan plans a cluster again after small changes, as the
// server's replan loop and gpucal sim do: the benchmark's cluster with
// 300 queued jobs, where between two plans one running job ends and a
// minute passes. "scratch" plans each snapshot with Planner.Plan,
// "replanner" with one Replanner.
func BenchmarkReplan(b *testing.B) {
	base := benchSnapshot(300)
	const steps = 64
	snaps := make([]Snapshot, steps)
	for i := range snaps {
		s := base
		s.Running = base.Running[i+1:] // one more running job has ended
		snaps[i] = s
	}
	planner := Planner{Config: DefaultPlanConfig}
	b.Run("scratch", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			planner.Plan(planNow.Add(time.Duration(i%steps)*time.Minute), snaps[i%steps])
			i++
		}
	})
	b.Run("replanner", func(b *testing.B) {
		b.ReportAllocs()
		r := NewReplanner(planner)
		i := 0
		for b.Loop() {
			r.Plan(planNow.Add(time.Duration(i%steps)*time.Minute), snaps[i%steps])
			i++
		}
	})
}
