package coretest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
)

var (
	ctx   = context.Background()
	epoch = coretest.Epoch
)

// seeded returns a store with node n1 (2 GPUs, IDs 1 and 2), user alice and
// reservation r1 holding GPU 1 for [epoch, epoch+1h).
func seeded(t *testing.T) *coretest.MemStore {
	t.Helper()
	s := coretest.NewMemStore()
	err := s.Update(ctx, func(tx core.Tx) error {
		n := coretest.Node("n1").GPUs(2, "NVIDIA A100-SXM4-80GB").Build()
		if err := tx.InsertNode(ctx, &n); err != nil {
			return err
		}
		if err := tx.InsertUser(ctx, core.User{Name: "alice"}); err != nil {
			return err
		}
		return tx.InsertReservation(ctx, &core.Reservation{Owner: "alice", Start: epoch, End: epoch.Add(time.Hour),
			State: core.Confirmed, GPUs: []core.GPURef{n.GPUs[0].Ref()}, RequestKey: "k"})
	})
	if err != nil {
		t.Fatalf("seed: %v", err)
	}
	return s
}

func reservationOn(gpu int64, start, end time.Time) *core.Reservation {
	return &core.Reservation{Owner: "alice", Start: start, End: end, State: core.Confirmed, GPUs: []core.GPURef{{ID: gpu}}}
}

