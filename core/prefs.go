package core

import (
	"context"
	"fmt"
	"maps"
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"time"
)

// NotifyPrefs is what a person wants to hear about: the event kinds they
// muted, their quiet hours, [QuietFrom, QuietTo) in minutes after
// midnight in Zone (QuietFrom == QuietTo: none), and the channels they
// want each kind on. A notice that falls in quiet hours waits for their
// end; a muted kind is not sent.
type NotifyPrefs struct {
	User      string
	Muted     []EventKind
	QuietFrom int
	QuietTo   int
	Zone      string // IANA; "UTC" when unset
	// Via names the channels (PersonalChannels) a kind of notice goes to;
	// the kind AnyEvent ("*") stands for every kind not named. A kind
	// without a choice goes to every channel the person can be reached on,
	// and so does one whose chosen channels cannot reach them (no email
	// address, say): a choice never silences a notice; muting does.
	Via map[EventKind][]string
}

// AnyEvent is the key of NotifyPrefs.Via for every kind not named.
const AnyEvent EventKind = "*"

// PersonalChannels are the channels a person may choose in
// NotifyPrefs.Via: direct messages in Slack or Discord, and email.
var PersonalChannels = []string{"slack", "discord", ChannelEmail}

// channels returns the channels among reach that a notice of kind goes
// to, by the person's choice (see Via).
func (p NotifyPrefs) channels(kind EventKind, reach []string) []string {
	want, ok := p.Via[kind]
	if !ok {
		want = p.Via[AnyEvent]
	}
	if len(want) == 0 {
		return reach
	}
	var out []string
	for _, ch := range reach {
		if slices.Contains(want, ch) {
			out = append(out, ch)
		}
	}
	if len(out) == 0 {
		return reach
	}
	return out
}

// Mutable lists the event kinds a person may mute: everything but what the
// admins must hear (an admin may still mute those for themselves).
var Mutable = []EventKind{
	EventStarted, EventStartsSoon, EventStartMovedLater, EventPositionChanged, EventWillBeDrained,
	EventDrainWarning, EventFinished, EventForeignProcess, EventReservationSoon, EventNoShow, EventIdleAllocated,
	EventSaturated, EventNodeDown, EventNodeBack, EventGPUFault, EventNotificationFailed, EventDailySummary,
}

// Quiet reports whether t is inside the quiet hours, and when they end.
func (p NotifyPrefs) Quiet(t time.Time) (bool, time.Time) {
	if p.QuietFrom == p.QuietTo {
		return false, time.Time{}
	}
	loc, err := time.LoadLocation(p.Zone)
	if err != nil {
		loc = time.UTC
	}
	l := t.In(loc)
	m := l.Hour()*60 + l.Minute()
	in := false
	if p.QuietFrom < p.QuietTo {
		in = m >= p.QuietFrom && m < p.QuietTo
	} else { // across midnight: 22:00–08:00
		in = m >= p.QuietFrom || m < p.QuietTo
	}
	if !in {
		return false, time.Time{}
	}
	end := time.Date(l.Year(), l.Month(), l.Day(), p.QuietTo/60, p.QuietTo%60, 0, 0, loc)
	if !end.After(l) {
		end = end.AddDate(0, 0, 1)
	}
	return true, end.UTC()
}

// check validates the preferences.
func (p NotifyPrefs) check() error {
	for _, k := range p.Muted {
		if !slices.Contains(Mutable, k) {
			return Errorf(CodeInvalid, "%q is not an event one can mute; the events are listed in docs/notifications.md", k)
		}
	}
	for k, chans := range p.Via {
		if k != AnyEvent && !slices.Contains(Mutable, k) {
			return Errorf(CodeInvalid, "%q is not an event kind; the events are listed in docs/notifications.md", k)
		}
		if len(chans) == 0 {
			return Errorf(CodeInvalid, "choose at least one channel for %s, or none at all to have it everywhere", k)
		}
		for _, ch := range chans {
			if !slices.Contains(PersonalChannels, ch) {
				return Errorf(CodeInvalid, "%q is not a channel; choose among %s", ch, strings.Join(PersonalChannels, ", "))
			}
		}
	}
	if p.QuietFrom < 0 || p.QuietFrom >= 24*60 || p.QuietTo < 0 || p.QuietTo >= 24*60 {
		return Errorf(CodeInvalid, "quiet hours are times of day, 00:00 to 23:59")
	}
	if _, err := time.LoadLocation(p.Zone); err != nil || p.Zone == "" || p.Zone == "Local" {
		return Errorf(CodeInvalid, "%q is not a time zone; use a name like Europe/Berlin", p.Zone)
	}
	return nil
}

// NotifyPrefsOf returns a person's preferences (the defaults, nothing
// muted and no quiet hours, until they set some): for themself or an admin.
func (s *Service) NotifyPrefsOf(ctx context.Context, a Actor, user string) (NotifyPrefs, error) {
	if !a.Admin && a.User != user {
		return NotifyPrefs{}, Errorf(CodeForbidden, "only admins may see someone else's notification settings")
	}
	var p NotifyPrefs
	err := s.store.View(ctx, func(tx Tx) (err error) {
		if _, err := tx.User(ctx, user); err != nil {
			return err
		}
		p, err = tx.NotifyPrefs(ctx, user)
		return err
	})
	return p, err
}

