package core

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Progress is what a running job last said about how far it has come
// (DESIGN.md §6.3): through the API, a progress file or a progress bar in
// its log that the agent recognised.
type Progress struct {
	Fraction float64   // share of the work done, 0..1
	Step     int64     // steps done, when it reports steps; 0 otherwise
	Total    int64     // steps in all, when it reports steps; 0 otherwise
	At       time.Time // when the latest report arrived; zero: none yet
	// Rate is the share of the work done per second, over the recent part
	// of the run (see Advance); 0 until the job has reported progress.
	Rate float64
}

// Reported reports whether the job has reported any progress.
func (p Progress) Reported() bool { return !p.At.IsZero() }

// ProgressReport is one report: a fraction, or steps out of a total.
type ProgressReport struct {
	Fraction float64 `json:"fraction,omitempty"` // used when Total is 0
	Step     int64   `json:"step,omitempty"`
	Total    int64   `json:"total,omitempty"` // > 0: the report is Step of Total
}

// Check refuses a report no job can make.
func (r ProgressReport) Check() error {
	switch {
	case r.Total < 0 || r.Step < 0:
		return Errorf(CodeInvalid, "progress steps must not be negative, got step %d of %d", r.Step, r.Total)
	case r.Total > 0 && r.Step > r.Total:
		return Errorf(CodeInvalid, "progress step %d is past the total %d", r.Step, r.Total)
	case r.Total == 0 && r.Step > 0:
		return Errorf(CodeInvalid, "progress step %d needs the total number of steps", r.Step)
	case r.Total > 0 && r.Fraction != 0:
		return Errorf(CodeInvalid, "give progress as a fraction or as a step and a total, not both")
	case math.IsNaN(r.Fraction) || r.Fraction < 0 || r.Fraction > 1:
		return Errorf(CodeInvalid, "progress fraction must be between 0 and 1, got %v", r.Fraction)
	}
	return nil
}

// fraction is the share of the work the report says is done.
func (r ProgressReport) fraction() float64 {
	if r.Total > 0 {
		return float64(r.Step) / float64(r.Total)
	}
	return r.Fraction
}

// rateWindow is the part of a run, counted back from the latest report,
// whose speed the rate mostly reflects: a quarter. Short enough to follow a
// job that slows down (a straggling worker, a slower phase), long enough
// to smooth the noise of single steps, and scale-free: the same for a
// ten-minute job and a ten-day one.
const rateWindow = 4

// Advance returns the progress after report r arrived at `at`, for a job
// that started at `started`. The first report's rate is the average since
// the start (start-up included, so it is a little slow); each later report
// moves the rate toward the speed since the previous one by
// 1 − exp(−Δt/τ), with τ a quarter of the time run so far. A report that
// goes backwards (a restart from a checkpoint) keeps the rate: the job is
// as fast as before, it has more left.
func (p Progress) Advance(r ProgressReport, started, at time.Time) Progress {
	f := r.fraction()
	next := Progress{Fraction: f, At: at, Rate: p.Rate}
	if r.Total > 0 {
		next.Step, next.Total = r.Step, r.Total
	}
	ran := at.Sub(started).Seconds()
	switch {
	case ran <= 0:
	case !p.Reported() || p.Rate <= 0:
		next.Rate = f / ran
	case f >= p.Fraction && at.After(p.At):
		dt := at.Sub(p.At).Seconds()
		speed := (f - p.Fraction) / dt
		w := 1 - math.Exp(-dt*rateWindow/ran)
		next.Rate = p.Rate + w*(speed-p.Rate)
	}
	return next
}

// remaining is how long the job needs from now at its recent rate; ok is
// false when it has not reported a rate.
func (p Progress) remaining(now time.Time) (time.Duration, bool) {
	if !p.Reported() || p.Rate <= 0 {
		return 0, false
	}
	s := (1-p.Fraction)/p.Rate - max(now.Sub(p.At), 0).Seconds()
	return secondsOf(max(s, 0)), true
}

// progressSpread is σ of log(actual ÷ predicted remaining time) when the
// remaining time is read off the rate at progress f: wide early, when the
// rate has seen little of the run, narrow near the end. Calibrated on the
// PAI mini-batch timings (docs/estimates.md, `gpucal eval progress`).
func progressSpread(f float64) float64 {
	f = min(max(f, 0.01), 1)
	return max(progressScale*math.Sqrt((1-f)/f), 0.05)
}

