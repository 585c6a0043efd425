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
	"github.com/gpucal/gpucal/bot/discord"
	"github.com/gpucal/gpucal/bot/slack"
	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/notify/email"
)

// chatConfig is how the server joins chat. Secrets come from the
// environment by default so that they stay out of process listings.
type chatConfig struct {
	webURL      string
	zone        string
	slackBot    string // xoxb-…
	slackApp    string // xapp-…, Socket Mode
	slackSig    string // signing secret, HTTP mode
	slackHow    string // "socket" or "http"
	admins      string // Slack user IDs and emails, comma-separated
	slackAPI    string // the Web API's base URL; "" for Slack's own
	slackTeams  string // more workspaces whose members may use gpucal
	slackGuests bool   // guests may use gpucal

	discordToken    string // bot token
	discordAppID    string // application ID, to register /gpu
	discordKey      string // application public key, HTTP mode
	discordHow      string // "gateway" or "http"
	discordAdmins   string // Discord user IDs, comma-separated
	discordGuilds   string // server IDs whose members may use gpucal
	discordFallback string // channel ID for people who refuse DMs
	discordAPI      string // the REST API's base URL; "" for Discord's own

	groups     string // GPUCAL_NOTIFY_GROUPS: team chats' robots for the admins' events
	channels   string // GPUCAL_NOTIFY_CHANNELS: Slack and Discord channels for the admins' events
	smtp       string // GPUCAL_SMTP_URL: notices by email
	groupsLang string
	summaryAt  string // "09:00": the admins' daily summary; "off"
	digestTo   string // "slack:C0123,discord:9876"
	digestAt   string // "mon 09:00", in the chat zone
	digestLang string
	digestFont string
}

