package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/store/storetest"
)

func TestDeliveries(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		update(t, f.db, func(tx core.Tx) error {
			return tx.InsertEvents(ctx, []core.Event{{Kind: core.EventStarted, User: "alice", At: t0, Detail: "j1 started", DedupKey: "started:j1",
				Data: map[string]string{"job": "j1", "gpus": "2"}}})
		})
		var events []core.Event
		view(t, f.db, func(tx core.Tx) (err error) { events, err = tx.Events(ctx, 0, 0); return err })
		d := core.Delivery{Event: events[0], User: "alice", Channel: "slack", DedupKey: "k1", State: core.DeliveryPending, AvailableAt: t0, CreatedAt: t0}
		later := d
		later.DedupKey, later.Channel, later.AvailableAt = "k2", "discord", hours(2)
		update(t, f.db, func(tx core.Tx) error { return tx.InsertDeliveries(ctx, []core.Delivery{d, later}) })
		update(t, f.db, func(tx core.Tx) error { return tx.InsertDeliveries(ctx, []core.Delivery{d}) }) // a repeat: skipped
		err := f.db.Update(ctx, func(tx core.Tx) error {
			orphan := d
			orphan.Event, orphan.DedupKey = core.Event{ID: 999}, "k3"
			return tx.InsertDeliveries(ctx, []core.Delivery{orphan})
		})
		wantCode(t, err, core.CodeNotFound, "an event of these deliveries not found")

		var due []core.Delivery
		update(t, f.db, func(tx core.Tx) (err error) {
			due, err = tx.DueDeliveries(ctx, hours(1), []string{"slack", "discord"}, 10)
			return err
		})
		if len(due) != 1 || due[0].DedupKey != "k1" || due[0].Event.Detail != "j1 started" || due[0].Event.Data["gpus"] != "2" {
			t.Fatalf("due at +1h: %+v; want k1 with its event", due)
		}
		// Claimed: not due again until its lease ends.
		claimed := due[0]
		claimed.State, claimed.Attempts, claimed.ClaimedUntil = core.DeliverySending, 1, hours(3)
		update(t, f.db, func(tx core.Tx) error { return tx.UpdateDelivery(ctx, claimed, 0) })
		err = f.db.Update(ctx, func(tx core.Tx) error { return tx.UpdateDelivery(ctx, claimed, 0) })
		wantCode(t, err, core.CodeConflict, "delivery 1 was claimed by another sender")
		update(t, f.db, func(tx core.Tx) (err error) {
			due, err = tx.DueDeliveries(ctx, hours(2), []string{"slack", "discord"}, 10)
			return err
		})
		if len(due) != 1 || due[0].DedupKey != "k2" {
			t.Fatalf("due at +2h: %+v; want only k2", due)
		}
		update(t, f.db, func(tx core.Tx) (err error) {
			due, err = tx.DueDeliveries(ctx, hours(3), []string{"slack", "discord"}, 10)
			return err
		})
		if len(due) != 2 || due[0].DedupKey != "k1" || due[0].State != core.DeliverySending || !due[0].ClaimedUntil.Equal(hours(3)) {
			t.Fatalf("due at +3h: %+v; want k1 (its lease ran out) and k2", due)
		}
		sent := due[0]
		sent.State, sent.ProviderID, sent.SentAt, sent.ClaimedUntil = core.DeliverySent, "D1/1.0", hours(3), time.Time{}
		update(t, f.db, func(tx core.Tx) error { return tx.UpdateDelivery(ctx, sent, 1) })
		var all []core.Delivery
		view(t, f.db, func(tx core.Tx) (err error) { all, err = tx.Deliveries(ctx, 0, 0); return err })
		if len(all) != 2 || all[0].State != core.DeliverySent || all[0].ProviderID != "D1/1.0" || !all[0].SentAt.Equal(hours(3)) || !all[0].ClaimedUntil.IsZero() {
			t.Errorf("deliveries %+v", all)
		}
		err = f.db.Update(ctx, func(tx core.Tx) error {
			return tx.UpdateDelivery(ctx, core.Delivery{ID: 42, State: core.DeliverySent}, 0)
		})
		wantCode(t, err, core.CodeNotFound, "delivery 42 not found")

		// Only the channels asked for.
		update(t, f.db, func(tx core.Tx) (err error) {
			due, err = tx.DueDeliveries(ctx, hours(3), []string{"email"}, 10)
			return err
		})
		if len(due) != 0 {
			t.Errorf("due over email: %+v", due)
		}
		// Events to fan out: the one written, until it is marked.
		var fan []core.Event
		update(t, f.db, func(tx core.Tx) (err error) { fan, err = tx.EventsToFanOut(ctx, 10); return err })
		if len(fan) != 1 || fan[0].Data["job"] != "j1" {
			t.Fatalf("events to fan out: %+v", fan)
		}
		update(t, f.db, func(tx core.Tx) error { return tx.MarkFannedOut(ctx, []int64{fan[0].ID}) })
		update(t, f.db, func(tx core.Tx) (err error) { fan, err = tx.EventsToFanOut(ctx, 10); return err })
		if len(fan) != 0 {
			t.Errorf("events to fan out after marking: %+v", fan)
		}

		// Pruning: the event is fanned out and its deliveries are sent (k1)
		// or pending (k2): it stays until k2 is settled too.
		var n int64
		update(t, f.db, func(tx core.Tx) (err error) { n, err = tx.PruneEvents(ctx, hours(100)); return err })
		if n != 0 {
			t.Errorf("pruned %d events with a pending delivery", n)
		}
		dead := all[1]
		dead.State = core.DeliveryDead
		update(t, f.db, func(tx core.Tx) error { return tx.UpdateDelivery(ctx, dead, dead.Attempts) })
		update(t, f.db, func(tx core.Tx) (err error) { n, err = tx.PruneEvents(ctx, t0); return err })
		if n != 0 {
			t.Errorf("pruned %d events written after the cut-off", n)
		}
		update(t, f.db, func(tx core.Tx) (err error) { n, err = tx.PruneEvents(ctx, hours(100)); return err })
		view(t, f.db, func(tx core.Tx) (err error) { all, err = tx.Deliveries(ctx, 0, 0); return err })
		if n != 1 || len(all) != 0 {
			t.Errorf("pruned %d events, %d deliveries left; want 1 and none", n, len(all))
		}

		// Settings: absent, stored, replaced.
		var v string
		var ok bool
		view(t, f.db, func(tx core.Tx) (err error) { v, ok, err = tx.Setting(ctx, "notify.cursor"); return err })
		if ok {
			t.Errorf("an unset setting reads %q", v)
		}
		update(t, f.db, func(tx core.Tx) error { return tx.PutSetting(ctx, "notify.cursor", "1") })
		update(t, f.db, func(tx core.Tx) error { return tx.PutSetting(ctx, "notify.cursor", "7") })
		view(t, f.db, func(tx core.Tx) (err error) { v, ok, err = tx.Setting(ctx, "notify.cursor"); return err })
		if !ok || v != "7" {
			t.Errorf("setting %q, %v; want 7", v, ok)
		}
	})
}

