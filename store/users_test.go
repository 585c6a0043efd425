package store

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/store/storetest"
)

func TestUsers(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()

		err := f.db.Update(ctx, func(tx core.Tx) error { return tx.InsertUser(ctx, core.User{Name: "alice", CreatedAt: t0}) })
		wantCode(t, err, core.CodeConflict, "user alice already exists")
		err = f.db.View(ctx, func(tx core.Tx) error { _, err := tx.User(ctx, "zed"); return err })
		wantCode(t, err, core.CodeNotFound, "user zed not found")
		err = f.db.Update(ctx, func(tx core.Tx) error { return tx.SetAdmin(ctx, "zed", true) })
		wantCode(t, err, core.CodeNotFound, "user zed not found")

		update(t, f.db, func(tx core.Tx) error { return tx.SetAdmin(ctx, "alice", true) })
		update(t, f.db, func(tx core.Tx) error { return tx.SetAdmin(ctx, "bob", false) })
		var got []core.User
		view(t, f.db, func(tx core.Tx) (err error) { got, err = tx.Users(ctx); return err })
		want := []core.User{{Name: "alice", Admin: true, CreatedAt: t0}, {Name: "bob", CreatedAt: t0}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Users (-want +got):\n%s", diff)
		}
	})
}

func TestProjects(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()

		err := f.db.Update(ctx, func(tx core.Tx) error { return tx.InsertProject(ctx, core.Project{Name: "ml", CreatedAt: t0}) })
		wantCode(t, err, core.CodeConflict, "project ml already exists")
		err = f.db.View(ctx, func(tx core.Tx) error { _, err := tx.Project(ctx, "vision"); return err })
		wantCode(t, err, core.CodeNotFound, "project vision not found")
		err = f.db.Update(ctx, func(tx core.Tx) error {
			return tx.SetMember(ctx, "ml", core.Member{User: "zed", Role: core.RoleMember})
		})
		wantCode(t, err, core.CodeNotFound, "project ml or user zed not found")

		update(t, f.db, func(tx core.Tx) error {
			if err := tx.InsertProject(ctx, core.Project{Name: "infra", CreatedAt: hours(1)}); err != nil {
				return err
			}
			if err := tx.SetMember(ctx, "infra", core.Member{User: "bob", Role: core.RoleMember}); err != nil {
				return err
			}
			// Setting a member again changes the role.
			if err := tx.SetMember(ctx, "infra", core.Member{User: "bob", Role: core.RoleAdmin}); err != nil {
				return err
			}
			return tx.SetMember(ctx, "infra", core.Member{User: "alice", Role: core.RoleMember})
		})

		infra := core.Project{Name: "infra", CreatedAt: hours(1), Members: []core.Member{{User: "alice", Role: core.RoleMember}, {User: "bob", Role: core.RoleAdmin}}}
		ml := core.Project{Name: "ml", CreatedAt: t0, Members: []core.Member{{User: "alice", Role: core.RoleMember}}}
		var one core.Project
		var all []core.Project
		var roles map[string]core.Role
		var none map[string]core.Role
		view(t, f.db, func(tx core.Tx) (err error) {
			if one, err = tx.Project(ctx, "infra"); err != nil {
				return err
			}
			if all, err = tx.Projects(ctx); err != nil {
				return err
			}
			if roles, err = tx.Roles(ctx, "alice"); err != nil {
				return err
			}
			none, err = tx.Roles(ctx, "nobody")
			return err
		})
		for _, c := range []struct {
			name      string
			want, got any
		}{
			{"Project", infra, one},
			{"Projects", []core.Project{infra, ml}, all},
			{"Roles(alice)", map[string]core.Role{"infra": core.RoleMember, "ml": core.RoleMember}, roles},
			{"Roles(nobody)", map[string]core.Role{}, none},
		} {
			if diff := cmp.Diff(c.want, c.got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", c.name, diff)
			}
		}
	})
}

func TestTokens(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		tok := core.Token{User: "alice", Name: "laptop", Hash: core.HashToken("gpucal_x"), CreatedAt: t0}
		update(t, f.db, func(tx core.Tx) error { return tx.InsertToken(ctx, &tok) })
		if tok.ID == 0 {
			t.Error("InsertToken left the ID at 0")
		}
		dup := tok
		err := f.db.Update(ctx, func(tx core.Tx) error { return tx.InsertToken(ctx, &dup) })
		wantCode(t, err, core.CodeConflict, "")
		orphan := core.Token{User: "zed", Hash: "other", CreatedAt: t0}
		err = f.db.Update(ctx, func(tx core.Tx) error { return tx.InsertToken(ctx, &orphan) })
		wantCode(t, err, core.CodeNotFound, "user zed not found")

		var got core.User
		view(t, f.db, func(tx core.Tx) (err error) { got, err = tx.TokenUser(ctx, tok.Hash); return err })
		if diff := cmp.Diff(core.User{Name: "alice", CreatedAt: t0}, got); diff != "" {
			t.Errorf("TokenUser (-want +got):\n%s", diff)
		}
		err = f.db.View(ctx, func(tx core.Tx) error { _, err := tx.TokenUser(ctx, "nope"); return err })
		wantCode(t, err, core.CodeNotFound, "token not found")
	})
}

