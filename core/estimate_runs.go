package core

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// This file holds what History's groups are made of: the runs a group
// keeps (runGroup), and the discrete distributions of log durations they
// are summarised into, censored runs included (kaplanMeier).

// obs is one run in a group: its log duration and when it ended. A run
// under way (EstimateAmong) is censored at the time it has run and weighs
// as much as the newest finished run, but adds nothing to the group's run
// count.
type obs struct {
	x        float64
	at       time.Time
	censored bool
	underway bool
}

// runGroup keeps a group's most recent runs in a ring and caches its summary.
type runGroup struct {
	runs  []obs
	next  int // where the next run goes once the ring is full
	cap   int
	decay float64 // weight of each run relative to the next newer one (HistoryConfig.Decay)
	dirty bool
	sum   groupSummary
}

// groupSummary is a group's distribution of log durations plus what its
// recency weight needs: the summed weights of its runs relative to the
// latest one's end.
type groupSummary struct {
	dist   distribution
	latest time.Time
	mass   float64
}

func newRunGroup(window int, decay float64) *runGroup { return &runGroup{cap: window, decay: decay} }

// finished is how many of the group's runs have ended (not under way).
func (g *runGroup) finished() int {
	n := 0
	for _, o := range g.runs {
		if !o.underway {
			n++
		}
	}
	return n
}

// with returns a new group holding g's runs, oldest first, then extra as
// the newest; g is unchanged.
func (g *runGroup) with(extra []obs) *runGroup {
	runs := make([]obs, 0, len(g.runs)+len(extra))
	if len(g.runs) < g.cap {
		runs = append(runs, g.runs...)
	} else {
		runs = append(append(runs, g.runs[g.next:]...), g.runs[:g.next]...)
	}
	runs = append(runs, extra...)
	return &runGroup{runs: runs, cap: len(runs), decay: g.decay, dirty: true}
}

func (g *runGroup) add(o obs) {
	if len(g.runs) < g.cap {
		g.runs = append(g.runs, o)
	} else {
		g.runs[g.next] = o
		g.next = (g.next + 1) % g.cap
	}
	g.dirty = true
}

// rank is how many runs were added after runs[i]: 0 for the newest.
func (g *runGroup) rank(i int) int {
	n := len(g.runs)
	if n < g.cap {
		return n - 1 - i
	}
	return (g.next - 1 - i + 2*n) % n
}

// weight is the group's recency-weighted run count at now: a run that ended
// one half-life before now counts one half.
func (s groupSummary) weight(now time.Time, halfLife time.Duration) float64 {
	age := max(now.Sub(s.latest), 0)
	return s.mass * math.Exp2(-float64(age)/float64(halfLife))
}

// summary computes (or returns the cached) percentiles of the group. The
// weights are relative to the latest run, so they do not depend on now.
// A run's weight in the distribution is its recency weight times decay to
// the power of its rank (0 for the newest run added); the group's mass, its
// run count for shrinkage, counts recency alone (rank says which runs to
// believe, not how many there are).
func (g *runGroup) summary(halfLife time.Duration) groupSummary {
	if !g.dirty {
		return g.sum
	}
	g.dirty = false
	var latest time.Time
	for _, o := range g.runs {
		if !o.underway && (latest.IsZero() || o.at.After(latest)) {
			latest = o.at
		}
	}
	pts := make([]point, len(g.runs))
	mass := 0.0
	for i, o := range g.runs {
		w := 1.0 // a run under way weighs as much as the newest finished one
		if !o.underway {
			w = math.Exp2(float64(o.at.Sub(latest)) / float64(halfLife))
			mass += w
		}
		pts[i] = point{x: o.x, w: w * math.Pow(g.decay, float64(g.rank(i))), censored: o.censored}
	}
	g.sum = groupSummary{dist: kaplanMeier(pts), latest: latest, mass: mass}
	return g.sum
}

