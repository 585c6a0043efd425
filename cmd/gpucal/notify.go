package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpucal/gpucal/bot"
	"github.com/gpucal/gpucal/bot/discord"
	"github.com/gpucal/gpucal/bot/slack"
	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/notify"
)

// slackNotices is notify's Slack channel: direct messages through the
// Slack app, with Slack's refusals sorted into "wait" and "give up".
type slackNotices struct{ app *slack.App }

func (c slackNotices) Send(ctx context.Context, user string, m notify.Message) (string, error) {
	id, err := c.app.Notify(ctx, user, slack.Notice{Key: m.Key, Event: m.Event, Retry: m.Retry})
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
// of the person's Discord identity. discordgo v0.28.1 cannot send a nonce,
// so a sender that dies between Discord's answer and recording it may
// send that one message twice; the dedup key still keeps every other
// repeat out.
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
	if err := c.app.DM(ctx, user, bot.Notice(m.Event, lang, loc, c.svc.Now())); err != nil {
		return "", err
	}
	return "dm", nil
}

// newDispatcher returns the outbox dispatcher over the chat apps that are
// on, or nil when none is: events then stay in the outbox until one is.
func newDispatcher(svc *core.Service, c chat, zone *time.Location, log *slog.Logger, reg prometheus.Registerer) *notify.Dispatcher {
	channels := map[string]notify.Channel{}
	if c.slack != nil {
		channels["slack"] = slackNotices{c.slack}
	}
	if c.discord != nil {
		channels["discord"] = discordNotices{app: c.discord, svc: svc, zone: zone}
	}
	if len(channels) == 0 {
		return nil
	}
	return notify.New(svc, notify.Config{
		Channels: channels,
		Every:    2 * time.Second,
		// Slack allows about one message a second per conversation; Discord
		// five every five seconds per channel.
		Pace:    map[string]time.Duration{"slack": time.Second, "discord": time.Second},
		Logger:  log,
		Metrics: reg,
	})
}
