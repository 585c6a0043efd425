package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/store/storetest"
)

// nodes reads every node.
func (f *fixture) nodes(t testing.TB) []core.Node {
	t.Helper()
	var ns []core.Node
	view(t, f.db, func(tx core.Tx) (err error) { ns, err = tx.Nodes(context.Background()); return err })
	return ns
}

func TestUpdateNode(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()

		// The agent's first heartbeat: the node is ready, one GPU reads
		// hot and faulty, another is renamed and resized, a fifth GPU
		// appears.
		n := f.a100
		n.State, n.LastSeen, n.Agent, n.NVML = core.NodeReady, hours(1).Add(123*time.Millisecond), "v0.4.1", ""
		n.GPUs = append([]core.GPU(nil), f.a100.GPUs...)
		n.GPUs[0].Telemetry = core.Telemetry{At: hours(1), Util: 87.5, UsedMiB: 40960, TempC: 71.25, PowerW: 312.5, XID: 79, AgentFault: "process 7 outlived SIGKILL of j3"}
		n.GPUs[1].Fault, n.GPUs[1].State = "XID 79: fallen off the bus", core.GPUDown
		n.GPUs[2].Name, n.GPUs[2].MemoryMiB = "NVIDIA A100-SXM4-40GB", 40960
		n.GPUs = append(n.GPUs, core.GPU{Index: 4, Name: "NVIDIA A100-SXM4-80GB", MemoryMiB: 81920, UUID: "GPU-a100-4"})
		update(t, f.db, func(tx core.Tx) error { return tx.UpdateNode(ctx, &n) })
		added := n.GPUs[4]
		if added.ID == 0 || added.NodeID != n.ID || added.Node != n.Name || added.State != core.GPUUp {
			t.Errorf("UpdateNode filled in the new GPU as %+v", added)
		}
		if diff := cmp.Diff([]core.Node{n, f.h100}, f.nodes(t)); diff != "" {
			t.Errorf("Nodes after UpdateNode (-want +got):\n%s", diff)
		}

		// A later heartbeat lists only some GPUs: the others stay. The
		// node goes suspect and NVML fails; the faulty GPU is cleared.
		m := n
		m.State, m.NVML = core.NodeSuspect, "nvml: driver/library version mismatch"
		m.GPUs = []core.GPU{n.GPUs[1]}
		m.GPUs[0].Fault, m.GPUs[0].State, m.GPUs[0].Telemetry = "", core.GPUUp, core.Telemetry{}
		update(t, f.db, func(tx core.Tx) error { return tx.UpdateNode(ctx, &m) })
		want := n
		want.State, want.NVML = m.State, m.NVML
		want.GPUs = append([]core.GPU(nil), n.GPUs...)
		want.GPUs[1] = m.GPUs[0]
		if diff := cmp.Diff([]core.Node{want, f.h100}, f.nodes(t)); diff != "" {
			t.Errorf("Nodes after a partial UpdateNode (-want +got):\n%s", diff)
		}

		for _, tc := range []struct {
			name string
			node func() core.Node
			code core.Code
			msg  string
		}{
			{"unknown node", func() core.Node { return core.Node{ID: 999, Name: "ghost", State: core.NodeReady} }, core.CodeNotFound, "node ghost not found"},
			{"another node's GPU", func() core.Node {
				o := want
				o.GPUs = []core.GPU{f.h100.GPUs[0]}
				return o
			}, core.CodeNotFound, ""},
			{"unknown node state", func() core.Node { o := want; o.State = "lost"; return o }, core.CodeInvalid, ""},
			{"unknown GPU state", func() core.Node {
				o := want
				o.GPUs = []core.GPU{want.GPUs[0]}
				o.GPUs[0].State = ""
				return o
			}, core.CodeInvalid, ""},
			{"new GPU with a taken UUID", func() core.Node {
				o := want
				o.GPUs = []core.GPU{{Index: 5, Name: "NVIDIA A100-SXM4-80GB", UUID: "GPU-h100-0"}}
				return o
			}, core.CodeConflict, "GPU UUID GPU-h100-0 already exists"},
			{"new GPU at a taken index", func() core.Node {
				o := want
				o.GPUs = []core.GPU{{Index: 0, Name: "NVIDIA A100-SXM4-80GB", UUID: "GPU-new"}}
				return o
			}, core.CodeConflict, "GPU a100-1/0 already exists"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				o := tc.node()
				err := f.db.Update(ctx, func(tx core.Tx) error { return tx.UpdateNode(ctx, &o) })
				wantCode(t, err, tc.code, tc.msg)
			})
		}
		// The refused updates left nothing behind.
		if diff := cmp.Diff([]core.Node{want, f.h100}, f.nodes(t)); diff != "" {
			t.Errorf("Nodes after refused updates (-want +got):\n%s", diff)
		}
	})
}

