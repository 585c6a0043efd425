package main

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
)

func TestParseWeekTime(t *testing.T) {
	for in, want := range map[string]string{"mon 09:00": "mon 09:00", "Monday 9:30": "mon 09:30", "fri 17:05": "fri 17:05", " sun 0:00 ": "sun 00:00"} {
		got, err := parseWeekTime(in)
		if err != nil || got.String() != want {
			t.Errorf("parseWeekTime(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "mon", "monx 09:00", "mo 09:00", "mon 9", "mon 24:00", "mon 09:60", "mon 09:5", "mon -1:00", "tuesday9:00", "mon 009:00"} {
		if _, err := parseWeekTime(bad); err == nil {
			t.Errorf("parseWeekTime(%q) accepted it", bad)
		}
	}
}

func FuzzParseWeekTime(f *testing.F) {
	for _, s := range []string{"mon 09:00", "Friday 17:30", "sun 0:00", "x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := parseWeekTime(s)
		if err != nil {
			return
		}
		if w.hour < 0 || w.hour > 23 || w.minute < 0 || w.minute > 59 || w.day < time.Sunday || w.day > time.Saturday {
			t.Fatalf("parseWeekTime(%q) = %+v", s, w)
		}
		if again, err := parseWeekTime(w.String()); err != nil || again != w {
			t.Fatalf("%q read back as %+v, %v", w.String(), again, err)
		}
	})
}

func TestParseDigestTargets(t *testing.T) {
	got, err := parseDigestTargets("slack:C0123, discord:9876,email:ops@example.org,group:wecom-2")
	want := []digestTarget{{"slack", "C0123"}, {"discord", "9876"}, {"email", "ops@example.org"}, {"group", "wecom-2"}}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("parseDigestTargets = %+v, %v", got, err)
	}
	for _, bad := range []string{"C0123", "teams:C1", "slack:", "email:ops", "group:"} {
		if _, err := parseDigestTargets(bad); err == nil {
			t.Errorf("parseDigestTargets(%q) accepted it", bad)
		}
	}
}

type recordingPoster struct {
	channels, texts []string
	files           [][]byte
	fail            bool
}

func (p *recordingPoster) PostFile(ctx context.Context, channel, text, filename string, data []byte) error {
	if p.fail {
		return errors.New("channel_not_found")
	}
	p.channels, p.texts, p.files = append(p.channels, channel), append(p.texts, text), append(p.files, data)
	return nil
}

// TestDigestJob: the weekly task posts the summary and a real PNG to every
// target, and says which ones it could not reach.
func TestDigestJob(t *testing.T) {
	e := coretest.NewEnv()
	e.AddNodes(t, coretest.Node("node-1").GPUs(8, "NVIDIA A100-SXM4-80GB").Build())
	slack, discord, mail, wecom := &recordingPoster{}, &recordingPoster{}, &recordingPoster{}, &recordingPoster{}
	job := digestJob{svc: e.Service, lang: "zh", log: slog.New(slog.DiscardHandler),
		targets: []digestTarget{{"slack", "C1"}, {"discord", "D1"}, {"email", "ops@example.org"}, {"group", "wecom"}},
		posters: map[string]filePoster{"slack": slack, "discord": discord, "email": mail, "group:wecom": wecom}}
	if err := job.post(context.Background()); err != nil {
		t.Fatal(err)
	}
	if mail.channels[0] != "ops@example.org" {
		t.Errorf("mailed to %q", mail.channels)
	}
	for _, p := range []*recordingPoster{slack, discord, mail, wecom} {
		if len(p.files) != 1 || !strings.Contains(p.texts[0], "GPU") {
			t.Fatalf("posted %d files, texts %q", len(p.files), p.texts)
		}
		img, err := png.Decode(bytes.NewReader(p.files[0]))
		if err != nil || img.Bounds().Dx() != 1200 || img.Bounds().Dy() != 700 {
			t.Errorf("the chart: %v, %v", img.Bounds(), err)
		}
	}
	if err := job.post(context.Background()); err != nil || len(slack.files) != 1 {
		t.Errorf("a second start in the same hour posted again (%d files, %v)", len(slack.files), err)
	}
	e.Clock.Advance(time.Hour)
	discord.fail = true
	if err := job.post(context.Background()); err == nil || !strings.Contains(err.Error(), "discord:D1") {
		t.Errorf("a failed target: %v", err)
	}
}

