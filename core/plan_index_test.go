package core

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAllKthStairs checks node staircases against the answer computed
// directly: the k-th earliest of the inputs' answers, for every length.
func TestAllKthStairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		var in []staircase
		for range 1 + rng.IntN(8) {
			var busy []interval
			at := int64(rng.IntN(50))
			for range rng.IntN(6) {
				start := at + int64(rng.IntN(40))
				end := start + 1 + int64(rng.IntN(30))
				busy = append(busy, interval{start: start, end: end, kind: ivKind(rng.IntN(2))})
				at = end
			}
			in = append(in, gpuStairs(busy, 10, semantics(rng.IntN(2)), nil))
		}
		all, _ := allKthStairs(in, nil, nil)
		// The tree's inner vertices: the pointwise minimum of two.
		a, b := in[0], in[len(in)-1]
		merged := minStairs(a, b, nil)
		for d := int64(1); d < 120; d++ {
			if g, want := merged.at(d), min(a.at(d), b.at(d)); g != want {
				t.Fatalf("d=%d: the minimum of %v and %v says %d, want %d", d, a, b, g, want)
			}
		}
		for k := 1; k <= len(in); k++ {
			got := all[k-1]
			for d := int64(1); d < 120; d++ {
				var answers []int64
				for _, s := range in {
					answers = append(answers, s.at(d))
				}
				slices.Sort(answers)
				if g, want := got.at(d), answers[k-1]; g != want {
					t.Fatalf("k=%d d=%d: staircase says %d, the inputs %d (%v from %v)", k, d, g, want, got, in)
				}
			}
		}
	}
}

// TestIndexedSearchAgrees checks that the node index finds the same
// earliest start as scanning every node, on timelines filled by planning
// random snapshots.
func TestIndexedSearchAgrees(t *testing.T) {
	p := Planner{Config: DefaultPlanConfig}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 9))
		tl, n := placedTimelines(p, rng)
		caps := capacities{models: map[string]Model{}, counts: map[capKey]capacity{}}
		var buf []window
		for range 20 {
			model := caps.model([]string{"", "a100", "h100"}[rng.IntN(3)])
			sk := seeker{model: model, preemptible: rng.IntN(3) == 0, dur: 60 * int64(1+rng.IntN(900))}
			sk.clear = sk.dur
			if !sk.preemptible && rng.IntN(2) == 0 {
				sk.clear = 2 * sk.dur
			}
			c := caps.of(tl, model, 0, sk.usable)
			if c.largest == 0 {
				continue
			}
			k := 1 + rng.IntN(c.largest)
			limit := n + 400*24*3600
			scan, indexed := p.fitOneNode, p.fitOneNodeIndexed
			if c.total > c.largest && rng.IntN(3) == 0 { // a gang
				k = c.largest + 1 + rng.IntN(c.total-c.largest)
				scan, indexed = p.fitGang, p.fitGangIndexed
			}
			sk.one = k == 1
			want, wok := scan(tl, sk, sk.usable, c.counts, k, n, limit, &buf)
			got, gok := indexed(tl, sk, sk.usable, c.counts, k, n, limit, &buf)
			if wok != gok || want.start != got.start {
				t.Fatalf("seed %d, %d GPUs for %ds (preemptible %v): scan %v at %d, index %v at %d",
					seed, k, sk.dur, sk.preemptible, wok, want.start-n, gok, got.start-n)
			}
		}
	}
}

// placedTimelines plans a random snapshot and returns the timelines its
// queue was placed on, and their now.
func placedTimelines(p Planner, rng *rand.Rand) (*timelines, int64) {
	s := randomSnapshot(rng)
	n := secs(planNow)
	est := estimator(s)
	tl := newTimelines(n, s.Nodes)
	p.place(planNow, s, tl, p.order(planNow, s, est), p.runningJobs(planNow, s, est, &tl.work))
	return tl, n
}

// TestNodeWindows checks a node's "wholly free" windows against their
// definition: an instant is in one exactly when it is in a window of every
// usable GPU of the node.
func TestNodeWindows(t *testing.T) {
	p := Planner{Config: DefaultPlanConfig}
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 21))
		tl, n := placedTimelines(p, rng)
		var buf, mine []window
		for range 20 {
			sk := seekerOnly{seeker: seeker{preemptible: rng.IntN(3) == 0, dur: 60 * int64(1+rng.IntN(900))}}
			sk.clear = sk.dur * int64(1+rng.IntN(2))
			sk.usable = sk.seeker.usable
			ni := rng.IntN(len(tl.nodes))
			from, limit := n+int64(rng.IntN(3600)), n+int64(rng.IntN(3*24*3600))
			got := slices.Clone(sk.nodeWindows(tl, ni, from, limit, &buf))
			for i := 1; i < len(got); i++ {
				if got[i].from <= got[i-1].to {
					t.Fatalf("seed %d: node windows %v overlap or are out of order", seed, got)
				}
			}
			for at := from; at <= limit; at += 97 {
				all, usable := true, 0
				for _, gi := range tl.nodes[ni].gpus {
					if !sk.usable(&tl.gpus[gi]) {
						continue
					}
					usable++
					mine = sk.windows(tl, gi, from, limit, mine[:0])
					all = all && slices.ContainsFunc(mine, func(w window) bool { return w.from <= at && at <= w.to })
				}
				in := slices.ContainsFunc(got, func(w window) bool { return w.from <= at && at <= w.to })
				if want := all && usable > 0; in != want {
					t.Fatalf("seed %d, node %d, %ds from %d to %d: %d in the node's windows %v is %v, want %v",
						seed, ni, sk.dur, from-n, limit-n, at-n, got, in, want)
				}
			}
		}
	}
}

// TestPlanPropertiesLongQueue runs the planner's property checks on queues
// long enough for placement to use the node index.
func TestPlanPropertiesLongQueue(t *testing.T) {
	for seed := range uint64(100) {
		planner := Planner{Config: DefaultPlanConfig}
		planner.Config.Protect = []int{0, 1, 5}[seed%3]
		rng := rand.New(rand.NewPCG(seed, 77))
		s := randomSnapshot(rng)
		// More queued jobs, from other random snapshots, renumbered; their
		// reserved jobs become normal (the reservations are not these).
		for len(s.Queued) < 2*indexMinQueue {
			more := randomSnapshot(rng)
			for _, j := range more.Queued {
				e := more.Estimates[j.ID]
				j.ID = int64(10_000 + len(s.Queued))
				if j.Class == ClassReserved {
					j.Class, j.Reservation = ClassNormal, 0
				}
				s.Queued = append(s.Queued, j)
				s.Estimates[j.ID] = e
			}
		}
		p := planner.Plan(planNow, s)
		checkPlan(t, seed, s, p)
		if again := planner.Plan(planNow, s); !slices.EqualFunc(p.Queued, again.Queued, func(a, b PlannedJob) bool {
			return a.Job == b.Job && a.StartP50.Equal(b.StartP50) && slices.Equal(a.GPUs, b.GPUs)
		}) {
			t.Fatalf("seed %d: the same snapshot gave two plans", seed)
		}
	}
}
