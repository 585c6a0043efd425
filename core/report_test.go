package core_test

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
)

func TestBuildReport(t *testing.T) {
	mon := time.Date(2030, 1, 7, 0, 0, 0, 0, time.UTC) // a Monday
	at := func(h float64) time.Time { return mon.Add(time.Duration(h * float64(time.Hour))) }
	gpu := func(i int) core.GPURef { return core.GPURef{ID: int64(i + 1), Node: "node-1", Index: i} }
	nodes := []core.Node{{Name: "node-1", GPUs: make([]core.GPU, 4)}}
	jobs := []core.Job{
		{ID: 1, Owner: "alice", Project: "nlp", Type: core.TypeTrain, GPUs: 2, State: core.JobSucceeded,
			SubmittedAt: at(0.5), StartedAt: at(1), EndedAt: at(3), Assigned: []core.GPURef{gpu(0), gpu(1)},
			Prediction: core.Prediction{Estimate: core.Estimate{P50: 2 * time.Hour}}},
		{ID: 2, Owner: "bob", GPUs: 1, State: core.JobRunning, SubmittedAt: at(-1), StartedAt: at(0), Assigned: []core.GPURef{gpu(2)}},
	}
	rs := []core.Reservation{
		{ID: 1, Owner: "carol", Start: at(1), End: at(2), State: core.Confirmed, GPUs: []core.GPURef{gpu(3)}}, // nobody came
		{ID: 2, Owner: "alice", Start: at(1), End: at(2), State: core.Confirmed, GPUs: []core.GPURef{gpu(0)}}, // j1 ran in it
		{ID: 3, Owner: "dave", Start: at(1), End: at(2), State: core.Cancelled, GPUs: []core.GPURef{gpu(3)}},
	}
	r := core.BuildReport(core.ReportQuery{From: at(0), To: at(4)}, at(4), nodes, jobs, rs)
	got := struct {
		GPUs                                            int
		Capacity, Used, Utilisation, Booked, BookedUsed float64
		Reservations, NoShows, Started, Finished        int
		AvgWait, P90Wait                                time.Duration
		Accuracy, Monday1                               float64
		ByProject                                       []core.UsageTotal
	}{r.GPUs, r.Capacity, r.Used, r.Utilisation, r.Booked, r.BookedUsed, r.Reservations, r.NoShows, r.Started, r.Finished,
		r.AvgWait, r.P90Wait, r.Accuracy, r.Heatmap[time.Monday][1], r.ByProject}
	want := got
	want.GPUs, want.Capacity, want.Used, want.Utilisation = 4, 16, 8, 0.5
	want.Booked, want.BookedUsed, want.Reservations, want.NoShows = 2, 1, 2, 1
	want.Started, want.Finished, want.AvgWait, want.P90Wait, want.Accuracy = 2, 1, 45*time.Minute, time.Hour, 1
	want.Monday1 = 0.75
	want.ByProject = []core.UsageTotal{{Name: "(none)", GPUHours: 4, Jobs: 1}, {Name: "nlp", GPUHours: 4, Jobs: 1}}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	if r.ByUser[0].Name != "alice" && r.ByUser[0].Name != "bob" || len(r.ByType) != 2 {
		t.Errorf("by user %+v, by type %+v", r.ByUser, r.ByType)
	}
}
