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
	"github.com/gpucal/gpucal/bot/discord"
	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
	"github.com/gpucal/gpucal/notify"
	"github.com/gpucal/gpucal/store"
	"github.com/gpucal/gpucal/store/storetest"
)

// discordAPI is the part of Discord's REST API direct messages use,
// recording what is posted.
type discordAPI struct {
	mu    sync.Mutex
	posts map[string][]string // channel → contents
}

func (d *discordAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	json.NewDecoder(r.Body).Decode(&body)
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/api/v9/users/@me/channels":
		fmt.Fprintf(w, `{"id":"D%s","type":1}`, body["recipient_id"])
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/messages"):
		ch := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/api/v9/channels/"), "/messages")
		content, _ := body["content"].(string)
		d.posts[ch] = append(d.posts[ch], content)
		fmt.Fprintf(w, `{"id":"m%d","channel_id":%q}`, len(d.posts[ch]), ch)
	default:
		http.NotFound(w, r)
	}
}

// discordChannel is notify's Discord channel, as cmd/gpucal builds it.
type discordChannel struct {
	app *discord.App
	svc *core.Service
}

func (c discordChannel) Send(ctx context.Context, user string, m notify.Message) (string, error) {
	ids, err := c.svc.ChatUsers(ctx, user)
	if err != nil || len(ids) == 0 {
		return "", &notify.PermanentError{Err: fmt.Errorf("%s is not on Discord (%v)", user, err)}
	}
	return "dm", c.app.DM(ctx, user, bot.Notice(m.Event, ids[0].Lang, ids[0].Location(time.UTC), c.svc.Now()))
}

// TestSlipNotifiedOnceDiscord is TestSlipNotifiedOnce over Discord: the
// owner of a job that slips gets one direct message per event.
func TestSlipNotifiedOnceDiscord(t *testing.T) {
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
	if _, err := svc.LinkChat(ctx, core.System, core.ChatIdentity{Platform: "discord", Team: "discord", ID: "42"}, "alice"); err != nil {
		t.Fatal(err)
	}
	api := &discordAPI{posts: map[string][]string{}}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	app, err := discord.New(svc, bot.NewHandler(svc, bot.Config{}), discord.Config{Token: "t", AppID: "app1", APIURL: srv.URL + "/api/v9/", Guilds: []string{"G1"}})
	if err != nil {
		t.Fatal(err)
	}
	d := notify.New(svc, notify.Config{Channels: map[string]notify.Channel{"discord": discordChannel{app, svc}}})
	submit := func(a core.Actor, class core.JobClass, guess time.Duration) {
		t.Helper()
		if _, err := svc.Submit(ctx, a, core.SubmitRequest{GPUs: 8, Model: "a100", Class: class, Command: []string{"train"}, Hints: core.Hints{Guess: guess}}); err != nil {
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
	api.mu.Lock()
	before := len(api.posts["D42"])
	api.mu.Unlock()
	submit(core.Actor{User: "ops", Admin: true}, core.ClassHigh, 3*time.Hour)
	for range 3 {
		round()
		clock.Advance(time.Second)
	}
	api.mu.Lock()
	got := api.posts["D42"][before:]
	api.mu.Unlock()
	var slips, moves int
	for _, text := range got {
		switch {
		case strings.Contains(text, "is now expected to start at 13:00, not 10:00"):
			slips++
		case strings.Contains(text, "is now number 2 in the queue (was 1)"):
			moves++
		}
	}
	if slips != 1 || moves != 1 || len(got) != 2 {
		t.Errorf("alice got %q on Discord after the slip; want one message about her start and one about her place", got)
	}
}
