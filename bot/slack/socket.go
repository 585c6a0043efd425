package slack

import (
	"context"
	"errors"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// RunSocketMode connects to Slack over Socket Mode and answers until ctx
// ends: no public URL is needed. When Slack cannot be reached or refuses
// the token it logs why and tries again, backing off up to five minutes,
// so that a Slack outage never stops the server. It returns once every
// reply in flight is sent.
func (a *App) RunSocketMode(ctx context.Context) error {
	if a.cfg.AppToken == "" {
		return errors.New("slack: Socket Mode needs the app-level token (xapp-…)")
	}
	defer a.Wait()
	defer a.Close()
	for wait := 5 * time.Second; ; wait = min(2*wait, 5*time.Minute) {
		err := a.socketOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		a.log.Error("the Slack socket closed; connecting again", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// socketOnce runs one Socket Mode client until it fails or ctx ends.
// Work it started runs on under ctx: a reconnection does not drop replies.
func (a *App) socketOnce(ctx context.Context) error {
	sm := socketmode.New(a.api)
	conn, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.consume(conn, ctx, sm)
	}()
	err := sm.RunContext(conn)
	cancel()
	<-done
	return err
}

// consume handles what arrives over the socket while conn lasts. Every
// envelope is acked at once or, for slash commands, with the reply when it
// is ready in time; the work runs under ctx.
func (a *App) consume(conn, ctx context.Context, sm *socketmode.Client) {
	for {
		var evt socketmode.Event
		select {
		case <-conn.Done():
			return
		case evt = <-sm.Events:
		}
		switch evt.Type {
		case socketmode.EventTypeConnected:
			a.log.Info("connected to Slack over Socket Mode")
		case socketmode.EventTypeInvalidAuth:
			a.log.Error("Slack refused the app token")
		case socketmode.EventTypeConnectionError:
			a.log.Warn("the Slack socket failed; reconnecting", "err", evt.Data)
		case socketmode.EventTypeSlashCommand:
			sc, ok := evt.Data.(slackapi.SlashCommand)
			if !ok || evt.Request == nil {
				continue
			}
			req := *evt.Request
			a.spawn(func() {
				<-a.runCommand(ctx, sc, func(m *slackapi.WebhookMessage) {
					if err := sm.AckCtx(conn, req.EnvelopeID, m); err != nil {
						a.log.Warn("could not ack a slash command", "err", err)
					}
				})
			})
		case socketmode.EventTypeInteractive:
			cb, ok := evt.Data.(slackapi.InteractionCallback)
			if evt.Request != nil {
				a.ack(conn, sm, evt.Request.EnvelopeID)
			}
			if ok {
				a.spawn(func() { a.press(ctx, cb) })
			}
		case socketmode.EventTypeEventsAPI:
			ev, ok := evt.Data.(slackevents.EventsAPIEvent)
			if evt.Request != nil {
				a.ack(conn, sm, evt.Request.EnvelopeID)
			}
			if ok {
				a.spawn(func() { a.event(ctx, ev) })
			}
		}
	}
}

// ack acknowledges an envelope with no payload.
func (a *App) ack(conn context.Context, sm *socketmode.Client, envelope string) {
	if err := sm.AckCtx(conn, envelope, nil); err != nil {
		a.log.Warn("could not ack a Socket Mode envelope", "err", err)
	}
}

// event handles an Events API event: the App Home tab opening.
func (a *App) event(ctx context.Context, ev slackevents.EventsAPIEvent) {
	if ev.Type != slackevents.CallbackEvent {
		return
	}
	if home, ok := ev.InnerEvent.Data.(*slackevents.AppHomeOpenedEvent); ok && home.Tab == "home" {
		if err := a.PublishHome(ctx, ev.TeamID, home.User); err != nil {
			a.log.Warn("could not publish the App Home", "user", home.User, "err", err)
		}
	}
}
