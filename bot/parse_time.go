package bot

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Windows and instants. The time words of a command are split at the first
// range word ("to", "until", "-", "到", "至") into a start and an end; each
// side is a day (read by the date library, or written 2026-12-05) and a
// clock time (read here). The rules, all in the user's zone:
//
//   - A clock with no day is today; when it has already passed and no day was
//     named anywhere, the whole window moves to tomorrow. A named day whose
//     time has passed is an error ("that time has passed").
//   - A month and day without a year that has passed this year is next
//     year's (recorded in Command.Ambiguous).
//   - The end's day is the start's unless it names its own. A bare end hour
//     earlier than the start is read twelve hours later when that makes it
//     later ("9-1" is 09:00–13:00, recorded in Ambiguous); otherwise an end
//     at or before the start is on the next day ("22-2").
//   - A bare start hour before a "pm" end is read in the afternoon when that
//     keeps it before the end ("2 to 5pm" is 14:00–17:00).
//   - Bare hours are 24-hour clock times; 1 to 6 without am/pm or a part of
//     the day is recorded in Ambiguous ("3 read as 03:00").
//   - A vague part of the day alone ("this evening", "下午") is the date
//     library's hour for it (18:00, 15:00), recorded in Ambiguous; today's,
//     within three hours after that hour, starts now.
//   - Two days and no clock times are whole days: "dec 5 to dec 7" is
//     Dec 5 00:00 to Dec 8 00:00.
//   - A clock time that does not exist (the hour skipped when clocks go
//     forward) is moved forward; one that happens twice (clocks go back) is
//     the first. Both are recorded in Ambiguous.
var (
	clockRe = regexp.MustCompile(`(?:(上午|早上|早晨|凌晨|中午|下午|傍晚|晚上|夜里|夜间|半夜)\s*)?` +
		`(?:\b(\d{1,2})|(二十[一二三四]?|十[一二]?|[零一二两三四五六七八九]))\s*` +
		`(?:(?:点|时)\s*(?:(\d{1,2})\s*分?|(半)|(一刻)|(三刻)|([一二三四五]?十[一二三四五六七八九]?|零?[一二三四五六七八九])\s*分?)?` +
		`|[:.](\d{2})(?:\s*(am|pm|a\.m\.|p\.m\.))?\b` +
		`|(am|pm|a\.m\.|p\.m\.)(?:\s|$))`)
	noonRe    = regexp.MustCompile(`\b(noon|midday|midnight)\b`)
	bareHour  = regexp.MustCompile(`\b(\d{1,2})\b`)
	isoDateRe = regexp.MustCompile(`\b(\d{4})-(\d{1,2})-(\d{1,2})\b`)
	isoMark   = regexp.MustCompile(`§(\d)`)
	rangeSep  = regexp.MustCompile(`\s+(?:to|until|till|thru|through)\s+|^\s*(?:until|till|to)\s+|\s*(?:-|–|—|~|到|至|直到)\s*`)
)

// clockRead is a clock time as written.
type clockRead struct {
	set   bool
	h, m  int
	mer   string // "", "am", "pm", "24h", or the Chinese part of the day
	text  string
	vague bool // a part of the day ("this evening", "下午"), not a clock time
}

// moment is one side of a window: an optional day and an optional clock.
type moment struct {
	text  string
	day   dayRead
	iso   *date
	clock clockRead
}

func (m moment) dayNamed() bool { return m.iso != nil || m.day.named }
func (m moment) empty() bool    { return !m.dayNamed() && !m.clock.set && m.day.hour < 0 }

// date is a calendar day.
type date struct{ y, m, d int }

func dateOf(t time.Time) date { return date{t.Year(), int(t.Month()), t.Day()} }

func (d date) add(days int) date {
	return dateOf(time.Date(d.y, time.Month(d.m), d.d+days, 12, 0, 0, 0, time.UTC))
}

func (d date) before(e date) bool {
	return d.y < e.y || d.y == e.y && (d.m < e.m || d.m == e.m && d.d < e.d)
}

// windowRead is what the time words of a command say.
type windowRead struct {
	start, end time.Time // zero when not said
	startNow   bool      // "until 5pm", "到下午5点": from now
	relative   bool
	guesses    []guess
	leftover   string // words no rule read
	found      bool   // any time word at all
}

