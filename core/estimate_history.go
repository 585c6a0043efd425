package core

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// Outcome is how a finished run ended; it decides what its duration says
// about the next run.
type Outcome int

// The outcomes, in the order Run reports them.
const (
	OutcomeCompleted     Outcome = iota // ran to its end: the duration is the runtime
	OutcomeFailed                       // crashed: it still held its GPUs for that long, so it counts as a runtime
	OutcomeCancelled                    // stopped by a person: the work needed at least this long
	OutcomeKilledAtLimit                // stopped at its time limit: the work needed at least this long
)

func (o Outcome) String() string {
	switch o {
	case OutcomeCompleted:
		return "completed"
	case OutcomeFailed:
		return "failed"
	case OutcomeCancelled:
		return "cancelled"
	case OutcomeKilledAtLimit:
		return "killed at limit"
	}
	return fmt.Sprintf("outcome %d", int(o))
}

// censored reports whether a run of this outcome only says "at least this
// long": it was stopped from outside before its work was done.
func (o Outcome) censored() bool { return o == OutcomeCancelled || o == OutcomeKilledAtLimit }

// Run is one finished run, as History learns from it.
type Run struct {
	Owner    string
	Project  string
	Name     string // normalised job name; "" when the job had none
	GPUs     int
	Family   string        // GPU model family ("h100"); "" when unknown
	Guess    time.Duration // what the submitter guessed; 0 when they did not
	Work     Work          // what its hints said it would compute; zero when they did not
	Duration time.Duration // how long it ran
	EndedAt  time.Time
	Outcome  Outcome
}

// HistoryConfig tunes a History. The zero value is the documented default.
type HistoryConfig struct {
	// HalfLife is the age at which a run weighs half as much as one that
	// just ended. Default 14 days: work changes as projects move on, but
	// slowly enough that a fortnight-old run is still good evidence.
	HalfLife time.Duration
	// Window is how many recent runs a group keeps (default 8: recurring
	// work drifts, and the last few runs say most); the coarse groups (GPU
	// count, everyone) keep sixteen times as many.
	Window int
	// Prior is k in the shrinkage weight n/(n+k): a group with k runs of
	// full weight counts as much as its parents. Default 1 (tuned on the
	// KTH-SP2 and Philly traces, docs/estimates.md).
	Prior float64
	// Decay is how much each run of a fine group (owner or project) weighs
	// relative to the next newer one, on top of HalfLife: the last run of
	// the same job says more than the one before it, however close in time
	// they ended. Default 0.7 (tuned on KTH-SP2, docs/estimates.md); 1
	// turns it off. The coarse groups (GPU count, everyone) describe a
	// population, not a sequence, and do not decay by rank.
	Decay float64
	// Fallback answers when nothing has finished yet.
	Fallback DefaultEstimator
}

func (c HistoryConfig) withDefaults() HistoryConfig {
	if c.HalfLife <= 0 {
		c.HalfLife = 14 * 24 * time.Hour
	}
	if c.Window <= 0 {
		c.Window = 8
	}
	if c.Prior <= 0 {
		c.Prior = 1
	}
	if c.Decay <= 0 || c.Decay > 1 {
		c.Decay = 0.7
	}
	return c
}

