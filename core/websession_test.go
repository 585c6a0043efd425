package core_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gpucal/gpucal/core"
)

func TestSignInLink(t *testing.T) {
	e := newEnv(t)
	alice := e.Actor(t, "alice")

	link, expires, err := e.Service.CreateSignInLink(ctx, alice, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := e.Clock.Now().Add(core.SignInLinkTTL); !expires.Equal(want) || !core.IsWebToken(link) {
		t.Fatalf("link %q expires %v; want a web token expiring %v", link, expires, want)
	}
	sess, a, _, err := e.Service.RedeemSignInLink(ctx, link)
	if err != nil {
		t.Fatal(err)
	}
	if a.User != "alice" || sess == link {
		t.Errorf("redeemed as %q with session %q; want alice and a new token", a.User, sess)
	}
	got, err := e.Service.SessionActor(ctx, sess)
	if err != nil || got.User != "alice" {
		t.Fatalf("SessionActor = %+v, %v; want alice", got, err)
	}

	t.Run("a link works once", func(t *testing.T) {
		_, _, _, err := e.Service.RedeemSignInLink(ctx, link)
		wantError(t, err, core.CodeUnauthorized, "used already or expired")
	})
	t.Run("a link is no session, a session no link", func(t *testing.T) {
		_, err := e.Service.SessionActor(ctx, link)
		wantError(t, err, core.CodeUnauthorized, "sign in again")
		_, _, _, err = e.Service.RedeemSignInLink(ctx, sess)
		wantError(t, err, core.CodeUnauthorized, "not valid")
	})
	t.Run("an expired link fails", func(t *testing.T) {
		old, _, err := e.Service.CreateSignInLink(ctx, alice, "alice")
		if err != nil {
			t.Fatal(err)
		}
		e.Clock.Advance(core.SignInLinkTTL)
		_, _, _, err = e.Service.RedeemSignInLink(ctx, old)
		wantError(t, err, core.CodeUnauthorized, "expired")
	})
	t.Run("only admins link others", func(t *testing.T) {
		_, _, err := e.Service.CreateSignInLink(ctx, alice, "bob")
		wantError(t, err, core.CodeForbidden, "only admins")
		if _, _, err := e.Service.CreateSignInLink(ctx, e.Actor(t, "root"), "bob"); err != nil {
			t.Error(err)
		}
		_, _, err = e.Service.CreateSignInLink(ctx, e.Actor(t, "root"), "nobody")
		wantError(t, err, core.CodeNotFound, "nobody")
	})
	t.Run("sign out", func(t *testing.T) {
		if err := e.Service.EndSession(ctx, sess); err != nil {
			t.Fatal(err)
		}
		_, err := e.Service.SessionActor(ctx, sess)
		wantError(t, err, core.CodeUnauthorized, "sign in again")
	})
}

func TestStartSession(t *testing.T) {
	e := newEnv(t)
	tok, err := e.Service.CreateToken(ctx, e.Actor(t, "root"), "bob", "laptop", false)
	if err != nil {
		t.Fatal(err)
	}
	sess, a, expires, err := e.Service.StartSession(ctx, " "+tok+"\n")
	if err != nil || a.User != "bob" || a.Roles["vision"] != core.RoleAdmin {
		t.Fatalf("StartSession = %+v, %v; want bob, vision admin", a, err)
	}
	if _, err := e.Service.SessionActor(ctx, sess); err != nil {
		t.Fatal(err)
	}
	_, _, _, err = e.Service.StartSession(ctx, "gpucal_nope")
	wantError(t, err, core.CodeUnauthorized, "not valid")

	e.Clock.Set(expires)
	_, err = e.Service.SessionActor(ctx, sess)
	wantError(t, err, core.CodeUnauthorized, "sign in again")
	e.Clock.Advance(25 * time.Hour)
	if n, err := e.Service.PruneWebSessions(ctx); err != nil || n != 1 {
		t.Errorf("PruneWebSessions = %d, %v; want 1", n, err)
	}
}

func FuzzIsWebToken(f *testing.F) {
	f.Add("gpucalweb_" + strings.Repeat("ab", 24))
	f.Add("gpucal_" + strings.Repeat("0", 48))
	f.Add("gpucalweb_" + strings.Repeat("AB", 24))
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		ok := core.IsWebToken(s)
		if ok && (len(s) != len("gpucalweb_")+48 || !strings.HasPrefix(s, "gpucalweb_") || strings.ToLower(s) != s) {
			t.Errorf("IsWebToken(%q) = true for a malformed token", s)
		}
	})
}
