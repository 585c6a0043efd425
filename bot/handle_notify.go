package bot

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gpucal/gpucal/core"
)

// notices shows or changes what the person is told without asking: muted
// kinds, quiet hours (in their chat zone) and the channels each kind goes
// to. The settings are the same ones gpucal notices and the API change.
func (h *Handler) notices(ctx context.Context, req Request, cmd Command) Reply {
	p, err := h.svc.NotifyPrefsOf(ctx, req.Actor, req.Actor.User)
	if err != nil {
		return h.failed(req, cmd, err)
	}
	if c := cmd.Notify; c != nil {
		if err := changePrefs(&p, *c, req); err != nil {
			return h.failed(req, cmd, err)
		}
		if p, err = h.svc.SetNotifyPrefs(ctx, req.Actor, p); err != nil {
			return h.failed(req, cmd, err)
		}
	}
	r := Reply{Text: say(cmd.Lang, "What you are told without asking:", "你的通知设置：")}
	if cmd.Notify != nil {
		r.Text = say(cmd.Lang, "Saved. What you are told without asking now:", "已保存。现在的通知设置：")
	}
	muted := say(cmd.Lang, "nothing", "无")
	if len(p.Muted) > 0 {
		muted = kindList(p.Muted)
	}
	quiet := say(cmd.Lang, "none", "无")
	if p.QuietFrom != p.QuietTo {
		quiet = fmt.Sprintf("%02d:%02d–%02d:%02d %s", p.QuietFrom/60, p.QuietFrom%60, p.QuietTo/60, p.QuietTo%60, p.Zone)
	}
	r.Fields = []Field{
		{say(cmd.Lang, "Muted", "已静音"), muted},
		{say(cmd.Lang, "Quiet hours", "免打扰"), quiet},
		{say(cmd.Lang, "Channels", "渠道"), viaWords(cmd.Lang, p.Via)},
	}
	r.Lines = []string{say(cmd.Lang,
		"Change it: /gpu notify mute position_changed · unmute all · quiet 22:00-08:00 · quiet off · via email · finished via slack email · via default",
		"修改：/gpu 通知 静音 排位 · 取消静音 全部 · 免打扰 22:00-08:00 · 免打扰 关 · 渠道 邮件 · 结束 渠道 slack 邮件 · 渠道 默认")}
	return r
}

// changePrefs applies a change to p. Quiet hours are read in the person's
// chat zone, which the preferences then keep.
func changePrefs(p *core.NotifyPrefs, c NotifyChange, req Request) error {
	p.Muted = append(p.Muted, c.Mute...)
	if slices.Contains(c.Unmute, core.AnyEvent) {
		p.Muted = nil
	}
	p.Muted = slices.DeleteFunc(p.Muted, func(k core.EventKind) bool { return slices.Contains(c.Unmute, k) })
	if c.Quiet != "" {
		from, to, err := core.ParseQuietHours(c.Quiet)
		if err != nil {
			return err
		}
		p.QuietFrom, p.QuietTo = from, to
		if zone := req.loc().String(); zone != "Local" && zone != "" {
			p.Zone = zone
		}
	}
	if len(c.Via) > 0 {
		kind := cmp.Or(c.For, core.AnyEvent)
		spec := string(kind) + "=" + strings.Join(c.Via, ",")
		if c.Via[0] == "default" && c.For == "" {
			p.Via = nil
			return nil
		}
		via, err := core.ParseVia(p.Via, spec)
		if err != nil {
			return err
		}
		p.Via = via
	}
	return nil
}

func kindList(ks []core.EventKind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// viaWords says where each kind of notice goes.
func viaWords(lang string, via map[core.EventKind][]string) string {
	everywhere := say(lang, "every channel you can be reached on", "所有能联系到你的渠道")
	if len(via) == 0 {
		return everywhere
	}
	var parts []string
	for _, part := range strings.Split(core.FormatVia(via), ";") {
		kind, chans, _ := strings.Cut(part, "=")
		if kind == string(core.AnyEvent) {
			kind = say(lang, "everything", "全部")
		}
		parts = append(parts, kind+": "+strings.ReplaceAll(chans, ",", ", "))
	}
	if _, ok := via[core.AnyEvent]; !ok {
		parts = append(parts, say(lang, "the rest: ", "其余：")+everywhere)
	}
	return strings.Join(parts, "; ")
}
