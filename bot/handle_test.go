package bot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpucal/gpucal/bot"
	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
)

// fixture is a service with two 8×A100 nodes, one 4×H100 node, users
// alice and bob, and a handler in Europe/Berlin (UTC+1 in January).
type fixture struct {
	env     *coretest.Env
	h       *bot.Handler
	alice   bot.Request
	bob     bot.Request
	changes int
}

var berlin = mustZone("Europe/Berlin")

func mustZone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{env: coretest.NewEnv()}
	f.env.AddNodes(t,
		coretest.Node("node-1").GPUs(8, "NVIDIA A100-SXM4-80GB").Build(),
		coretest.Node("node-2").GPUs(8, "NVIDIA A100-SXM4-80GB").Build(),
		coretest.Node("node-3").GPUs(4, "NVIDIA H100 80GB HBM3").Build(),
	)
	f.env.AddUsers(t, "alice", "bob")
	f.h = bot.NewHandler(f.env.Service, bot.Config{WebURL: "https://gpucal.example.org", OnChange: func() { f.changes++ }})
	f.alice = bot.Request{Actor: f.env.Actor(t, "alice"), Loc: berlin}
	f.bob = bot.Request{Actor: f.env.Actor(t, "bob"), Loc: berlin}
	return f
}

func (f *fixture) reservations(t *testing.T) []core.Reservation {
	t.Helper()
	rs, err := f.env.Service.Reservations(context.Background(), core.System, core.ReservationFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// wantReply checks a reply's plain text: it must contain every part.
func wantReply(t *testing.T, r bot.Reply, wantErr bool, parts ...string) {
	t.Helper()
	if r.Error != wantErr {
		t.Errorf("reply %q: error %v, want %v", r.String(), r.Error, wantErr)
	}
	for _, p := range parts {
		if !strings.Contains(r.String(), p) {
			t.Errorf("reply %q does not say %q", r.String(), p)
		}
	}
}

// Epoch is Monday 7 January 2030, 09:00 UTC = 10:00 in Berlin.

func TestBookAndButtons(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	r := f.h.Handle(ctx, f.alice, "book 4 a100 tomorrow 9-13 for llama finetune")
	wantReply(t, r, false, "Booked 4×A100 on node-1 (GPUs 0–3), Tue 8 Jan 09:00–13:00 (your time).", "Reservation: r1", "Note: llama finetune", "[Cancel] [Extend 1h]")
	rs := f.reservations(t)
	if len(rs) != 1 || rs[0].Owner != "alice" || !rs[0].Start.Equal(time.Date(2030, 1, 8, 8, 0, 0, 0, time.UTC)) || rs[0].Note != "llama finetune" {
		t.Fatalf("reservations %+v; want alice's 08:00–12:00 UTC", rs)
	}
	if f.changes != 1 {
		t.Errorf("OnChange called %d times, want 1", f.changes)
	}

	// Bob presses alice's Extend button: refused, nothing changes.
	extend := r.Buttons[1].Command
	wantReply(t, f.h.Execute(ctx, f.bob, extend), true, "may")
	if got := f.reservations(t)[0].End; !got.Equal(rs[0].End) {
		t.Errorf("bob's press moved the end to %v", got)
	}
	// Alice presses it.
	wantReply(t, f.h.Execute(ctx, f.alice, extend), false, "r1 now ends Tue 8 Jan 14:00.")
	// And cancels.
	wantReply(t, f.h.Execute(ctx, f.alice, r.Buttons[0].Command), false, "Cancelled r1 (4×A100, Tue 8 Jan 09:00–14:00).")
	if st := f.reservations(t)[0].State; st != core.Cancelled {
		t.Errorf("state %s after cancel", st)
	}
	if f.changes != 3 {
		t.Errorf("OnChange called %d times, want 3", f.changes)
	}
}

func TestBookChinese(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	r := f.h.Handle(ctx, f.alice, "预定 明天上午9点到下午1点 4张A100")
	wantReply(t, r, false, "已预定 4张A100，node-1（GPU 0–3），1月8日周二 09:00–13:00（你的时区）。", "预定编号: r1", "[取消] [延长1小时]")
	if r.Lang != "zh" {
		t.Errorf("lang %q, want zh", r.Lang)
	}
}

func TestBookConflictOffersAlternatives(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	wantReply(t, f.h.Handle(ctx, f.bob, "book 4 h100 tomorrow 9-13"), false, "Booked 4×H100")
	r := f.h.Handle(ctx, f.alice, "book 2 h100 tomorrow 10-12")
	wantReply(t, r, true, "2×H100 is not free for Tue 8 Jan 10:00–12:00.", "earliest Tue 8 Jan 13:00–15:00", "Held by: r1 (bob)", "[Book Tue 8 Jan 13:00]")
	if len(r.Buttons) == 0 {
		t.Fatal("no buttons")
	}
	// Pressing the first offer books it; pressing it again (same key) books nothing more.
	req := f.alice
	req.Key = "press-1"
	wantReply(t, f.h.Execute(ctx, req, r.Buttons[0].Command), false, "Booked 2×H100 on node-3", "Tue 8 Jan 13:00–15:00")
	wantReply(t, f.h.Execute(ctx, req, r.Buttons[0].Command), false, "Booked 2×H100 on node-3")
	if n := len(f.reservations(t)); n != 2 {
		t.Errorf("%d reservations after two presses of one button, want 2 (bob's and one of alice's)", n)
	}
}

func TestViews(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	wantReply(t, f.h.Handle(ctx, f.alice, "book 2 a100 tomorrow 9-13 for eval"), false, "Booked")
	if _, err := f.env.Service.Submit(ctx, f.alice.Actor, core.SubmitRequest{GPUs: 8, Model: "a100", Name: "llama-ft",
		Command: []string{"python", "train.py"}, Hints: core.Hints{Guess: 3 * time.Hour}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.env.Service.Replan(ctx, f.env.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		text  string
		want  []string
		req   bot.Request
		isErr bool
	}{
		{"mine", []string{"You have 1 booking(s) and 1 job(s).", "r1 2×A100, Tue 8 Jan 09:00–13:00 — eval", "j1 alice llama-ft 8×A100", "[Cancel r1]"}, f.alice, false},
		{"mine", []string{"You have 0 booking(s) and 0 job(s)."}, f.bob, false},
		{"status", []string{"20 GPUs on 3 nodes: 8 running jobs, 0 reserved and idle, 12 free, 0 down.", "A100-80GB: 8 busy, 0 reserved, 8 free, 0 down (of 16)", "H100-80GB: 0 busy, 0 reserved, 4 free, 0 down (of 4)"}, f.bob, false},
		{"when 8 h100 12h", []string{"only 4"}, f.bob, true},
		{"when 4 h100 2h", []string{"4×H100: starts now", "node-3 (GPUs 0–3)"}, f.bob, false},
		{"when 4 h100 2h tomorrow 9am", []string{"Predictions start from now; to be sure of Tue 8 Jan 09:00–11:00, book it.", "[Book it]"}, f.bob, false},
		{"calendar", []string{"Web: https://gpucal.example.org"}, f.bob, false},
		{"help", []string{"/gpu book 4 a100 tomorrow 9-13"}, f.bob, false},
		{"帮助", []string{"/gpu 预定"}, f.bob, false},
		{"web", []string{"The calendar: https://gpucal.example.org — your sign-in link (works once, for 15 minutes", "https://gpucal.example.org/signin/link?t=gpucalweb_"}, f.bob, false},
		{"网页", []string{"日历：https://gpucal.example.org — 你的登录链接", "/signin/link?t=gpucalweb_"}, f.bob, false},
		{"cancel r1", []string{"may"}, f.bob, true},
		{"cancel r99", []string{"r99"}, f.alice, true},
		{"extend r1 1h", []string{"r1 now ends Tue 8 Jan 14:00."}, f.alice, false},
		{"book 4 a100 tomorow 9-13", []string{"try"}, f.alice, true},
		{"tz Asia/Shanghai", []string{"Time zones are set per chat user"}, f.alice, true},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			wantReply(t, f.h.Handle(ctx, tt.req, tt.text), tt.isErr, tt.want...)
		})
	}
}

func TestSetZone(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	id := core.ChatIdentity{Platform: "slack", Team: "T1", ID: "U1"}
	a, _, err := f.env.Service.ChatActor(ctx, id, core.ChatProfile{Handle: "carol"})
	if err != nil {
		t.Fatal(err)
	}
	req := bot.Request{Actor: a, Identity: id, Loc: time.UTC}
	wantReply(t, f.h.Handle(ctx, req, "tz Asia/Shanghai"), false, "Your time zone is now Asia/Shanghai (it is 17:00 there).")
	wantReply(t, f.h.Handle(ctx, req, "tz Mars/Olympus"), true, "not a time zone")
	wantReply(t, f.h.Handle(ctx, req, "帮助"), false, "/gpu 预定")
	_, cu, err := f.env.Service.ChatActor(ctx, id, core.ChatProfile{})
	if err != nil || cu.Zone != "Asia/Shanghai" || cu.Lang != "zh" {
		t.Errorf("zone %q, lang %q, %v; want Asia/Shanghai and zh (the language last written)", cu.Zone, cu.Lang, err)
	}
}

func TestAmbiguousBookingAsksFirst(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	r := f.h.Execute(ctx, f.alice, bot.Command{Kind: bot.KindBook, GPUs: 2, Model: "a100",
		Start: time.Date(2030, 1, 8, 8, 0, 0, 0, time.UTC), End: time.Date(2030, 1, 8, 12, 0, 0, 0, time.UTC),
		Ambiguous: "9-1 read as 09:00–13:00", Lang: "en"})
	wantReply(t, r, false, "I read that as 2×A100, Tue 8 Jan 09:00–13:00 (9-1 read as 09:00–13:00). Book it?", "[Book it]")
	if n := len(f.reservations(t)); n != 0 {
		t.Fatalf("%d reservations before the confirmation", n)
	}
	wantReply(t, f.h.Execute(ctx, f.alice, r.Buttons[0].Command), false, "Booked 2×A100")
	if n := len(f.reservations(t)); n != 1 {
		t.Errorf("%d reservations after the confirmation, want 1", n)
	}
}

// TestNotifySettings: /gpu notify shows and changes the same settings as
// gpucal notices, in either language; quiet hours are in the chat zone;
// bad input changes nothing.
func TestNotifySettings(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	wantReply(t, f.h.Handle(ctx, f.alice, "notify"), false, "What you are told without asking:", "Muted: nothing", "Quiet hours: none",
		"Channels: every channel you can be reached on")
	wantReply(t, f.h.Handle(ctx, f.alice, "notify mute position starts_soon"), false, "Saved.", "Muted: position_changed, starts_soon")
	wantReply(t, f.h.Handle(ctx, f.alice, "notify quiet 22-8"), false, "Quiet hours: 22:00–08:00 Europe/Berlin")
	wantReply(t, f.h.Handle(ctx, f.alice, "notify finished via email slack"), false,
		"Channels: finished: email, slack; the rest: every channel you can be reached on")
	wantReply(t, f.h.Handle(ctx, f.alice, "通知 取消静音 排位"), false, "已保存", "已静音: starts_soon", "免打扰: 22:00–08:00 Europe/Berlin")
	wantReply(t, f.h.Handle(ctx, f.alice, "通知 渠道 discord"), false, "渠道: 全部: discord; finished: email, slack")
	p, err := f.env.Service.NotifyPrefsOf(ctx, f.alice.Actor, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if got := core.FormatVia(p.Via); got != "*=discord;finished=email,slack" || len(p.Muted) != 1 || p.QuietFrom != 22*60 || p.Zone != "Europe/Berlin" {
		t.Errorf("stored %+v (via %s)", p, got)
	}
	for _, bad := range []string{"notify mute everything", "notify via pager", "notify quiet soon", "notify frobnicate"} {
		wantReply(t, f.h.Handle(ctx, f.alice, bad), true)
	}
	// A kind one cannot choose a channel for, as a button might carry it.
	r := f.h.Execute(ctx, f.alice, bot.Command{Kind: bot.KindNotify, Lang: "en", Notify: &bot.NotifyChange{For: "bogus", Via: []string{"email"}}})
	wantReply(t, r, true, `"bogus" is not an event kind`)
	wantReply(t, f.h.Handle(ctx, f.alice, "notify unmute all"), false, "Muted: nothing")
	wantReply(t, f.h.Handle(ctx, f.alice, "notify via default"), false, "Channels: every channel you can be reached on")
	if after, _ := f.env.Service.NotifyPrefsOf(ctx, f.alice.Actor, "alice"); len(after.Via) != 0 || after.QuietFrom != 22*60 {
		t.Errorf("after the resets: %+v", after)
	}
}

// TestWebLink checks that the link /gpu web sends signs its asker in, once.
func TestWebLink(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	r := f.h.Handle(ctx, f.bob, "web")
	if len(r.Lines) != 1 {
		t.Fatalf("reply %+v, want one line with the link", r)
	}
	_, token, ok := strings.Cut(r.Lines[0], "?t=")
	if !ok {
		t.Fatalf("%q holds no token", r.Lines[0])
	}
	if _, a, _, err := f.env.Service.RedeemSignInLink(ctx, token); err != nil || a.User != f.bob.Actor.User {
		t.Fatalf("redeeming the link: %+v, %v; want %s", a, err, f.bob.Actor.User)
	}
	if _, _, _, err := f.env.Service.RedeemSignInLink(ctx, token); core.ErrorCode(err) != core.CodeUnauthorized {
		t.Errorf("a second use: %v, want unauthorized", err)
	}
}
