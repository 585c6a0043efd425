package store

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/store/storetest"
)

func TestIdempotencyKeys(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		db := open(t, dsn)
		ctx := context.Background()
		rec := func(fp string, at time.Time) core.IdempotencyRecord {
			return core.IdempotencyRecord{User: "alice", Key: "k1", Fingerprint: fp, CreatedAt: at}
		}
		body := []byte(`{"id":"r1"}`)

		// Each step runs in order on the same key.
		for _, step := range []struct {
			name        string
			do          func() error // instead of a claim, when set
			claim       core.IdempotencyRecord
			staleBefore time.Time
			wantClaimed bool
			want        core.IdempotencyRecord
		}{
			{name: "first claim", claim: rec("fp1", t0), staleBefore: hours(-1),
				wantClaimed: true, want: rec("fp1", t0)},
			{name: "still running", claim: rec("fp2", hours(0.1)), staleBefore: hours(-1),
				want: rec("fp1", t0)},
			{name: "stale takeover", claim: rec("fp3", hours(2)), staleBefore: hours(1),
				wantClaimed: true, want: rec("fp3", hours(2))},
			{name: "complete", do: func() error { return db.CompleteKey(ctx, "alice", "k1", 201, body) }},
			{name: "completed is never stale", claim: rec("fp4", hours(9)), staleBefore: hours(8),
				want: core.IdempotencyRecord{User: "alice", Key: "k1", Fingerprint: "fp3", Status: 201, Body: body, CreatedAt: hours(2)}},
			{name: "release", do: func() error { return db.ReleaseKey(ctx, "alice", "k1") }},
			{name: "release again", do: func() error { return db.ReleaseKey(ctx, "alice", "k1") }},
			{name: "claim after release", claim: rec("fp5", hours(10)), staleBefore: hours(-1),
				wantClaimed: true, want: rec("fp5", hours(10))},
		} {
			t.Run(step.name, func(t *testing.T) {
				if step.do != nil {
					if err := step.do(); err != nil {
						t.Fatal(err)
					}
					return
				}
				got, claimed, err := db.ClaimKey(ctx, step.claim, step.staleBefore)
				if err != nil {
					t.Fatal(err)
				}
				if claimed != step.wantClaimed {
					t.Errorf("claimed = %t, want %t", claimed, step.wantClaimed)
				}
				if diff := cmp.Diff(step.want, got); diff != "" {
					t.Errorf("ClaimKey (-want +got):\n%s", diff)
				}
			})
		}

		err := db.CompleteKey(ctx, "bob", "nope", 200, nil)
		wantCode(t, err, core.CodeNotFound, "")

		t.Run("concurrent claims", func(t *testing.T) {
			const n = 20
			claimed := make([]bool, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					r := core.IdempotencyRecord{User: "bob", Key: "race", Fingerprint: "fp", CreatedAt: t0}
					_, claimed[i], errs[i] = db.ClaimKey(ctx, r, hours(-1))
				})
			}
			wg.Wait()
			wins := 0
			for i := range n {
				if errs[i] != nil {
					t.Errorf("ClaimKey: %v", errs[i])
				}
				if claimed[i] {
					wins++
				}
			}
			if wins != 1 {
				t.Errorf("%d of %d concurrent claims won, want 1", wins, n)
			}
		})

		t.Run("purge", func(t *testing.T) {
			// Left: alice/k1 at hours(10), bob/race at t0.
			for _, tc := range []struct {
				before time.Time
				want   int64
			}{
				{t0, 0},
				{hours(1), 1},
				{hours(11), 1},
				{hours(11), 0},
			} {
				got, err := db.PurgeKeys(ctx, tc.before)
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Errorf("PurgeKeys(%v) = %d, want %d", tc.before, got, tc.want)
				}
			}
		})
	})
}
