package slack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/gpucal/gpucal/bot"
	"github.com/gpucal/gpucal/core"
)

// noticeEvent is the metadata type gpucal tags its notices with, so that
// a retry can find a notice that arrived before its sender died.
const noticeEvent = "gpucal_notice"

// Notice is a message gpucal sends on its own: a notification.
type Notice struct {
	Key   string     // the delivery's dedup key, carried in the message's metadata
	Event core.Event // what happened; worded in each recipient's language and zone
	// Retry: an earlier attempt may have arrived; look for it first.
	Retry bool
}

// Notify sends n as a direct message to every Slack identity of a gpucal
// user and returns the messages' IDs ("channel/ts", comma-separated). With
// n.Retry it first looks through the recent messages of each conversation
// for one carrying n.Key and does not send that one again.
func (a *App) Notify(ctx context.Context, user string, n Notice) (string, error) {
	ids, err := a.svc.ChatUsers(ctx, user)
	if err != nil {
		return "", err
	}
	var sent []string
	for _, id := range ids {
		if id.Platform != "slack" {
			continue
		}
		ch, _, _, err := a.notices.OpenConversationContext(ctx, &slackapi.OpenConversationParameters{Users: []string{id.ID}})
		if err != nil {
			return "", fmt.Errorf("slack: conversations.open with %s: %w", id.ID, err)
		}
		ts, err := a.postNotice(ctx, ch.ID, n, func() bot.Reply { return bot.Notice(n.Event, id.Lang, a.zoneOf(ctx, id), a.svc.Now()) })
		if err != nil {
			return "", fmt.Errorf("slack: direct message to %s: %w", id.ID, err)
		}
		sent = append(sent, ch.ID+"/"+ts)
	}
	if len(sent) == 0 {
		return "", &noReachError{user: user}
	}
	return strings.Join(sent, ","), nil
}

// Post sends n to a channel the bot is in (the admins' alert channel),
// worded in lang and the site's zone, and returns the message's ID
// ("channel/ts"). With n.Retry it first looks for it there, as Notify
// does.
func (a *App) Post(ctx context.Context, channel string, n Notice, lang string) (string, error) {
	ts, err := a.postNotice(ctx, channel, n, func() bot.Reply { return bot.Notice(n.Event, lang, a.cfg.Zone, a.svc.Now()) })
	if err != nil {
		return "", fmt.Errorf("slack: posting to %s: %w", channel, err)
	}
	return channel + "/" + ts, nil
}

// postNotice posts the notice worded by word to a conversation, tagged
// with n.Key, unless n.Retry and the conversation has it already; it
// returns the message's timestamp.
func (a *App) postNotice(ctx context.Context, channel string, n Notice, word func() bot.Reply) (string, error) {
	if n.Retry {
		if ts, found, err := a.findNotice(ctx, channel, n.Key); err != nil || found {
			return ts, err
		}
	}
	r := word()
	_, ts, err := a.notices.PostMessageContext(ctx, channel,
		slackapi.MsgOptionText(clip(escape(r.String()), maxSectionText), false),
		slackapi.MsgOptionBlocks(blocks(r)...),
		slackapi.MsgOptionMetadata(slackapi.SlackMetadata{EventType: noticeEvent, EventPayload: map[string]any{"key": n.Key}}))
	return ts, err
}

// zoneOf is the zone a Slack person's notices are in: the one they chose,
// else their profile's, else the site's.
func (a *App) zoneOf(ctx context.Context, id core.ChatUser) *time.Location {
	if id.Zone != "" {
		return id.Location(a.cfg.Zone)
	}
	c, err := a.profile(ctx, id.Team, id.ID)
	if err != nil {
		return a.cfg.Zone
	}
	return core.ProfileZone(c.p, a.cfg.Zone)
}

// findNotice looks for a notice with key among a conversation's last
// messages.
func (a *App) findNotice(ctx context.Context, channel, key string) (string, bool, error) {
	h, err := a.notices.GetConversationHistoryContext(ctx, &slackapi.GetConversationHistoryParameters{
		ChannelID: channel, Limit: 50, IncludeAllMetadata: true,
	})
	if err != nil {
		return "", false, fmt.Errorf("slack: conversations.history of %s: %w", channel, err)
	}
	for _, m := range h.Messages {
		if m.Metadata.EventType == noticeEvent && m.Metadata.EventPayload["key"] == key {
			return m.Timestamp, true, nil
		}
	}
	return "", false, nil
}

type noReachError struct{ user string }

func (e *noReachError) Error() string { return "slack: " + e.user + " has never used gpucal in Slack" }

// RetryAfter reports the wait Slack asked for when it refused a call (429).
func RetryAfter(err error) (time.Duration, bool) {
	var rl *slackapi.RateLimitedError
	if errors.As(err, &rl) {
		return rl.RetryAfter, true
	}
	return 0, false
}

// Permanent reports whether retrying cannot help: the person cannot be
// reached in Slack at all, or Slack says the account is gone.
func Permanent(err error) bool {
	var nr *noReachError
	if errors.As(err, &nr) {
		return true
	}
	var se slackapi.SlackErrorResponse
	if errors.As(err, &se) {
		switch se.Err {
		// A bad or revoked token is the site's to fix, not the person's: it
		// is retried with backoff rather than given up for every delivery.
		case "user_not_found", "user_disabled", "account_inactive", "cannot_dm_bot",
			// A channel post: the channel is gone, archived, or the bot is not in it.
			"channel_not_found", "not_in_channel", "is_archived":
			return true
		}
	}
	return false
}
