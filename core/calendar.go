package core

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// CalendarQuery selects a range of the calendar. User, Project and Model
// narrow what is shown; zero values show everything.
type CalendarQuery struct {
	From, To time.Time
	User     string
	Project  string
	Model    string
}

// Calendar is every GPU (of the requested model) and every item on them in a range.
type Calendar struct {
	From, To time.Time
	GPUs     []GPURef
	Items    []CalendarItem
}

// CalendarItem is one thing on the calendar: a reservation, a job holding
// GPUs (from its start to its predicted end) or a queued job at its planned
// place (from its predicted start to its predicted end).
type CalendarItem struct {
	Kind    string // "reservation" or "job"
	ID      string // "r42", "j42"
	GPUs    []int64
	Start   time.Time // a job: when it started, or its median predicted start
	End     time.Time // a job: its median predicted end
	Owner   string
	Project string
	State   ReservationState // reservations only
	Note    string           // a job: its name

	// Jobs only: the job's state and type, whether it is a queued job at
	// its planned place, and the 90th-percentile bands: it starts between
	// Start and StartP90 and ends between End and EndP90.
	JobState JobState
	JobType  JobType
	Planned  bool
	StartP90 time.Time
	EndP90   time.Time
}

// Calendar returns the GPUs and the items on them in [q.From, q.To).
func (s *Service) Calendar(ctx context.Context, a Actor, q CalendarQuery) (Calendar, error) {
	now := s.Now()
	q.From, q.To = q.From.UTC(), q.To.UTC()
	switch {
	case q.From.IsZero() || q.To.IsZero():
		return Calendar{}, Errorf(CodeInvalid, "a calendar needs 'from' and 'to'")
	case !q.To.After(q.From):
		return Calendar{}, Errorf(CodeInvalid, "'to' must be after 'from'")
	case q.To.Sub(q.From) > s.policy.MaxCalendar:
		return Calendar{}, Errorf(CodeInvalid, "a calendar may span at most %s", fmtDuration(s.policy.MaxCalendar))
	}
	model, ok := ParseModel(q.Model)
	if !ok {
		return Calendar{}, Errorf(CodeInvalid, "%q is not a GPU model", q.Model)
	}
	var nodes []Node
	var rs []Reservation
	var jobs []Job
	err := s.store.View(ctx, func(tx Tx) (err error) {
		if nodes, err = tx.Nodes(ctx); err != nil {
			return err
		}
		rs, err = tx.Reservations(ctx, ReservationFilter{Owner: q.User, Project: q.Project, From: q.From, To: q.To,
			States: []ReservationState{Confirmed, Released, NoShow}})
		if err != nil {
			return err
		}
		jobs, err = tx.Jobs(ctx, JobFilter{Owner: q.User, Project: q.Project, States: openStates})
		return err
	})
	if err != nil {
		return Calendar{}, err
	}
	cal := Calendar{From: q.From, To: q.To}
	shown := map[int64]bool{}
	for _, g := range allGPUs(nodes) {
		if model.Matches(g.Model()) {
			cal.GPUs = append(cal.GPUs, g.Ref())
			shown[g.ID] = true
		}
	}
	for _, r := range rs {
		item := CalendarItem{Kind: "reservation", ID: r.Name(), Start: r.Start, End: r.End,
			Owner: r.Owner, Project: r.Project, State: r.StateAt(now), Note: r.Note}
		for _, g := range r.GPUs {
			if shown[g.ID] {
				item.GPUs = append(item.GPUs, g.ID)
			}
		}
		if len(item.GPUs) > 0 {
			cal.Items = append(cal.Items, item)
		}
	}
	for _, j := range jobs {
		item, ok := s.jobItem(j, now)
		if !ok || !item.Start.Before(q.To) || !laterTime(item.End, item.EndP90).After(q.From) {
			continue
		}
		gpus := item.GPUs
		item.GPUs = nil
		for _, id := range gpus {
			if shown[id] {
				item.GPUs = append(item.GPUs, id)
			}
		}
		if len(item.GPUs) > 0 {
			cal.Items = append(cal.Items, item)
		}
	}
	slices.SortFunc(cal.Items, func(a, b CalendarItem) int {
		return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(len(a.ID), len(b.ID)), cmp.Compare(a.ID, b.ID))
	})
	return cal, nil
}

// jobItem places a job on the calendar: one holding GPUs from its start to
// its predicted end, a queued one at its planned place. A queued job the
// planner could not place is not shown.
func (s *Service) jobItem(j Job, now time.Time) (CalendarItem, bool) {
	p := j.Prediction
	item := CalendarItem{Kind: "job", ID: JobName(j.ID), Owner: j.Owner, Project: j.Project, Note: j.Name,
		JobState: j.State, JobType: j.Type}
	if j.State.Holding() {
		est := s.estimate(j, now)
		item.Start, item.StartP90 = j.StartedAt, j.StartedAt
		item.End = p.EndP50
		if !item.End.After(now) {
			item.End = laterTime(j.StartedAt.Add(est.P50), now.Add(time.Minute)).Truncate(time.Second)
		}
		item.EndP90 = laterTime(p.EndP90, item.End)
		for _, g := range j.Assigned {
			item.GPUs = append(item.GPUs, g.ID)
		}
		return item, len(item.GPUs) > 0
	}
	if p.StartP50.IsZero() || len(p.GPUs) == 0 || !p.EndP50.After(p.StartP50) {
		return CalendarItem{}, false
	}
	item.Planned = true
	item.Start, item.StartP90, item.End, item.EndP90 = p.StartP50, laterTime(p.StartP90, p.StartP50), p.EndP50, laterTime(p.EndP90, p.EndP50)
	item.GPUs = slices.Clone(p.GPUs)
	return item, true
}