func TestMemStoreErrors(t *testing.T) {
	tests := []struct {
		name string
		fn   func(tx core.Tx) error
		want core.Code
	}{
		{"overlap", func(tx core.Tx) error {
			return tx.InsertReservation(ctx, reservationOn(1, epoch.Add(30*time.Minute), epoch.Add(2*time.Hour)))
		}, core.CodeConflict},
		{"back to back", func(tx core.Tx) error {
			return tx.InsertReservation(ctx, reservationOn(1, epoch.Add(time.Hour), epoch.Add(2*time.Hour)))
		}, ""},
		{"other GPU", func(tx core.Tx) error {
			return tx.InsertReservation(ctx, reservationOn(2, epoch, epoch.Add(time.Hour)))
		}, ""},
		{"extension into another", func(tx core.Tx) error {
			if err := tx.InsertReservation(ctx, reservationOn(1, epoch.Add(2*time.Hour), epoch.Add(3*time.Hour))); err != nil {
				return err
			}
			r, _ := tx.Reservation(ctx, 1)
			r.End = epoch.Add(150 * time.Minute)
			return tx.UpdateReservation(ctx, r)
		}, core.CodeConflict},
		{"cancelled holds nothing", func(tx core.Tx) error {
			r, _ := tx.Reservation(ctx, 1)
			r.State = core.Cancelled
			if err := tx.UpdateReservation(ctx, r); err != nil {
				return err
			}
			return tx.InsertReservation(ctx, reservationOn(1, epoch, epoch.Add(time.Hour)))
		}, ""},
		{"duplicate key", func(tx core.Tx) error {
			r := reservationOn(2, epoch, epoch.Add(time.Hour))
			r.RequestKey = "k"
			return tx.InsertReservation(ctx, r)
		}, core.CodeConflict},
		{"missing reservation", func(tx core.Tx) error { _, err := tx.Reservation(ctx, 9); return err }, core.CodeNotFound},
		{"update missing", func(tx core.Tx) error { return tx.UpdateReservation(ctx, core.Reservation{ID: 9}) }, core.CodeNotFound},
		{"missing user", func(tx core.Tx) error { _, err := tx.User(ctx, "bob"); return err }, core.CodeNotFound},
		{"duplicate user", func(tx core.Tx) error { return tx.InsertUser(ctx, core.User{Name: "alice"}) }, core.CodeConflict},
		{"missing project", func(tx core.Tx) error { _, err := tx.Project(ctx, "p"); return err }, core.CodeNotFound},
		{"duplicate node", func(tx core.Tx) error {
			n := coretest.Node("n1").GPUs(1, "NVIDIA L40S").Build()
			n.GPUs[0].UUID = "other"
			return tx.InsertNode(ctx, &n)
		}, core.CodeConflict},
		{"duplicate GPU UUID", func(tx core.Tx) error {
			n := coretest.Node("n2").GPUs(1, "NVIDIA L40S").Build()
			n.GPUs[0].UUID = "GPU-n1-0"
			return tx.InsertNode(ctx, &n)
		}, core.CodeConflict},
		{"missing token", func(tx core.Tx) error { _, err := tx.TokenUser(ctx, "h"); return err }, core.CodeNotFound},
		{"token for nobody", func(tx core.Tx) error { return tx.InsertToken(ctx, &core.Token{User: "bob", Hash: "h"}) }, core.CodeNotFound},
		{"unknown GPU", func(tx core.Tx) error {
			return tx.InsertReservation(ctx, reservationOn(99, epoch.Add(5*time.Hour), epoch.Add(6*time.Hour)))
		}, core.CodeInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := seeded(t)
			if got := core.ErrorCode(s.Update(ctx, tt.fn)); got != tt.want {
				t.Errorf("code = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMemStoreRollback(t *testing.T) {
	s := seeded(t)
	before := s.AllSlots()
	boom := errors.New("boom")
	err := s.Update(ctx, func(tx core.Tx) error {
		r, _ := tx.Reservation(ctx, 1)
		r.End = epoch.Add(5 * time.Hour)
		if err := tx.UpdateReservation(ctx, r); err != nil {
			return err
		}
		if err := tx.InsertUser(ctx, core.User{Name: "bob"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want boom", err)
	}
	if diff := cmp.Diff(before, s.AllSlots()); diff != "" {
		t.Errorf("a failed Update changed the slots (-before +after):\n%s", diff)
	}
	err = s.View(ctx, func(tx core.Tx) error { _, err := tx.User(ctx, "bob"); return err })
	if core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("user from a failed Update: err = %v, want not found", err)
	}
}

func TestMemStoreViewIsReadOnly(t *testing.T) {
	s := seeded(t)
	err := s.View(ctx, func(tx core.Tx) error { return tx.InsertUser(ctx, core.User{Name: "bob"}) })
	if err == nil {
		t.Error("InsertUser inside View succeeded")
	}
}

func TestMemStoreCopies(t *testing.T) {
	s := seeded(t)
	_ = s.View(ctx, func(tx core.Tx) error {
		r, _ := tx.Reservation(ctx, 1)
		r.GPUs[0].ID = 2
		ns, _ := tx.Nodes(ctx)
		ns[0].GPUs[0].State = core.GPUDown
		return nil
	})
	_ = s.View(ctx, func(tx core.Tx) error {
		r, _ := tx.Reservation(ctx, 1)
		ns, _ := tx.Nodes(ctx)
		if r.GPUs[0].ID != 1 || ns[0].GPUs[0].State != core.GPUUp {
			t.Errorf("changing returned values changed the store")
		}
		return nil
	})
}

func TestMemStoreSlots(t *testing.T) {
	s := seeded(t)
	tests := []struct {
		name     string
		from, to time.Time
		want     int
	}{
		{"inside", epoch.Add(time.Minute), epoch.Add(2 * time.Minute), 1},
		{"ending at from", epoch.Add(time.Hour), epoch.Add(2 * time.Hour), 1},
		{"starting at to", epoch.Add(-time.Hour), epoch, 1},
		{"after", epoch.Add(time.Hour + time.Second), epoch.Add(2 * time.Hour), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_ = s.View(ctx, func(tx core.Tx) error {
				got, _ := tx.Slots(ctx, tt.from, tt.to)
				if len(got) != tt.want {
					t.Errorf("Slots(%s, %s) = %d slots, want %d", tt.from, tt.to, len(got), tt.want)
				}
				return nil
			})
		})
	}
}

func TestMemStoreCancelledContext(t *testing.T) {
	s := seeded(t)
	c, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Update(c, func(core.Tx) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("Update with a cancelled context = %v", err)
	}
}

func TestClock(t *testing.T) {
	c := coretest.NewClock(epoch)
	if got := c.Advance(time.Hour); !got.Equal(epoch.Add(time.Hour)) || !c.Now().Equal(got) {
		t.Errorf("Advance(1h) = %s, Now = %s; want %s", got, c.Now(), epoch.Add(time.Hour))
	}
	c.Set(epoch)
	if !c.Now().Equal(epoch) {
		t.Errorf("Now after Set = %s, want %s", c.Now(), epoch)
	}
}
