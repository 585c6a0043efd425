package discord

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/gpucal/gpucal/bot"
)

// Discord message limits this rendering stays within.
const (
	maxContent     = 2000
	maxDescription = 4096
	maxFields      = 25
	maxFieldName   = 256
	maxFieldValue  = 1024
	maxButtons     = 5 // one action row
	maxLabel       = 80
	maxCustomID    = 100
)

// Embed colours: Discord's blurple, and red for a refusal.
const (
	colourInfo  = 0x5865F2
	colourError = 0xED4245
)

// escape makes text literal in Discord's markdown.
var escape = strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "~", `\~`, "`", "\\`", "|", `\|`, ">", `\>`, "#", `\#`).Replace

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && s[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
		cut--
	}
	return s[:cut] + "…"
}

// message is a reply as Discord shows it: the text as content, fields and
// lines in an embed, buttons in one action row. It never pings anyone.
type message struct {
	Content    string
	Embeds     []*discordgo.MessageEmbed
	Components []discordgo.MessageComponent
}

func (a *App) render(r bot.Reply) message {
	text := escape(r.Text)
	if r.Error {
		text = "⚠️ " + text
	}
	if r.Code != "" {
		// The code goes at the end of the content, whole lines of it, after
		// as much of the text as leaves room for a few of them.
		text = clip(text, maxContent/2)
		text += "\n```\n" + r.CodeWithin(maxContent-len(text)-len("\n```\n\n```")) + "\n```"
	}
	m := message{Content: clip(text, maxContent), Embeds: []*discordgo.MessageEmbed{}, Components: []discordgo.MessageComponent{}}
	if len(r.Fields) > 0 || len(r.Lines) > 0 {
		e := &discordgo.MessageEmbed{Color: colourInfo}
		if r.Error {
			e.Color = colourError
		}
		for i, f := range r.Fields {
			if i == maxFields {
				break
			}
			e.Fields = append(e.Fields, &discordgo.MessageEmbedField{
				Name: clip(escape(f.Label), maxFieldName), Value: clip(escape(f.Value), maxFieldValue), Inline: true})
		}
		var lines []string
		for _, l := range r.Lines {
			lines = append(lines, escape(l))
		}
		e.Description = clip(strings.Join(lines, "\n"), maxDescription)
		m.Embeds = append(m.Embeds, e)
	}
	var buttons []discordgo.MessageComponent
	for i, bt := range r.Buttons {
		if i == maxButtons {
			break
		}
		id, ok := a.buttons.id(i, bt.Command)
		if !ok {
			continue
		}
		style := discordgo.SecondaryButton
		switch bt.Style {
		case bot.StylePrimary:
			style = discordgo.PrimaryButton
		case bot.StyleDanger:
			style = discordgo.DangerButton
		}
		buttons = append(buttons, discordgo.Button{Label: clip(bt.Label, maxLabel), Style: style, CustomID: id})
	}
	if len(buttons) > 0 {
		m.Components = append(m.Components, discordgo.ActionsRow{Components: buttons})
	}
	return m
}

// noMentions keeps a note like "@everyone" from pinging anybody.
func noMentions() *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
}

// response is a reply as an interaction response: seen only by the person
// who asked.
func (a *App) response(r bot.Reply) *discordgo.InteractionResponseData {
	m := a.render(r)
	return &discordgo.InteractionResponseData{
		Content: m.Content, Embeds: m.Embeds, Components: m.Components,
		Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noMentions(),
	}
}

// Buttons carry their bot.Command in the custom_id, which Discord limits
// to 100 characters, and which must differ between a message's buttons:
//
//	j<i>:<command as JSON>   when that fits (cancel, extend, release: the
//	                         button keeps working across restarts)
//	k<i>:<random key>        otherwise (bookings with times and a note);
//	                         the command stays in memory for buttonTTL
//
// <i> is the button's position. A button carries no authority: pressing
// it runs the command as the person who pressed it.
const buttonTTL = 24 * time.Hour

type buttonStore struct {
	mu    sync.Mutex
	ttl   time.Duration
	max   int
	cmds  map[string]bot.Command
	order []seenID
}

func newButtonStore(ttl time.Duration, max int) *buttonStore {
	return &buttonStore{ttl: ttl, max: max, cmds: map[string]bot.Command{}}
}

// id returns the custom_id for the i-th button, carrying cmd.
func (b *buttonStore) id(i int, cmd bot.Command) (string, bool) {
	js, err := json.Marshal(cmd)
	if err != nil {
		return "", false
	}
	if id := "j" + strconv.Itoa(i) + ":" + string(js); len(id) <= maxCustomID {
		return id, true
	}
	var k [16]byte
	_, _ = rand.Read(k[:]) // crypto/rand.Read never fails
	key := base64.RawURLEncoding.EncodeToString(k[:])
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	for len(b.order) > 0 && (len(b.order) >= b.max || now.Sub(b.order[0].at) > b.ttl) {
		delete(b.cmds, b.order[0].id)
		b.order = b.order[1:]
	}
	b.cmds[key] = cmd
	b.order = append(b.order, seenID{id: key, at: now})
	return "k" + strconv.Itoa(i) + ":" + key, true
}

// command reads the bot command a custom_id carries.
func (b *buttonStore) command(id string) (bot.Command, bool) {
	pos, rest, ok := strings.Cut(id, ":")
	if !ok || len(id) > maxCustomID || len(pos) < 2 {
		return bot.Command{}, false
	}
	if _, err := strconv.Atoi(pos[1:]); err != nil {
		return bot.Command{}, false
	}
	var c bot.Command
	switch pos[0] {
	case 'j':
		if json.Unmarshal([]byte(rest), &c) != nil {
			return bot.Command{}, false
		}
	case 'k':
		b.mu.Lock()
		c, ok = b.cmds[rest]
		b.mu.Unlock()
		if !ok {
			return bot.Command{}, false
		}
	default:
		return bot.Command{}, false
	}
	return c, c.Kind != ""
}
