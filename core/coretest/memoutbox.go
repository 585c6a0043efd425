package coretest

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/gpucal/gpucal/core"
)

// The outbox half of memTx: settings and deliveries.

// Setting implements core.Tx.
func (tx *memTx) Setting(ctx context.Context, name string) (string, bool, error) {
	v, ok := tx.d.settings[name]
	return v, ok, nil
}

// PutSetting implements core.Tx.
func (tx *memTx) PutSetting(ctx context.Context, name, value string) error {
	if err := tx.writable(); err != nil {
		return err
	}
	if tx.d.settings == nil {
		tx.d.settings = map[string]string{}
	}
	tx.d.settings[name] = value
	return nil
}

// InsertDeliveries implements core.Tx.
func (tx *memTx) InsertDeliveries(ctx context.Context, ds []core.Delivery) error {
	if err := tx.writable(); err != nil {
		return err
	}
	for _, d := range ds {
		if slices.ContainsFunc(tx.d.deliveries, func(o core.Delivery) bool { return o.DedupKey == d.DedupKey }) {
			continue
		}
		if !slices.ContainsFunc(tx.d.events, func(e core.Event) bool { return e.ID == d.Event.ID }) {
			return core.Errorf(core.CodeNotFound, "an event of these deliveries not found")
		}
		tx.d.lastDelivery++
		d.ID = tx.d.lastDelivery
		d.Event = core.Event{ID: d.Event.ID}
		tx.d.deliveries = append(tx.d.deliveries, d)
	}
	return nil
}

// withEvent fills in a stored delivery's event.
func (tx *memTx) withEvent(d core.Delivery) core.Delivery {
	if i := slices.IndexFunc(tx.d.events, func(e core.Event) bool { return e.ID == d.Event.ID }); i >= 0 {
		d.Event = tx.d.events[i]
	}
	return d
}

