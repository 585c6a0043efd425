package store

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/store/storetest"
)

func TestChatIdentities(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		u1 := core.ChatIdentity{Platform: "slack", Team: "T1", ID: "U1"}
		u2 := core.ChatIdentity{Platform: "discord", Team: "G1", ID: "42"}
		alice := core.ChatUser{ChatIdentity: u1, User: "alice", Zone: "Europe/Berlin", CreatedAt: t0}
		bob := core.ChatUser{ChatIdentity: u2, User: "alice", CreatedAt: hours(1)}

		update(t, f.db, func(tx core.Tx) error { return tx.InsertChatUser(ctx, alice) })
		update(t, f.db, func(tx core.Tx) error { return tx.InsertChatUser(ctx, bob) })
		err := f.db.Update(ctx, func(tx core.Tx) error { return tx.InsertChatUser(ctx, alice) })
		wantCode(t, err, core.CodeConflict, "chat identity slack:T1/U1 is linked already")
		err = f.db.Update(ctx, func(tx core.Tx) error {
			return tx.InsertChatUser(ctx, core.ChatUser{ChatIdentity: core.ChatIdentity{Platform: "slack", Team: "T1", ID: "U9"}, User: "zed", CreatedAt: t0})
		})
		wantCode(t, err, core.CodeNotFound, "user zed not found")
		err = f.db.View(ctx, func(tx core.Tx) error {
			_, err := tx.ChatUser(ctx, core.ChatIdentity{Platform: "slack", Team: "T2", ID: "U1"})
			return err
		})
		wantCode(t, err, core.CodeNotFound, "chat identity slack:T2/U1 not found")
		err = f.db.Update(ctx, func(tx core.Tx) error { return tx.SetChatUser(ctx, u2, "zed") })
		wantCode(t, err, core.CodeNotFound, "user zed not found")
		err = f.db.Update(ctx, func(tx core.Tx) error {
			return tx.SetChatZone(ctx, core.ChatIdentity{Platform: "slack", Team: "T1", ID: "U9"}, "UTC")
		})
		wantCode(t, err, core.CodeNotFound, "chat identity slack:T1/U9 not found")

		update(t, f.db, func(tx core.Tx) error { return tx.SetChatUser(ctx, u2, "bob") })
		update(t, f.db, func(tx core.Tx) error { return tx.SetChatZone(ctx, u1, "Asia/Shanghai") })
		update(t, f.db, func(tx core.Tx) error { return tx.SetChatLang(ctx, u1, "zh") })
		var got core.ChatUser
		view(t, f.db, func(tx core.Tx) (err error) { got, err = tx.ChatUser(ctx, u1); return err })
		alice.Zone, alice.Lang = "Asia/Shanghai", "zh"
		if diff := cmp.Diff(alice, got); diff != "" {
			t.Errorf("ChatUser (-want +got):\n%s", diff)
		}
		var of []core.ChatUser
		view(t, f.db, func(tx core.Tx) (err error) { of, err = tx.ChatUsersOf(ctx, "bob"); return err })
		bob.User = "bob"
		if diff := cmp.Diff([]core.ChatUser{bob}, of); diff != "" {
			t.Errorf("ChatUsersOf(bob) (-want +got):\n%s", diff)
		}
	})
}
