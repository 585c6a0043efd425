package bot

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/gpucal/gpucal/core"
)

// Handler runs /gpu commands against the service and says what happened
// in a Reply. It is the same for every chat platform.
type Handler struct {
	svc      *core.Service
	webURL   string
	log      *slog.Logger
	onChange func()
}

// Config is what a Handler needs besides the service.
type Config struct {
	// WebURL is the server's address people open in a browser; /gpu web
	// and the help point there. "" when the site did not give one.
	WebURL string
	Logger *slog.Logger
	// OnChange is called after a command changed bookings or jobs, so the
	// server replans at once; nil for none.
	OnChange func()
}

// NewHandler returns a Handler over svc.
func NewHandler(svc *core.Service, cfg Config) *Handler {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	onChange := cfg.OnChange
	if onChange == nil {
		onChange = func() {}
	}
	return &Handler{svc: svc, webURL: cfg.WebURL, log: log, onChange: onChange}
}

// Request is who asks and how to show them times.
type Request struct {
	Actor    core.Actor
	Identity core.ChatIdentity // the chat identity asking; /gpu tz changes its zone
	Loc      *time.Location    // the person's zone; UTC when nil
	// Key, when set, makes a booking idempotent: a second press of the
	// same button returns the first booking instead of a second one.
	Key string
	// Lang is the language the person last wrote in, as stored; a command
	// in another one updates it (notifications follow it).
	Lang string
}

func (r Request) loc() *time.Location {
	if r.Loc == nil {
		return time.UTC
	}
	return r.Loc
}

// Handle parses text (what followed /gpu) and runs it.
func (h *Handler) Handle(ctx context.Context, req Request, text string) Reply {
	cmd, err := Parse(text, h.svc.Now(), req.loc())
	if err != nil {
		lang := "en"
		if pe := (*ParseError)(nil); errors.As(err, &pe) && pe.Lang != "" {
			lang = pe.Lang
		}
		return Reply{Text: err.Error(), Error: true, Lang: lang}
	}
	if req.Identity.ID != "" && cmd.Lang != req.Lang {
		if err := h.svc.SetChatLang(ctx, req.Identity, cmd.Lang); err != nil {
			h.log.Warn("could not record a chat user's language", "user", req.Actor.User, "err", err)
		}
	}
	return h.Execute(ctx, req, cmd)
}

// Execute runs a parsed command, or one a button carried.
func (h *Handler) Execute(ctx context.Context, req Request, cmd Command) Reply {
	if cmd.Lang != "zh" {
		cmd.Lang = "en"
	}
	var r Reply
	switch cmd.Kind {
	case KindBook:
		r = h.book(ctx, req, cmd)
	case KindWhen:
		r = h.when(ctx, req, cmd)
	case KindQueue:
		r = h.queue(ctx, req, cmd)
	case KindMine:
		r = h.mine(ctx, req, cmd)
	case KindStatus:
		r = h.status(ctx, req, cmd)
	case KindCalendar:
		r = h.calendar(ctx, req, cmd)
	case KindCancel:
		r = h.cancel(ctx, req, cmd)
	case KindExtend:
		r = h.extend(ctx, req, cmd)
	case KindRelease:
		r = h.release(ctx, req, cmd)
	case KindTZ:
		r = h.setZone(ctx, req, cmd)
	case KindNotify:
		r = h.notices(ctx, req, cmd)
	case KindWeb:
		r = h.web(ctx, req, cmd)
	case KindHelp:
		r = help(cmd.Lang)
	default:
		r = Reply{Text: say(cmd.Lang, "I don't know the command %q; try /gpu help.", "不认识命令 %q；试试 /gpu help。", cmd.Kind), Error: true}
	}
	r.Lang = cmd.Lang
	return r
}

// failed turns a service error into a polite reply. Errors that are not the
// person's doing are logged here and never shown in detail.
func (h *Handler) failed(req Request, cmd Command, err error) Reply {
	switch core.ErrorCode(err) {
	case core.CodeInternal:
		h.log.Error("a chat command failed", "user", req.Actor.User, "command", string(cmd.Kind), "err", err)
		return Reply{Text: say(cmd.Lang, "Something went wrong on the server; it was logged. Try again in a minute.",
			"服务器出了点问题，已记录。请稍后再试。"), Error: true}
	case core.CodeUnavailable:
		return Reply{Text: say(cmd.Lang, "gpucal's database is not answering; try again in a minute.",
			"gpucal 的数据库暂时无响应，请稍后再试。"), Error: true}
	}
	return Reply{Text: say(cmd.Lang, "%s.", "未能完成：%s。", trimDot(core.ErrorMessage(err))), Error: true}
}

func trimDot(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '.' || s[len(s)-1] == ' ') {
		s = s[:len(s)-1]
	}
	return s
}

func help(lang string) Reply {
	if lang == "zh" {
		return Reply{Text: "/gpu 可以预定 GPU、查询排队、取消和延长预定。例如：", Lines: []string{
			"/gpu 预定 明天上午9点到下午1点 4张A100 备注 llama 微调",
			"/gpu 订两张H100 今晚8点起 6小时",
			"/gpu 什么时候能用8张H100跑12小时",
			"/gpu 排队 · /gpu 我的 · /gpu 状态 · /gpu 日历",
			"/gpu 取消 r42 · /gpu 延长 r42 1小时 · /gpu 释放 r42",
			"/gpu tz Asia/Shanghai — 设置你的时区 · /gpu 通知 — 通知设置（静音、免打扰、渠道）",
		}}
	}
	return Reply{Text: "/gpu books GPUs, tells you when jobs will run, and manages your bookings. For example:", Lines: []string{
		"/gpu book 4 a100 tomorrow 9-13 for llama finetune",
		"/gpu book 2 gpus for 3h asap",
		"/gpu when 8 h100 12h — when could 8×H100 run for 12 hours?",
		"/gpu queue · /gpu mine · /gpu status · /gpu calendar",
		"/gpu cancel r42 · /gpu extend r42 1h · /gpu release r42",
		"/gpu tz Europe/Berlin — set your time zone · /gpu web — the web calendar",
		"/gpu notify — what you are told, when and where (mute, quiet hours, channels)",
	}}
}

// web answers /gpu web with a one-time sign-in link to the calendar,
// valid for core.SignInLinkTTL. Replies to /gpu are only for the person
// who asked (ephemeral on Slack and Discord), so the link stays theirs.
func (h *Handler) web(ctx context.Context, req Request, cmd Command) Reply {
	if h.webURL == "" {
		return Reply{Text: say(cmd.Lang, "This gpucal server has no web address configured; ask your admin.",
			"此 gpucal 服务器没有配置网页地址，请联系管理员。")}
	}
	base := strings.TrimRight(h.webURL, "/")
	link, expires, err := h.svc.CreateSignInLink(ctx, req.Actor, "")
	if err != nil {
		r := h.failed(req, cmd, err)
		r.Text += " " + say(cmd.Lang, "The calendar: %s", "日历：%s", base)
		return r
	}
	mins := int(expires.Sub(h.svc.Now()).Round(time.Minute).Minutes())
	return Reply{Text: say(cmd.Lang, "The calendar: %s — your sign-in link (works once, for %d minutes; don't share it):",
		"日历：%s — 你的登录链接（只能用一次，%d 分钟内有效，请勿转发）：", base, mins),
		Lines: []string{base + "/signin/link?t=" + link}}
}
