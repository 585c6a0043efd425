package core

import (
	"context"
	"fmt"
	"maps"
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

// ChannelEmail is the channel of notices by email, to users with an address.
const ChannelEmail = "email"

// fanOutBatch bounds the events one FanOut handles.
const fanOutBatch = 500

// MaxEventAge is how old an event may be and still be told: one written
// while no chat app was configured, or a backlog after an outage, is old
// news by then and is passed over rather than sent in a flood.
const MaxEventAge = time.Hour

// FanOut turns the events written since the last call into deliveries: to
// the event's user, or to every admin for Admins, over each channel in
// channels the recipient can be reached on (the platforms of their chat
// identities) and they chose for the kind (NotifyPrefs.Via), leaving out
// the kinds they muted and holding back until the end of their quiet
// hours; and every Admins event once more to each group channel in groups
// (a team chat's robot), addressed to Admins. It returns how many
// deliveries it added. An event nobody can be reached for is passed over.
// A failed job's notice waits up to LogWait for the rest of its log.
// Running it twice, or on two replicas, adds nothing twice.
func (s *Service) FanOut(ctx context.Context, channels, groups []string) (int, error) {
	now := s.Now()
	added := 0
	err := s.store.Update(ctx, func(tx Tx) error {
		added = 0
		events, err := tx.EventsToFanOut(ctx, fanOutBatch)
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
		prefs := map[string]NotifyPrefs{}
		var ds []Delivery
		ids := make([]int64, 0, len(events))
		for _, e := range events {
			if failureNotice(e) && now.Sub(e.At) < LogWait {
				if done, err := logComplete(ctx, tx, e.Job); err != nil {
					return err
				} else if !done {
					continue // its log's last lines are on their way: next round
				}
			}
			ids = append(ids, e.ID)
			if now.Sub(e.At) > MaxEventAge {
				continue
			}
			to := []string{e.User}
			if e.User == Admins {
				to = admins
			}
			for _, user := range to {
				p, ok := prefs[user]
				if !ok {
					if p, err = tx.NotifyPrefs(ctx, user); err != nil {
						return err
					}
					prefs[user] = p
				}
				if slices.Contains(p.Muted, e.Kind) {
					continue
				}
				due := now
				if quiet, end := p.Quiet(now); quiet {
					due = end
				}
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
					if slices.Contains(channels, ChannelEmail) {
						if u, err := tx.User(ctx, user); err == nil && u.Email != "" {
							chans = append(chans, ChannelEmail)
						} else if err != nil && ErrorCode(err) != CodeNotFound {
							return err
						}
					}
					reach[user] = chans
				}
				for _, ch := range p.channels(e.Kind, chans) {
					ds = append(ds, Delivery{Event: e, User: user, Channel: ch, DedupKey: e.DedupKey + "→" + user + "→" + ch,
						State: DeliveryPending, AvailableAt: due, CreatedAt: now})
				}
			}
			if e.User == Admins {
				for _, g := range groups {
					ds = append(ds, Delivery{Event: e, User: Admins, Channel: g, DedupKey: e.DedupKey + "→" + Admins + "→" + g,
						State: DeliveryPending, AvailableAt: now, CreatedAt: now})
				}
			}
		}
		if err := tx.InsertDeliveries(ctx, ds); err != nil {
			return err
		}
		added = len(ds)
		return tx.MarkFannedOut(ctx, ids)
	})
	return added, err
}

// ClaimDeliveries takes up to limit deliveries that are due, pending or
// left sending by a sender whose lease ran out, over the given channels,
// and leases them to the caller until now + lease. Each claim counts as an
// attempt. A failed job's notice comes with the last lines of its log in
// Data[DataLogTail].
func (s *Service) ClaimDeliveries(ctx context.Context, channels []string, lease time.Duration, limit int) ([]Delivery, error) {
	now := s.Now()
	var out []Delivery
	err := s.store.Update(ctx, func(tx Tx) error {
		out = nil
		ds, err := tx.DueDeliveries(ctx, now, channels, limit)
		if err != nil {
			return err
		}
		for _, d := range ds {
			was := d.Attempts
			d.State, d.Attempts, d.ClaimedUntil = DeliverySending, d.Attempts+1, now.Add(lease)
			if err := tx.UpdateDelivery(ctx, d, was); err != nil {
				return err
			}
			if failureNotice(d.Event) {
				tail, err := logTail(ctx, tx, d.Event.Job)
				if err != nil && ErrorCode(err) != CodeNotFound {
					return err
				}
				if tail != "" {
					d.Event.Data = maps.Clone(d.Event.Data)
					d.Event.Data[DataLogTail] = tail
				}
			}
			out = append(out, d)
		}
		return nil
	})
	return out, err
}

// DeliverySent records that d, as claimed, reached its recipient as
// message providerID. When another sender claimed d since (its lease ran
// out), it records nothing and returns a CodeConflict error.
func (s *Service) DeliverySent(ctx context.Context, d Delivery, providerID string) error {
	now := s.Now()
	d.State, d.ProviderID, d.SentAt, d.ClaimedUntil, d.LastError = DeliverySent, providerID, now, time.Time{}, ""
	return s.store.Update(ctx, func(tx Tx) error { return tx.UpdateDelivery(ctx, d, d.Attempts) })
}

// DeliveryFailed records a failed attempt: d is due again at retryAt, or,
// when dead, given up (CodeConflict when another sender claimed it since),
// and the admins get a notification_failed event
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
		if err := tx.UpdateDelivery(ctx, d, d.Attempts); err != nil {
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

// ClaimOnce records value under name unless it is there already, and
// reports whether this call recorded it: a scheduled task (the weekly
// digest) runs once per period however often it is started, by the leader
// replica or, across a failover, by the next one.
func (s *Service) ClaimOnce(ctx context.Context, name, value string) (bool, error) {
	claimed := false
	err := s.store.Update(ctx, func(tx Tx) error {
		v, ok, err := tx.Setting(ctx, name)
		if err != nil || (ok && v == value) {
			claimed = false
			return err
		}
		claimed = true
		return tx.PutSetting(ctx, name, value)
	})
	return claimed, err
}