func TestNotifyPrefsStore(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		var p core.NotifyPrefs
		view(t, f.db, func(tx core.Tx) (err error) { p, err = tx.NotifyPrefs(ctx, "alice"); return err })
		if p.User != "alice" || p.Zone != "UTC" || len(p.Muted) != 0 || p.QuietFrom != p.QuietTo {
			t.Errorf("defaults: %+v", p)
		}
		want := core.NotifyPrefs{User: "alice", Muted: []core.EventKind{"position_changed", "starts_soon"}, QuietFrom: 1320, QuietTo: 480, Zone: "Europe/Berlin",
			Via: map[core.EventKind][]string{core.AnyEvent: {"slack"}, "finished": {"discord", "email"}}}
		update(t, f.db, func(tx core.Tx) error { return tx.SetNotifyPrefs(ctx, core.NotifyPrefs{User: "alice", Zone: "UTC"}) })
		update(t, f.db, func(tx core.Tx) error { return tx.SetNotifyPrefs(ctx, want) })
		view(t, f.db, func(tx core.Tx) (err error) { p, err = tx.NotifyPrefs(ctx, "alice"); return err })
		if diff := cmp.Diff(want, p); diff != "" {
			t.Errorf("stored (-want +got):\n%s", diff)
		}
		err := f.db.Update(ctx, func(tx core.Tx) error { return tx.SetNotifyPrefs(ctx, core.NotifyPrefs{User: "zed", Zone: "UTC"}) })
		wantCode(t, err, core.CodeNotFound, "user zed not found")
	})
}