// TestDigestTargetsNeedTheirChannel: a digest target whose channel is
// not configured is a usage error at start-up, saying what to set.
func TestDigestTargetsNeedTheirChannel(t *testing.T) {
	e := coretest.NewEnv()
	log := slog.New(slog.DiscardHandler)
	for to, want := range map[string]string{
		"email:ops@example.org": "GPUCAL_SMTP_URL",
		"slack:C1":              "GPUCAL_SLACK_BOT_TOKEN",
		"group:feishu":          "no group of that name",
	} {
		c := chatConfig{zone: "UTC", groupsLang: "en", digestTo: to, digestAt: "mon 09:00", digestLang: "en",
			groups: "wecom=https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k1"}
		if _, err := setupChat(c, e.Service, log, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--digest-to %s: %v; want it to say %q", to, err, want)
		}
	}
	c := chatConfig{zone: "UTC", groupsLang: "en", digestTo: "group:wecom,email:ops@example.org", digestAt: "mon 09:00", digestLang: "en",
		groups: "wecom=https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k1", smtp: "smtp://relay.example.org:25?from=gpucal@example.org&tls=none"}
	if out, err := setupChat(c, e.Service, log, nil); err != nil || len(out.leaderParts) != 1 || out.mailer == nil || len(out.groups) != 1 {
		t.Errorf("a digest to a group and a mailbox without a chat app: %v, %d scheduled parts", err, len(out.leaderParts))
	}
}

// TestCalendarJobs: a weekly job is due at the next such time in the zone,
// and Run returns when its context ends.
func TestCalendarJobs(t *testing.T) {
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Skip(err)
	}
	jobs, err := newCalendarJobs(shanghai)
	if err != nil {
		t.Fatal(err)
	}
	next, err := jobs.Weekly("weekly-digest", weekTime{day: time.Monday, hour: 9}, func(context.Context) {})
	if err != nil {
		t.Fatal(err)
	}
	local := next.In(shanghai)
	if local.Weekday() != time.Monday || local.Hour() != 9 || local.Minute() != 0 || !next.After(time.Now()) || next.Sub(time.Now()) > 7*24*time.Hour {
		t.Errorf("next run %v; want the coming Monday 09:00 in Shanghai", local)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- jobs.Run(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// TestGroupChannels: GPUCAL_NOTIFY_GROUPS becomes one named robot per
// entry, paced by its vendor's limit; a bad entry is a usage error.
func TestGroupChannels(t *testing.T) {
	e := coretest.NewEnv()
	cfg := chatConfig{zone: "UTC", groupsLang: "zh",
		groups: "wecom=https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k1;wecom=https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k2;" +
			"feishu=https://open.feishu.cn/open-apis/bot/v2/hook/t1|s1;webhook=https://example.org/hook"}
	got, err := groupChannels(e.Service, cfg, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range got {
		if g.robot == nil {
			t.Errorf("group %s has no robot", g.name)
		}
		names = append(names, g.name+"/"+g.kind)
	}
	if want := []string{"wecom/wecom", "wecom-2/wecom", "feishu/feishu", "webhook/webhook"}; !slices.Equal(names, want) {
		t.Errorf("groups %v, want %v", names, want)
	}
	if groupPace("wecom") != 3*time.Second || groupPace("feishu") != 600*time.Millisecond || groupPace("webhook") != 0 {
		t.Errorf("paces: wecom %s, feishu %s, webhook %s", groupPace("wecom"), groupPace("feishu"), groupPace("webhook"))
	}
	for _, bad := range []chatConfig{{zone: "UTC", groupsLang: "en", groups: "teams=https://x"}, {zone: "UTC", groupsLang: "fr", groups: "webhook=https://example.org/h"}} {
		if _, err := groupChannels(e.Service, bad, time.UTC); err == nil || strings.Contains(err.Error(), "k1") {
			t.Errorf("groupChannels(%q, %q): %v", bad.groups, bad.groupsLang, err)
		}
	}
}

// TestDailySummary: the summary goes to the outbox once a day, to the
// admins, in both languages.
func TestDailySummary(t *testing.T) {
	e := coretest.NewEnv()
	e.AddNodes(t, coretest.Node("node-1").GPUs(8, "NVIDIA A100-SXM4-80GB").Build())
	log := slog.New(slog.DiscardHandler)
	dailySummary(context.Background(), e.Service, time.UTC, log)
	dailySummary(context.Background(), e.Service, time.UTC, log)
	var events []core.Event
	e.Store.View(context.Background(), func(tx core.Tx) (err error) { events, err = tx.Events(context.Background(), 0, 0); return err })
	if len(events) != 1 || events[0].Kind != core.EventDailySummary || events[0].User != core.Admins ||
		!strings.Contains(events[0].Data["en"], "GPU") || events[0].Data["zh"] == "" {
		t.Errorf("events %+v; want one daily summary to the admins", events)
	}
	if _, err := scheduleSummary(chatConfig{zone: "UTC", summaryAt: "9am"}, e.Service, log); err == nil {
		t.Error("--summary-at 9am accepted")
	}
	if run, err := scheduleSummary(chatConfig{zone: "UTC", summaryAt: "off"}, e.Service, log); run != nil || err != nil {
		t.Errorf("off: %v, %v", run != nil, err)
	}
}
