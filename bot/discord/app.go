package discord

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/gpucal/gpucal/bot"
	"github.com/gpucal/gpucal/core"
)

// Config is how the app talks to Discord.
type Config struct {
	Token string // the bot token; "Bot " is prepended when missing
	AppID string // the application ID, for registering /gpu
	// PublicKey is the application's public key (64 hex digits), for HTTP
	// mode: it verifies that interactions come from Discord.
	PublicKey string
	// Admins are the Discord user IDs of people who are gpucal admins.
	Admins []string
	// Guilds are the IDs of the Discord servers whose members may use
	// gpucal. Anyone can invite a bot to a server: interactions from any
	// other server are refused, and direct messages only from people who
	// used gpucal in one of these (or whom an admin linked).
	Guilds []string
	// Zone is where times are read and shown until a person sets theirs
	// with /gpu tz: Discord tells nobody's time zone.
	Zone *time.Location
	// FallbackChannel is a channel ID where a direct message goes, with a
	// mention, when the person does not accept direct messages. "" for none.
	FallbackChannel string
	// APIURL replaces https://discord.com/api/v9/ (tests point it at a
	// fake, sites at a proxy). It is applied by this app's HTTP client, not
	// by changing discordgo's endpoint variables.
	APIURL string
	// AckWithin is how long a command may take before Discord is answered
	// "thinking…" (a deferred response) and the answer is edited in when
	// ready. Discord gives 3 s; the default leaves room for the network.
	AckWithin time.Duration
	Logger    *slog.Logger
}

// App is the Discord side of gpucal.
type App struct {
	api     *discordgo.Session
	svc     *core.Service
	handler *bot.Handler
	cfg     Config
	key     ed25519.PublicKey // nil without a valid Config.PublicKey
	log     *slog.Logger

	buttons *buttonStore
	seen    *seenSet       // interaction IDs already handled
	work    sync.WaitGroup // answers still being finished
	closing chan struct{}  // closed by Close: answers over HTTP in flight give up
	close   sync.Once
}

// lateReply bounds how long an answer may take once Discord was told to
// wait; the interaction token itself is valid for 15 minutes.
const lateReply = 2 * time.Minute

