package core

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// BookRequest asks for GPUs over a window.
type BookRequest struct {
	GPUs     int
	Model    string // "a100", "a100-80gb", "" for any
	Node     string // only this node, when set
	SameNode bool   // all GPUs on one node
	Start    time.Time
	End      time.Time
	Note     string
	Project  string // "" for none
	Owner    string // book for someone else (admins only); "" for the actor
	Key      string // idempotency key: a retried request returns the first booking
}

// maxConflictRefs bounds how many conflicting reservations an error names.
const maxConflictRefs = 10

// Book reserves req.GPUs concrete GPUs for [req.Start, req.End). When they
// cannot be found it returns a CodeConflict error that names the reservations
// in the way and suggests alternatives.
func (s *Service) Book(ctx context.Context, a Actor, req BookRequest) (Reservation, error) {
	now := s.Now()
	owner := req.Owner
	if owner == "" {
		owner = a.User
	}
	if owner != a.User && !a.Admin && (req.Project == "" || a.Roles[req.Project] != RoleAdmin) {
		return Reservation{}, Errorf(CodeForbidden, "only site admins, and project admins within their project, may book for someone else")
	}
	if req.Key != "" {
		// A retry finds the first booking even when its window has since
		// moved into the past.
		if r, found, err := s.byKey(ctx, owner, req.Key); err != nil || found {
			return r, err
		}
	}
	model, ok := ParseModel(req.Model)
	if !ok {
		return Reservation{}, Errorf(CodeInvalid, "%q is not a GPU model; try a100, h100 or a100-80gb", req.Model)
	}
	req.Start, req.End = req.Start.UTC().Truncate(time.Second), req.End.UTC().Truncate(time.Second)
	if err := s.policy.checkWindow(req.Start, req.End, now); err != nil {
		return Reservation{}, err
	}
	if err := s.policy.checkNote(req.Note); err != nil {
		return Reservation{}, err
	}
	if req.GPUs < 1 {
		return Reservation{}, Errorf(CodeInvalid, "a booking needs at least 1 GPU, got %d", req.GPUs)
	}
	if len(req.Key) > 200 {
		return Reservation{}, Errorf(CodeInvalid, "the idempotency key is longer than 200 characters")
	}
	d := demand{count: req.GPUs, model: model, node: req.Node, sameNode: req.SameNode, start: req.Start, end: req.End}

	var out Reservation
	err := s.store.Update(ctx, func(tx Tx) error {
		if req.Key != "" {
			r, found, err := tx.ReservationByKey(ctx, owner, req.Key)
			if err != nil {
				return err
			}
			if found {
				out = r
				return nil
			}
		}
		if err := s.checkOwnerProject(ctx, tx, a, owner, req.Project); err != nil {
			return err
		}
		nodes, err := tx.Nodes(ctx)
		if err != nil {
			return err
		}
		if err := checkDemand(nodes, d); err != nil {
			return err
		}
		slots, err := s.busySlots(ctx, tx, d.start, d.end, now, 0)
		if err != nil {
			return err
		}
		gpus := assign(nodes, slots, d)
		if gpus == nil {
			return s.bookingConflict(ctx, tx, nodes, d, now)
		}
		if err := s.lockForBooking(ctx, tx, gpus, d, now); err != nil {
			return err
		}
		r := Reservation{
			Owner: owner, Project: req.Project, Start: d.start, End: d.end, State: Confirmed,
			Model: model.String(), Note: req.Note, CreatedAt: now, UpdatedAt: now, RequestKey: req.Key,
		}
		for _, g := range gpus {
			r.GPUs = append(r.GPUs, g.Ref())
		}
		if err := tx.InsertReservation(ctx, &r); err != nil {
			return err
		}
		out = r
		return tx.Audit(ctx, AuditEntry{At: now, Actor: a.User, Action: "reservation.book", Object: r.Name(),
			Detail: fmt.Sprintf("%d GPU(s) %s for %s, %s–%s", len(r.GPUs), gpuLabels(r.GPUs), owner, fmtTime(r.Start), fmtTime(r.End))})
	})
	return out, err
}

// checkOwnerProject checks that the owner exists and may book for the project.
// byKey finds the reservation owner booked with an idempotency key.
func (s *Service) byKey(ctx context.Context, owner, key string) (r Reservation, found bool, err error) {
	err = s.store.View(ctx, func(tx Tx) error {
		r, found, err = tx.ReservationByKey(ctx, owner, key)
		return err
	})
	return r, found, err
}

