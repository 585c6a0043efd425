package bot

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpucal/gpucal/core"
)

// maxLines bounds the lists a reply carries; chat is not a report.
const maxLines = 10

// when answers "when could N GPUs run for this long?" without changing anything.
func (h *Handler) when(ctx context.Context, req Request, cmd Command) Reply {
	if cmd.GPUs == 0 {
		cmd.GPUs = 1
	}
	ans, err := h.svc.WhatIf(ctx, req.Actor, core.WhatIfRequest{GPUs: cmd.GPUs, Model: cmd.Model, Duration: time.Duration(cmd.Duration)})
	if err != nil {
		return h.failed(req, cmd, err)
	}
	now, loc := h.svc.Now(), req.loc()
	option := func(o core.WhatIfOption) string {
		if o.Assigned == nil {
			return say(cmd.Lang, "%s: cannot be planned (%s)", "%s：无法安排（%s）", spec(cmd.Lang, o.GPUs, o.Model), o.Reason)
		}
		s := say(cmd.Lang, "%s: starts %s (90%%: by %s) on %s, ends ~%s", "%s：%s 开始（90%%：%s 前），在 %s，约 %s 结束",
			spec(cmd.Lang, o.GPUs, o.Model), startWord(cmd.Lang, o.StartP50, now, loc), clock(cmd.Lang, o.StartP90, now, loc),
			placement(cmd.Lang, o.Assigned), clock(cmd.Lang, o.EndP50, now, loc))
		return s
	}
	r := Reply{Text: option(ans.Asked)}
	if !cmd.Start.IsZero() && cmd.Duration > 0 {
		// A what-if answers from now; a later time is made sure of by booking it.
		end := cmd.Start.Add(time.Duration(cmd.Duration))
		r.Lines = append(r.Lines, say(cmd.Lang, "Predictions start from now; to be sure of %s, book it.", "预测从现在算起；要确保 %s，请预定。",
			window(cmd.Lang, cmd.Start, end, now, loc)))
		r.Buttons = append(r.Buttons, Button{Label: say(cmd.Lang, "Book it", "预定"), Style: StylePrimary,
			Command: Command{Kind: KindBook, GPUs: cmd.GPUs, Model: cmd.Model, Start: cmd.Start, End: end, Lang: cmd.Lang}})
	}
	if ans.Asked.Assigned != nil && ans.Asked.Reason != "" {
		r.Fields = append(r.Fields, Field{Label: say(cmd.Lang, "Why not sooner", "为何不能更早"), Value: ans.Asked.Reason})
	}
	if cmd.Duration == 0 {
		r.Fields = append(r.Fields, Field{Label: say(cmd.Lang, "Length", "时长"),
			Value: say(cmd.Lang, "%s (estimated: %s)", "%s（估计：%s）", span(ans.Asked.Estimate.P50), ans.Asked.Estimate.Source)})
	}
	for _, o := range ans.Alternatives {
		r.Lines = append(r.Lines, "• "+option(o))
	}
	return r
}

// startWord says when something starts: "now", "at 14:20", "Thu 3 Dec 09:00".
func startWord(lang string, t, now time.Time, loc *time.Location) string {
	if !t.After(now.Add(time.Minute)) {
		return say(lang, "now", "现在")
	}
	return say(lang, "~%s", "约 %s", clock(lang, t, now, loc))
}

// queue lists the queue with predicted starts, the asker's jobs marked.
func (h *Handler) queue(ctx context.Context, req Request, cmd Command) Reply {
	q, err := h.svc.Queue(ctx, req.Actor)
	if err != nil {
		return h.failed(req, cmd, err)
	}
	now, loc := h.svc.Now(), req.loc()
	r := Reply{Text: say(cmd.Lang, "%d queued, %d running.", "排队 %d 个，运行 %d 个。", len(q.Queued), len(q.Running))}
	if len(q.Queued) == 0 {
		r.Text += say(cmd.Lang, " Nothing waits.", " 没有任务在等待。")
	}
	for i, j := range q.Queued {
		if i == maxLines {
			r.Lines = append(r.Lines, say(cmd.Lang, "… and %d more (gpucal queue shows all)", "……还有 %d 个（gpucal queue 可看全部）", len(q.Queued)-i))
			break
		}
		r.Lines = append(r.Lines, jobLine(cmd.Lang, j, req.Actor.User, now, loc))
	}
	return r
}

// jobLine is one job in a list: "2. j42 alice llama-ft 4×A100 — starts ~14:20 (90%: 15:10), ends ~17:00; waiting for …".
func jobLine(lang string, j core.Job, me string, now time.Time, loc *time.Location) string {
	p := j.Prediction
	var b strings.Builder
	if p.Position > 0 {
		fmt.Fprintf(&b, "%d. ", p.Position)
	}
	b.WriteString(core.JobName(j.ID) + " " + j.Owner)
	if j.Owner == me {
		b.WriteString(say(lang, " (you)", "（你）"))
	}
	if j.Name != "" {
		b.WriteString(" " + j.Name)
	}
	b.WriteString(" " + spec(lang, j.GPUs, j.Model) + " — ")
	switch {
	case j.State.Holding():
		b.WriteString(say(lang, "%s since %s", "%s，始于 %s", j.State, clock(lang, j.StartedAt, now, loc)))
		if !p.EndP50.IsZero() {
			b.WriteString(say(lang, ", ends ~%s", "，约 %s 结束", clock(lang, p.EndP50, now, loc)))
		}
	case p.StartP50.IsZero():
		b.WriteString(say(lang, "not planned yet", "尚未排期"))
	default:
		b.WriteString(say(lang, "starts %s (90%%: %s), ends ~%s", "%s 开始（90%%：%s），约 %s 结束",
			startWord(lang, p.StartP50, now, loc), clock(lang, p.StartP90, now, loc), clock(lang, p.EndP50, now, loc)))
		if p.Reason != "" {
			b.WriteString("; " + p.Reason)
		}
	}
	return b.String()
}

