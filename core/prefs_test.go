package core_test

import (
	"context"
	"testing"
	"time"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
)

func TestQuiet(t *testing.T) {
	berlin := func(h, m int) time.Time { // 2 Dec 2026, CET = UTC+1
		return time.Date(2026, 12, 2, h, m, 0, 0, time.FixedZone("CET", 3600))
	}
	night := core.NotifyPrefs{QuietFrom: 22 * 60, QuietTo: 8 * 60, Zone: "Europe/Berlin"}
	lunch := core.NotifyPrefs{QuietFrom: 12 * 60, QuietTo: 13 * 60, Zone: "Europe/Berlin"}
	tests := []struct {
		name    string
		p       core.NotifyPrefs
		at      time.Time
		quiet   bool
		endsUTC string
	}{
		{"none", core.NotifyPrefs{Zone: "UTC"}, berlin(3, 0), false, ""},
		{"late evening", night, berlin(23, 30), true, "2026-12-03T07:00:00Z"},
		{"small hours", night, berlin(3, 0), true, "2026-12-02T07:00:00Z"},
		{"the end itself", night, berlin(8, 0), false, ""},
		{"daytime", night, berlin(14, 0), false, ""},
		{"lunch", lunch, berlin(12, 59), true, "2026-12-02T12:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			quiet, end := tt.p.Quiet(tt.at)
			if quiet != tt.quiet || (quiet && end.Format(time.RFC3339) != tt.endsUTC) {
				t.Errorf("Quiet(%v) = %v, %v; want %v, %s", tt.at, quiet, end, tt.quiet, tt.endsUTC)
			}
		})
	}
}

func TestNotifyPrefs(t *testing.T) {
	ctx := context.Background()
	e := coretest.NewEnv()
	e.AddUsers(t, "alice", "bob")
	p, err := e.Service.NotifyPrefsOf(ctx, e.Actor(t, "alice"), "alice")
	if err != nil || len(p.Muted) != 0 || p.QuietFrom != p.QuietTo || p.Zone != "UTC" {
		t.Fatalf("defaults: %+v, %v", p, err)
	}
	set := core.NotifyPrefs{User: "alice", Muted: []core.EventKind{core.EventPositionChanged, core.EventPositionChanged}, QuietFrom: 22 * 60, QuietTo: 8 * 60, Zone: "Asia/Shanghai"}
	if got, err := e.Service.SetNotifyPrefs(ctx, e.Actor(t, "alice"), set); err != nil || len(got.Muted) != 1 {
		t.Fatalf("SetNotifyPrefs: %+v, %v", got, err)
	}
	if _, err := e.Service.SetNotifyPrefs(ctx, e.Actor(t, "bob"), set); core.ErrorCode(err) != core.CodeForbidden {
		t.Errorf("bob changed alice's settings: %v", err)
	}
	if _, err := e.Service.NotifyPrefsOf(ctx, e.Actor(t, "bob"), "alice"); core.ErrorCode(err) != core.CodeForbidden {
		t.Errorf("bob read alice's settings: %v", err)
	}
	for _, bad := range []core.NotifyPrefs{
		{User: "alice", Muted: []core.EventKind{"everything"}, Zone: "UTC"},
		{User: "alice", QuietFrom: 24 * 60, Zone: "UTC"},
		{User: "alice", Zone: "Mars/Olympus"},
	} {
		if _, err := e.Service.SetNotifyPrefs(ctx, e.Actor(t, "alice"), bad); core.ErrorCode(err) != core.CodeInvalid {
			t.Errorf("SetNotifyPrefs(%+v): %v; want invalid", bad, err)
		}
	}
	got, err := e.Service.NotifyPrefsOf(ctx, core.System, "alice")
	if err != nil || got.Zone != "Asia/Shanghai" || got.QuietFrom != 22*60 || len(got.Muted) != 1 {
		t.Errorf("stored: %+v, %v", got, err)
	}
}

func TestParseQuietHours(t *testing.T) {
	for in, want := range map[string][2]int{"22:00-08:00": {1320, 480}, "22-8": {1320, 480}, "12:30–13:00": {750, 780}, "": {0, 0}, "off": {0, 0}, " OFF ": {0, 0}} {
		from, to, err := core.ParseQuietHours(in)
		if err != nil || from != want[0] || to != want[1] {
			t.Errorf("ParseQuietHours(%q) = %d, %d, %v; want %v", in, from, to, err, want)
		}
	}
	for _, bad := range []string{"22", "22:00-", "25-8", "22:60-8", "8-8", "a-b", "22:0-8", "123-4"} {
		if _, _, err := core.ParseQuietHours(bad); core.ErrorCode(err) != core.CodeInvalid {
			t.Errorf("ParseQuietHours(%q): %v; want invalid", bad, err)
		}
	}
}

