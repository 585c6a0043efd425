package store

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/store/storetest"
)

// TestLeases: a lease is taken, renewed by its holder, refused to others
// until it expires or is released, and changes hands with a new term;
// replicas claiming at once never both hold it.
func TestLeases(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		t0 := time.Date(2030, 1, 7, 9, 0, 0, 0, time.UTC)
		claim := func(holder string, now time.Time) core.Lease {
			t.Helper()
			var l core.Lease
			update(t, f.db, func(tx core.Tx) (err error) {
				l, err = tx.ClaimLease(ctx, "leader", holder, now, now.Add(10*time.Second))
				return err
			})
			return l
		}
		if l := claim("a", t0); !l.Held("a", t0) || l.Term != 1 || !l.Expires.Equal(t0.Add(10*time.Second)) {
			t.Fatalf("first claim: %+v", l)
		}
		if l := claim("b", t0.Add(5*time.Second)); l.Holder != "a" || l.Held("b", t0.Add(5*time.Second)) {
			t.Errorf("b took a running lease: %+v", l)
		}
		if l := claim("a", t0.Add(5*time.Second)); !l.Held("a", t0.Add(5*time.Second)) || l.Term != 1 || !l.Expires.Equal(t0.Add(15*time.Second)) {
			t.Errorf("a's renewal: %+v", l)
		}
		if l := claim("b", t0.Add(15*time.Second)); l.Holder != "b" || l.Term != 2 {
			t.Errorf("b, once a's lease expired: %+v; want b's, term 2", l)
		}
		// A release ends the lease at once; releasing another's changes nothing.
		now := t0.Add(16 * time.Second)
		update(t, f.db, func(tx core.Tx) error { return tx.ReleaseLease(ctx, "leader", "a", now) })
		if l := claim("a", now); l.Holder != "b" {
			t.Errorf("a released b's lease: %+v", l)
		}
		update(t, f.db, func(tx core.Tx) error { return tx.ReleaseLease(ctx, "leader", "b", now) })
		if l := claim("a", now); !l.Held("a", now) || l.Term != 3 {
			t.Errorf("a after b released: %+v; want a's, term 3", l)
		}

		// Eight replicas claim an expired lease at once: one gets it.
		later := now.Add(time.Minute)
		var mu sync.Mutex
		holders := map[string]bool{}
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				me := string(rune('p' + i))
				var l core.Lease
				err := f.db.Update(ctx, func(tx core.Tx) (err error) {
					l, err = tx.ClaimLease(ctx, "leader", me, later, later.Add(time.Minute))
					return err
				})
				if err != nil {
					t.Errorf("%s: %v", me, err)
					return
				}
				if l.Held(me, later) {
					mu.Lock()
					holders[me] = true
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(holders) != 1 {
			t.Errorf("holders after a race: %v; want exactly one", holders)
		}
	})
}
