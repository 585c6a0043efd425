// Package slack is gpucal's Slack app: the /gpu slash command, its buttons,
// the App Home tab and direct messages, over Socket Mode (no public URL) or
// over HTTP with Slack's request signing. It is a thin adapter: Slack
// events become bot commands, bot replies become Block Kit messages.
//
// It imports bot, core and github.com/slack-go/slack; nothing imports it
// but cmd/gpucal.
package slack
