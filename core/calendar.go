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

// CalendarItem is one thing on the calendar. Reservations are the only kind
// today; jobs join them with the planner.
type CalendarItem struct {
	Kind    string // "reservation"
	ID      string // "r42"
	GPUs    []int64
	Start   time.Time
	End     time.Time
	Owner   string
	Project string
	State   ReservationState
	Note    string
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
	err := s.store.View(ctx, func(tx Tx) (err error) {
		if nodes, err = tx.Nodes(ctx); err != nil {
			return err
		}
		rs, err = tx.Reservations(ctx, ReservationFilter{Owner: q.User, Project: q.Project, From: q.From, To: q.To,
			States: []ReservationState{Confirmed, Released, NoShow}})
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
	slices.SortFunc(cal.Items, func(a, b CalendarItem) int {
		return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(len(a.ID), len(b.ID)), cmp.Compare(a.ID, b.ID))
	})
	return cal, nil
}
