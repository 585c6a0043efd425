package core_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
)

// TestReplanQueue submits to the h100 node (8 GPUs): a job that fills it,
// two that must wait, and one on the a100s. The replan starts what fits,
// gives every waiting job a position, a predicted start after the running
// job's end and a reason, and writes a started event per start.
func TestReplanQueue(t *testing.T) {
	e := newEnv(t)
	big := submit(t, e, "alice", coretest.Job(8, "h100").Name("big").Guess(2*hour).Build())
	wait1 := submit(t, e, "bob", coretest.Job(8, "h100").Guess(3*hour).Build())
	wait2 := submit(t, e, "carol", coretest.Job(4, "h100").Guess(4*hour).Build())
	small := submit(t, e, "dave", coretest.Job(4, "a100").Guess(hour).Build())

	res := replan(t, e)
	if diff := cmp.Diff([]int64{big.ID, small.ID}, sorted(res.Started)); diff != "" {
		t.Errorf("started (-want +got):\n%s", diff)
	}
	if res.Queued != 4 || res.Running != 0 || len(res.Deferred) != 0 {
		t.Errorf("result %+v: want 4 planned, none running before, none deferred", res)
	}
	q, err := e.Service.Queue(ctx, e.Actor(t, "dave"))
	if err != nil {
		t.Fatal(err)
	}
	var running []int64
	for _, j := range q.Running {
		running = append(running, j.ID)
		if j.State != core.JobStarting || !j.StartedAt.Equal(epoch) || len(j.Assigned) != j.GPUs || j.Prediction.Position != 0 {
			t.Errorf("%s: %s since %s on %d GPU(s), position %d; want starting now on its GPUs", core.JobName(j.ID), j.State, j.StartedAt, len(j.Assigned), j.Prediction.Position)
		}
		if !j.Prediction.EndP50.After(epoch) || j.Prediction.EndP90.Before(j.Prediction.EndP50) {
			t.Errorf("%s: predicted end %s (P90 %s)", core.JobName(j.ID), j.Prediction.EndP50, j.Prediction.EndP90)
		}
	}
	if diff := cmp.Diff([]int64{small.ID, big.ID}, running); diff != "" {
		t.Errorf("running, by predicted end (-want +got):\n%s", diff)
	}
	bigEnd := job(t, e, big.ID).Prediction.EndP50
	var queued []int64
	for i, j := range q.Queued {
		queued = append(queued, j.ID)
		p := j.Prediction
		if p.Position != i+1 {
			t.Errorf("%s has position %d, want %d", core.JobName(j.ID), p.Position, i+1)
		}
		if p.StartP50.Before(bigEnd) || p.StartP90.Before(p.StartP50) || len(p.GPUs) != j.GPUs || !p.PlannedAt.Equal(epoch) {
			t.Errorf("%s: start %s (P90 %s) on %d GPU(s), planned %s; want after %s on its GPUs", core.JobName(j.ID), p.StartP50, p.StartP90, len(p.GPUs), p.PlannedAt, bigEnd)
		}
		if p.Reason == "" {
			t.Errorf("%s has no reason", core.JobName(j.ID))
		}
		if j.Command != nil {
			t.Errorf("dave sees %s's command", j.Owner)
		}
	}
	if diff := cmp.Diff([]int64{wait1.ID, wait2.ID}, sorted(queued)); diff != "" {
		t.Errorf("queued (-want +got):\n%s", diff)
	}
	if !q.PlannedAt.Equal(epoch) {
		t.Errorf("PlannedAt = %s, want %s", q.PlannedAt, epoch)
	}
	var kinds []string
	for _, ev := range events(t, e) {
		kinds = append(kinds, string(ev.Kind)+" "+core.JobName(ev.Job)+" "+ev.User)
	}
	if diff := cmp.Diff([]string{"started j1 alice", "started j4 dave"}, sorted(kinds)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	audit := e.AuditLog(t)
	if audit[0].Action != "job.start" || audit[0].Actor != core.System.User {
		t.Errorf("newest audit entry %+v, want job.start by %s", audit[0], core.System.User)
	}

	// Nothing changed: the second replan sees the started jobs as running
	// (their predictions, and reasons naming them, may be restated); from
	// then on the same plan, nothing new stored or announced.
	if again := replan(t, e); len(again.Started) != 0 || again.Events != 0 || again.Updated > 4 {
		t.Errorf("second replan %+v: want no starts or events, the reasons may now name running jobs", again)
	}
	if again := replan(t, e); again.Updated != 0 || len(again.Started) != 0 || again.Events != 0 {
		t.Errorf("third replan %+v: want no updates, starts or events", again)
	}
}

// TestReplanEvents moves time on until the waiting job is about to start,
// then starts it: starts_soon once, then started.
func TestReplanEvents(t *testing.T) {
	e := newEnv(t)
	submit(t, e, "alice", coretest.Job(8, "h100").Guess(hour).Build())
	waiting := submit(t, e, "bob", coretest.Job(8, "h100").Guess(2*hour).Build())
	replan(t, e)
	e.Clock.Advance(50 * time.Minute)
	replan(t, e)
	e.Clock.Advance(time.Minute)
	replan(t, e)
	var got []string
	for _, ev := range events(t, e) {
		if ev.Job == waiting.ID {
			got = append(got, string(ev.Kind))
		}
	}
	if diff := cmp.Diff([]string{"starts_soon"}, got); diff != "" {
		t.Errorf("events of the waiting job (-want +got):\n%s", diff)
	}
	// The started event names the GPUs the job got.
	for _, ev := range events(t, e) {
		if ev.Kind == core.EventStarted {
			if n := strings.Count(ev.Data[core.DataGPU], "/"); n != 8 || !strings.HasSuffix(ev.Detail, "("+ev.Data[core.DataGPU]+")") {
				t.Errorf("started: %q, GPUs %q; want the 8 GPUs by name", ev.Detail, ev.Data[core.DataGPU])
			}
		}
	}
}

// racyStore runs before once, just before the first Update: it plays a
// concurrent transaction that commits between Replan's View and its Update.
type racyStore struct {
	core.Store
	before func(tx core.Tx) error
}

func (s *racyStore) Update(ctx context.Context, fn func(core.Tx) error) error {
	if s.before != nil {
		before := s.before
		s.before = nil
		if err := s.Store.Update(ctx, before); err != nil {
			return err
		}
	}
	return s.Store.Update(ctx, fn)
}

// TestReplanDefersTakenGPUs checks the re-check inside the committing
// transaction: GPUs taken since the snapshot leave the job queued for the
// next replan, which starts it elsewhere or later.
func TestReplanDefersTakenGPUs(t *testing.T) {
	tests := []struct {
		name string
		take func(t *testing.T, e *coretest.Env, tx core.Tx, victim core.Job, gpus []core.GPURef) error
	}{
		{"by another job", func(t *testing.T, e *coretest.Env, tx core.Tx, victim core.Job, gpus []core.GPURef) error {
			other := coretest.Job(1, "h100").Build()
			j := core.Job{Owner: "dave", GPUs: 1, Command: other.Command, Type: core.TypeOther, Class: core.ClassNormal,
				State: core.JobQueued, SubmittedAt: epoch}
			if err := tx.InsertJob(ctx, &j); err != nil {
				return err
			}
			j.State, j.StartedAt, j.Assigned = core.JobRunning, epoch, gpus[:1]
			return tx.UpdateJob(ctx, j)
		}},
		{"by a booking", func(t *testing.T, e *coretest.Env, tx core.Tx, victim core.Job, gpus []core.GPURef) error {
			return tx.InsertReservation(ctx, &core.Reservation{Owner: "dave", Start: epoch.Add(10 * time.Minute), End: epoch.Add(hour),
				State: core.Confirmed, GPUs: gpus[:1], CreatedAt: epoch, UpdatedAt: epoch})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, coretest.Node("h100-1").GPUs(8, h100).Build())
			e.AddProject(t, "other")
			victim := submit(t, e, "alice", coretest.Job(8, "h100").Guess(2*hour).Build())
			gpus := gpuRefs(t, e, "h100-1", 0, 1, 2, 3, 4, 5, 6, 7)
			racy := &racyStore{Store: e.Store, before: func(tx core.Tx) error { return tt.take(t, e, tx, victim, gpus) }}
			svc := core.NewService(racy, core.WithClock(e.Clock.Now))
			res, err := svc.Replan(ctx, epoch)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]int64{victim.ID}, res.Deferred); diff != "" || len(res.Started) != 0 {
				t.Errorf("deferred (-want +got):\n%s; started %v", diff, res.Started)
			}
			if got := job(t, e, victim.ID); got.State != core.JobQueued || got.Assigned != nil {
				t.Errorf("victim is %s on %v, want still queued", got.State, got.Assigned)
			}
			for _, ev := range events(t, e) {
				if ev.Kind == core.EventStarted {
					t.Errorf("event %+v for a start that did not happen", ev)
				}
			}
			// The next replan sees the new state and does not start it now.
			if res := replan(t, e); slices.Contains(res.Started, victim.ID) {
				t.Errorf("the next replan started %s on taken GPUs", core.JobName(victim.ID))
			}
		})
	}
}

