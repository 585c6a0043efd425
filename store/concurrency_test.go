package store

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/store/storetest"
)

// TestConcurrentBooking has 50 goroutines book the same GPU for the same
// window at once: exactly one may win, whether fn checks first as core
// does or blindly inserts.
func TestConcurrentBooking(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		for i, tc := range []struct {
			name  string
			check bool
		}{
			{"check then insert", true},
			{"blind insert", false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				g := f.a100.GPUs[i]
				start, end := hours(1), hours(3)
				const n = 50
				errs := make([]error, n)
				var wg sync.WaitGroup
				for w := range n {
					wg.Go(func() {
						errs[w] = f.db.Update(ctx, func(tx core.Tx) error {
							if tc.check {
								slots, err := tx.Slots(ctx, start, end)
								if err != nil {
									return err
								}
								for _, s := range slots {
									if s.GPUID == g.ID && s.Overlaps(start, end) {
										return core.Errorf(core.CodeConflict, "taken by %s", core.ReservationName(s.Reservation))
									}
								}
							}
							r := reservation("alice", start, end, g)
							return tx.InsertReservation(ctx, &r)
						})
					})
				}
				wg.Wait()
				wins := 0
				for _, err := range errs {
					switch core.ErrorCode(err) {
					case "":
						wins++
					case core.CodeConflict:
					default:
						t.Errorf("Update: %v, want success or a conflict", err)
					}
				}
				if wins != 1 {
					t.Errorf("%d of %d concurrent bookings won, want 1", wins, n)
				}
				var slots []core.Slot
				view(t, f.db, func(tx core.Tx) (err error) { slots, err = tx.Slots(ctx, start, end); return err })
				held := 0
				for _, s := range slots {
					if s.GPUID == g.ID {
						held++
					}
				}
				if held != 1 {
					t.Errorf("GPU %s has %d slots in the window, want 1", g.Label(), held)
				}
			})
		}
		overlaps, err := f.db.CheckOverlaps(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(overlaps) != 0 {
			t.Errorf("CheckOverlaps = %v, want none", overlaps)
		}
	})
}

// TestViewDuringUpdate checks that a reader neither waits for an open write
// transaction nor sees its changes.
func TestViewDuringUpdate(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		inside, release := make(chan struct{}), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			var once sync.Once
			done <- f.db.Update(ctx, func(tx core.Tx) error {
				if err := tx.InsertUser(ctx, core.User{Name: "carol", CreatedAt: t0}); err != nil {
					return err
				}
				once.Do(func() { close(inside) })
				<-release
				return nil
			})
		}()
		<-inside

		// Not a timing assertion: the deadline only turns a hang into a failure.
		vctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		var users []core.User
		err := f.db.View(vctx, func(tx core.Tx) (err error) { users, err = tx.Users(vctx); return err })
		close(release)
		if err != nil {
			t.Fatalf("View while a write transaction is open: %v", err)
		}
		if len(users) != 2 {
			t.Errorf("View saw %d users, want the 2 committed ones", len(users))
		}
		if err := <-done; err != nil {
			t.Fatalf("Update: %v", err)
		}
		view(t, f.db, func(tx core.Tx) (err error) { users, err = tx.Users(ctx); return err })
		if len(users) != 3 {
			t.Errorf("after commit View saw %d users, want 3", len(users))
		}
	})
}

// TestViewIsReadOnly checks that View refuses writes.
func TestViewIsReadOnly(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		err := f.db.View(ctx, func(tx core.Tx) error { return tx.InsertUser(ctx, core.User{Name: "carol", CreatedAt: t0}) })
		if err == nil {
			t.Error("InsertUser inside View succeeded, want an error")
		}
	})
}
