package slack_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack/slacktest"

	"github.com/gpucal/gpucal/bot"
	"github.com/gpucal/gpucal/bot/slack"
	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
	"github.com/gpucal/gpucal/store"
	"github.com/gpucal/gpucal/store/storetest"
)

const secret = "8f742231b10e8888abcd99yyyzzz85a5"

// now is Monday 7 January 2030, 09:00 UTC (10:00 in Berlin).
var now = coretest.Epoch

// fakeSlack is slacktest's server with the Web API methods gpucal uses that
// it lacks, and a response_url endpoint, recording what gpucal sent.
type fakeSlack struct {
	*slacktest.Server
	responses *httptest.Server

	mu        sync.Mutex
	opened    []string                    // users conversations.open was called for
	published map[string]string           // user → the last view JSON
	posted    []string                    // chat.postMessage bodies
	history   map[string][]map[string]any // channel → messages, as conversations.history gives them
	limited   int                         // how many posts to refuse with 429 Retry-After: 7
	uploaded  []byte                      // the file sent to the upload URL
	completed url.Values                  // files.completeUploadExternal's form
	replies   chan map[string]any
}

// people are the Slack users the fake knows: ID → users.info's user object.
var people = map[string]string{
	"U1": `{"id":"U1","team_id":"T1","name":"alice","real_name":"Alice","tz":"Europe/Berlin","profile":{"email":"alice@example.org"}}`,
	"U2": `{"id":"U2","team_id":"T1","name":"bob","real_name":"Bob","tz":"Asia/Shanghai","profile":{"email":"bob@example.org"}}`,
	"U3": `{"id":"U3","team_id":"T9","name":"mallory","profile":{"email":"admin@example.org"}}`,
	"U4": `{"id":"U4","team_id":"T1","name":"gus","is_restricted":true,"profile":{}}`,
	"U5": `{"id":"U5","team_id":"T1","name":"ci-bot","is_bot":true,"profile":{}}`,
}

func newFakeSlack(t *testing.T) *fakeSlack {
	t.Helper()
	f := &fakeSlack{published: map[string]string{}, history: map[string][]map[string]any{}, replies: make(chan map[string]any, 16)}
	f.Server = slacktest.NewTestServer(func(c slacktest.Customize) {
		c.Handle("/auth.test", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"ok":true,"team":"Lab","team_id":"T1","user":"gpucal","user_id":"UBOT","bot_id":"B1"}`)
		})
		c.Handle("/users.info", func(w http.ResponseWriter, r *http.Request) {
			r.ParseForm()
			u, ok := people[r.Form.Get("user")]
			if !ok {
				fmt.Fprint(w, `{"ok":false,"error":"user_not_found"}`)
				return
			}
			fmt.Fprintf(w, `{"ok":true,"user":%s}`, u)
		})
		c.Handle("/conversations.open", func(w http.ResponseWriter, r *http.Request) {
			r.ParseForm()
			f.mu.Lock()
			f.opened = append(f.opened, r.Form.Get("users"))
			f.mu.Unlock()
			fmt.Fprintf(w, `{"ok":true,"channel":{"id":"D%s"}}`, r.Form.Get("users"))
		})
		c.Handle("/views.publish", func(w http.ResponseWriter, r *http.Request) {
			var req struct {
				UserID string          `json:"user_id"`
				View   json.RawMessage `json:"view"`
			}
			body, _ := io.ReadAll(r.Body)
			json.Unmarshal(body, &req)
			f.mu.Lock()
			f.published[req.UserID] = string(req.View)
			f.mu.Unlock()
			fmt.Fprint(w, `{"ok":true,"view":{"id":"V1"}}`)
		})
		c.Handle("/chat.postMessage", func(w http.ResponseWriter, r *http.Request) {
			r.ParseForm()
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.limited > 0 {
				f.limited--
				w.Header().Set("Retry-After", "7")
				w.WriteHeader(http.StatusTooManyRequests)
				fmt.Fprint(w, `{"ok":false,"error":"ratelimited"}`)
				return
			}
			f.posted = append(f.posted, r.Form.Get("channel")+": "+r.Form.Get("text")+" "+r.Form.Get("blocks"))
			ts := fmt.Sprintf("%d.000100", len(f.posted))
			var meta json.RawMessage
			if m := r.Form.Get("metadata"); m != "" {
				meta = json.RawMessage(m)
			}
			f.history[r.Form.Get("channel")] = append(f.history[r.Form.Get("channel")], map[string]any{
				"type": "message", "ts": ts, "text": r.Form.Get("text"), "metadata": meta})
			fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":%q}`, r.Form.Get("channel"), ts)
		})
		c.Handle("/files.getUploadURLExternal", func(w http.ResponseWriter, r *http.Request) {
			// The upload URL must be on the API's host, or slack-go refuses to send the token there.
			fmt.Fprintf(w, `{"ok":true,"upload_url":"http://%s/upload/F1","file_id":"F1"}`, r.Host)
		})
		c.Handle("/upload/F1", func(w http.ResponseWriter, r *http.Request) {
			if err := r.ParseMultipartForm(1 << 20); err != nil {
				t.Errorf("the upload is not multipart: %v", err)
			}
			for _, fhs := range r.MultipartForm.File {
				file, _ := fhs[0].Open()
				data, _ := io.ReadAll(file)
				f.mu.Lock()
				f.uploaded = data
				f.mu.Unlock()
			}
			w.WriteHeader(http.StatusOK)
		})
		c.Handle("/files.completeUploadExternal", func(w http.ResponseWriter, r *http.Request) {
			r.ParseForm()
			f.mu.Lock()
			f.completed = r.Form
			f.mu.Unlock()
			fmt.Fprint(w, `{"ok":true,"files":[{"id":"F1","title":"digest.png"}]}`)
		})
		c.Handle("/conversations.history", func(w http.ResponseWriter, r *http.Request) {
			r.ParseForm()
			f.mu.Lock()
			defer f.mu.Unlock()
			msgs := f.history[r.Form.Get("channel")]
			if msgs == nil {
				msgs = []map[string]any{}
			}
			json.NewEncoder(w).Encode(map[string]any{"ok": true, "messages": msgs})
		})
	})
	go f.Start()
	t.Cleanup(f.Stop)
	f.responses = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			t.Errorf("response_url got a body that is not JSON: %v", err)
		}
		f.replies <- m
	}))
	t.Cleanup(f.responses.Close)
	return f
}

