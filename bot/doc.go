// Package bot is gpucal's platform-neutral chat layer: Parse reads what a
// person typed after /gpu, in English or Chinese and in their time zone,
// into a Command; Handler turns a Command into core.Service calls and the
// result into a Reply (text, fields and buttons) that each chat adapter
// (bot/slack, bot/discord) renders in its own format.
//
// It imports core and the standard library, plus the natural-language date
// library the parser is built on; adapters import bot, never each other.
package bot
