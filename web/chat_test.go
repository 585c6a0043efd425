package web_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/gpucal/gpucal/web"
)

func TestChatLinks(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	slackBob := web.ChatLink{Platform: "slack", Team: "T1", ID: "U2"}

	if _, err := f.alice.LinkChat(ctx, "alice", slackBob); apiErr(t, err).Status != http.StatusForbidden {
		t.Errorf("alice linked an identity: %v", err)
	}
	for _, bad := range []web.ChatLink{{Platform: "irc", Team: "T1", ID: "U2"}, {Platform: "slack", ID: "U2"}, {Platform: "slack", Team: "T1"}} {
		if _, err := f.admin.LinkChat(ctx, "bob", bad); apiErr(t, err).Status != http.StatusUnprocessableEntity {
			t.Errorf("linking %+v: %v; want 422", bad, err)
		}
	}
	if _, err := f.admin.LinkChat(ctx, "nobody", slackBob); apiErr(t, err).Status != http.StatusNotFound {
		t.Errorf("linking to a missing user: %v; want 404", err)
	}
	l, err := f.admin.LinkChat(ctx, "bob", slackBob)
	if err != nil || l.User != "bob" || l.Platform != "slack" || l.Team != "T1" || l.ID != "U2" {
		t.Fatalf("LinkChat: %+v, %v", l, err)
	}
	// Linking again points the identity elsewhere.
	if l, err := f.admin.LinkChat(ctx, "alice", slackBob); err != nil || l.User != "alice" {
		t.Fatalf("relinking: %+v, %v", l, err)
	}
	ls, err := f.alice.ChatLinks(ctx, "alice")
	if err != nil || len(ls) != 1 || ls[0].ID != "U2" {
		t.Errorf("alice's links: %+v, %v", ls, err)
	}
	if ls, err := f.admin.ChatLinks(ctx, "bob"); err != nil || len(ls) != 0 {
		t.Errorf("bob's links after the relink: %+v, %v", ls, err)
	}
	if _, err := f.bob.ChatLinks(ctx, "alice"); apiErr(t, err).Status != http.StatusForbidden {
		t.Errorf("bob read alice's links: %v", err)
	}
}

func TestNotifyPrefsRoutes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p, err := f.alice.NotifyPrefs(ctx, "alice")
	if err != nil || len(p.Muted) != 0 || p.Quiet != "" || p.Zone != "UTC" {
		t.Fatalf("defaults: %+v, %v", p, err)
	}
	p, err = f.alice.SetNotifyPrefs(ctx, "alice", web.NotifyPrefs{Muted: []string{"position_changed"}, Quiet: "22-8", Zone: "Europe/Berlin"})
	if err != nil || p.Quiet != "22:00-08:00" || p.Zone != "Europe/Berlin" || len(p.Muted) != 1 {
		t.Fatalf("set: %+v, %v", p, err)
	}
	if _, err := f.bob.SetNotifyPrefs(ctx, "alice", web.NotifyPrefs{Zone: "UTC"}); apiErr(t, err).Status != http.StatusForbidden {
		t.Errorf("bob changed alice's settings: %v", err)
	}
	for _, bad := range []web.NotifyPrefs{{Quiet: "late", Zone: "UTC"}, {Muted: []string{"all"}, Zone: "UTC"}, {Zone: "Nowhere/Land"}} {
		if _, err := f.alice.SetNotifyPrefs(ctx, "alice", bad); apiErr(t, err).Status != http.StatusUnprocessableEntity {
			t.Errorf("set %+v: %v; want 422", bad, err)
		}
	}
	if _, err := f.alice.SetNotifyPrefs(ctx, "alice", web.NotifyPrefs{Quiet: "23-7", Zone: "UTC", Email: "not an address"}); apiErr(t, err).Status != http.StatusUnprocessableEntity {
		t.Errorf("a bad email: %v; want 422", err)
	}
	if p, _ := f.admin.NotifyPrefs(ctx, "alice"); p.Quiet != "22:00-08:00" || p.Email != "" {
		t.Errorf("a refused change changed %+v", p)
	}
	if p, err := f.alice.SetNotifyPrefs(ctx, "alice", web.NotifyPrefs{Zone: "UTC", Email: "alice@example.org"}); err != nil || p.Email != "alice@example.org" {
		t.Errorf("setting the email: %+v, %v", p, err)
	}
	if p, _ := f.alice.NotifyPrefs(ctx, "alice"); p.Email != "alice@example.org" {
		t.Errorf("the stored email: %+v", p)
	}
}
