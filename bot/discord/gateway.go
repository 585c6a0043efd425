package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/bwmarrin/discordgo"
)

// RunGateway registers /gpu, connects to Discord's gateway and answers
// interactions until ctx ends: no public URL is needed. When Discord cannot
// be reached or refuses the token it logs why and tries again, backing off
// up to five minutes, so that a Discord outage never stops the server; once
// connected, discordgo reconnects by itself. It returns once every answer
// in flight is sent.
//
// Discord stops sending interactions over the gateway once the application
// has an Interactions Endpoint URL: use HTTP mode then.
func (a *App) RunGateway(ctx context.Context) error {
	if a.cfg.AppID == "" {
		return errors.New("discord: the gateway needs the application ID, to register /gpu")
	}
	defer a.Wait()
	remove := a.api.AddHandler(func(_ *discordgo.Session, ic *discordgo.InteractionCreate) {
		a.HandleInteraction(ctx, ic)
	})
	defer remove()
	if !a.retry(ctx, "registering /gpu", a.Register) {
		return nil
	}
	if !a.retry(ctx, "connecting to the gateway", func(context.Context) error { return a.api.Open() }) {
		return nil
	}
	a.log.Info("connected to Discord's gateway")
	<-ctx.Done()
	if err := a.api.Close(); err != nil {
		a.log.Warn("closing the Discord gateway", "err", err)
	}
	return nil
}

// HandleInteraction answers an interaction that arrived over the gateway:
// the first response and any later edit go through Discord's REST API. It
// returns when the answer was sent. A redelivered interaction (the same
// ID) is answered once.
func (a *App) HandleInteraction(ctx context.Context, ic *discordgo.InteractionCreate) {
	if ic == nil || ic.Interaction == nil || !a.seen.first(ic.ID) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, lateReply)
	defer cancel()
	i := ic.Interaction
	<-a.interact(ctx, i, func(r *discordgo.InteractionResponse) {
		if err := a.api.InteractionRespond(i, r, discordgo.WithContext(ctx)); err != nil {
			a.log.Warn("could not answer a Discord interaction", "interaction", i.ID, "err", redact(err))
		}
	})
}

// libraryLog makes LogLibraryTo take effect once.
var libraryLog sync.Once

// LogLibraryTo sends discordgo's own log lines (gateway reconnects and the
// like, errors only) to log instead of the standard logger. discordgo has
// one logger for the whole process, a package variable, so main calls this
// once at start-up; later calls do nothing.
func LogLibraryTo(log *slog.Logger) {
	libraryLog.Do(func() {
		log = log.With("bot", "discord", "component", "discordgo")
		discordgo.Logger = func(level, _ int, format string, a ...any) {
			l := slog.LevelError
			switch level {
			case discordgo.LogWarning:
				l = slog.LevelWarn
			case discordgo.LogInformational:
				l = slog.LevelInfo
			case discordgo.LogDebug:
				l = slog.LevelDebug
			}
			log.Log(context.Background(), l, fmt.Sprintf(format, a...))
		}
	})
}
