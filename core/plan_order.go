package core

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// order is the planner's first stage: the queue in the order jobs get to
// claim GPUs.
//
//  1. Class first: reserved, high, normal, low.
//  2. Reserved jobs by their reservation's start.
//  3. Within the other classes, a score that favours short predicted
//     GPU-time (estimated duration × GPUs: short jobs finish and leave, which
//     cuts the average wait the most), multiplied by the project's fair-share
//     factor and halved for every AgingHalfLife the job has waited, so that
//     nothing starves.
//  4. Ties by submission time, then ID.
func (p Planner) order(now time.Time, s Snapshot, est func(*Job) Estimate) []queuedJob {
	reservationStart := make(map[int64]int64, len(s.Reservations))
	for _, r := range s.Reservations {
		reservationStart[r.ID] = secs(r.Start)
	}
	factors := fairShare(s, p.Config.FairShareWeight)
	// The keys are computed once and sorted small, the jobs and their
	// estimates staying where they are: a queue can hold a hundred thousand.
	type keyed struct {
		rank      int32
		i         int32 // index into s.Queued and ests
		resStart  int64
		score     float64
		submitted int64
		id        int64
	}
	ks := make([]keyed, len(s.Queued))
	ests := make([]Estimate, len(s.Queued))
	for i := range s.Queued {
		j := &s.Queued[i]
		ests[i] = est(j)
		k := keyed{rank: int32(j.Class.rank()), i: int32(i), submitted: j.SubmittedAt.UnixNano(), id: j.ID}
		if j.Class == ClassReserved {
			k.resStart = reservationStart[j.Reservation]
		} else {
			gpuTime := ests[i].P50.Seconds() * float64(max(j.GPUs, 1))
			waited := max(now.Sub(j.SubmittedAt), 0)
			aging := 1.0
			if p.Config.AgingHalfLife > 0 {
				aging = math.Exp2(-waited.Hours() / p.Config.AgingHalfLife.Hours())
			}
			k.score = gpuTime * factors[j.Project] * aging
		}
		ks[i] = k
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		// Compared one key at a time: cmp.Or would compare all five on
		// every call, and a replay sorts a queue in every plan.
		if c := cmp.Compare(a.rank, b.rank); c != 0 {
			return c
		}
		if c := cmp.Compare(a.resStart, b.resStart); c != 0 {
			return c
		}
		if c := cmp.Compare(a.score, b.score); c != 0 {
			return c
		}
		if c := cmp.Compare(a.submitted, b.submitted); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	out := make([]queuedJob, len(ks))
	for i, k := range ks {
		out[i] = queuedJob{Job: &s.Queued[k.i], est: ests[k.i]}
	}
	return out
}

// queuedJob is a queued job and its estimate, looked up once per plan.
type queuedJob struct {
	*Job
	est  Estimate
	hold int64 // a running job's hold end (PlanConfig.Hold), in seconds
}

// fairShare returns each project's ordering factor: 1 at its share of
// recent usage, above 1 (later) when it used more, below 1 (sooner) when
// it used less. Projects without usage get the smallest factor.
func fairShare(s Snapshot, weight float64) map[string]float64 {
	projects := map[string]bool{}
	for _, j := range s.Queued {
		projects[j.Project] = true
	}
	for p := range s.Usage {
		projects[p] = true
	}
	names := make([]string, 0, len(projects))
	for p := range projects {
		names = append(names, p)
	}
	slices.Sort(names) // sum in a fixed order: float addition is not associative
	var totalUsage, totalShare float64
	share := func(p string) float64 {
		if w, ok := s.Shares[p]; ok && w > 0 {
			return w
		}
		return 1
	}
	for _, p := range names {
		totalUsage += s.Usage[p]
		totalShare += share(p)
	}
	f := make(map[string]float64, len(names))
	for _, p := range names {
		if weight <= 0 || totalUsage <= 0 {
			f[p] = 1
			continue
		}
		ratio := (s.Usage[p] / totalUsage) / (share(p) / totalShare)
		f[p] = math.Min(4, math.Max(0.25, math.Exp(weight*(ratio-1))))
	}
	return f
}
