// Package discord is gpucal's Discord app: the /gpu application command
// with its subcommands, its buttons and direct messages, over the gateway
// (no public URL) or over an HTTP interactions endpoint verified with
// Ed25519. It is a thin adapter: Discord interactions become bot commands,
// bot replies become ephemeral messages with embeds and buttons.
//
// It imports bot, core and github.com/bwmarrin/discordgo; nothing imports
// it but cmd/gpucal.
package discord
