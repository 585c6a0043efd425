package core

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Events of the watch (Service.Watch): what nobody asked about but someone
// should hear.
const (
	EventReservationSoon EventKind = "reservation_soon" // to the holder: the window opens within RemindBefore
	EventNoShow          EventKind = "no_show"          // to the holder and admins: the window is open, its GPUs unused
	EventIdleAllocated   EventKind = "idle_allocated"   // to the owner and admins: a running job's GPUs idle for IdleAfter
	EventSaturated       EventKind = "saturated"        // to admins: the queue's P90 wait is over SaturatedWait
	EventDailySummary    EventKind = "daily_summary"    // to admins: yesterday's usage, once a day
)

// AnnounceSummary writes the admins' daily summary to the outbox, once per
// day (key "daily_summary:DAY"): the text in English and Chinese, which
// the notifier picks from by each admin's language.
func (s *Service) AnnounceSummary(ctx context.Context, day, en, zh string) error {
	if day == "" || en == "" {
		return Errorf(CodeInvalid, "a summary needs its day and its text")
	}
	now := s.Now()
	return s.store.Update(ctx, func(tx Tx) error {
		return tx.InsertEvents(ctx, []Event{{Kind: EventDailySummary, User: Admins, At: now, Detail: en,
			Data: map[string]string{"en": en, "zh": zh}, DedupKey: "daily_summary:" + day}})
	})
}

// AlertPolicy says when the watch speaks up. A zero duration turns that
// check off.
type AlertPolicy struct {
	RemindBefore  time.Duration // remind a reservation's holder this long before it opens
	NoShowAfter   time.Duration // a window open this long with its GPUs unused is a no-show
	IdleAfter     time.Duration // a running job's GPUs idle this long are wasted
	SaturatedWait time.Duration // the queue is saturated when its P90 wait is over this
}

// DefaultAlertPolicy is what a site gets unless it configures otherwise.
var DefaultAlertPolicy = AlertPolicy{
	RemindBefore:  15 * time.Minute,
	NoShowAfter:   30 * time.Minute,
	IdleAfter:     time.Hour,
	SaturatedWait: 24 * time.Hour,
}

// WithAlertPolicy sets when the watch speaks up.
func WithAlertPolicy(p AlertPolicy) Option { return func(s *Service) { s.alerts = p } }

// WatchResult counts the events one Watch wrote (repeats included: the
// outbox skips them by their keys).
type WatchResult struct {
	Reminders, NoShows, Idle, Saturated int
}

// Watch looks at the cluster as it is now and writes the events its
// policy asks for: reminders before reservations open, no-shows, GPUs
// allocated but idle, a saturated queue. Each event has a key that makes
// a second Watch of the same situation a no-op, so it may run every minute.
func (s *Service) Watch(ctx context.Context) (WatchResult, error) {
	now, p := s.Now(), s.alerts
	var res WatchResult
	err := s.store.Update(ctx, func(tx Tx) error {
		res = WatchResult{}
		nodes, err := tx.Nodes(ctx)
		if err != nil {
			return err
		}
		gpus := map[int64]GPU{}
		for _, n := range nodes {
			for _, g := range n.GPUs {
				gpus[g.ID] = g
			}
		}
		jobs, err := tx.Jobs(ctx, JobFilter{States: openStates})
		if err != nil {
			return err
		}
		held := map[int64]bool{} // GPUs a job holds now
		for _, j := range jobs {
			if j.State.Holding() {
				for _, g := range j.Assigned {
					held[g.ID] = true
				}
			}
		}
		var events []Event
		if p.RemindBefore > 0 || p.NoShowAfter > 0 {
			rs, err := tx.Reservations(ctx, ReservationFilter{From: now.Add(-max(p.NoShowAfter, time.Minute)), To: now.Add(p.RemindBefore),
				States: []ReservationState{Confirmed}})
			if err != nil {
				return err
			}
			for _, r := range rs {
				switch {
				case p.RemindBefore > 0 && r.Start.After(now) && !r.Start.After(now.Add(p.RemindBefore)):
					events = append(events, reminder(r, now))
					res.Reminders++
				case p.NoShowAfter > 0 && r.StateAt(now) == Active && !now.Before(r.Start.Add(p.NoShowAfter)) && unused(r, gpus, held, now.Add(-p.NoShowAfter)):
					events = append(events, noShow(r, now)...)
					res.NoShows++
				}
			}
		}
		if p.IdleAfter > 0 {
			for _, j := range jobs {
				if since, ok := idleSince(j, gpus, now.Add(-p.IdleAfter)); ok && j.State == JobRunning {
					events = append(events, idleAllocated(j, since, now)...)
					res.Idle++
				}
			}
		}
		if p.SaturatedWait > 0 {
			if e, ok := saturated(jobs, p.SaturatedWait, now); ok {
				events = append(events, e)
				res.Saturated++
			}
		}
		return tx.InsertEvents(ctx, events)
	})
	return res, err
}

// unused reports whether none of r's GPUs holds a job and each has been
// idle since before idleBy (or never reported).
func unused(r Reservation, gpus map[int64]GPU, held map[int64]bool, idleBy time.Time) bool {
	for _, ref := range r.GPUs {
		g := gpus[ref.ID]
		if held[ref.ID] || (!g.Telemetry.At.IsZero() && (g.Telemetry.IdleSince.IsZero() || g.Telemetry.IdleSince.After(idleBy))) {
			return false
		}
	}
	return len(r.GPUs) > 0
}