// SetNotifyPrefs stores a person's preferences: for themself or an admin.
func (s *Service) SetNotifyPrefs(ctx context.Context, a Actor, p NotifyPrefs) (NotifyPrefs, error) {
	if !a.Admin && a.User != p.User {
		return NotifyPrefs{}, Errorf(CodeForbidden, "only admins may change someone else's notification settings")
	}
	if p.Zone == "" {
		p.Zone = "UTC"
	}
	if err := p.check(); err != nil {
		return NotifyPrefs{}, err
	}
	slices.Sort(p.Muted)
	p.Muted = slices.Compact(p.Muted)
	for k, chans := range p.Via {
		chans = slices.Clone(chans)
		slices.Sort(chans)
		p.Via[k] = slices.Compact(chans)
	}
	now := s.Now()
	err := s.store.Update(ctx, func(tx Tx) error {
		if err := tx.SetNotifyPrefs(ctx, p); err != nil {
			return err
		}
		return tx.Audit(ctx, AuditEntry{At: now, Actor: a.User, Action: "user.notify", Object: "user/" + p.User,
			Detail: fmt.Sprintf("muted %v, quiet %02d:%02d–%02d:%02d %s, via %s", p.Muted, p.QuietFrom/60, p.QuietFrom%60, p.QuietTo/60, p.QuietTo%60, p.Zone, FormatVia(p.Via))})
	})
	return p, err
}

// ParseQuietHours reads quiet hours written "22:00-08:00" (also "22-8",
// "22:00–08:00"); "" or "off" is none (0, 0).
func ParseQuietHours(s string) (from, to int, err error) {
	s = strings.TrimSpace(strings.ReplaceAll(s, "–", "-"))
	if s == "" || strings.EqualFold(s, "off") {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(s, "-")
	from, okA := clockMinutes(a)
	to, okB := clockMinutes(b)
	if !ok || !okA || !okB || from == to {
		return 0, 0, Errorf(CodeInvalid, "quiet hours %q: write them like 22:00-08:00, or off", s)
	}
	return from, to, nil
}

// clockMinutes reads "8", "08", "8:30" or "08:30" as minutes after midnight.
func clockMinutes(s string) (int, bool) {
	h, m, hasMin := strings.Cut(strings.TrimSpace(s), ":")
	if len(h) == 0 || len(h) > 2 || (hasMin && len(m) != 2) {
		return 0, false
	}
	hh, err := strconv.Atoi(h)
	if err != nil || hh < 0 || hh > 23 {
		return 0, false
	}
	mm := 0
	if hasMin {
		if mm, err = strconv.Atoi(m); err != nil || mm < 0 || mm > 59 {
			return 0, false
		}
	}
	return hh*60 + mm, true
}

// SetEmail sets the address a user's notices by email go to ("" for
// none): for themself or an admin.
func (s *Service) SetEmail(ctx context.Context, a Actor, user, email string) error {
	if !a.Admin && a.User != user {
		return Errorf(CodeForbidden, "only admins may change someone else's email address")
	}
	if err := CheckEmail(email); err != nil {
		return err
	}
	now := s.Now()
	return s.store.Update(ctx, func(tx Tx) error {
		if err := tx.SetEmail(ctx, user, email); err != nil {
			return err
		}
		return tx.Audit(ctx, AuditEntry{At: now, Actor: a.User, Action: "user.email", Object: "user/" + user, Detail: email})
	})
}

// EmailOf returns the email address of user ("" for none), for the
// notifier.
func (s *Service) EmailOf(ctx context.Context, user string) (string, error) {
	var email string
	err := s.store.View(ctx, func(tx Tx) error {
		u, err := tx.User(ctx, user)
		email = u.Email
		return err
	})
	return email, err
}

// CheckEmail checks an email address: a bare address, or "" for none.
func CheckEmail(email string) error {
	if email == "" {
		return nil
	}
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Address != email || len(email) > 254 {
		return Errorf(CodeInvalid, "%q is not an email address; write it like alice@example.org", email)
	}
	return nil
}

// FormatVia writes channel choices as ParseVia reads them: "*=slack;
// finished=email,slack", kinds in order with "*" first; "" for none.
func FormatVia(via map[EventKind][]string) string {
	kinds := slices.Sorted(maps.Keys(via)) // "*" sorts before any kind
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		parts = append(parts, string(k)+"="+strings.Join(via[k], ","))
	}
	return strings.Join(parts, ";")
}

// ParseVia reads channel choices written "slack,email" (every kind),
// "finished=email" (one kind), or several of them separated by ";"; a kind
// written "=default" (or "default" alone, for every kind) drops its
// choice. It changes a copy of via and returns it; the result is checked
// when the preferences are stored.
func ParseVia(via map[EventKind][]string, s string) (map[EventKind][]string, error) {
	out := maps.Clone(via)
	if out == nil {
		out = map[EventKind][]string{}
	}
	for part := range strings.SplitSeq(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		kind, list, ok := strings.Cut(part, "=")
		if !ok {
			kind, list = string(AnyEvent), part
		}
		kind = strings.TrimSpace(kind)
		if kind == "" {
			return nil, Errorf(CodeInvalid, "channels %q: write them like slack,email or finished=email", part)
		}
		var chans []string
		for ch := range strings.SplitSeq(list, ",") {
			if ch = strings.ToLower(strings.TrimSpace(ch)); ch != "" {
				chans = append(chans, ch)
			}
		}
		switch {
		case len(chans) == 1 && chans[0] == "default":
			delete(out, EventKind(kind))
		case len(chans) == 0:
			return nil, Errorf(CodeInvalid, "channels %q: name at least one of %s, or default", part, strings.Join(PersonalChannels, ", "))
		default:
			out[EventKind(kind)] = chans
		}
	}
	return out, nil
}