// EventsToFanOut implements core.Tx.
func (tx *memTx) EventsToFanOut(ctx context.Context, limit int) ([]core.Event, error) {
	var out []core.Event
	for _, e := range tx.d.events {
		if !tx.d.fannedOut[e.ID] && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

// MarkFannedOut implements core.Tx.
func (tx *memTx) MarkFannedOut(ctx context.Context, ids []int64) error {
	if err := tx.writable(); err != nil {
		return err
	}
	if tx.d.fannedOut == nil {
		tx.d.fannedOut = map[int64]bool{}
	}
	for _, id := range ids {
		tx.d.fannedOut[id] = true
	}
	return nil
}

// DueDeliveries implements core.Tx.
func (tx *memTx) DueDeliveries(ctx context.Context, now time.Time, channels []string, limit int) ([]core.Delivery, error) {
	var out []core.Delivery
	for _, d := range tx.d.deliveries {
		if !slices.Contains(channels, d.Channel) {
			continue
		}
		if (d.State == core.DeliveryPending && !d.AvailableAt.After(now)) || (d.State == core.DeliverySending && !d.ClaimedUntil.After(now)) {
			out = append(out, tx.withEvent(d))
		}
	}
	slices.SortStableFunc(out, func(a, b core.Delivery) int {
		return cmp.Or(a.AvailableAt.Compare(b.AvailableAt), cmp.Compare(a.ID, b.ID))
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Deliveries implements core.Tx.
func (tx *memTx) Deliveries(ctx context.Context, after int64, limit int) ([]core.Delivery, error) {
	var out []core.Delivery
	for _, d := range tx.d.deliveries {
		if d.ID > after && (limit <= 0 || len(out) < limit) {
			out = append(out, tx.withEvent(d))
		}
	}
	return out, nil
}

// UpdateDelivery implements core.Tx.
func (tx *memTx) UpdateDelivery(ctx context.Context, d core.Delivery, attempts int) error {
	if err := tx.writable(); err != nil {
		return err
	}
	i := slices.IndexFunc(tx.d.deliveries, func(o core.Delivery) bool { return o.ID == d.ID })
	if i < 0 {
		return core.Errorf(core.CodeNotFound, "delivery %d not found", d.ID)
	}
	if tx.d.deliveries[i].Attempts != attempts {
		return core.Errorf(core.CodeConflict, "delivery %d was claimed by another sender", d.ID)
	}
	o := &tx.d.deliveries[i]
	o.State, o.Attempts, o.AvailableAt, o.ClaimedUntil = d.State, d.Attempts, d.AvailableAt, d.ClaimedUntil
	o.LastError, o.ProviderID, o.SentAt = d.LastError, d.ProviderID, d.SentAt
	return nil
}

// PruneEvents implements core.Tx.
func (tx *memTx) PruneEvents(ctx context.Context, before time.Time) (int64, error) {
	if err := tx.writable(); err != nil {
		return 0, err
	}
	open := map[int64]bool{}
	for _, d := range tx.d.deliveries {
		if d.State == core.DeliveryPending || d.State == core.DeliverySending {
			open[d.Event.ID] = true
		}
	}
	gone := map[int64]bool{}
	tx.d.events = slices.DeleteFunc(tx.d.events, func(e core.Event) bool {
		g := tx.d.fannedOut[e.ID] && e.At.Before(before) && !open[e.ID]
		gone[e.ID] = g
		return g
	})
	tx.d.deliveries = slices.DeleteFunc(tx.d.deliveries, func(d core.Delivery) bool { return gone[d.Event.ID] })
	var n int64
	for _, g := range gone {
		if g {
			n++
		}
	}
	return n, nil
}

// NotifyPrefs implements core.Tx.
func (tx *memTx) NotifyPrefs(ctx context.Context, user string) (core.NotifyPrefs, error) {
	if p, ok := tx.d.prefs[user]; ok {
		return clonePrefs(p), nil
	}
	return core.NotifyPrefs{User: user, Zone: "UTC"}, nil
}

// SetNotifyPrefs implements core.Tx.
func (tx *memTx) SetNotifyPrefs(ctx context.Context, p core.NotifyPrefs) error {
	if err := tx.writable(); err != nil {
		return err
	}
	if _, ok := tx.d.users[p.User]; !ok {
		return core.Errorf(core.CodeNotFound, "user %s not found", p.User)
	}
	if tx.d.prefs == nil {
		tx.d.prefs = map[string]core.NotifyPrefs{}
	}
	tx.d.prefs[p.User] = clonePrefs(p)
	return nil
}

// clonePrefs copies p deeply: what a transaction stores or returns
// must not alias what the caller keeps.
func clonePrefs(p core.NotifyPrefs) core.NotifyPrefs {
	p.Muted = slices.Clone(p.Muted)
	if p.Via != nil {
		via := make(map[core.EventKind][]string, len(p.Via))
		for k, v := range p.Via {
			via[k] = slices.Clone(v)
		}
		p.Via = via
	}
	return p
}

// ClaimLease implements core.Tx.
func (tx *memTx) ClaimLease(ctx context.Context, name, holder string, now, until time.Time) (core.Lease, error) {
	if err := tx.writable(); err != nil {
		return core.Lease{}, err
	}
	if tx.d.leases == nil {
		tx.d.leases = map[string]core.Lease{}
	}
	l, ok := tx.d.leases[name]
	switch {
	case !ok:
		l = core.Lease{Name: name, Holder: holder, Term: 1, Expires: until}
	case l.Holder == holder:
		l.Expires = until
	case !now.Before(l.Expires):
		l = core.Lease{Name: name, Holder: holder, Term: l.Term + 1, Expires: until}
	}
	tx.d.leases[name] = l
	return l, nil
}

// ReleaseLease implements core.Tx.
func (tx *memTx) ReleaseLease(ctx context.Context, name, holder string, now time.Time) error {
	if err := tx.writable(); err != nil {
		return err
	}
	if l, ok := tx.d.leases[name]; ok && l.Holder == holder && now.Before(l.Expires) {
		l.Expires = now
		tx.d.leases[name] = l
	}
	return nil
}
