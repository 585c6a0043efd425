package core_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
)

// setIdle records GPUs idle since since on node, as heartbeats would.
func setIdle(t *testing.T, e *coretest.Env, node string, since time.Time, indexes ...int) {
	t.Helper()
	ctx := context.Background()
	err := e.Store.Update(ctx, func(tx core.Tx) error {
		nodes, err := tx.Nodes(ctx)
		if err != nil {
			return err
		}
		for _, n := range nodes {
			if n.Name != node {
				continue
			}
			for i := range n.GPUs {
				if slices.Contains(indexes, n.GPUs[i].Index) {
					n.GPUs[i].Telemetry = core.Telemetry{At: e.Clock.Now(), Util: 0, IdleSince: since}
				}
			}
			return tx.UpdateNode(ctx, &n)
		}
		t.Fatalf("no node %s", node)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func eventKinds(t *testing.T, e *coretest.Env) []string {
	t.Helper()
	var out []string
	err := e.Store.View(context.Background(), func(tx core.Tx) error {
		es, err := tx.Events(context.Background(), 0, 0)
		for _, ev := range es {
			out = append(out, string(ev.Kind)+" "+ev.User)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func TestWatch(t *testing.T) {
	ctx := context.Background()
	e := coretest.NewEnv()
	e.AddNodes(t, coretest.Node("node-1").GPUs(8, "NVIDIA A100-SXM4-80GB").Build())
	e.AddUsers(t, "alice", "bob")
	e.AddAdmin(t, "root")
	now := e.Clock.Now()
	book := func(user string, n int, start time.Time) core.Reservation {
		t.Helper()
		r, err := e.Service.Book(ctx, e.Actor(t, user), coretest.Booking(n, "a100").At(start, 2*time.Hour).Build())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	book("alice", 2, now.Add(10*time.Minute)) // opens soon: a reminder
	book("bob", 2, now.Add(20*time.Minute))   // not yet
	res, err := e.Service.Watch(ctx)
	if err != nil || res.Reminders != 1 {
		t.Fatalf("Watch: %+v, %v; want one reminder", res, err)
	}
	if _, err := e.Service.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := eventKinds(t, e), []string{"reservation_soon alice"}; !slices.Equal(got, want) {
		t.Fatalf("events %q; want %q, once", got, want)
	}

	// 40 minutes later alice's window has been open 30 minutes and its GPUs
	// sat idle all along: a no-show, to her and to the admins. Bob's is
	// open 20 minutes: not yet.
	e.Clock.Advance(40 * time.Minute)
	setIdle(t, e, "node-1", now.Add(-time.Hour), 0, 1, 2, 3, 4, 5, 6, 7)
	if res, err := e.Service.Watch(ctx); err != nil || res.NoShows != 1 {
		t.Fatalf("Watch: %+v, %v; want one no-show", res, err)
	}
	want := []string{"no_show @admins", "no_show alice", "reservation_soon alice"} // bob's opened unannounced: the watch did not run in its 15 minutes
	if got := eventKinds(t, e); !slices.Equal(got, want) {
		t.Fatalf("events %q; want %q", got, want)
	}

	// A job running for an hour and a half on GPUs idle for the last hour
	// and more: wasted, its owner and the admins hear it.
	e2 := coretest.NewEnv()
	e2.AddNodes(t, coretest.Node("node-1").GPUs(2, "NVIDIA A100-SXM4-80GB").Build())
	e2.AddUsers(t, "carol")
	e2.AddAdmin(t, "root")
	j, err := e2.Service.Submit(ctx, e2.Actor(t, "carol"), core.SubmitRequest{GPUs: 2, Model: "a100", Name: "stuck", Command: []string{"sleep"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e2.Service.Replan(ctx, e2.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	err = e2.Store.Update(ctx, func(tx core.Tx) error {
		job, err := tx.Job(ctx, j.ID)
		if err != nil {
			return err
		}
		job.State = core.JobRunning
		return tx.UpdateJob(ctx, job)
	})
	if err != nil {
		t.Fatal(err)
	}
	// GPUs idle since long before the job started: a job that just started
	// and loads its data is not idle for an hour.
	setIdle(t, e2, "node-1", e2.Clock.Now().Add(-3*time.Hour), 0, 1)
	e2.Clock.Advance(10 * time.Minute)
	if res, _ := e2.Service.Watch(ctx); res.Idle != 0 {
		t.Error("a job ten minutes old counted as idle for an hour")
	}
	e2.Clock.Advance(80 * time.Minute)
	setIdle(t, e2, "node-1", time.Time{}, 0, 1) // busy again
	setIdle(t, e2, "node-1", e2.Clock.Now().Add(-61*time.Minute), 0)
	if res, _ := e2.Service.Watch(ctx); res.Idle != 0 {
		t.Error("a job with one busy GPU counted as idle")
	}
	setIdle(t, e2, "node-1", e2.Clock.Now().Add(-61*time.Minute), 1)
	if res, err := e2.Service.Watch(ctx); err != nil || res.Idle != 1 {
		t.Fatalf("Watch: %+v, %v; want one idle job", res, err)
	}
	if got := eventKinds(t, e2); !slices.Contains(got, "idle_allocated carol") || !slices.Contains(got, "idle_allocated @admins") {
		t.Errorf("events %q; want idle_allocated to carol and the admins", got)
	}
}

func TestWatchSaturated(t *testing.T) {
	ctx := context.Background()
	e := coretest.NewEnv(core.WithAlertPolicy(core.AlertPolicy{SaturatedWait: 4 * time.Hour}))
	e.AddNodes(t, coretest.Node("node-1").GPUs(1, "NVIDIA A100-SXM4-80GB").Build())
	e.AddUsers(t, "alice")
	for range 12 {
		if _, err := e.Service.Submit(ctx, e.Actor(t, "alice"), core.SubmitRequest{GPUs: 1, Model: "a100", Command: []string{"train"},
			Hints: core.Hints{Guess: time.Hour}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Service.Replan(ctx, e.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	res, err := e.Service.Watch(ctx)
	if err != nil || res.Saturated != 1 {
		t.Fatalf("Watch: %+v, %v; want saturated (11 one-hour jobs queued on one GPU)", res, err)
	}
	e.Clock.Advance(time.Hour)
	if _, err := e.Service.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	if got := eventKinds(t, e); len(slices.DeleteFunc(got, func(s string) bool { return s != "saturated @admins" })) != 1 {
		t.Errorf("events %q; want one saturated alert a day", got)
	}
}