// History is the runtime estimator that learns from finished runs (DESIGN.md
// §6.1). It groups runs from fine to coarse — owner + name + GPU count,
// owner + name, owner + GPU model family, project + GPU count, GPU count,
// everyone — and summarises each group by the 10th, 50th and 90th
// percentiles of log duration, with recent runs weighing more (see
// HistoryConfig.HalfLife and Decay) and runs stopped from outside, or
// still under way (EstimateAmong), treated as "at least this long"
// (Kaplan–Meier: their weight moves to the longer runs, so they never pull
// the median down). An estimate is a mixture of the groups' distributions:
// the finest group with runs takes the share n/(n+k) of it, n its
// recency-weighted run count and k HistoryConfig.Prior, the next coarser
// group the same share of what is left (n counting only the runs it adds),
// and so on, everyone taking the rest. So one odd run does
// not dominate a group of ten, and a thin group borrows strength from its
// parents. P50 and P90 are the mixture's percentiles: always a duration some
// run had, never a point between a crash in seconds and a run of hours.
// Finally the submitter's guess is blended in the same way, scaled by how
// far off that owner's past guesses were and weighted by how consistently
// so (inverse variance against the history's spread).
//
// Memory is bounded per group (HistoryConfig.Window). History is pure and
// deterministic: no clock, no goroutines, no map iteration. It is not safe
// for concurrent use.
type History struct {
	cfg     HistoryConfig
	groups  map[groupKey]*runGroup
	guesses map[string]*runGroup  // per owner: log(actual / guess) of past runs
	all     *runGroup             // the same for everyone
	work    map[workKey]*runGroup // log throughput per GPU of completed runs with work hints
}

// NewHistory returns an empty History.
func NewHistory(cfg HistoryConfig) *History {
	cfg = cfg.withDefaults()
	return &History{cfg: cfg, groups: map[groupKey]*runGroup{}, guesses: map[string]*runGroup{},
		all: newRunGroup(16*cfg.Window, 1), work: map[workKey]*runGroup{}}
}

// level is a grouping of runs, coarsest first.
type level int

const (
	levelEveryone level = iota
	levelGPUs
	levelProjectGPUs
	levelOwnerFamily
	levelOwnerName
	levelOwnerNameGPUs
	levels
)

// groupKey names one group; fields a level does not use stay empty.
type groupKey struct {
	level                       level
	owner, project, name, model string
	gpus                        int
}

// groupKeys returns the key of every level a job or run belongs to; ok[l]
// is false where it lacks what level l groups by.
func groupKeys(owner, project, name, family string, gpus int) (keys [levels]groupKey, ok [levels]bool) {
	set := func(l level, k groupKey, valid bool) { k.level = l; keys[l], ok[l] = k, valid }
	set(levelEveryone, groupKey{}, true)
	set(levelGPUs, groupKey{gpus: gpus}, true)
	set(levelProjectGPUs, groupKey{project: project, gpus: gpus}, project != "")
	set(levelOwnerFamily, groupKey{owner: owner, model: family}, owner != "")
	set(levelOwnerName, groupKey{owner: owner, name: name}, owner != "" && name != "")
	set(levelOwnerNameGPUs, groupKey{owner: owner, name: name, gpus: gpus}, owner != "" && name != "")
	return keys, ok
}

// Observe learns from a finished run.
func (h *History) Observe(r Run) {
	x := logSeconds(r.Duration)
	keys, ok := groupKeys(r.Owner, r.Project, r.Name, r.Family, r.GPUs)
	for l := range levels {
		if !ok[l] {
			continue
		}
		g := h.groups[keys[l]]
		if g == nil {
			window, decay := h.cfg.Window, h.cfg.Decay
			if l <= levelGPUs {
				window, decay = 16*window, 1
			}
			g = newRunGroup(window, decay)
			h.groups[keys[l]] = g
		}
		g.add(obs{x: x, at: r.EndedAt, censored: r.Outcome.censored()})
	}
	if r.Guess > 0 && r.Outcome != OutcomeCancelled {
		// A cancelled run says nothing about the guess; a run killed at its
		// limit counts as having run exactly as long as guessed (a lower
		// bound, and the limit is usually the guess).
		e := obs{x: x - logSeconds(r.Guess), at: r.EndedAt}
		if r.Owner != "" {
			g := h.guesses[r.Owner]
			if g == nil {
				g = newRunGroup(h.cfg.Window, h.cfg.Decay)
				h.guesses[r.Owner] = g
			}
			g.add(e)
		}
		h.all.add(e)
	}
	h.observeWork(r)
}

// Estimate implements Estimator.
func (h *History) Estimate(j Job, now time.Time) Estimate {
	return h.EstimateAmong(j, nil, now)
}