func TestNodes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		for _, n := range []core.Node{f.a100, f.h100} {
			for i, g := range n.GPUs {
				if g.ID == 0 || g.NodeID != n.ID || g.Node != n.Name || g.Index != i {
					t.Errorf("InsertNode(%s) filled in GPU %d as %+v", n.Name, i, g)
				}
			}
		}
		var got []core.Node
		view(t, f.db, func(tx core.Tx) (err error) { got, err = tx.Nodes(ctx); return err })
		if diff := cmp.Diff([]core.Node{f.a100, f.h100}, got); diff != "" {
			t.Errorf("Nodes (-want +got):\n%s", diff)
		}

		gpu := func(uuid string) []core.GPU {
			return []core.GPU{{Index: 0, Name: "NVIDIA L4", MemoryMiB: 23034, UUID: uuid, State: core.GPUUp}}
		}
		for _, tc := range []struct {
			name string
			node core.Node
			msg  string
		}{
			{"taken name", core.Node{Name: "a100-1", GPUs: gpu("GPU-new")}, "node a100-1 already exists"},
			{"taken UUID", core.Node{Name: "l4-1", GPUs: gpu("GPU-a100-2")}, "GPU UUID GPU-a100-2 already exists"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				err := f.db.Update(ctx, func(tx core.Tx) error { return tx.InsertNode(ctx, &tc.node) })
				wantCode(t, err, core.CodeConflict, tc.msg)
			})
		}
		// The failed inserts left nothing behind.
		view(t, f.db, func(tx core.Tx) (err error) { got, err = tx.Nodes(ctx); return err })
		if len(got) != 2 {
			t.Errorf("Nodes returned %d nodes after failed inserts, want 2", len(got))
		}
	})
}

func TestAudit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		entries := []core.AuditEntry{
			{At: hours(0), Actor: "bob", Action: "user.add", Object: "user/alice", Detail: "admin=false"},
			{At: hours(1), Actor: "alice", Action: "reservation.book", Object: "r1", Detail: "1 GPU(s)"},
			{At: hours(1), Actor: "bob", Action: "reservation.cancel", Object: "r1"},
			{At: hours(2), Actor: "alice", Action: "reservation.book", Object: "r2"},
		}
		update(t, f.db, func(tx core.Tx) error {
			for _, e := range entries {
				if err := tx.Audit(ctx, e); err != nil {
					return err
				}
			}
			return nil
		})
		for _, tc := range []struct {
			name   string
			filter core.AuditFilter
			want   []int // indexes into entries
		}{
			{"all, newest first", core.AuditFilter{}, []int{3, 2, 1, 0}},
			{"by actor", core.AuditFilter{Actor: "bob"}, []int{2, 0}},
			{"by object", core.AuditFilter{Object: "r1"}, []int{2, 1}},
			{"limit", core.AuditFilter{Limit: 2}, []int{3, 2}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var got []core.AuditEntry
				view(t, f.db, func(tx core.Tx) (err error) { got, err = tx.AuditLog(ctx, tc.filter); return err })
				want := []core.AuditEntry{}
				for _, i := range tc.want {
					want = append(want, entries[i])
				}
				if diff := cmp.Diff(want, got, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".ID" }, cmp.Ignore())); diff != "" {
					t.Errorf("AuditLog(%+v) (-want +got):\n%s", tc.filter, diff)
				}
			})
		}
	})
}

func TestSetEmail(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		update(t, f.db, func(tx core.Tx) error { return tx.SetEmail(ctx, "alice", "alice@example.org") })
		var u core.User
		view(t, f.db, func(tx core.Tx) (err error) { u, err = tx.User(ctx, "alice"); return err })
		if u.Email != "alice@example.org" {
			t.Errorf("email %q", u.Email)
		}
		err := f.db.Update(ctx, func(tx core.Tx) error { return tx.SetEmail(ctx, "zed", "z@example.org") })
		wantCode(t, err, core.CodeNotFound, "user zed not found")
	})
}