func (c *chatConfig) flags(fs *flag.FlagSet, e *env) {
	fs.StringVar(&c.webURL, "web-url", e.getenv("GPUCAL_WEB_URL"), "the address people open the calendar at, for links in chat (GPUCAL_WEB_URL)")
	fs.StringVar(&c.zone, "chat-zone", envOr(e, "GPUCAL_CHAT_ZONE", "UTC"), "time zone for chat users whose profile has none, until they set one with /gpu tz (GPUCAL_CHAT_ZONE)")
	fs.StringVar(&c.slackBot, "slack-bot-token", "", "Slack bot token xoxb-…; turns the Slack app on (better: GPUCAL_SLACK_BOT_TOKEN)")
	fs.StringVar(&c.slackApp, "slack-app-token", "", "Slack app-level token xapp-… for Socket Mode (better: GPUCAL_SLACK_APP_TOKEN)")
	fs.StringVar(&c.slackSig, "slack-signing-secret", "", "Slack signing secret for HTTP mode (better: GPUCAL_SLACK_SIGNING_SECRET)")
	fs.StringVar(&c.slackHow, "slack-mode", envOr(e, "GPUCAL_SLACK_MODE", "socket"), "socket (no public URL needed) or http (Slack posts to /slack/…) (GPUCAL_SLACK_MODE)")
	fs.StringVar(&c.slackAPI, "slack-api-url", e.getenv("GPUCAL_SLACK_API_URL"), "Slack Web API base URL, for a proxy (default https://slack.com/api/) (GPUCAL_SLACK_API_URL)")
	fs.StringVar(&c.admins, "slack-admins", e.getenv("GPUCAL_SLACK_ADMINS"), "Slack user IDs or emails of gpucal admins, comma-separated (GPUCAL_SLACK_ADMINS)")
	fs.StringVar(&c.slackTeams, "slack-teams", e.getenv("GPUCAL_SLACK_TEAMS"), "Slack workspace (T…) or Enterprise Grid (E…) IDs whose members may use gpucal besides the app's own, comma-separated (GPUCAL_SLACK_TEAMS)")
	fs.BoolVar(&c.slackGuests, "slack-allow-guests", e.getenv("GPUCAL_SLACK_ALLOW_GUESTS") == "true", "let Slack guests use gpucal (GPUCAL_SLACK_ALLOW_GUESTS=true)")
	fs.StringVar(&c.discordToken, "discord-token", "", "Discord bot token; turns the Discord app on (better: GPUCAL_DISCORD_TOKEN)")
	fs.StringVar(&c.discordAppID, "discord-app-id", e.getenv("GPUCAL_DISCORD_APP_ID"), "Discord application ID, to register /gpu (GPUCAL_DISCORD_APP_ID)")
	fs.StringVar(&c.discordKey, "discord-public-key", e.getenv("GPUCAL_DISCORD_PUBLIC_KEY"), "Discord application public key, for HTTP mode (GPUCAL_DISCORD_PUBLIC_KEY)")
	fs.StringVar(&c.discordHow, "discord-mode", envOr(e, "GPUCAL_DISCORD_MODE", "gateway"), "gateway (no public URL needed) or http (Discord posts to /discord/interactions) (GPUCAL_DISCORD_MODE)")
	fs.StringVar(&c.discordAdmins, "discord-admins", e.getenv("GPUCAL_DISCORD_ADMINS"), "Discord user IDs of gpucal admins, comma-separated (GPUCAL_DISCORD_ADMINS)")
	fs.StringVar(&c.discordGuilds, "discord-guilds", e.getenv("GPUCAL_DISCORD_GUILDS"), "Discord server IDs whose members may use gpucal, comma-separated; required (GPUCAL_DISCORD_GUILDS)")
	fs.StringVar(&c.discordFallback, "discord-fallback-channel", e.getenv("GPUCAL_DISCORD_FALLBACK_CHANNEL"), "Discord channel ID for messages to people who do not accept direct messages (GPUCAL_DISCORD_FALLBACK_CHANNEL)")
	fs.StringVar(&c.smtp, "smtp-url", "", "send notices by email too: smtp://USER:PASSWORD@HOST:587?from=gpucal@example.org[&tls=starttls|tls|none] (better: GPUCAL_SMTP_URL)")
	fs.StringVar(&c.groups, "notify-groups", "", "team chats that get the admins' events: KIND=URL[|SECRET];… with kind wecom, feishu, dingtalk or webhook (better: GPUCAL_NOTIFY_GROUPS)")
	fs.StringVar(&c.channels, "notify-channels", e.getenv("GPUCAL_NOTIFY_CHANNELS"), "Slack and Discord channels that get the admins' events: slack:C0123,discord:112233… (GPUCAL_NOTIFY_CHANNELS)")
	fs.StringVar(&c.groupsLang, "notify-groups-lang", envOr(e, "GPUCAL_NOTIFY_GROUPS_LANG", "en"), "the language of the team chats' and channels' messages: en or zh (GPUCAL_NOTIFY_GROUPS_LANG)")
	fs.StringVar(&c.summaryAt, "summary-at", envOr(e, "GPUCAL_SUMMARY_AT", "09:00"), "when the admins get the daily summary, in --chat-zone, or off (GPUCAL_SUMMARY_AT)")
	fs.StringVar(&c.digestTo, "digest-to", e.getenv("GPUCAL_DIGEST_TO"), "post the weekly digest to these channels: slack:CHANNEL_ID,discord:CHANNEL_ID (GPUCAL_DIGEST_TO)")
	fs.StringVar(&c.digestAt, "digest-at", envOr(e, "GPUCAL_DIGEST_AT", "mon 09:00"), "when the weekly digest is posted, in --chat-zone (GPUCAL_DIGEST_AT)")
	fs.StringVar(&c.digestLang, "digest-lang", envOr(e, "GPUCAL_DIGEST_LANG", "en"), "the digest's language: en or zh (GPUCAL_DIGEST_LANG)")
	fs.StringVar(&c.digestFont, "digest-font", e.getenv("GPUCAL_DIGEST_FONT"), "a TTF/OTF font for the chart's labels, for Chinese names (GPUCAL_DIGEST_FONT)")
	fs.StringVar(&c.discordAPI, "discord-api-url", e.getenv("GPUCAL_DISCORD_API_URL"), "Discord REST API base URL, for a proxy or a test fake (default https://discord.com/api/v9/) (GPUCAL_DISCORD_API_URL)")
}

// secretsFromEnv fills in the tokens and secrets not given as flags from
// the environment. They are not flag defaults because flag prints defaults
// in its help and usage errors, which end up in logs.
func (c *chatConfig) secretsFromEnv(e *env) {
	for _, s := range []struct {
		v   *string
		env string
	}{
		{&c.slackBot, "GPUCAL_SLACK_BOT_TOKEN"}, {&c.slackApp, "GPUCAL_SLACK_APP_TOKEN"},
		{&c.slackSig, "GPUCAL_SLACK_SIGNING_SECRET"}, {&c.discordToken, "GPUCAL_DISCORD_TOKEN"},
		{&c.groups, "GPUCAL_NOTIFY_GROUPS"}, {&c.smtp, "GPUCAL_SMTP_URL"},
	} {
		if *s.v == "" {
			*s.v = e.getenv(s.env)
		}
	}
}

