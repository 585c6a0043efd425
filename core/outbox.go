package core

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// The outbox's second half (DESIGN §3, decision 5): events are fanned out
// into deliveries, one per recipient and channel, which a notifier claims,
// sends and settles. The rules live here; the sending loop and the
// channels live in package notify.

// EventNotificationFailed is the admins' alert that a delivery was given
// up after its last attempt.
const EventNotificationFailed EventKind = "notification_failed"

// DeliveryState is where a delivery is.
type DeliveryState string

// The delivery states.
const (
	DeliveryPending DeliveryState = "pending" // waiting for its time (AvailableAt)
	DeliverySending DeliveryState = "sending" // claimed by a sender until ClaimedUntil
	DeliverySent    DeliveryState = "sent"
	DeliveryDead    DeliveryState = "dead" // given up; the admins were told
)

// Delivery is one event on its way to one person over one channel.
type Delivery struct {
	ID           int64
	Event        Event // the event, as stored
	User         string
	Channel      string // "slack", "discord", …
	DedupKey     string // the event's key, the recipient and the channel
	State        DeliveryState
	Attempts     int // claims so far
	AvailableAt  time.Time
	ClaimedUntil time.Time
	LastError    string
	ProviderID   string // the provider's ID of the message once sent
	CreatedAt    time.Time
	SentAt       time.Time
}

// notifyCursor is the setting that holds the ID of the last event fanned out.
const notifyCursor = "notify.cursor"

// fanOutBatch bounds the events one FanOut handles.
const fanOutBatch = 500

// FanOut turns the events written since the last call into deliveries: to
// the event's user, or to every admin for Admins, over each channel in
// channels the recipient can be reached on (the platforms of their chat
// identities); and every Admins event once more to each group channel in
// groups (a team chat's robot), addressed to Admins. It returns how many
// deliveries it added. An event nobody can be reached for is passed over.
// Running it twice, or on two replicas, adds nothing twice.
func (s *Service) FanOut(ctx context.Context, channels, groups []string) (int, error) {
	now := s.Now()
	added := 0
	err := s.store.Update(ctx, func(tx Tx) error {
		added = 0
		v, _, err := tx.Setting(ctx, notifyCursor)
		if err != nil {
			return err
		}
		cursor, _ := strconv.ParseInt(v, 10, 64)
		events, err := tx.Events(ctx, cursor, fanOutBatch)
		if err != nil || len(events) == 0 {
			return err
		}
		var admins []string
		if users, err := tx.Users(ctx); err != nil {
			return err
		} else {
			for _, u := range users {
				if u.Admin {
					admins = append(admins, u.Name)
				}
			}
		}
		reach := map[string][]string{} // user → channels, looked up once
		var ds []Delivery
		for _, e := range events {
			to := []string{e.User}
			if e.User == Admins {
				to = admins
			}
			for _, user := range to {
				chans, ok := reach[user]
				if !ok {
					ids, err := tx.ChatUsersOf(ctx, user)
					if err != nil {
						return err
					}
					for _, id := range ids {
						if slices.Contains(channels, id.Platform) && !slices.Contains(chans, id.Platform) {
							chans = append(chans, id.Platform)
						}
					}
					reach[user] = chans
				}
				for _, ch := range chans {
					ds = append(ds, Delivery{Event: e, User: user, Channel: ch, DedupKey: e.DedupKey + "→" + user + "→" + ch,
						State: DeliveryPending, AvailableAt: now, CreatedAt: now})
				}
			}
			if e.User == Admins {
				for _, g := range groups {
					ds = append(ds, Delivery{Event: e, User: Admins, Channel: g, DedupKey: e.DedupKey + "→" + Admins + "→" + g,
						State: DeliveryPending, AvailableAt: now, CreatedAt: now})
				}
			}
			cursor = e.ID
		}
		if err := tx.InsertDeliveries(ctx, ds); err != nil {
			return err
		}
		added = len(ds)
		return tx.PutSetting(ctx, notifyCursor, strconv.FormatInt(cursor, 10))
	})
	return added, err
}

// ClaimDeliveries takes up to limit deliveries that are due, pending or
// left sending by a sender whose lease ran out, and leases them to the
// caller until now + lease. Each claim counts as an attempt.
func (s *Service) ClaimDeliveries(ctx context.Context, lease time.Duration, limit int) ([]Delivery, error) {
	now := s.Now()
	var out []Delivery
	err := s.store.Update(ctx, func(tx Tx) error {
		out = nil
		ds, err := tx.DueDeliveries(ctx, now, limit)
		if err != nil {
			return err
		}
		for _, d := range ds {
			d.State, d.Attempts, d.ClaimedUntil = DeliverySending, d.Attempts+1, now.Add(lease)
			if err := tx.UpdateDelivery(ctx, d); err != nil {
				return err
			}
			out = append(out, d)
		}
		return nil
	})
	return out, err
}

// DeliverySent records that d reached its recipient as message providerID.
func (s *Service) DeliverySent(ctx context.Context, d Delivery, providerID string) error {
	now := s.Now()
	d.State, d.ProviderID, d.SentAt, d.ClaimedUntil, d.LastError = DeliverySent, providerID, now, time.Time{}, ""
	return s.store.Update(ctx, func(tx Tx) error { return tx.UpdateDelivery(ctx, d) })
}

// DeliveryFailed records a failed attempt: d is due again at retryAt, or,
// when dead, given up, and the admins get a notification_failed event
// (unless d was itself such an alert: an alert about an alert would loop).
func (s *Service) DeliveryFailed(ctx context.Context, d Delivery, cause string, retryAt time.Time, dead bool) error {
	now := s.Now()
	d.LastError, d.ClaimedUntil = clipText(cause, 500), time.Time{}
	// Instants are whole seconds (Now's); round up so the wait is never short.
	if t := retryAt.Truncate(time.Second); t.Before(retryAt) {
		retryAt = t.Add(time.Second)
	}
	d.State, d.AvailableAt = DeliveryPending, retryAt
	if dead {
		d.State = DeliveryDead
	}
	return s.store.Update(ctx, func(tx Tx) error {
		if err := tx.UpdateDelivery(ctx, d); err != nil {
			return err
		}
		if !dead || d.Event.Kind == EventNotificationFailed {
			return nil
		}
		return tx.InsertEvents(ctx, []Event{{Kind: EventNotificationFailed, Job: d.Event.Job, User: Admins, At: now,
			Detail: fmt.Sprintf("could not tell %s about %q over %s after %d attempts: %s",
				d.User, d.Event.Detail, d.Channel, d.Attempts, d.LastError),
			Data: map[string]string{DataRecipient: d.User, DataChannel: d.Channel, DataAttempts: strconv.Itoa(d.Attempts),
				DataHow: d.LastError, DataName: d.Event.Detail},
			DedupKey: string(EventNotificationFailed) + ":" + strconv.FormatInt(d.ID, 10)}})
	})
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
