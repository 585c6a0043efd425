package core

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"
)

// ReportQuery is the period a usage report covers, [From, To).
type ReportQuery struct {
	From, To time.Time
}

// Report is how the GPUs were used over a period (DESIGN §8): GPU-hours by
// project, user and job type, utilisation, booked against used hours,
// no-shows, waits and estimate accuracy, and utilisation by weekday and
// hour for the digest's heatmap. Hours are GPU-hours inside the period.
type Report struct {
	From, To time.Time
	GPUs     int     // GPUs in the inventory
	Capacity float64 // GPU-hours the inventory offered
	Used     float64 // GPU-hours jobs held
	// Utilisation is Used ÷ Capacity.
	Utilisation float64

	ByProject []UsageTotal // most used first
	ByUser    []UsageTotal
	ByType    []UsageTotal

	Reservations int     // reservations whose window touches the period
	Booked       float64 // their GPU-hours inside the period
	BookedUsed   float64 // of those, GPU-hours jobs ran on the booked GPUs
	NoShows      int     // windows that ended with no job ever on their GPUs

	Started  int           // jobs that started in the period
	AvgWait  time.Duration // from submission to start, over those
	P90Wait  time.Duration
	Finished int // jobs that ended in the period with an estimate to compare
	// Accuracy is the mean of min(estimate, runtime) ÷ max(…) over the
	// finished jobs: 1 is perfect.
	Accuracy float64

	// Heatmap is the share of GPUs held by jobs, by weekday (Sunday first)
	// and hour, in UTC, averaged over the period's hours.
	Heatmap [7][24]float64
}

// UsageTotal is the GPU-hours of one project, user or job type.
type UsageTotal struct {
	Name     string
	GPUHours float64
	Jobs     int
}

// maxReport is the longest period one report may cover.
const maxReport = 400 * 24 * time.Hour

// Report computes the usage report for q (anyone may read it: it names
// users and projects, not what they run).
func (s *Service) Report(ctx context.Context, a Actor, q ReportQuery) (Report, error) {
	q.From, q.To = q.From.UTC(), q.To.UTC()
	switch {
	case q.From.IsZero() || q.To.IsZero() || !q.To.After(q.From):
		return Report{}, Errorf(CodeInvalid, "a report needs a period: from before to")
	case q.To.Sub(q.From) > maxReport:
		return Report{}, Errorf(CodeInvalid, "a report covers at most %s", fmtDuration(maxReport))
	}
	var (
		nodes []Node
		jobs  []Job
		rs    []Reservation
	)
	err := s.store.View(ctx, func(tx Tx) (err error) {
		if nodes, err = tx.Nodes(ctx); err != nil {
			return err
		}
		open, err := tx.Jobs(ctx, JobFilter{States: holdingStates})
		if err != nil {
			return err
		}
		ended, err := tx.Jobs(ctx, JobFilter{EndedSince: q.From})
		if err != nil {
			return err
		}
		jobs = append(open, ended...)
		rs, err = tx.Reservations(ctx, ReservationFilter{From: q.From, To: q.To})
		return err
	})
	if err != nil {
		return Report{}, err
	}
	return BuildReport(q, s.Now(), nodes, jobs, rs), nil
}

