package discord

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/bwmarrin/discordgo"
)

// maxBody bounds a request from Discord; real ones are a few kilobytes.
const maxBody = 1 << 20

// freshness is how far a request's signed timestamp may be from now.
// Ed25519 proves who signed; the window and the seen IDs stop a captured
// request from being sent again.
const freshness = 5 * time.Minute

// Handler serves HTTP mode: POST /discord/interactions, the Interactions
// Endpoint URL set in the Developer Portal. Every request must carry
// Discord's Ed25519 signature over its timestamp and body, made within
// five minutes; anything else gets 401 and changes nothing. A signed
// interaction whose ID was already handled gets 409 and is not run again.
// PING is answered PONG, as Discord checks when the URL is saved.
func (a *App) Handler() (http.Handler, error) {
	if a.key == nil {
		return nil, errors.New("discord: HTTP mode needs the application's public key")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /discord/interactions", a.serveInteraction)
	return mux, nil
}

func (a *App) serveInteraction(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "request body too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	if err := verify(a.key, r.Header, body, time.Now()); err != nil {
		a.log.Warn("refused a request without a valid Discord signature", "remote", r.RemoteAddr, "err", err)
		http.Error(w, "invalid Discord signature", http.StatusUnauthorized)
		return
	}
	var i discordgo.Interaction
	if err := json.Unmarshal(body, &i); err != nil || i.ID == "" {
		http.Error(w, "not an interaction", http.StatusBadRequest)
		return
	}
	if !a.seen.first(i.ID) {
		a.log.Warn("refused an interaction already handled", "interaction", i.ID, "remote", r.RemoteAddr)
		http.Error(w, "interaction already handled", http.StatusConflict)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), lateReply)
	finished := a.interact(ctx, &i, func(resp *discordgo.InteractionResponse) { writeJSON(w, resp) })
	go func() {
		select {
		case <-finished:
		case <-a.closing:
		}
		cancel()
	}()
}

// verify checks Discord's signature: Ed25519 over the timestamp followed
// by the body, and the timestamp within freshness of now.
func verify(key ed25519.PublicKey, h http.Header, body []byte, now time.Time) error {
	sig, err := hex.DecodeString(h.Get("X-Signature-Ed25519"))
	if err != nil || len(sig) != ed25519.SignatureSize {
		return errors.New("no Ed25519 signature")
	}
	stamp := h.Get("X-Signature-Timestamp")
	secs, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil {
		return errors.New("no timestamp")
	}
	if d := now.Sub(time.Unix(secs, 0)); d > freshness || d < -freshness {
		return errors.New("the timestamp is not within five minutes of now")
	}
	if !ed25519.Verify(key, append([]byte(stamp), body...), sig) {
		return errors.New("the signature does not match")
	}
	return nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		return // Discord went away; nothing to tell it
	}
}