// TestBookAroundRunningJobs: a booking is never given a GPU that a running
// job which may not be drained holds through the window; a preemptible job
// does not block (it will be drained).
func TestBookAroundRunningJobs(t *testing.T) {
	e := newEnv(t)
	solid := submit(t, e, "alice", coretest.Job(4, "a100").Guess(3*hour).Build())
	replan(t, e)
	held := job(t, e, solid.ID).Assigned
	if len(held) != 4 {
		t.Fatalf("the job holds %v, want 4 GPUs", held)
	}
	r := book(t, e, "bob", coretest.Booking(8, "a100").At(epoch.Add(hour), hour).Build())
	for _, g := range r.GPUs {
		if slices.ContainsFunc(held, func(h core.GPURef) bool { return h.ID == g.ID }) {
			t.Errorf("booking r%d got %s/%d, which j%d holds", r.ID, g.Node, g.Index, solid.ID)
		}
	}
	_, err := e.Service.Book(ctx, e.Actor(t, "carol"), coretest.Booking(4, "a100").At(epoch.Add(hour), hour).Build())
	de := wantError(t, err, core.CodeConflict, "j1 (alice)")
	if len(de.Conflict.With) == 0 || de.Conflict.With[0].ID != "j1" {
		t.Errorf("conflict with %+v, want j1 first", de.Conflict.With)
	}
	// After the job's predicted end the GPUs can be booked again.
	end := job(t, e, solid.ID).Prediction.EndP90
	book(t, e, "carol", coretest.Booking(4, "a100").At(end, hour).Build())

	t.Run("extend", func(t *testing.T) {
		_, err := e.Service.Extend(ctx, e.Actor(t, "bob"), r.ID, core.ExtendRequest{By: time.Hour})
		if err != nil {
			t.Errorf("extending a booking beside the job: %v", err)
		}
	})
	t.Run("preemptible", func(t *testing.T) {
		e := newEnv(t)
		submit(t, e, "alice", coretest.Job(8, "h100").Preemptible().Guess(5*hour).Build())
		replan(t, e)
		book(t, e, "bob", coretest.Booking(8, "h100").At(epoch.Add(hour), hour).Build())
	})
}