func (s *Service) checkOwnerProject(ctx context.Context, tx Tx, a Actor, owner, project string) error {
	if _, err := tx.User(ctx, owner); err != nil {
		if ErrorCode(err) == CodeNotFound {
			return Errorf(CodeInvalid, "user %q does not exist", owner)
		}
		return err
	}
	if project == "" {
		return nil
	}
	if _, err := tx.Project(ctx, project); err != nil {
		if ErrorCode(err) == CodeNotFound {
			return Errorf(CodeInvalid, "project %q does not exist", project)
		}
		return err
	}
	roles, err := tx.Roles(ctx, owner)
	if err != nil {
		return err
	}
	if _, member := roles[project]; !member && !a.Admin {
		return Errorf(CodeForbidden, "%s is not a member of project %s", owner, project)
	}
	return nil
}

// checkDemand refuses requests that no state of the calendar could satisfy:
// an unknown node or model, or more GPUs than exist.
func checkDemand(nodes []Node, d demand) error {
	if d.node != "" && !hasNode(nodes, d.node) {
		return Errorf(CodeInvalid, "there is no node %q", d.node)
	}
	total, families := 0, map[string]bool{}
	for _, g := range allGPUs(nodes) {
		families[g.Model().String()] = true
		if g.Schedulable() && (d.node == "" || g.Node == d.node) && d.model.Matches(g.Model()) {
			total++
		}
	}
	if !d.model.IsZero() && total == 0 && !anyMatch(nodes, d.model) {
		return Errorf(CodeInvalid, "no GPU here is a %s; models here: %s", d.model, strings.Join(sortedKeys(families), ", "))
	}
	if d.count > total {
		where := ""
		if d.node != "" {
			where = " on " + d.node
		}
		return Errorf(CodeInvalid, "asked for %d %s GPU(s)%s but only %d can be booked", d.count, modelWord(d.model), where, total)
	}
	if d.sameNode {
		most := 0
		for _, n := range nodes {
			c := 0
			for _, g := range n.GPUs {
				if g.Schedulable() && d.model.Matches(g.Model()) {
					c++
				}
			}
			most = max(most, c)
		}
		if d.count > most {
			return Errorf(CodeInvalid, "asked for %d %s GPU(s) on one node but the largest node has %d", d.count, modelWord(d.model), most)
		}
	}
	return nil
}

// bookingConflict builds the conflict error for a demand that does not fit.
func (s *Service) bookingConflict(ctx context.Context, tx Tx, nodes []Node, d demand, now time.Time) error {
	horizonEnd := now.Add(s.policy.Horizon)
	slots, err := s.busySlots(ctx, tx, d.start, horizonEnd.Add(d.end.Sub(d.start)), now, 0)
	if err != nil {
		return err
	}
	with := conflictsWith(nodes, slots, d, maxConflictRefs)
	free := maxAssignable(nodes, slots, d)
	names := make([]string, 0, len(with))
	for _, r := range with {
		names = append(names, r.ID+" ("+r.Owner+")")
	}
	msg := fmt.Sprintf("cannot book %d %s GPU(s) for %s–%s: %d free then", d.count, modelWord(d.model), fmtTime(d.start), fmtTime(d.end), free)
	if d.sameNode {
		msg += " on one node"
	}
	if len(names) > 0 {
		msg += "; held by " + strings.Join(names, ", ")
	}
	return &Error{Code: CodeConflict, Message: msg, Conflict: &ConflictDetail{
		With: with, Alternatives: alternatives(nodes, slots, d, horizonEnd),
	}}
}

// ExtendRequest moves a reservation's end later: by a duration, or to an instant.
type ExtendRequest struct {
	By  time.Duration
	End time.Time
}

// Extend moves a confirmed or active reservation's end later, on the same GPUs.
func (s *Service) Extend(ctx context.Context, a Actor, id int64, req ExtendRequest) (Reservation, error) {
	now := s.Now()
	if (req.By == 0) == req.End.IsZero() {
		return Reservation{}, Errorf(CodeInvalid, "give either a duration to extend by or a new end, not both")
	}
	if req.By < 0 {
		return Reservation{}, Errorf(CodeInvalid, "extend by a positive duration, got %s", req.By)
	}
	var out Reservation
	err := s.store.Update(ctx, func(tx Tx) error {
		r, err := s.changeable(ctx, tx, a, id)
		if err != nil {
			return err
		}
		if st := r.StateAt(now); st != Confirmed && st != Active {
			return Errorf(CodeInvalid, "%s is %s; only confirmed or active reservations can be extended", r.Name(), st)
		}
		end := req.End.UTC().Truncate(time.Second)
		if req.By > 0 {
			end = r.End.Add(req.By).Truncate(time.Second)
		}
		if !end.After(r.End) {
			return Errorf(CodeInvalid, "the new end (%s) must be after the current end (%s)", fmtTime(end), fmtTime(r.End))
		}
		if err := s.policy.checkExtension(r.Start, end, now); err != nil {
			return err
		}
		if err := s.checkExtension(ctx, tx, r, end, now); err != nil {
			return err
		}
		old := r.End
		r.End, r.UpdatedAt = end, now
		if err := tx.UpdateReservation(ctx, r); err != nil {
			return err
		}
		out = r
		return tx.Audit(ctx, AuditEntry{At: now, Actor: a.User, Action: "reservation.extend", Object: r.Name(),
			Detail: fmt.Sprintf("end %s → %s", fmtTime(old), fmtTime(end))})
	})
	return out, err
}

