// Package scheduler runs the replan loop of the server (DESIGN §3): it
// replans after every change, debounced, and periodically, so that jobs
// start when their time comes and predictions stay fresh. The planning
// itself is core's; this package only decides when.
//
// scheduler imports core only; cmd/gpucal wires it next to the HTTP server,
// whose changes call Kick.
package scheduler

import (
	"context"
	"log/slog"
	"time"

	"github.com/gpucal/gpucal/core"
)

// Loop replans on kicks and on a period. Kick may be called from any
// goroutine; Run runs the loop.
type Loop struct {
	svc      *core.Service
	log      *slog.Logger
	every    time.Duration
	debounce time.Duration
	kicks    chan struct{}
	// replan is svc.Replan; tests replace it.
	replan func(ctx context.Context, now time.Time) (core.ReplanResult, error)
	// after, when set, is called after each successful replan (OnReplan).
	after func(core.ReplanResult, time.Duration)
}

// OnReplan sets a function called after each successful replan, on the
// loop's goroutine, with what it did; it must not block. Call it before Run.
func (l *Loop) OnReplan(f func(res core.ReplanResult, took time.Duration)) { l.after = f }

// New returns a loop that replans svc every period and at most debounce
// after a Kick. logger may be nil.
func New(svc *core.Service, logger *slog.Logger, every, debounce time.Duration) *Loop {
	return &Loop{svc: svc, log: orDiscard(logger), every: every, debounce: debounce, kicks: make(chan struct{}, 1), replan: svc.Replan}
}

// Kick asks for a replan soon. It never blocks: kicks that arrive while
// one is pending are folded into it.
func (l *Loop) Kick() {
	select {
	case l.kicks <- struct{}{}:
	default:
	}
}

// Run replans once at start, then every period and debounce after the
// first of a burst of kicks: a burst of changes costs one replan, and
// a change waits at most debounce (plus the replan) to be planned. A
// failed replan is logged and retried at the next occasion. Run returns
// nil when ctx ends.
func (l *Loop) Run(ctx context.Context) error {
	ticker := time.NewTicker(l.every)
	defer ticker.Stop()
	var pending <-chan time.Time // fires debounce after the first kick of a burst
	l.once(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-l.kicks:
			if pending == nil {
				pending = time.After(l.debounce)
			}
		case <-pending:
			pending = nil
			l.once(ctx)
			ticker.Reset(l.every)
		case <-ticker.C:
			l.once(ctx)
		}
	}
}

// once runs one replan and logs what it did.
func (l *Loop) once(ctx context.Context) {
	start := time.Now()
	res, err := l.replan(ctx, l.svc.Now())
	took := time.Since(start)
	switch {
	case err != nil && ctx.Err() != nil:
		// Shutting down: the replan was cut short, nothing to report.
	case err != nil:
		l.log.ErrorContext(ctx, "replan failed", "err", err, "duration", took)
		return
	case len(res.Started) > 0 || len(res.Deferred) > 0:
		l.log.InfoContext(ctx, "replanned", "queued", res.Queued, "running", res.Running, "started", res.Started,
			"deferred", res.Deferred, "updated", res.Updated, "events", res.Events, "duration", took)
	default:
		l.log.DebugContext(ctx, "replanned", "queued", res.Queued, "running", res.Running,
			"updated", res.Updated, "events", res.Events, "duration", took)
	}
	if err == nil && l.after != nil {
		l.after(res, took)
	}
}
