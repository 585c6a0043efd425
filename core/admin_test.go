package core_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
)

func TestCreateToken(t *testing.T) {
	tests := []struct {
		name      string
		actor     string
		user      string
		admin     bool
		want      core.Actor // who the token authenticates as
		wantAudit []core.AuditEntry
	}{
		{
			name: "for oneself", actor: "alice",
			want:      core.Actor{User: "alice", Roles: map[string]core.Role{"vision": core.RoleMember}},
			wantAudit: []core.AuditEntry{{Actor: "alice", Action: "token.create", Object: "user/alice"}},
		},
		{
			name: "admin for a new user", actor: "root", user: "eve",
			want: core.Actor{User: "eve"},
			wantAudit: []core.AuditEntry{
				{Actor: "root", Action: "user.add", Object: "user/eve"},
				{Actor: "root", Action: "token.create", Object: "user/eve"},
			},
		},
		{
			name: "admin token for a new user", actor: "root", user: "eve", admin: true,
			want: core.Actor{User: "eve", Admin: true},
			wantAudit: []core.AuditEntry{
				{Actor: "root", Action: "user.add", Object: "user/eve"},
				{Actor: "root", Action: "token.create", Object: "user/eve"},
			},
		},
		{
			name: "admin token promotes a user", actor: "root", user: "bob", admin: true,
			want: core.Actor{User: "bob", Admin: true, Roles: map[string]core.Role{"vision": core.RoleAdmin}},
			wantAudit: []core.AuditEntry{
				{Actor: "root", Action: "user.admin", Object: "user/bob"},
				{Actor: "root", Action: "token.create", Object: "user/bob"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			before := snapshot(t, e)
			token, err := e.Service.CreateToken(ctx, e.Actor(t, tt.actor), tt.user, "laptop", tt.admin)
			if err != nil {
				t.Fatalf("CreateToken: %v", err)
			}
			if !strings.HasPrefix(token, "gpucal_") {
				t.Errorf("token %q lacks the gpucal_ prefix", token)
			}
			got, err := e.Service.Authenticate(ctx, token)
			if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Authenticate mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantAudit, newAudit(t, e, before)); diff != "" {
				t.Errorf("audit mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCreateTokenRefused(t *testing.T) {
	tests := []struct {
		name     string
		actor    string
		user     string
		tokName  string
		admin    bool
		code     core.Code
		fragment string
	}{
		{"for someone else", "alice", "bob", "", false, core.CodeForbidden, "only admins"},
		{"admin token", "alice", "", "", true, core.CodeForbidden, "only admins"},
		{"project admin for a member", "bob", "alice", "", false, core.CodeForbidden, "only admins"},
		{"bad user name", "root", "Eve Smith", "", false, core.CodeInvalid, "user name"},
		{"long token name", "alice", "", strings.Repeat("x", 101), false, core.CodeInvalid, "longer than 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			before := snapshot(t, e)
			_, err := e.Service.CreateToken(ctx, e.Actor(t, tt.actor), tt.user, tt.tokName, tt.admin)
			wantError(t, err, tt.code, tt.fragment)
			unchanged(t, e, before)
		})
	}
}

func TestAuthenticateRefused(t *testing.T) {
	e := newEnv(t)
	if _, err := e.Service.CreateToken(ctx, e.Actor(t, "alice"), "", "", false); err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{"", "gpucal_0000", "Bearer x"} {
		t.Run(token, func(t *testing.T) {
			_, err := e.Service.Authenticate(ctx, token)
			wantError(t, err, core.CodeUnauthorized, "token")
		})
	}
}

func TestInstallToken(t *testing.T) {
	e := coretest.NewEnv()
	if has, err := e.Service.HasAdmin(ctx); err != nil || has {
		t.Fatalf("HasAdmin on an empty store = %t, %v; want false", has, err)
	}
	const token = "bootstrap-secret-123"
	before := snapshot(t, e)
	if err := e.Service.InstallToken(ctx, "admin", token); err != nil {
		t.Fatalf("InstallToken: %v", err)
	}
	wantAudit := []core.AuditEntry{
		{Actor: "gpucal", Action: "user.add", Object: "user/admin"},
		{Actor: "gpucal", Action: "token.install", Object: "user/admin"},
	}
	if diff := cmp.Diff(wantAudit, newAudit(t, e, before)); diff != "" {
		t.Errorf("audit mismatch (-want +got):\n%s", diff)
	}
	if has, err := e.Service.HasAdmin(ctx); err != nil || !has {
		t.Errorf("HasAdmin after install = %t, %v; want true", has, err)
	}
	got, err := e.Service.Authenticate(ctx, token)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	if diff := cmp.Diff(core.Actor{User: "admin", Admin: true}, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Authenticate mismatch (-want +got):\n%s", diff)
	}

	t.Run("again changes nothing", func(t *testing.T) {
		before := snapshot(t, e)
		if err := e.Service.InstallToken(ctx, "admin", token); err != nil {
			t.Fatalf("InstallToken again: %v", err)
		}
		unchanged(t, e, before)
	})
	t.Run("wrong token", func(t *testing.T) {
		_, err := e.Service.Authenticate(ctx, token+"x")
		wantError(t, err, core.CodeUnauthorized, "not valid")
	})
	refused := []struct {
		name, user, token string
		code              core.Code
		fragment          string
	}{
		{"someone else's token", "other", token, core.CodeConflict, "already belongs to admin"},
		{"empty token", "admin", "", core.CodeInvalid, "must not be empty"},
		{"bad user name", "Not A Name", "another-secret-456", core.CodeInvalid, "user name"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			before := snapshot(t, e)
			err := e.Service.InstallToken(ctx, tt.user, tt.token)
			wantError(t, err, tt.code, tt.fragment)
			unchanged(t, e, before)
		})
	}
}

func TestAdminOnly(t *testing.T) {
	tests := []struct {
		name     string
		do       func(e *coretest.Env, a core.Actor) error
		fragment string
	}{
		{"add node", func(e *coretest.Env, a core.Actor) error {
			_, err := e.Service.AddNode(ctx, a, coretest.Node("new").GPUs(1, a100).Build())
			return err
		}, "only admins may add nodes"},
		{"add user", func(e *coretest.Env, a core.Actor) error {
			_, err := e.Service.AddUser(ctx, a, core.User{Name: "eve"})
			return err
		}, "only admins may add users"},
		{"add project", func(e *coretest.Env, a core.Actor) error {
			_, err := e.Service.AddProject(ctx, a, core.Project{Name: "nlp"})
			return err
		}, "only admins may add projects"},
		{"audit log", func(e *coretest.Env, a core.Actor) error {
			_, err := e.Service.AuditLog(ctx, a, core.AuditFilter{})
			return err
		}, "only admins may read the audit log"},
		{"set member of another project", func(e *coretest.Env, a core.Actor) error {
			return e.Service.SetMember(ctx, a, "vision", core.Member{User: "dave"})
		}, "only admins of project vision"},
	}
	for _, tt := range tests {
		for _, user := range []string{"alice", "carol", "dave"} {
			t.Run(tt.name+"/"+user, func(t *testing.T) {
				e := newEnv(t)
				before := snapshot(t, e)
				wantError(t, tt.do(e, e.Actor(t, user)), core.CodeForbidden, tt.fragment)
				unchanged(t, e, before)
			})
		}
	}
}

func TestAdminOps(t *testing.T) {
	tests := []struct {
		name      string
		actor     string
		do        func(e *coretest.Env, a core.Actor) error
		code      core.Code // "" for success
		fragment  string
		wantAudit []core.AuditEntry
	}{
		{
			name: "project admin adds a member", actor: "bob",
			do: func(e *coretest.Env, a core.Actor) error {
				return e.Service.SetMember(ctx, a, "vision", core.Member{User: "dave"})
			},
			wantAudit: []core.AuditEntry{{Actor: "bob", Action: "project.member", Object: "project/vision"}},
		},
		{
			name: "bad role", actor: "root", code: core.CodeInvalid, fragment: "role",
			do: func(e *coretest.Env, a core.Actor) error {
				return e.Service.SetMember(ctx, a, "vision", core.Member{User: "dave", Role: "owner"})
			},
		},
		{
			name: "member of no project", actor: "root", code: core.CodeNotFound, fragment: "nope",
			do: func(e *coretest.Env, a core.Actor) error {
				return e.Service.SetMember(ctx, a, "nope", core.Member{User: "dave"})
			},
		},
		{
			name: "no such member", actor: "root", code: core.CodeNotFound, fragment: "ghost",
			do: func(e *coretest.Env, a core.Actor) error {
				return e.Service.SetMember(ctx, a, "vision", core.Member{User: "ghost"})
			},
		},
		{
			name: "node twice", actor: "root", code: core.CodeConflict, fragment: "already exists",
			do: func(e *coretest.Env, a core.Actor) error {
				_, err := e.Service.AddNode(ctx, a, coretest.Node("a100-1").GPUs(1, "NVIDIA L40S").Build())
				return err
			},
		},
		{
			name: "invalid node", actor: "root", code: core.CodeInvalid, fragment: "lower-case",
			do: func(e *coretest.Env, a core.Actor) error {
				_, err := e.Service.AddNode(ctx, a, coretest.Node("Bad").GPUs(1, a100).Build())
				return err
			},
		},
		{
			name: "user twice", actor: "root", code: core.CodeConflict, fragment: "already exists",
			do: func(e *coretest.Env, a core.Actor) error {
				_, err := e.Service.AddUser(ctx, a, core.User{Name: "alice"})
				return err
			},
		},
		{
			name: "invalid user", actor: "root", code: core.CodeInvalid, fragment: "user name",
			do: func(e *coretest.Env, a core.Actor) error {
				_, err := e.Service.AddUser(ctx, a, core.User{Name: "-x"})
				return err
			},
		},
		{
			name: "project with an unknown member is not created", actor: "root", code: core.CodeInvalid, fragment: `"ghost" does not exist`,
			do: func(e *coretest.Env, a core.Actor) error {
				_, err := e.Service.AddProject(ctx, a, core.Project{Name: "nlp", Members: []core.Member{{User: "alice"}, {User: "ghost"}}})
				if err2 := e.Service.SetMember(ctx, a, "nlp", core.Member{User: "dave"}); core.ErrorCode(err2) != core.CodeNotFound {
					return fmt.Errorf("project nlp exists after AddProject failed (%v): SetMember = %v", err, err2)
				}
				return err
			},
		},
		{
			name: "project with members", actor: "root",
			do: func(e *coretest.Env, a core.Actor) error {
				_, err := e.Service.AddProject(ctx, a, core.Project{Name: "nlp", Members: []core.Member{{User: "dave", Role: core.RoleAdmin}}})
				return err
			},
			wantAudit: []core.AuditEntry{{Actor: "root", Action: "project.add", Object: "project/nlp"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			before := snapshot(t, e)
			err := tt.do(e, e.Actor(t, tt.actor))
			if tt.code != "" {
				wantError(t, err, tt.code, tt.fragment)
				unchanged(t, e, before)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantAudit, newAudit(t, e, before)); diff != "" {
				t.Errorf("audit mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProjectsAndUsers(t *testing.T) {
	e := newEnv(t)
	ps, err := e.Service.Projects(ctx, e.Actor(t, "dave"))
	if err != nil {
		t.Fatal(err)
	}
	want := []core.Project{{Name: "vision", CreatedAt: epoch, Members: []core.Member{
		{User: "alice", Role: core.RoleMember}, {User: "bob", Role: core.RoleAdmin}, {User: "carol", Role: core.RoleMember},
	}}}
	if diff := cmp.Diff(want, ps); diff != "" {
		t.Errorf("Projects mismatch (-want +got):\n%s", diff)
	}
	us, err := e.Service.Users(ctx, e.Actor(t, "dave"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range us {
		names = append(names, u.Name)
	}
	if diff := cmp.Diff([]string{"alice", "bob", "carol", "dave", "root"}, names); diff != "" {
		t.Errorf("Users mismatch (-want +got):\n%s", diff)
	}
	es, err := e.Service.AuditLog(ctx, core.System, core.AuditFilter{Object: "user/alice"})
	if err != nil || len(es) != 1 || es[0].Action != "user.add" {
		t.Errorf("AuditLog(user/alice) = %+v, %v; want the one user.add", es, err)
	}
}