// EstimateAmong is Estimate knowing the runs still under way, each with
// Duration the time it has run by now. A run of the same owner that is
// still going says "at least this long" about its work, like a run stopped
// from outside: it joins the owner's groups it shares with j (owner + name +
// GPU count, owner + name, owner + model family) as their newest run,
// censored (Kaplan–Meier moves its weight to longer runs). It joins only
// groups that have finished runs and adds nothing to their run count: eight
// runs of a sweep that started a minute ago say little yet. Runs of other
// owners are ignored.
func (h *History) EstimateAmong(j Job, running []Run, now time.Time) Estimate {
	d, words, runs, ok := h.distribution(j, running, now)
	if !ok {
		return h.cfg.Fallback.Estimate(j, now)
	}
	return estimateOf(d, words, runs)
}

// EstimateRunning estimates a job that has run for elapsed: the same
// distribution, conditioned on the run lasting longer than that. A job
// past every run its groups have seen is expected to need a tenth more
// (P90: half again), never to have ended already.
func (h *History) EstimateRunning(j Job, elapsed time.Duration, now time.Time) Estimate {
	d, words, runs, ok := h.distribution(j, nil, now)
	if !ok {
		return conditioned(h.cfg.Fallback.Estimate(j, now), elapsed)
	}
	var longer distribution
	total := 0.0
	for _, m := range d {
		if fromLog(m.x) > elapsed {
			longer = append(longer, m)
			total += m.p
		}
	}
	if total <= 0 {
		return conditioned(estimateOf(d, words, runs), elapsed)
	}
	for i := range longer {
		longer[i].p /= total
	}
	e := estimateOf(longer, words, runs)
	e.Source += ", given how long it has run" // words that do not change by the minute: plans compare them
	return e
}

// conditioned moves an estimate that a run has outlived past its elapsed
// time: a tenth more for P50, half again for P90 (at least a minute).
func conditioned(e Estimate, elapsed time.Duration) Estimate {
	if elapsed < e.P50 {
		return e
	}
	e.P50 = max(elapsed+elapsed/10, elapsed+time.Minute)
	e.P90 = max(e.P90, elapsed+elapsed/2, e.P50+time.Minute)
	e.Source += ", and it has run longer than that"
	return e
}

// estimateOf reads P50 and P90 off a distribution of log durations.
func estimateOf(d distribution, words string, runs int) Estimate {
	x50 := d.quantile(0.5)
	p90 := max(fromLog(d.quantile(0.9)), fromLog(x50+minUpper))
	return Estimate{P50: fromLog(x50), P90: p90, Source: words, Samples: runs}
}

