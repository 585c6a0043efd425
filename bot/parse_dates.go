package bot

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/olebedev/when"
	"github.com/olebedev/when/rules"
	"github.com/olebedev/when/rules/en"
	"github.com/olebedev/when/rules/zh"
)

// Day words ("tomorrow", "next monday", "Dec 5", "后天", "下周一",
// "12月5日") and vague times of day ("this evening", "下午") are read by
// github.com/olebedev/when; clock times, windows, GPU specs and durations
// are read by this package's own patterns, which leave the library only
// the day part of each end of a window.
//
// when v1.1.0 has no Chinese parser of its own, and its Chinese month-date
// rule matches the empty string (and then slices with -1 and panics), so
// the rules are registered here one by one: the English ones as they are,
// the Chinese casual-date and casual-time rules as they are, and the
// Chinese weekday and month-date rules with this package's own pattern or
// applier. Every call into the library runs under recover.

// dateRule is one library rule and how its match counts.
type dateRule struct {
	rules.Rule
	relative bool // it names a day relative to today ("tomorrow", "下周一")
	clock    bool // it names a vague time of day ("evening", "下午"), not a day
}

var dateRules = []dateRule{
	{Rule: en.Weekday(rules.Override), relative: true},
	{Rule: en.CasualDate(rules.Override), relative: true},
	{Rule: en.CasualTime(rules.Override), clock: true},
	{Rule: en.ExactMonthDate(rules.Override)},
	{Rule: zhWeekday(), relative: true},
	{Rule: zh.CasualDate(rules.Override), relative: true},
	{Rule: zh.CasualTime(rules.Override), clock: true},
	{Rule: zhMonthDate()},
}

// dayRead is what the library read in one end of a window.
type dayRead struct {
	text      string   // the span it read, "" when nothing
	spans     [][2]int // the byte ranges of s its applied rules read
	named     bool     // it named a day
	relative  bool     // relative to today
	offset    int      // days from today, when relative
	year      int      // 0: not named
	month     int      // 0: not named (may be 13 after "下个月" in December)
	day       int      // 0: not named
	hour, min int      // a vague time of day, hour -1 when none
}

// readDay runs the date rules over s with today's date in loc as the
// reference. Panics in the library come back as errors.
func readDay(s string, now time.Time) (d dayRead, err error) {
	d.hour = -1
	defer func() {
		if r := recover(); r != nil {
			d, err = dayRead{hour: -1}, fmt.Errorf("date library: %v", r)
		}
	}()
	var (
		ctx     *rules.Context
		applied []dateRule
		spans   [][2]int
	)
	p := when.New(&rules.Options{Distance: 5, MatchByOrder: true})
	for _, r := range dateRules {
		p.Add(recording{r, &ctx, &applied, &spans})
	}
	res, err := p.Parse(s, now)
	if err != nil || res == nil || ctx == nil {
		return d, err
	}
	d.text, d.spans = res.Text, spans
	if strings.Contains(res.Text, "this ") {
		d.named = true // "this afternoon" names today
	}
	for _, r := range applied {
		if !r.clock {
			d.named = true
		}
		d.relative = d.relative || r.relative
	}
	d.offset = int(math.Round(float64(ctx.Duration) / float64(24*time.Hour)))
	if ctx.Duration != 0 {
		d.named, d.relative = true, true
	}
	get := func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	}
	d.year, d.month, d.day = get(ctx.Year), get(ctx.Month), get(ctx.Day)
	if d.month != 0 && d.day == 0 {
		d.day = 1 // "12月", "december": the first
	}
	if ctx.Hour != nil {
		d.hour, d.min = *ctx.Hour, get(ctx.Minute)
	}
	return d, nil
}

// recording wraps a rule so that the parse can see which rules applied,
// what they read (when.Result has only the span from the first match to the
// last, which may hold words no rule read) and
// the context they filled in, which when.Parser does not return.
type recording struct {
	rule    dateRule
	ctx     **rules.Context
	applied *[]dateRule
	spans   *[][2]int
}

func (r recording) Find(s string) *rules.Match {
	m := r.rule.Find(s)
	if m == nil {
		return nil
	}
	inner := m.Applier
	m.Applier = func(m *rules.Match, c *rules.Context, o *rules.Options, ref time.Time) (bool, error) {
		ok, err := inner(m, c, o, ref)
		*r.ctx = c
		if ok && err == nil {
			*r.applied = append(*r.applied, r.rule)
			*r.spans = append(*r.spans, [2]int{m.Left, m.Right})
		}
		return ok, err
	}
	return m
}

// zhMonthDate replaces zh.ExactMonthDate, whose pattern is all optional:
// a month with 月 and an optional day ("12月5日", "12月5号", "十二月五日",
// "12月"), or a day with 日 or 号 ("5号").
func zhMonthDate() rules.Rule {
	return &rules.F{
		RegExp: regexp.MustCompile(`(?:(1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])\s*(月)\s*(?:(3[01]|[12][0-9]|0?[1-9]|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九])\s*(日|号)?)?|(3[01]|[12][0-9]|0?[1-9]|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九])\s*(日|号))`),
		Applier: func(m *rules.Match, c *rules.Context, o *rules.Options, ref time.Time) (bool, error) {
			month, day := 0, 1
			// Captures: month, 月, day, 日/号 | day, 日/号 (each is captured
			// so that the match's span, which rules.F takes from the
			// captures, covers the whole date).
			if m.Captures[0] != "" {
				month = number(m.Captures[0])
				if m.Captures[2] != "" {
					day = number(m.Captures[2])
				}
			} else {
				day = number(m.Captures[4])
			}
			if month < 0 || month > 12 || day < 1 || day > 31 {
				return false, nil
			}
			if month != 0 { // "3号" alone keeps the month "下个月" set
				c.Month = &month
			}
			c.Day = &day
			return true, nil
		},
	}
}

// zhWeekday reads "周一", "下周一", "星期五", "这个礼拜三", "下下周日" with
// the library's pattern and its own arithmetic: weeks start on Monday, so
// "下周一" on a Sunday is the next day (the library makes it eight days),
// and a bare "周一" that has passed this week means next week's.
func zhWeekday() rules.Rule {
	lib := zh.Weekday(rules.Override).(*rules.F)
	return &rules.F{
		RegExp: lib.RegExp,
		Applier: func(m *rules.Match, c *rules.Context, o *rules.Options, ref time.Time) (bool, error) {
			wd, ok := zh.WEEKDAY_OFFSET[m.Captures[2]]
			if !ok {
				return false, nil
			}
			today := (int(ref.Weekday())+6)%7 + 1 // Monday 1 … Sunday 7
			offset := wd - today
			switch m.Captures[0] {
			case "", "本", "这", "这个":
				if offset < 0 && m.Captures[0] == "" {
					offset += 7
				}
			case "下", "下个":
				offset += 7
			case "下下":
				offset += 14
			case "上", "上个":
				offset -= 7
			default:
				return false, nil
			}
			c.Duration = time.Duration(offset) * 24 * time.Hour
			return true, nil
		},
	}
}