// New returns an App. A bot token is required; registering /gpu needs the
// application ID, HTTP mode the public key.
func New(svc *core.Service, h *bot.Handler, cfg Config) (*App, error) {
	cfg.Token = strings.TrimSpace(cfg.Token)
	if cfg.Token == "" {
		return nil, errors.New("discord: a bot token is required")
	}
	if !strings.HasPrefix(cfg.Token, "Bot ") {
		cfg.Token = "Bot " + cfg.Token
	}
	if cfg.Zone == nil {
		cfg.Zone = time.UTC
	}
	if cfg.AckWithin <= 0 {
		cfg.AckWithin = 2500 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Admins = slices.Clone(cfg.Admins)
	for i, a := range cfg.Admins {
		cfg.Admins[i] = strings.TrimSpace(a)
	}
	a := &App{svc: svc, handler: h, cfg: cfg, log: cfg.Logger.With("bot", "discord"),
		buttons: newButtonStore(buttonTTL, 50000), seen: newSeenSet(freshness+time.Minute, 100000), closing: make(chan struct{})}
	if cfg.PublicKey != "" {
		k, err := hex.DecodeString(strings.TrimSpace(cfg.PublicKey))
		if err != nil || len(k) != ed25519.PublicKeySize {
			return nil, errors.New("discord: the public key must be 64 hex digits, as the Developer Portal shows it")
		}
		a.key = k
	}
	s, err := discordgo.New(cfg.Token)
	if err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	s.StateEnabled = false
	s.Identify.Intents = discordgo.IntentsNone // interactions arrive without any intent
	s.Client = &http.Client{Timeout: 20 * time.Second}
	if cfg.APIURL != "" {
		to, err := url.Parse(strings.TrimSuffix(cfg.APIURL, "/") + "/")
		if err != nil || to.Host == "" || (to.Scheme != "http" && to.Scheme != "https") {
			return nil, fmt.Errorf("discord: the API URL %q is not an http(s) URL", cfg.APIURL)
		}
		s.Client.Transport = rewrite{to: to, base: http.DefaultTransport}
	}
	a.api = s
	return a, nil
}

// Wait waits for answers still being edited in after a deferred response.
func (a *App) Wait() { a.work.Wait() }

// Close makes answers still being finished for HTTP interactions give up
// (they outlive their requests); Wait then returns promptly. The server
// calls it when it shuts down; the gateway's work ends with RunGateway's ctx.
func (a *App) Close() { a.close.Do(func() { close(a.closing) }) }

// rewrite sends discordgo's requests for https://discord.com/api/v9/… to
// another base URL. discordgo builds its URLs from package variables; a
// transport leaves them alone, so two apps (or tests) never race on them.
type rewrite struct {
	to   *url.URL
	base http.RoundTripper
}

func (rw rewrite) RoundTrip(r *http.Request) (*http.Response, error) {
	rest, ok := strings.CutPrefix(r.URL.String(), discordgo.EndpointAPI)
	if !ok {
		return rw.base.RoundTrip(r)
	}
	u, err := url.Parse(rw.to.String() + rest)
	if err != nil {
		return nil, fmt.Errorf("discord: rewriting %s: %w", r.URL, err)
	}
	r = r.Clone(r.Context())
	r.URL, r.Host = u, u.Host
	return rw.base.RoundTrip(r)
}

// request identifies the person behind an interaction as a gpucal actor,
// creating their gpucal user on first use. Discord sends the person with
// every interaction, so no profile lookup is needed.
func (a *App) request(ctx context.Context, i *discordgo.Interaction) (bot.Request, error) {
	u := i.User
	if i.Member != nil && i.Member.User != nil {
		u = i.Member.User
	}
	if u == nil || u.ID == "" {
		return bot.Request{}, core.Errorf(core.CodeInvalid, "discord: the interaction names no user")
	}
	id := identity(u.ID)
	switch {
	case i.GuildID != "" && !slices.Contains(a.cfg.Guilds, i.GuildID):
		return bot.Request{}, core.Errorf(core.CodeForbidden, "%s", say(lang(i),
			"gpucal here serves the members of its own Discord servers only",
			"此 gpucal 只为其所属 Discord 服务器的成员服务"))
	case i.GuildID == "":
		known, err := a.svc.ChatKnown(ctx, id)
		if err != nil {
			return bot.Request{}, err
		}
		if !known {
			return bot.Request{}, core.Errorf(core.CodeForbidden, "%s", say(lang(i),
				"use /gpu in your team's Discord server first; then it works here too",
				"请先在团队的 Discord 服务器里使用 /gpu，之后私信中也可以使用"))
		}
	}
	p := core.ChatProfile{Handle: u.Username, Name: u.GlobalName, Admin: slices.Contains(a.cfg.Admins, u.ID)}
	if p.Name == "" {
		p.Name = u.Username
	}
	actor, cu, err := a.svc.ChatActor(ctx, id, p)
	if err != nil {
		return bot.Request{}, err
	}
	return bot.Request{Actor: actor, Identity: id, Loc: cu.Location(a.cfg.Zone), Lang: cu.Lang}, nil
}

// identity is a Discord person as gpucal stores them. Discord user IDs
// are global, so the team is always "discord": one person is one gpucal
// user in every server and in direct messages (a button on a notification
// DM acts as the person who owns the job). The guild does not matter.
func identity(user string) core.ChatIdentity {
	return core.ChatIdentity{Platform: "discord", Team: discordTeam, ID: user}
}

// discordTeam is the team of every Discord identity.
const discordTeam = "discord"

// interact answers one interaction. ack sends the first response (over
// REST for the gateway, as the HTTP reply for the endpoint). When the
// answer is ready within AckWithin ack carries it; otherwise ack says
// "thinking…" and the answer is edited in when ready. interact returns
// once ack was called; the channel closes when the answer was sent.
func (a *App) interact(ctx context.Context, i *discordgo.Interaction, ack func(*discordgo.InteractionResponse)) <-chan struct{} {
	finished := make(chan struct{})
	if i.AppID == "" {
		i.AppID = a.cfg.AppID
	}
	var (
		work  func() bot.Reply
		first func(bot.Reply) *discordgo.InteractionResponse
		later discordgo.InteractionResponseType
	)
	switch i.Type {
	case discordgo.InteractionPing:
		ack(&discordgo.InteractionResponse{Type: discordgo.InteractionResponsePong})
		close(finished)
		return finished
	case discordgo.InteractionApplicationCommand:
		work = func() bot.Reply { return a.command(ctx, i) }
		first = func(r bot.Reply) *discordgo.InteractionResponse {
			return &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource, Data: a.response(r)}
		}
		later = discordgo.InteractionResponseDeferredChannelMessageWithSource
	case discordgo.InteractionMessageComponent:
		// A press replaces the message its button was on, as in Slack; a
		// refusal is a new message so that the buttons stay.
		work = func() bot.Reply { return a.press(ctx, i) }
		first = func(r bot.Reply) *discordgo.InteractionResponse {
			if r.Error {
				return &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource, Data: a.response(r)}
			}
			d := a.response(r)
			d.Flags = 0 // an update keeps the message's own flags (a DM's message is not ephemeral)
			return &discordgo.InteractionResponse{Type: discordgo.InteractionResponseUpdateMessage, Data: d}
		}
		later = discordgo.InteractionResponseDeferredMessageUpdate
	default:
		r := bot.Reply{Text: say(lang(i), "gpucal does not answer this kind of interaction.", "gpucal 不处理这种交互。"), Error: true}
		ack(&discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource, Data: a.response(r)})
		close(finished)
		return finished
	}

	done := make(chan bot.Reply, 1)
	go func() { done <- a.safely(i, work) }()
	timer := time.NewTimer(a.cfg.AckWithin)
	defer timer.Stop()
	select {
	case r := <-done:
		ack(first(r))
		close(finished)
		return finished
	case <-timer.C:
	}
	deferred := &discordgo.InteractionResponse{Type: later}
	if later == discordgo.InteractionResponseDeferredChannelMessageWithSource {
		deferred.Data = &discordgo.InteractionResponseData{Flags: discordgo.MessageFlagsEphemeral}
	}
	ack(deferred)
	a.work.Add(1)
	go func() {
		defer a.work.Done()
		defer close(finished)
		a.edit(ctx, i, <-done)
	}()
	return finished
}

