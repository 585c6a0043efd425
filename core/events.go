package core

import (
	"fmt"
	"strconv"
	"time"
)

// EventKind says what a job's owner should hear about.
type EventKind string

// The kinds of plan events (DESIGN §3, decision 6).
const (
	EventStartMovedLater EventKind = "start_moved_later" // the predicted start slipped noticeably
	EventPositionChanged EventKind = "position_changed"  // someone was placed ahead, or it reached the head of the queue
	EventStartsSoon      EventKind = "starts_soon"       // predicted to start within StartsSoonWithin
	EventWillBeDrained   EventKind = "will_be_drained"   // a drain order appeared: it will be stopped for a reservation
	EventStarted         EventKind = "started"           // the server started it (its GPUs are assigned)

	// Events of the agents' reports.
	EventFinished       EventKind = "finished"        // it ended: succeeded, failed, was preempted or cancelled
	EventDrainWarning   EventKind = "drain_warning"   // it will be stopped soon for a reservation: checkpoint now
	EventForeignProcess EventKind = "foreign_process" // a process gpucal did not start sits on reserved GPUs
	EventNodeDown       EventKind = "node_down"       // to admins: a node's agent fell silent
	EventNodeBack       EventKind = "node_back"       // to admins: a node that was down is heard from again
	EventGPUFault       EventKind = "gpu_fault"       // to admins: a GPU was taken out of service
)

// Admins is the User of events for every site admin rather than one user.
const Admins = "@admins"

// Event is one thing a user should hear about. Events are written to the
// outbox in the same transaction as the change that caused them and
// delivered at least once by the notifier; DedupKey makes a repeat (a
// retried replan, a second replica) a no-op.
type Event struct {
	ID     int64 // filled in by the store
	Kind   EventKind
	Job    int64
	User   string // whom to tell: the job's owner
	At     time.Time
	Detail string // one sentence for the user, in English and UTC
	// Data is what the event is about, as fields (EventData's keys), for
	// wording it in the recipient's language and zone.
	Data     map[string]string
	DedupKey string
}

// The keys of Event.Data. Instants are RFC 3339 in UTC, durations whole
// seconds.
const (
	DataJob         = "job"         // "j42"
	DataName        = "name"        // the job's name
	DataStart       = "start"       // the predicted (median) start
	DataStartP90    = "start_p90"   // … by which it starts at 90 %
	DataWas         = "was"         // what the start or position was before
	DataReason      = "reason"      // why it waits, in English
	DataPosition    = "position"    // its place in the queue
	DataGPUs        = "gpus"        // how many GPUs
	DataReservation = "reservation" // "r7"
	DataSignalAt    = "signal_at"   // the checkpoint signal
	DataDeadline    = "deadline"    // when it must be gone
	DataState       = "state"       // how a job ended
	DataRan         = "ran"         // how long it ran
	DataEstimate    = "estimate"    // how long it was expected to run (the median)
	DataHow         = "how"         // exit code or signal, in English
	DataNode        = "node"        // a node's name
	DataGPU         = "gpu"         // "node-1/3"
	DataFault       = "fault"       // what is wrong with a GPU
	DataPID         = "pid"         // a process
	DataUser        = "user"        // whose process
	DataHolder      = "holder"      // who holds the reservation
	DataUntil       = "until"       // until when
	DataSince       = "since"       // the last heartbeat
	DataAttempts    = "attempts"    // of a failed notification
	DataChannel     = "channel"     // of a failed notification
	DataRecipient   = "recipient"   // of a failed notification
	// DataLogTail is the last lines of a failed job's log, as the server
	// has them when the notice is claimed for sending (not stored with the
	// event).
	DataLogTail = "log_tail"
)