func TestNodeCredential(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		byCredential := func(hash string) (core.Node, error) {
			var n core.Node
			err := f.db.View(ctx, func(tx core.Tx) (err error) { n, err = tx.NodeByCredential(ctx, hash); return err })
			return n, err
		}

		_, err := byCredential("h1")
		wantCode(t, err, core.CodeNotFound, "node credential not found")
		update(t, f.db, func(tx core.Tx) error { return tx.SetNodeCredential(ctx, f.a100.ID, "h1") })
		got, err := byCredential("h1")
		if err != nil {
			t.Fatalf("NodeByCredential: %v", err)
		}
		if diff := cmp.Diff(f.a100, got); diff != "" {
			t.Errorf("NodeByCredential (-want +got):\n%s", diff)
		}

		// A new credential replaces the old one.
		update(t, f.db, func(tx core.Tx) error { return tx.SetNodeCredential(ctx, f.a100.ID, "h2") })
		_, err = byCredential("h1")
		wantCode(t, err, core.CodeNotFound, "node credential not found")
		if got, err := byCredential("h2"); err != nil || got.ID != f.a100.ID {
			t.Errorf("NodeByCredential(h2) = %s, %v; want %s", got.Name, err, f.a100.Name)
		}

		err = f.db.Update(ctx, func(tx core.Tx) error { return tx.SetNodeCredential(ctx, f.h100.ID, "h2") })
		wantCode(t, err, core.CodeConflict, "that credential already belongs to another node")
		err = f.db.Update(ctx, func(tx core.Tx) error { return tx.SetNodeCredential(ctx, 999, "h3") })
		wantCode(t, err, core.CodeNotFound, "node #999 not found")

		// Both nodes may be without one; "" is no credential.
		update(t, f.db, func(tx core.Tx) error { return tx.SetNodeCredential(ctx, f.a100.ID, "") })
		update(t, f.db, func(tx core.Tx) error { return tx.SetNodeCredential(ctx, f.h100.ID, "") })
		for _, h := range []string{"h2", ""} {
			_, err = byCredential(h)
			wantCode(t, err, core.CodeNotFound, "node credential not found")
		}
	})
}

func TestJoinTokens(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		jt := core.JoinToken{Hash: core.HashToken("gpucal_join_x"), CreatedBy: "bob", CreatedAt: t0, ExpiresAt: hours(24).Add(7 * time.Millisecond)}
		update(t, f.db, func(tx core.Tx) error { return tx.InsertJoinToken(ctx, jt) })
		var got core.JoinToken
		view(t, f.db, func(tx core.Tx) (err error) { got, err = tx.JoinToken(ctx, jt.Hash); return err })
		if diff := cmp.Diff(jt, got); diff != "" {
			t.Errorf("JoinToken (-want +got):\n%s", diff)
		}

		err := f.db.View(ctx, func(tx core.Tx) error { _, err := tx.JoinToken(ctx, "nope"); return err })
		wantCode(t, err, core.CodeNotFound, "join token not found")
		err = f.db.Update(ctx, func(tx core.Tx) error { return tx.InsertJoinToken(ctx, jt) })
		wantCode(t, err, core.CodeConflict, "that join token already exists")
		orphan := core.JoinToken{Hash: "other", CreatedBy: "zed", CreatedAt: t0, ExpiresAt: hours(1)}
		err = f.db.Update(ctx, func(tx core.Tx) error { return tx.InsertJoinToken(ctx, orphan) })
		wantCode(t, err, core.CodeNotFound, "user zed not found")
	})
}