// TestWhatIf answers for the request and its alternatives and changes nothing.
func TestWhatIf(t *testing.T) {
	e := newEnv(t)
	submit(t, e, "alice", coretest.Job(8, "h100").Guess(2*hour).Build())
	replan(t, e)
	submit(t, e, "bob", coretest.Job(2, "a100").Build())
	before := jobSnapshot(t, e)
	ans, err := e.Service.WhatIf(ctx, e.Actor(t, "carol"), core.WhatIfRequest{GPUs: 8, Model: "h100", Duration: 12 * hour})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, jobSnapshot(t, e)); diff != "" {
		t.Errorf("WhatIf changed the store (-before +after):\n%s", diff)
	}
	a := ans.Asked
	if a.Kind != "asked" || a.GPUs != 8 || a.Model != "h100" || len(a.Assigned) != 8 || a.StartP50.Before(epoch.Add(2*hour)) ||
		a.EndP50.Sub(a.StartP50) != 12*hour || a.Reason == "" {
		t.Errorf("asked = %+v: want 8 h100 GPUs from the running job's end for 12h, with a reason", a)
	}
	var kinds []string
	for _, alt := range ans.Alternatives {
		kinds = append(kinds, alt.Kind+" "+alt.Model+" "+strings.Repeat("|", alt.GPUs))
		if alt.StartP50.IsZero() || len(alt.Assigned) != alt.GPUs {
			t.Errorf("alternative %+v has no start or GPUs", alt)
		}
	}
	want := []string{"fewer h100 ||||", "fewer h100 |", "model a100 ||||||||"}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("alternatives (-want +got):\n%s", diff)
	}
	if alt := ans.Alternatives[2]; !alt.StartP50.Equal(epoch) || alt.Reason != "it would start now" {
		t.Errorf("8 a100 would start %s (%q), want now", alt.StartP50, alt.Reason)
	}

	for _, tt := range []struct {
		req      core.WhatIfRequest
		fragment string
	}{
		{core.WhatIfRequest{GPUs: 0}, "at least 1 GPU"},
		{core.WhatIfRequest{GPUs: 9, Model: "h100"}, "only 8"},
		{core.WhatIfRequest{GPUs: 1, Model: "banana"}, "not a GPU model"},
		{core.WhatIfRequest{GPUs: 1, Duration: -hour}, "negative"},
		{core.WhatIfRequest{GPUs: 1, Duration: 30 * 24 * hour}, "longest allowed"},
		{core.WhatIfRequest{GPUs: 1, Class: core.ClassReserved}, "high, normal or low"},
	} {
		_, err := e.Service.WhatIf(ctx, e.Actor(t, "carol"), tt.req)
		wantError(t, err, core.CodeInvalid, tt.fragment)
	}
}

