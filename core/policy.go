package core

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// Policy holds the site's booking rules.
type Policy struct {
	MinDuration time.Duration // shortest booking
	MaxDuration time.Duration // longest booking, extensions included
	Horizon     time.Duration // how far ahead a window may end
	PastGrace   time.Duration // how far in the past a window may start (clock skew, slow typing)
	MaxNote     int           // longest note, in characters
	MaxCalendar time.Duration // longest calendar range one request may ask for
}

// DefaultPolicy is what a site gets unless it configures otherwise.
var DefaultPolicy = Policy{
	MinDuration: 5 * time.Minute,
	MaxDuration: 14 * 24 * time.Hour,
	Horizon:     180 * 24 * time.Hour,
	PastGrace:   5 * time.Minute,
	MaxNote:     500,
	MaxCalendar: 93 * 24 * time.Hour,
}

// checkWindow validates a booking window at now.
func (p Policy) checkWindow(start, end, now time.Time) error {
	switch {
	case start.IsZero() || end.IsZero():
		return Errorf(CodeInvalid, "a booking needs a start and an end")
	case !end.After(start):
		return Errorf(CodeInvalid, "the end (%s) must be after the start (%s)", fmtTime(end), fmtTime(start))
	case start.Before(now.Add(-p.PastGrace)):
		return Errorf(CodeInvalid, "the start (%s) is in the past", fmtTime(start))
	case end.Sub(start) < p.MinDuration:
		return Errorf(CodeInvalid, "a booking must last at least %s", fmtDuration(p.MinDuration))
	case end.Sub(start) > p.MaxDuration:
		return Errorf(CodeInvalid, "a booking may last at most %s, this one lasts %s", fmtDuration(p.MaxDuration), fmtDuration(end.Sub(start)))
	case end.After(now.Add(p.Horizon)):
		return Errorf(CodeInvalid, "bookings may end at most %s ahead (by %s)", fmtDuration(p.Horizon), fmtTime(now.Add(p.Horizon)))
	}
	return nil
}

// checkExtension validates a reservation's new end at now.
func (p Policy) checkExtension(start, end, now time.Time) error {
	switch {
	case end.Sub(start) > p.MaxDuration:
		return Errorf(CodeInvalid, "a booking may last at most %s; extended, this one would last %s", fmtDuration(p.MaxDuration), fmtDuration(end.Sub(start)))
	case end.After(now.Add(p.Horizon)):
		return Errorf(CodeInvalid, "bookings may end at most %s ahead (by %s)", fmtDuration(p.Horizon), fmtTime(now.Add(p.Horizon)))
	}
	return nil
}

func (p Policy) checkNote(note string) error {
	if !utf8.ValidString(note) {
		return Errorf(CodeInvalid, "the note is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(note); n > p.MaxNote {
		return Errorf(CodeInvalid, "the note is %d characters long; at most %d are allowed", n, p.MaxNote)
	}
	return nil
}

// fmtTime formats an instant for messages. core has no user time zone, so
// messages say UTC; the edges show structured times in the user's zone.
func fmtTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// fmtDuration formats whole days and hours the way people say them.
func fmtDuration(d time.Duration) string {
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		if d == 24*time.Hour {
			return "1 day"
		}
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + " days"
	case d >= time.Hour && d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return d.String()
}
