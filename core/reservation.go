package core

import (
	"strconv"
	"strings"
	"time"
)

// ReservationState is where a reservation is in its life.
//
// Stored states are confirmed, cancelled, released and no_show; active and
// completed are derived from the clock (StateAt), so a reservation never needs
// a background job to move it along.
type ReservationState string

const (
	Confirmed ReservationState = "confirmed" // booked, window not yet open
	Active    ReservationState = "active"    // window open now
	Completed ReservationState = "completed" // window passed
	Cancelled ReservationState = "cancelled" // given back before it started
	Released  ReservationState = "released"  // given back early; End is when
	NoShow    ReservationState = "no_show"   // nobody used it
)

// Holds reports whether a reservation in state s still holds its GPUs
// (a released reservation holds them only until its new End).
func (s ReservationState) Holds() bool { return s != Cancelled }

// Reservation is a booking of concrete GPUs for a window [Start, End).
type Reservation struct {
	ID         int64
	Owner      string
	Project    string
	Start, End time.Time
	State      ReservationState // the stored state; see StateAt
	GPUs       []GPURef
	Model      string // what was asked for ("a100", "" for any)
	Note       string
	CreatedAt  time.Time
	UpdatedAt  time.Time
	RequestKey string // the client's idempotency key, when it sent one
}

// StateAt returns the state as a person sees it at now.
func (r Reservation) StateAt(now time.Time) ReservationState {
	if r.State != Confirmed {
		return r.State
	}
	switch {
	case now.Before(r.Start):
		return Confirmed
	case now.Before(r.End):
		return Active
	default:
		return Completed
	}
}

// Name returns the reservation's public ID, "r42".
func (r Reservation) Name() string { return ReservationName(r.ID) }

// Ref returns a short reference to r for conflicts and calendars.
func (r Reservation) Ref() ReservationRef {
	return ReservationRef{ID: r.Name(), Owner: r.Owner, Project: r.Project, Start: r.Start, End: r.End}
}

// ReservationRef names a reservation and its window; in conflicts, also a
// running job in the way ("j42", its start and predicted end).
type ReservationRef struct {
	ID      string    `json:"id"`
	Owner   string    `json:"owner"`
	Project string    `json:"project,omitempty"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
}

// ReservationName formats a reservation ID as people write it: "r42".
func ReservationName(id int64) string { return "r" + strconv.FormatInt(id, 10) }

// ParseReservationID reads "r42", "R42" or "42".
func ParseReservationID(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "r") || strings.HasPrefix(t, "R") {
		t = t[1:]
	}
	id, err := strconv.ParseInt(t, 10, 64)
	if err != nil || id <= 0 || t != strings.TrimLeft(t, "+-") {
		return 0, Errorf(CodeInvalid, "%q is not a reservation ID; they look like r42", s)
	}
	return id, nil
}

// Slot is one GPU held by one reservation for [Start, End): the unit the
// database refuses to overlap. The Service also represents a running job
// that may not be drained as slots on its GPUs (Job set, Reservation 0), so
// that bookings go around it.
type Slot struct {
	GPUID       int64
	Reservation int64
	Job         int64 // set instead of Reservation for a running job's slot
	Owner       string
	Project     string
	Start, End  time.Time
}

// Holder names what holds the slot: "r42" or "j42".
func (s Slot) Holder() string {
	if s.Job != 0 {
		return JobName(s.Job)
	}
	return ReservationName(s.Reservation)
}

// Ref returns the slot's holder and window, for conflicts.
func (s Slot) Ref() ReservationRef {
	return ReservationRef{ID: s.Holder(), Owner: s.Owner, Project: s.Project, Start: s.Start, End: s.End}
}

// Overlaps reports whether the slot intersects the half-open window [start, end).
func (s Slot) Overlaps(start, end time.Time) bool {
	return s.Start.Before(end) && start.Before(s.End)
}

// ReservationFilter selects reservations; zero fields match everything.
// From/To select reservations whose window intersects [From, To).
type ReservationFilter struct {
	Owner    string
	Project  string
	From, To time.Time
	States   []ReservationState // stored states; empty means all
	Limit    int
}
