package slack

import (
	"bytes"
	"context"
	"fmt"

	slackapi "github.com/slack-go/slack"
)

// PostFile posts a file to a channel with text as its comment: the weekly
// digest and its chart. It uses Slack's three-step external upload
// (files.getUploadURLExternal, the upload, files.completeUploadExternal);
// the bot must be a member of the channel.
func (a *App) PostFile(ctx context.Context, channel, text, filename string, data []byte) error {
	_, err := a.notices.UploadFileContext(ctx, slackapi.UploadFileParameters{
		Reader: bytes.NewReader(data), FileSize: len(data), Filename: filename, Title: filename,
		Channel: channel, InitialComment: clip(text, 4000),
	})
	if err != nil {
		return fmt.Errorf("slack: posting %s to %s: %w", filename, channel, err)
	}
	return nil
}