// mine lists the asker's current and upcoming bookings and open jobs.
func (h *Handler) mine(ctx context.Context, req Request, cmd Command) Reply {
	now, loc := h.svc.Now(), req.loc()
	rs, err := h.svc.Reservations(ctx, req.Actor, core.ReservationFilter{Owner: req.Actor.User, From: now, States: []core.ReservationState{core.Confirmed}})
	if err != nil {
		return h.failed(req, cmd, err)
	}
	js, err := h.svc.Jobs(ctx, req.Actor, core.JobFilter{Owner: req.Actor.User, States: []core.JobState{core.JobQueued, core.JobStarting, core.JobRunning, core.JobDraining}})
	if err != nil {
		return h.failed(req, cmd, err)
	}
	slices.SortFunc(rs, func(a, b core.Reservation) int { return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.ID, b.ID)) })
	r := Reply{Text: say(cmd.Lang, "You have %d booking(s) and %d job(s).", "你有 %d 个预定和 %d 个任务。", len(rs), len(js))}
	for _, res := range rs {
		if len(r.Lines) == maxLines {
			break
		}
		line := fmt.Sprintf("%s %s, %s", res.Name(), spec(cmd.Lang, len(res.GPUs), res.Model), window(cmd.Lang, res.Start, res.End, now, loc))
		if res.StateAt(now) == core.Active {
			line += say(cmd.Lang, " (now)", "（进行中）")
		}
		if res.Note != "" {
			line += " — " + res.Note
		}
		r.Lines = append(r.Lines, line)
		if len(r.Buttons) < 3 {
			r.Buttons = append(r.Buttons, Button{Label: say(cmd.Lang, "Cancel %s", "取消 %s", res.Name()), Style: StyleDanger,
				Command: Command{Kind: KindCancel, ID: res.Name(), Lang: cmd.Lang}})
		}
	}
	slices.SortFunc(js, func(a, b core.Job) int { return cmp.Compare(a.ID, b.ID) })
	for _, j := range js {
		if len(r.Lines) == 2*maxLines {
			break
		}
		r.Lines = append(r.Lines, jobLine(cmd.Lang, j, "", now, loc))
	}
	return r
}

// status counts GPUs by model and what they are doing now.
func (h *Handler) status(ctx context.Context, req Request, cmd Command) Reply {
	nodes, err := h.svc.Nodes(ctx, req.Actor)
	if err != nil {
		return h.failed(req, cmd, err)
	}
	type count struct{ all, busy, reserved, idle, down int }
	by := map[string]*count{}
	var models []string
	total := count{}
	for _, n := range nodes {
		for _, g := range n.GPUs {
			m := g.Model().String()
			c := by[m]
			if c == nil {
				c = &count{}
				by[m] = c
				models = append(models, m)
			}
			for _, k := range []*count{c, &total} {
				k.all++
				switch {
				case g.Status == "down":
					k.down++
				case g.Job != nil:
					k.busy++
				case g.Status == "reserved":
					k.reserved++
				default:
					k.idle++
				}
			}
		}
	}
	slices.Sort(models)
	r := Reply{Text: say(cmd.Lang, "%d GPUs on %d nodes: %d running jobs, %d reserved and idle, %d free, %d down.",
		"%d 张 GPU，%d 个节点：%d 运行中，%d 已预定空闲，%d 空闲，%d 故障。",
		total.all, len(nodes), total.busy, total.reserved, total.idle, total.down)}
	for _, m := range models {
		c := by[m]
		r.Lines = append(r.Lines, say(cmd.Lang, "%s: %d busy, %d reserved, %d free, %d down (of %d)", "%s：%d 忙，%d 预定，%d 空闲，%d 故障（共 %d）",
			strings.ToUpper(m), c.busy, c.reserved, c.idle, c.down, c.all))
	}
	return r
}

// calendar lists what is booked and planned over the next day; the web
// calendar shows any other range.
func (h *Handler) calendar(ctx context.Context, req Request, cmd Command) Reply {
	now, loc := h.svc.Now(), req.loc()
	from, to := now, now.Add(24*time.Hour)
	c, err := h.svc.Calendar(ctx, req.Actor, core.CalendarQuery{From: from, To: to})
	if err != nil {
		return h.failed(req, cmd, err)
	}
	r := Reply{Text: say(cmd.Lang, "%d booking(s) and job(s) on %d GPUs, %s.", "%d 个预定和任务，%d 张 GPU，%s。",
		len(c.Items), len(c.GPUs), window(cmd.Lang, from, to, now, loc))}
	items := slices.Clone(c.Items)
	slices.SortStableFunc(items, func(a, b core.CalendarItem) int { return a.Start.Compare(b.Start) })
	for i, it := range items {
		if i == maxLines {
			r.Lines = append(r.Lines, say(cmd.Lang, "… and %d more", "……还有 %d 个", len(items)-i))
			break
		}
		line := fmt.Sprintf("%s %s %s, %s", it.ID, it.Owner, spec(cmd.Lang, len(it.GPUs), ""), window(cmd.Lang, it.Start, it.End, now, loc))
		if it.Planned {
			line += say(cmd.Lang, " (planned)", "（计划）")
		}
		if it.Note != "" {
			line += " — " + it.Note
		}
		r.Lines = append(r.Lines, line)
	}
	if h.webURL != "" {
		r.Fields = append(r.Fields, Field{Label: say(cmd.Lang, "Web", "网页"), Value: h.webURL})
	}
	return r
}