// readWindow reads the time words left in s.
func (p *parser) readWindow(s string) (w windowRead, err *ParseError) {
	var isos []date
	s = isoDateRe.ReplaceAllStringFunc(s, func(t string) string {
		g := isoDateRe.FindStringSubmatch(t)
		y, _ := strconv.Atoi(g[1])
		m, _ := strconv.Atoi(g[2])
		d, _ := strconv.Atoi(g[3])
		isos = append(isos, date{y, m, d})
		return fmt.Sprintf(" §%d ", len(isos)-1)
	})
	left, right, ranged := s, "", false
	if loc := rangeSep.FindStringIndex(s); loc != nil {
		left, right, ranged = s[:loc[0]], s[loc[1]:], true
	}
	start, rest1 := p.readMoment(left, isos)
	end, rest2 := p.readMoment(right, isos)
	w.leftover = strings.TrimSpace(rest1 + " " + rest2)
	w.found = !start.empty() || !end.empty()
	if !w.found {
		return w, nil
	}
	if ranged && start.empty() {
		w.startNow = true
	}
	return p.resolve(w, start, end)
}

// readMoment reads one side: clock first, then the day, then a bare hour.
func (p *parser) readMoment(s string, isos []date) (m moment, rest string) {
	m.text = strings.TrimSpace(s)
	m.day.hour = -1
	take(&s, clockRe, func(g []string) bool {
		if m.clock.set {
			return false
		}
		m.clock = clockOf(g)
		return m.clock.set
	})
	take(&s, noonRe, func(g []string) bool {
		if m.clock.set {
			return false
		}
		h := 12
		if g[1] == "midnight" {
			h = 24
		}
		m.clock = clockRead{set: true, h: h, mer: "24h", text: g[1]}
		return true
	})
	take(&s, isoMark, func(g []string) bool {
		i, _ := strconv.Atoi(g[1])
		if m.iso != nil || i >= len(isos) {
			return false
		}
		m.iso = &isos[i]
		return true
	})
	s = vagueDay(s)
	day, err := readDay(s, p.now)
	if err == nil && day.text != "" {
		m.day = day
		b := []byte(s)
		for _, sp := range day.spans {
			if sp[0] >= 0 && sp[0] <= sp[1] && sp[1] <= len(b) {
				copy(b[sp[0]:sp[1]], strings.Repeat(" ", sp[1]-sp[0]))
			}
		}
		s = string(b)
	} else {
		m.day = dayRead{hour: -1}
	}
	if !m.clock.set {
		take(&s, bareHour, func(g []string) bool {
			if m.clock.set {
				return false
			}
			h, _ := strconv.Atoi(g[1])
			if h > 24 {
				return false
			}
			m.clock = clockRead{set: true, h: h, text: g[1]}
			return true
		})
	}
	return m, s
}

// vagueDay rewrites the words the date library does not know into ones it
// does: "tonight" is this evening, "今晚" 今天晚上, "上午" and "早上" 早晨.
func vagueDay(s string) string {
	s = dayFirst.ReplaceAllString(s, "$3 $1")
	return strings.NewReplacer("tonight", "today evening", "今晚", "今天晚上", "明晚", "明天晚上",
		"上午", "早晨", "早上", "早晨").Replace(s)
}

// vagueSpan is how long a part of the day lasts after the hour the date
// library gives it: "tonight" at 20:00 still means tonight.
const vagueSpan = 3 * time.Hour

// vagueText is a vague clock's words for a message, as typed.
func vagueText(c clockRead) string {
	return strings.NewReplacer("today evening", "tonight", "今天晚上", "今晚").Replace(unspace(c.text))
}

// dayFirst matches "5 dec" and "5th of december", which vagueDay turns
// into "dec 5" so that a clock time after it ("5 dec 9-17") is not read as
// the day by the library's month-date rule.
var dayFirst = regexp.MustCompile(`\b(\d{1,2})(st|nd|rd|th)?\s+(?:of\s+)?(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t|tember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b`)