// TestCalendarJobs shows a running job to its predicted end and a queued
// one at its planned place with its bands.
func TestCalendarJobs(t *testing.T) {
	e := newEnv(t)
	running := submit(t, e, "alice", coretest.Job(8, "h100").Name("vit").Guess(2*hour).Build())
	waiting := submit(t, e, "bob", coretest.Job(8, "h100").Guess(3*hour).Build())
	submit(t, e, "carol", coretest.Job(1, "a100").Build()) // started, but filtered out by model below
	replan(t, e)
	cal, err := e.Service.Calendar(ctx, e.Actor(t, "dave"), core.CalendarQuery{From: epoch, To: epoch.Add(24 * hour), Model: "h100"})
	if err != nil {
		t.Fatal(err)
	}
	r, w := job(t, e, running.ID), job(t, e, waiting.ID)
	ids := func(refs []core.GPURef) []int64 {
		var out []int64
		for _, g := range refs {
			out = append(out, g.ID)
		}
		return out
	}
	want := []core.CalendarItem{
		{Kind: "job", ID: "j1", GPUs: ids(r.Assigned), Start: epoch, End: r.Prediction.EndP50, Owner: "alice", Note: "vit",
			JobState: core.JobStarting, JobType: core.TypeOther, StartP90: epoch, EndP90: r.Prediction.EndP90},
		{Kind: "job", ID: "j2", GPUs: w.Prediction.GPUs, Start: w.Prediction.StartP50, End: w.Prediction.EndP50, Owner: "bob", Note: "train",
			JobState: core.JobQueued, JobType: core.TypeOther, Planned: true, StartP90: w.Prediction.StartP90, EndP90: w.Prediction.EndP90},
	}
	if diff := cmp.Diff(want, cal.Items); diff != "" {
		t.Errorf("calendar items (-want +got):\n%s", diff)
	}
}

func events(t *testing.T, e *coretest.Env) []core.Event {
	t.Helper()
	var es []core.Event
	if err := e.Store.View(ctx, func(tx core.Tx) (err error) { es, err = tx.Events(ctx, 0, 0); return err }); err != nil {
		t.Fatal(err)
	}
	return es
}

func sorted[T interface{ ~int64 | ~string }](s []T) []T {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestNodesShowRunningJobs checks that `gpucal nodes` tells a GPU held by
// a job from an idle one.
func TestNodesShowRunningJobs(t *testing.T) {
	e := newEnv(t)
	big := submit(t, e, "alice", coretest.Job(8, "h100").Name("big").Guess(2*hour).Build())
	replan(t, e)
	nodes, err := e.Service.Nodes(ctx, e.Actor(t, "bob"))
	if err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, n := range nodes {
		for _, g := range n.GPUs {
			if g.Job == nil {
				continue
			}
			running++
			if g.Status != "running" || g.Job.ID != core.JobName(big.ID) || g.Job.Owner != "alice" || !g.Job.Since.Equal(epoch) {
				t.Errorf("%s: status %s, job %+v; want running %s of alice since %s", g.Label(), g.Status, g.Job, core.JobName(big.ID), epoch)
			}
		}
	}
	if running != 8 {
		t.Errorf("%d GPUs show a job, want 8", running)
	}
}
