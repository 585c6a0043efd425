package core_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
)

func TestChatActor(t *testing.T) {
	ctx := context.Background()
	slack := func(id string) core.ChatIdentity { return core.ChatIdentity{Platform: "slack", Team: "T1", ID: id} }
	tests := []struct {
		name     string
		id       core.ChatIdentity
		profile  core.ChatProfile
		want     core.Actor
		wantZone string
	}{
		{"named after the email", slack("U1"), core.ChatProfile{Handle: "al", Email: "Alice.Smith@example.org", Zone: "Europe/Berlin"},
			core.Actor{User: "alice.smith"}, ""},
		{"never an existing user", slack("U2"), core.ChatProfile{Handle: "bob", Name: "Bob"},
			core.Actor{User: "bob-2"}, ""},
		{"the next free suffix", slack("U3"), core.ChatProfile{Email: "bob@example.org"},
			core.Actor{User: "bob-3"}, ""},
		{"handle with spaces and accents", slack("U4"), core.ChatProfile{Handle: "Zoë Li", Zone: "Not/AZone"},
			core.Actor{User: "zo-li"}, ""},
		{"nothing usable", core.ChatIdentity{Platform: "discord", Team: "G1", ID: "8812"}, core.ChatProfile{Handle: "李雷"},
			core.Actor{User: "discord-8812"}, ""},
		{"a configured admin", slack("U5"), core.ChatProfile{Handle: "root2", Admin: true},
			core.Actor{User: "root2", Admin: true}, ""},
	}
	e := coretest.NewEnv()
	e.AddUsers(t, "bob")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, cu, err := e.Service.ChatActor(ctx, tt.id, tt.profile)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, a, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("actor (-want +got):\n%s", diff)
			}
			if cu.User != tt.want.User || cu.Zone != tt.wantZone || cu.ChatIdentity != tt.id {
				t.Errorf("chat user %+v; want user %s zone %q", cu, tt.want.User, tt.wantZone)
			}
			// The second use finds the same user, whatever the profile says now.
			again, _, err := e.Service.ChatActor(ctx, tt.id, core.ChatProfile{Handle: "someone-else"})
			if err != nil || again.User != a.User {
				t.Errorf("second use: %v, %v; want %s", again, err, a.User)
			}
		})
	}

	t.Run("admin granted later, never taken", func(t *testing.T) {
		if a, _, _ := e.Service.ChatActor(ctx, slack("U3"), core.ChatProfile{Admin: true}); !a.Admin {
			t.Errorf("%s is not admin after the site configured it", a.User)
		}
		if a, _, _ := e.Service.ChatActor(ctx, slack("U3"), core.ChatProfile{}); !a.Admin {
			t.Errorf("%s lost admin", a.User)
		}
	})
	t.Run("zone", func(t *testing.T) {
		cu, err := e.Service.SetChatZone(ctx, slack("U2"), "Asia/Shanghai")
		if err != nil || cu.Zone != "Asia/Shanghai" || cu.Location(time.UTC).String() != "Asia/Shanghai" {
			t.Errorf("SetChatZone: %+v, %v", cu, err)
		}
		for _, bad := range []string{"", "Local", "Mars/Olympus", "../../etc/passwd"} {
			if _, err := e.Service.SetChatZone(ctx, slack("U2"), bad); core.ErrorCode(err) != core.CodeInvalid {
				t.Errorf("SetChatZone(%q): %v; want invalid", bad, err)
			}
		}
		if _, err := e.Service.SetChatZone(ctx, slack("U99"), "UTC"); core.ErrorCode(err) != core.CodeNotFound {
			t.Errorf("SetChatZone of an unknown identity: %v", err)
		}
	})
	t.Run("the profile's zone until one is chosen", func(t *testing.T) {
		_, cu, err := e.Service.ChatActor(ctx, slack("U1"), core.ChatProfile{Zone: "America/New_York"})
		if err != nil {
			t.Fatal(err)
		}
		if got := cu.Location(core.ProfileZone(core.ChatProfile{Zone: "America/New_York"}, time.UTC)).String(); got != "America/New_York" {
			t.Errorf("zone %s; want the profile's", got)
		}
		if got := cu.Location(core.ProfileZone(core.ChatProfile{Zone: "Not/AZone"}, time.UTC)).String(); got != "UTC" {
			t.Errorf("zone %s; want the fallback", got)
		}
	})
	t.Run("link", func(t *testing.T) {
		if _, err := e.Service.LinkChat(ctx, e.Actor(t, "bob"), slack("U2"), "bob"); core.ErrorCode(err) != core.CodeForbidden {
			t.Errorf("a user linked an identity: %v", err)
		}
		if _, err := e.Service.LinkChat(ctx, core.System, slack("U2"), "bob"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Service.LinkChat(ctx, core.System, slack("U7"), "bob"); err != nil {
			t.Fatal(err)
		}
		a, _, err := e.Service.ChatActor(ctx, slack("U2"), core.ChatProfile{})
		if err != nil || a.User != "bob" {
			t.Errorf("after the link: %v, %v; want bob", a, err)
		}
		cs, err := e.Service.ChatUsers(ctx, "bob")
		if err != nil || len(cs) != 2 || cs[0].ID != "U2" || cs[1].ID != "U7" || cs[0].Zone != "Asia/Shanghai" {
			t.Errorf("ChatUsers(bob) = %+v, %v", cs, err)
		}
		if _, err := e.Service.LinkChat(ctx, core.System, slack("U2"), "nobody"); core.ErrorCode(err) != core.CodeNotFound {
			t.Errorf("linked to a missing user: %v", err)
		}
	})
	t.Run("bad identity", func(t *testing.T) {
		if _, _, err := e.Service.ChatActor(ctx, core.ChatIdentity{Platform: "slack"}, core.ChatProfile{}); core.ErrorCode(err) != core.CodeInvalid {
			t.Errorf("empty identity: %v", err)
		}
	})
}
