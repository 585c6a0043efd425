package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpucal/gpucal/bot"
	"github.com/gpucal/gpucal/bot/discord"
	"github.com/gpucal/gpucal/bot/slack"
	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/notify"
	"github.com/gpucal/gpucal/notify/email"
	"github.com/gpucal/gpucal/notify/robots"
)

// slackNotices is notify's Slack channel: direct messages through the
// Slack app, with Slack's refusals sorted into "wait" and "give up".
type slackNotices struct{ app *slack.App }

func (c slackNotices) Send(ctx context.Context, user string, m notify.Message) (string, error) {
	return slackSent(c.app.Notify(ctx, user, slack.Notice{Key: m.Key, Event: m.Event, Retry: m.Retry}))
}

// slackSent sorts a Slack send's refusal into what notify acts on: wait
// as long as Slack asked (429), or give up (the person or channel is gone).
func slackSent(id string, err error) (string, error) {
	if wait, ok := slack.RetryAfter(err); ok {
		return "", &notify.RetryAfterError{Wait: wait, Err: err}
	}
	if slack.Permanent(err) {
		return "", &notify.PermanentError{Err: err}
	}
	return id, err
}

// discordNotices is notify's Discord channel: direct messages through the
// Discord app (or its fallback channel), worded in the language and zone
// of the person's Discord identity. Each message carries a nonce from the
// delivery's key that Discord enforces for a few minutes, so a sender that
// dies between Discord's answer and recording it does not post twice when
// the delivery is claimed again (after its two-minute lease).
type discordNotices struct {
	app  *discord.App
	svc  *core.Service
	zone *time.Location
}

func (c discordNotices) Send(ctx context.Context, user string, m notify.Message) (string, error) {
	lang, loc := "en", c.zone
	ids, err := c.svc.ChatUsers(ctx, user)
	if err != nil {
		return "", err
	}
	found := false
	for _, id := range ids {
		if id.Platform == "discord" {
			lang, loc, found = id.Lang, id.Location(c.zone), true
			break
		}
	}
	if !found {
		return "", &notify.PermanentError{Err: fmt.Errorf("%s has never used gpucal in Discord", user)}
	}
	return c.app.Notify(ctx, user, m.Key, bot.Notice(m.Event, lang, loc, c.svc.Now()))
}

// newDispatcher returns the outbox dispatcher over the chat apps that are
// on, or nil when none is: events then stay in the outbox until one is.
func newDispatcher(svc *core.Service, c chat, cfg chatConfig, log *slog.Logger, reg prometheus.Registerer) (*notify.Dispatcher, error) {
	zone := chatZone(cfg)
	channels := map[string]notify.Channel{}
	if c.slack != nil {
		channels["slack"] = slackNotices{c.slack}
	}
	if c.discord != nil {
		channels["discord"] = discordNotices{app: c.discord, svc: svc, zone: zone}
	}
	if c.mailer != nil {
		channels[core.ChannelEmail] = c.mailer
	}
	// Slack allows about one message a second per conversation, Discord
	// five every five seconds per channel.
	pace := map[string]time.Duration{"slack": time.Second, "discord": time.Second}
	groups := map[string]notify.Channel{}
	for _, g := range c.groups {
		groups[g.name] = g.robot
		if p := groupPace(g.kind); p > 0 {
			pace[g.name] = p
		}
	}
	posts, err := channelPosts(svc, c, cfg)
	if err != nil {
		return nil, err
	}
	for name, ch := range posts {
		groups[name] = ch
		pace[name] = time.Second
	}
	if len(channels)+len(groups) == 0 {
		return nil, nil
	}
	return notify.New(svc, notify.Config{
		Channels: channels, Groups: groups, Every: 2 * time.Second, Pace: pace, Logger: log, Metrics: reg,
	}), nil
}

// group is one team chat's robot of GPUCAL_NOTIFY_GROUPS.
type group struct {
	name  string // the kind ("wecom"), then "wecom-2" for a second one
	kind  string
	robot *robots.Robot
}

// slackPosts is a Slack channel that gets the admins' events, worded in
// one language.
type slackPosts struct {
	app           *slack.App
	channel, lang string
}

func (c slackPosts) Send(ctx context.Context, _ string, m notify.Message) (string, error) {
	return slackSent(c.app.Post(ctx, c.channel, slack.Notice{Key: m.Key, Event: m.Event, Retry: m.Retry}, c.lang))
}

// discordPosts is a Discord channel that gets the admins' events.
type discordPosts struct {
	app           *discord.App
	svc           *core.Service
	zone          *time.Location
	channel, lang string
}