// clockOf turns a clockRe match into a clock; set is false when the hour
// or minute is out of range.
func clockOf(g []string) clockRead {
	c := clockRead{mer: g[1], text: strings.TrimSpace(g[0])}
	switch {
	case g[2] != "":
		c.h, _ = strconv.Atoi(g[2])
	default:
		c.h = zhNumber(g[3])
	}
	switch {
	case g[4] != "":
		c.m, _ = strconv.Atoi(g[4])
	case g[5] != "":
		c.m = 30
	case g[6] != "":
		c.m = 15
	case g[7] != "":
		c.m = 45
	case g[8] != "":
		c.m = zhNumber(g[8])
	case g[9] != "":
		c.m, _ = strconv.Atoi(g[9])
	}
	if ap := g[10] + g[11]; ap != "" {
		if c.mer != "" {
			return clockRead{} // "下午 3pm": one is enough
		}
		c.mer = ap[:1] + "m"
	}
	if g[3] != "" && g[2] == "" && !strings.ContainsAny(g[0], "点时") {
		return clockRead{} // Chinese numerals are clock times only with 点
	}
	if c.h < 0 || c.h > 24 || c.m < 0 || c.m > 59 || (c.h == 24 && c.m != 0) {
		return clockRead{}
	}
	if (c.mer == "am" || c.mer == "pm") && (c.h < 1 || c.h > 12) {
		return clockRead{}
	}
	c.set = true
	return c
}

// hour24 applies the clock's part of the day; pmHint says the day words
// named the afternoon or evening ("this evening", "下午"), which makes a
// bare hour before noon a pm hour. The result may be 24 (midnight ending
// the day).
func (c clockRead) hour24(pmHint bool) int {
	h := c.h
	switch c.mer {
	case "am":
		return h % 12
	case "pm":
		return h%12 + 12
	case "上午", "早上", "早晨":
		return h
	case "凌晨":
		return h % 12
	case "中午":
		if h <= 2 {
			return h + 12
		}
		return h
	case "下午", "傍晚":
		if h < 12 {
			return h + 12
		}
		return h
	case "晚上", "夜里", "夜间", "半夜":
		switch {
		case h == 12:
			return 24
		case h >= 6 && h < 12, c.mer == "晚上" && h < 12:
			return h + 12
		}
		return h
	case "":
		if pmHint && h < 12 {
			return h + 12
		}
	}
	return h
}

// explicit reports whether the clock says which half of the day it is in.
func (c clockRead) explicit() bool { return c.mer != "" }

