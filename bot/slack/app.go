package slack

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/gpucal/gpucal/bot"
	"github.com/gpucal/gpucal/core"
)

// Config is how the app talks to Slack.
type Config struct {
	BotToken      string // xoxb-…, for the Web API
	AppToken      string // xapp-…, for Socket Mode
	SigningSecret string // for HTTP mode: verifies that requests come from Slack
	// Admins are the Slack user IDs (U…) and emails of people who are gpucal
	// admins when they use Slack.
	Admins []string
	// Teams are the workspace (T…) and Enterprise Grid (E…) IDs whose
	// members may use gpucal, besides the app's own workspace (auth.test).
	// People from other organisations (Slack Connect) are refused.
	Teams []string
	// AllowGuests lets multi- and single-channel guests use gpucal; by
	// default only full members may (bots never).
	AllowGuests bool
	// Zone is used for people whose Slack profile has no zone.
	Zone *time.Location
	// APIURL replaces https://slack.com/api/ (tests point it at a fake).
	APIURL string
	// AckWithin is how long a command may take before Slack is answered
	// "working on it" and the reply follows through response_url. Slack
	// gives 3 s; the default leaves room for the network.
	AckWithin time.Duration
	Logger    *slog.Logger
}

// App is the Slack side of gpucal.
type App struct {
	api     *slackapi.Client
	notices *slackapi.Client // without retries: the notifier honours Retry-After itself
	svc     *core.Service
	handler *bot.Handler
	cfg     Config
	log     *slog.Logger

	mu       sync.Mutex
	profiles map[string]cachedProfile // by team/user
	home     []string                 // the app's workspace and enterprise, once auth.test answered
	seen     *seenSet
	work     sync.WaitGroup // replies still being finished
	closing  chan struct{}  // closed by Close: work in flight gives up
	close    sync.Once
}

// cachedProfile is what users.info said about a person.
type cachedProfile struct {
	p       core.ChatProfile
	team    string // the person's home: their enterprise, else their workspace
	refused string // why they may not use gpucal, "" when they may
	at      time.Time
}

// profileTTL is how long a Slack profile is trusted before users.info is
// asked again (names, zones and admin emails change rarely).
const profileTTL = time.Hour

