package core_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
)

var (
	epoch = coretest.Epoch
	hour  = time.Hour
)

func TestBook(t *testing.T) {
	e := newEnv(t)
	before := snapshot(t, e)
	req := coretest.Booking(4, "a100").At(epoch.Add(hour), 2*hour).Note("llama finetune").Project("vision").Build()

	got, err := e.Service.Book(ctx, e.Actor(t, "alice"), req)
	if err != nil {
		t.Fatalf("Book: %v", err)
	}
	want := core.Reservation{
		ID: 1, Owner: "alice", Project: "vision", Start: epoch.Add(hour), End: epoch.Add(3 * hour), State: core.Confirmed,
		GPUs:  gpuRefs(t, e, "a100-2", 0, 1, 2, 3), // best fit: the node the request fills exactly
		Model: "a100", Note: "llama finetune", CreatedAt: epoch, UpdatedAt: epoch,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Book mismatch (-want +got):\n%s", diff)
	}
	stored, err := e.Service.Reservation(ctx, e.Actor(t, "dave"), got.ID)
	if err != nil {
		t.Fatalf("Reservation(%d): %v", got.ID, err)
	}
	if diff := cmp.Diff(want, stored); diff != "" {
		t.Errorf("stored reservation mismatch (-want +got):\n%s", diff)
	}
	wantAudit := []core.AuditEntry{{Actor: "alice", Action: "reservation.book", Object: "r1"}}
	if diff := cmp.Diff(wantAudit, newAudit(t, e, before)); diff != "" {
		t.Errorf("audit mismatch (-want +got):\n%s", diff)
	}
}

func TestBookNormalises(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name      string
		req       core.BookRequest
		wantModel string
		wantStart time.Time
	}{
		{"exact model as typed", coretest.Booking(1, "A100-80GB").Build(), "a100-80gb", epoch.Add(hour)},
		{"any", coretest.Booking(1, "any").At(epoch.Add(5*hour), hour).Build(), "", epoch.Add(5 * hour)},
		{"zone and sub-second", coretest.Booking(1, "h100").
			At(epoch.Add(9*hour+500*time.Millisecond).In(time.FixedZone("CET", 3600)), hour).Build(), "h100", epoch.Add(9 * hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := book(t, e, "alice", tt.req)
			if got.Model != tt.wantModel {
				t.Errorf("Model = %q, want %q", got.Model, tt.wantModel)
			}
			if !got.Start.Equal(tt.wantStart) || got.Start.Location() != time.UTC {
				t.Errorf("Start = %v, want %v in UTC", got.Start, tt.wantStart)
			}
		})
	}
}

func TestBookRefused(t *testing.T) {
	valid := func() *coretest.BookingBuilder { return coretest.Booking(2, "a100") }
	tests := []struct {
		name     string
		actor    string
		req      core.BookRequest
		code     core.Code
		fragment string
	}{
		{"unknown model", "alice", valid().Build(), core.CodeInvalid, ""}, // replaced below
		{"model not here", "alice", coretest.Booking(1, "v100").Build(), core.CodeInvalid, "models here: a100-80gb, h100-80gb"},
		{"not a model", "alice", coretest.Booking(1, "banana").Build(), core.CodeInvalid, `"banana" is not a GPU model`},
		{"more GPUs than exist", "alice", coretest.Booking(13, "a100").Build(), core.CodeInvalid, "only 12 can be booked"},
		{"more than any node", "alice", coretest.Booking(9, "a100").SameNode().Build(), core.CodeInvalid, "largest node has 8"},
		{"more than the node", "alice", coretest.Booking(5, "").OnNode("a100-2").Build(), core.CodeInvalid, "on a100-2 but only 4"},
		{"unknown node", "alice", coretest.Booking(1, "").OnNode("nope").Build(), core.CodeInvalid, `no node "nope"`},
		{"no GPUs", "alice", coretest.Booking(0, "a100").Build(), core.CodeInvalid, "at least 1 GPU"},
		{"end before start", "alice", valid().Window(epoch.Add(2*hour), epoch.Add(hour)).Build(), core.CodeInvalid, "must be after"},
		{"in the past", "alice", valid().At(epoch.Add(-hour), 2*hour).Build(), core.CodeInvalid, "in the past"},
		{"note too long", "alice", valid().Note(strings.Repeat("n", 501)).Build(), core.CodeInvalid, "at most 500"},
		{"note not utf-8", "alice", valid().Note("\xc3\x28").Build(), core.CodeInvalid, "UTF-8"},
		{"key too long", "alice", valid().Key(strings.Repeat("k", 201)).Build(), core.CodeInvalid, "idempotency key"},
		{"for someone else", "alice", valid().For("bob").Build(), core.CodeForbidden, "only site admins"},
		{"project admin outside the project", "bob", valid().For("alice").Build(), core.CodeForbidden, "only site admins"},
		{"project admin for a non-member", "bob", valid().For("dave").Project("vision").Build(), core.CodeForbidden, "dave is not a member of project vision"},
		{"for nobody", "root", valid().For("ghost").Build(), core.CodeInvalid, `user "ghost" does not exist`},
		{"not a member", "dave", valid().Project("vision").Build(), core.CodeForbidden, "dave is not a member of project vision"},
		{"unknown project", "alice", valid().Project("nope").Build(), core.CodeInvalid, `project "nope" does not exist`},
	}
	tests[0].req.Model = "h100-40gb" // a real family, a size nobody has
	tests[0].fragment = "no GPU here is a h100-40gb"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			before := snapshot(t, e)
			_, err := e.Service.Book(ctx, e.Actor(t, tt.actor), tt.req)
			wantError(t, err, tt.code, tt.fragment)
			unchanged(t, e, before)
		})
	}
}

