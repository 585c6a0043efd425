package slack

import (
	"context"
	"fmt"

	slackapi "github.com/slack-go/slack"

	"github.com/gpucal/gpucal/bot"
)

// PublishHome shows a person their bookings and jobs, with predicted
// starts and ends, on the app's Home tab.
func (a *App) PublishHome(ctx context.Context, team, user string) error {
	return a.publishHome(ctx, team, user, nil)
}

// publishHome publishes the Home tab with note, the answer to a button
// pressed on it, at the top.
func (a *App) publishHome(ctx context.Context, team, user string, note *bot.Reply) error {
	req, err := a.request(ctx, team, user)
	var bs []slackapi.Block
	if note != nil {
		bs = append(blocks(*note), slackapi.NewDividerBlock())
	}
	if err != nil {
		bs = append(bs, blocks(a.unknownPerson(err))...)
	} else {
		mine := a.handler.Execute(ctx, req, bot.Command{Kind: bot.KindMine})
		help := a.handler.Execute(ctx, req, bot.Command{Kind: bot.KindHelp})
		bs = append(bs, slackapi.NewHeaderBlock(slackapi.NewTextBlockObject(slackapi.PlainTextType, "Your GPUs", false, false)))
		bs = append(bs, blocks(mine)...)
		bs = append(bs, slackapi.NewDividerBlock())
		bs = append(bs, blocks(help)...)
	}
	_, err = a.api.PublishViewContext(ctx, slackapi.PublishViewContextRequest{
		UserID: user,
		View:   slackapi.HomeTabViewRequest{Type: slackapi.VTHomeTab, Blocks: slackapi.Blocks{BlockSet: bs}},
	})
	if err != nil {
		return fmt.Errorf("slack: views.publish: %w", err)
	}
	return nil
}

// DM sends a reply to every Slack identity of a gpucal user as a direct
// message. It returns the first error but tries every identity.
func (a *App) DM(ctx context.Context, user string, r bot.Reply) error {
	ids, err := a.svc.ChatUsers(ctx, user)
	if err != nil {
		return err
	}
	var first error
	sent := 0
	for _, id := range ids {
		if id.Platform != "slack" {
			continue
		}
		ch, _, _, err := a.api.OpenConversationContext(ctx, &slackapi.OpenConversationParameters{Users: []string{id.ID}})
		if err == nil {
			_, _, err = a.api.PostMessageContext(ctx, ch.ID,
				slackapi.MsgOptionText(clip(escape(r.String()), maxSectionText), false), slackapi.MsgOptionBlocks(blocks(r)...))
		}
		if err != nil && first == nil {
			first = fmt.Errorf("slack: direct message to %s: %w", id.ID, err)
		}
		if err == nil {
			sent++
		}
	}
	if sent == 0 && first == nil {
		return fmt.Errorf("slack: %s has never used gpucal in Slack", user)
	}
	return first
}
