package discord_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/bot"
	"github.com/gpucal/gpucal/bot/discord"
	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
	"github.com/gpucal/gpucal/store"
	"github.com/gpucal/gpucal/store/storetest"
)

// now is Monday 7 January 2030, 09:00 UTC.
var now = coretest.Epoch

// key is the application's Ed25519 key pair; Discord signs with the
// private half, gpucal verifies with the public one.
var key = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))

const (
	appID    = "app1"
	fallback = "C-fallback"
	closed   = "U9" // a user who does not accept direct messages
)

// call is one request gpucal made to the fake Discord API.
type call struct {
	Method, Path, Auth string
	Body               map[string]any
	Raw                string
}

// fakeDiscord speaks the part of Discord's REST API (v9) gpucal uses and
// records every call.
type fakeDiscord struct {
	*httptest.Server
	mu      sync.Mutex
	calls   []call
	uploads []upload          // files posted to the channel "digest"
	nonces  map[string]string // enforced nonce → the message created with it
	posts   int               // messages created
}

// upload is a message with a file, as Discord receives it (multipart).
type upload struct {
	Content, Filename string
	Data              []byte
}

func newFakeDiscord(t *testing.T) *fakeDiscord {
	t.Helper()
	f := &fakeDiscord{}
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /api/v9/applications/{app}/commands", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, f.record(t, r).Raw)
	})
	mux.HandleFunc("POST /api/v9/interactions/{id}/{token}/callback", func(w http.ResponseWriter, r *http.Request) {
		f.record(t, r)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("PATCH /api/v9/webhooks/{app}/{token}/messages/{msg}", func(w http.ResponseWriter, r *http.Request) {
		f.record(t, r)
		fmt.Fprint(w, `{"id":"m-edited","channel_id":"C1"}`)
	})
	mux.HandleFunc("POST /api/v9/webhooks/{app}/{token}", func(w http.ResponseWriter, r *http.Request) {
		f.record(t, r)
		fmt.Fprint(w, `{"id":"m-followup","channel_id":"C1"}`)
	})
	mux.HandleFunc("POST /api/v9/users/@me/channels", func(w http.ResponseWriter, r *http.Request) {
		c := f.record(t, r)
		user, _ := c.Body["recipient_id"].(string)
		if user == closed {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"message":"Cannot send messages to this user","code":50007}`)
			return
		}
		fmt.Fprintf(w, `{"id":"D%s","type":1}`, user)
	})
	mux.HandleFunc("POST /api/v9/channels/{channel}/messages", func(w http.ResponseWriter, r *http.Request) {
		c := f.record(t, r)
		nonce, _ := c.Body["nonce"].(string)
		enforce, _ := c.Body["enforce_nonce"].(bool)
		if len(nonce) > 25 {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"message":"Invalid Form Body","code":50035}`)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		// Discord: with enforce_nonce, a nonce the author used in the last
		// few minutes returns that message and creates none.
		if id, ok := f.nonces[nonce]; ok && enforce {
			fmt.Fprintf(w, `{"id":%q,"channel_id":%q}`, id, r.PathValue("channel"))
			return
		}
		f.posts++
		id := fmt.Sprintf("m-posted-%d", f.posts)
		if enforce {
			if f.nonces == nil {
				f.nonces = map[string]string{}
			}
			f.nonces[nonce] = id
		}
		fmt.Fprintf(w, `{"id":%q,"channel_id":%q}`, id, r.PathValue("channel"))
	})
	mux.HandleFunc("POST /api/v9/channels/digest/messages", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			t.Errorf("a file message that is not multipart: %v", err)
			return
		}
		var payload struct{ Content string }
		json.Unmarshal([]byte(r.FormValue("payload_json")), &payload)
		for _, fhs := range r.MultipartForm.File {
			for _, fh := range fhs {
				file, _ := fh.Open()
				data, _ := io.ReadAll(file)
				f.mu.Lock()
				f.uploads = append(f.uploads, upload{Content: payload.Content, Filename: fh.Filename, Data: data})
				f.mu.Unlock()
			}
		}
		fmt.Fprint(w, `{"id":"m-digest","channel_id":"digest"}`)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("unexpected call to Discord: %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func (f *fakeDiscord) record(t *testing.T, r *http.Request) call {
	raw, _ := io.ReadAll(r.Body)
	c := call{Method: r.Method, Path: strings.TrimPrefix(r.URL.Path, "/api/v9"), Auth: r.Header.Get("Authorization"), Raw: string(raw)}
	if !json.Valid(raw) && len(raw) > 0 {
		t.Errorf("%s %s: the body is not JSON: %s", r.Method, r.URL.Path, raw)
	}
	_ = json.Unmarshal(raw, &c.Body) // left nil for an array (the commands)
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	return c
}

// take returns the calls made since the last take.
func (f *fakeDiscord) take() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	cs := f.calls
	f.calls = nil
	return cs
}