// progressScale sets progressSpread: σ at half-way.
const progressScale = 0.35

// z90 is the standard normal's 90th percentile.
const z90 = 1.2816

// WithProgress returns the estimate of a running job's whole duration,
// given that it has run for elapsed and last reported p. The remaining
// time its rate implies and the remaining time prior implies (prior should
// already be conditioned on elapsed, EstimateRunning) are combined in log
// space, each weighted by its precision: early the prior dominates, near
// the end the rate does. Without a rate it returns prior. A zero prior
// counts as knowing nothing.
func WithProgress(prior Estimate, p Progress, elapsed time.Duration, now time.Time) Estimate {
	left, ok := p.remaining(now)
	if !ok {
		return prior
	}
	left = max(left, time.Minute) // a job that stopped reporting is not over
	// The longer since the report, against the time it said was left, the
	// less it says: a job at 100 % that goes on saving a checkpoint, or one
	// that stopped reporting, is not about to end.
	since := max(now.Sub(p.At), 0).Seconds()
	said := min((1-p.Fraction)/p.Rate, 100*365*24*3600)
	stale := math.Log1p(since / max(said, 60))
	obsX, obsS := math.Log(left.Seconds()), math.Hypot(progressSpread(p.Fraction), stale)
	mu, sigma, w := obsX, obsS, 1.0
	if prior.P50 > elapsed {
		lo := (prior.P50 - elapsed).Seconds()
		hi := max((prior.P90 - elapsed).Seconds(), lo)
		// A prior without a band (P90 at P50) is not the surest of all: it
		// counts as narrow as History ever is.
		priX, priS := math.Log(lo), max(math.Log(hi/lo)/z90, minUpper/z90)
		a, b := 1/(obsS*obsS), 1/(priS*priS)
		w = a / (a + b)
		mu = w*obsX + (1-w)*priX
		sigma = 1 / math.Sqrt(a+b)
	}
	p50 := elapsed + secondsOf(math.Exp(mu))
	p90 := elapsed + secondsOf(math.Exp(mu+z90*sigma))
	e := Estimate{P50: p50, P90: max(p90, p50+time.Second), Samples: prior.Samples}
	e.Source = describeProgress(p)
	if w < 1 {
		rest := prior.Source
		if !strings.HasPrefix(rest, "from ") {
			rest = "from " + rest
		}
		e.Source += fmt.Sprintf(" (weighted %d%%), the rest %s", int(math.Round(100*w)), rest)
	}
	return e
}

// describeProgress puts a job's progress in words: "62% done at 1.9 it/s".
// The words change with each report, not with the clock, so plans that
// compare estimates do not rewrite a job every minute.
func describeProgress(p Progress) string {
	s := strconv.Itoa(int(math.Floor(100*p.Fraction))) + "% done"
	if p.Total > 0 && p.Rate > 0 {
		switch perStep := 1 / (p.Rate * float64(p.Total)); {
		case perStep <= 1:
			s += " at " + strconv.FormatFloat(1/perStep, 'f', 1, 64) + " it/s"
		default:
			s += " at " + strconv.FormatFloat(perStep, 'f', 1, 64) + " s/it"
		}
	}
	return s
}

// secondsOf turns seconds into a duration rounded to the second, bounded
// by a century.
func secondsOf(s float64) time.Duration {
	return time.Duration(math.Round(min(s, 100*365*24*3600))) * time.Second
}

// ReportProgress records how far a running job has come and returns the
// job as it is now. Its owner, an admin of its project or a site admin may
// report (the node agent does so for them, issue 5); the next plan uses
// the new rate for the job's predicted end and everything queued behind it.
func (s *Service) ReportProgress(ctx context.Context, a Actor, id int64, r ProgressReport) (Job, error) {
	if err := r.Check(); err != nil {
		return Job{}, err
	}
	now := s.Now()
	var out Job
	err := s.store.Update(ctx, func(tx Tx) error {
		j, err := jobToChange(ctx, tx, a, id, "report its progress")
		if err != nil {
			return err
		}
		if !j.State.Holding() {
			return Errorf(CodeInvalid, "%s is %s; only a running job reports progress", JobName(j.ID), j.State)
		}
		j.Progress = j.Progress.Advance(r, j.StartedAt, now)
		if err := tx.SetProgress(ctx, j.ID, j.Progress); err != nil {
			return err
		}
		out = a.visible(j)
		return nil
	})
	return out, err
}
