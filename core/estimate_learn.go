package core

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// learner is the Service's estimator unless another is set: a History kept
// up to date with the runs the store records as finished. Service.learn
// reads the runs that ended since it last looked; the replan loop calls it
// before every plan, so a job that has just finished shapes the next plan's
// estimates (DESIGN.md §6).
type learner struct {
	mu      sync.Mutex
	h       *History
	since   time.Time      // every run that ended before it has been learned
	atSince map[int64]bool // the runs that ended exactly at since, learned
}

func newLearner() *learner {
	return &learner{h: NewHistory(HistoryConfig{}), atSince: map[int64]bool{}}
}

// Estimate implements Estimator; it is safe for concurrent use.
func (l *learner) Estimate(j Job, now time.Time) Estimate {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.h.Estimate(j, now)
}

// EstimateAmong implements amongEstimator; it is safe for concurrent use.
func (l *learner) EstimateAmong(j Job, running []Run, now time.Time) Estimate {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.h.EstimateAmong(j, running, now)
}

// EstimateRunning implements RunningEstimator; it is safe for concurrent use.
func (l *learner) EstimateRunning(j Job, elapsed time.Duration, now time.Time) Estimate {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.h.EstimateRunning(j, elapsed, now)
}

// RunningEstimator is an Estimator that can take into account how long a
// job has already run, so that a job past its estimate is never predicted
// to have ended already.
type RunningEstimator interface {
	EstimateRunning(j Job, elapsed time.Duration, now time.Time) Estimate
}

// amongEstimator is an Estimator that can take into account the runs under
// way (History.EstimateAmong): a queued job whose siblings have run for
// hours is not estimated from the minutes of an earlier crash.
type amongEstimator interface {
	EstimateAmong(j Job, running []Run, now time.Time) Estimate
}

// estimateAmong is estimate, with the runs under way for a queued job when
// the estimator can use them.
func (s *Service) estimateAmong(j Job, running []Run, now time.Time) Estimate {
	if ae, ok := s.estimator.(amongEstimator); ok && j.StartedAt.IsZero() {
		return ae.EstimateAmong(j, running, now)
	}
	return s.estimate(j, now)
}

// runsUnderWay returns the runs of the jobs that have started and not
// ended, each as long as it has run by now, in the order of jobs.
func runsUnderWay(jobs []Job, now time.Time) []Run {
	var out []Run
	for _, j := range jobs {
		if j.StartedAt.IsZero() || !j.EndedAt.IsZero() || !now.After(j.StartedAt) {
			continue
		}
		m, _ := ParseModel(j.Model)
		out = append(out, Run{Owner: j.Owner, Project: j.Project, Name: j.Name, GPUs: j.GPUs, Family: m.Family,
			Guess: j.Hints.Guess, Duration: now.Sub(j.StartedAt)})
	}
	return out
}

// estimate is the Service's estimate of j at now. A job that has started
// is estimated given how long it has run (by the estimator when it can,
// else by conditioned), then given the progress it reported.
func (s *Service) estimate(j Job, now time.Time) Estimate {
	if j.StartedAt.IsZero() || !now.After(j.StartedAt) {
		return s.estimator.Estimate(j, now)
	}
	elapsed := now.Sub(j.StartedAt)
	var e Estimate
	if re, ok := s.estimator.(RunningEstimator); ok {
		e = re.EstimateRunning(j, elapsed, now)
	} else {
		e = conditioned(s.estimator.Estimate(j, now), elapsed)
	}
	return WithProgress(e, j.Progress, elapsed, now)
}

// endedStates are the states of jobs that are over.
var endedStates = []JobState{JobSucceeded, JobFailed, JobPreempted, JobCancelled}

// learn feeds the runs that ended since the last call to the service's
// learner, oldest first. It does nothing when another estimator is set.
func (s *Service) learn(ctx context.Context) error {
	l, ok := s.estimator.(*learner)
	if !ok {
		return nil
	}
	l.mu.Lock()
	since := l.since
	l.mu.Unlock()
	var ended []Job
	err := s.store.View(ctx, func(tx Tx) (err error) {
		ended, err = tx.Jobs(ctx, JobFilter{States: endedStates, EndedSince: since})
		return err
	})
	if err != nil {
		return err
	}
	slices.SortFunc(ended, func(a, b Job) int { return cmp.Or(a.EndedAt.Compare(b.EndedAt), cmp.Compare(a.ID, b.ID)) })
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, j := range ended {
		// Another call may have learned some of them meanwhile.
		if j.EndedAt.Before(l.since) || (j.EndedAt.Equal(l.since) && l.atSince[j.ID]) {
			continue
		}
		if r, ok := runOf(j); ok {
			l.h.Observe(r)
		}
		if j.EndedAt.After(l.since) {
			l.since = j.EndedAt
			clear(l.atSince)
		}
		l.atSince[j.ID] = true
	}
	return nil
}

// runOf is what a finished job tells History; ok is false for a job that
// never ran (cancelled while queued).
func runOf(j Job) (Run, bool) {
	if j.StartedAt.IsZero() || !j.EndedAt.After(j.StartedAt) {
		return Run{}, false
	}
	outcome := OutcomeCompleted
	switch j.State {
	case JobFailed:
		outcome = OutcomeFailed
	case JobCancelled, JobPreempted:
		outcome = OutcomeCancelled // stopped from outside: it needed at least this long
	}
	m, _ := ParseModel(j.Model)
	return Run{Owner: j.Owner, Project: j.Project, Name: j.Name, GPUs: j.GPUs, Family: m.Family,
		Guess: j.Hints.Guess, Work: WorkOf(j.Type, j.Hints), Duration: j.EndedAt.Sub(j.StartedAt), EndedAt: j.EndedAt, Outcome: outcome}, true
}
