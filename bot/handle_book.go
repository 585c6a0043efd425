package bot

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/gpucal/gpucal/core"
)

// book reserves GPUs. A command the parser had to guess at is confirmed
// first; a refused one offers the alternatives the service found as buttons.
func (h *Handler) book(ctx context.Context, req Request, cmd Command) Reply {
	now, loc := h.svc.Now(), req.loc()
	if cmd.GPUs == 0 {
		cmd.GPUs = 1
	}
	start, end := cmd.Start, cmd.End
	switch {
	case cmd.ASAP && start.IsZero():
		start = now
	case start.IsZero():
		return Reply{Text: say(cmd.Lang, "When? Try: /gpu book %s tomorrow 9-13, or /gpu book %s 3h asap.",
			"什么时候？例如：/gpu 预定 %s 明天上午9点到下午1点，或 /gpu 预定 %s 3小时 尽快。",
			strings.ToLower(spec("en", cmd.GPUs, cmd.Model)), strings.ToLower(spec("en", cmd.GPUs, cmd.Model))), Error: true}
	}
	if end.IsZero() && cmd.Duration > 0 {
		end = start.Add(time.Duration(cmd.Duration))
	}
	if end.IsZero() {
		return Reply{Text: say(cmd.Lang, "Until when? Add an end or a length: … 9-13, or … for 3h.",
			"到什么时候？请加上结束时间或时长，例如 …9点到13点，或 …3小时。"), Error: true}
	}
	what := spec(cmd.Lang, cmd.GPUs, cmd.Model) + ", " + window(cmd.Lang, start, end, now, loc)
	if cmd.Ambiguous != "" {
		sure := cmd
		sure.Ambiguous, sure.Start, sure.End, sure.ASAP = "", start, end, false
		return Reply{
			Text:    say(cmd.Lang, "I read that as %s (%s). Book it?", "我理解为 %s（%s）。确认预定吗？", what, cmd.Ambiguous),
			Buttons: []Button{{Label: say(cmd.Lang, "Book it", "确认预定"), Style: StylePrimary, Command: sure}},
		}
	}
	r, err := h.svc.Book(ctx, req.Actor, core.BookRequest{
		GPUs: cmd.GPUs, Model: cmd.Model, Start: start, End: end, Note: cmd.Note, Project: cmd.Project, Key: req.Key,
	})
	var ce *core.Error
	if errors.As(err, &ce) && ce.Code == core.CodeConflict && ce.Conflict != nil {
		return h.refused(req, cmd, start, end, ce.Conflict)
	}
	if err != nil {
		return h.failed(req, cmd, err)
	}
	h.onChange()
	reply := Reply{
		Text: say(cmd.Lang, "Booked %s on %s, %s (your time).", "已预定 %s，%s，%s（你的时区）。",
			spec(cmd.Lang, len(r.GPUs), r.Model), placement(cmd.Lang, r.GPUs), window(cmd.Lang, r.Start, r.End, now, loc)),
		Fields: []Field{{Label: say(cmd.Lang, "Reservation", "预定编号"), Value: r.Name()}},
		Buttons: []Button{
			{Label: say(cmd.Lang, "Cancel", "取消"), Style: StyleDanger, Command: Command{Kind: KindCancel, ID: r.Name(), Lang: cmd.Lang}},
			{Label: say(cmd.Lang, "Extend 1h", "延长1小时"), Command: Command{Kind: KindExtend, ID: r.Name(), By: Duration(time.Hour), Lang: cmd.Lang}},
		},
	}
	if r.Project != "" {
		reply.Fields = append(reply.Fields, Field{Label: say(cmd.Lang, "Project", "项目"), Value: r.Project})
	}
	if r.Note != "" {
		reply.Fields = append(reply.Fields, Field{Label: say(cmd.Lang, "Note", "备注"), Value: r.Note})
	}
	return reply
}

// refused says why a booking did not fit and offers what would.
func (h *Handler) refused(req Request, cmd Command, start, end time.Time, c *core.ConflictDetail) Reply {
	now, loc := h.svc.Now(), req.loc()
	asked := spec(cmd.Lang, cmd.GPUs, cmd.Model)
	r := Reply{Text: say(cmd.Lang, "%s is not free for %s.", "%s 在 %s 没有空闲。", asked, window(cmd.Lang, start, end, now, loc)), Error: true}
	var offers []string
	for _, a := range c.Alternatives {
		alt := cmd
		alt.GPUs, alt.Model, alt.Start, alt.End, alt.ASAP, alt.Duration, alt.Relative = a.GPUs, a.Model, a.Start, a.End, false, 0, false
		at := clock(cmd.Lang, a.Start, now, loc)
		if !a.Start.After(now) {
			at = say(cmd.Lang, "now", "现在")
		}
		var offer, label string
		switch a.Kind {
		case "later":
			offer = say(cmd.Lang, "earliest %s", "最早 %s", window(cmd.Lang, a.Start, a.End, now, loc))
			label = say(cmd.Lang, "Book %s", "预定 %s", at)
		case "fewer":
			offer = say(cmd.Lang, "%s then", "届时有 %s", spec(cmd.Lang, a.GPUs, a.Model))
			label = say(cmd.Lang, "Book %s %s", "预定 %s %s", spec(cmd.Lang, a.GPUs, a.Model), at)
		case "model":
			offer = say(cmd.Lang, "%s then", "届时有 %s", spec(cmd.Lang, a.GPUs, a.Model))
			label = say(cmd.Lang, "Book %s", "预定 %s", spec(cmd.Lang, a.GPUs, a.Model))
		default:
			continue
		}
		offers = append(offers, offer)
		if len(r.Buttons) < 3 {
			r.Buttons = append(r.Buttons, Button{Label: label, Style: firstPrimary(len(r.Buttons)), Command: alt})
		}
	}
	if len(offers) > 0 {
		r.Text += say(cmd.Lang, " Instead: %s.", " 可选：%s。", strings.Join(offers, say(cmd.Lang, "; or ", "；或 ")))
	} else {
		r.Text += say(cmd.Lang, " Nothing like it is free in the booking horizon.", " 可预定范围内没有类似的空闲。")
	}
	if len(c.With) > 0 {
		var held []string
		for _, w := range c.With {
			held = append(held, w.ID+" ("+w.Owner+")")
		}
		r.Fields = append(r.Fields, Field{Label: say(cmd.Lang, "Held by", "已被占用"), Value: strings.Join(held, ", ")})
	}
	return r
}

