package store

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/store/storetest"
)

func TestReservations(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		a, h := f.a100.GPUs, f.h100.GPUs

		// r1: two GPUs given out of order; they come back by node and index.
		r1 := reservation("alice", hours(0), hours(4), h[1], a[2])
		r1.Project, r1.Model, r1.Note, r1.RequestKey = "ml", "", "training", "key-1"
		r1 = f.book(t, r1)
		r2 := f.book(t, reservation("bob", hours(4), hours(6), a[2]))
		r3 := f.book(t, reservation("alice", hours(10), hours(12), a[0], a[1]))
		if r1.ID == 0 || r2.ID <= r1.ID || r3.ID <= r2.ID {
			t.Fatalf("IDs %d, %d, %d: want increasing, non-zero", r1.ID, r2.ID, r3.ID)
		}

		wantR1 := core.Reservation{
			ID: r1.ID, Owner: "alice", Project: "ml", Start: hours(0), End: hours(4), State: core.Confirmed,
			GPUs: []core.GPURef{
				{ID: a[2].ID, Node: "a100-1", Index: 2, UUID: "GPU-a100-2", Model: "a100-80gb"},
				{ID: h[1].ID, Node: "h100-1", Index: 1, UUID: "GPU-h100-1", Model: "h100-80gb"},
			},
			Note: "training", CreatedAt: t0, UpdatedAt: t0, RequestKey: "key-1",
		}
		if diff := cmp.Diff(wantR1, r1); diff != "" {
			t.Errorf("InsertReservation left r (-want +got):\n%s", diff)
		}
		var got core.Reservation
		view(t, f.db, func(tx core.Tx) (err error) { got, err = tx.Reservation(ctx, r1.ID); return err })
		if diff := cmp.Diff(wantR1, got); diff != "" {
			t.Errorf("Reservation (-want +got):\n%s", diff)
		}

		t.Run("by key", func(t *testing.T) {
			for _, tc := range []struct {
				owner, key string
				found      bool
			}{
				{"alice", "key-1", true},
				{"bob", "key-1", false},
				{"alice", "key-2", false},
				{"bob", "", false}, // r2 has no key
			} {
				var got core.Reservation
				var found bool
				view(t, f.db, func(tx core.Tx) (err error) { got, found, err = tx.ReservationByKey(ctx, tc.owner, tc.key); return err })
				if found != tc.found || (found && got.ID != r1.ID) {
					t.Errorf("ReservationByKey(%s, %q) = %s, %t; want found=%t", tc.owner, tc.key, got.Name(), found, tc.found)
				}
			}
		})

		t.Run("not found", func(t *testing.T) {
			err := f.db.View(ctx, func(tx core.Tx) error { _, err := tx.Reservation(ctx, 42); return err })
			wantCode(t, err, core.CodeNotFound, "reservation r42 not found")
			err = f.db.Update(ctx, func(tx core.Tx) error {
				return tx.UpdateReservation(ctx, core.Reservation{ID: 42, State: core.Cancelled, End: hours(1)})
			})
			wantCode(t, err, core.CodeNotFound, "reservation r42 not found")
		})

		t.Run("key taken", func(t *testing.T) {
			dup := reservation("alice", hours(20), hours(21), a[3])
			dup.RequestKey = "key-1"
			err := f.db.Update(ctx, func(tx core.Tx) error { return tx.InsertReservation(ctx, &dup) })
			wantCode(t, err, core.CodeConflict, "")
		})

		// r2 ends early (released) and r3 is cancelled.
		update(t, f.db, func(tx core.Tx) error {
			r2.State, r2.End, r2.Note, r2.UpdatedAt = core.Released, hours(5), "done early", hours(5)
			if err := tx.UpdateReservation(ctx, r2); err != nil {
				return err
			}
			r3.State, r3.UpdatedAt = core.Cancelled, hours(1)
			return tx.UpdateReservation(ctx, r3)
		})
		view(t, f.db, func(tx core.Tx) (err error) { got, err = tx.Reservation(ctx, r2.ID); return err })
		if diff := cmp.Diff(r2, got); diff != "" {
			t.Errorf("Reservation after UpdateReservation (-want +got):\n%s", diff)
		}

		t.Run("slots", func(t *testing.T) {
			var got []core.Slot
			view(t, f.db, func(tx core.Tx) (err error) { got, err = tx.Slots(ctx, hours(0), hours(24)); return err })
			want := []core.Slot{
				{GPUID: a[2].ID, Reservation: r1.ID, Owner: "alice", Project: "ml", Start: hours(0), End: hours(4)},
				{GPUID: h[1].ID, Reservation: r1.ID, Owner: "alice", Project: "ml", Start: hours(0), End: hours(4)},
				{GPUID: a[2].ID, Reservation: r2.ID, Owner: "bob", Start: hours(4), End: hours(5)}, // released: its new end
				// r3 is cancelled: no slots.
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Slots (-want +got):\n%s", diff)
			}
		})

		for _, tc := range []struct {
			name   string
			filter core.ReservationFilter
			want   []int64
		}{
			{"all", core.ReservationFilter{}, []int64{r1.ID, r2.ID, r3.ID}},
			{"window intersects", core.ReservationFilter{From: hours(4), To: hours(10)}, []int64{r2.ID}},
			{"window half-open", core.ReservationFilter{From: hours(5), To: hours(10)}, nil},
			{"from only", core.ReservationFilter{From: hours(4)}, []int64{r2.ID, r3.ID}},
			{"to only", core.ReservationFilter{To: hours(4)}, []int64{r1.ID}},
			{"owner", core.ReservationFilter{Owner: "alice"}, []int64{r1.ID, r3.ID}},
			{"project", core.ReservationFilter{Project: "ml"}, []int64{r1.ID}},
			{"states", core.ReservationFilter{States: []core.ReservationState{core.Confirmed, core.Released}}, []int64{r1.ID, r2.ID}},
			{"limit", core.ReservationFilter{Limit: 2}, []int64{r1.ID, r2.ID}},
		} {
			t.Run("filter "+tc.name, func(t *testing.T) {
				var rs []core.Reservation
				view(t, f.db, func(tx core.Tx) (err error) { rs, err = tx.Reservations(ctx, tc.filter); return err })
				var got []int64
				for _, r := range rs {
					got = append(got, r.ID)
					if len(r.GPUs) == 0 {
						t.Errorf("%s has no GPUs", r.Name())
					}
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("Reservations(%+v) (-want +got):\n%s", tc.filter, diff)
				}
			})
		}
	})
}

