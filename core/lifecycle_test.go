package core_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
)

func TestExtend(t *testing.T) {
	tests := []struct {
		name    string
		advance time.Duration // clock moves this far after booking
		req     core.ExtendRequest
		wantEnd time.Time
	}{
		{"by an hour", 0, core.ExtendRequest{By: hour}, epoch.Add(3 * hour)},
		{"to an instant", 0, core.ExtendRequest{End: epoch.Add(5 * hour)}, epoch.Add(5 * hour)},
		{"to an instant in another zone", 0, core.ExtendRequest{End: epoch.Add(5 * hour).In(time.FixedZone("X", -7200))}, epoch.Add(5 * hour)},
		{"while active", 90 * time.Minute, core.ExtendRequest{By: 30 * time.Minute}, epoch.Add(150 * time.Minute)},
		{"up to the next booking", 0, core.ExtendRequest{End: epoch.Add(6 * hour)}, epoch.Add(6 * hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, coretest.Node("n1").GPUs(2, a100).Build())
			r := book(t, e, "alice", coretest.Booking(2, "").At(epoch.Add(hour), hour).Build())
			book(t, e, "bob", coretest.Booking(2, "").At(epoch.Add(6*hour), hour).Build())
			now := e.Clock.Advance(tt.advance)
			before := snapshot(t, e)

			got, err := e.Service.Extend(ctx, e.Actor(t, "alice"), r.ID, tt.req)
			if err != nil {
				t.Fatalf("Extend: %v", err)
			}
			want := r
			want.End, want.UpdatedAt = tt.wantEnd, now
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Extend mismatch (-want +got):\n%s", diff)
			}
			stored, _ := e.Service.Reservation(ctx, e.Actor(t, "alice"), r.ID)
			if diff := cmp.Diff(want, stored); diff != "" {
				t.Errorf("stored mismatch (-want +got):\n%s", diff)
			}
			wantAudit := []core.AuditEntry{{Actor: "alice", Action: "reservation.extend", Object: r.Name()}}
			if diff := cmp.Diff(wantAudit, newAudit(t, e, before)); diff != "" {
				t.Errorf("audit mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExtendConflict(t *testing.T) {
	e := newEnv(t, coretest.Node("n1").GPUs(2, a100).Build())
	r := book(t, e, "alice", coretest.Booking(2, "").At(epoch.Add(hour), hour).Build())
	next := book(t, e, "bob", coretest.Booking(1, "").At(epoch.Add(4*hour), hour).Build())
	later := book(t, e, "carol", coretest.Booking(1, "").At(epoch.Add(5*hour), hour).Build())
	before := snapshot(t, e)

	_, err := e.Service.Extend(ctx, e.Actor(t, "alice"), r.ID, core.ExtendRequest{End: epoch.Add(7 * hour)})

	de := wantError(t, err, core.CodeConflict, "booked from 2030-01-07 13:00 UTC by r2 (bob)")
	want := &core.ConflictDetail{
		With:         []core.ReservationRef{next.Ref(), later.Ref()},
		Alternatives: []core.Alternative{{Kind: "shorter", GPUs: 2, Start: r.Start, End: next.Start}},
	}
	if diff := cmp.Diff(want, de.Conflict); diff != "" {
		t.Errorf("conflict detail mismatch (-want +got):\n%s", diff)
	}
	unchanged(t, e, before)

	// The suggestion can be taken as offered.
	if _, err := e.Service.Extend(ctx, e.Actor(t, "alice"), r.ID, core.ExtendRequest{End: next.Start}); err != nil {
		t.Errorf("Extend to the suggested end: %v", err)
	}
}

func TestExtendConflictNoRoom(t *testing.T) {
	e := newEnv(t, coretest.Node("n1").GPUs(1, a100).Build())
	r := book(t, e, "alice", coretest.Booking(1, "").At(epoch.Add(hour), hour).Build())
	book(t, e, "bob", coretest.Booking(1, "").At(r.End, hour).Build())
	_, err := e.Service.Extend(ctx, e.Actor(t, "alice"), r.ID, core.ExtendRequest{By: time.Minute})
	de := wantError(t, err, core.CodeConflict, "r2 (bob)")
	if len(de.Conflict.Alternatives) != 0 {
		t.Errorf("alternatives = %+v, want none when no minute is free", de.Conflict.Alternatives)
	}
}

func TestExtendRefused(t *testing.T) {
	tests := []struct {
		name     string
		start    time.Time                                 // of the 1h booking; E+1h when zero
		setup    func(e *coretest.Env, r core.Reservation) // after booking
		id       int64
		req      core.ExtendRequest
		code     core.Code
		fragment string
	}{
		{name: "neither", req: core.ExtendRequest{}, code: core.CodeInvalid, fragment: "either a duration"},
		{name: "both", req: core.ExtendRequest{By: hour, End: epoch.Add(5 * hour)}, code: core.CodeInvalid, fragment: "either a duration"},
		{name: "negative", req: core.ExtendRequest{By: -hour}, code: core.CodeInvalid, fragment: "positive"},
		{name: "earlier end", req: core.ExtendRequest{End: epoch.Add(90 * time.Minute)}, code: core.CodeInvalid, fragment: "must be after the current end"},
		{name: "same end", req: core.ExtendRequest{End: epoch.Add(2 * hour)}, code: core.CodeInvalid, fragment: "must be after the current end"},
		{name: "sub-second", req: core.ExtendRequest{By: time.Millisecond}, code: core.CodeInvalid, fragment: "must be after the current end"},
		{name: "too long", req: core.ExtendRequest{By: 14 * 24 * hour}, code: core.CodeInvalid, fragment: "extended, this one would last"},
		{name: "beyond horizon", start: epoch.Add(180*24*hour - 2*hour), req: core.ExtendRequest{By: 2 * hour}, code: core.CodeInvalid, fragment: "at most 180 days ahead"},
		{name: "not found", id: 99, req: core.ExtendRequest{By: hour}, code: core.CodeNotFound, fragment: "r99"},
		{
			name: "cancelled", req: core.ExtendRequest{By: hour}, code: core.CodeInvalid, fragment: "r1 is cancelled",
			setup: func(e *coretest.Env, r core.Reservation) {
				if _, err := e.Service.Cancel(ctx, core.System, r.ID); err != nil {
					panic(err)
				}
			},
		},
		{
			name: "completed", req: core.ExtendRequest{By: hour}, code: core.CodeInvalid, fragment: "r1 is completed",
			setup: func(e *coretest.Env, r core.Reservation) { e.Clock.Set(r.End) },
		},
		{
			name: "released", req: core.ExtendRequest{By: hour}, code: core.CodeInvalid, fragment: "r1 is released",
			setup: func(e *coretest.Env, r core.Reservation) {
				e.Clock.Set(r.Start.Add(10 * time.Minute))
				if _, err := e.Service.Release(ctx, core.System, r.ID); err != nil {
					panic(err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			start := tt.start
			if start.IsZero() {
				start = epoch.Add(hour)
			}
			r := book(t, e, "alice", coretest.Booking(1, "").At(start, hour).Build())
			if tt.setup != nil {
				tt.setup(e, r)
			}
			id := tt.id
			if id == 0 {
				id = r.ID
			}
			before := snapshot(t, e)
			_, err := e.Service.Extend(ctx, e.Actor(t, "alice"), id, tt.req)
			wantError(t, err, tt.code, tt.fragment)
			unchanged(t, e, before)
		})
	}
}

func TestGiveBack(t *testing.T) {
	start := epoch.Add(hour)
	tests := []struct {
		name      string
		release   bool          // Release rather than Cancel
		at        time.Duration // clock, from start
		wantState core.ReservationState
		wantEnd   time.Time
	}{
		{"cancel before start", false, -time.Minute, core.Cancelled, start.Add(hour)},
		{"release before start", true, -time.Minute, core.Cancelled, start.Add(hour)},
		{"cancel while active", false, 20 * time.Minute, core.Released, start.Add(20 * time.Minute)},
		{"release while active", true, 20 * time.Minute, core.Released, start.Add(20 * time.Minute)},
		{"release in the first second", true, 0, core.Cancelled, start.Add(hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, coretest.Node("n1").GPUs(2, a100).Build())
			r := book(t, e, "alice", coretest.Booking(2, "").At(start, hour).Build())
			now := start.Add(tt.at)
			e.Clock.Set(now)
			before := snapshot(t, e)

			giveBack, action := e.Service.Cancel, "reservation.cancel"
			if tt.release {
				giveBack, action = e.Service.Release, "reservation.release"
			}
			got, err := giveBack(ctx, e.Actor(t, "alice"), r.ID)
			if err != nil {
				t.Fatalf("%s: %v", action, err)
			}
			want := r
			want.State, want.End, want.UpdatedAt = tt.wantState, tt.wantEnd, now
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			wantAudit := []core.AuditEntry{{Actor: "alice", Action: action, Object: r.Name()}}
			if diff := cmp.Diff(wantAudit, newAudit(t, e, before)); diff != "" {
				t.Errorf("audit mismatch (-want +got):\n%s", diff)
			}
			// What was given back can be booked at once.
			from := start
			if tt.wantState == core.Released {
				from = now
			}
			book(t, e, "bob", coretest.Booking(2, "").Window(from, start.Add(hour)).Build())
		})
	}
}

func TestGiveBackRefused(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(e *coretest.Env, r core.Reservation)
		id       int64
		fragment string
		code     core.Code
	}{
		{name: "not found", id: 42, code: core.CodeNotFound, fragment: "r42"},
		{
			name: "already cancelled", code: core.CodeInvalid, fragment: "r1 is already cancelled",
			setup: func(e *coretest.Env, r core.Reservation) { mustCancel(e, r) },
		},
		{
			name: "already released", code: core.CodeInvalid, fragment: "r1 is already released",
			setup: func(e *coretest.Env, r core.Reservation) { e.Clock.Set(r.Start.Add(time.Minute)); mustCancel(e, r) },
		},
		{
			name: "completed", code: core.CodeInvalid, fragment: "r1 is already completed",
			setup: func(e *coretest.Env, r core.Reservation) { e.Clock.Set(r.End.Add(time.Minute)) },
		},
	}
	for _, tt := range tests {
		for _, release := range []bool{false, true} {
			name := tt.name + "/cancel"
			if release {
				name = tt.name + "/release"
			}
			t.Run(name, func(t *testing.T) {
				e := newEnv(t)
				r := book(t, e, "alice", coretest.Booking(1, "").At(epoch.Add(hour), hour).Build())
				if tt.setup != nil {
					tt.setup(e, r)
				}
				id := tt.id
				if id == 0 {
					id = r.ID
				}
				before := snapshot(t, e)
				giveBack := e.Service.Cancel
				if release {
					giveBack = e.Service.Release
				}
				_, err := giveBack(ctx, e.Actor(t, "alice"), id)
				wantError(t, err, tt.code, tt.fragment)
				unchanged(t, e, before)
			})
		}
	}
}

func mustCancel(e *coretest.Env, r core.Reservation) {
	if _, err := e.Service.Cancel(ctx, core.System, r.ID); err != nil {
		panic(err)
	}
}

// TestAuthorisation is the matrix of who may change a reservation: its
// owner, an admin of its project and a site admin; nobody else. A refusal
// changes nothing; every change writes one audit entry naming the actor.
func TestAuthorisation(t *testing.T) {
	ops := []struct {
		name   string
		action string
		do     func(e *coretest.Env, a core.Actor, id int64) error
	}{
		{"cancel", "reservation.cancel", func(e *coretest.Env, a core.Actor, id int64) error {
			_, err := e.Service.Cancel(ctx, a, id)
			return err
		}},
		{"release", "reservation.release", func(e *coretest.Env, a core.Actor, id int64) error {
			e.Clock.Advance(90 * time.Minute) // into the window
			_, err := e.Service.Release(ctx, a, id)
			return err
		}},
		{"extend", "reservation.extend", func(e *coretest.Env, a core.Actor, id int64) error {
			_, err := e.Service.Extend(ctx, a, id, core.ExtendRequest{By: hour})
			return err
		}},
	}
	actors := []struct {
		name        string
		user        string
		mayProject  bool // may change alice's booking in vision
		mayPersonal bool // may change alice's booking in no project
	}{
		{"owner", "alice", true, true},
		{"project admin", "bob", true, false},
		{"other member", "carol", false, false},
		{"stranger", "dave", false, false},
		{"site admin", "root", true, true},
	}
	for _, op := range ops {
		for _, ac := range actors {
			for _, project := range []string{"vision", ""} {
				may := ac.mayProject
				kind := "project booking"
				if project == "" {
					may, kind = ac.mayPersonal, "personal booking"
				}
				t.Run(op.name+"/"+ac.name+"/"+kind, func(t *testing.T) {
					e := newEnv(t)
					r := book(t, e, "alice", coretest.Booking(2, "a100").At(epoch.Add(hour), hour).Project(project).Build())
					before := snapshot(t, e)

					err := op.do(e, e.Actor(t, ac.user), r.ID)

					if !may {
						wantError(t, err, core.CodeForbidden, "only its owner, an admin of its project or a site admin")
						unchanged(t, e, before)
						return
					}
					if err != nil {
						t.Fatalf("%s by %s: %v", op.name, ac.user, err)
					}
					wantAudit := []core.AuditEntry{{Actor: ac.user, Action: op.action, Object: r.Name()}}
					if diff := cmp.Diff(wantAudit, newAudit(t, e, before)); diff != "" {
						t.Errorf("audit mismatch (-want +got):\n%s", diff)
					}
				})
			}
		}
	}
}
