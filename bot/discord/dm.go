package discord

import (
	"context"
	"errors"
	"fmt"

	"github.com/bwmarrin/discordgo"

	"github.com/gpucal/gpucal/bot"
)

// DM sends a reply as a direct message to every Discord identity of a
// gpucal user. Someone who does not accept direct messages from the bot
// (Discord's error 50007: DMs from server members turned off, or no
// server in common) gets it in the fallback channel, with a mention. DM
// tries every identity and fails only when none was reached.
func (a *App) DM(ctx context.Context, user string, r bot.Reply) error {
	ids, err := a.svc.ChatUsers(ctx, user)
	if err != nil {
		return err
	}
	var first error
	sent := 0
	seen := map[string]bool{} // one person may be linked once per guild
	for _, id := range ids {
		if id.Platform != "discord" || seen[id.ID] {
			continue
		}
		seen[id.ID] = true
		err := a.direct(ctx, id.ID, r)
		if refused(err) {
			err = a.fallback(ctx, id.ID, r)
		}
		if err != nil && first == nil {
			first = err
		}
		if err == nil {
			sent++
		}
	}
	switch {
	case sent == 0 && first == nil:
		return fmt.Errorf("discord: %s has never used gpucal in Discord", user)
	case sent > 0 && first != nil:
		// Reached: a retry would send it again to those who have it.
		a.log.Warn("a direct message reached only some of a user's Discord identities", "user", user, "err", first)
		return nil
	}
	return first
}

// direct opens the direct-message channel with a Discord user and posts r.
func (a *App) direct(ctx context.Context, userID string, r bot.Reply) error {
	ch, err := a.api.UserChannelCreate(userID, discordgo.WithContext(ctx))
	if err == nil {
		m := a.render(r)
		_, err = a.api.ChannelMessageSendComplex(ch.ID, &discordgo.MessageSend{
			Content: m.Content, Embeds: m.Embeds, Components: m.Components, AllowedMentions: noMentions(),
		}, discordgo.WithContext(ctx))
	}
	if err != nil {
		return fmt.Errorf("discord: direct message to %s: %w", userID, err)
	}
	return nil
}

// fallback posts r in the fallback channel, mentioning the user (and
// nobody else).
func (a *App) fallback(ctx context.Context, userID string, r bot.Reply) error {
	if a.cfg.FallbackChannel == "" {
		return fmt.Errorf("discord: %s does not accept direct messages, and no fallback channel is configured", userID)
	}
	m := a.render(r)
	_, err := a.api.ChannelMessageSendComplex(a.cfg.FallbackChannel, &discordgo.MessageSend{
		Content:         clip("<@"+userID+"> "+m.Content, maxContent),
		Embeds:          m.Embeds,
		Components:      m.Components,
		AllowedMentions: &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}, Users: []string{userID}},
	}, discordgo.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("discord: %s does not accept direct messages, and the fallback channel %s failed: %w",
			userID, a.cfg.FallbackChannel, err)
	}
	return nil
}

// refused says Discord would not deliver a direct message to the user.
func refused(err error) bool {
	var re *discordgo.RESTError
	return errors.As(err, &re) && re.Message != nil && re.Message.Code == discordgo.ErrCodeCannotSendMessagesToThisUser
}