func TestBookOnBehalf(t *testing.T) {
	tests := []struct {
		name  string
		actor string
		req   core.BookRequest
	}{
		{"admin for a user", "root", coretest.Booking(1, "").For("bob").Build()},
		{"admin for a non-member's project", "root", coretest.Booking(1, "").For("dave").Project("vision").Build()},
		{"member in own project", "carol", coretest.Booking(1, "").Project("vision").Build()},
		{"for oneself by name", "alice", coretest.Booking(1, "").For("alice").Build()},
		{"project admin for a member", "bob", coretest.Booking(1, "").For("alice").Project("vision").Build()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			before := snapshot(t, e)
			got := book(t, e, tt.actor, tt.req)
			owner := tt.req.Owner
			if owner == "" {
				owner = tt.actor
			}
			if got.Owner != owner || got.Project != tt.req.Project {
				t.Errorf("owner, project = %s, %s; want %s, %s", got.Owner, got.Project, owner, tt.req.Project)
			}
			wantAudit := []core.AuditEntry{{Actor: tt.actor, Action: "reservation.book", Object: got.Name()}}
			if diff := cmp.Diff(wantAudit, newAudit(t, e, before)); diff != "" {
				t.Errorf("audit mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBookConflict(t *testing.T) {
	e := newEnv(t)
	blocker := book(t, e, "bob", coretest.Booking(12, "a100").At(epoch.Add(hour), 2*hour).Build())
	before := snapshot(t, e)

	_, err := e.Service.Book(ctx, e.Actor(t, "alice"), coretest.Booking(4, "a100").At(epoch.Add(2*hour), 2*hour).Build())

	de := wantError(t, err, core.CodeConflict, "held by r1 (bob)")
	want := &core.ConflictDetail{
		With: []core.ReservationRef{blocker.Ref()},
		Alternatives: []core.Alternative{
			{Kind: "later", GPUs: 4, Model: "a100", Start: blocker.End, End: blocker.End.Add(2 * hour)},
			{Kind: "model", GPUs: 4, Model: "h100", Start: epoch.Add(2 * hour), End: epoch.Add(4 * hour)},
		},
	}
	if diff := cmp.Diff(want, de.Conflict); diff != "" {
		t.Errorf("conflict detail mismatch (-want +got):\n%s", diff)
	}
	unchanged(t, e, before)

	// Every alternative offered can be booked as offered.
	for _, alt := range de.Conflict.Alternatives {
		t.Run(alt.Kind, func(t *testing.T) {
			e := newEnv(t)
			book(t, e, "bob", coretest.Booking(12, "a100").At(epoch.Add(hour), 2*hour).Build())
			book(t, e, "alice", coretest.Booking(alt.GPUs, alt.Model).Window(alt.Start, alt.End).Build())
		})
	}
}

func TestBookConflictFewer(t *testing.T) {
	e := newEnv(t, coretest.Node("n1").GPUs(4, a100).Build())
	first := book(t, e, "bob", coretest.Booking(3, "").At(epoch.Add(hour), 2*hour).Build())
	second := book(t, e, "carol", coretest.Booking(1, "").At(epoch, hour).Build())

	_, err := e.Service.Book(ctx, e.Actor(t, "alice"), coretest.Booking(2, "").At(epoch.Add(30*time.Minute), hour).Build())

	de := wantError(t, err, core.CodeConflict, "1 free then")
	want := &core.ConflictDetail{
		With: []core.ReservationRef{second.Ref(), first.Ref()},
		Alternatives: []core.Alternative{
			{Kind: "later", GPUs: 2, Start: first.End, End: first.End.Add(hour)},
			{Kind: "fewer", GPUs: 1, Start: epoch.Add(30 * time.Minute), End: epoch.Add(90 * time.Minute)},
		},
	}
	if diff := cmp.Diff(want, de.Conflict); diff != "" {
		t.Errorf("conflict detail mismatch (-want +got):\n%s", diff)
	}
}

func TestBookLaterWithinHorizon(t *testing.T) {
	e := newEnv(t, coretest.Node("n1").GPUs(1, a100).Build())
	p := e.Service.Policy()
	farEnd := epoch.Add(p.Horizon - hour)
	book(t, e, "bob", coretest.Booking(1, "").Window(farEnd.Add(-p.MaxDuration), farEnd).Build())

	_, err := e.Service.Book(ctx, e.Actor(t, "alice"), coretest.Booking(1, "").Window(farEnd.Add(-3*hour), farEnd.Add(-hour)).Build())

	de := wantError(t, err, core.CodeConflict, "held by r1")
	if len(de.Conflict.Alternatives) != 0 {
		t.Errorf("alternatives = %+v, want none: a 2h window after %s ends past the horizon", de.Conflict.Alternatives, farEnd)
	}
}

func TestBookIdempotent(t *testing.T) {
	e := newEnv(t)
	before := snapshot(t, e)
	req := coretest.Booking(2, "a100").Key("req-1").Build()
	first := book(t, e, "alice", req)
	// A retry long after the first request, when its window has already
	// started, still finds the first booking instead of refusing the window.
	e.Clock.Set(req.Start.Add(30 * time.Minute))
	again := book(t, e, "alice", req)
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("retry returned another reservation (-first +retry):\n%s", diff)
	}
	if first.RequestKey != "req-1" {
		t.Errorf("RequestKey = %q, want req-1", first.RequestKey)
	}
	if got := len(newAudit(t, e, before)); got != 1 {
		t.Errorf("audit entries = %d, want 1", got)
	}
	// The key is the owner's: bob's request with the same key is his own booking.
	e.Clock.Set(epoch)
	other := book(t, e, "bob", req)
	if other.ID == first.ID {
		t.Errorf("bob's booking with alice's key returned alice's %s", first.Name())
	}
}

func TestBookHalfOpen(t *testing.T) {
	e := newEnv(t, coretest.Node("n1").GPUs(2, a100).Build())
	first := book(t, e, "alice", coretest.Booking(2, "").At(epoch.Add(hour), hour).Build())
	next := book(t, e, "bob", coretest.Booking(2, "").At(first.End, hour).Build())
	prev := book(t, e, "carol", coretest.Booking(2, "").Window(epoch, first.Start).Build())
	for _, r := range []core.Reservation{next, prev} {
		if diff := cmp.Diff(first.GPUs, r.GPUs); diff != "" {
			t.Errorf("%s GPUs mismatch (-%s +%s):\n%s", r.Name(), first.Name(), r.Name(), diff)
		}
	}
}

func TestBookFreedByCancel(t *testing.T) {
	e := newEnv(t, coretest.Node("n1").GPUs(2, a100).Build())
	first := book(t, e, "alice", coretest.Booking(2, "").Build())
	if _, err := e.Service.Book(ctx, e.Actor(t, "bob"), coretest.Booking(1, "").Build()); core.ErrorCode(err) != core.CodeConflict {
		t.Fatalf("Book on a full node: err = %v, want a conflict", err)
	}
	if _, err := e.Service.Cancel(ctx, e.Actor(t, "alice"), first.ID); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	book(t, e, "bob", coretest.Booking(2, "").Build())
}