func TestJobAgentFields(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		j := newJob("alice", 2)
		j.Checkpoint = "SIGUSR2"
		j = f.insertJob(t, j)
		if diff := cmp.Diff(j, f.job(t, j.ID)); diff != "" {
			t.Errorf("Job with a checkpoint signal (-want +got):\n%s", diff)
		}

		margin := -1500 * time.Millisecond
		j.State, j.StartedAt = core.JobDraining, hours(1)
		j.Assigned = []core.GPURef{f.a100.GPUs[0].Ref(), f.h100.GPUs[0].Ref()}
		j.Stop = &core.StopRequest{Reason: core.StopDrain, At: hours(2), Reservation: 7, Deadline: hours(2).Add(2 * time.Minute)}
		j.Runs = []core.NodeRun{
			{Node: "a100-1", JobReport: core.JobReport{Job: j.ID, State: core.RunExited, PID: 4242, StartedAt: hours(1),
				EndedAt: hours(2).Add(90 * time.Second), ExitCode: -1, Signal: "SIGKILL", Stopped: core.StopDrain, Margin: &margin,
				CPUSeconds: 3600.5, MaxRSS: 1 << 33, GPUUtil: 93.25, GPUMemMiB: 70000,
				Progress: &core.ProgressReport{Step: 120, Total: 1000}, LogSize: 123456}},
			{Node: "h100-1", JobReport: core.JobReport{Job: j.ID, State: core.RunDraining, PID: 77, StartedAt: hours(1).Add(time.Second)}},
		}
		update(t, f.db, func(tx core.Tx) error { return tx.UpdateJob(ctx, j) })
		if diff := cmp.Diff(j, f.job(t, j.ID)); diff != "" {
			t.Errorf("Job after UpdateJob with Stop and Runs (-want +got):\n%s", diff)
		}
		var listed []core.Job
		view(t, f.db, func(tx core.Tx) (err error) { listed, err = tx.Jobs(ctx, core.JobFilter{}); return err })
		if len(listed) != 1 || !cmp.Equal(j, listed[0]) {
			t.Errorf("Jobs = %+v, want the one updated", listed)
		}

		j.State, j.EndedAt, j.Stop, j.Runs = core.JobFailed, hours(3), nil, nil
		update(t, f.db, func(tx core.Tx) error { return tx.UpdateJob(ctx, j) })
		if diff := cmp.Diff(j, f.job(t, j.ID)); diff != "" {
			t.Errorf("Job after clearing Stop and Runs (-want +got):\n%s", diff)
		}
	})
}

// TestEnsureSetting: the first value stored under a name stays; a
// concurrent second writer reads the first one's.
func TestEnsureSetting(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		var got [2]string
		for i, v := range []string{"first", "second"} {
			update(t, f.db, func(tx core.Tx) (err error) { got[i], err = tx.EnsureSetting(ctx, "k", v); return err })
		}
		if got != [2]string{"first", "first"} {
			t.Errorf("EnsureSetting twice = %q, want the first value both times", got)
		}
		values := make(chan string, 64) // room for retried transactions
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				update(t, f.db, func(tx core.Tx) error {
					v, err := tx.EnsureSetting(ctx, "race", fmt.Sprint(i))
					values <- v
					return err
				})
			})
		}
		wg.Wait()
		close(values)
		seen := map[string]bool{}
		for v := range values {
			seen[v] = true
		}
		if len(seen) != 1 {
			t.Errorf("concurrent writers read %v, want one value", seen)
		}
	})
}

// TestRejoinRenumberedOnDB: the service's re-join of a node whose cards
// were renumbered works against the database's unique (node, index).
func TestRejoinRenumberedOnDB(t *testing.T) {
	storetest.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn)
		ctx := context.Background()
		now := time.Date(2030, 1, 7, 9, 0, 0, 0, time.UTC)
		svc := core.NewService(f.db, core.WithClock(func() time.Time { return now }))
		admin := core.Actor{User: "admin", Admin: true}
		if _, err := svc.AddUser(ctx, core.System, core.User{Name: "admin", Admin: true}); err != nil && core.ErrorCode(err) != core.CodeConflict {
			t.Fatal(err)
		}
		join := func(uuids ...string) {
			t.Helper()
			token, _, err := svc.CreateJoinToken(ctx, admin, 0)
			if err != nil {
				t.Fatal(err)
			}
			hb := core.Heartbeat{Node: "gn"}
			for i, u := range uuids {
				hb.GPUs = append(hb.GPUs, core.GPUReport{Index: i, UUID: u, Name: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559})
			}
			if _, _, err := svc.Join(ctx, token, hb); err != nil {
				t.Fatalf("join with %v: %v", uuids, err)
			}
			now = now.Add(time.Hour) // down by the next join
		}
		join("GPU-g0", "GPU-g1", "GPU-g2")
		join("GPU-g1", "GPU-g2")           // g0 removed, the rest shifted down
		join("GPU-g2", "GPU-g1", "GPU-g0") // swapped, g0 back
		for _, n := range f.nodes(t) {
			if n.Name != "gn" {
				continue
			}
			got := map[int]string{}
			for _, g := range n.GPUs {
				got[g.Index] = g.UUID
			}
			if got[0] != "GPU-g2" || got[1] != "GPU-g1" || got[2] != "GPU-g0" || len(n.GPUs) != 3 {
				t.Errorf("GPUs by index %v", got)
			}
		}
	})
}
