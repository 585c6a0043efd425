package notify_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
	"github.com/gpucal/gpucal/notify"
)

// fakeChannel records what it sends. fail, when set, decides the outcome
// of each call before anything is sent.
type fakeChannel struct {
	mu    sync.Mutex
	inbox map[string][]notify.Message // by user
	calls []notify.Message
	fail  func(call int, m notify.Message) error
	block chan struct{} // when set, Send delivers, then waits for ctx to end
}

func (c *fakeChannel) Send(ctx context.Context, user string, m notify.Message) (string, error) {
	c.mu.Lock()
	c.calls = append(c.calls, m)
	n := len(c.calls)
	if c.inbox == nil {
		c.inbox = map[string][]notify.Message{}
	}
	if m.Retry {
		for i, old := range c.inbox[user] {
			if old.Key == m.Key {
				c.mu.Unlock()
				return fmt.Sprintf("%s-%d", user, i), nil
			}
		}
	}
	if c.fail != nil {
		if err := c.fail(n, m); err != nil {
			c.mu.Unlock()
			return "", err
		}
	}
	c.inbox[user] = append(c.inbox[user], m)
	id := fmt.Sprintf("%s-%d", user, len(c.inbox[user])-1)
	block := c.block
	c.mu.Unlock()
	if block != nil {
		close(block)
		<-ctx.Done()
		return "", ctx.Err()
	}
	return id, nil
}

func (c *fakeChannel) received(user string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.inbox[user] {
		out = append(out, m.Text)
	}
	return out
}

type fixture struct {
	env     *coretest.Env
	slack   *fakeChannel
	discord *fakeChannel
}

// newFixture has alice on Slack and Discord, bob on Slack, the admin root
// on Slack, and carol on no chat at all.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{env: coretest.NewEnv(), slack: &fakeChannel{}, discord: &fakeChannel{}}
	f.env.AddUsers(t, "alice", "bob", "carol")
	f.env.AddAdmin(t, "root")
	for _, l := range []struct{ user, platform, id string }{
		{"alice", "slack", "U1"}, {"alice", "discord", "D1"}, {"bob", "slack", "U2"}, {"root", "slack", "U9"},
	} {
		if _, err := f.env.Service.LinkChat(ctx, core.System, core.ChatIdentity{Platform: l.platform, Team: "T1", ID: l.id}, l.user); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f *fixture) dispatcher(cfg notify.Config) *notify.Dispatcher {
	if cfg.Channels == nil {
		cfg.Channels = map[string]notify.Channel{"slack": f.slack, "discord": f.discord}
	}
	return notify.New(f.env.Service, cfg)
}

func (f *fixture) emit(t *testing.T, es ...core.Event) {
	t.Helper()
	err := f.env.Store.Update(context.Background(), func(tx core.Tx) error { return tx.InsertEvents(context.Background(), es) })
	if err != nil {
		t.Fatal(err)
	}
}

func event(kind core.EventKind, user, key, detail string) core.Event {
	return core.Event{Kind: kind, User: user, At: coretest.Epoch, Detail: detail, DedupKey: key}
}

