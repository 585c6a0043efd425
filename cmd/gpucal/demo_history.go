package main

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/store"
)

// seedBookingsAndHistory books the demo reservations around now, then
// writes the past week (seedHistory). The history comes second because
// seedBookings books only on a database without reservations.
func seedBookingsAndHistory(ctx context.Context, db *store.DB, now time.Time) error {
	if err := seedBookings(ctx, db, now); err != nil {
		return err
	}
	return seedHistory(ctx, db, now)
}

// seedHistory writes a past week of finished jobs and reservations on the
// demo nodes, so that usage reports and the digest show real numbers: busy
// working days (UTC), long training runs overnight, a quiet weekend, waits
// when the cluster is full, estimates that were sometimes off, four
// reservations that were used and one no-show. It is deterministic for a
// given now, ends two hours before now (so it meets none of seedBookings'
// windows), holds no GPU now, and writes nothing on a database that has
// jobs already or no nodes.
func seedHistory(ctx context.Context, db *store.DB, now time.Time) error {
	return db.Update(ctx, func(tx core.Tx) error {
		if js, err := tx.Jobs(ctx, core.JobFilter{Limit: 1}); err != nil || len(js) > 0 {
			return err
		}
		nodes, err := tx.Nodes(ctx)
		if err != nil || len(nodes) == 0 {
			return err
		}
		h := newHistory(nodes, now)
		h.book()
		h.queue()
		for i := range h.reservations {
			r := &h.reservations[i]
			if err := tx.InsertReservation(ctx, r); err != nil {
				return fmt.Errorf("seeding history: a reservation of %s: %w", r.Owner, err)
			}
		}
		slices.SortFunc(h.jobs, func(a, b histJob) int { return a.job.SubmittedAt.Compare(b.job.SubmittedAt) })
		for _, hj := range h.jobs {
			j := hj.job
			if hj.reservation >= 0 {
				j.Reservation = h.reservations[hj.reservation].ID
			}
			done := j
			j.State, j.StartedAt, j.EndedAt, j.Assigned, j.Prediction = core.JobQueued, time.Time{}, time.Time{}, nil, core.Prediction{}
			if err := tx.InsertJob(ctx, &j); err != nil {
				return fmt.Errorf("seeding history: job %s: %w", j.Name, err)
			}
			done.ID, done.Reservation = j.ID, j.Reservation
			if err := tx.UpdateJob(ctx, done); err != nil {
				return fmt.Errorf("seeding history: job %s: %w", j.Name, err)
			}
		}
		return nil
	})
}

// history is the week being made up: the demo GPUs, what holds each of
// them when, and the jobs and reservations placed so far.
type history struct {
	rng          *rand.Rand
	from, cutoff time.Time        // the week: jobs start after from and end by cutoff
	nodes        []core.Node      // by name
	busy         map[int64][]span // GPU ID → the spans held on it
	jobs         []histJob        // placed jobs
	reservations []core.Reservation
}

type span struct{ start, end time.Time }

// histJob is a finished job and the index of the reservation it ran in (-1: none).
type histJob struct {
	job         core.Job
	reservation int
}

func newHistory(nodes []core.Node, now time.Time) *history {
	cutoff := now.UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	nodes = slices.Clone(nodes)
	slices.SortFunc(nodes, func(a, b core.Node) int { return cmp.Compare(a.Name, b.Name) })
	return &history{rng: rand.New(rand.NewPCG(2026, 12)), from: cutoff.Add(-7*24*time.Hour + 2*time.Hour), cutoff: cutoff,
		nodes: nodes, busy: map[int64][]span{}}
}