// BuildReport computes a report from the inventory, the jobs that held
// GPUs in the period (running ones up to now) and the reservations that
// touch it. It is pure.
func BuildReport(q ReportQuery, now time.Time, nodes []Node, jobs []Job, rs []Reservation) Report {
	r := Report{From: q.From, To: q.To}
	for _, n := range nodes {
		r.GPUs += len(n.GPUs)
	}
	end := q.To
	if now.Before(end) {
		end = now // the future has not been used yet
	}
	hours := func(from, to time.Time) float64 {
		from, to = later(from, q.From), earlier(to, end)
		if !to.After(from) {
			return 0
		}
		return to.Sub(from).Hours()
	}
	r.Capacity = float64(r.GPUs) * hours(q.From, end)

	byProject, byUser, byType := map[string]*UsageTotal{}, map[string]*UsageTotal{}, map[string]*UsageTotal{}
	add := func(m map[string]*UsageTotal, key string, h float64) {
		u := m[key]
		if u == nil {
			u = &UsageTotal{Name: key}
			m[key] = u
		}
		u.GPUHours += h
		u.Jobs++
	}
	held := map[int64][][2]time.Time{} // GPU → the spans jobs held it
	var waits []time.Duration
	var hourSlots [7][24]float64 // GPU-hours held per weekday and hour
	seen := map[int64]bool{}
	for _, j := range jobs {
		if seen[j.ID] || j.StartedAt.IsZero() {
			continue
		}
		seen[j.ID] = true
		stop := j.EndedAt
		if stop.IsZero() {
			stop = now
		}
		n := max(len(j.Assigned), j.GPUs)
		h := float64(n) * hours(j.StartedAt, stop)
		if !j.StartedAt.Before(q.From) && j.StartedAt.Before(q.To) {
			r.Started++
			waits = append(waits, j.StartedAt.Sub(j.SubmittedAt))
		}
		if !j.EndedAt.IsZero() && !j.EndedAt.Before(q.From) && j.EndedAt.Before(q.To) && j.Prediction.Estimate.P50 > 0 &&
			(j.State == JobSucceeded || j.State == JobFailed) {
			run, est := j.EndedAt.Sub(j.StartedAt).Seconds(), j.Prediction.Estimate.P50.Seconds()
			if run > 0 {
				r.Accuracy += math.Min(run, est) / math.Max(run, est)
				r.Finished++
			}
		}
		if h == 0 {
			continue
		}
		r.Used += h
		add(byProject, cmp.Or(j.Project, "(none)"), h)
		add(byUser, j.Owner, h)
		add(byType, string(cmp.Or(j.Type, TypeOther)), h)
		for _, g := range j.Assigned {
			held[g.ID] = append(held[g.ID], [2]time.Time{j.StartedAt, stop})
		}
		spread(&hourSlots, later(j.StartedAt, q.From), earlier(stop, end), float64(n))
	}
	if r.Capacity > 0 {
		r.Utilisation = r.Used / r.Capacity
	}
	if r.Finished > 0 {
		r.Accuracy /= float64(r.Finished)
	}
	if len(waits) > 0 {
		slices.Sort(waits)
		var sum time.Duration
		for _, w := range waits {
			sum += w
		}
		r.AvgWait = sum / time.Duration(len(waits))
		r.P90Wait = waits[(len(waits)*9+9)/10-1]
	}
	// The heatmap: GPU-hours held in each weekday-hour over the GPU-hours offered in it.
	var offered [7][24]float64
	spread(&offered, q.From, end, float64(r.GPUs))
	for d := range 7 {
		for h := range 24 {
			if offered[d][h] > 0 {
				r.Heatmap[d][h] = math.Min(hourSlots[d][h]/offered[d][h], 1)
			}
		}
	}
	for _, res := range rs {
		if res.State == Cancelled {
			continue
		}
		r.Reservations++
		used := false
		for _, g := range res.GPUs {
			r.Booked += hours(res.Start, res.End)
			for _, span := range held[g.ID] {
				if h := hours(later(span[0], res.Start), earlier(span[1], res.End)); h > 0 {
					r.BookedUsed += h
					used = true
				}
			}
		}
		if !used && !res.End.After(end) && res.End.After(q.From) {
			r.NoShows++
		}
	}
	r.ByProject, r.ByUser, r.ByType = ranked(byProject), ranked(byUser), ranked(byType)
	return r
}

// spread adds n GPUs held over [from, to) to the weekday-hour slots.
func spread(slots *[7][24]float64, from, to time.Time, n float64) {
	for t := from; t.Before(to); {
		next := t.Truncate(time.Hour).Add(time.Hour)
		if next.After(to) {
			next = to
		}
		slots[t.Weekday()][t.Hour()] += n * next.Sub(t).Hours()
		t = next
	}
}

func ranked(m map[string]*UsageTotal) []UsageTotal {
	out := make([]UsageTotal, 0, len(m))
	for _, u := range m {
		out = append(out, *u)
	}
	slices.SortFunc(out, func(a, b UsageTotal) int {
		return cmp.Or(cmp.Compare(b.GPUHours, a.GPUHours), cmp.Compare(a.Name, b.Name))
	})
	return out
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