// safely runs work; a panic becomes a polite reply and a log line, never
// a stack trace in the chat.
func (a *App) safely(i *discordgo.Interaction, work func() bot.Reply) (r bot.Reply) {
	defer func() {
		if p := recover(); p != nil {
			a.log.Error("a Discord interaction panicked", "interaction", i.ID, "panic", fmt.Sprint(p))
			r = bot.Reply{Text: say(lang(i), "Something went wrong on the server; it was logged. Try again in a minute.",
				"服务器出了点问题，已记录。请稍后再试。"), Error: true, Lang: lang(i)}
		}
	}()
	return work()
}

// edit puts a late answer in place of "thinking…".
func (a *App) edit(ctx context.Context, i *discordgo.Interaction, r bot.Reply) {
	d := a.response(r)
	if _, err := a.api.InteractionResponseEdit(i, &discordgo.WebhookEdit{
		Content: &d.Content, Embeds: &d.Embeds, Components: &d.Components, AllowedMentions: d.AllowedMentions,
	}, discordgo.WithContext(ctx)); err != nil {
		a.log.Warn("could not edit a deferred Discord response", "interaction", i.ID, "err", redact(err))
	}
}

// command runs /gpu for the person who sent it. Free text (/gpu ask) is
// read in its own language; a structured subcommand is made into the same
// text and answered in the language of the person's Discord client.
func (a *App) command(ctx context.Context, i *discordgo.Interaction) bot.Reply {
	data, ok := i.Data.(discordgo.ApplicationCommandInteractionData)
	if !ok || data.Name != commandName {
		return bot.Reply{Text: say(lang(i), "gpucal knows only /gpu.", "gpucal 只认识 /gpu。"), Error: true}
	}
	req, err := a.request(ctx, i)
	if err != nil {
		return a.unknownPerson(i, err)
	}
	text, free := commandText(data.Options)
	if free {
		return a.handler.Handle(ctx, req, text)
	}
	cmd, err := bot.Parse(text, a.svc.Now(), req.Loc)
	if err != nil {
		return bot.Reply{Text: err.Error(), Error: true, Lang: "en"}
	}
	cmd.Lang = lang(i)
	return a.handler.Execute(ctx, req, cmd)
}

