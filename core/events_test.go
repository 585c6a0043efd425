package core_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpucal/gpucal/core"
)

func TestDiffPlans(t *testing.T) {
	now := epoch
	before := now.Add(-time.Minute)
	jobs := map[int64]core.Job{
		1: {ID: 1, Owner: "alice", Name: "llama-ft"},
		2: {ID: 2, Owner: "bob"},
	}
	at := func(h float64) time.Time { return now.Add(time.Duration(h * float64(time.Hour))) }
	queued := func(id int64, pos int, start float64) core.PlannedJob {
		return core.PlannedJob{Job: id, Position: pos, GPUs: []int64{1}, StartP50: at(start), StartP90: at(start + 1),
			EndP50: at(start + 2), EndP90: at(start + 3), Reason: "waiting for 1×a100 on one node"}
	}
	plan := func(when time.Time, q ...core.PlannedJob) core.Plan { return core.Plan{Now: when, Queued: q} }
	with := func(pj core.PlannedJob, edit func(*core.PlannedJob)) core.PlannedJob { edit(&pj); return pj }
	drain := &core.DrainOrder{Job: 1, Reservation: 7, SignalAt: at(4).Add(-10 * time.Minute), Deadline: at(4)}

	tests := []struct {
		name       string
		prev, next core.Plan
		want       []core.Event
	}{
		{"nothing changed", plan(before, queued(1, 1, 2)), plan(now, queued(1, 1, 2)), nil},
		{"new job far off", plan(before), plan(now, queued(1, 1, 2)), nil},
		{"started", plan(before, queued(1, 1, 2)), plan(now, with(queued(1, 1, 0), func(p *core.PlannedJob) { p.StartNow = true })),
			[]core.Event{{Kind: core.EventStarted, Job: 1, User: "alice", At: now, Detail: "j1 (llama-ft) started on 1 GPU(s)", DedupKey: "started:j1"}}},
		{"starts soon", plan(before, queued(1, 1, 2)), plan(now, queued(1, 1, 0.2)),
			[]core.Event{{Kind: core.EventStartsSoon, Job: 1, User: "alice", At: now,
				Detail: "j1 (llama-ft) should start in about 12 minutes, at 2030-01-07 09:12 UTC (by 2030-01-07 10:12 UTC at the latest)", DedupKey: "starts_soon:j1"}}},
		{"starts soon already said", plan(before, queued(1, 1, 0.2)), plan(now, queued(1, 1, 0.1)), nil},
		{"slipped a little", plan(before, queued(1, 1, 2)), plan(now, queued(1, 1, 2.15)), nil},
		{"slipped", plan(before, queued(1, 1, 2)), plan(now, queued(1, 1, 2.5)),
			[]core.Event{{Kind: core.EventStartMovedLater, Job: 1, User: "alice", At: now,
				Detail:   "j1 (llama-ft) is now expected to start at 2030-01-07 11:30 UTC, not 2030-01-07 11:00 UTC: waiting for 1×a100 on one node",
				DedupKey: "start_moved_later:j1:" + itoa(at(2.5).Unix())}}},
		// 10 % of a 20-hour wait is 2 hours: a 1.5-hour slip is not news.
		{"slipped within 10 % of a long wait", plan(before, queued(1, 1, 20)), plan(now, queued(1, 1, 21.5)), nil},
		{"cannot be planned any more", plan(before, queued(1, 1, 2)),
			plan(now, core.PlannedJob{Job: 1, Position: 1, Reason: "cannot be planned: no a100 GPU is up"}),
			[]core.Event{{Kind: core.EventStartMovedLater, Job: 1, User: "alice", At: now,
				Detail: "j1 (llama-ft) can no longer be planned: cannot be planned: no a100 GPU is up", DedupKey: "start_moved_later:j1:unplanned"}}},
		{"moved back", plan(before, queued(2, 1, 2)), plan(now, queued(1, 1, 2), queued(2, 2, 2)),
			[]core.Event{{Kind: core.EventPositionChanged, Job: 2, User: "bob", At: now,
				Detail: "j2 is now number 2 in the queue (was 1)", DedupKey: "position_changed:j2:1-2:" + itoa(now.Unix()/3600)}}},
		{"moved up", plan(before, queued(1, 3, 2)), plan(now, queued(1, 2, 2)), nil},
		{"reached the head", plan(before, queued(1, 2, 2)), plan(now, queued(1, 1, 2)),
			[]core.Event{{Kind: core.EventPositionChanged, Job: 1, User: "alice", At: now,
				Detail: "j1 (llama-ft) is now first in the queue (was 2)", DedupKey: "position_changed:j1:2-1:" + itoa(now.Unix()/3600)}}},
		{"drain order appears", core.Plan{Now: before, Running: []core.PlannedJob{{Job: 1}}},
			core.Plan{Now: now, Running: []core.PlannedJob{{Job: 1, Drain: drain}}},
			[]core.Event{{Kind: core.EventWillBeDrained, Job: 1, User: "alice", At: now,
				Detail:   "j1 (llama-ft) will be stopped for r7: checkpoint signal at 2030-01-07 12:50 UTC, stopped by 2030-01-07 13:00 UTC",
				DedupKey: "will_be_drained:j1:r7:" + itoa(at(4).Unix())}}},
		{"drain order unchanged", core.Plan{Now: before, Running: []core.PlannedJob{{Job: 1, Drain: drain}}},
			core.Plan{Now: now, Running: []core.PlannedJob{{Job: 1, Drain: drain}}}, nil},
		{"unknown job", plan(before), plan(now, with(queued(9, 1, 0), func(p *core.PlannedJob) { p.StartNow = true })), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := core.DiffPlans(tt.prev, tt.next, jobs)
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(core.Event{}, "Data")); diff != "" {
				t.Errorf("DiffPlans (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDiffPlansData: events carry their facts as fields, for wording them
// in the recipient's language and zone.
func TestDiffPlansData(t *testing.T) {
	now := epoch
	jobs := map[int64]core.Job{1: {ID: 1, Owner: "alice", Name: "llama-ft"}}
	pj := func(pos int, start time.Time) core.PlannedJob {
		return core.PlannedJob{Job: 1, Position: pos, GPUs: []int64{1}, StartP50: start, StartP90: start.Add(time.Hour), Reason: "waiting for r7"}
	}
	prev := core.Plan{Now: now.Add(-time.Minute), Queued: []core.PlannedJob{pj(1, now.Add(time.Hour))}}
	next := core.Plan{Now: now, Queued: []core.PlannedJob{pj(2, now.Add(3*time.Hour))}}
	got := core.DiffPlans(prev, next, jobs)
	want := []map[string]string{
		{"job": "j1", "name": "llama-ft", "start": "2030-01-07T12:00:00Z", "was": "2030-01-07T10:00:00Z", "reason": "waiting for r7"},
		{"job": "j1", "name": "llama-ft", "position": "2", "was": "1"},
	}
	if len(got) != 2 {
		t.Fatalf("events %+v", got)
	}
	for i := range want {
		if diff := cmp.Diff(want[i], got[i].Data); diff != "" {
			t.Errorf("%s data (-want +got):\n%s", got[i].Kind, diff)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