func stampData(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Thresholds of DiffPlans.
const (
	// StartsSoonWithin: a job whose median start is this close is about to start.
	StartsSoonWithin = 15 * time.Minute
	// A start has slipped when it moved later by more than
	// max(slipMinimum, slipFraction of the wait that was left).
	slipMinimum  = 10 * time.Minute
	slipFraction = 0.10
)

// DiffPlans compares the plan before with the plan now and returns the
// events the jobs' owners should hear about, in next's order (queued jobs,
// then running ones). It is pure. jobs holds every job of next by ID; a
// job missing from it gets no events.
//
//   - started: next starts it now.
//   - starts_soon: its median start is within StartsSoonWithin and was not
//     in prev (once per job: the dedup key is the job).
//   - start_moved_later: its median start moved later by more than
//     max(10 min, 10 % of the wait prev predicted), or it can no longer be planned.
//   - position_changed: it moved back in the queue, or reached position 1.
//     Moving up because others started is not news.
//   - will_be_drained: a drain order appeared or changed.
func DiffPlans(prev, next Plan, jobs map[int64]Job) []Event {
	before := make(map[int64]PlannedJob, len(prev.Queued)+len(prev.Running))
	for _, pj := range prev.Queued {
		before[pj.Job] = pj
	}
	for _, pj := range prev.Running {
		before[pj.Job] = pj
	}
	now := next.Now
	var out []Event
	emit := func(kind EventKind, pj PlannedJob, key string, data map[string]string, format string, args ...any) {
		j, ok := jobs[pj.Job]
		if !ok {
			return
		}
		data[DataJob], data[DataName] = JobName(j.ID), j.Name
		out = append(out, Event{Kind: kind, Job: pj.Job, User: j.Owner, At: now,
			Detail:   jobTitle(j) + " " + fmt.Sprintf(format, args...),
			Data:     data,
			DedupKey: string(kind) + ":" + JobName(pj.Job) + key})
	}
	for _, pj := range next.Queued {
		old, seen := before[pj.Job]
		if pj.StartNow {
			emit(EventStarted, pj, "", map[string]string{DataGPUs: strconv.Itoa(len(pj.GPUs))}, "started on %d GPU(s)", len(pj.GPUs))
		} else {
			if soon(pj, now) && !(seen && soon(old, prev.Now)) {
				emit(EventStartsSoon, pj, "", map[string]string{DataStart: stampData(pj.StartP50), DataStartP90: stampData(pj.StartP90)},
					"should start in about %s, at %s (by %s at the latest)",
					roundedWait(pj.StartP50.Sub(now)), fmtTime(pj.StartP50), fmtTime(pj.StartP90))
			}
			if seen {
				diffQueued(old, pj, now, emit)
			}
		}
		if pj.Drain != nil && !sameDrain(old.Drain, pj.Drain) {
			emitDrain(pj, emit)
		}
	}
	for _, pj := range next.Running {
		if pj.Drain != nil && !sameDrain(before[pj.Job].Drain, pj.Drain) {
			emitDrain(pj, emit)
		}
	}
	return out
}

// diffQueued emits the events of a job that is queued in both plans.
func diffQueued(old, pj PlannedJob, now time.Time, emit emitFunc) {
	planned := func(p PlannedJob) bool { return !p.StartP50.IsZero() && len(p.GPUs) > 0 }
	switch {
	case planned(old) && !planned(pj):
		emit(EventStartMovedLater, pj, ":unplanned", map[string]string{DataReason: pj.Reason, DataWas: stampData(old.StartP50)},
			"can no longer be planned: %s", pj.Reason)
	case planned(old) && planned(pj):
		threshold := max(slipMinimum, time.Duration(slipFraction*float64(old.StartP50.Sub(now))))
		if pj.StartP50.Sub(old.StartP50) > threshold {
			emit(EventStartMovedLater, pj, ":"+strconv.FormatInt(pj.StartP50.Unix(), 10),
				map[string]string{DataStart: stampData(pj.StartP50), DataWas: stampData(old.StartP50), DataReason: pj.Reason},
				"is now expected to start at %s, not %s: %s", fmtTime(pj.StartP50), fmtTime(old.StartP50), pj.Reason)
		}
	}
	if old.Position > 0 && pj.Position > 0 && (pj.Position > old.Position || (pj.Position == 1 && old.Position > 1)) {
		// One message per job, place and hour: a job that flaps between two
		// places at every replan is not news every minute.
		key := fmt.Sprintf(":%d-%d:%d", old.Position, pj.Position, now.Unix()/3600)
		data := map[string]string{DataPosition: strconv.Itoa(pj.Position), DataWas: strconv.Itoa(old.Position)}
		if pj.Position == 1 {
			emit(EventPositionChanged, pj, key, data, "is now first in the queue (was %d)", old.Position)
		} else {
			emit(EventPositionChanged, pj, key, data, "is now number %d in the queue (was %d)", pj.Position, old.Position)
		}
	}
}

// emitFunc adds an event about a planned job.
type emitFunc func(kind EventKind, pj PlannedJob, key string, data map[string]string, format string, args ...any)

func emitDrain(pj PlannedJob, emit emitFunc) {
	d := pj.Drain
	emit(EventWillBeDrained, pj, fmt.Sprintf(":%s:%d", ReservationName(d.Reservation), d.Deadline.Unix()),
		map[string]string{DataReservation: ReservationName(d.Reservation), DataSignalAt: stampData(d.SignalAt), DataDeadline: stampData(d.Deadline)},
		"will be stopped for %s: checkpoint signal at %s, stopped by %s", ReservationName(d.Reservation), fmtTime(d.SignalAt), fmtTime(d.Deadline))
}

// soon reports whether pj's median start is within StartsSoonWithin of now.
func soon(pj PlannedJob, now time.Time) bool {
	return !pj.StartP50.IsZero() && len(pj.GPUs) > 0 && pj.StartP50.Sub(now) <= StartsSoonWithin
}

func sameDrain(a, b *DrainOrder) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Reservation == b.Reservation && a.Deadline.Equal(b.Deadline) && a.SignalAt.Equal(b.SignalAt)
}

// jobTitle names a job in a sentence: "j42 (llama-ft)".
func jobTitle(j Job) string {
	if j.Name == "" {
		return JobName(j.ID)
	}
	return JobName(j.ID) + " (" + j.Name + ")"
}

// roundedWait formats a short wait in whole minutes, at least one.
func roundedWait(d time.Duration) string {
	m := max(int64((d+time.Minute/2)/time.Minute), 1)
	if m == 1 {
		return "1 minute"
	}
	return strconv.FormatInt(m, 10) + " minutes"
}
