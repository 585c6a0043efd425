package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/store/storetest"
)

func TestWebSessions(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		link := core.WebSession{Hash: "h-link", Kind: core.SignInLink, User: "alice", CreatedAt: t0, ExpiresAt: t0.Add(15 * time.Minute)}
		sess := core.WebSession{Hash: "h-sess", Kind: core.BrowserSession, User: "alice", CreatedAt: t0, ExpiresAt: t0.Add(48 * time.Hour)}
		update(t, f.db, func(tx core.Tx) error {
			if err := tx.InsertWebSession(ctx, link); err != nil {
				return err
			}
			return tx.InsertWebSession(ctx, sess)
		})
		err := f.db.Update(ctx, func(tx core.Tx) error { return tx.InsertWebSession(ctx, link) })
		wantCode(t, err, core.CodeConflict, "")
		orphan := core.WebSession{Hash: "h-zed", Kind: core.BrowserSession, User: "zed", CreatedAt: t0, ExpiresAt: t0}
		err = f.db.Update(ctx, func(tx core.Tx) error { return tx.InsertWebSession(ctx, orphan) })
		wantCode(t, err, core.CodeNotFound, "user zed not found")

		var got core.WebSession
		view(t, f.db, func(tx core.Tx) (err error) { got, err = tx.WebSession(ctx, "h-link"); return err })
		if diff := cmp.Diff(link, got); diff != "" {
			t.Errorf("WebSession (-want +got):\n%s", diff)
		}

		// A link is used once: the second use reports false.
		for i, want := range []bool{true, false} {
			var used bool
			update(t, f.db, func(tx core.Tx) (err error) {
				used, err = tx.UseWebSession(ctx, "h-link", t0.Add(time.Minute))
				return err
			})
			if used != want {
				t.Errorf("use %d: got %t, want %t", i+1, used, want)
			}
		}
		view(t, f.db, func(tx core.Tx) (err error) { got, err = tx.WebSession(ctx, "h-link"); return err })
		if want := t0.Add(time.Minute); !got.UsedAt.Equal(want) {
			t.Errorf("UsedAt = %v, want %v", got.UsedAt, want)
		}

		// Pruning takes what expired before the cut, and only that.
		var n int64
		update(t, f.db, func(tx core.Tx) (err error) { n, err = tx.PruneWebSessions(ctx, t0.Add(time.Hour)); return err })
		if n != 1 {
			t.Errorf("pruned %d, want 1 (the link)", n)
		}
		err = f.db.View(ctx, func(tx core.Tx) error { _, err := tx.WebSession(ctx, "h-link"); return err })
		wantCode(t, err, core.CodeNotFound, "web session not found")

		update(t, f.db, func(tx core.Tx) error { return tx.DeleteWebSession(ctx, "h-sess") })
		update(t, f.db, func(tx core.Tx) error { return tx.DeleteWebSession(ctx, "h-sess") }) // twice: no error
		err = f.db.View(ctx, func(tx core.Tx) error { _, err := tx.WebSession(ctx, "h-sess"); return err })
		wantCode(t, err, core.CodeNotFound, "web session not found")
	})
}
