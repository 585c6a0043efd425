package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpucal/gpucal/core"
)

// Message is one delivery as a channel sends it.
type Message struct {
	// Key identifies the delivery (its dedup key). A channel that can tag
	// what it sends tags it with Key, so that Retry can find it.
	Key  string
	Kind core.EventKind
	Job  int64
	Text string // the event's English sentence
	At   time.Time
	// Event is the event itself, with its fields, for wording it in the
	// recipient's language and zone.
	Event core.Event
	// Retry says an earlier attempt may have reached the recipient (its
	// sender died before it recorded the answer): check before sending.
	Retry bool
}

// Channel sends messages to people over one platform.
type Channel interface {
	// Send delivers m to user and returns the provider's ID of the message.
	// When m.Retry is set and an earlier attempt arrived, it returns that
	// message's ID without sending again.
	Send(ctx context.Context, user string, m Message) (string, error)
}

// RetryAfterError is a refusal that says when to try again (HTTP 429 with
// Retry-After, Discord's retry_after).
type RetryAfterError struct {
	Wait time.Duration
	Err  error
}

func (e *RetryAfterError) Error() string { return fmt.Sprintf("retry after %s: %v", e.Wait, e.Err) }
func (e *RetryAfterError) Unwrap() error { return e.Err }

// PermanentError is a failure that retrying cannot fix (the person blocked
// the bot, the account is gone): the delivery is given up at once.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Config is how a Dispatcher sends.
type Config struct {
	Channels map[string]Channel // by channel name: "slack", "discord", …
	// Groups are team chats (robots, webhooks) by name; each gets every
	// event meant for all admins.
	Groups map[string]Channel
	// Every is how often the outbox is looked at when nothing kicks it.
	Every time.Duration
	// Lease is how long a claimed delivery is the claimant's; one still
	// unsettled then is claimed again (with Retry set).
	Lease time.Duration
	// MaxAttempts is how many times a delivery is tried before it is dead.
	MaxAttempts int
	// Backoff is the wait before attempt n+1 after n failures, before
	// jitter: 30 s × 2^(n−1), at most an hour, by default.
	Backoff func(n int) time.Duration
	// Pace is the least time between two messages to one person over one
	// channel (Slack allows about one message a second per channel).
	Pace    map[string]time.Duration
	Batch   int
	Logger  *slog.Logger
	Metrics prometheus.Registerer // nil: no metrics
}

// Dispatcher runs the outbox.
type Dispatcher struct {
	svc  *core.Service
	cfg  Config
	log  *slog.Logger
	kick chan struct{}
	sent *prometheus.CounterVec

	mu   sync.Mutex
	last map[string]time.Time // channel/user → when the last message went
}

// New returns a Dispatcher over svc's outbox.
func New(svc *core.Service, cfg Config) *Dispatcher {
	if cfg.Every <= 0 {
		cfg.Every = 5 * time.Second
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 2 * time.Minute
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 8
	}
	if cfg.Backoff == nil {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.Batch <= 0 {
		// Small enough that a paced batch is sent well inside its lease.
		cfg.Batch = 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	d := &Dispatcher{svc: svc, cfg: cfg, log: cfg.Logger, kick: make(chan struct{}, 1), last: map[string]time.Time{}}
	d.sent = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "gpucal", Name: "notifications_total",
		Help: "Notification attempts by channel and result: sent, retry (failed, will be tried again), dead (given up).",
	}, []string{"channel", "result"})
	if cfg.Metrics != nil {
		cfg.Metrics.MustRegister(d.sent)
	}
	return d
}

// DefaultBackoff waits 30 s after the first failure, doubling up to an hour.
func DefaultBackoff(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	if n > 8 {
		return time.Hour
	}
	return min(30*time.Second<<(n-1), time.Hour)
}

// Channels lists the channel names the dispatcher can send on, sorted.
func (d *Dispatcher) Channels() []string { return sortedKeys(d.cfg.Channels) }

// Groups lists the group channels' names, sorted.
func (d *Dispatcher) Groups() []string { return sortedKeys(d.cfg.Groups) }

