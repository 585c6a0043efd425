package coretest

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	"github.com/gpucal/gpucal/core"
)

// The job and event half of memTx.

func cloneJob(j core.Job) core.Job {
	j.Command = slices.Clone(j.Command)
	j.Env = maps.Clone(j.Env)
	j.Assigned = slices.Clone(j.Assigned)
	j.Prediction = clonePrediction(j.Prediction)
	if j.Stop != nil {
		s := *j.Stop
		j.Stop = &s
	}
	j.Runs = cloneRuns(j.Runs)
	return j
}

// cloneRuns copies runs down to what their pointers point at.
// Like the store, it returns nil for none.
func cloneRuns(runs []core.NodeRun) []core.NodeRun {
	if len(runs) == 0 {
		return nil
	}
	runs = slices.Clone(runs)
	for i, r := range runs {
		if r.Margin != nil {
			m := *r.Margin
			runs[i].Margin = &m
		}
		if r.Progress != nil {
			p := *r.Progress
			runs[i].Progress = &p
		}
	}
	return runs
}

func clonePrediction(p core.Prediction) core.Prediction {
	p.GPUs = slices.Clone(p.GPUs)
	if p.Drain != nil {
		d := *p.Drain
		p.Drain = &d
	}
	return p
}

func (tx *memTx) InsertJob(ctx context.Context, j *core.Job) error {
	if err := tx.writable(); err != nil {
		return err
	}
	// The foreign keys, answered as the store answers them.
	_, owner := tx.d.users[j.Owner]
	_, project := tx.d.projects[j.Project]
	_, reservation := tx.d.reservations[j.Reservation]
	if !owner || (j.Project != "" && !project) || (j.Reservation != 0 && !reservation) {
		return core.Errorf(core.CodeInvalid, "user %q, project %q or reservation %s does not exist",
			j.Owner, j.Project, core.ReservationName(j.Reservation))
	}
	tx.d.lastJob++
	j.ID = tx.d.lastJob
	stored := cloneJob(*j)
	stored.Assigned, stored.Prediction = nil, core.Prediction{}
	tx.d.jobs[j.ID] = stored
	return nil
}

func (tx *memTx) Job(ctx context.Context, id int64) (core.Job, error) {
	j, ok := tx.d.jobs[id]
	if !ok {
		return core.Job{}, core.Errorf(core.CodeNotFound, "job %s not found", core.JobName(id))
	}
	return cloneJob(j), nil
}

func (tx *memTx) Jobs(ctx context.Context, f core.JobFilter) ([]core.Job, error) {
	var out []core.Job
	for _, j := range tx.d.jobs {
		switch {
		case f.Owner != "" && j.Owner != f.Owner,
			f.Project != "" && j.Project != f.Project,
			len(f.States) > 0 && !slices.Contains(f.States, j.State),
			len(f.Types) > 0 && !slices.Contains(f.Types, j.Type),
			!f.EndedSince.IsZero() && (j.EndedAt.IsZero() || j.EndedAt.Before(f.EndedSince)):
			continue
		}
		out = append(out, cloneJob(j))
	}
	slices.SortFunc(out, func(a, b core.Job) int { return cmp.Compare(b.ID, a.ID) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// UpdateJob plays the database's partial unique index: a GPU may be held by
// one holding job at a time.
func (tx *memTx) UpdateJob(ctx context.Context, j core.Job) error {
	if err := tx.writable(); err != nil {
		return err
	}
	old, ok := tx.d.jobs[j.ID]
	if !ok {
		return core.Errorf(core.CodeNotFound, "job %s not found", core.JobName(j.ID))
	}
	if j.State.Holding() {
		mine := map[int64]bool{}
		for _, g := range j.Assigned {
			mine[g.ID] = true
		}
		for id, o := range tx.d.jobs {
			if id == j.ID || !o.State.Holding() {
				continue
			}
			for _, g := range o.Assigned {
				if mine[g.ID] {
					return core.Errorf(core.CodeConflict, "GPU %d is already held by %s", g.ID, core.JobName(id))
				}
			}
		}
	}
	old.State, old.Assigned, old.StartedAt, old.EndedAt, old.Prediction = j.State, slices.Clone(j.Assigned), j.StartedAt, j.EndedAt, clonePrediction(j.Prediction)
	fresh := cloneJob(core.Job{Stop: j.Stop, Runs: j.Runs})
	old.Stop, old.Runs = fresh.Stop, fresh.Runs
	tx.d.jobs[j.ID] = old
	return nil
}

func (tx *memTx) SetProgress(ctx context.Context, id int64, p core.Progress) error {
	if err := tx.writable(); err != nil {
		return err
	}
	j, ok := tx.d.jobs[id]
	if !ok {
		return core.Errorf(core.CodeNotFound, "job %s not found", core.JobName(id))
	}
	j.Progress = p
	tx.d.jobs[id] = j
	return nil
}

func (tx *memTx) SetPredictions(ctx context.Context, ps map[int64]core.Prediction) error {
	if err := tx.writable(); err != nil {
		return err
	}
	for id, p := range ps {
		if j, ok := tx.d.jobs[id]; ok && !j.State.Finished() {
			j.Prediction = clonePrediction(p)
			tx.d.jobs[id] = j
		}
	}
	return nil
}

func (tx *memTx) Usage(ctx context.Context, since time.Time) ([]core.UsageRecord, error) {
	var out []core.UsageRecord
	for _, j := range tx.d.jobs {
		if j.StartedAt.IsZero() || (!j.State.Holding() && !j.EndedAt.After(since)) {
			continue
		}
		r := core.UsageRecord{Job: j.ID, Project: j.Project, GPUs: len(j.Assigned), Start: j.StartedAt}
		if !j.State.Holding() {
			r.End = j.EndedAt
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b core.UsageRecord) int { return cmp.Compare(a.Job, b.Job) })
	return out, nil
}

// LockGPUs does nothing: MemStore runs one Update at a time.
func (tx *memTx) LockGPUs(ctx context.Context, ids []int64) error { return nil }

func (tx *memTx) InsertEvents(ctx context.Context, es []core.Event) error {
	if err := tx.writable(); err != nil {
		return err
	}
	for _, e := range es {
		if slices.ContainsFunc(tx.d.events, func(o core.Event) bool { return o.DedupKey == e.DedupKey }) {
			continue
		}
		tx.d.lastEvent++
		e.ID = tx.d.lastEvent
		tx.d.events = append(tx.d.events, e)
	}
	return nil
}

func (tx *memTx) Events(ctx context.Context, after int64, limit int) ([]core.Event, error) {
	var out []core.Event
	for _, e := range tx.d.events {
		if e.ID > after && (limit <= 0 || len(out) < limit) {
			out = append(out, e)
		}
	}
	return out, nil
}
