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
	"github.com/gpucal/gpucal/notify"
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
	svc, clock := slipWorld(t, core.ChatIdentity{Platform: "discord", Team: "discord", ID: "42"})
	api := &discordAPI{posts: map[string][]string{}}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	app, err := discord.New(svc, bot.NewHandler(svc, bot.Config{}), discord.Config{Token: "t", AppID: "app1", APIURL: srv.URL + "/api/v9/", Guilds: []string{"G1"}})
	if err != nil {
		t.Fatal(err)
	}
	d := notify.New(svc, notify.Config{Channels: map[string]notify.Channel{"discord": discordChannel{app, svc}}})
	var before int
	playSlip(t, svc, clock, d, func() {
		api.mu.Lock()
		before = len(api.posts["D42"])
		api.mu.Unlock()
	})
	api.mu.Lock()
	got := api.posts["D42"][before:]
	api.mu.Unlock()
	wantSlipOnce(t, got, "is now expected to start at 13:00, not 10:00", "is now number 2 in the queue (was 1)")
}
