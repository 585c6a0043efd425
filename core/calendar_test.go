package core_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
)

func TestCalendar(t *testing.T) {
	e := newEnv(t)
	r1 := book(t, e, "alice", coretest.Booking(2, "a100").At(epoch.Add(hour), 2*hour).Project("vision").Note("vit").Build())
	r2 := book(t, e, "bob", coretest.Booking(2, "h100").At(epoch.Add(2*hour), 2*hour).Build())
	r3 := book(t, e, "carol", coretest.Booking(1, "a100").At(epoch.Add(10*hour), hour).Build())
	mustCancel(e, r3)
	book(t, e, "dave", coretest.Booking(1, "").At(epoch.Add(30*hour), hour).Build())

	item := func(r core.Reservation, st core.ReservationState) core.CalendarItem {
		it := core.CalendarItem{Kind: "reservation", ID: r.Name(), Start: r.Start, End: r.End,
			Owner: r.Owner, Project: r.Project, State: st, Note: r.Note}
		for _, g := range r.GPUs {
			it.GPUs = append(it.GPUs, g.ID)
		}
		return it
	}
	allGPUs := append(append(gpuRefs(t, e, "a100-1", 0, 1, 2, 3, 4, 5, 6, 7), gpuRefs(t, e, "a100-2", 0, 1, 2, 3)...),
		gpuRefs(t, e, "h100-1", 0, 1, 2, 3, 4, 5, 6, 7)...)
	day := core.CalendarQuery{From: epoch, To: epoch.Add(24 * hour)}
	with := func(edit func(q *core.CalendarQuery)) core.CalendarQuery { q := day; edit(&q); return q }

	tests := []struct {
		name string
		now  time.Time
		q    core.CalendarQuery
		want core.Calendar
		gpus int // when want.GPUs is nil: how many GPUs to expect
	}{
		{
			name: "everything", q: day,
			want: core.Calendar{From: day.From, To: day.To, GPUs: allGPUs,
				Items: []core.CalendarItem{item(r1, core.Confirmed), item(r2, core.Confirmed)}},
		},
		{
			name: "state at now", now: epoch.Add(150 * time.Minute), q: day,
			want: core.Calendar{From: day.From, To: day.To, GPUs: allGPUs,
				Items: []core.CalendarItem{item(r1, core.Active), item(r2, core.Active)}},
		},
		{
			name: "by user", q: with(func(q *core.CalendarQuery) { q.User = "bob" }),
			want: core.Calendar{From: day.From, To: day.To, GPUs: allGPUs, Items: []core.CalendarItem{item(r2, core.Confirmed)}},
		},
		{
			name: "by project", q: with(func(q *core.CalendarQuery) { q.Project = "vision" }),
			want: core.Calendar{From: day.From, To: day.To, GPUs: allGPUs, Items: []core.CalendarItem{item(r1, core.Confirmed)}},
		},
		{
			name: "by model", q: with(func(q *core.CalendarQuery) { q.Model = "h100" }),
			want: core.Calendar{From: day.From, To: day.To, GPUs: gpuRefs(t, e, "h100-1", 0, 1, 2, 3, 4, 5, 6, 7),
				Items: []core.CalendarItem{item(r2, core.Confirmed)}},
		},
		{
			name: "model nobody has", q: with(func(q *core.CalendarQuery) { q.Model = "a100-40gb" }),
			want: core.Calendar{From: day.From, To: day.To},
		},
		{
			name: "half-open range",
			q:    core.CalendarQuery{From: epoch.Add(3 * hour), To: epoch.Add(24 * hour), User: "alice"},
			want: core.Calendar{From: epoch.Add(3 * hour), To: epoch.Add(24 * hour), GPUs: allGPUs},
		},
		{
			name: "zone converted",
			q:    core.CalendarQuery{From: epoch.In(time.FixedZone("X", 3600)), To: epoch.Add(24 * hour), User: "bob"},
			want: core.Calendar{From: day.From, To: day.To, GPUs: allGPUs, Items: []core.CalendarItem{item(r2, core.Confirmed)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.Clock.Set(epoch)
			if !tt.now.IsZero() {
				e.Clock.Set(tt.now)
			}
			got, err := e.Service.Calendar(ctx, e.Actor(t, "dave"), tt.q)
			if err != nil {
				t.Fatalf("Calendar: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Calendar mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCalendarRefused(t *testing.T) {
	tests := []struct {
		name     string
		q        core.CalendarQuery
		fragment string
	}{
		{"no from", core.CalendarQuery{To: epoch}, "needs 'from' and 'to'"},
		{"no to", core.CalendarQuery{From: epoch}, "needs 'from' and 'to'"},
		{"empty range", core.CalendarQuery{From: epoch, To: epoch}, "'to' must be after 'from'"},
		{"backwards", core.CalendarQuery{From: epoch, To: epoch.Add(-hour)}, "'to' must be after 'from'"},
		{"too long", core.CalendarQuery{From: epoch, To: epoch.Add(94 * 24 * hour)}, "at most 93 days"},
		{"bad model", core.CalendarQuery{From: epoch, To: epoch.Add(hour), Model: "banana"}, "not a GPU model"},
	}
	e := newEnv(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.Service.Calendar(ctx, e.Actor(t, "alice"), tt.q)
			wantError(t, err, core.CodeInvalid, tt.fragment)
		})
	}
}

func TestReservations(t *testing.T) {
	e := newEnv(t)
	r1 := book(t, e, "alice", coretest.Booking(1, "").At(epoch.Add(5*hour), hour).Build())
	r2 := book(t, e, "bob", coretest.Booking(1, "").At(epoch.Add(hour), hour).Build())
	r3 := book(t, e, "alice", coretest.Booking(1, "").At(epoch.Add(2*hour), hour).Build())
	tests := []struct {
		name string
		f    core.ReservationFilter
		want []string
	}{
		{"all, earliest first", core.ReservationFilter{}, []string{r2.Name(), r3.Name(), r1.Name()}},
		{"by owner", core.ReservationFilter{Owner: "alice"}, []string{r3.Name(), r1.Name()}},
		{"by window", core.ReservationFilter{From: epoch.Add(2 * hour), To: epoch.Add(5 * hour)}, []string{r3.Name()}},
		{"limit", core.ReservationFilter{Limit: 1}, []string{r2.Name()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := e.Service.Reservations(ctx, e.Actor(t, "dave"), tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rs {
				got = append(got, r.Name())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Reservations mismatch (-want +got):\n%s", diff)
			}
		})
	}
	_, err := e.Service.Reservations(ctx, e.Actor(t, "dave"), core.ReservationFilter{From: epoch, To: epoch})
	wantError(t, err, core.CodeInvalid, "'to' must be after 'from'")
	_, err = e.Service.Reservation(ctx, e.Actor(t, "dave"), 99)
	wantError(t, err, core.CodeNotFound, "r99")
}

func TestNodesStatus(t *testing.T) {
	e := newEnv(t, coretest.Node("n1").GPUs(4, a100).Down(3).Build(), coretest.Node("n2").GPUs(1, h100).Build())
	now := book(t, e, "alice", coretest.Booking(1, "a100").At(epoch, hour).Build())
	next := book(t, e, "bob", coretest.Booking(2, "a100").At(epoch.Add(2*hour), hour).Build())
	book(t, e, "carol", coretest.Booking(2, "a100").At(epoch.Add(5*hour), hour).Build())
	tests := []struct {
		name string
		at   time.Time
		want []string
	}{
		{
			name: "now",
			at:   epoch,
			want: []string{
				"n1/0 reserved r1 next r2", "n1/1 idle next r2", "n1/2 idle", "n1/3 down", "n2/0 idle",
			},
		},
		{
			name: "when the first ends",
			at:   now.End,
			want: []string{"n1/0 idle next r2", "n1/1 idle next r2", "n1/2 idle", "n1/3 down", "n2/0 idle"},
		},
		{
			name: "during the second",
			at:   next.Start.Add(time.Minute),
			want: []string{"n1/0 reserved r2 next r3", "n1/1 reserved r2 next r3", "n1/2 idle", "n1/3 down", "n2/0 idle"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.Clock.Set(tt.at)
			nodes, err := e.Service.Nodes(ctx, e.Actor(t, "dave"))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range nodes {
				for _, g := range n.GPUs {
					s := fmt.Sprintf("%s %s", g.Label(), g.Status)
					if g.Reservation != nil {
						s += " " + g.Reservation.ID
					}
					if g.Next != nil {
						s += " next " + g.Next.ID
					}
					got = append(got, strings.TrimSpace(s))
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Nodes mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