// chat is what the chat configuration adds to a server: parts that run
// beside it and routes it serves.
type chat struct {
	parts []func(context.Context) error
	// leaderParts run on the leader replica only: scheduled posts, and the
	// Discord gateway (every gateway connection gets every interaction).
	leaderParts []func(context.Context) error
	routes      map[string]http.Handler
	slack       *slack.App    // nil when Slack is off
	discord     *discord.App  // nil when Discord is off
	mailer      *email.Mailer // nil without GPUCAL_SMTP_URL
	groups      []group       // GPUCAL_NOTIFY_GROUPS
	// closers run once the HTTP server and every part stopped, before the
	// database closes: they wait for replies still in flight.
	closers []func()
}

// setupChat builds the chat adapters the configuration asks for.
func setupChat(c chatConfig, svc *core.Service, log *slog.Logger, onChange func()) (chat, error) {
	zone, err := time.LoadLocation(c.zone)
	if err != nil {
		return chat{}, usagef("--chat-zone %q: give an IANA zone like Europe/Berlin", c.zone)
	}
	out := chat{routes: map[string]http.Handler{}}
	if c.smtp != "" {
		if out.mailer, err = newMailer(svc, c.smtp, zone); err != nil {
			return chat{}, err
		}
	}
	if out.groups, err = groupChannels(svc, c, zone); err != nil {
		return chat{}, err
	}
	if err := setupApps(&out, c, svc, zone, log, onChange); err != nil {
		return chat{}, err
	}
	if err := setupDigest(&out, c, svc, log); err != nil {
		return chat{}, err
	}
	return out, nil
}

// setupApps starts the Slack and the Discord app the configuration turns on.
func setupApps(out *chat, c chatConfig, svc *core.Service, zone *time.Location, log *slog.Logger, onChange func()) error {
	if c.slackBot == "" && c.discordToken == "" {
		return nil
	}
	h := bot.NewHandler(svc, bot.Config{WebURL: c.webURL, Logger: log.With("component", "bot"), OnChange: onChange})
	if c.slackBot != "" {
		if err := setupSlack(out, c, svc, h, zone, log); err != nil {
			return err
		}
	}
	if c.discordToken != "" {
		if err := setupDiscord(out, c, svc, h, zone, log); err != nil {
			return err
		}
	}
	return nil
}

// chatZone is the zone for chat people who gave none; UTC when the
// setting does not load (setupChat refuses it with a usage error first).
func chatZone(c chatConfig) *time.Location {
	if loc, err := time.LoadLocation(c.zone); err == nil {
		return loc
	}
	return time.UTC
}

// setupDigest schedules the weekly digest when --digest-to names channels.
func setupDigest(out *chat, c chatConfig, svc *core.Service, log *slog.Logger) error {
	if c.digestTo == "" {
		return nil
	}
	targets, err := parseDigestTargets(c.digestTo)
	if err != nil {
		return usagef("--digest-to: %v", err)
	}
	at, err := parseWeekTime(c.digestAt)
	if err != nil {
		return usagef("--digest-at: %v", err)
	}
	if c.digestLang != "en" && c.digestLang != "zh" {
		return usagef("--digest-lang %q: use en or zh", c.digestLang)
	}
	posters := map[string]filePoster{}
	if out.slack != nil {
		posters["slack"] = out.slack
	}
	if out.discord != nil {
		posters["discord"] = out.discord
	}
	if out.mailer != nil {
		posters["email"] = out.mailer
	}
	for _, g := range out.groups {
		posters["group:"+g.name] = g.robot
	}
	for _, t := range targets {
		if t.platform == "group" && posters["group:"+t.channel] == nil {
			return usagef("--digest-to names group:%s, but GPUCAL_NOTIFY_GROUPS has no group of that name (groups are named by kind: wecom, feishu, dingtalk, webhook; a second of a kind wecom-2)", t.channel)
		}
		if t.platform != "group" && posters[t.platform] == nil {
			why := map[string]string{"slack": "the Slack app is off (GPUCAL_SLACK_BOT_TOKEN)", "discord": "the Discord app is off (GPUCAL_DISCORD_TOKEN)",
				"email": "email is off (GPUCAL_SMTP_URL)"}[t.platform]
			return usagef("--digest-to names %s:%s, but %s", t.platform, t.channel, why)
		}
	}
	jobs, err := newCalendarJobs(chatZone(c))
	if err != nil {
		return err
	}
	job := digestJob{svc: svc, targets: targets, posters: posters, lang: c.digestLang, font: c.digestFont, zone: chatZone(c), log: log.With("component", "digest")}
	next, err := jobs.Weekly("weekly-digest", at, job.run)
	if err != nil {
		return err
	}
	out.leaderParts = append(out.leaderParts, jobs.Run)
	log.Info("the weekly digest is scheduled", "at", at.String(), "zone", chatZone(c).String(), "next", next.UTC().Format(time.RFC3339))
	return nil
}

