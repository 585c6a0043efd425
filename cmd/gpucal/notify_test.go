package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gpucal/gpucal/bot"
	"github.com/gpucal/gpucal/bot/discord"
	"github.com/gpucal/gpucal/bot/slack"
	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
	"github.com/gpucal/gpucal/notify"
)

// chatAPIs fakes the calls channel posts make: Slack's chat.postMessage
// and conversations.history, Discord's create message. It records the
// texts posted, by channel.
type chatAPIs struct {
	mu    sync.Mutex
	posts map[string][]map[string]any // channel → messages (Slack's shape)
}

func (f *chatAPIs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.URL.Path == "/slack/chat.postMessage":
		r.ParseForm()
		ch := r.Form.Get("channel")
		ts := fmt.Sprintf("%d.0001", len(f.posts[ch])+1)
		f.posts[ch] = append(f.posts[ch], map[string]any{"type": "message", "ts": ts, "text": r.Form.Get("text"),
			"metadata": json.RawMessage(r.Form.Get("metadata"))})
		fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":%q}`, ch, ts)
	case r.URL.Path == "/slack/conversations.history":
		r.ParseForm()
		msgs := f.posts[r.Form.Get("channel")]
		if msgs == nil {
			msgs = []map[string]any{}
		}
		json.NewEncoder(w).Encode(map[string]any{"ok": true, "messages": msgs})
	case strings.HasPrefix(r.URL.Path, "/discord/channels/") && strings.HasSuffix(r.URL.Path, "/messages"):
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		ch := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/discord/channels/"), "/messages")
		f.posts[ch] = append(f.posts[ch], map[string]any{"text": body["content"]})
		fmt.Fprintf(w, `{"id":"m%d","channel_id":%q}`, len(f.posts[ch]), ch)
	default:
		http.NotFound(w, r)
	}
}

func (f *chatAPIs) texts(channel string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, m := range f.posts[channel] {
		out = append(out, m["text"].(string))
	}
	return out
}

// TestChannelPosts: with --notify-channels, every admins' event is
// posted once to each Slack and Discord channel named, in the groups'
// language; events for one person are not; a resend finds the Slack post.
func TestChannelPosts(t *testing.T) {
	e := coretest.NewEnv()
	e.AddUsers(t, "alice")
	api := &chatAPIs{posts: map[string][]map[string]any{}}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	h := bot.NewHandler(e.Service, bot.Config{})
	sl, err := slack.New(e.Service, h, slack.Config{BotToken: "xoxb-test", APIURL: srv.URL + "/slack/"})
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discord.New(e.Service, h, discord.Config{Token: "t", AppID: "app1", APIURL: srv.URL + "/discord/", Guilds: []string{"G1"}})
	if err != nil {
		t.Fatal(err)
	}
	c := chat{slack: sl, discord: dc}
	cfg := chatConfig{zone: "UTC", groupsLang: "zh", channels: "slack:COPS, discord:DOPS"}
	d, err := newDispatcher(e.Service, c, cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	down := core.Event{Kind: core.EventNodeDown, User: core.Admins, At: e.Clock.Now(), DedupKey: "node_down:node-4",
		Detail: "Node node-4 is down.", Data: map[string]string{core.DataNode: "node-4", core.DataSince: "2030-01-07T08:55:00Z"}}
	mine := core.Event{Kind: core.EventStarted, User: "alice", At: e.Clock.Now(), DedupKey: "started:j1", Detail: "j1 started"}
	if err := e.Store.Update(context.Background(), func(tx core.Tx) error { return tx.InsertEvents(context.Background(), []core.Event{down, mine}) }); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := "节点 node-4 已离线：自 08:55 起没有心跳，其上的任务已标记为失败。"
	for _, ch := range []string{"COPS", "DOPS"} {
		if got := api.texts(ch); len(got) != 1 || !strings.Contains(got[0], want) {
			t.Errorf("%s got %q; want one post saying %q", ch, got, want)
		}
	}
	// A delivery claimed again after its sender died finds the Slack post.
	ds, _ := channelPosts(e.Service, c, cfg)
	if _, err := ds["slack:COPS"].Send(context.Background(), core.Admins, notify.Message{Key: "node_down:node-4→@admins→slack:COPS", Event: down, Retry: true}); err != nil {
		t.Fatal(err)
	}
	if got := api.texts("COPS"); len(got) != 1 {
		t.Errorf("after a resend COPS has %d posts, want 1", len(got))
	}
	for _, bad := range []struct {
		chat     chat
		channels string
	}{
		{chat{}, "slack:COPS"}, {c, "teams:X"}, {c, "slack:"},
	} {
		if _, err := channelPosts(e.Service, bad.chat, chatConfig{channels: bad.channels}); err == nil {
			t.Errorf("--notify-channels %q accepted", bad.channels)
		}
	}
}