// distribution is the mixture of j's groups, the estimate from its work
// and its guess (see History), with the words that say where it came from;
// ok is false when nothing is known. running are the runs under way (see
// EstimateAmong).
func (h *History) distribution(j Job, running []Run, now time.Time) (d distribution, words string, runs int, ok bool) {
	family := j.Model
	if m, ok := ParseModel(j.Model); ok {
		family = m.Family
	}
	// 1. The runs of similar jobs, from the finest group to the coarsest,
	//    the owner's groups with the owner's runs under way.
	keys, has := groupKeys(j.Owner, j.Project, j.Name, family, j.GPUs)
	underway := underwayRuns(j.Owner, keys, running)
	gs := make([]*runGroup, 0, levels)
	for l := levels - 1; l >= 0; l-- {
		g := h.groups[keys[l]]
		switch {
		case !has[l]:
			g = nil
		case g != nil && len(underway[l]) > 0:
			g = g.with(underway[l])
		}
		gs = append(gs, g)
	}
	past, finest, found := h.shrink(gs, nil, now)
	if found {
		runs = gs[finest].finished()
		words = describe(levels-1-level(finest), runs, j, family)
		switch n := len(gs[finest].runs) - runs; n {
		case 0:
		case 1:
			words += ", and 1 under way"
		default:
			words += fmt.Sprintf(", and %d under way", n)
		}
		d = past
	}
	// 2. The work its hints describe at a learned (or assumed) throughput.
	//    A learned throughput replaces the durations of other jobs (they
	//    ran other sizes) and those of earlier runs of this job (the
	//    throughput is the same evidence, scaled to this run's size). Only
	//    a bare FLOPs prior, or a throughput of other jobs against earlier
	//    runs of this one, is weighed against the durations by precision.
	if work, workWords, workRuns, same, ok := h.workDistribution(j, family, now); ok {
		sameJob := found && levels-1-level(finest) >= levelOwnerName
		if !found || same || (workRuns > 0 && !sameJob) {
			d, words, runs, found = work, workWords, workRuns, true
		} else {
			a := work.precision() / (work.precision() + past.precision())
			d = past.mix(work, a)
			if pct := int(math.Round(100 * a)); pct >= 50 {
				words, runs = workWords, max(runs, workRuns)
				if pct < 100 {
					words += fmt.Sprintf(", with the history of similar jobs weighted %d%%", 100-pct)
				}
			} else if pct > 0 {
				words += fmt.Sprintf(", with the work hints weighted %d%%", pct)
			}
		}
	}
	if !found {
		return nil, "", 0, false
	}
	// 3. Blend in the submitter's guess, scaled by how far off that owner's
	//    guesses have been, and weighted by how consistently so.
	if j.Hints.Guess > 0 {
		errs, n := h.guessErrors(j.Owner, running, now)
		g := errs.shifted(logSeconds(j.Hints.Guess))
		a := g.precision() / (g.precision() + d.precisionOf(runs, h.cfg.Prior))
		d = d.mix(g, a)
		if pct := int(math.Round(100 * a)); pct > 0 {
			whose := "the guess"
			if j.Owner != "" && n > 0 {
				whose = j.Owner + "'s guess"
			}
			words += fmt.Sprintf(", with %s weighted %d%%", whose, pct)
		}
	}
	return d, words, runs, true
}

// underwayRuns returns, for each of the owner's levels, the runs in running
// that share the group keys[level] with the job, as censored observations
// ("at least as long as it has run so far"), oldest first: the one that
// has run longest started first.
func underwayRuns(owner string, keys [levels]groupKey, running []Run) (out [levels][]obs) {
	if owner == "" {
		return out
	}
	for _, r := range running {
		if r.Owner != owner {
			continue
		}
		rk, ok := groupKeys(r.Owner, r.Project, r.Name, r.Family, r.GPUs)
		for l := levelOwnerFamily; l < levels; l++ {
			if ok[l] && rk[l] == keys[l] {
				out[l] = append(out[l], obs{x: elapsedLog(r.Duration), censored: true, underway: true})
			}
		}
	}
	for l := range out {
		slices.SortStableFunc(out[l], func(a, b obs) int { return cmp.Compare(b.x, a.x) })
	}
	return out
}

// elapsedSteps are what a run under way's elapsed time is rounded down to
// a multiple of: the largest at most an eighth of it, at least a minute.
// Rounded down it is still a lower bound, and an estimate that rests on it
// changes every quarter of an hour at two hours, not at every replan (plans
// compare estimates and rewrite the predictions that changed).
var elapsedSteps = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour}

// elapsedLog is the log of a run under way's elapsed time, rounded down
// (elapsedSteps).
func elapsedLog(d time.Duration) float64 {
	step := elapsedSteps[0]
	for _, s := range elapsedSteps {
		if s <= d/8 {
			step = s
		}
	}
	return logSeconds(d.Truncate(step))
}