// book places the week's reservations, each on the GPUs of one node, and
// the jobs their owners ran in them; the fourth is a no-show.
func (h *history) book() {
	day := h.cutoff.Truncate(24 * time.Hour)
	at := func(daysAgo, hour, minute int) time.Time {
		return day.AddDate(0, 0, -daysAgo).Add(time.Duration(hour)*time.Hour + time.Duration(minute)*time.Minute)
	}
	type run struct {
		name    string
		typ     core.JobType
		gpus    int
		from    time.Time
		runtime time.Duration
	}
	for _, b := range []struct {
		owner, project, model, note string
		gpus                        int
		start, end                  time.Time
		runs                        []run
	}{
		{"alice", "nlp", "a100", "llama-7b finetune", 4, at(5, 10, 0), at(5, 16, 0),
			[]run{{"llama-7b-ft", core.TypeFinetune, 4, at(5, 10, 4), 5*time.Hour + 10*time.Minute}}},
		{"bob", "vision", "h100", "vit-l ablations", 8, at(4, 9, 0), at(4, 17, 0),
			[]run{{"vit-l-ablation", core.TypeTrain, 8, at(4, 9, 12), 3*time.Hour + 5*time.Minute},
				{"vit-l-ablation", core.TypeTrain, 8, at(4, 12, 30), 4 * time.Hour}}},
		{"bob", "vision", "a100", "eval sweep", 2, at(3, 13, 0), at(3, 17, 0),
			[]run{{"coco-eval", core.TypeEval, 2, at(3, 13, 6), 70 * time.Minute}}},
		{"alice", "nlp", "h100", "rlhf dry run", 4, at(2, 14, 0), at(2, 18, 0), nil},
		{"alice", "nlp", "a100", "llama-7b finetune", 8, at(1, 9, 0), at(1, 13, 0),
			[]run{{"llama-7b-ft", core.TypeFinetune, 8, at(1, 9, 3), 3*time.Hour + 40*time.Minute}}},
	} {
		gpus := h.free(b.model, b.gpus, b.start, b.end)
		if gpus == nil || !b.start.After(h.from) || b.end.After(h.cutoff) {
			continue
		}
		h.hold(gpus, b.start, b.end)
		h.reservations = append(h.reservations, core.Reservation{Owner: b.owner, Project: b.project, Start: b.start, End: b.end,
			State: core.Confirmed, GPUs: gpus, Model: b.model, Note: b.note, CreatedAt: b.start.Add(-30 * time.Hour), UpdatedAt: b.start.Add(-30 * time.Hour)})
		for _, r := range b.runs {
			j := h.newJob(b.owner, b.project, r.name, r.typ, r.gpus, b.model, r.from.Add(-2*time.Minute))
			j.Class = core.ClassReserved
			h.finish(&j, gpus[:r.gpus], r.from, r.runtime)
			h.jobs = append(h.jobs, histJob{job: j, reservation: len(h.reservations) - 1})
		}
	}
}

// template is a kind of job the demo users submit.
type template struct {
	owner, project, name string
	typ                  core.JobType
	model                string
	gpus                 []int         // one is drawn
	min, max             time.Duration // its runtime is drawn in between
}

var (
	evals = []template{
		{"alice", "nlp", "mmlu-eval", core.TypeEval, "a100", []int{1, 2}, 25 * time.Minute, 100 * time.Minute},
		{"bob", "vision", "coco-eval", core.TypeEval, "a100", []int{1}, 20 * time.Minute, 70 * time.Minute},
		{"alice", "", "tokenizer-bench", core.TypeEval, "a100", []int{1}, 10 * time.Minute, 40 * time.Minute},
	}
	finetunes = []template{
		{"alice", "nlp", "llama-7b-ft", core.TypeFinetune, "a100", []int{4, 8}, 2 * time.Hour, 7 * time.Hour},
		{"bob", "vision", "detr-ft", core.TypeFinetune, "a100", []int{4}, 3 * time.Hour, 9 * time.Hour},
		{"alice", "vision", "clip-ft", core.TypeFinetune, "h100", []int{4, 8}, 2 * time.Hour, 6 * time.Hour},
	}
	trains = []template{
		{"alice", "nlp", "llama-13b-pretrain", core.TypeTrain, "h100", []int{16}, 14 * time.Hour, 26 * time.Hour},
		{"bob", "vision", "vit-l-pretrain", core.TypeTrain, "h100", []int{8}, 9 * time.Hour, 18 * time.Hour},
	}
)

// queue submits jobs hour by hour, many on working days and few at night
// and at weekends (UTC), and runs each as soon as GPUs are free for it.
func (h *history) queue() {
	for hour := h.from; hour.Before(h.cutoff); hour = hour.Add(time.Hour) {
		busyDay := hour.Weekday() != time.Saturday && hour.Weekday() != time.Sunday
		var rate float64
		var kinds []template
		switch hh := hour.Hour(); {
		case hh >= 8 && hh < 17:
			rate, kinds = 1.6, slices.Concat(evals, evals, finetunes, finetunes)
		case hh >= 17 && hh < 21:
			rate, kinds = 0.8, slices.Concat(finetunes, trains, trains, evals)
		default:
			rate, kinds = 0.1, slices.Concat(evals, finetunes)
		}
		if !busyDay {
			rate, kinds = rate/10, slices.Concat(evals, evals, finetunes)
		}
		for range int(rate + h.rng.Float64()) {
			t := kinds[h.rng.IntN(len(kinds))]
			submit := hour.Add(time.Duration(h.rng.IntN(60)) * time.Minute)
			n := t.gpus[h.rng.IntN(len(t.gpus))]
			runtime := t.min + time.Duration(h.rng.Int64N(int64(t.max-t.min)))
			runtime = runtime.Round(time.Minute)
			j := h.newJob(t.owner, t.project, t.name, t.typ, n, t.model, submit)
			// One job in twelve fails part-way.
			failed := h.rng.IntN(12) == 0
			if failed {
				runtime = runtime * time.Duration(10+h.rng.IntN(50)) / 100
			}
			start, gpus, runtime := h.place(t.model, n, submit, runtime)
			if gpus == nil {
				continue // it would not have started yet
			}
			h.finish(&j, gpus, start, runtime)
			if failed {
				j.State = core.JobFailed
			}
			h.hold(gpus, start, j.EndedAt)
			h.jobs = append(h.jobs, histJob{job: j, reservation: -1})
		}
	}
}