// fixture is a gpucal service on SQLite with one 8×A100 node and a Discord app.
type fixture struct {
	discord *fakeDiscord
	svc     *core.Service
	app     *discord.App
}

func newFixture(t *testing.T, change func(*discord.Config)) *fixture {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, storetest.SQLite(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc := core.NewService(db, core.WithClock(func() time.Time { return now }))
	if _, err := svc.AddNode(ctx, core.System, coretest.Node("node-1").GPUs(8, "NVIDIA A100-SXM4-80GB").Build()); err != nil {
		t.Fatal(err)
	}
	fd := newFakeDiscord(t)
	cfg := discord.Config{
		Token: "test-token", AppID: appID, PublicKey: hex.EncodeToString(key.Public().(ed25519.PublicKey)),
		APIURL: fd.URL + "/api/v9/", Admins: []string{"U2"}, FallbackChannel: fallback, Guilds: []string{"G1"},
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil)),
	}
	if change != nil {
		change(&cfg)
	}
	app, err := discord.New(svc, bot.NewHandler(svc, bot.Config{}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(app.Wait)
	return &fixture{discord: fd, svc: svc, app: app}
}

func (f *fixture) reservations(t *testing.T) []core.Reservation {
	t.Helper()
	rs, err := f.svc.Reservations(context.Background(), core.System, core.ReservationFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// slash is /gpu <sub> with options, from alice (U1) in guild G1, as the
// gateway delivers it.
func slash(id, sub string, opts ...*discordgo.ApplicationCommandInteractionDataOption) *discordgo.InteractionCreate {
	return &discordgo.InteractionCreate{Interaction: &discordgo.Interaction{
		ID: id, AppID: appID, Type: discordgo.InteractionApplicationCommand, GuildID: "G1", ChannelID: "C1",
		Token: "tok-" + id, Locale: discordgo.EnglishGB, Version: 1,
		Member: &discordgo.Member{User: &discordgo.User{ID: "U1", Username: "alice", GlobalName: "Alice"}},
		Data: discordgo.ApplicationCommandInteractionData{Name: "gpu", Options: []*discordgo.ApplicationCommandInteractionDataOption{
			{Name: sub, Type: discordgo.ApplicationCommandOptionSubCommand, Options: opts},
		}},
	}}
}

func str(name, v string) *discordgo.ApplicationCommandInteractionDataOption {
	return &discordgo.ApplicationCommandInteractionDataOption{Name: name, Type: discordgo.ApplicationCommandOptionString, Value: v}
}

func num(name string, v float64) *discordgo.ApplicationCommandInteractionDataOption {
	return &discordgo.ApplicationCommandInteractionDataOption{Name: name, Type: discordgo.ApplicationCommandOptionInteger, Value: v}
}

// press is alice pressing the button with customID on message msg.
func press(id, msg, customID string) *discordgo.InteractionCreate {
	return &discordgo.InteractionCreate{Interaction: &discordgo.Interaction{
		ID: id, AppID: appID, Type: discordgo.InteractionMessageComponent, GuildID: "G1", ChannelID: "C1",
		Token: "tok-" + id, Locale: discordgo.EnglishGB, Version: 1,
		Member:  &discordgo.Member{User: &discordgo.User{ID: "U1", Username: "alice", GlobalName: "Alice"}},
		Message: &discordgo.Message{ID: msg, ChannelID: "C1"},
		Data:    discordgo.MessageComponentInteractionData{CustomID: customID, ComponentType: discordgo.ButtonComponent},
	}}
}

// response is the part of an interaction response the tests read.
type response struct {
	Type discordgo.InteractionResponseType `json:"type"`
	Data struct {
		Content    string `json:"content"`
		Flags      int    `json:"flags"`
		Components []struct {
			Components []struct {
				Label    string `json:"label"`
				CustomID string `json:"custom_id"`
			} `json:"components"`
		} `json:"components"`
		Embeds []struct {
			Fields []struct{ Name, Value string } `json:"fields"`
		} `json:"embeds"`
	} `json:"data"`
}

func decode(t *testing.T, raw string) response {
	t.Helper()
	var r response
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		t.Fatalf("not an interaction response: %v: %s", err, raw)
	}
	return r
}

// button finds the custom_id of the button labelled label.
func (r response) button(t *testing.T, label string) string {
	t.Helper()
	for _, row := range r.Data.Components {
		for _, b := range row.Components {
			if b.Label == label {
				return b.CustomID
			}
		}
	}
	t.Fatalf("no button %q in %+v", label, r.Data.Components)
	return ""
}

// callback is the one interaction response gpucal sent over REST.
func callback(t *testing.T, calls []call, id string) response {
	t.Helper()
	if len(calls) != 1 || calls[0].Method != http.MethodPost || calls[0].Path != "/interactions/"+id+"/tok-"+id+"/callback" {
		t.Fatalf("calls %+v; want one POST /interactions/%s/tok-%s/callback", calls, id, id)
	}
	if calls[0].Auth != "Bot test-token" {
		t.Errorf("Authorization %q", calls[0].Auth)
	}
	return decode(t, calls[0].Raw)
}

func TestGateway(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()

	// /gpu book when:tomorrow 10-12 gpus:2 model:a100 books, in the fallback zone (UTC).
	f.app.HandleInteraction(ctx, slash("i1", "book", str("when", "tomorrow 10-12"), num("gpus", 2), str("model", "a100")))
	r := callback(t, f.discord.take(), "i1")
	if r.Type != discordgo.InteractionResponseChannelMessageWithSource || r.Data.Flags != int(discordgo.MessageFlagsEphemeral) ||
		r.Data.Content != "Booked 2×A100 on node-1 (GPUs 0–1), Tue 8 Jan 10:00–12:00 (your time)." {
		t.Fatalf("the response: %+v", r)
	}
	if len(r.Data.Embeds) != 1 || len(r.Data.Embeds[0].Fields) != 1 || r.Data.Embeds[0].Fields[0].Value != "r1" {
		t.Errorf("the embed: %+v", r.Data.Embeds)
	}
	rs := f.reservations(t)
	if len(rs) != 1 || rs[0].Owner != "alice" || !rs[0].Start.Equal(time.Date(2030, 1, 8, 10, 0, 0, 0, time.UTC)) ||
		!rs[0].End.Equal(time.Date(2030, 1, 8, 12, 0, 0, 0, time.UTC)) {
		t.Fatalf("reservations %+v; want alice's, 10:00–12:00 UTC", rs)
	}
	// The same interaction delivered again is not answered twice.
	f.app.HandleInteraction(ctx, slash("i1", "book", str("when", "tomorrow 10-12"), num("gpus", 2), str("model", "a100")))
	if calls := f.discord.take(); len(calls) != 0 || len(f.reservations(t)) != 1 {
		t.Fatalf("a redelivered interaction: calls %+v", calls)
	}

	// Its Cancel button cancels it, and the answer replaces the message.
	cancelID := r.button(t, "Cancel")
	if len(cancelID) > 100 {
		t.Errorf("custom_id %q is longer than Discord's 100 characters", cancelID)
	}
	f.app.HandleInteraction(ctx, press("i2", "m1", cancelID))
	r = callback(t, f.discord.take(), "i2")
	if r.Type != discordgo.InteractionResponseUpdateMessage || !strings.HasPrefix(r.Data.Content, "Cancelled r1") || r.Data.Flags != 0 {
		t.Errorf("the press's answer: %+v; want the message updated, its flags kept", r)
	}
	if st := f.reservations(t)[0].State; st != core.Cancelled {
		t.Errorf("the reservation is %s after Cancel", st)
	}

	// A guess is confirmed with a button whose command does not fit in a
	// custom_id; pressing it twice books once.
	f.app.HandleInteraction(ctx, slash("i3", "ask", str("text", "book 2 a100 tomorrow 9-1")))
	r = callback(t, f.discord.take(), "i3")
	bookID := r.button(t, "Book it")
	if !strings.HasPrefix(bookID, "k0:") || len(bookID) > 100 {
		t.Errorf("the Book it button's custom_id is %q; want a short key", bookID)
	}
	for _, id := range []string{"i4", "i5"} {
		f.app.HandleInteraction(ctx, press(id, "m3", bookID))
		if r := callback(t, f.discord.take(), id); !strings.HasPrefix(r.Data.Content, "Booked 2×A100") {
			t.Errorf("press %s: %+v", id, r)
		}
	}
	rs = f.reservations(t)
	booked := 0
	for _, r := range rs {
		if r.State == core.Confirmed && r.Start.Equal(time.Date(2030, 1, 8, 9, 0, 0, 0, time.UTC)) && r.End.Equal(time.Date(2030, 1, 8, 13, 0, 0, 0, time.UTC)) {
			booked++
		}
	}
	if len(rs) != 2 || booked != 1 {
		t.Errorf("after two presses of Book it: %+v; want one booking 09:00–13:00", rs)
	}

	// A button gpucal never made is refused politely, in a new message.
	f.app.HandleInteraction(ctx, press("i6", "m3", "k0:forgotten"))
	if r := callback(t, f.discord.take(), "i6"); r.Type != discordgo.InteractionResponseChannelMessageWithSource ||
		!strings.Contains(r.Data.Content, "no longer works") {
		t.Errorf("a stale button: %+v", r)
	}
}

func TestStructuredCommandsInChinese(t *testing.T) {
	f := newFixture(t, nil)
	ic := slash("z1", "when", str("duration", "12h"), num("gpus", 8), str("model", "a100"))
	ic.Locale = discordgo.ChineseCN
	f.app.HandleInteraction(context.Background(), ic)
	r := callback(t, f.discord.take(), "z1")
	if !regexp.MustCompile(`\p{Han}`).MatchString(r.Data.Content) || !strings.Contains(r.Data.Content, "8张A100") {
		t.Errorf("a zh-CN client got %q; want Chinese", r.Data.Content)
	}
	// /gpu tz sets the zone in which "tomorrow 10-12" is read.
	f.app.HandleInteraction(context.Background(), slash("z2", "tz", str("zone", "Asia/Shanghai")))
	f.app.HandleInteraction(context.Background(), slash("z3", "book", str("when", "tomorrow 10-12"), str("model", "a100")))
	f.discord.take()
	if rs := f.reservations(t); len(rs) != 1 || !rs[0].Start.Equal(time.Date(2030, 1, 8, 2, 0, 0, 0, time.UTC)) {
		t.Errorf("after /gpu tz Asia/Shanghai: %+v; want 02:00 UTC", rs)
	}
}

// sign signs a body as Discord does: Ed25519 over timestamp + body.
func sign(body string, ts time.Time, priv ed25519.PrivateKey) http.Header {
	stamp := strconv.FormatInt(ts.Unix(), 10)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Signature-Timestamp", stamp)
	h.Set("X-Signature-Ed25519", hex.EncodeToString(ed25519.Sign(priv, []byte(stamp+body))))
	return h
}

func post(t *testing.T, srv *httptest.Server, body string, h http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/discord/interactions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// bobBooks is /gpu ask as Discord posts it: bob (U2, an admin by ID) in guild G1.
const bobBooks = `{"id":"h1","application_id":"app1","type":2,"token":"tok-h1","version":1,"guild_id":"G1","channel_id":"C1",
"locale":"en-US","member":{"user":{"id":"U2","username":"bob","global_name":"Bob"},"roles":[]},
"data":{"id":"cmd1","name":"gpu","type":1,"options":[{"name":"ask","type":1,"options":[{"name":"text","type":3,"value":"book 2 a100 tomorrow 10-12"}]}]}}`

func TestHTTPEndpoint(t *testing.T) {
	f := newFixture(t, nil)
	h, err := f.app.Handler()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	ping := `{"id":"p1","application_id":"app1","type":1,"token":"tok-p1","version":1}`
	if code, resp := post(t, srv, ping, sign(ping, time.Now(), key)); code != http.StatusOK || strings.TrimSpace(resp) != `{"type":1}` {
		t.Fatalf("PING: %d %s; want 200 PONG", code, resp)
	}

	_, other, _ := ed25519.GenerateKey(nil)
	forged := []struct {
		name string
		body string
		h    http.Header
	}{
		{"wrong key", bobBooks, sign(bobBooks, time.Now(), other)},
		{"stale timestamp", bobBooks, sign(bobBooks, time.Now().Add(-6*time.Minute), key)},
		{"future timestamp", bobBooks, sign(bobBooks, time.Now().Add(6*time.Minute), key)},
		{"changed body", strings.Replace(bobBooks, "10-12", "10-18", 1), sign(bobBooks, time.Now(), key)},
		{"no signature", bobBooks, http.Header{"Content-Type": {"application/json"}}},
		{"forged ping", ping, sign(ping, time.Now(), other)},
	}
	for _, tt := range forged {
		t.Run(tt.name, func(t *testing.T) {
			if code, _ := post(t, srv, tt.body, tt.h); code != http.StatusUnauthorized {
				t.Errorf("status %d, want 401", code)
			}
			if rs := f.reservations(t); len(rs) != 0 {
				t.Fatalf("a forged request booked %+v", rs)
			}
			if calls := f.discord.take(); len(calls) != 0 {
				t.Errorf("a forged request made calls %+v", calls)
			}
		})
	}

	// The signed command books within the 3 s Discord allows; the answer is the HTTP reply.
	start := time.Now()
	signed := sign(bobBooks, time.Now(), key)
	code, resp := post(t, srv, bobBooks, signed)
	if took := time.Since(start); code != http.StatusOK || took > 3*time.Second {
		t.Fatalf("status %d after %v: %s", code, took, resp)
	}
	r := decode(t, resp)
	if r.Type != discordgo.InteractionResponseChannelMessageWithSource || !strings.HasPrefix(r.Data.Content, "Booked 2×A100 on node-1") ||
		r.Data.Flags != int(discordgo.MessageFlagsEphemeral) {
		t.Fatalf("the reply: %s", resp)
	}
	rs := f.reservations(t)
	if len(rs) != 1 || rs[0].Owner != "bob" || !rs[0].Start.Equal(time.Date(2030, 1, 8, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("reservations %+v; want bob's, 10:00–12:00 UTC", rs)
	}
	// bob is an admin by his Discord ID.
	a, _, err := f.svc.ChatActor(context.Background(), core.ChatIdentity{Platform: "discord", Team: "discord", ID: "U2"}, core.ChatProfile{})
	if err != nil || !a.Admin || a.User != "bob" {
		t.Errorf("bob is %+v, %v; want the admin bob", a, err)
	}

	// The same signed request sent again, within the window, is refused.
	if code, _ := post(t, srv, bobBooks, signed); code != http.StatusConflict {
		t.Errorf("a replayed interaction got %d, want 409", code)
	}
	if n := len(f.reservations(t)); n != 1 {
		t.Errorf("%d reservations after a replay, want 1", n)
	}

	// A signed press of Cancel cancels, replacing the message.
	pressBody := fmt.Sprintf(`{"id":"h2","application_id":"app1","type":3,"token":"tok-h2","version":1,"guild_id":"G1","channel_id":"C1",
"locale":"en-US","member":{"user":{"id":"U2","username":"bob"}},"message":{"id":"m9","channel_id":"C1"},
"data":{"custom_id":%q,"component_type":2}}`, r.button(t, "Cancel"))
	code, resp = post(t, srv, pressBody, sign(pressBody, time.Now(), key))
	if r := decode(t, resp); code != http.StatusOK || r.Type != discordgo.InteractionResponseUpdateMessage || !strings.HasPrefix(r.Data.Content, "Cancelled r1") {
		t.Errorf("the press: %d %s", code, resp)
	}
	if st := f.reservations(t)[0].State; st != core.Cancelled {
		t.Errorf("the reservation is %s after Cancel", st)
	}
	if calls := f.discord.take(); len(calls) != 0 {
		t.Errorf("HTTP mode answered over REST too: %+v", calls)
	}
}

func TestSlowCommandIsDeferredThenEdited(t *testing.T) {
	f := newFixture(t, func(c *discord.Config) { c.AckWithin = time.Nanosecond })
	check := func(t *testing.T, first response, calls []call, id string) {
		t.Helper()
		if first.Type != discordgo.InteractionResponseDeferredChannelMessageWithSource || first.Data.Flags != int(discordgo.MessageFlagsEphemeral) {
			t.Errorf("the first response: %+v; want deferred, ephemeral", first)
		}
		if len(calls) != 1 || calls[0].Method != http.MethodPatch || calls[0].Path != "/webhooks/app1/tok-"+id+"/messages/@original" {
			t.Fatalf("calls %+v; want the original response edited", calls)
		}
		if content, _ := calls[0].Body["content"].(string); !strings.Contains(content, "8 GPUs on 1 nodes") {
			t.Errorf("the edit: %s", calls[0].Raw)
		}
	}

	t.Run("gateway", func(t *testing.T) {
		f.app.HandleInteraction(context.Background(), slash("s1", "status"))
		calls := f.discord.take()
		if len(calls) != 2 {
			t.Fatalf("calls %+v; want a deferred response and an edit", calls)
		}
		check(t, callback(t, calls[:1], "s1"), calls[1:], "s1")
	})
	t.Run("http", func(t *testing.T) {
		h, _ := f.app.Handler()
		srv := httptest.NewServer(h)
		defer srv.Close()
		body := `{"id":"s2","application_id":"app1","type":2,"token":"tok-s2","version":1,"guild_id":"G1","member":{"user":{"id":"U5","username":"eve"}},
"data":{"id":"cmd1","name":"gpu","type":1,"options":[{"name":"status","type":1}]}}`
		code, resp := post(t, srv, body, sign(body, time.Now(), key))
		if code != http.StatusOK {
			t.Fatalf("status %d: %s", code, resp)
		}
		f.app.Wait()
		check(t, decode(t, resp), f.discord.take(), "s2")
	})
}

func TestDirectMessage(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	for _, id := range []core.ChatIdentity{
		{Platform: "discord", Team: "discord", ID: "U1"},
		{Platform: "discord", Team: "discord", ID: closed},
	} {
		if _, _, err := f.svc.ChatActor(ctx, id, core.ChatProfile{Handle: map[string]string{"U1": "alice", closed: "carol"}[id.ID]}); err != nil {
			t.Fatal(err)
		}
	}

	if err := f.app.DM(ctx, "alice", bot.Reply{Text: "j42 started on node-1."}); err != nil {
		t.Fatal(err)
	}
	calls := f.discord.take()
	if len(calls) != 2 || calls[0].Path != "/users/@me/channels" || calls[0].Body["recipient_id"] != "U1" ||
		calls[1].Path != "/channels/DU1/messages" || calls[1].Body["content"] != "j42 started on node-1." {
		t.Errorf("calls %+v; want the DM channel opened and the message posted", calls)
	}

	// The end of a failed job's log goes last, in a code block.
	if err := f.app.DM(ctx, "alice", bot.Reply{Text: "j43 failed: exit code 1. The last lines of its log:", Code: "x = `y`\nRuntimeError: boom"}); err != nil {
		t.Fatal(err)
	}
	calls = f.discord.take()
	if want := "j43 failed: exit code 1. The last lines of its log:\n```\nx = ˋyˋ\nRuntimeError: boom\n```"; len(calls) != 2 || calls[1].Body["content"] != want {
		t.Errorf("calls %+v; want content %q", calls, want)
	}

	// A notice sent again under the same key (its sender died before it
	// recorded the answer) comes back as the first message, not a second.
	first, err := f.app.Notify(ctx, "alice", "finished:j1→alice→discord", bot.Reply{Text: "j1 succeeded."})
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.app.Notify(ctx, "alice", "finished:j1→alice→discord", bot.Reply{Text: "j1 succeeded."})
	other, err2 := f.app.Notify(ctx, "alice", "finished:j2→alice→discord", bot.Reply{Text: "j2 succeeded."})
	calls = f.discord.take()
	if err != nil || err2 != nil || again != first || other == first || f.discord.posts != 4 {
		t.Errorf("Notify: %q, again %q (%v), another key %q (%v), %d messages created; want the first message back and 4 created in all",
			first, again, err, other, err2, f.discord.posts)
	}
	if n, _ := calls[1].Body["nonce"].(string); len(n) != 25 || calls[1].Body["enforce_nonce"] != true {
		t.Errorf("the notice's nonce %q, enforce_nonce %v; want 25 characters, enforced", n, calls[1].Body["enforce_nonce"])
	}

	// carol does not accept direct messages: the fallback channel mentions her.
	if err := f.app.DM(ctx, "carol", bot.Reply{Text: "r7 starts in 10 minutes."}); err != nil {
		t.Fatal(err)
	}
	calls = f.discord.take()
	if len(calls) != 2 || calls[1].Path != "/channels/"+fallback+"/messages" || calls[1].Body["content"] != "<@U9> r7 starts in 10 minutes." {
		t.Fatalf("calls %+v; want the fallback channel", calls)
	}
	mentions, _ := json.Marshal(calls[1].Body["allowed_mentions"])
	if diff := cmp.Diff(`{"parse":[],"replied_user":false,"users":["U9"]}`, string(mentions)); diff != "" {
		t.Errorf("allowed_mentions (-want +got):\n%s", diff)
	}

	// Without a fallback channel that is a clear error.
	g := newFixture(t, func(c *discord.Config) { c.FallbackChannel = "" })
	if _, _, err := g.svc.ChatActor(ctx, core.ChatIdentity{Platform: "discord", Team: "discord", ID: closed}, core.ChatProfile{Handle: "carol"}); err != nil {
		t.Fatal(err)
	}
	if err := g.app.DM(ctx, "carol", bot.Reply{Text: "hi"}); err == nil || !strings.Contains(err.Error(), "does not accept direct messages") {
		t.Errorf("DM without a fallback: %v", err)
	}
	if err := f.app.DM(ctx, "nobody", bot.Reply{Text: "hi"}); err == nil {
		t.Error("a DM to someone never seen in Discord succeeded")
	}
}

func TestRegister(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	for range 2 {
		if err := f.app.Register(ctx); err != nil {
			t.Fatal(err)
		}
	}
	calls := f.discord.take()
	if len(calls) != 2 || calls[0].Method != http.MethodPut || calls[0].Path != "/applications/app1/commands" {
		t.Fatalf("calls %+v; want two bulk overwrites", calls)
	}
	if diff := cmp.Diff(calls[0].Raw, calls[1].Raw); diff != "" {
		t.Errorf("registering twice sent different bodies (-first +second):\n%s", diff)
	}

	var cmds []discordgo.ApplicationCommand
	if err := json.Unmarshal([]byte(calls[0].Raw), &cmds); err != nil || len(cmds) != 1 || cmds[0].Name != "gpu" {
		t.Fatalf("registered %s", calls[0].Raw)
	}
	var subs []string
	name := regexp.MustCompile(`^[-_\p{L}\p{N}]{1,32}$`)
	checkText := func(what, n, d string) {
		if !name.MatchString(n) || strings.ToLower(n) != n {
			t.Errorf("%s: name %q is not a valid Discord name", what, n)
		}
		if c := utf8.RuneCountInString(d); c < 1 || c > 100 {
			t.Errorf("%s: description %q has %d characters; Discord allows 1 to 100", what, d, c)
		}
	}
	checkText("gpu", cmds[0].Name, cmds[0].Description)
	checkText("gpu zh-CN", cmds[0].Name, (*cmds[0].DescriptionLocalizations)[discordgo.ChineseCN])
	for _, sc := range cmds[0].Options {
		subs = append(subs, sc.Name)
		if sc.Type != discordgo.ApplicationCommandOptionSubCommand {
			t.Errorf("%s is not a subcommand", sc.Name)
		}
		checkText(sc.Name, sc.Name, sc.Description)
		checkText(sc.Name+" zh-CN", sc.NameLocalizations[discordgo.ChineseCN], sc.DescriptionLocalizations[discordgo.ChineseCN])
		optional := false
		for _, o := range sc.Options {
			checkText(sc.Name+" "+o.Name, o.Name, o.Description)
			checkText(sc.Name+" "+o.Name+" zh-CN", o.NameLocalizations[discordgo.ChineseCN], o.DescriptionLocalizations[discordgo.ChineseCN])
			if o.Required && optional {
				t.Errorf("%s: the required option %s follows an optional one", sc.Name, o.Name)
			}
			optional = optional || !o.Required
		}
	}
	want := []string{"ask", "book", "when", "queue", "mine", "status", "calendar", "cancel", "extend", "release", "tz", "notify", "help", "web"}
	if diff := cmp.Diff(want, subs); diff != "" {
		t.Errorf("subcommands (-want +got):\n%s", diff)
	}
	if got := cmds[0].Options[1].NameLocalizations[discordgo.ChineseCN]; got != "预定" {
		t.Errorf("book in zh-CN is %q", got)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	if _, err := discord.New(nil, nil, discord.Config{}); err == nil {
		t.Error("New accepted no token")
	}
	if _, err := discord.New(nil, nil, discord.Config{Token: "t", PublicKey: "not hex"}); err == nil {
		t.Error("New accepted a public key that is not hex")
	}
	if _, err := discord.New(nil, nil, discord.Config{Token: "t", APIURL: "ftp://x"}); err == nil {
		t.Error("New accepted an ftp API URL")
	}
	app, err := discord.New(nil, nil, discord.Config{Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Handler(); err == nil {
		t.Error("HTTP mode without a public key")
	}
	if err := app.RunGateway(context.Background()); err == nil {
		t.Error("the gateway without an application ID")
	}
	if err := app.Register(context.Background()); err == nil {
		t.Error("registering without an application ID")
	}
}

func TestGatewayKeepsTryingWhileDiscordIsDown(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"message":"down","code":0}`)
	}))
	t.Cleanup(down.Close)
	var logs syncBuffer
	app, err := discord.New(nil, nil, discord.Config{Token: "t", AppID: appID, APIURL: down.URL + "/api/v9/",
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := app.RunGateway(ctx); err != nil {
		t.Errorf("RunGateway returned %v when the server stopped; want nil", err)
	}
	if got := logs.String(); !strings.Contains(got, "trying again") || !strings.Contains(got, "registering /gpu") {
		t.Errorf("the log does not say Discord failed: %s", got)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestPostFile(t *testing.T) {
	f := newFixture(t, nil)
	png := []byte("\x89PNG fake chart")
	if err := f.app.PostFile(context.Background(), "digest", "Weekly digest: 40 % utilisation", "digest.png", png); err != nil {
		t.Fatal(err)
	}
	f.discord.mu.Lock()
	defer f.discord.mu.Unlock()
	if len(f.discord.uploads) != 1 || f.discord.uploads[0].Content != "Weekly digest: 40 % utilisation" ||
		f.discord.uploads[0].Filename != "digest.png" || string(f.discord.uploads[0].Data) != string(png) {
		t.Errorf("uploads %+v", f.discord.uploads)
	}
}

// TestStrangersRefused: anyone can invite a bot to a server; interactions
// from servers not configured, and DMs from people gpucal never met, are
// refused politely and create nothing.
func TestStrangersRefused(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	other := slash("i-other", "ask", str("text", "book 1 a100 tomorrow 10-12"))
	other.GuildID = "G-stranger"
	dm := slash("i-dm", "ask", str("text", "book 1 a100 tomorrow 10-12"))
	dm.GuildID, dm.Member, dm.User = "", nil, &discordgo.User{ID: "U8", Username: "eve"}
	for _, ic := range []*discordgo.InteractionCreate{other, dm} {
		f.app.HandleInteraction(ctx, ic)
	}
	f.app.Wait()
	users, err := f.svc.Users(ctx, core.System)
	if err != nil || len(users) != 0 {
		t.Errorf("strangers became users: %+v, %v", users, err)
	}
	var refusals int
	for _, c := range f.discord.take() {
		if strings.Contains(c.Raw, "serves the members of its own Discord servers") || strings.Contains(c.Raw, "use /gpu in your team") {
			refusals++
		}
	}
	if refusals != 2 {
		t.Errorf("%d polite refusals, want 2", refusals)
	}
}