func firstPrimary(i int) string {
	if i == 0 {
		return StylePrimary
	}
	return ""
}

// cancel gives a reservation back or cancels a job.
func (h *Handler) cancel(ctx context.Context, req Request, cmd Command) Reply {
	now, loc := h.svc.Now(), req.loc()
	if strings.HasPrefix(cmd.ID, "j") {
		id, err := core.ParseJobID(cmd.ID)
		if err != nil {
			return h.failed(req, cmd, err)
		}
		j, err := h.svc.CancelJob(ctx, req.Actor, id)
		if err != nil {
			return h.failed(req, cmd, err)
		}
		h.onChange()
		if j.State == core.JobDraining {
			return Reply{Text: say(cmd.Lang, "Stopping %s; it ends once its processes are gone.", "正在停止 %s，进程结束后即完成。", cmd.ID)}
		}
		return Reply{Text: say(cmd.Lang, "Cancelled %s.", "已取消 %s。", cmd.ID)}
	}
	id, err := core.ParseReservationID(cmd.ID)
	if err != nil {
		return h.failed(req, cmd, err)
	}
	r, err := h.svc.Cancel(ctx, req.Actor, id)
	if err != nil {
		return h.failed(req, cmd, err)
	}
	h.onChange()
	return Reply{Text: say(cmd.Lang, "Cancelled %s (%s, %s).", "已取消 %s（%s，%s）。",
		r.Name(), spec(cmd.Lang, len(r.GPUs), r.Model), window(cmd.Lang, r.Start, r.End, now, loc))}
}

// extend moves a reservation's end later.
func (h *Handler) extend(ctx context.Context, req Request, cmd Command) Reply {
	id, err := core.ParseReservationID(cmd.ID)
	if err != nil {
		return h.failed(req, cmd, err)
	}
	if cmd.By <= 0 {
		return Reply{Text: say(cmd.Lang, "By how long? Try: /gpu extend %s 1h.", "延长多久？例如：/gpu 延长 %s 1小时。", cmd.ID), Error: true}
	}
	r, err := h.svc.Extend(ctx, req.Actor, id, core.ExtendRequest{By: time.Duration(cmd.By)})
	if err != nil {
		return h.failed(req, cmd, err)
	}
	h.onChange()
	return Reply{
		Text: say(cmd.Lang, "%s now ends %s.", "%s 现在结束于 %s。", r.Name(), clock(cmd.Lang, r.End, h.svc.Now(), req.loc())),
		Buttons: []Button{{Label: say(cmd.Lang, "Extend 1h more", "再延长1小时"),
			Command: Command{Kind: KindExtend, ID: r.Name(), By: Duration(time.Hour), Lang: cmd.Lang}}},
	}
}

// release ends an active reservation now.
func (h *Handler) release(ctx context.Context, req Request, cmd Command) Reply {
	id, err := core.ParseReservationID(cmd.ID)
	if err != nil {
		return h.failed(req, cmd, err)
	}
	r, err := h.svc.Release(ctx, req.Actor, id)
	if err != nil {
		return h.failed(req, cmd, err)
	}
	h.onChange()
	return Reply{Text: say(cmd.Lang, "Released %s: its %s are free for others from now.", "已释放 %s：%s 现在可供他人使用。",
		r.Name(), spec(cmd.Lang, len(r.GPUs), r.Model))}
}

// setZone sets the zone the person's times are read and shown in.
func (h *Handler) setZone(ctx context.Context, req Request, cmd Command) Reply {
	if req.Identity.ID == "" {
		return Reply{Text: say(cmd.Lang, "Time zones are set per chat user; this request came from elsewhere.", "时区按聊天用户设置；此请求并非来自聊天。"), Error: true}
	}
	cu, err := h.svc.SetChatZone(ctx, req.Identity, cmd.Zone)
	if err != nil {
		return h.failed(req, cmd, err)
	}
	loc := cu.Location(time.UTC)
	return Reply{Text: say(cmd.Lang, "Your time zone is now %s (it is %s there).", "你的时区已设为 %s（当地现在 %s）。",
		cu.Zone, h.svc.Now().In(loc).Format("15:04"))}
}
