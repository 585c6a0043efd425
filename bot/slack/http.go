package slack

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
)

// maxBody bounds a request from Slack; real ones are a few kilobytes.
const maxBody = 1 << 20

// lateReply bounds how long a reply may take once Slack was acked.
const lateReply = 30 * time.Second

// Handler serves HTTP mode: /slack/commands, /slack/interactions and
// /slack/events. Every request must carry Slack's signature over its body,
// made within five minutes; anything else gets 401 and changes nothing.
// A retried or replayed request (the same trigger or event ID) is
// acknowledged and not run again.
func (a *App) Handler() (http.Handler, error) {
	if a.cfg.SigningSecret == "" {
		return nil, errors.New("slack: HTTP mode needs the signing secret")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /slack/commands", a.verified(a.serveCommand))
	mux.HandleFunc("POST /slack/interactions", a.verified(a.serveInteraction))
	mux.HandleFunc("POST /slack/events", a.verified(a.serveEvent))
	return mux, nil
}

// verified reads the body and checks its signature before next sees it.
func (a *App) verified(next func(http.ResponseWriter, *http.Request, []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			http.Error(w, "request body too large or unreadable", http.StatusRequestEntityTooLarge)
			return
		}
		v, err := slackapi.NewSecretsVerifier(r.Header, a.cfg.SigningSecret)
		if err == nil {
			_, _ = v.Write(body)
			err = v.Ensure()
		}
		if err != nil {
			a.log.Warn("refused a request without a valid Slack signature", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
			http.Error(w, "invalid Slack signature", http.StatusUnauthorized)
			return
		}
		next(w, r, body)
	}
}

func (a *App) serveCommand(w http.ResponseWriter, r *http.Request, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(body))
	sc, err := slackapi.SlashCommandParse(r)
	if err != nil {
		http.Error(w, "not a slash command", http.StatusBadRequest)
		return
	}
	if sc.TriggerID != "" && !a.seen.first("command:"+sc.TriggerID) {
		w.WriteHeader(http.StatusOK)
		return
	}
	ctx, cancel := a.detached(r.Context(), lateReply)
	finished := a.runCommand(ctx, sc, func(m *slackapi.WebhookMessage) { writeJSON(w, m) })
	go func() {
		<-finished
		cancel()
	}()
}

func (a *App) serveInteraction(w http.ResponseWriter, r *http.Request, body []byte) {
	form, err := url.ParseQuery(string(body))
	var cb slackapi.InteractionCallback
	if err == nil {
		err = json.Unmarshal([]byte(form.Get("payload")), &cb)
	}
	if err != nil {
		http.Error(w, "not an interaction payload", http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusOK)
	if cb.TriggerID != "" && !a.seen.first("interaction:"+cb.TriggerID) {
		return
	}
	ctx, cancel := a.detached(r.Context(), lateReply)
	a.spawn(func() {
		defer cancel()
		a.press(ctx, cb)
	})
}

func (a *App) serveEvent(w http.ResponseWriter, r *http.Request, body []byte) {
	ev, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
	if err != nil {
		http.Error(w, "not an Events API payload", http.StatusBadRequest)
		return
	}
	if ev.Type == slackevents.URLVerification {
		var ch slackevents.ChallengeResponse
		if err := json.Unmarshal(body, &ch); err != nil {
			http.Error(w, "bad challenge", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte(ch.Challenge))
		return
	}
	w.WriteHeader(http.StatusOK)
	var outer struct {
		EventID string `json:"event_id"`
	}
	_ = json.Unmarshal(body, &outer)
	if outer.EventID != "" && !a.seen.first("event:"+outer.EventID) {
		return
	}
	ctx, cancel := a.detached(r.Context(), lateReply)
	a.spawn(func() {
		defer cancel()
		a.event(ctx, ev)
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		return // the client went away; nothing to tell it
	}
}