// press runs the command a button carries, as the person who pressed it.
func (a *App) press(ctx context.Context, i *discordgo.Interaction) bot.Reply {
	data, _ := i.Data.(discordgo.MessageComponentInteractionData)
	cmd, ok := a.buttons.command(data.CustomID)
	if !ok {
		return bot.Reply{Text: say(lang(i), "That button no longer works; run the command again.", "这个按钮已失效，请重新输入命令。"), Error: true}
	}
	req, err := a.request(ctx, i)
	if err != nil {
		return a.unknownPerson(i, err)
	}
	// Pressing the same button twice books once.
	msg := i.ID
	if i.Message != nil && i.Message.ID != "" {
		msg = i.Message.ID
	}
	sum := sha256.Sum256([]byte(msg + "\x00" + data.CustomID))
	req.Key = "discord:" + hex.EncodeToString(sum[:16])
	return a.handler.Execute(ctx, req, cmd)
}

// unknownPerson is the reply when the database could not say who is
// asking; the cause is logged, not shown.
func (a *App) unknownPerson(i *discordgo.Interaction, err error) bot.Reply {
	if core.ErrorCode(err) == core.CodeForbidden {
		return bot.Reply{Text: core.ErrorMessage(err) + say(lang(i), ".", "。"), Error: true}
	}
	a.log.Error("could not identify a Discord user", "interaction", i.ID, "err", err)
	return bot.Reply{Text: say(lang(i), "gpucal could not look you up just now; try again in a minute.",
		"gpucal 暂时查不到你的账号，请稍后再试。"), Error: true}
}

// redact drops the URL from a failed request's error: the URLs of
// interaction responses carry the interaction's token.
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// lang is the language of the person's Discord client: "zh" for Chinese.
func lang(i *discordgo.Interaction) string {
	if strings.HasPrefix(string(i.Locale), "zh") {
		return "zh"
	}
	return "en"
}

func say(lang, en, zh string) string {
	if lang == "zh" {
		return zh
	}
	return en
}

// seenSet remembers interaction IDs for a while so that a replayed or
// redelivered interaction is handled once. Beyond the signature's
// freshness window a replay is refused anyway, so IDs are forgotten after
// ttl, and the oldest beyond max.
type seenSet struct {
	mu    sync.Mutex
	ttl   time.Duration
	max   int
	ids   map[string]struct{}
	order []seenID
}

type seenID struct {
	id string
	at time.Time
}

func newSeenSet(ttl time.Duration, max int) *seenSet {
	return &seenSet{ttl: ttl, max: max, ids: map[string]struct{}{}}
}

// first reports whether id is new, and remembers it.
func (s *seenSet) first(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for len(s.order) > 0 && (len(s.order) >= s.max || now.Sub(s.order[0].at) > s.ttl) {
		delete(s.ids, s.order[0].id)
		s.order = s.order[1:]
	}
	if _, ok := s.ids[id]; ok {
		return false
	}
	s.ids[id] = struct{}{}
	s.order = append(s.order, seenID{id: id, at: now})
	return true
}
