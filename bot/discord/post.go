package discord

import (
	"bytes"
	"context"
	"fmt"

	"github.com/bwmarrin/discordgo"
)

// PostFile posts a file to a channel with text as its message: the weekly
// digest and its chart. Nobody is mentioned.
func (a *App) PostFile(ctx context.Context, channel, text, filename string, data []byte) error {
	_, err := a.api.ChannelMessageSendComplex(channel, &discordgo.MessageSend{
		Content:         clip(text, maxContent),
		Files:           []*discordgo.File{{Name: filename, ContentType: "image/png", Reader: bytes.NewReader(data)}},
		AllowedMentions: noMentions(),
	}, discordgo.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("discord: posting %s to %s: %w", filename, channel, err)
	}
	return nil
}