// idleSince returns since when all of a job's GPUs have been idle, when
// that is at or before idleBy.
func idleSince(j Job, gpus map[int64]GPU, idleBy time.Time) (time.Time, bool) {
	var since time.Time
	for _, ref := range j.Assigned {
		t := gpus[ref.ID].Telemetry.IdleSince
		if t.IsZero() || t.After(idleBy) {
			return time.Time{}, false
		}
		if t.After(since) {
			since = t
		}
	}
	// A GPU idle before the job started says nothing about the job.
	if j.StartedAt.After(since) {
		since = j.StartedAt
	}
	return since, len(j.Assigned) > 0 && !since.After(idleBy)
}

func reminder(r Reservation, now time.Time) Event {
	return Event{Kind: EventReservationSoon, User: r.Owner, At: now,
		Detail: fmt.Sprintf("Your reservation %s of %d GPU(s) (%s) opens at %s and ends at %s.",
			r.Name(), len(r.GPUs), gpuLabels(r.GPUs), fmtTime(r.Start), fmtTime(r.End)),
		Data: map[string]string{DataReservation: r.Name(), DataGPUs: strconv.Itoa(len(r.GPUs)), DataGPU: gpuLabels(r.GPUs),
			DataStart: stampData(r.Start), DataUntil: stampData(r.End)},
		DedupKey: fmt.Sprintf("reservation_soon:%s:%d", r.Name(), r.Start.Unix())}
}

func noShow(r Reservation, now time.Time) []Event {
	data := map[string]string{DataReservation: r.Name(), DataGPUs: strconv.Itoa(len(r.GPUs)), DataGPU: gpuLabels(r.GPUs),
		DataStart: stampData(r.Start), DataUntil: stampData(r.End), DataHolder: r.Owner}
	detail := fmt.Sprintf("Reservation %s of %s (%d GPU(s), %s) opened at %s and its GPUs are unused. Release it (gpucal release %s) if it is not needed, so others can use them.",
		r.Name(), r.Owner, len(r.GPUs), gpuLabels(r.GPUs), fmtTime(r.Start), r.Name())
	key := fmt.Sprintf("no_show:%s:%d", r.Name(), r.Start.Unix())
	return []Event{
		{Kind: EventNoShow, User: r.Owner, At: now, Detail: detail, Data: data, DedupKey: key + ":holder"},
		{Kind: EventNoShow, User: Admins, At: now, Detail: detail, Data: data, DedupKey: key + ":admins"},
	}
}

func idleAllocated(j Job, since, now time.Time) []Event {
	data := map[string]string{DataJob: JobName(j.ID), DataName: j.Name, DataGPUs: strconv.Itoa(len(j.Assigned)),
		DataGPU: gpuLabels(j.Assigned), DataSince: stampData(since), DataHolder: j.Owner}
	detail := fmt.Sprintf("%s of %s holds %d GPU(s) (%s) that have been idle since %s. Cancel it (gpucal cancel %s) if it is stuck.",
		jobTitle(j), j.Owner, len(j.Assigned), gpuLabels(j.Assigned), fmtTime(since), JobName(j.ID))
	key := fmt.Sprintf("idle_allocated:%s:%d", JobName(j.ID), since.Unix())
	return []Event{
		{Kind: EventIdleAllocated, Job: j.ID, User: j.Owner, At: now, Detail: detail, Data: data, DedupKey: key + ":owner"},
		{Kind: EventIdleAllocated, Job: j.ID, User: Admins, At: now, Detail: detail, Data: data, DedupKey: key + ":admins"},
	}
}

// saturated reports a saturated queue: the 90th percentile of the queued
// jobs' predicted waits (from submission to the median predicted start)
// over limit. It speaks once a day at most.
func saturated(jobs []Job, limit time.Duration, now time.Time) (Event, bool) {
	var waits []time.Duration
	for _, j := range jobs {
		if j.State != JobQueued {
			continue
		}
		start := j.Prediction.StartP50
		if start.Before(now) {
			start = now // unplanned, or due now
		}
		waits = append(waits, start.Sub(j.SubmittedAt))
	}
	if len(waits) < 10 {
		return Event{}, false // a handful of jobs is not a trend
	}
	slices.Sort(waits)
	p90 := waits[(len(waits)*9+9)/10-1]
	if p90 <= limit {
		return Event{}, false
	}
	day := now.Truncate(24 * time.Hour)
	return Event{Kind: EventSaturated, User: Admins, At: now,
		Detail: fmt.Sprintf("The queue is saturated: 9 in 10 of the %d queued jobs wait up to %s (more than %s). More GPUs, or fewer long jobs, would help.",
			len(waits), fmtDuration(p90.Round(time.Minute)), fmtDuration(limit)),
		Data:     map[string]string{DataPosition: strconv.Itoa(len(waits)), DataRan: strconv.FormatInt(int64(p90/time.Second), 10), DataUntil: strconv.FormatInt(int64(limit/time.Second), 10)},
		DedupKey: fmt.Sprintf("saturated:%d", day.Unix())}, true
}
