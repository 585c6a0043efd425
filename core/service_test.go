package core_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
)

// Helpers shared by the Service tests.

const (
	a100 = "NVIDIA A100-SXM4-80GB"
	h100 = "NVIDIA H100 80GB HBM3"
)

var ctx = context.Background()

// newEnv returns a Service over a MemStore holding nodes (by default
// a100-1 with 8 A100s, a100-2 with 4 and h100-1 with 8 H100s), the users
// alice, bob, carol and dave, the site admin root, and the project vision
// where alice and carol are members and bob is an admin. dave is in no project.
func newEnv(t *testing.T, nodes ...core.Node) *coretest.Env {
	t.Helper()
	if nodes == nil {
		nodes = []core.Node{
			coretest.Node("a100-1").GPUs(8, a100).Build(),
			coretest.Node("a100-2").GPUs(4, a100).Build(),
			coretest.Node("h100-1").GPUs(8, h100).Build(),
		}
	}
	e := coretest.NewEnv()
	e.AddNodes(t, nodes...)
	e.AddUsers(t, "alice", "bob", "carol", "dave")
	e.AddAdmin(t, "root")
	e.AddProject(t, "vision",
		core.Member{User: "alice"}, core.Member{User: "bob", Role: core.RoleAdmin}, core.Member{User: "carol"})
	return e
}

// state is what a test compares to prove that a refused request changed nothing.
type state struct {
	Reservations []core.Reservation
	Audit        []core.AuditEntry
}

func snapshot(t *testing.T, e *coretest.Env) state {
	t.Helper()
	var s state
	err := e.Store.View(ctx, func(tx core.Tx) (err error) {
		if s.Reservations, err = tx.Reservations(ctx, core.ReservationFilter{}); err != nil {
			return err
		}
		s.Audit, err = tx.AuditLog(ctx, core.AuditFilter{})
		return err
	})
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	return s
}

// unchanged fails t when the store differs from before.
func unchanged(t *testing.T, e *coretest.Env, before state) {
	t.Helper()
	if diff := cmp.Diff(before, snapshot(t, e)); diff != "" {
		t.Errorf("a refused request changed the store (-before +after):\n%s", diff)
	}
}

// newAudit returns the audit entries written since before, oldest first,
// with their IDs, times and details cleared.
func newAudit(t *testing.T, e *coretest.Env, before state) []core.AuditEntry {
	t.Helper()
	after := snapshot(t, e).Audit
	fresh := after[:len(after)-len(before.Audit)]
	out := make([]core.AuditEntry, 0, len(fresh))
	for _, a := range slices.Backward(fresh) {
		a.ID, a.At, a.Detail = 0, time.Time{}, ""
		out = append(out, a)
	}
	return out
}

// wantError fails t unless err is a domain error with code whose message
// mentions fragment, and returns it.
func wantError(t *testing.T, err error, code core.Code, fragment string) *core.Error {
	t.Helper()
	var de *core.Error
	if !errors.As(err, &de) {
		t.Fatalf("err = %v (%T), want a *core.Error with code %q", err, err, code)
	}
	if de.Code != code {
		t.Fatalf("err code = %q (%v), want %q", de.Code, err, code)
	}
	if !strings.Contains(de.Message, fragment) {
		t.Errorf("err = %q, want it to mention %q", de.Message, fragment)
	}
	return de
}

// gpuRefs returns the references to GPUs idx of node, as the store numbered them.
func gpuRefs(t *testing.T, e *coretest.Env, node string, idx ...int) []core.GPURef {
	t.Helper()
	var nodes []core.Node
	if err := e.Store.View(ctx, func(tx core.Tx) (err error) { nodes, err = tx.Nodes(ctx); return err }); err != nil {
		t.Fatal(err)
	}
	var out []core.GPURef
	for _, n := range nodes {
		if n.Name != node {
			continue
		}
		for _, i := range idx {
			out = append(out, n.GPUs[i].Ref())
		}
	}
	if len(out) != len(idx) {
		t.Fatalf("node %s has no GPUs %v", node, idx)
	}
	return out
}

// book books req as actor and fails t on error.
func book(t *testing.T, e *coretest.Env, actor string, req core.BookRequest) core.Reservation {
	t.Helper()
	r, err := e.Service.Book(ctx, e.Actor(t, actor), req)
	if err != nil {
		t.Fatalf("Book(%s, %+v): %v", actor, req, err)
	}
	return r
}