func (h *history) newJob(owner, project, name string, typ core.JobType, gpus int, model string, submitted time.Time) core.Job {
	script := map[core.JobType]string{core.TypeTrain: "train.py", core.TypeFinetune: "finetune.py", core.TypeEval: "eval.py"}[typ]
	return core.Job{Owner: owner, Project: project, Name: name, Type: typ, GPUs: gpus, Model: model,
		Command: []string{"python", script, "--config", "configs/" + strings.TrimSuffix(name, "-"+string(typ)) + ".yaml"},
		Class:   core.ClassNormal, Checkpoint: "SIGUSR1", State: core.JobQueued, SubmittedAt: submitted}
}

// finish makes j a job that succeeded on gpus after runtime from start,
// with an estimate that was up to 40% off either way.
func (h *history) finish(j *core.Job, gpus []core.GPURef, start time.Time, runtime time.Duration) {
	j.State, j.Assigned, j.StartedAt, j.EndedAt = core.JobSucceeded, gpus, start, start.Add(runtime)
	p50 := time.Duration(float64(runtime) * (0.6 + 0.8*h.rng.Float64())).Round(time.Minute)
	j.Prediction = core.Prediction{PlannedAt: start, StartP50: start, StartP90: start, EndP50: start.Add(p50), EndP90: start.Add(p50 * 3 / 2),
		Estimate: core.Estimate{P50: p50, P90: p50 * 3 / 2, Source: "history:user+name", Samples: 3 + h.rng.IntN(10)}}
}

// place finds the first start from submitted, in steps of 10 minutes,
// when n GPUs of model are free for runtime (on one node, or on whole
// nodes for more than 8), and returns it with the GPUs and the runtime,
// cut short so that the job ends by the cutoff (the run was shorter than
// drawn), or no GPUs when it could not start an hour before the cutoff.
// The start is a minute or two after the GPUs free up: the agent's launch.
func (h *history) place(model string, n int, submitted time.Time, runtime time.Duration) (time.Time, []core.GPURef, time.Duration) {
	for t := submitted; ; t = t.Add(10 * time.Minute) {
		start := t.Add(time.Duration(30+h.rng.IntN(90)) * time.Second).Truncate(time.Second)
		if start.Add(time.Hour).After(h.cutoff) {
			return time.Time{}, nil, 0
		}
		if end := start.Add(runtime); end.After(h.cutoff) {
			runtime = h.cutoff.Add(-time.Duration(h.rng.IntN(45)) * time.Minute).Sub(start)
		}
		if gpus := h.free(model, n, t, start.Add(runtime)); gpus != nil {
			return start, gpus, runtime
		}
	}
}

// free returns n GPUs of model that nothing holds in [start, end): the
// lowest indexes of the first node with enough, or whole nodes when n is
// more than a node has. It returns nil when there are not enough.
func (h *history) free(model string, n int, start, end time.Time) []core.GPURef {
	var whole []core.GPURef
	for _, node := range h.nodes {
		var got []core.GPURef
		for _, g := range node.GPUs {
			if ref := g.Ref(); strings.HasPrefix(ref.Model, model) && h.idle(g.ID, start, end) {
				got = append(got, ref)
			}
		}
		switch {
		case len(got) == 0:
		case n <= len(node.GPUs) && len(got) >= n:
			return got[:n]
		case n > len(node.GPUs) && len(got) == len(node.GPUs):
			if whole = append(whole, got...); len(whole) >= n {
				return whole[:n]
			}
		}
	}
	return nil
}

func (h *history) idle(gpu int64, start, end time.Time) bool {
	for _, s := range h.busy[gpu] {
		if s.start.Before(end) && start.Before(s.end) {
			return false
		}
	}
	return true
}

func (h *history) hold(gpus []core.GPURef, start, end time.Time) {
	for _, g := range gpus {
		h.busy[g.ID] = append(h.busy[g.ID], span{start, end})
	}
}
