package coretest

import (
	"context"
	"testing"

	"github.com/gpucal/gpucal/core"
)

// Env is the usual setup of a test that drives core: a Service over a fresh
// MemStore with a Clock pinned at Epoch.
type Env struct {
	Store   *MemStore
	Clock   *Clock
	Service *core.Service
}

// NewEnv returns an Env with DefaultPolicy; opts apply after the clock, so
// they may replace it.
func NewEnv(opts ...core.Option) *Env {
	e := &Env{Store: NewMemStore(), Clock: NewClock(Epoch)}
	e.Service = core.NewService(e.Store, append([]core.Option{core.WithClock(e.Clock.Now)}, opts...)...)
	return e
}

// AddNodes adds nodes as core.System and returns them with their IDs.
func (e *Env) AddNodes(tb testing.TB, nodes ...core.Node) []core.Node {
	tb.Helper()
	out := make([]core.Node, 0, len(nodes))
	for _, n := range nodes {
		got, err := e.Service.AddNode(context.Background(), core.System, n)
		if err != nil {
			tb.Fatalf("AddNode(%s): %v", n.Name, err)
		}
		out = append(out, got)
	}
	return out
}

// AddUsers adds plain users as core.System.
func (e *Env) AddUsers(tb testing.TB, names ...string) {
	tb.Helper()
	for _, name := range names {
		if _, err := e.Service.AddUser(context.Background(), core.System, core.User{Name: name}); err != nil {
			tb.Fatalf("AddUser(%s): %v", name, err)
		}
	}
}

// AddAdmin adds a site admin as core.System.
func (e *Env) AddAdmin(tb testing.TB, name string) {
	tb.Helper()
	if _, err := e.Service.AddUser(context.Background(), core.System, core.User{Name: name, Admin: true}); err != nil {
		tb.Fatalf("AddUser(%s): %v", name, err)
	}
}

// AddProject adds a project with members (already users) as core.System.
func (e *Env) AddProject(tb testing.TB, name string, members ...core.Member) {
	tb.Helper()
	if _, err := e.Service.AddProject(context.Background(), core.System, core.Project{Name: name, Members: members}); err != nil {
		tb.Fatalf("AddProject(%s): %v", name, err)
	}
}

// Actor returns user as an authenticated caller, with the admin flag and
// project roles from the store, the way Service.Authenticate builds it.
func (e *Env) Actor(tb testing.TB, user string) core.Actor {
	tb.Helper()
	var a core.Actor
	err := e.Store.View(context.Background(), func(tx core.Tx) error {
		u, err := tx.User(context.Background(), user)
		if err != nil {
			return err
		}
		roles, err := tx.Roles(context.Background(), user)
		a = core.Actor{User: u.Name, Admin: u.Admin, Roles: roles}
		return err
	})
	if err != nil {
		tb.Fatalf("Actor(%s): %v", user, err)
	}
	return a
}

// AuditLog returns every audit entry, newest first.
func (e *Env) AuditLog(tb testing.TB) []core.AuditEntry {
	tb.Helper()
	es, err := e.Service.AuditLog(context.Background(), core.System, core.AuditFilter{Limit: 1000})
	if err != nil {
		tb.Fatalf("AuditLog: %v", err)
	}
	return es
}
