package scheduler

import (
	"context"
	"log/slog"
	"time"

	"github.com/gpucal/gpucal/core"
)

// WatchNodes checks every period whether agents fell silent (core's
// CheckNodes): nodes become suspect, then down, and the jobs of a node
// that went down fail, after which changed is called so the queue is
// replanned. since is when this server began leading (on one server,
// when it started): a node is never counted silent for longer than that,
// so neither a restart nor a failover marks the fleet down. It returns nil when ctx ends.
func WatchNodes(ctx context.Context, svc *core.Service, log *slog.Logger, every time.Duration, since time.Time, changed func()) error {
	log = orDiscard(log)
	return everyTick(ctx, every, log, "checking nodes failed", func() error {
		res, err := svc.CheckNodes(ctx, since)
		if err != nil {
			return err
		}
		for _, n := range res.Suspect {
			log.WarnContext(ctx, "node suspect: heartbeats missed", "node", n)
		}
		for _, n := range res.Down {
			log.ErrorContext(ctx, "node down: no heartbeat", "node", n, "jobs_failed", res.Failed)
		}
		if len(res.Down) > 0 && changed != nil {
			changed()
		}
		return nil
	})
}

// everyTick runs fn every period until ctx ends, and returns nil then. An
// error of fn is logged with msg unless ctx ended meanwhile; the next tick
// tries again.
func everyTick(ctx context.Context, every time.Duration, log *slog.Logger, msg string, fn func() error) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := fn(); err != nil && ctx.Err() == nil {
			log.ErrorContext(ctx, msg, "err", err)
		}
	}
}

// orDiscard is log, or a logger that drops everything when log is nil.
func orDiscard(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}