// checkExtension refuses an extension whose GPUs are held by someone else
// in [r.End, end), a reservation or a running job that may not be drained,
// and suggests the longest extension that fits.
func (s *Service) checkExtension(ctx context.Context, tx Tx, r Reservation, end, now time.Time) error {
	mine := map[int64]bool{}
	ids := make([]int64, 0, len(r.GPUs))
	for _, g := range r.GPUs {
		mine[g.ID] = true
		ids = append(ids, g.ID)
	}
	slices.Sort(ids)
	if err := tx.LockGPUs(ctx, ids); err != nil {
		return err
	}
	slots, err := s.busySlots(ctx, tx, r.End, end, now, r.ID)
	if err != nil {
		return err
	}
	var with []ReservationRef
	limit := end
	seen := map[string]bool{}
	for _, sl := range slots {
		if (sl.Job == 0 && sl.Reservation == r.ID) || !mine[sl.GPUID] || !sl.Overlaps(r.End, end) {
			continue
		}
		limit = minTime(limit, sl.Start)
		if !seen[sl.Holder()] {
			seen[sl.Holder()] = true
			with = append(with, sl.Ref())
		}
	}
	if len(with) == 0 {
		return nil
	}
	detail := &ConflictDetail{With: with}
	if limit.After(r.End) {
		detail.Alternatives = []Alternative{{Kind: "shorter", GPUs: len(r.GPUs), Model: r.Model, Start: r.Start, End: limit}}
	}
	return &Error{Code: CodeConflict, Conflict: detail, Message: fmt.Sprintf(
		"cannot extend %s to %s: its GPUs are booked from %s by %s", r.Name(), fmtTime(end), fmtTime(limit), with[0].ID+" ("+with[0].Owner+")")}
}

// Cancel gives a reservation back. One that has not started is cancelled;
// one that is running ends now and is marked released.
func (s *Service) Cancel(ctx context.Context, a Actor, id int64) (Reservation, error) {
	return s.giveBack(ctx, a, id, "reservation.cancel")
}

// Release ends an active reservation now, freeing the rest of its window.
// Releasing one that has not started cancels it.
func (s *Service) Release(ctx context.Context, a Actor, id int64) (Reservation, error) {
	return s.giveBack(ctx, a, id, "reservation.release")
}

func (s *Service) giveBack(ctx context.Context, a Actor, id int64, action string) (Reservation, error) {
	now := s.Now()
	var out Reservation
	err := s.store.Update(ctx, func(tx Tx) error {
		r, err := s.changeable(ctx, tx, a, id)
		if err != nil {
			return err
		}
		switch st := r.StateAt(now); st {
		case Confirmed:
			r.State = Cancelled
		case Active:
			r.State = Released
			if now.After(r.Start) {
				r.End = now
			} else { // given back in its first second: nothing was used
				r.State = Cancelled
			}
		default:
			return Errorf(CodeInvalid, "%s is already %s", r.Name(), st)
		}
		r.UpdatedAt = now
		if err := tx.UpdateReservation(ctx, r); err != nil {
			return err
		}
		out = r
		return tx.Audit(ctx, AuditEntry{At: now, Actor: a.User, Action: action, Object: r.Name(), Detail: string(r.State)})
	})
	return out, err
}

// changeable loads reservation id and checks that a may change it.
func (s *Service) changeable(ctx context.Context, tx Tx, a Actor, id int64) (Reservation, error) {
	r, err := tx.Reservation(ctx, id)
	if err != nil {
		return Reservation{}, err
	}
	if !a.canChange(r) {
		return Reservation{}, Errorf(CodeForbidden, "%s belongs to %s; only its owner, an admin of its project or a site admin may change it", r.Name(), r.Owner)
	}
	return r, nil
}

