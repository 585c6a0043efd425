package digest

import (
	"fmt"
	"strings"
	"time"

	"github.com/gpucal/gpucal/core"
)

// topTotals is how many projects and users the summary names.
const topTotals = 5

// Summary is the digest's text for a chat message or an email, in
// English, or in Chinese when lang is "zh": the period, utilisation,
// GPU-hours by project and by user (the top 5 of each, most used first,
// numbered in the order the chart ranks projects), booked against used
// hours and no-shows, the average and P90 wait, and estimate accuracy.
// Dates are in zone (nil: UTC). Lines end with "\n".
func Summary(r core.Report, lang string, zone *time.Location) string {
	r, zone = InZone(r, zone)
	w := summaryWordsEN
	if lang == "zh" {
		w = summaryWordsZH
	}
	var b strings.Builder
	from, to := periodDates(r.From, r.To, zone)
	fmt.Fprintf(&b, w.title+"\n", from, to, zone)
	fmt.Fprintf(&b, w.util+"\n", percent(r.Utilisation), r.GPUs, fmtHours(r.Used), fmtHours(r.Capacity))
	if len(r.ByProject) == 0 {
		b.WriteString(w.noUse + "\n")
	} else {
		b.WriteString(w.byProject + totals(r.ByProject, w) + "\n")
		b.WriteString(w.byUser + totals(r.ByUser, w) + "\n")
	}
	switch {
	case r.Reservations == 0:
		b.WriteString(w.noBookings + "\n")
	default:
		used := 0.0
		if r.Booked > 0 {
			used = r.BookedUsed / r.Booked
		}
		fmt.Fprintf(&b, w.bookings, r.Reservations, fmtHours(r.Booked), fmtHours(r.BookedUsed), percent(used))
		switch {
		case r.NoShows == 1:
			b.WriteString(w.noShow)
		case r.NoShows > 1:
			fmt.Fprintf(&b, w.noShows, r.NoShows)
		}
		b.WriteString(w.end + "\n")
	}
	if r.Started == 0 {
		b.WriteString(w.noWaits + "\n")
	} else {
		fmt.Fprintf(&b, w.waits+"\n", r.Started, w.duration(r.AvgWait), w.duration(r.P90Wait))
	}
	if r.Finished == 0 {
		b.WriteString(w.noEstimates + "\n")
	} else {
		fmt.Fprintf(&b, w.estimates+"\n", percent(r.Accuracy), r.Finished)
	}
	return b.String()
}

// totals lists the first topTotals as "1. nlp 1,402 h · 2. vision 988 h",
// and how many more there are.
func totals(us []core.UsageTotal, w summaryWords) string {
	var parts []string
	for i, u := range us {
		if i == topTotals {
			parts = append(parts, fmt.Sprintf(w.more, len(us)-topTotals))
			break
		}
		parts = append(parts, fmt.Sprintf("%d. %s %s%s", i+1, u.Name, fmtHours(u.GPUHours), w.hours))
	}
	return strings.Join(parts, " · ")
}

// summaryWords are the summary's texts in one language.
type summaryWords struct {
	title, util, noUse, byProject, byUser, hours, more string
	noBookings, bookings, noShow, noShows, end         string
	noWaits, waits, noEstimates, estimates             string
	duration                                           func(time.Duration) string
}

var summaryWordsEN = summaryWords{
	title:     "GPU digest, %s to %s (%s)",
	util:      "Utilisation %s of %d GPUs: %s of %s GPU-hours used.",
	noUse:     "No GPU use in this period.",
	byProject: "By project: ", byUser: "By user: ", hours: " h", more: "%d more",
	noBookings: "Bookings: none.",
	bookings:   "Bookings: %d, %s GPU-h booked, %s used (%s)", noShow: "; 1 no-show", noShows: "; %d no-shows", end: ".",
	noWaits:     "Waits: no job started.",
	waits:       "Waits: %d jobs started, average %s, P90 %s.",
	noEstimates: "Estimates: no finished job to compare.",
	estimates:   "Estimates: %s accurate over %d finished jobs.",
	duration:    durationEN,
}

var summaryWordsZH = summaryWords{
	title:     "GPU 使用摘要：%s 至 %s (%s)",
	util:      "利用率 %s（%d 块 GPU）：已用 %s / %s GPU 小时。",
	noUse:     "本期没有 GPU 使用。",
	byProject: "按项目：", byUser: "按用户：", hours: " 小时", more: "另有 %d 个",
	noBookings: "预约：无。",
	bookings:   "预约：%d 个，共 %s GPU 小时，实际使用 %s（%s）", noShow: "；1 个无人使用", noShows: "；%d 个无人使用", end: "。",
	noWaits:     "等待：没有作业开始运行。",
	waits:       "等待：%d 个作业开始运行，平均等待 %s，P90 %s。",
	noEstimates: "估计：没有可比较的已完成作业。",
	estimates:   "估计准确度 %s（%d 个已完成作业）。",
	duration:    durationZH,
}

// durationEN formats a wait as "45s", "38m", "1h 45m" or "2d 3h".
func durationEN(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 24*time.Hour:
		h, m := int(d.Hours()), int(d.Minutes())%60
		if m == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh %dm", h, m)
	}
	days, h := int(d.Hours())/24, int(d.Hours())%24
	if h == 0 {
		return fmt.Sprintf("%dd", days)
	}
	return fmt.Sprintf("%dd %dh", days, h)
}

// durationZH formats a wait as "45 秒", "38 分钟", "1 小时 45 分钟" or "2 天 3 小时".
func durationZH(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d 秒", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d 分钟", int(d.Minutes()))
	case d < 24*time.Hour:
		h, m := int(d.Hours()), int(d.Minutes())%60
		if m == 0 {
			return fmt.Sprintf("%d 小时", h)
		}
		return fmt.Sprintf("%d 小时 %d 分钟", h, m)
	}
	days, h := int(d.Hours())/24, int(d.Hours())%24
	if h == 0 {
		return fmt.Sprintf("%d 天", days)
	}
	return fmt.Sprintf("%d 天 %d 小时", days, h)
}