// point is a weighted observation; a censored one says "at least x".
type point struct {
	x        float64
	w        float64
	censored bool
}

// kaplanMeier turns weighted, possibly censored points into a discrete
// distribution: the product-limit estimate, where each censored point's
// weight passes on to the points longer than it. Mass left after the
// longest point is censored stays on that point, a lower bound. Ties put
// completed runs before censored ones (the usual convention). The result is
// sorted by x and its masses add up to 1.
func kaplanMeier(pts []point) distribution {
	slices.SortFunc(pts, func(a, b point) int {
		if c := cmp.Compare(a.x, b.x); c != 0 {
			return c
		}
		if a.censored != b.censored {
			if a.censored {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.w, b.w)
	})
	atRisk := 0.0
	for _, p := range pts {
		atRisk += p.w
	}
	survive := 1.0
	var d distribution
	for i, p := range pts {
		if !p.censored && atRisk > 0 {
			m := survive * p.w / atRisk
			d = append(d, mass{x: p.x, p: m})
			survive -= m
		}
		atRisk -= p.w
		if i == len(pts)-1 && survive > 1e-12 {
			d = append(d, mass{x: p.x, p: survive})
		}
	}
	return d
}

type mass struct{ x, p float64 }

// distribution is a discrete distribution sorted by x.
type distribution []mass

// quantile returns the smallest x with at least share q of the mass at or
// below it: always a duration some run really had, never one between two
// kinds of run (between a crash in seconds and a run of hours lies nothing).
func (d distribution) quantile(q float64) float64 {
	below := 0.0
	for _, m := range d {
		below += m.p
		if below >= q-1e-9 {
			return m.x
		}
	}
	return d[len(d)-1].x
}

// mix returns (1−w)·d + w·o, still sorted.
func (d distribution) mix(o distribution, w float64) distribution {
	out := make(distribution, 0, len(d)+len(o))
	i, k := 0, 0
	for i < len(d) || k < len(o) {
		if k == len(o) || (i < len(d) && d[i].x <= o[k].x) {
			out = append(out, mass{x: d[i].x, p: (1 - w) * d[i].p})
			i++
		} else {
			out = append(out, mass{x: o[k].x, p: w * o[k].p})
			k++
		}
	}
	return out
}

// shifted moves every mass by the same amount.
func (d distribution) shifted(by float64) distribution {
	out := make(distribution, len(d))
	for i, m := range d {
		out[i] = mass{x: m.x + by, p: m.p}
	}
	return out
}

// precision is 1/σ², σ read off the 10–90 range as a normal's (2 × 1.2816 σ)
// and floored, so that no distribution is infinitely sure.
func (d distribution) precision() float64 {
	sigma := max((d.quantile(0.9)-d.quantile(0.1))/2.5631, 0.05)
	return 1 / (sigma * sigma)
}

// precisionOf is the precision of a distribution read from n runs: its
// spread is only as sure as the runs behind it, so it is shrunk, with
// weight k, toward twice the spread of an unchecked guess (guessPrior: a
// factor of three either way; jobs differ more than that), and never taken
// narrower than its own. One run of 20
// minutes says little about how much a job can vary; fifty do.
func (d distribution) precisionOf(n int, k float64) float64 {
	own := 1 / d.precision()
	prior := 4 / guessPrior.precision() // twice the spread: jobs differ more than a guess errs
	v := max(own, (float64(n)*own+k*prior)/(float64(n)+k))
	return 1 / v
}

// logSeconds is ln of a duration in seconds, at least one second.
func logSeconds(d time.Duration) float64 { return math.Log(max(d.Seconds(), 1)) }

// fromLog turns log-seconds back into a duration, rounded to the second and
// bounded by a century.
func fromLog(x float64) time.Duration {
	s := math.Round(math.Exp(min(x, math.Log(100*365*24*3600))))
	return time.Duration(s) * time.Second
}