// Reservation returns one reservation. Every authenticated user may read the
// calendar, so reads need no further authorisation.
func (s *Service) Reservation(ctx context.Context, a Actor, id int64) (Reservation, error) {
	var r Reservation
	err := s.store.View(ctx, func(tx Tx) (err error) {
		r, err = tx.Reservation(ctx, id)
		return err
	})
	return r, err
}

// Reservations lists reservations matching f, earliest start first.
func (s *Service) Reservations(ctx context.Context, a Actor, f ReservationFilter) ([]Reservation, error) {
	if !f.From.IsZero() && !f.To.IsZero() && !f.To.After(f.From) {
		return nil, Errorf(CodeInvalid, "'to' must be after 'from'")
	}
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 1000
	}
	var rs []Reservation
	err := s.store.View(ctx, func(tx Tx) (err error) {
		rs, err = tx.Reservations(ctx, f)
		return err
	})
	return rs, err
}

// busySlots returns the slots touching [from, to] (Start <= to, End >= from)
// that a booking must go around: those of the holding reservations and, as
// slots, those of every holding job that may not be drained, except jobs
// running in reservation except. Preemptible jobs block nothing: they are
// drained before a window that needs their GPUs (DESIGN §5).
func (s *Service) busySlots(ctx context.Context, tx Tx, from, to, now time.Time, except int64) ([]Slot, error) {
	slots, err := tx.Slots(ctx, from, to)
	if err != nil {
		return nil, err
	}
	jobs, err := tx.Jobs(ctx, JobFilter{States: holdingStates})
	if err != nil {
		return nil, err
	}
	return append(slots, s.jobSlots(jobs, from, to, now, except)...), nil
}

// jobSlots represents the holding jobs that may not be drained as slots
// from their start until busyUntil, those touching [from, to] only.
func (s *Service) jobSlots(jobs []Job, from, to, now time.Time, except int64) []Slot {
	var out []Slot
	for _, j := range jobs {
		if j.Preemptible || j.Class == ClassLow || (except != 0 && j.Reservation == except) || !j.State.Holding() {
			continue
		}
		start, end := j.StartedAt, s.busyUntil(j, now)
		if start.IsZero() || start.After(now) {
			start = now
		}
		if start.After(to) || end.Before(from) {
			continue
		}
		for _, g := range j.Assigned {
			out = append(out, Slot{GPUID: g.ID, Job: j.ID, Owner: j.Owner, Project: j.Project, Start: start, End: end})
		}
	}
	return out
}

// busyUntil is when a holding job is expected to free its GPUs: its
// predicted P90 end, or, when it has none or has run past it, now plus the
// estimator's P90.
func (s *Service) busyUntil(j Job, now time.Time) time.Time {
	if end := j.Prediction.EndP90; end.After(now) {
		return end
	}
	return now.Add(max(s.estimator.Estimate(j, now).P90, time.Minute)).Truncate(time.Second)
}

// lockForBooking locks the GPUs chosen for a booking and looks again at the
// jobs holding GPUs: one that started on a chosen GPU after the first look
// (on PostgreSQL, in a transaction that committed meanwhile) refuses the
// booking, which the client may simply retry.
func (s *Service) lockForBooking(ctx context.Context, tx Tx, gpus []GPU, d demand, now time.Time) error {
	ids := make([]int64, len(gpus))
	chosen := map[int64]bool{}
	for i, g := range gpus {
		ids[i] = g.ID
		chosen[g.ID] = true
	}
	slices.Sort(ids)
	if err := tx.LockGPUs(ctx, ids); err != nil {
		return err
	}
	jobs, err := tx.Jobs(ctx, JobFilter{States: holdingStates})
	if err != nil {
		return err
	}
	for _, sl := range s.jobSlots(jobs, d.start, d.end, now, 0) {
		if chosen[sl.GPUID] && sl.Overlaps(d.start, d.end) {
			return Errorf(CodeConflict, "%s started on a GPU chosen for this booking a moment ago; try again", sl.Holder())
		}
	}
	return nil
}

func gpuLabels(gpus []GPURef) string {
	parts := make([]string, len(gpus))
	for i, g := range gpus {
		parts[i] = fmt.Sprintf("%s/%d", g.Node, g.Index)
	}
	return strings.Join(parts, " ")
}

func modelWord(m Model) string {
	if m.IsZero() {
		return "any"
	}
	return m.String()
}

func hasNode(nodes []Node, name string) bool {
	for _, n := range nodes {
		if n.Name == name {
			return true
		}
	}
	return false
}

func anyMatch(nodes []Node, m Model) bool {
	for _, g := range allGPUs(nodes) {
		if m.Matches(g.Model()) {
			return true
		}
	}
	return false
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