// fixture is a gpucal service on SQLite with one 8×A100 node and a Slack app.
type fixture struct {
	slack *fakeSlack
	svc   *core.Service
	app   *slack.App
}

func newFixture(t *testing.T, admins ...string) *fixture {
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
	fs := newFakeSlack(t)
	app, err := slack.New(svc, bot.NewHandler(svc, bot.Config{}), slack.Config{
		BotToken: "xoxb-test", AppToken: "xapp-test", SigningSecret: secret, APIURL: fs.GetAPIURL(), Admins: admins,
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{slack: fs, svc: svc, app: app}
}

func (f *fixture) reservations(t *testing.T) []core.Reservation {
	t.Helper()
	rs, err := f.svc.Reservations(context.Background(), core.System, core.ReservationFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// reply waits for what gpucal posted to a response_url.
func (f *fixture) reply(t *testing.T) map[string]any {
	t.Helper()
	select {
	case m := <-f.slack.replies:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("nothing arrived at the response_url")
	}
	return nil
}

// buttonValue finds the value of the button labelled label in a message's blocks.
func buttonValue(t *testing.T, blocks any, label string) string {
	t.Helper()
	raw, _ := json.Marshal(blocks)
	var bs []struct {
		Elements []struct {
			Text  struct{ Text string } `json:"text"`
			Value string                `json:"value"`
		} `json:"elements"`
	}
	json.Unmarshal(raw, &bs)
	for _, b := range bs {
		for _, e := range b.Elements {
			if e.Text.Text == label {
				return e.Value
			}
		}
	}
	t.Fatalf("no button %q in %s", label, raw)
	return ""
}

func TestSocketMode(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.app.RunSocketMode(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunSocketMode: %v", err)
		}
	})
	acks := make(chan string, 16)
	go func() {
		for m := range f.slack.SeenFeed {
			acks <- m
		}
	}()
	awaitAck := func(envelope string) map[string]any {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case m := <-acks:
				var ack struct {
					EnvelopeID string         `json:"envelope_id"`
					Payload    map[string]any `json:"payload"`
				}
				if json.Unmarshal([]byte(m), &ack) == nil && ack.EnvelopeID == envelope {
					return ack.Payload
				}
			case <-deadline:
				t.Fatalf("envelope %s was never acked", envelope)
			}
		}
	}

	// A slash command books, and the ack carries the reply.
	f.slack.SendToWebsocket(`{"envelope_id":"e1","type":"slash_commands","accepts_response_payload":true,"payload":{
		"team_id":"T1","user_id":"U1","user_name":"alice","command":"/gpu","text":"book 2 a100 tomorrow 10-12 for eval",
		"response_url":"` + f.slack.responses.URL + `/c1","trigger_id":"t1"}}`)
	reply := awaitAck("e1")
	text, _ := reply["text"].(string)
	if !strings.Contains(text, "Booked 2×A100 on node-1 (GPUs 0–1), Tue 8 Jan 10:00–12:00 (your time).") || reply["response_type"] != "ephemeral" {
		t.Fatalf("the ack says %v", reply)
	}
	rs := f.reservations(t)
	if len(rs) != 1 || rs[0].Owner != "alice" || !rs[0].Start.Equal(time.Date(2030, 1, 8, 9, 0, 0, 0, time.UTC)) {
		t.Fatalf("reservations %+v; want alice's, 09:00–11:00 UTC", rs)
	}

	// Its Cancel button cancels it, and the answer replaces the message.
	value := buttonValue(t, reply["blocks"], "Cancel")
	payload, _ := json.Marshal(map[string]any{
		"type": "block_actions", "team": map[string]string{"id": "T1"}, "user": map[string]string{"id": "U1"},
		"response_url": f.slack.responses.URL + "/b1", "trigger_id": "t2", "container": map[string]string{"message_ts": "1.1"},
		"actions": []map[string]string{{"action_id": "gpucal-0", "block_id": "gpucal-actions", "value": value, "type": "button"}},
	})
	f.slack.SendToWebsocket(`{"envelope_id":"e2","type":"interactive","payload":` + string(payload) + `}`)
	awaitAck("e2")
	m := f.reply(t)
	if text, _ := m["text"].(string); !strings.HasPrefix(text, "Cancelled r1") || m["replace_original"] != true {
		t.Errorf("the button's answer: %v", m)
	}
	if st := f.reservations(t)[0].State; st != core.Cancelled {
		t.Errorf("the reservation is %s after Cancel", st)
	}

	// Opening the App Home publishes the person's bookings and jobs.
	f.slack.SendToWebsocket(`{"envelope_id":"e3","type":"events_api","payload":{"type":"event_callback","team_id":"T1",
		"event":{"type":"app_home_opened","user":"U2","tab":"home","channel":"D2"}}}`)
	awaitAck("e3")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		f.slack.mu.Lock()
		view := f.slack.published["U2"]
		f.slack.mu.Unlock()
		if strings.Contains(view, "You have 0 booking(s) and 0 job(s).") && strings.Contains(view, `"type":"home"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the App Home view: %q", view)
		}
	}
}

// sign signs a request body as Slack does: v0=HMAC-SHA256("v0:ts:body").
func sign(body string, ts time.Time, key string) http.Header {
	stamp := strconv.FormatInt(ts.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte("v0:" + stamp + ":" + body))
	h := http.Header{}
	h.Set("X-Slack-Request-Timestamp", stamp)
	h.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	h.Set("Content-Type", "application/x-www-form-urlencoded")
	return h
}

func commandBody(f *fixture, text, trigger string) string {
	return url.Values{
		"team_id": {"T1"}, "user_id": {"U2"}, "user_name": {"bob"}, "command": {"/gpu"}, "text": {text},
		"response_url": {f.slack.responses.URL + "/" + trigger}, "trigger_id": {trigger},
	}.Encode()
}

func post(t *testing.T, srv *httptest.Server, path, body string, h http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
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

func TestHTTPMode(t *testing.T) {
	f := newFixture(t, "bob@example.org")
	h, err := f.app.Handler()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(f.app.Wait)

	body := commandBody(f, "book 2 a100 tomorrow 10-12", "t1")
	forged := []struct {
		name string
		body string
		h    http.Header
	}{
		{"wrong secret", body, sign(body, time.Now(), "not the secret")},
		{"stale timestamp", body, sign(body, time.Now().Add(-6*time.Minute), secret)},
		{"changed body", strings.Replace(body, "10-12", "10-18", 1), sign(body, time.Now(), secret)},
		{"no signature", body, http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}},
	}
	for _, tt := range forged {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range []string{"/slack/commands", "/slack/interactions", "/slack/events"} {
				if code, _ := post(t, srv, path, tt.body, tt.h); code != http.StatusUnauthorized {
					t.Errorf("%s: status %d, want 401", path, code)
				}
			}
			if rs := f.reservations(t); len(rs) != 0 {
				t.Fatalf("a forged request booked %+v", rs)
			}
		})
	}

	// The signed command books within the 3 s Slack allows, in bob's zone (Shanghai, UTC+8).
	start := time.Now()
	code, resp := post(t, srv, "/slack/commands", body, sign(body, time.Now(), secret))
	if took := time.Since(start); code != http.StatusOK || took > 3*time.Second {
		t.Fatalf("status %d after %v: %s", code, took, resp)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(resp), &m); err != nil || !strings.Contains(fmt.Sprint(m["text"]), "Booked 2×A100") {
		t.Fatalf("the reply: %s", resp)
	}
	rs := f.reservations(t)
	if len(rs) != 1 || rs[0].Owner != "bob" || !rs[0].Start.Equal(time.Date(2030, 1, 8, 2, 0, 0, 0, time.UTC)) {
		t.Fatalf("reservations %+v; want bob's, 02:00–04:00 UTC (10–12 in Shanghai)", rs)
	}
	// Slack's retry of the same request (same trigger) books nothing more.
	if code, _ := post(t, srv, "/slack/commands", body, sign(body, time.Now(), secret)); code != http.StatusOK {
		t.Errorf("the retry got %d", code)
	}
	if n := len(f.reservations(t)); n != 1 {
		t.Errorf("%d reservations after a retried command, want 1", n)
	}

	// bob is an admin by his email: he may look at the audit log through the service.
	a, _, err := f.svc.ChatActor(context.Background(), core.ChatIdentity{Platform: "slack", Team: "T1", ID: "U2"}, core.ChatProfile{})
	if err != nil || !a.Admin || a.User != "bob" {
		t.Errorf("bob is %+v, %v; want the admin bob", a, err)
	}

	// A signed button press cancels, answering through the response_url.
	value := buttonValue(t, m["blocks"], "Cancel")
	payload, _ := json.Marshal(map[string]any{
		"type": "block_actions", "team": map[string]string{"id": "T1"}, "user": map[string]string{"id": "U2"},
		"response_url": f.slack.responses.URL + "/b1", "trigger_id": "t9", "container": map[string]string{"message_ts": "2.2"},
		"actions": []map[string]string{{"action_id": "gpucal-0", "block_id": "gpucal-actions", "value": value, "type": "button"}},
	})
	ib := url.Values{"payload": {string(payload)}}.Encode()
	if code, _ := post(t, srv, "/slack/interactions", ib, sign(ib, time.Now(), secret)); code != http.StatusOK {
		t.Fatalf("the press got %d", code)
	}
	if text := fmt.Sprint(f.reply(t)["text"]); !strings.HasPrefix(text, "Cancelled r1") {
		t.Errorf("the press's answer: %s", text)
	}

	// The Events API's URL check echoes the challenge.
	ch := `{"type":"url_verification","token":"x","challenge":"c-123"}`
	if code, resp := post(t, srv, "/slack/events", ch, sign(ch, time.Now(), secret)); code != http.StatusOK || resp != "c-123" {
		t.Errorf("url_verification: %d %q", code, resp)
	}
}

// TestStrangersRefused: people from another organisation, guests and bots
// get a polite refusal and create nothing, whatever the admin list says.
func TestStrangersRefused(t *testing.T) {
	f := newFixture(t, "admin@example.org")
	h, _ := f.app.Handler()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	for _, user := range []string{"U3", "U4", "U5"} {
		body := url.Values{"team_id": {"T1"}, "user_id": {user}, "command": {"/gpu"}, "text": {"book 1 a100 tomorrow 10-12"},
			"trigger_id": {"t-" + user}}.Encode()
		code, resp := post(t, srv, "/slack/commands", body, sign(body, time.Now(), secret))
		if code != http.StatusOK || !strings.Contains(resp, "serves") && !strings.Contains(resp, "not bots") {
			t.Errorf("%s: %d %s", user, code, resp)
		}
	}
	if rs := f.reservations(t); len(rs) != 0 {
		t.Errorf("refused people booked %+v", rs)
	}
	users, err := f.svc.Users(context.Background(), core.System)
	if err != nil || len(users) != 0 {
		t.Errorf("refused people became users: %+v, %v", users, err)
	}
}

func TestSlowCommandAnswersThroughResponseURL(t *testing.T) {
	f := newFixture(t)
	app, err := slack.New(f.svc, bot.NewHandler(f.svc, bot.Config{}), slack.Config{
		BotToken: "xoxb-test", SigningSecret: secret, APIURL: f.slack.GetAPIURL(), AckWithin: time.Nanosecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := app.Handler()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	body := commandBody(f, "status", "t5")
	code, resp := post(t, srv, "/slack/commands", body, sign(body, time.Now(), secret))
	if code != http.StatusOK || !strings.Contains(resp, "Working on it") {
		t.Fatalf("ack %d %s", code, resp)
	}
	if text := fmt.Sprint(f.reply(t)["text"]); !strings.Contains(text, "8 GPUs on 1 nodes") {
		t.Errorf("the late answer: %s", text)
	}
	app.Wait()
}

func TestDirectMessage(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, _, err := f.svc.ChatActor(ctx, core.ChatIdentity{Platform: "slack", Team: "T1", ID: "U1"}, core.ChatProfile{Email: "alice@example.org"}); err != nil {
		t.Fatal(err)
	}
	if err := f.app.DM(ctx, "alice", bot.Reply{Text: "j42 started on node-1."}); err != nil {
		t.Fatal(err)
	}
	f.slack.mu.Lock()
	defer f.slack.mu.Unlock()
	if len(f.slack.opened) != 1 || f.slack.opened[0] != "U1" || len(f.slack.posted) != 1 || !strings.HasPrefix(f.slack.posted[0], "DU1: j42 started on node-1.") {
		t.Errorf("opened %v, posted %v", f.slack.opened, f.slack.posted)
	}
	if err := f.app.DM(ctx, "nobody", bot.Reply{Text: "hi"}); err == nil {
		t.Error("a DM to someone never seen in Slack succeeded")
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	if _, err := slack.New(nil, nil, slack.Config{BotToken: "xapp-wrong"}); err == nil {
		t.Error("New accepted an app token as the bot token")
	}
	app, err := slack.New(nil, nil, slack.Config{BotToken: "xoxb-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Handler(); err == nil {
		t.Error("HTTP mode without a signing secret")
	}
	if err := app.RunSocketMode(context.Background()); err == nil {
		t.Error("Socket Mode without an app token")
	}
}

// TestManifest checks deploy/slack/manifest.yaml against what the app
// serves and calls: the command, the three HTTP paths, the Home tab's
// event, and the scopes of the Web API methods it uses.
func TestManifest(t *testing.T) {
	b, err := os.ReadFile("../../deploy/slack/manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := string(b)
	for _, want := range []string{
		"command: /gpu", "/slack/commands", "/slack/interactions", "/slack/events", "- app_home_opened",
		"home_tab_enabled: true", "socket_mode_enabled: true",
		"- commands ", "- chat:write ", "- im:write ", "- users:read ", "- users:read.email ",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("the manifest lacks %q", want)
		}
	}
}

// TestHomeButtons: the Home tab lists a booking with a Cancel button; the
// press cancels it and the tab is published again with the answer on top.
func TestHomeButtons(t *testing.T) {
	f := newFixture(t)
	h, _ := f.app.Handler()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(f.app.Wait)
	body := commandBody(f, "book 1 a100 tomorrow 10-12", "t1")
	if code, resp := post(t, srv, "/slack/commands", body, sign(body, time.Now(), secret)); code != http.StatusOK || !strings.Contains(resp, "Booked") {
		t.Fatalf("booking: %d %s", code, resp)
	}
	view := func(want string) string {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			f.slack.mu.Lock()
			v := f.slack.published["U2"]
			f.slack.mu.Unlock()
			if strings.Contains(v, want) {
				return v
			}
			if time.Now().After(deadline) {
				t.Fatalf("the Home tab never said %q: %s", want, v)
			}
		}
	}
	ev := `{"type":"event_callback","team_id":"T1","event_id":"Ev1","event":{"type":"app_home_opened","user":"U2","tab":"home"}}`
	if code, _ := post(t, srv, "/slack/events", ev, sign(ev, time.Now(), secret)); code != http.StatusOK {
		t.Fatalf("event: %d", code)
	}
	var v struct{ Blocks any }
	json.Unmarshal([]byte(view("Cancel r1")), &v)
	value := buttonValue(t, v.Blocks, "Cancel r1")
	payload, _ := json.Marshal(map[string]any{
		"type": "block_actions", "team": map[string]string{"id": "T1"}, "user": map[string]string{"id": "U2"},
		"trigger_id": "t2", "container": map[string]string{"type": "view", "view_id": "V1"}, "view": map[string]string{"type": "home"},
		"actions": []map[string]string{{"action_id": "gpucal-0", "block_id": "gpucal-actions", "value": value, "type": "button"}},
	})
	ib := url.Values{"payload": {string(payload)}}.Encode()
	if code, _ := post(t, srv, "/slack/interactions", ib, sign(ib, time.Now(), secret)); code != http.StatusOK {
		t.Fatalf("press: %d", code)
	}
	if got := view("Cancelled r1"); !strings.Contains(got, "You have 0 booking(s)") {
		t.Errorf("the republished tab: %s", got)
	}
}

// TestNotify: a notice is one tagged direct message; a retry finds it
// instead of sending it again; a 429 says how long to wait; someone who
// never used Slack cannot be reached, for good.
func TestNotify(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, _, err := f.svc.ChatActor(ctx, core.ChatIdentity{Platform: "slack", Team: "T1", ID: "U1"}, core.ChatProfile{Handle: "alice"}); err != nil {
		t.Fatal(err)
	}
	n := slack.Notice{Key: "started:j1→alice→slack", Event: core.Event{Kind: core.EventStarted, Detail: "j1 started on node-1."}}
	id, err := f.app.Notify(ctx, "alice", n)
	if err != nil || id != "DU1/1.000100" {
		t.Fatalf("Notify: %q, %v", id, err)
	}
	n.Retry = true
	if again, err := f.app.Notify(ctx, "alice", n); err != nil || again != id {
		t.Errorf("the retry: %q, %v; want the first message %q", again, err, id)
	}
	f.slack.mu.Lock()
	posts := len(f.slack.posted)
	f.slack.mu.Unlock()
	if posts != 1 {
		t.Errorf("%d posts; want 1", posts)
	}
	// A failed job's notice shows the end of its log as a code block, escaped.
	failed := core.Event{Kind: core.EventFinished, Data: map[string]string{"job": "j2", "state": "failed", "how": "exit code 1",
		"log_tail": "loss <nan> & diverged\nRuntimeError: boom"}}
	if _, err := f.app.Notify(ctx, "alice", slack.Notice{Key: "finished:j2→alice→slack", Event: failed}); err != nil {
		t.Fatal(err)
	}
	f.slack.mu.Lock()
	last := f.slack.posted[len(f.slack.posted)-1]
	f.slack.posted = f.slack.posted[:posts]
	f.slack.limited = 1
	f.slack.mu.Unlock()
	if !strings.Contains(last, "The last lines of its log:") || !strings.Contains(last, "```loss \\u0026lt;nan\\u0026gt; \\u0026amp; diverged\\nRuntimeError: boom```") {
		t.Errorf("the failure notice: %s", last)
	}
	_, err = f.app.Notify(ctx, "alice", slack.Notice{Key: "other", Event: core.Event{Detail: "x"}})
	if wait, ok := slack.RetryAfter(err); !ok || wait != 7*time.Second {
		t.Errorf("after a 429: %v (%v, %v); want Retry-After 7 s", err, wait, ok)
	}
	if _, err := f.app.Notify(ctx, "nobody", n); !slack.Permanent(err) {
		t.Errorf("someone never seen in Slack: %v; want a permanent error", err)
	}
}

// TestPostFile: the digest's chart goes up in Slack's three steps and is
// shared to the channel with the summary as its comment.
func TestPostFile(t *testing.T) {
	f := newFixture(t)
	png := []byte("\x89PNG fake chart")
	if err := f.app.PostFile(context.Background(), "C42", "Weekly digest: 40 % utilisation", "digest.png", png); err != nil {
		t.Fatal(err)
	}
	f.slack.mu.Lock()
	defer f.slack.mu.Unlock()
	if string(f.slack.uploaded) != string(png) || f.slack.completed.Get("channel_id") != "C42" ||
		f.slack.completed.Get("initial_comment") != "Weekly digest: 40 % utilisation" {
		t.Errorf("uploaded %q, completed %v", f.slack.uploaded, f.slack.completed)
	}
}