// commaSeparated splits a comma-separated setting.
func commaSeparated(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// setupSlack adds the Slack app.
func setupSlack(out *chat, c chatConfig, svc *core.Service, h *bot.Handler, zone *time.Location, log *slog.Logger) error {
	app, err := slack.New(svc, h, slack.Config{
		BotToken: c.slackBot, AppToken: c.slackApp, SigningSecret: c.slackSig, Admins: commaSeparated(c.admins), Zone: zone, APIURL: c.slackAPI,
		Teams: commaSeparated(c.slackTeams), AllowGuests: c.slackGuests, Logger: log.With("component", "slack"),
	})
	if err != nil {
		return usagef("%v", err)
	}
	switch c.slackHow {
	case "socket":
		if c.slackApp == "" {
			return usagef("Slack Socket Mode needs the app-level token: set GPUCAL_SLACK_APP_TOKEN (xapp-…), or use --slack-mode http")
		}
		out.parts = append(out.parts, app.RunSocketMode)
	case "http":
		handler, err := app.Handler()
		if err != nil {
			return usagef("%v: set GPUCAL_SLACK_SIGNING_SECRET", err)
		}
		out.routes["/slack/"] = handler
		// Replies still being sent when the server stops give up, and the
		// server waits for them after its HTTP server stopped and before
		// it closes the database.
		out.closers = append(out.closers, closeAndWait(app))
	default:
		return usagef("--slack-mode %q: use socket or http", c.slackHow)
	}
	out.slack = app
	log.Info(fmt.Sprintf("Slack app on (%s mode)", c.slackHow))
	return nil
}

// closeAndWait is a closer for a chat app: its replies in flight give up,
// and the server waits for them.
func closeAndWait(app interface {
	Close()
	Wait()
}) func() {
	return func() {
		app.Close()
		app.Wait()
	}
}

// setupDiscord adds the Discord app. The API URL is applied by the app's
// own HTTP client; discordgo's endpoint variables are never changed. Its
// one package-level setting, the logger, is set here, once.
func setupDiscord(out *chat, c chatConfig, svc *core.Service, h *bot.Handler, zone *time.Location, log *slog.Logger) error {
	if c.discordAppID == "" {
		return usagef("the Discord app needs its application ID to register /gpu: set GPUCAL_DISCORD_APP_ID")
	}
	if c.discordGuilds == "" {
		return usagef("name the Discord servers whose members may use gpucal: set GPUCAL_DISCORD_GUILDS (anyone can invite a bot to a server)")
	}
	app, err := discord.New(svc, h, discord.Config{
		Token: c.discordToken, AppID: c.discordAppID, PublicKey: c.discordKey, Admins: commaSeparated(c.discordAdmins), Zone: zone,
		Guilds:          commaSeparated(c.discordGuilds),
		FallbackChannel: c.discordFallback, APIURL: c.discordAPI, Logger: log.With("component", "discord"),
	})
	if err != nil {
		return usagef("%v", err)
	}
	discord.LogLibraryTo(log)
	switch c.discordHow {
	case "gateway":
		out.leaderParts = append(out.leaderParts, app.RunGateway)
	case "http":
		handler, err := app.Handler()
		if err != nil {
			return usagef("%v: set GPUCAL_DISCORD_PUBLIC_KEY", err)
		}
		out.routes["/discord/"] = handler
		out.parts = append(out.parts, app.RunRegistration)
		out.closers = append(out.closers, closeAndWait(app))
	default:
		return usagef("--discord-mode %q: use gateway or http", c.discordHow)
	}
	out.discord = app
	log.Info(fmt.Sprintf("Discord app on (%s mode)", c.discordHow))
	return nil
}