// resolve turns the two sides into instants, following the rules above.
func (p *parser) resolve(w windowRead, start, end moment) (windowRead, *ParseError) {
	today := dateOf(p.now)
	sDay, sRel, perr := p.dayOf(start, today, &w)
	if perr != nil {
		return w, perr
	}
	eDay, eRel := sDay, sRel
	if end.dayNamed() {
		if eDay, eRel, perr = p.dayOf(end, today, &w); perr != nil {
			return w, perr
		}
	}
	w.relative = sRel || (!end.empty() && eRel)
	if w.startNow {
		sDay = today
		w.relative = true
	}

	sClock, sOK := p.clockOf(start)
	eClock, eOK := p.clockOf(end)
	switch {
	case w.startNow:
	case !sOK && start.dayNamed() && end.dayNamed() && !eOK:
		// Whole days: the start's midnight to the midnight after the end.
		w.start = p.at(sDay, 0, 0, &w)
		w.end = p.at(eDay.add(1), 0, 0, &w)
		w.guess(fmt.Sprintf("%s – %s read as whole days", unspace(start.text), unspace(end.text)), fmt.Sprintf("%s – %s 按整天理解", unspace(start.text), unspace(end.text)))
		if !w.end.After(w.start) {
			return w, p.problem("the end comes before the start", "结束时间早于开始时间")
		}
		return p.checkPast(w)
	case !sOK && start.dayNamed():
		return w, p.problem(fmt.Sprintf("found a day (%s) but no time of day", p.day(sDay)),
			fmt.Sprintf("读到了日期（%s）却没有具体时间", p.day(sDay)))
	case !sOK:
		return w, p.problem(fmt.Sprintf("found no start time in %q", start.text), fmt.Sprintf("没能在“%s”里读到开始时间", start.text))
	}

	// 1. Hours on the 24-hour clock, before any day is settled.
	sh, sm, eh, em := 0, 0, eClock.h, eClock.m
	if !w.startNow {
		sh, sm = sClock.hour24(start.day.hour >= 12), sClock.m
	}
	if eOK {
		eh = eClock.hour24(end.day.hour >= 12)
	}
	bareEnd := eOK && !eClock.explicit() && end.day.hour < 0 && !end.dayNamed() && !w.startNow
	switch {
	case bareEnd && eh < 12 && eh*60+em <= sh*60+sm && (eh+12)*60+em > sh*60+sm:
		// "9-1": the end is in the afternoon. When the start said which
		// half of the day it is in ("下午3点半到5点", "tonight 8 to 11")
		// that is no guess.
		if !sClock.explicit() && start.day.hour < 0 {
			w.guess(fmt.Sprintf("%s-%s read as %02d:%02d–%02d:%02d", sClock.text, eClock.text, sh, sm, eh+12, em), fmt.Sprintf("%s-%s 理解为 %02d:%02d–%02d:%02d", sClock.text, eClock.text, sh, sm, eh+12, em))
		}
		eh += 12
	case eOK && !w.startNow && !sClock.explicit() && start.day.hour < 0 && eClock.explicit() && eh >= 12 && sh < 12 && (sh+12)*60+sm < eh*60+em:
		sh += 12 // "2 to 5pm"
	}
	if !w.startNow && !sClock.explicit() && start.day.hour < 0 && sh >= 1 && sh <= 6 && isDigits(sClock.text) {
		w.guess(fmt.Sprintf("%s read as %02d:00", sClock.text, sh), fmt.Sprintf("%s 理解为 %02d:00", sClock.text, sh))
	}

	// 2. A window with no day named moves to tomorrow once its start has passed.
	named := start.dayNamed() || end.dayNamed()
	if !named && !w.startNow && p.at(sDay, sh, sm, nil).Before(p.now) {
		sDay, eDay = sDay.add(1), eDay.add(1)
	}
	switch {
	case w.startNow:
		w.start = p.now
	case sClock.vague && sDay == dateOf(p.now) && p.at(sDay, sh, sm, nil).Before(p.now) && p.now.Sub(p.at(sDay, sh, sm, nil)) < vagueSpan:
		// "tonight for 3h" at 20:00: the evening has begun, so from now.
		w.start = p.now
		w.guess(fmt.Sprintf("%s read as from now", vagueText(sClock)), fmt.Sprintf("%s 理解为从现在开始", vagueText(sClock)))
	default:
		if sClock.vague {
			w.guess(fmt.Sprintf("%s read as %02d:%02d", vagueText(sClock), sh, sm), fmt.Sprintf("%s 理解为 %02d:%02d", vagueText(sClock), sh, sm))
		}
		w.start = p.at(sDay, sh, sm, &w)
	}
	if eOK {
		// 3. An end at or before the start is on the next day ("22-2").
		if !end.dayNamed() && !p.at(eDay, eh, em, nil).After(w.start) {
			eDay = eDay.add(1)
		}
		if eClock.vague {
			w.guess(fmt.Sprintf("%s read as %02d:%02d", vagueText(eClock), eh, em), fmt.Sprintf("%s 理解为 %02d:%02d", vagueText(eClock), eh, em))
		}
		w.end = p.at(eDay, eh, em, &w)
	}
	if eOK && !w.end.After(w.start) {
		return w, p.problem("the end comes before the start", "结束时间早于开始时间")
	}
	return p.checkPast(w)
}

// checkPast refuses a window whose named start has passed.
func (p *parser) checkPast(w windowRead) (windowRead, *ParseError) {
	if !w.startNow && w.start.Before(p.now) {
		return w, p.problem(fmt.Sprintf("that time has passed (%s)", p.stamp(w.start)),
			fmt.Sprintf("这个时间已经过去了（%s）", p.stamp(w.start)))
	}
	return w, nil
}