// TestOverlapGuard checks that the database refuses overlapping slots even
// when core's checks are bypassed, through Tx and through plain SQL.
func TestOverlapGuard(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		g, other := f.a100.GPUs[0], f.a100.GPUs[1]
		held := f.book(t, reservation("alice", hours(2), hours(4), g))
		cancelled := reservation("bob", hours(5), hours(8), g)
		cancelled.State = core.Cancelled
		cancelled = f.book(t, cancelled)
		later := f.book(t, reservation("bob", hours(8), hours(9), g))

		insert := func(r core.Reservation) func(core.Tx) error {
			return func(tx core.Tx) error { return tx.InsertReservation(ctx, &r) }
		}
		change := func(r core.Reservation, state core.ReservationState, end float64) func(core.Tx) error {
			r.State, r.End = state, hours(end)
			return func(tx core.Tx) error { return tx.UpdateReservation(ctx, r) }
		}
		for _, tc := range []struct {
			name string
			fn   func(core.Tx) error
			code core.Code // "" for success
		}{
			{"same window", insert(reservation("bob", hours(2), hours(4), g)), core.CodeConflict},
			{"inside", insert(reservation("bob", hours(3), hours(3.5), g)), core.CodeConflict},
			{"covering", insert(reservation("bob", hours(1), hours(5), g)), core.CodeConflict},
			{"overlapping start", insert(reservation("bob", hours(1), hours(2.001), g)), core.CodeConflict},
			{"one GPU of two taken", insert(reservation("bob", hours(3), hours(4), other, g)), core.CodeConflict},
			{"back to back before", insert(reservation("bob", hours(1), hours(2), g)), ""},
			{"back to back after", insert(reservation("bob", hours(4), hours(5), g)), ""},
			{"cancelled slot does not block", insert(reservation("bob", hours(6), hours(7), g)), ""},
			{"cancelled overlap is fine", insert(core.Reservation{Owner: "bob", Start: hours(2), End: hours(4),
				State: core.Cancelled, GPUs: []core.GPURef{g.Ref()}, CreatedAt: t0, UpdatedAt: t0}), ""},
			{"extend into another", change(held, core.Confirmed, 4.5), core.CodeConflict},
			{"revive a cancelled one over another", change(cancelled, core.Confirmed, 8), core.CodeConflict},
			{"extend into a cancelled one", change(later, core.Confirmed, 10), ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				err := f.db.Update(ctx, tc.fn)
				if got := core.ErrorCode(err); got != tc.code {
					t.Fatalf("Update: %v: code %q, want %q", err, got, tc.code)
				}
			})
		}

		t.Run("plain SQL", func(t *testing.T) {
			r := f.book(t, reservation("bob", hours(30), hours(31), other))
			// A second slot for r on g, overlapping held, written without store's code.
			_, err := f.db.write.NewInsert().Model(&slotRow{Reservation: r.ID, GPUID: g.ID, Start: stamp(hours(3)), End: stamp(hours(31)), Holds: true}).Exec(ctx)
			if !isOverlap(err) {
				t.Errorf("inserting an overlapping slot: %v, want the database's overlap error", err)
			}
			_, err = f.db.write.NewUpdate().Model((*slotRow)(nil)).Set("starts_at = ?", stamp(hours(3))).Set("gpu_id = ?", g.ID).Where("reservation_id = ?", r.ID).Exec(ctx)
			if !isOverlap(err) {
				t.Errorf("moving a slot over another: %v, want the database's overlap error", err)
			}
		})

		overlaps, err := f.db.CheckOverlaps(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(overlaps) != 0 {
			t.Errorf("CheckOverlaps = %v, want none", overlaps)
		}
	})
}

