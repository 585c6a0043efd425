package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpucal/gpucal/bot"
	"github.com/gpucal/gpucal/bot/slack"
	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
	"github.com/gpucal/gpucal/notify"
	"github.com/gpucal/gpucal/store"
	"github.com/gpucal/gpucal/store/storetest"
)

// slackAPI is the part of Slack's Web API that notices use, recording the
// direct messages it is sent, with their metadata.
type slackAPI struct {
	mu       sync.Mutex
	messages map[string][]map[string]any // channel → messages
}

func (s *slackAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.URL.Path {
	case "/conversations.open":
		fmt.Fprintf(w, `{"ok":true,"channel":{"id":"D%s"}}`, r.Form.Get("users"))
	case "/chat.postMessage":
		ch := r.Form.Get("channel")
		ts := fmt.Sprintf("%d.0001", len(s.messages[ch])+1)
		s.messages[ch] = append(s.messages[ch], map[string]any{"type": "message", "ts": ts, "text": r.Form.Get("text"),
			"metadata": json.RawMessage(r.Form.Get("metadata"))})
		fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":%q}`, ch, ts)
	case "/conversations.history":
		msgs := s.messages[r.Form.Get("channel")]
		if msgs == nil {
			msgs = []map[string]any{}
		}
		json.NewEncoder(w).Encode(map[string]any{"ok": true, "messages": msgs})
	default:
		fmt.Fprintf(w, `{"ok":false,"error":"unknown_method"}`)
	}
}

func (s *slackAPI) texts(channel string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.messages[channel] {
		out = append(out, m["text"].(string))
	}
	return out
}

// slackChannel is notify's Slack channel, as cmd/gpucal builds it.
type slackChannel struct{ app *slack.App }

func (c slackChannel) Send(ctx context.Context, user string, m notify.Message) (string, error) {
	id, err := c.app.Notify(ctx, user, slack.Notice{Key: m.Key, Event: m.Event, Retry: m.Retry})
	if wait, ok := slack.RetryAfter(err); ok {
		return "", &notify.RetryAfterError{Wait: wait, Err: err}
	}
	if slack.Permanent(err) {
		return "", &notify.PermanentError{Err: err}
	}
	return id, err
}

// slipWorld is gpucal on SQLite with one 8×A100 node, users alice and
// bob and the admin ops; alice is linked to the chat identity id.
func slipWorld(t *testing.T, id core.ChatIdentity) (*core.Service, *coretest.Clock, core.Store) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, storetest.SQLite(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	clock := coretest.NewClock(coretest.Epoch)
	svc := core.NewService(db, core.WithClock(clock.Now))
	if _, err := svc.AddNode(ctx, core.System, coretest.Node("node-1").GPUs(8, "NVIDIA A100-SXM4-80GB").Build()); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"alice", "bob", "ops"} {
		if _, err := svc.AddUser(ctx, core.System, core.User{Name: u, Admin: u == "ops"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.LinkChat(ctx, core.System, id, "alice"); err != nil {
		t.Fatal(err)
	}
	return svc, clock, db
}

// playSlip queues bob's one-hour job (it starts now) and alice's
// three-hour one (planned at +1h), replans and delivers, calls between,
// then queues ops's high-priority job ahead of alice's (her start slips
// by three hours) and replans and delivers three times.
func playSlip(t *testing.T, svc *core.Service, clock *coretest.Clock, d *notify.Dispatcher, between func()) {
	t.Helper()
	ctx := context.Background()
	submit := func(a core.Actor, class core.JobClass, guess time.Duration) {
		t.Helper()
		if _, err := svc.Submit(ctx, a, core.SubmitRequest{GPUs: 8, Model: "a100", Class: class, Command: []string{"train"},
			Hints: core.Hints{Guess: guess}}); err != nil {
			t.Fatal(err)
		}
	}
	round := func() {
		t.Helper()
		if _, err := svc.Replan(ctx, clock.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Once(ctx); err != nil {
			t.Fatal(err)
		}
	}
	submit(core.Actor{User: "bob"}, core.ClassNormal, time.Hour)
	submit(core.Actor{User: "alice"}, core.ClassNormal, 3*time.Hour)
	round()
	between()
	submit(core.Actor{User: "ops", Admin: true}, core.ClassHigh, 3*time.Hour)
	for range 3 {
		round()
		clock.Advance(time.Second)
	}
}

// wantSlipOnce checks that got is one message saying slip and one saying move.
func wantSlipOnce(t *testing.T, got []string, slip, move string) {
	t.Helper()
	var slips, moves int
	for _, text := range got {
		switch {
		case strings.Contains(text, slip):
			slips++
		case strings.Contains(text, move):
			moves++
		}
	}
	if slips != 1 || moves != 1 || len(got) != 2 {
		t.Errorf("alice got %q after the slip; want one message that her start moved later and one that her place did", got)
	}
}

// TestSlipNotifiedOnce is the path on a real database: a job
// planned behind another slips when a high-priority job is queued ahead of
// it; its owner gets one Slack message per event, however often the server
// replans and the dispatcher runs.
func TestSlipNotifiedOnce(t *testing.T) {
	id := core.ChatIdentity{Platform: "slack", Team: "T1", ID: "U1"}
	svc, clock, _ := slipWorld(t, id)
	api := &slackAPI{messages: map[string][]map[string]any{}}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	app, err := slack.New(svc, bot.NewHandler(svc, bot.Config{}), slack.Config{BotToken: "xoxb-test", APIURL: srv.URL + "/"})
	if err != nil {
		t.Fatal(err)
	}
	d := notify.New(svc, notify.Config{Channels: map[string]notify.Channel{"slack": slackChannel{app}}})
	var before []string
	playSlip(t, svc, clock, d, func() {
		before = api.texts("DU1")
		// alice writes /gpu in Chinese: what she is told from now on is in Chinese.
		if err := svc.SetChatLang(context.Background(), id, "zh"); err != nil {
			t.Fatal(err)
		}
	})
	wantSlipOnce(t, api.texts("DU1")[len(before):], "j2（train） 预计开始时间推迟到 13:00（原为 10:00）", "j2（train） 现在排第 2 位（之前第 1 位）")
	seen := map[string]bool{}
	for _, text := range api.texts("DU1") {
		if seen[text] {
			t.Errorf("alice got %q twice", text)
		}
		seen[text] = true
	}
	t.Logf("alice's messages: %q", api.texts("DU1"))
}
