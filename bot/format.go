package bot

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpucal/gpucal/core"
)

// say picks the English or the Chinese form, formatted with args.
func say(lang, en, zh string, args ...any) string {
	f := en
	if lang == "zh" {
		f = zh
	}
	if len(args) == 0 {
		return f
	}
	return fmt.Sprintf(f, args...)
}

var zhWeekdays = [...]string{"周日", "周一", "周二", "周三", "周四", "周五", "周六"}

// day writes the date of t in loc: "Thu 3 Dec", "12月3日周四"; with the
// year when it is not now's year.
func day(lang string, t, now time.Time, loc *time.Location) string {
	t, now = t.In(loc), now.In(loc)
	if lang == "zh" {
		s := fmt.Sprintf("%d月%d日%s", t.Month(), t.Day(), zhWeekdays[t.Weekday()])
		if t.Year() != now.Year() {
			s = strconv.Itoa(t.Year()) + "年" + s
		}
		return s
	}
	if t.Year() != now.Year() {
		return t.Format("Mon 2 Jan 2006")
	}
	return t.Format("Mon 2 Jan")
}

// instant writes t in loc with its date: "Thu 3 Dec 09:00".
func instant(lang string, t, now time.Time, loc *time.Location) string {
	return day(lang, t, now, loc) + " " + t.In(loc).Format("15:04")
}

// window writes [start, end) in loc, the date once when both are on one
// day: "Thu 3 Dec 09:00–13:00", "Thu 3 Dec 22:00 – Fri 4 Dec 02:00".
func window(lang string, start, end, now time.Time, loc *time.Location) string {
	s, e := start.In(loc), end.In(loc)
	_, so := s.Zone()
	_, eo := e.Zone()
	if so != eo {
		// The clocks change inside the window: say which side of it each end is on.
		return instant(lang, s, now, loc) + " " + s.Format("MST") + " – " + instant(lang, e, now, loc) + " " + e.Format("MST")
	}
	if s.Year() == e.Year() && s.YearDay() == e.YearDay() {
		return instant(lang, s, now, loc) + "–" + e.Format("15:04")
	}
	return instant(lang, s, now, loc) + " – " + instant(lang, e, now, loc)
}

// clock writes t in loc as "14:20", with the date when it is not today.
func clock(lang string, t, now time.Time, loc *time.Location) string {
	t, n := t.In(loc), now.In(loc)
	if t.Year() == n.Year() && t.YearDay() == n.YearDay() {
		return t.Format("15:04")
	}
	return instant(lang, t, now, loc)
}

// spec writes a GPU count and model: "4×A100", "2 GPUs", "2张H100".
func spec(lang string, n int, model string) string {
	if model == "" {
		if lang == "zh" {
			return strconv.Itoa(n) + "张GPU"
		}
		if n == 1 {
			return "1 GPU"
		}
		return strconv.Itoa(n) + " GPUs"
	}
	if lang == "zh" {
		return strconv.Itoa(n) + "张" + strings.ToUpper(model)
	}
	return strconv.Itoa(n) + "×" + strings.ToUpper(model)
}

// span writes a duration the way people say it: "3h", "1h30m", "45m", "2d 4h".
func span(d time.Duration) string {
	d = d.Round(time.Minute)
	if d < time.Minute {
		return "<1m"
	}
	days, h, m := d/(24*time.Hour), (d%(24*time.Hour))/time.Hour, (d%time.Hour)/time.Minute
	var parts []string
	if days > 0 {
		parts = append(parts, strconv.Itoa(int(days))+"d")
	}
	if h > 0 {
		parts = append(parts, strconv.Itoa(int(h))+"h")
	}
	if m > 0 && days == 0 {
		parts = append(parts, strconv.Itoa(int(m))+"m")
	}
	return strings.Join(parts, " ")
}

// placement writes where GPUs are: "node-2 (GPUs 0–3)", "node-1 (GPU 5)",
// "node-1 (GPUs 0, 2), node-4 (GPU 1)".
func placement(lang string, gpus []core.GPURef) string {
	var parts []string
	for i := 0; i < len(gpus); {
		j := i
		var idx []int
		for ; j < len(gpus) && gpus[j].Node == gpus[i].Node; j++ {
			idx = append(idx, gpus[j].Index)
		}
		word := say(lang, "GPUs", "GPU")
		if len(idx) == 1 {
			word = "GPU"
		}
		parts = append(parts, say(lang, "%s (%s %s)", "%s（%s %s）", gpus[i].Node, word, indexList(idx)))
		i = j
	}
	return strings.Join(parts, say(lang, ", ", "，"))
}

// indexList writes GPU indexes, a run as a range: "0–3", "0, 2, 5–7".
func indexList(idx []int) string {
	var parts []string
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		switch {
		case j == i:
			parts = append(parts, strconv.Itoa(idx[i]))
		default:
			parts = append(parts, strconv.Itoa(idx[i])+"–"+strconv.Itoa(idx[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
