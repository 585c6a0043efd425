package discord

import (
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/bot"
)

func TestCustomIDs(t *testing.T) {
	b := newButtonStore(time.Hour, 10)
	long := bot.Command{Kind: bot.KindBook, GPUs: 2, Model: "a100", Note: strings.Repeat("llama finetune ", 10), Lang: "zh",
		Start: time.Date(2030, 1, 8, 9, 0, 0, 0, time.UTC), End: time.Date(2030, 1, 8, 13, 0, 0, 0, time.UTC)}
	tests := []struct {
		name   string
		cmd    bot.Command
		prefix string
	}{
		{"fits: the command itself", bot.Command{Kind: bot.KindCancel, ID: "r42", Lang: "en"}, "j3:"},
		{"too long: a key", long, "k3:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, ok := b.id(3, tt.cmd)
			if !ok || !strings.HasPrefix(id, tt.prefix) || len(id) > maxCustomID {
				t.Fatalf("id %q, %t; want %s… within %d characters", id, ok, tt.prefix, maxCustomID)
			}
			got, ok := b.command(id)
			if diff := cmp.Diff(tt.cmd, got); !ok || diff != "" {
				t.Errorf("the command back (-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{"", "j", "j0", "x0:{}", "j0:{}", "jx:{\"kind\":\"queue\"}", "k0:nope", "j0:" + strings.Repeat("x", 120)} {
		if c, ok := b.command(bad); ok {
			t.Errorf("%q read as %+v", bad, c)
		}
	}
}

// FuzzCustomID: whatever a custom_id holds, reading it never panics, and
// what it reads is a command with a kind.
func FuzzCustomID(f *testing.F) {
	for _, s := range []string{`j0:{"kind":"cancel","id":"r1","lang":"en"}`, "k1:abc", "j0:{", "k:", ":"} {
		f.Add(s)
	}
	b := newButtonStore(time.Hour, 10)
	f.Fuzz(func(t *testing.T, id string) {
		if c, ok := b.command(id); ok && c.Kind == "" {
			t.Errorf("%q read as a command without a kind", id)
		}
	})
}

// discordgoOption is an option of an application command interaction.
type discordgoOption = discordgo.ApplicationCommandInteractionDataOption

func TestCommandText(t *testing.T) {
	opt := func(name string, v any) *discordgoOption { return &discordgoOption{Name: name, Value: v} }
	tests := []struct {
		name string
		sub  *discordgoOption
		want string
		free bool
	}{
		{"ask", &discordgoOption{Name: "ask", Options: []*discordgoOption{opt("text", "订两张H100 今晚8点起 6小时")}}, "订两张H100 今晚8点起 6小时", true},
		{"book", &discordgoOption{Name: "book", Options: []*discordgoOption{opt("when", " tomorrow  9-13 "), opt("gpus", 4.0), opt("model", "a100"), opt("note", "llama")}}, "book 4 a100 tomorrow 9-13 note llama", false},
		{"book a count", &discordgoOption{Name: "book", Options: []*discordgoOption{opt("when", "asap for 3h"), opt("gpus", 2.0)}}, "book 2 gpus asap for 3h", false},
		{"when", &discordgoOption{Name: "when", Options: []*discordgoOption{opt("duration", "12h"), opt("model", "h100")}}, "when h100 12h", false},
		{"extend", &discordgoOption{Name: "extend", Options: []*discordgoOption{opt("id", "r42"), opt("by", "1h")}}, "extend r42 1h", false},
		{"tz", &discordgoOption{Name: "tz", Options: []*discordgoOption{opt("zone", "Asia/Shanghai")}}, "tz Asia/Shanghai", false},
		{"queue", &discordgoOption{Name: "queue"}, "queue", false},
		{"notify", &discordgoOption{Name: "notify", Options: []*discordgoOption{opt("change", "通知 免打扰 22-8")}}, "notify 通知 免打扰 22-8", false},
		{"notify shows", &discordgoOption{Name: "notify"}, "notify", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, free := commandText([]*discordgoOption{tt.sub})
			if text != tt.want || free != tt.free {
				t.Errorf("got %q, %t; want %q, %t", text, free, tt.want, tt.free)
			}
		})
	}
	if text, _ := commandText(nil); text != "help" {
		t.Errorf("/gpu alone is %q; want help", text)
	}
}
