package web

import (
	"net/http"
	"time"

	"github.com/gpucal/gpucal/core"
)

// Timeline is the answer to GET /api/v1/timeline: what the web calendar
// draws, in one request. It is the calendar (every GPU, every reservation
// and job on them in [from, to)) with the nodes' inventory and status, each
// job's details (progress, estimate and its source, queue position, reason
// for waiting, drain order), and, for a signed-in caller, their own
// bookings and jobs.
type Timeline struct {
	Now       time.Time      `json:"now"`
	From      time.Time      `json:"from"`
	To        time.Time      `json:"to"`
	PlannedAt time.Time      `json:"planned_at,omitzero"`
	User      *User          `json:"user,omitempty"` // the caller; absent for the anonymous reader
	Nodes     []Node         `json:"nodes"`
	Items     []TimelineItem `json:"items"`
	Mine      *Mine          `json:"mine,omitempty"`
}

// TimelineItem is a calendar item; a job's carries the job.
type TimelineItem struct {
	CalendarItem
	Job *Job `json:"job,omitempty"`
}

// Mine is what the caller has booked and queued: reservations that have
// not ended, and open jobs (queued by position, then running).
type Mine struct {
	Reservations []Reservation `json:"reservations"`
	Jobs         []Job         `json:"jobs"`
}

func (s *Server) handleTimeline(w http.ResponseWriter, r *http.Request, a core.Actor) {
	q := r.URL.Query()
	from, to, err := parsePeriod(q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	t, err := s.timeline(r, a, from, to)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// timeline gathers a Timeline. It reads in several views, so a change
// between them may show half-way; the next change event fetches again.
func (s *Server) timeline(r *http.Request, a core.Actor, from, to time.Time) (Timeline, error) {
	ctx := r.Context()
	cal, err := s.svc.Calendar(ctx, a, core.CalendarQuery{From: from, To: to})
	if err != nil {
		return Timeline{}, err
	}
	nodes, err := s.svc.Nodes(ctx, a)
	if err != nil {
		return Timeline{}, err
	}
	queue, err := s.svc.Queue(ctx, a)
	if err != nil {
		return Timeline{}, err
	}
	gpus, err := s.svc.GPURefs(ctx, a)
	if err != nil {
		return Timeline{}, err
	}
	now := s.svc.Now()
	out := Timeline{Now: now, From: cal.From, To: cal.To, PlannedAt: queue.PlannedAt, Nodes: []Node{}, Items: []TimelineItem{}}
	for _, n := range nodes {
		out.Nodes = append(out.Nodes, nodeStatusJSON(n))
	}
	jobs := map[string]Job{}
	for _, j := range append(queue.Running, queue.Queued...) {
		jobs[core.JobName(j.ID)] = jobJSON(j, gpus)
	}
	for _, it := range calendarJSON(cal).Items {
		item := TimelineItem{CalendarItem: it}
		if j, ok := jobs[it.ID]; ok && it.Kind == "job" {
			item.Job = &j
		}
		out.Items = append(out.Items, item)
	}
	if a.User == "" {
		return out, nil
	}
	me := User{Name: a.User, Admin: a.Admin, Projects: map[string]string{}}
	for p, role := range a.Roles {
		me.Projects[p] = string(role)
	}
	out.User = &me
	rs, err := s.svc.Reservations(ctx, a, core.ReservationFilter{Owner: a.User, From: now, States: []core.ReservationState{core.Confirmed}})
	if err != nil {
		return Timeline{}, err
	}
	out.Mine = &Mine{Reservations: []Reservation{}, Jobs: []Job{}}
	for _, res := range rs {
		out.Mine.Reservations = append(out.Mine.Reservations, reservationJSON(res, now))
	}
	for _, j := range append(queue.Queued, queue.Running...) {
		if j.Owner == a.User {
			out.Mine.Jobs = append(out.Mine.Jobs, jobJSON(j, gpus))
		}
	}
	return out, nil
}
