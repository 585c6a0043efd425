package scheduler

import (
	"context"
	"log/slog"
	"time"

	"github.com/gpucal/gpucal/core"
)

// Watch runs core's watch every period — reminders before reservations
// open, no-shows, GPUs allocated but idle, a saturated queue — and calls
// wrote after a watch that wrote events, so that they are delivered at
// once. It returns nil when ctx ends.
func Watch(ctx context.Context, svc *core.Service, log *slog.Logger, every time.Duration, wrote func()) error {
	log = orDiscard(log)
	return everyTick(ctx, every, log, "the watch failed", func() error {
		res, err := svc.Watch(ctx)
		if err != nil {
			return err
		}
		if n := res.Reminders + res.NoShows + res.Idle + res.Saturated; n > 0 {
			log.DebugContext(ctx, "the watch found something to tell", "reminders", res.Reminders, "no_shows", res.NoShows,
				"idle_jobs", res.Idle, "saturated", res.Saturated)
			if wrote != nil {
				wrote()
			}
		}
		return nil
	})
}
