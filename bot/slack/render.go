package slack

import (
	"encoding/json"
	"strconv"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/gpucal/gpucal/bot"
)

// Block Kit limits this rendering stays within.
const (
	maxSectionText = 3000
	maxFields      = 10
	maxButtons     = 5
	maxButtonValue = 2000
	actionPrefix   = "gpucal-"
)

// escape makes text safe in mrkdwn: Slack reads only &, < and > specially.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

func markdown(s string) *slackapi.TextBlockObject {
	return slackapi.NewTextBlockObject(slackapi.MarkdownType, clip(s, maxSectionText), false, false)
}

// blocks renders a reply: its text, fields, lines, code and buttons.
func blocks(r bot.Reply) []slackapi.Block {
	text := escape(r.Text)
	if r.Error {
		text = ":warning: " + text
	}
	out := []slackapi.Block{slackapi.NewSectionBlock(markdown(text), nil, nil)}
	if len(r.Fields) > 0 {
		var fs []*slackapi.TextBlockObject
		for i, f := range r.Fields {
			if i == maxFields {
				break
			}
			fs = append(fs, markdown("*"+escape(f.Label)+"*\n"+escape(f.Value)))
		}
		out = append(out, slackapi.NewSectionBlock(nil, fs, nil))
	}
	if len(r.Lines) > 0 {
		var b strings.Builder
		for i, l := range r.Lines {
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString(escape(l))
		}
		out = append(out, slackapi.NewSectionBlock(markdown(b.String()), nil, nil))
	}
	if r.Code != "" {
		// Escaped before it is fitted: the entities count against the limit.
		code := bot.Reply{Code: escape(r.Code)}.CodeWithin(maxSectionText - 2*len("```"))
		out = append(out, slackapi.NewSectionBlock(markdown("```"+code+"```"), nil, nil))
	}
	var buttons []slackapi.BlockElement
	for i, bt := range r.Buttons {
		if i == maxButtons {
			break
		}
		value, err := json.Marshal(bt.Command)
		if err != nil || len(value) > maxButtonValue {
			continue
		}
		e := slackapi.NewButtonBlockElement(actionPrefix+strconv.Itoa(i), string(value),
			slackapi.NewTextBlockObject(slackapi.PlainTextType, clip(bt.Label, 75), false, false))
		switch bt.Style {
		case bot.StylePrimary:
			e = e.WithStyle(slackapi.StylePrimary)
		case bot.StyleDanger:
			e = e.WithStyle(slackapi.StyleDanger)
		}
		buttons = append(buttons, e)
	}
	if len(buttons) > 0 {
		out = append(out, slackapi.NewActionBlock("gpucal-actions", buttons...))
	}
	return out
}

// message is a reply as a response_url or slash-command response payload:
// seen only by the person who asked, the blocks with the plain text as
// the fallback notifications show.
func message(r bot.Reply, replace bool) *slackapi.WebhookMessage {
	return &slackapi.WebhookMessage{
		ResponseType:    slackapi.ResponseTypeEphemeral,
		ReplaceOriginal: replace,
		Text:            clip(escape(r.String()), maxSectionText),
		Blocks:          &slackapi.Blocks{BlockSet: blocks(r)},
	}
}

// command reads the bot command a button carries.
func command(value string) (bot.Command, bool) {
	var c bot.Command
	if len(value) > maxButtonValue || json.Unmarshal([]byte(value), &c) != nil || c.Kind == "" {
		return bot.Command{}, false
	}
	return c, true
}