// shrink mixes groups given finest first (nil where a level has none).
// Each takes the share n/(n+k) of what the finer ones left, n its
// recency-weighted run count counting only the runs it adds to the finer
// groups (the same run is in several groups and must not weigh more for
// it) and k HistoryConfig.Prior; base, when given, takes the rest, else the
// coarsest group present does. finest is the index of the first group
// present, -1 for none; ok is false when there is neither a group nor base.
func (h *History) shrink(gs []*runGroup, base distribution, now time.Time) (d distribution, finest int, ok bool) {
	coarsest := -1
	for i, g := range gs {
		if g != nil {
			coarsest = i
		}
	}
	finest = -1
	left, counted := 1.0, 0.0
	for i := 0; i <= coarsest; i++ {
		g := gs[i]
		if g == nil {
			continue
		}
		if finest < 0 {
			finest = i
		}
		sum := g.summary(h.cfg.HalfLife)
		n := sum.weight(now, h.cfg.HalfLife)
		share := left
		if i < coarsest || base != nil {
			added := max(n-counted, 0)
			share = left * added / (added + h.cfg.Prior)
		}
		counted = max(counted, n)
		if share <= 0 {
			continue
		}
		d = d.mix(sum.dist, share/(1-left+share))
		left -= share
	}
	if base != nil && left > 0 {
		d = d.mix(base, left)
	}
	return d, finest, len(d) > 0
}

// minUpper, P90 at least a quarter longer than P50 (no history is that
// sure), is the least distance from P50 to P90 in log space: ln 1.25.
var minUpper = math.Log(1.25)

// guessPrior is log(actual / guess) before any guess has been checked: a
// guess is taken to be good to about a factor of three either way.
var guessPrior = distribution{{x: -1.1, p: 0.25}, {x: 0, p: 0.5}, {x: 1.1, p: 0.25}}

// guessErrors returns the distribution of log(actual / guess) for an
// owner's guesses — theirs, shrunk toward everyone's, shrunk toward
// guessPrior — and how many of their own guesses are behind it. The
// owner's runs under way that had a guess count as their newest, censored:
// "at least this far off" (see EstimateAmong).
func (h *History) guessErrors(owner string, running []Run, now time.Time) (distribution, int) {
	d := guessPrior
	if len(h.all.runs) > 0 {
		all := h.all.summary(h.cfg.HalfLife)
		n := all.weight(now, h.cfg.HalfLife)
		d = d.mix(all.dist, n/(n+h.cfg.Prior))
	}
	g := h.guesses[owner]
	if owner == "" || g == nil {
		return d, 0
	}
	var mine []Run
	for _, r := range running {
		if r.Owner == owner && r.Guess > 0 {
			mine = append(mine, r)
		}
	}
	if len(mine) > 0 {
		slices.SortStableFunc(mine, func(a, b Run) int { return cmp.Compare(b.Duration, a.Duration) }) // oldest first
		extra := make([]obs, len(mine))
		for i, r := range mine {
			extra[i] = obs{x: elapsedLog(r.Duration) - logSeconds(r.Guess), censored: true, underway: true}
		}
		g = g.with(extra)
	}
	own := g.summary(h.cfg.HalfLife)
	n := own.weight(now, h.cfg.HalfLife)
	return d.mix(own.dist, n/(n+h.cfg.Prior)), g.finished()
}

// describe says in words where an estimate came from; users see it.
func describe(l level, n int, j Job, family string) string {
	runs := fmt.Sprintf("%d earlier run", n)
	if n != 1 {
		runs += "s"
	}
	switch l {
	case levelOwnerNameGPUs:
		return fmt.Sprintf("history: %s of %s by %s on %d GPUs", runs, j.Name, j.Owner, j.GPUs)
	case levelOwnerName:
		return fmt.Sprintf("history: %s of %s by %s", runs, j.Name, j.Owner)
	case levelOwnerFamily:
		if family != "" {
			return fmt.Sprintf("history: %s by %s on %s", runs, j.Owner, family)
		}
		return fmt.Sprintf("history: %s by %s", runs, j.Owner)
	case levelProjectGPUs:
		return fmt.Sprintf("typical for %s in project %s (%s)", gpuJobs(j.GPUs), j.Project, runs)
	case levelGPUs:
		return fmt.Sprintf("typical for %s (%s)", gpuJobs(j.GPUs), runs)
	}
	return fmt.Sprintf("typical for all jobs (%s)", runs)
}

func gpuJobs(gpus int) string { return fmt.Sprintf("%d-GPU jobs", gpus) }
