package store

import (
	"context"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/gpucal/gpucal/core"
)

// InsertDeliveries implements core.Tx.
func (t *tx) InsertDeliveries(ctx context.Context, ds []core.Delivery) error {
	for chunk := range slices.Chunk(ds, eventBatch) {
		rows := make([]deliveryRow, len(chunk))
		for i, d := range chunk {
			rows[i] = deliveryRowOf(d)
		}
		if _, err := t.db.NewInsert().Model(&rows).On("CONFLICT (dedup_key) DO NOTHING").Exec(ctx); err != nil {
			if isForeignKey(err) {
				return notFound("an event of these deliveries")
			}
			return dbError("insert deliveries", err)
		}
	}
	return nil
}

func deliveryRowOf(d core.Delivery) deliveryRow {
	return deliveryRow{
		ID: d.ID, Event: d.Event.ID, User: d.User, Channel: d.Channel, DedupKey: d.DedupKey, State: string(d.State),
		Attempts: d.Attempts, AvailableAt: stamp(d.AvailableAt), ClaimedUntil: stamp(d.ClaimedUntil), LastError: d.LastError,
		ProviderID: d.ProviderID, CreatedAt: stamp(d.CreatedAt), SentAt: stamp(d.SentAt),
	}
}

// EventsToFanOut implements core.Tx.
func (t *tx) EventsToFanOut(ctx context.Context, limit int) ([]core.Event, error) {
	var rows []eventRow
	q := t.db.NewSelect().Model(&rows).Where("fanned_out = ?", false).Order("id").Limit(int64(limit))
	if t.forUpdate {
		q = q.For("UPDATE SKIP LOCKED")
	}
	if err := q.Scan(ctx); err != nil {
		return nil, dbError("events to fan out", err)
	}
	out := make([]core.Event, len(rows))
	for i, r := range rows {
		out[i] = r.event()
	}
	return out, nil
}

// MarkFannedOut implements core.Tx.
func (t *tx) MarkFannedOut(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := t.db.NewUpdate().TableExpr("events").Set("fanned_out = ?", true).Where("id IN (?)", bun.In(ids)).Exec(ctx); err != nil {
		return dbError("mark events fanned out", err)
	}
	return nil
}

// DueDeliveries implements core.Tx.
func (t *tx) DueDeliveries(ctx context.Context, now time.Time, channels []string, limit int) ([]core.Delivery, error) {
	if len(channels) == 0 {
		return nil, nil
	}
	var rows []deliveryRow
	q := t.db.NewSelect().Model(&rows).Where("channel IN (?)", bun.In(channels)).
		WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("state = 'pending' AND available_at <= ?", stamp(now)).
				WhereOr("state = 'sending' AND claimed_until <= ?", stamp(now))
		}).
		Order("available_at", "id").Limit(int64(limit))
	if t.forUpdate {
		q = q.For("UPDATE SKIP LOCKED")
	}
	if err := q.Scan(ctx); err != nil {
		return nil, dbError("due deliveries", err)
	}
	return t.withEvents(ctx, rows)
}

// Deliveries implements core.Tx.
func (t *tx) Deliveries(ctx context.Context, after int64, limit int) ([]core.Delivery, error) {
	var rows []deliveryRow
	q := t.db.NewSelect().Model(&rows).Where("id > ?", after).Order("id")
	if limit > 0 {
		q = q.Limit(int64(limit))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, dbError("deliveries", err)
	}
	return t.withEvents(ctx, rows)
}

// withEvents turns rows into deliveries with their events.
func (t *tx) withEvents(ctx context.Context, rows []deliveryRow) ([]core.Delivery, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	ids := make([]int64, 0, len(rows))
	for _, r := range rows {
		ids = append(ids, r.Event)
	}
	var events []eventRow
	if err := t.db.NewSelect().Model(&events).Where("id IN (?)", bun.In(ids)).Scan(ctx); err != nil {
		return nil, dbError("events of deliveries", err)
	}
	byID := make(map[int64]core.Event, len(events))
	for _, r := range events {
		byID[r.ID] = r.event()
	}
	out := make([]core.Delivery, len(rows))
	for i, r := range rows {
		out[i] = core.Delivery{
			ID: r.ID, Event: byID[r.Event], User: r.User, Channel: r.Channel, DedupKey: r.DedupKey, State: core.DeliveryState(r.State),
			Attempts: r.Attempts, AvailableAt: r.AvailableAt.Time(), ClaimedUntil: r.ClaimedUntil.Time(), LastError: r.LastError,
			ProviderID: r.ProviderID, CreatedAt: r.CreatedAt.Time(), SentAt: r.SentAt.Time(),
		}
	}
	return out, nil
}

// UpdateDelivery implements core.Tx.
func (t *tx) UpdateDelivery(ctx context.Context, d core.Delivery, attempts int) error {
	row := deliveryRowOf(d)
	res, err := t.db.NewUpdate().Model(&row).
		Column("state", "attempts", "available_at", "claimed_until", "last_error", "provider_id", "sent_at").
		WherePK().Where("attempts = ?", attempts).Exec(ctx)
	if err != nil {
		return dbError("update delivery", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		var exists int
		if err := t.db.NewSelect().TableExpr("deliveries").ColumnExpr("1").Where("id = ?", d.ID).Scan(ctx, &exists); err != nil {
			return notFound("delivery %d", d.ID)
		}
		return core.Errorf(core.CodeConflict, "delivery %d was claimed by another sender", d.ID)
	}
	return nil
}

// PruneEvents implements core.Tx.
func (t *tx) PruneEvents(ctx context.Context, before time.Time) (int64, error) {
	old := t.db.NewSelect().TableExpr("events AS e").Column("e.id").
		Where("e.fanned_out = ?", true).Where("e.at < ?", stamp(before)).
		Where("NOT EXISTS (SELECT 1 FROM deliveries AS d WHERE d.event_id = e.id AND d.state IN ('pending', 'sending'))")
	if _, err := t.db.NewDelete().TableExpr("deliveries").Where("event_id IN (?)", old).Exec(ctx); err != nil {
		return 0, dbError("prune deliveries", err)
	}
	res, err := t.db.NewDelete().TableExpr("events").Where("id IN (?)", old).Exec(ctx)
	if err != nil {
		return 0, dbError("prune events", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}