// TestCheckOverlaps plants an overlap behind the guard's back and checks
// that CheckOverlaps finds it.
func TestCheckOverlaps(t *testing.T) {
	f := newFixture(t, storetest.SQLite(t))
	ctx := context.Background()
	g := f.a100.GPUs[0]
	a := f.book(t, reservation("alice", hours(0), hours(2), g))
	b := f.book(t, reservation("bob", hours(1), hours(3), f.a100.GPUs[1]))
	if _, err := f.db.write.ExecContext(ctx, "DROP TRIGGER reservation_gpus_no_overlap_update"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.write.NewUpdate().Model((*slotRow)(nil)).Set("gpu_id = ?", g.ID).Where("reservation_id = ?", b.ID).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := f.db.CheckOverlaps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Overlap{{GPUID: g.ID, A: a.ID, B: b.ID}}, got); diff != "" {
		t.Errorf("CheckOverlaps (-want +got):\n%s", diff)
	}
}

// TestUpdate checks Update's retries and its handling of fn's errors.
func TestUpdate(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		g := f.a100.GPUs[0]
		f.book(t, reservation("alice", hours(0), hours(2), g))

		t.Run("domain error passes through", func(t *testing.T) {
			want := core.Errorf(core.CodeForbidden, "no")
			attempts := 0
			err := f.db.Update(ctx, func(tx core.Tx) error { attempts++; return want })
			if err != want || attempts != 1 {
				t.Errorf("Update = %v after %d attempts, want %v after 1", err, attempts, want)
			}
		})
		t.Run("gives up", func(t *testing.T) {
			attempts := 0
			err := f.db.Update(ctx, func(tx core.Tx) error {
				attempts++
				r := reservation("bob", hours(1), hours(3), g)
				return tx.InsertReservation(ctx, &r)
			})
			wantCode(t, err, core.CodeConflict, "the GPUs were taken by a concurrent booking; try again")
			if attempts != maxAttempts {
				t.Errorf("fn ran %d times, want %d", attempts, maxAttempts)
			}
		})
		t.Run("succeeds on a later attempt", func(t *testing.T) {
			attempts := 0
			err := f.db.Update(ctx, func(tx core.Tx) error {
				attempts++
				start := hours(1) // taken the first time, as if a concurrent booking had won
				if attempts > 1 {
					start = hours(2)
				}
				r := reservation("bob", start, hours(3), g)
				return tx.InsertReservation(ctx, &r)
			})
			if err != nil || attempts != 2 {
				t.Errorf("Update = %v after %d attempts, want success after 2", err, attempts)
			}
		})
		t.Run("rolls back", func(t *testing.T) {
			err := f.db.Update(ctx, func(tx core.Tx) error {
				if err := tx.InsertUser(ctx, core.User{Name: "carol", CreatedAt: t0}); err != nil {
					return err
				}
				return core.Errorf(core.CodeInvalid, "changed my mind")
			})
			wantCode(t, err, core.CodeInvalid, "changed my mind")
			err = f.db.View(ctx, func(tx core.Tx) error { _, err := tx.User(ctx, "carol"); return err })
			wantCode(t, err, core.CodeNotFound, "")
		})
		t.Run("cancelled context", func(t *testing.T) {
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			err := f.db.Update(cctx, func(tx core.Tx) error { return nil })
			if err == nil || !strings.Contains(err.Error(), "context canceled") {
				t.Errorf("Update with a cancelled context = %v, want context canceled", err)
			}
		})
	})
}