func sortedKeys(m map[string]Channel) []string {
	out := make([]string, 0, len(m))
	for name := range m {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Kick makes Run look at the outbox now (after a change wrote events).
func (d *Dispatcher) Kick() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends.
func (d *Dispatcher) Run(ctx context.Context) error {
	t := time.NewTicker(d.cfg.Every)
	defer t.Stop()
	for {
		if _, err := d.Once(ctx); err != nil && ctx.Err() == nil {
			d.log.Warn("delivering notifications", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-d.kick:
		}
	}
}

// Once fans out the new events and sends what is due, and returns how
// many deliveries it settled (sent, put back or given up).
func (d *Dispatcher) Once(ctx context.Context) (int, error) {
	if _, err := d.svc.FanOut(ctx, d.Channels(), d.Groups()); err != nil {
		return 0, fmt.Errorf("fanning out events: %w", err)
	}
	settled := 0
	for {
		ds, err := d.svc.ClaimDeliveries(ctx, append(d.Channels(), d.Groups()...), d.cfg.Lease, d.cfg.Batch)
		if err != nil {
			return settled, fmt.Errorf("claiming deliveries: %w", err)
		}
		for _, dl := range ds {
			if err := d.deliver(ctx, dl); err != nil {
				return settled, err
			}
			settled++
		}
		if len(ds) < d.cfg.Batch {
			return settled, nil
		}
	}
}

// deliver sends one claimed delivery and records the outcome. It returns
// an error only when the outcome could not be recorded (or ctx ended): the
// lease then runs out and the delivery is claimed again.
func (d *Dispatcher) deliver(ctx context.Context, dl core.Delivery) error {
	ch, ok := d.cfg.Channels[dl.Channel]
	if !ok {
		ch, ok = d.cfg.Groups[dl.Channel]
	}
	if !ok {
		return d.failed(ctx, dl, &PermanentError{fmt.Errorf("no %s channel is configured", dl.Channel)})
	}
	if err := d.pace(ctx, dl.Channel, dl.User); err != nil {
		return err
	}
	// A send may take a third of the lease: one that hangs must not let
	// the lease run out under it.
	sendCtx, cancel := context.WithTimeout(ctx, d.cfg.Lease/3)
	id, err := ch.Send(sendCtx, dl.User, Message{
		Key: dl.DedupKey, Kind: dl.Event.Kind, Job: dl.Event.Job, Text: dl.Event.Detail, At: dl.Event.At, Event: dl.Event, Retry: dl.Attempts > 1,
	})
	cancel()
	if ctx.Err() != nil {
		return ctx.Err() // the outcome is unknown: the lease decides
	}
	if err != nil {
		return d.failed(ctx, dl, err)
	}
	d.sent.WithLabelValues(dl.Channel, "sent").Inc()
	if err := d.svc.DeliverySent(ctx, dl, id); core.ErrorCode(err) == core.CodeConflict {
		d.log.Warn("a delivery was claimed by another sender while this one sent it", "delivery", dl.ID)
	} else if err != nil {
		return fmt.Errorf("recording delivery %d as sent: %w", dl.ID, err)
	}
	return nil
}

// failed records a failed attempt: due again after the backoff (or what
// the provider asked for), or dead.
func (d *Dispatcher) failed(ctx context.Context, dl core.Delivery, err error) error {
	var perm *PermanentError
	dead := errors.As(err, &perm) || dl.Attempts >= d.cfg.MaxAttempts
	wait := jitter(d.cfg.Backoff(dl.Attempts))
	var ra *RetryAfterError
	if errors.As(err, &ra) && ra.Wait > 0 {
		wait = ra.Wait
	}
	result := "retry"
	if dead {
		result = "dead"
		d.log.Error("gave up a notification", "user", dl.User, "channel", dl.Channel, "event", dl.Event.ID, "attempts", dl.Attempts, "err", err)
	} else {
		d.log.Warn("a notification failed; trying again", "user", dl.User, "channel", dl.Channel, "in", wait, "err", err)
	}
	d.sent.WithLabelValues(dl.Channel, result).Inc()
	if err := d.svc.DeliveryFailed(ctx, dl, err.Error(), d.svc.Now().Add(wait), dead); core.ErrorCode(err) == core.CodeConflict {
		d.log.Warn("a delivery was claimed by another sender while this one tried it", "delivery", dl.ID)
	} else if err != nil {
		return fmt.Errorf("recording delivery %d as failed: %w", dl.ID, err)
	}
	return nil
}

// pace waits until the last message to user over channel is at least the
// channel's pace ago.
func (d *Dispatcher) pace(ctx context.Context, channel, user string) error {
	key := channel + "/" + user
	d.mu.Lock()
	wait := time.Until(d.last[key].Add(d.cfg.Pace[channel]))
	d.last[key] = time.Now().Add(max(wait, 0))
	if len(d.last) > 10000 {
		clear(d.last)
	}
	d.mu.Unlock()
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// jitter spreads a wait by ±20 %, so that failures do not retry in step.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}
