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
	mu     sync.Mutex
	posts  map[string][]string // channel → contents
	nonces map[string]string   // enforced nonce → message ID
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
		nonce, _ := body["nonce"].(string)
		if id, ok := d.nonces[nonce]; ok && body["enforce_nonce"] == true {
			fmt.Fprintf(w, `{"id":%q,"channel_id":%q}`, id, ch) // Discord returns the message created with it
			return
		}
		content, _ := body["content"].(string)
		d.posts[ch] = append(d.posts[ch], content)
		id := fmt.Sprintf("m%d", len(d.posts[ch]))
		if body["enforce_nonce"] == true {
			if d.nonces == nil {
				d.nonces = map[string]string{}
			}
			d.nonces[nonce] = id
		}
		fmt.Fprintf(w, `{"id":%q,"channel_id":%q}`, id, ch)
	default:
		http.NotFound(w, r)
	}
}

// discordChannel is notify's Discord channel, as cmd/gpucal builds it.
// When crash is set, the first Send dies after Discord answered and
// before it returns, as a server killed mid-send: it closes crash and
// waits for its context to end.
type discordChannel struct {
	app   *discord.App
	svc   *core.Service
	crash chan struct{}
}

func (c discordChannel) Send(ctx context.Context, user string, m notify.Message) (string, error) {
	ids, err := c.svc.ChatUsers(ctx, user)
	if err != nil || len(ids) == 0 {
		return "", &notify.PermanentError{Err: fmt.Errorf("%s is not on Discord (%v)", user, err)}
	}
	id, err := c.app.Notify(ctx, user, m.Key, bot.Notice(m.Event, ids[0].Lang, ids[0].Location(time.UTC), c.svc.Now()))
	if c.crash != nil && err == nil {
		close(c.crash)
		<-ctx.Done()
		return "", ctx.Err()
	}
	return id, err
}

// discordWorld is the Discord app of svc against a local discordAPI.
func discordWorld(t *testing.T, svc *core.Service) (*discordAPI, *discord.App) {
	t.Helper()
	api := &discordAPI{posts: map[string][]string{}}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	app, err := discord.New(svc, bot.NewHandler(svc, bot.Config{}), discord.Config{Token: "t", AppID: "app1", APIURL: srv.URL + "/api/v9/", Guilds: []string{"G1"}})
	if err != nil {
		t.Fatal(err)
	}
	return api, app
}

// TestSlipNotifiedOnceDiscord is TestSlipNotifiedOnce over Discord: the
// owner of a job that slips gets one direct message per event.
func TestSlipNotifiedOnceDiscord(t *testing.T) {
	svc, clock, _ := slipWorld(t, core.ChatIdentity{Platform: "discord", Team: "discord", ID: "42"})
	api, app := discordWorld(t, svc)
	d := notify.New(svc, notify.Config{Channels: map[string]notify.Channel{"discord": discordChannel{app: app, svc: svc}}})
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

// TestCrashMidSendDiscord: a sender killed after Discord created the
// message and before it recorded that is followed, once its lease runs
// out, by one that sends with the same nonce: Discord returns the first
// message, so the person gets it once and the delivery records its ID.
func TestCrashMidSendDiscord(t *testing.T) {
	svc, clock, db := slipWorld(t, core.ChatIdentity{Platform: "discord", Team: "discord", ID: "42"})
	api, app := discordWorld(t, svc)
	ev := core.Event{Kind: core.EventStarted, User: "alice", At: clock.Now(), Detail: "j9 started", DedupKey: "started:j9",
		Data: map[string]string{core.DataJob: "j9", core.DataGPUs: "2"}}
	if err := db.Update(context.Background(), func(tx core.Tx) error { return tx.InsertEvents(context.Background(), []core.Event{ev}) }); err != nil {
		t.Fatal(err)
	}
	crash := make(chan struct{})
	d1 := notify.New(svc, notify.Config{Channels: map[string]notify.Channel{"discord": discordChannel{app: app, svc: svc, crash: crash}}, Lease: time.Minute})
	ctx, kill := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := d1.Once(ctx); done <- err }()
	<-crash
	kill()
	<-done
	d2 := notify.New(svc, notify.Config{Channels: map[string]notify.Channel{"discord": discordChannel{app: app, svc: svc}}, Lease: time.Minute})
	clock.Advance(time.Minute)
	if _, err := d2.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	api.mu.Lock()
	got := api.posts["D42"]
	api.mu.Unlock()
	if len(got) != 1 || !strings.Contains(got[0], "j9 started") {
		t.Errorf("alice got %q; want one message", got)
	}
	var ds []core.Delivery
	db.View(context.Background(), func(tx core.Tx) (err error) { ds, err = tx.Deliveries(context.Background(), 0, 0); return err })
	if len(ds) != 1 || ds[0].State != core.DeliverySent || ds[0].ProviderID != "m1" || ds[0].Attempts != 2 {
		t.Errorf("deliveries %+v; want one, sent as m1 on the second attempt", ds)
	}
}
