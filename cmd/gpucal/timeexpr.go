package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gpucal/gpucal/core"
)

// The time expressions the client commands accept, in the user's zone:
//
//	2026-12-03T09:00:00+01:00   RFC 3339
//	2026-12-03 09:00            a date and a clock time (also 2026-12-03T09:00)
//	2026-12-03                  a date, at midnight
//	today 14:00, tomorrow 9:00, tomorrow 9am, monday 10:00, 14:30
//	today, tomorrow, now
//	+2h, +1d, +90m              from now
var (
	clockRe   = regexp.MustCompile(`^(\d{1,2})(?::(\d{2}))?\s*(am|pm)?$`)
	weekdays  = map[string]time.Weekday{"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday, "thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday}
	dateForms = []string{"2006-01-02 15:04", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02T15:04:05"}
)

// parseWhen reads a time expression relative to now in loc.
func parseWhen(s string, now time.Time, loc *time.Location) (time.Time, error) {
	in := strings.ToLower(strings.Join(strings.Fields(s), " "))
	bad := fmt.Errorf("cannot read %q as a time; try \"2026-12-03 09:00\", \"tomorrow 9:00\", \"today 14:00\" or \"+2h\"", s)
	now = now.In(loc)
	if in == "" || len(in) > 64 {
		return time.Time{}, bad
	}
	if in == "now" {
		return now.Truncate(time.Second), nil
	}
	if rest, ok := strings.CutPrefix(in, "+"); ok {
		d, err := core.ParseDuration(rest)
		if err != nil {
			return time.Time{}, bad
		}
		return now.Add(d).Truncate(time.Second), nil
	}
	if t, err := time.Parse(time.RFC3339, strings.ToUpper(in)); err == nil {
		return t, nil
	}
	for _, f := range dateForms {
		if t, err := time.ParseInLocation(f, strings.ToUpper(in), loc); err == nil {
			return t, nil
		}
	}
	if t, err := time.ParseInLocation("2006-01-02", in, loc); err == nil {
		return t, nil
	}

	// A day word, then optionally a clock time; or a clock time alone (today).
	day, clock, _ := strings.Cut(in, " ")
	base, ok := dayStart(day, now)
	if !ok {
		base, clock = dayStart0(now), in
	}
	if clock == "" {
		return base, nil
	}
	h, m, ok := parseClock(clock)
	if !ok {
		return time.Time{}, bad
	}
	return time.Date(base.Year(), base.Month(), base.Day(), h, m, 0, 0, loc), nil
}

// dayStart resolves a day word to the midnight that starts it.
func dayStart(word string, now time.Time) (time.Time, bool) {
	today := dayStart0(now)
	switch word {
	case "today":
		return today, true
	case "tomorrow":
		return today.AddDate(0, 0, 1), true
	}
	if len(word) >= 3 {
		if wd, ok := weekdays[word[:3]]; ok && strings.HasPrefix(fullWeekday(wd), word) {
			ahead := (int(wd) - int(now.Weekday()) + 7) % 7
			return today.AddDate(0, 0, ahead), true // today when it is that day
		}
	}
	return time.Time{}, false
}

func dayStart0(now time.Time) time.Time {
	return time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
}

func fullWeekday(wd time.Weekday) string { return strings.ToLower(wd.String()) }

// parseClock reads "9", "9:30", "14:00", "9am", "9:30 pm".
func parseClock(s string) (h, m int, ok bool) {
	g := clockRe.FindStringSubmatch(strings.TrimSpace(s))
	if g == nil {
		return 0, 0, false
	}
	h, _ = strconv.Atoi(g[1])
	if g[2] != "" {
		m, _ = strconv.Atoi(g[2])
	}
	switch g[3] {
	case "am", "pm":
		if h < 1 || h > 12 {
			return 0, 0, false
		}
		h %= 12
		if g[3] == "pm" {
			h += 12
		}
	}
	if h > 23 || m > 59 {
		return 0, 0, false
	}
	return h, m, true
}

// parseEnd reads an end time: "+4h" counts from start; anything else as parseWhen.
func parseEnd(s string, start, now time.Time, loc *time.Location) (time.Time, error) {
	if rest, ok := strings.CutPrefix(strings.TrimSpace(s), "+"); ok {
		d, err := core.ParseDuration(rest)
		if err != nil {
			return time.Time{}, fmt.Errorf("cannot read %q as a length; write it like +4h or +90m", s)
		}
		return start.Add(d), nil
	}
	return parseWhen(s, now, loc)
}
