package discord

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/bwmarrin/discordgo"

	"github.com/gpucal/gpucal/bot"
)

// DM sends a reply as a direct message to every Discord identity of a
// gpucal user. Someone who does not accept direct messages from the bot
// (Discord's error 50007: DMs from server members turned off, or no
// server in common) gets it in the fallback channel, with a mention. DM
// tries every identity and fails only when none was reached.
func (a *App) DM(ctx context.Context, user string, r bot.Reply) error {
	_, err := a.Notify(ctx, user, "", r)
	return err
}

// Notify is DM for a notice from the outbox: key is the delivery's key,
// from which each message gets a nonce that Discord enforces, so that a
// notice sent again within a few minutes (its sender died before it
// recorded Discord's answer) returns the first message rather than
// posting a second. It returns the ID of the (first) message sent.
func (a *App) Notify(ctx context.Context, user, key string, r bot.Reply) (string, error) {
	ids, err := a.svc.ChatUsers(ctx, user)
	if err != nil {
		return "", err
	}
	var first error
	msgID := ""
	seen := map[string]bool{} // one person may be linked once per guild
	for _, id := range ids {
		if id.Platform != "discord" || seen[id.ID] {
			continue
		}
		seen[id.ID] = true
		n := nonce(key, id.ID)
		sent, err := a.direct(ctx, id.ID, r, n)
		if refused(err) {
			sent, err = a.fallback(ctx, id.ID, r, n)
		}
		if err != nil && first == nil {
			first = err
		}
		if err == nil && msgID == "" {
			msgID = sent
		}
	}
	switch {
	case msgID == "" && first == nil:
		return "", fmt.Errorf("discord: %s has never used gpucal in Discord", user)
	case msgID != "" && first != nil:
		// Reached: a retry would send it again to those who have it.
		a.log.Warn("a direct message reached only some of a user's Discord identities", "user", user, "err", first)
		return msgID, nil
	}
	return msgID, first
}

// Post sends r to a channel the bot can write in (the admins' alert
// channel), with a nonce from key as Notify does, and returns the
// message's ID.
func (a *App) Post(ctx context.Context, channelID, key string, r bot.Reply) (string, error) {
	m := a.render(r)
	n := nonce(key, channelID)
	id, err := a.post(ctx, channelID, outgoing{Content: m.Content, Embeds: m.Embeds, Components: m.Components,
		AllowedMentions: noMentions(), Nonce: n, EnforceNonce: n != ""})
	if err != nil {
		return "", fmt.Errorf("discord: posting to %s: %w", channelID, err)
	}
	return id, nil
}

// nonce is the nonce of a notice's message to one Discord user: at most
// 25 characters, as Discord allows; "" (none) without a key.
func nonce(key, userID string) string {
	if key == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(key + "\x00" + userID))
	return base64.RawURLEncoding.EncodeToString(sum[:])[:25]
}

// direct opens the direct-message channel with a Discord user and posts r.
func (a *App) direct(ctx context.Context, userID string, r bot.Reply, nonce string) (string, error) {
	ch, err := a.api.UserChannelCreate(userID, discordgo.WithContext(ctx))
	id := ""
	if err == nil {
		m := a.render(r)
		id, err = a.post(ctx, ch.ID, outgoing{Content: m.Content, Embeds: m.Embeds, Components: m.Components,
			AllowedMentions: noMentions(), Nonce: nonce, EnforceNonce: nonce != ""})
	}
	if err != nil {
		return "", fmt.Errorf("discord: direct message to %s: %w", userID, err)
	}
	return id, nil
}

// fallback posts r in the fallback channel, mentioning the user (and
// nobody else).
func (a *App) fallback(ctx context.Context, userID string, r bot.Reply, nonce string) (string, error) {
	if a.cfg.FallbackChannel == "" {
		return "", fmt.Errorf("discord: %s does not accept direct messages, and no fallback channel is configured", userID)
	}
	m := a.render(r)
	id, err := a.post(ctx, a.cfg.FallbackChannel, outgoing{
		Content:         clip("<@"+userID+"> "+m.Content, maxContent),
		Embeds:          m.Embeds,
		Components:      m.Components,
		AllowedMentions: &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}, Users: []string{userID}},
		Nonce:           nonce, EnforceNonce: nonce != "",
	})
	if err != nil {
		return "", fmt.Errorf("discord: %s does not accept direct messages, and the fallback channel %s failed: %w",
			userID, a.cfg.FallbackChannel, err)
	}
	return id, nil
}

// outgoing is a message as Discord's create-message endpoint takes it,
// with the nonce fields discordgo v0.28.1's MessageSend lacks.
type outgoing struct {
	Content         string                            `json:"content,omitempty"`
	Embeds          []*discordgo.MessageEmbed         `json:"embeds"`
	Components      []discordgo.MessageComponent      `json:"components"`
	AllowedMentions *discordgo.MessageAllowedMentions `json:"allowed_mentions,omitempty"`
	Nonce           string                            `json:"nonce,omitempty"`
	EnforceNonce    bool                              `json:"enforce_nonce,omitempty"`
}

// post creates a message in a channel and returns its ID.
func (a *App) post(ctx context.Context, channelID string, m outgoing) (string, error) {
	endpoint := discordgo.EndpointChannelMessages(channelID)
	body, err := a.api.RequestWithBucketID(http.MethodPost, endpoint, m, endpoint, discordgo.WithContext(ctx))
	if err != nil {
		return "", err
	}
	var sent discordgo.Message
	if err := json.Unmarshal(body, &sent); err != nil {
		return "", fmt.Errorf("reading Discord's answer: %w", err)
	}
	return sent.ID, nil
}

// refused says Discord would not deliver a direct message to the user.
func refused(err error) bool {
	var re *discordgo.RESTError
	return errors.As(err, &re) && re.Message != nil && re.Message.Code == discordgo.ErrCodeCannotSendMessagesToThisUser
}

// Permanent reports whether retrying cannot help a post: the channel is
// unknown, or the bot may not see it or write in it.
func Permanent(err error) bool {
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Message == nil {
		return false
	}
	switch re.Message.Code {
	case discordgo.ErrCodeUnknownChannel, discordgo.ErrCodeMissingAccess, discordgo.ErrCodeMissingPermissions:
		return true
	}
	return false
}