// New returns an App. A bot token is required; Socket Mode also needs the
// app token, HTTP mode the signing secret.
func New(svc *core.Service, h *bot.Handler, cfg Config) (*App, error) {
	if !strings.HasPrefix(cfg.BotToken, "xoxb-") {
		return nil, errors.New("slack: the bot token must start with xoxb-")
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
	opts := []slackapi.Option{slackapi.OptionRetry(2)}
	if cfg.AppToken != "" {
		opts = append(opts, slackapi.OptionAppLevelToken(cfg.AppToken))
	}
	if cfg.APIURL != "" {
		opts = append(opts, slackapi.OptionAPIURL(cfg.APIURL))
	}
	for i, a := range cfg.Admins {
		cfg.Admins[i] = strings.ToLower(strings.TrimSpace(a))
	}
	var noticeOpts []slackapi.Option
	if cfg.APIURL != "" {
		noticeOpts = append(noticeOpts, slackapi.OptionAPIURL(cfg.APIURL))
	}
	return &App{
		api: slackapi.New(cfg.BotToken, opts...), notices: slackapi.New(cfg.BotToken, noticeOpts...), svc: svc, handler: h, cfg: cfg,
		log: cfg.Logger.With("bot", "slack"), profiles: map[string]cachedProfile{}, seen: newSeenSet(10000),
		closing: make(chan struct{}),
	}, nil
}

// Wait waits for replies still being sent through response_url.
func (a *App) Wait() { a.work.Wait() }

// spawn runs f in the background as work Wait waits for.
func (a *App) spawn(f func()) {
	a.work.Add(1)
	go func() {
		defer a.work.Done()
		f()
	}()
}

// Close makes the work in flight give up (it still logs); Wait then
// returns promptly. RunSocketMode closes the app when its ctx ends; in HTTP
// mode the server calls Close when it shuts down.
func (a *App) Close() { a.close.Do(func() { close(a.closing) }) }

// detached returns a context for work that outlives the request that
// started it: it ends after d or when the app is closed.
func (a *App) detached(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), d)
	go func() {
		select {
		case <-a.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// request identifies a Slack person as a gpucal actor, creating their
// gpucal user on first use. People outside the app's organisation, bots
// and (unless allowed) guests are refused with a CodeForbidden error.
func (a *App) request(ctx context.Context, team, user string) (bot.Request, error) {
	if team == "" || user == "" {
		return bot.Request{}, core.Errorf(core.CodeInvalid, "slack: the request names no team or user")
	}
	c, err := a.profile(ctx, team, user)
	if err != nil {
		return bot.Request{}, err
	}
	if c.refused == "" && !a.allowed(ctx, c.team) {
		c.refused = "gpucal here serves the members of this Slack organisation only; ask an admin to link you (gpucal user link)"
	}
	if c.refused != "" {
		return bot.Request{}, core.Errorf(core.CodeForbidden, "%s", c.refused)
	}
	// The home team keys the identity: on Enterprise Grid one person is one
	// gpucal user in every workspace of the organisation.
	id := core.ChatIdentity{Platform: "slack", Team: c.team, ID: user}
	actor, cu, err := a.svc.ChatActor(ctx, id, c.p)
	if err != nil {
		return bot.Request{}, err
	}
	return bot.Request{Actor: actor, Identity: id, Loc: cu.Location(core.ProfileZone(c.p, a.cfg.Zone)), Lang: cu.Lang}, nil
}

// allowed reports whether a person's home team may use gpucal: the app's
// own workspace or enterprise (auth.test, asked once) or one configured.
func (a *App) allowed(ctx context.Context, team string) bool {
	if slices.Contains(a.cfg.Teams, team) {
		return true
	}
	a.mu.Lock()
	home := a.home
	a.mu.Unlock()
	if home == nil {
		r, err := a.api.AuthTestContext(ctx)
		if err != nil {
			a.log.Warn("auth.test failed; only the configured teams may use gpucal until it answers", "err", err)
			return false
		}
		home = []string{r.TeamID}
		if r.EnterpriseID != "" {
			home = append(home, r.EnterpriseID)
		}
		a.mu.Lock()
		a.home = home
		a.mu.Unlock()
	}
	return slices.Contains(home, team)
}

// profile asks Slack who a person is, at most once an hour per person.
func (a *App) profile(ctx context.Context, team, user string) (cachedProfile, error) {
	key := team + "/" + user
	a.mu.Lock()
	c, ok := a.profiles[key]
	a.mu.Unlock()
	if ok && time.Since(c.at) < profileTTL {
		return c, nil
	}
	u, err := a.api.GetUserInfoContext(ctx, user)
	if err != nil {
		return cachedProfile{}, fmt.Errorf("slack: users.info %s: %w", user, err)
	}
	c = cachedProfile{p: core.ChatProfile{Handle: u.Name, Name: u.RealName, Email: u.Profile.Email, Zone: u.TZ}, at: time.Now()}
	c.team = cmp.Or(u.Enterprise.EnterpriseID, u.TeamID, team)
	switch {
	case u.IsBot || u.IsAppUser || u.Deleted:
		c.refused = "gpucal answers people, not bots or deactivated accounts"
	case (u.IsRestricted || u.IsUltraRestricted) && !a.cfg.AllowGuests:
		c.refused = "gpucal here serves full members of the workspace, not guests; ask an admin"
	case u.IsStranger:
		c.refused = "gpucal here serves the members of this Slack organisation only"
	}
	c.p.Admin = c.refused == "" && (slices.Contains(a.cfg.Admins, strings.ToLower(user)) ||
		(c.p.Email != "" && slices.Contains(a.cfg.Admins, strings.ToLower(c.p.Email))))
	a.mu.Lock()
	if len(a.profiles) >= maxProfiles {
		for k, old := range a.profiles {
			if time.Since(old.at) >= profileTTL {
				delete(a.profiles, k)
			}
		}
	}
	a.profiles[key] = c
	a.mu.Unlock()
	return c, nil
}

// maxProfiles is how many profiles the cache holds before it drops stale ones.
const maxProfiles = 1000

// runCommand answers a slash command. When the answer is ready within
// AckWithin, ack gets it; otherwise ack gets "working on it" and the
// answer follows through the command's response_url. It returns once ack
// was called; the channel closes when the answer has been sent.
func (a *App) runCommand(ctx context.Context, sc slackapi.SlashCommand, ack func(*slackapi.WebhookMessage)) <-chan struct{} {
	finished := make(chan struct{})
	done := make(chan bot.Reply, 1)
	go func() { done <- a.answer(ctx, sc) }()
	timer := time.NewTimer(a.cfg.AckWithin)
	defer timer.Stop()
	select {
	case r := <-done:
		ack(message(r, false))
		close(finished)
		return finished
	case <-timer.C:
	}
	ack(&slackapi.WebhookMessage{ResponseType: slackapi.ResponseTypeEphemeral, Text: "Working on it…"})
	a.spawn(func() {
		defer close(finished)
		a.respond(ctx, sc.ResponseURL, <-done, true)
	})
	return finished
}

// answer runs the text of a slash command for the person who sent it.
func (a *App) answer(ctx context.Context, sc slackapi.SlashCommand) bot.Reply {
	req, err := a.request(ctx, sc.TeamID, sc.UserID)
	if err != nil {
		return a.unknownPerson(err)
	}
	return a.handler.Handle(ctx, req, sc.Text)
}

// press runs the command a button carries, as the person who pressed it,
// and replaces the message the button was on with the answer.
func (a *App) press(ctx context.Context, cb slackapi.InteractionCallback) {
	if cb.Type != slackapi.InteractionTypeBlockActions {
		return
	}
	for _, act := range cb.ActionCallback.BlockActions {
		if !strings.HasPrefix(act.ActionID, actionPrefix) {
			continue
		}
		var r bot.Reply
		cmd, ok := command(act.Value)
		req, err := a.request(ctx, cb.Team.ID, cb.User.ID)
		switch {
		case !ok:
			r = bot.Reply{Text: "That button no longer works; run the command again.", Error: true}
		case err != nil:
			r = a.unknownPerson(err)
		default:
			// Pressing the same button twice books once.
			sum := sha256.Sum256([]byte(cb.Container.MessageTs + "\x00" + act.ActionID + "\x00" + act.Value))
			req.Key = "slack:" + hex.EncodeToString(sum[:16])
			r = a.handler.Execute(ctx, req, cmd)
		}
		if cb.Container.Type == "view" || cb.View.Type == slackapi.VTHomeTab {
			// A button on the Home tab has no response_url: the tab itself
			// shows the answer above the bookings it changed.
			if err := a.publishHome(ctx, cb.Team.ID, cb.User.ID, &r); err != nil {
				a.log.Warn("could not publish the App Home", "user", cb.User.ID, "err", err)
			}
			continue
		}
		a.respond(ctx, cb.ResponseURL, r, !r.Error)
	}
}

// respond sends a reply through a response_url.
func (a *App) respond(ctx context.Context, url string, r bot.Reply, replace bool) {
	if url == "" {
		return
	}
	if err := slackapi.PostWebhookContext(ctx, url, message(r, replace)); err != nil {
		a.log.Warn("could not answer through response_url", "err", err)
	}
}

// unknownPerson is the reply when someone may not use gpucal (said), or
// when Slack or the database could not say who is asking (logged, not shown).
func (a *App) unknownPerson(err error) bot.Reply {
	if core.ErrorCode(err) == core.CodeForbidden {
		return bot.Reply{Text: core.ErrorMessage(err) + ".", Error: true}
	}
	a.log.Error("could not identify a Slack user", "err", err)
	return bot.Reply{Text: "gpucal could not look you up just now; try again in a minute.", Error: true}
}

// seenSet remembers recent request IDs so that a retried or replayed
// request is handled once. It forgets the oldest beyond its size.
type seenSet struct {
	mu    sync.Mutex
	max   int
	ids   map[string]struct{}
	order []string
}

func newSeenSet(max int) *seenSet { return &seenSet{max: max, ids: map[string]struct{}{}} }

// first reports whether id is new, and remembers it.
func (s *seenSet) first(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ids[id]; ok {
		return false
	}
	s.ids[id] = struct{}{}
	s.order = append(s.order, id)
	if len(s.order) > s.max {
		delete(s.ids, s.order[0])
		s.order = s.order[1:]
	}
	return true
}
