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
// replanned. since is when this server started listening: a node is never
// counted silent for longer than that, so a restart does not mark the
// fleet down. It returns nil when ctx ends.
func WatchNodes(ctx context.Context, svc *core.Service, log *slog.Logger, every time.Duration, since time.Time, changed func()) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		res, err := svc.CheckNodes(ctx, since)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil
		case err != nil:
			log.ErrorContext(ctx, "checking nodes failed", "err", err)
			continue
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
	}
}