// dayOf resolves a side's day; relative is false only for a date written
// out (Dec 5, 12月5日, 2026-12-05).
func (p *parser) dayOf(m moment, today date, w *windowRead) (date, bool, *ParseError) {
	switch {
	case m.iso != nil:
		return p.validDate(*m.iso, m.text)
	case !m.day.named:
		return today, true, nil
	case m.day.month == 0 && m.day.year == 0 && m.day.day == 0:
		return today.add(m.day.offset), true, nil
	}
	d := date{today.y, today.m, today.d}
	if m.day.year != 0 {
		d.y = m.day.year
	}
	if m.day.month != 0 {
		d.m = m.day.month
	}
	if m.day.day != 0 {
		d.d = m.day.day
	}
	for d.m > 12 { // "下个月" in December
		d.y, d.m = d.y+1, d.m-12
	}
	for d.m < 1 {
		d.y, d.m = d.y-1, d.m+12
	}
	d, _, err := p.validDate(d, m.day.text)
	if err != nil {
		return d, false, err
	}
	if d.before(today) && m.day.year == 0 && !m.day.relative {
		if m.day.month == 0 {
			d.m++ // "5号" once the 5th has passed: next month's
			if d.m > 12 {
				d.y, d.m = d.y+1, 1
			}
		} else {
			d.y++
		}
		w.guess(fmt.Sprintf("%s read as %04d-%02d-%02d", unspace(m.day.text), d.y, d.m, d.d), fmt.Sprintf("%s 理解为 %04d-%02d-%02d", unspace(m.day.text), d.y, d.m, d.d))
		if d, _, err = p.validDate(d, m.day.text); err != nil { // Feb 29
			return d, false, err
		}
	}
	return d, m.day.relative, nil
}

func (p *parser) validDate(d date, text string) (date, bool, *ParseError) {
	t := time.Date(d.y, time.Month(d.m), d.d, 12, 0, 0, 0, time.UTC)
	if d.m < 1 || d.m > 12 || t.Day() != d.d || d.y < 2000 || d.y > 2200 {
		return d, false, p.problem(fmt.Sprintf("%q is not a date", strings.TrimSpace(text)), fmt.Sprintf("“%s”不是有效日期", strings.TrimSpace(text)))
	}
	return d, false, nil
}

// clockOf returns a side's clock: the one written, or the date library's
// hour for a vague part of the day.
func (p *parser) clockOf(m moment) (clockRead, bool) {
	if m.clock.set {
		return m.clock, true
	}
	if m.day.hour >= 0 {
		return clockRead{set: true, h: m.day.hour, m: m.day.min, mer: "24h", text: m.day.text, vague: true}, true
	}
	return clockRead{}, false
}

// at returns the instant of a wall-clock time on a day in the user's zone.
// An hour of 24 is the next day's midnight. A time skipped by a clock
// change moves forward; a repeated one is the first; both are noted in w
// when w is not nil.
func (p *parser) at(d date, h, m int, w *windowRead) time.Time {
	if h >= 24 {
		d, h = d.add(h/24), h%24
	}
	t := time.Date(d.y, time.Month(d.m), d.d, h, m, 0, 0, p.loc)
	switch {
	case t.Hour() != h || t.Minute() != m:
		if w != nil {
			w.guess(fmt.Sprintf("%02d:%02d does not exist on %04d-%02d-%02d (clocks go forward); read as %s",
				h, m, d.y, d.m, d.d, t.Format("15:04 MST")),
				fmt.Sprintf("%04d-%02d-%02d 没有 %02d:%02d（夏令时拨快）；理解为 %s", d.y, d.m, d.d, h, m, t.Format("15:04 MST")))
		}
	case sameWall(t.Add(-time.Hour), h, m):
		t = t.Add(-time.Hour)
		fallthrough
	case sameWall(t.Add(time.Hour), h, m):
		if w != nil {
			w.guess(fmt.Sprintf("%02d:%02d happens twice on %04d-%02d-%02d (clocks go back); read as the first, %s",
				h, m, d.y, d.m, d.d, t.Format("15:04 MST")),
				fmt.Sprintf("%04d-%02d-%02d 的 %02d:%02d 出现两次（夏令时拨回）；理解为第一次，%s", d.y, d.m, d.d, h, m, t.Format("15:04 MST")))
		}
	}
	return t
}

// unspace undoes spaceCJK for messages: "12 月 1 日" → "12月1日".
func unspace(s string) string {
	s = strings.TrimSpace(s)
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		if r == ' ' && i > 0 && i+1 < len(rs) && (unicode.Is(unicode.Han, rs[i-1]) || unicode.Is(unicode.Han, rs[i+1])) {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

func sameWall(t time.Time, h, m int) bool { return t.Hour() == h && t.Minute() == m }

// guess is something the parser had to guess, in both languages; the
// command's Ambiguous gets it in the language of the input.
type guess struct{ en, zh string }

func (w *windowRead) guess(en, zh string) { w.guesses = append(w.guesses, guess{en, zh}) }