func (c discordPosts) Send(ctx context.Context, _ string, m notify.Message) (string, error) {
	id, err := c.app.Post(ctx, c.channel, m.Key, bot.Notice(m.Event, c.lang, c.zone, c.svc.Now()))
	if discord.Permanent(err) {
		return "", &notify.PermanentError{Err: err}
	}
	return id, err
}

// channelPosts builds the channels of --notify-channels, named as given
// ("slack:C0123"); each app named must be on.
func channelPosts(svc *core.Service, c chat, cfg chatConfig) (map[string]notify.Channel, error) {
	out := map[string]notify.Channel{}
	for _, t := range commaSeparated(cfg.channels) {
		platform, id, ok := strings.Cut(t, ":")
		switch {
		case !ok || id == "":
			return nil, usagef("--notify-channels %q: name each as slack:CHANNEL_ID or discord:CHANNEL_ID", t)
		case platform == "slack" && c.slack != nil:
			out[t] = slackPosts{app: c.slack, channel: id, lang: cfg.groupsLang}
		case platform == "discord" && c.discord != nil:
			out[t] = discordPosts{app: c.discord, svc: svc, zone: chatZone(cfg), channel: id, lang: cfg.groupsLang}
		case platform == "slack" || platform == "discord":
			return nil, usagef("--notify-channels names %s, but the %s app is off", t, platform)
		default:
			return nil, usagef("--notify-channels %q: name each as slack:CHANNEL_ID or discord:CHANNEL_ID", t)
		}
	}
	return out, nil
}

// groupPace is the least time between two posts to a group robot of
// kind: WeCom and DingTalk robots take twenty a minute, Feishu's about a
// hundred; 0 for no limit (a webhook).
func groupPace(kind string) time.Duration {
	switch kind {
	case robots.WeCom, robots.DingTalk:
		return 3 * time.Second
	case robots.Feishu:
		return 600 * time.Millisecond
	}
	return 0
}

// groupChannels builds the team chats' robots of GPUCAL_NOTIFY_GROUPS,
// worded in --notify-groups-lang and the chat zone.
func groupChannels(svc *core.Service, cfg chatConfig, zone *time.Location) ([]group, error) {
	if cfg.groups == "" {
		return nil, nil
	}
	configs, err := robots.ParseGroups(cfg.groups)
	if err != nil {
		return nil, usagef("GPUCAL_NOTIFY_GROUPS: %v", err)
	}
	if cfg.groupsLang != "en" && cfg.groupsLang != "zh" {
		return nil, usagef("--notify-groups-lang %q: use en or zh", cfg.groupsLang)
	}
	var out []group
	taken := map[string]bool{}
	for _, rc := range configs {
		name := rc.Kind
		for i := 2; taken[name]; i++ {
			name = fmt.Sprintf("%s-%d", rc.Kind, i)
		}
		taken[name] = true
		rc.Render = func(m notify.Message) string { return bot.Notice(m.Event, cfg.groupsLang, zone, svc.Now()).String() }
		r, err := robots.New(rc)
		if err != nil {
			return nil, usagef("GPUCAL_NOTIFY_GROUPS: %v", err)
		}
		out = append(out, group{name: name, kind: rc.Kind, robot: r})
	}
	return out, nil
}

// newMailer builds the email channel from GPUCAL_SMTP_URL: notices worded
// in the language and zone of the person's chat identity, if any.
func newMailer(svc *core.Service, smtpURL string, zone *time.Location) (*email.Mailer, error) {
	cfg, err := email.ParseURL(smtpURL)
	if err != nil {
		return nil, usagef("GPUCAL_SMTP_URL: %v", err)
	}
	cfg.Address = svc.EmailOf
	cfg.Render = func(ctx context.Context, user string, m notify.Message) (string, string) {
		lang, loc := "en", zone
		if ids, err := svc.ChatUsers(ctx, user); err == nil && len(ids) > 0 {
			lang, loc = ids[0].Lang, ids[0].Location(zone)
		}
		r := bot.Notice(m.Event, lang, loc, svc.Now())
		subject := r.Text
		if r := []rune(subject); len(r) > 70 {
			subject = string(r[:69]) + "…"
		}
		return "gpucal: " + subject, r.String() + "\n\n— gpucal (change what you are told: gpucal notices)\n"
	}
	m, err := email.New(cfg)
	if err != nil {
		return nil, usagef("GPUCAL_SMTP_URL: %v", err)
	}
	return m, nil
}
