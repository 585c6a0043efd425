package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gpucal/gpucal/bot"
	"github.com/gpucal/gpucal/bot/slack"
	"github.com/gpucal/gpucal/core"
)

// chatConfig is how the server joins chat. Secrets come from the
// environment by default so that they stay out of process listings.
type chatConfig struct {
	webURL   string
	zone     string
	slackBot string // xoxb-…
	slackApp string // xapp-…, Socket Mode
	slackSig string // signing secret, HTTP mode
	slackHow string // "socket" or "http"
	admins   string // Slack user IDs and emails, comma-separated
	slackAPI string // the Web API's base URL; "" for Slack's own
}

func (c *chatConfig) flags(fs *flag.FlagSet, e *env) {
	fs.StringVar(&c.webURL, "web-url", e.getenv("GPUCAL_WEB_URL"), "the address people open the calendar at, for links in chat (GPUCAL_WEB_URL)")
	fs.StringVar(&c.zone, "chat-zone", envOr(e, "GPUCAL_CHAT_ZONE", "UTC"), "time zone for chat users whose profile has none, until they set one with /gpu tz (GPUCAL_CHAT_ZONE)")
	fs.StringVar(&c.slackBot, "slack-bot-token", e.getenv("GPUCAL_SLACK_BOT_TOKEN"), "Slack bot token xoxb-…; turns the Slack app on (GPUCAL_SLACK_BOT_TOKEN)")
	fs.StringVar(&c.slackApp, "slack-app-token", e.getenv("GPUCAL_SLACK_APP_TOKEN"), "Slack app-level token xapp-… for Socket Mode (GPUCAL_SLACK_APP_TOKEN)")
	fs.StringVar(&c.slackSig, "slack-signing-secret", e.getenv("GPUCAL_SLACK_SIGNING_SECRET"), "Slack signing secret for HTTP mode (GPUCAL_SLACK_SIGNING_SECRET)")
	fs.StringVar(&c.slackHow, "slack-mode", envOr(e, "GPUCAL_SLACK_MODE", "socket"), "socket (no public URL needed) or http (Slack posts to /slack/…) (GPUCAL_SLACK_MODE)")
	fs.StringVar(&c.slackAPI, "slack-api-url", e.getenv("GPUCAL_SLACK_API_URL"), "Slack Web API base URL, for a proxy (default https://slack.com/api/) (GPUCAL_SLACK_API_URL)")
	fs.StringVar(&c.admins, "slack-admins", e.getenv("GPUCAL_SLACK_ADMINS"), "Slack user IDs or emails of gpucal admins, comma-separated (GPUCAL_SLACK_ADMINS)")
}

// chat is what the chat configuration adds to a server: parts that run
// beside it and routes it serves.
type chat struct {
	parts  []func(context.Context) error
	routes map[string]http.Handler
}

// setupChat builds the chat adapters the configuration asks for.
func setupChat(c chatConfig, svc *core.Service, log *slog.Logger, onChange func()) (chat, error) {
	var out chat
	if c.slackBot == "" {
		return out, nil
	}
	zone, err := time.LoadLocation(c.zone)
	if err != nil {
		return out, usagef("--chat-zone %q: give an IANA zone like Europe/Berlin", c.zone)
	}
	h := bot.NewHandler(svc, bot.Config{WebURL: c.webURL, Logger: log.With("component", "bot"), OnChange: onChange})
	var admins []string
	for _, a := range strings.Split(c.admins, ",") {
		if a = strings.TrimSpace(a); a != "" {
			admins = append(admins, a)
		}
	}
	app, err := slack.New(svc, h, slack.Config{
		BotToken: c.slackBot, AppToken: c.slackApp, SigningSecret: c.slackSig, Admins: admins, Zone: zone, APIURL: c.slackAPI,
		Logger: log.With("component", "slack"),
	})
	if err != nil {
		return out, usagef("%v", err)
	}
	switch c.slackHow {
	case "socket":
		if c.slackApp == "" {
			return out, usagef("Slack Socket Mode needs the app-level token: set GPUCAL_SLACK_APP_TOKEN (xapp-…), or use --slack-mode http")
		}
		out.parts = append(out.parts, app.RunSocketMode)
	case "http":
		handler, err := app.Handler()
		if err != nil {
			return out, usagef("%v: set GPUCAL_SLACK_SIGNING_SECRET", err)
		}
		out.routes = map[string]http.Handler{"/slack/": handler}
	default:
		return out, usagef("--slack-mode %q: use socket or http", c.slackHow)
	}
	log.Info(fmt.Sprintf("Slack app on (%s mode)", c.slackHow))
	return out, nil
}