func FuzzParseQuietHours(f *testing.F) {
	for _, s := range []string{"22:00-08:00", "22-8", "off", "", "12:30–13:00", "x-y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		from, to, err := core.ParseQuietHours(s)
		if err != nil {
			return
		}
		if from < 0 || from >= 1440 || to < 0 || to >= 1440 {
			t.Fatalf("ParseQuietHours(%q) = %d, %d", s, from, to)
		}
	})
}

func TestEmail(t *testing.T) {
	ctx := context.Background()
	e := coretest.NewEnv()
	e.AddUsers(t, "bob")
	id := core.ChatIdentity{Platform: "slack", Team: "T1", ID: "U1"}
	a, _, err := e.Service.ChatActor(ctx, id, core.ChatProfile{Email: "carol@example.org"})
	if err != nil {
		t.Fatal(err)
	}
	email := func(user string) string {
		t.Helper()
		us, err := e.Service.Users(ctx, core.System)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range us {
			if u.Name == user {
				return u.Email
			}
		}
		return "?"
	}
	if got := email(a.User); got != "carol@example.org" {
		t.Errorf("email from the profile: %q", got)
	}
	// bob, linked later, gets the profile's address once; one he set stays.
	if _, err := e.Service.LinkChat(ctx, core.System, core.ChatIdentity{Platform: "slack", Team: "T1", ID: "U2"}, "bob"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Service.ChatActor(ctx, core.ChatIdentity{Platform: "slack", Team: "T1", ID: "U2"}, core.ChatProfile{Email: "bob@example.org"}); err != nil || email("bob") != "bob@example.org" {
		t.Errorf("bob's email %q, %v", email("bob"), err)
	}
	if err := e.Service.SetEmail(ctx, e.Actor(t, "bob"), "bob", "robert@example.org"); err != nil {
		t.Fatal(err)
	}
	e.Service.ChatActor(ctx, core.ChatIdentity{Platform: "slack", Team: "T1", ID: "U2"}, core.ChatProfile{Email: "bob@example.org"})
	if got := email("bob"); got != "robert@example.org" {
		t.Errorf("the profile overwrote an address bob set: %q", got)
	}
	for _, bad := range []string{"bob", "Bob <bob@example.org>", "a@b@c"} {
		if err := e.Service.SetEmail(ctx, e.Actor(t, "bob"), "bob", bad); core.ErrorCode(err) != core.CodeInvalid {
			t.Errorf("SetEmail(%q): %v", bad, err)
		}
	}
	if err := e.Service.SetEmail(ctx, e.Actor(t, "bob"), a.User, "x@example.org"); core.ErrorCode(err) != core.CodeForbidden {
		t.Errorf("bob set someone's email: %v", err)
	}
}

func TestParseVia(t *testing.T) {
	start := map[core.EventKind][]string{core.AnyEvent: {"slack"}, core.EventFinished: {"email"}}
	for _, c := range []struct{ in, want string }{
		{"", "*=slack;finished=email"},
		{"discord", "*=discord;finished=email"},
		{"started=Discord, Email", "*=slack;finished=email;started=discord,email"},
		{"finished=default", "*=slack"},
		{"default; started=slack", "finished=email;started=slack"},
	} {
		got, err := core.ParseVia(start, c.in)
		if err != nil || core.FormatVia(got) != c.want {
			t.Errorf("ParseVia(%q) = %q, %v; want %q", c.in, core.FormatVia(got), err, c.want)
		}
	}
	if core.FormatVia(start) != "*=slack;finished=email" {
		t.Errorf("ParseVia changed its argument: %v", start)
	}
	for _, bad := range []string{"finished=", "=slack", " ; =x"} {
		if _, err := core.ParseVia(nil, bad); core.ErrorCode(err) != core.CodeInvalid {
			t.Errorf("ParseVia(%q): %v; want invalid", bad, err)
		}
	}
}

// FuzzParseVia: what ParseVia reads, FormatVia writes back to the same.
func FuzzParseVia(f *testing.F) {
	for _, s := range []string{"slack", "finished=email,slack;*=discord", "default", "x=default;;", "a=b=c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		via, err := core.ParseVia(nil, s)
		if err != nil {
			return
		}
		again, err := core.ParseVia(nil, core.FormatVia(via))
		if err != nil {
			t.Fatalf("%q: its own format %q does not read back: %v", s, core.FormatVia(via), err)
		}
		if core.FormatVia(again) != core.FormatVia(via) {
			t.Fatalf("%q: %q then %q", s, core.FormatVia(via), core.FormatVia(again))
		}
	})
}