func (f *fixture) deliveries(t *testing.T) []core.Delivery {
	t.Helper()
	var ds []core.Delivery
	err := f.env.Store.View(context.Background(), func(tx core.Tx) (err error) { ds, err = tx.Deliveries(context.Background(), 0, 0); return err })
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func once(t *testing.T, d *notify.Dispatcher) int {
	t.Helper()
	n, err := d.Once(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestFanOutOncePerChannel(t *testing.T) {
	f := newFixture(t)
	d := f.dispatcher(notify.Config{})
	f.emit(t,
		event(core.EventStartMovedLater, "alice", "slip:j1", "j1 should now start at 11:30"),
		event(core.EventStarted, "carol", "started:j2", "j2 started"),
		event(core.EventNodeDown, core.Admins, "down:node-1", "node-1 is down"),
	)
	if n := once(t, d); n != 3 {
		t.Errorf("settled %d deliveries, want 3 (alice on Slack and Discord, root on Slack; carol has no chat)", n)
	}
	// The same events again (a retried replan), and another pass: nothing new.
	f.emit(t, event(core.EventStartMovedLater, "alice", "slip:j1", "j1 should now start at 11:30"))
	if n := once(t, d); n != 0 {
		t.Errorf("a second pass settled %d", n)
	}
	if got := f.slack.received("alice"); !slices.Equal(got, []string{"j1 should now start at 11:30"}) {
		t.Errorf("alice on Slack got %q", got)
	}
	if got := f.discord.received("alice"); len(got) != 1 {
		t.Errorf("alice on Discord got %q", got)
	}
	if got := f.slack.received("root"); !slices.Equal(got, []string{"node-1 is down"}) {
		t.Errorf("root got %q", got)
	}
	for _, dl := range f.deliveries(t) {
		if dl.State != core.DeliverySent || dl.ProviderID == "" || dl.Attempts != 1 {
			t.Errorf("delivery %+v; want sent once with a provider ID", dl)
		}
	}
}

// TestGroups: a group channel gets each admins' event once, addressed to
// all admins, and nothing meant for one person.
func TestGroups(t *testing.T) {
	f := newFixture(t)
	ops := &fakeChannel{}
	d := notify.New(f.env.Service, notify.Config{Channels: map[string]notify.Channel{"slack": f.slack}, Groups: map[string]notify.Channel{"ops-wecom": ops}})
	f.emit(t, event(core.EventNodeDown, core.Admins, "down:node-1", "node-1 is down"), event(core.EventStarted, "bob", "started:j9", "j9 started"))
	once(t, d)
	once(t, d)
	if got := ops.received(core.Admins); !slices.Equal(got, []string{"node-1 is down"}) {
		t.Errorf("the group got %q; want the node_down once", got)
	}
	if got := f.slack.received("root"); !slices.Equal(got, []string{"node-1 is down"}) {
		t.Errorf("the admin got %q", got)
	}
}

// TestEmailChannel: a person with an email address gets notices by email
// too; one without does not.
func TestEmailChannel(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if err := f.env.Service.SetEmail(ctx, core.System, "carol", "carol@example.org"); err != nil {
		t.Fatal(err)
	}
	mail := &fakeChannel{}
	d := notify.New(f.env.Service, notify.Config{Channels: map[string]notify.Channel{"slack": f.slack, core.ChannelEmail: mail}})
	f.emit(t, event(core.EventStarted, "carol", "started:j1", "j1 started"), event(core.EventStarted, "bob", "started:j2", "j2 started"))
	once(t, d)
	if got := mail.received("carol"); !slices.Equal(got, []string{"j1 started"}) {
		t.Errorf("carol's email: %q", got)
	}
	if got := mail.received("bob"); len(got) != 0 {
		t.Errorf("bob, with no address, was mailed %q", got)
	}
}

// TestMutedAndQuiet: a muted kind is not sent; a notice in quiet hours
// waits for their end.
func TestMutedAndQuiet(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// Epoch is 09:00 UTC: quiet 08:00–10:00 UTC for bob.
	if _, err := f.env.Service.SetNotifyPrefs(ctx, core.System, core.NotifyPrefs{User: "bob",
		Muted: []core.EventKind{core.EventPositionChanged}, QuietFrom: 8 * 60, QuietTo: 10 * 60, Zone: "UTC"}); err != nil {
		t.Fatal(err)
	}
	d := f.dispatcher(notify.Config{Channels: map[string]notify.Channel{"slack": f.slack}})
	f.emit(t, event(core.EventPositionChanged, "bob", "moved:j1", "j1 moved"), event(core.EventStarted, "bob", "started:j1", "j1 started"))
	once(t, d)
	if got := f.slack.received("bob"); len(got) != 0 {
		t.Errorf("bob got %q in his quiet hours", got)
	}
	f.env.Clock.Advance(time.Hour)
	once(t, d)
	if got := f.slack.received("bob"); !slices.Equal(got, []string{"j1 started"}) {
		t.Errorf("bob got %q after his quiet hours; want only j1 started (position changes muted)", got)
	}
}

// TestChannelChoice: a person's choice of channel per kind decides where
// each notice goes; a choice that cannot reach them (no email address)
// falls back to every channel that can.
func TestChannelChoice(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	mail := &fakeChannel{}
	if err := f.env.Service.SetEmail(ctx, core.System, "alice", "alice@example.org"); err != nil {
		t.Fatal(err)
	}
	for user, via := range map[string]string{"alice": "discord;finished=email", "bob": "email"} {
		choice, err := core.ParseVia(nil, via)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.env.Service.SetNotifyPrefs(ctx, core.System, core.NotifyPrefs{User: user, Zone: "UTC", Via: choice}); err != nil {
			t.Fatal(err)
		}
	}
	d := f.dispatcher(notify.Config{Channels: map[string]notify.Channel{"slack": f.slack, "discord": f.discord, core.ChannelEmail: mail}})
	f.emit(t, event(core.EventStarted, "alice", "started:j1", "j1 started"), event(core.EventFinished, "alice", "finished:j1", "j1 finished"),
		event(core.EventStarted, "bob", "started:j2", "j2 started"))
	once(t, d)
	for _, c := range []struct {
		ch   *fakeChannel
		user string
		want []string
	}{
		{f.discord, "alice", []string{"j1 started"}},
		{mail, "alice", []string{"j1 finished"}},
		{f.slack, "alice", nil},
		{f.slack, "bob", []string{"j2 started"}}, // he chose email but has no address
	} {
		if got := c.ch.received(c.user); !slices.Equal(got, c.want) {
			t.Errorf("%s got %q; want %q", c.user, got, c.want)
		}
	}
	if _, err := f.env.Service.SetNotifyPrefs(ctx, core.System, core.NotifyPrefs{User: "bob", Zone: "UTC",
		Via: map[core.EventKind][]string{"finished": {"pager"}}}); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("an unknown channel: %v", err)
	}
}

// TestPruneSettled: a month later, events whose deliveries were all
// settled are pruned with them; one still being retried stays.
func TestPruneSettled(t *testing.T) {
	f := newFixture(t)
	f.slack.fail = func(call int, m notify.Message) error {
		if m.Key == "started:j2→bob→slack" {
			return errors.New("timeout")
		}
		return nil
	}
	d := f.dispatcher(notify.Config{Channels: map[string]notify.Channel{"slack": f.slack}, MaxAttempts: 100})
	f.emit(t, event(core.EventStarted, "bob", "started:j1", "j1 started"), event(core.EventStarted, "bob", "started:j2", "j2 started"))
	once(t, d)
	f.env.Clock.Advance(core.EventRetention + time.Hour)
	res, err := f.env.Service.Prune(context.Background())
	if err != nil || res.Events != 1 {
		t.Fatalf("Prune: %+v, %v; want the settled event gone", res, err)
	}
	if ds := f.deliveries(t); len(ds) != 1 || ds[0].DedupKey != "started:j2→bob→slack" {
		t.Errorf("deliveries left %+v; want only the one still pending", ds)
	}
}

// TestOldEventsPassedOver: an event older than MaxEventAge when the
// notifier first sees it (written while no chat app was configured) is
// old news: nobody is told.
func TestOldEventsPassedOver(t *testing.T) {
	f := newFixture(t)
	d := f.dispatcher(notify.Config{})
	f.emit(t, event(core.EventStarted, "bob", "started:j1", "j1 started"))
	f.env.Clock.Advance(core.MaxEventAge + time.Minute)
	f.emit(t, core.Event{Kind: core.EventStarted, User: "bob", At: f.env.Clock.Now(), Detail: "j2 started", DedupKey: "started:j2"})
	once(t, d)
	if got := f.slack.received("bob"); !slices.Equal(got, []string{"j2 started"}) {
		t.Errorf("bob got %q; want only the fresh event", got)
	}
}

func TestBackoffAndRetryAfter(t *testing.T) {
	f := newFixture(t)
	f.slack.fail = func(call int, m notify.Message) error {
		switch call {
		case 1:
			return errors.New("connection reset")
		case 2:
			return &notify.RetryAfterError{Wait: 7 * time.Second, Err: errors.New("429")}
		}
		return nil
	}
	d := f.dispatcher(notify.Config{Channels: map[string]notify.Channel{"slack": f.slack}})
	f.emit(t, event(core.EventStarted, "bob", "started:j3", "j3 started"))
	start := f.env.Clock.Now()

	once(t, d)
	dl := f.deliveries(t)[0]
	if wait := dl.AvailableAt.Sub(start); dl.State != core.DeliveryPending || wait < 24*time.Second || wait > 36*time.Second || dl.LastError != "connection reset" {
		t.Fatalf("after a failure: %+v (due in %v); want pending, due in 30 s ± 20 %%", dl, wait)
	}
	if once(t, d) != 0 {
		t.Error("a delivery was retried before its time")
	}
	f.env.Clock.Set(dl.AvailableAt)
	once(t, d)
	dl = f.deliveries(t)[0]
	if wait := dl.AvailableAt.Sub(f.env.Clock.Now()); dl.State != core.DeliveryPending || wait != 7*time.Second {
		t.Fatalf("after a 429: %+v (due in %v); want Retry-After's 7 s exactly", dl, wait)
	}
	f.env.Clock.Advance(7 * time.Second)
	once(t, d)
	if dl = f.deliveries(t)[0]; dl.State != core.DeliverySent || dl.Attempts != 3 {
		t.Errorf("after the third attempt: %+v", dl)
	}
	if got := f.slack.received("bob"); len(got) != 1 {
		t.Errorf("bob got %q, want one message", got)
	}
}

func TestDeadLetterTellsAdmins(t *testing.T) {
	f := newFixture(t)
	f.slack.fail = func(call int, m notify.Message) error {
		if m.Kind == core.EventNotificationFailed {
			return nil
		}
		return errors.New("channel_not_found")
	}
	d := f.dispatcher(notify.Config{Channels: map[string]notify.Channel{"slack": f.slack}, MaxAttempts: 3})
	f.emit(t, event(core.EventFinished, "bob", "finished:j4", "j4 finished"))
	for i := range 3 {
		if i > 0 {
			f.env.Clock.Advance(time.Hour) // past the backoff
		}
		once(t, d)
	}
	once(t, d) // the admins' alert goes out
	ds := f.deliveries(t)
	if len(ds) != 2 || ds[0].State != core.DeliveryDead || ds[0].Attempts != 3 {
		t.Fatalf("deliveries %+v; want bob's dead after 3 attempts, then the alert", ds)
	}
	got := f.slack.received("root")
	if len(got) != 1 || !strings.Contains(got[0], `could not tell bob about "j4 finished" over slack after 3 attempts: channel_not_found`) {
		t.Errorf("root got %q", got)
	}
	// A permanent error is given up at once.
	f.emit(t, core.Event{Kind: core.EventFinished, User: "bob", At: f.env.Clock.Now(), Detail: "j5 finished", DedupKey: "finished:j5"})
	f.slack.fail = func(int, notify.Message) error {
		return &notify.PermanentError{Err: errors.New("user blocked the app")}
	}
	once(t, d)
	if ds := f.deliveries(t); ds[len(ds)-1].State != core.DeliveryDead || ds[len(ds)-1].Attempts != 1 {
		t.Errorf("after a permanent error: %+v", ds[len(ds)-1])
	}
}

// TestCrashMidSend: the dispatcher dies after the provider took a message
// and before it recorded that. The next dispatcher claims the delivery
// once its lease ran out and asks the channel to check: one message, not
// two, and none lost.
func TestCrashMidSend(t *testing.T) {
	f := newFixture(t)
	sent := make(chan struct{})
	f.slack.block = sent
	d1 := f.dispatcher(notify.Config{Channels: map[string]notify.Channel{"slack": f.slack}, Lease: time.Minute})
	f.emit(t, event(core.EventStarted, "bob", "started:j6", "j6 started"))
	ctx, crash := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := d1.Once(ctx); done <- err }()
	<-sent
	crash()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the crashed pass returned %v", err)
	}
	if dl := f.deliveries(t)[0]; dl.State != core.DeliverySending {
		t.Fatalf("after the crash: %+v; want it still sending", dl)
	}
	f.slack.block = nil
	d2 := f.dispatcher(notify.Config{Channels: map[string]notify.Channel{"slack": f.slack}, Lease: time.Minute})
	if once(t, d2) != 0 {
		t.Error("a delivery was claimed again inside its lease")
	}
	f.env.Clock.Advance(time.Minute)
	once(t, d2)
	if dl := f.deliveries(t)[0]; dl.State != core.DeliverySent || dl.ProviderID != "bob-0" || dl.Attempts != 2 {
		t.Errorf("after the restart: %+v; want sent, found as bob-0 by the check", dl)
	}
	if got := f.slack.received("bob"); len(got) != 1 {
		t.Errorf("bob got %q; want one message", got)
	}
	if last := f.slack.calls[len(f.slack.calls)-1]; !last.Retry {
		t.Error("the second attempt was not marked Retry")
	}
}

func TestPace(t *testing.T) {
	f := newFixture(t)
	d := f.dispatcher(notify.Config{Channels: map[string]notify.Channel{"slack": f.slack}, Pace: map[string]time.Duration{"slack": 50 * time.Millisecond}})
	f.emit(t, event(core.EventStarted, "bob", "a", "a"), event(core.EventStarted, "bob", "b", "b"), event(core.EventStarted, "bob", "c", "c"))
	start := time.Now()
	once(t, d)
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Errorf("three messages to one person took %v; the pace asks for 2 × 50 ms between them", took)
	}
}
