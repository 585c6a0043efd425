package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/gpucal/gpucal/core"
)

// holdingStates are the job states in which a job holds its GPUs.
var holdingStates = []string{string(core.JobStarting), string(core.JobRunning), string(core.JobDraining)}

// InsertJob stores j with its spec, state and prediction, and fills in j.ID.
// Its Assigned GPUs are stored by UpdateJob.
func (t *tx) InsertJob(ctx context.Context, j *core.Job) error {
	row, err := jobRowOf(*j)
	if err != nil {
		return err
	}
	if _, err := t.db.NewInsert().Model(&row).Returning("id").Exec(ctx); err != nil {
		if isForeignKey(err) {
			return core.Errorf(core.CodeInvalid, "user %q, project %q or reservation %s does not exist",
				j.Owner, j.Project, core.ReservationName(j.Reservation))
		}
		return dbError("insert job", err)
	}
	j.ID = row.ID
	return nil
}

// Job returns job id with its assigned GPUs. Inside Update on PostgreSQL
// it also locks the job until the transaction ends.
func (t *tx) Job(ctx context.Context, id int64) (core.Job, error) {
	var row jobRow
	q := t.db.NewSelect().Model(&row).Where("id = ?", id)
	if t.forUpdate {
		q = q.For("UPDATE")
	}
	if err := q.Scan(ctx); errors.Is(err, sql.ErrNoRows) {
		return core.Job{}, notFound("job %s", core.JobName(id))
	} else if err != nil {
		return core.Job{}, dbError("job", err)
	}
	js, err := t.withAssigned(ctx, []jobRow{row})
	if err != nil {
		return core.Job{}, err
	}
	return js[0], nil
}

// Jobs returns the jobs that match f, newest first.
func (t *tx) Jobs(ctx context.Context, f core.JobFilter) ([]core.Job, error) {
	var rows []jobRow
	q := t.db.NewSelect().Model(&rows).OrderExpr("id DESC")
	if f.Owner != "" {
		q = q.Where("owner = ?", f.Owner)
	}
	if f.Project != "" {
		q = q.Where("project = ?", f.Project)
	}
	if len(f.States) > 0 {
		q = q.Where("state IN (?)", bun.In(f.States))
	}
	if len(f.Types) > 0 {
		q = q.Where("type IN (?)", bun.In(f.Types))
	}
	if !f.EndedSince.IsZero() {
		q = q.Where("ended_at >= ?", stamp(f.EndedSince))
	}
	if f.Limit > 0 {
		q = q.Limit(int64(f.Limit))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, dbError("jobs", err)
	}
	return t.withAssigned(ctx, rows)
}

// withAssigned converts rows and loads the GPUs of those that started, by
// node name and index. Queued jobs have none, so a long queue costs no
// second query.
func (t *tx) withAssigned(ctx context.Context, rows []jobRow) ([]core.Job, error) {
	out := make([]core.Job, len(rows))
	var started []int64
	for i, r := range rows {
		j, err := r.job()
		if err != nil {
			return nil, err
		}
		out[i] = j
		if !r.StartedAt.IsZero() {
			started = append(started, r.ID)
		}
	}
	if len(started) == 0 {
		return out, nil
	}
	gpus, err := t.gpuRefs(ctx, "job_gpus", "job_id", started)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Assigned = gpus[out[i].ID]
	}
	return out, nil
}

// UpdateJob stores j's State, StartedAt, EndedAt, Prediction, Stop, Runs
// and Assigned GPUs, sorted by node and index. The GPUs hold while j's state holds; a
// GPU another holding job holds is refused by the database, and the error
// makes Update run the transaction again.
func (t *tx) UpdateJob(ctx context.Context, j core.Job) error {
	row, err := jobRowOf(j)
	if err != nil {
		return err
	}
	res, err := t.db.NewUpdate().Model(&row).
		Column("state", "started_at", "ended_at", "planned_at", "position", "start_p50", "start_p90",
			"end_p50", "end_p90", "planned_gpus", "reason", "estimate", "drain", "stop", "runs").
		WherePK().
		Exec(ctx)
	if err != nil {
		return dbError("update job", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return dbError("update job", err)
	} else if n == 0 {
		return notFound("job %s", core.JobName(j.ID))
	}
	if _, err := t.db.NewDelete().Model((*jobGPURow)(nil)).Where("job_id = ?", j.ID).Exec(ctx); err != nil {
		return dbError("update job: gpus", err)
	}
	if len(j.Assigned) == 0 {
		return nil
	}
	gpus := make([]jobGPURow, len(j.Assigned))
	for i, g := range j.Assigned {
		gpus[i] = jobGPURow{Job: j.ID, GPUID: g.ID, Holds: j.State.Holding()}
	}
	slices.SortFunc(gpus, func(a, b jobGPURow) int { return cmp.Compare(a.GPUID, b.GPUID) })
	if _, err := t.db.NewInsert().Model(&gpus).Exec(ctx); err != nil {
		switch {
		case isUnique(err) && j.State.Holding():
			return holdRace{fmt.Errorf("%w: store: update job: %w", core.Errorf(core.CodeConflict,
				"a GPU of %s is held by another job", core.JobName(j.ID)), err)}
		case isForeignKey(err):
			return core.Errorf(core.CodeInvalid, "a GPU of %s does not exist", core.JobName(j.ID))
		}
		return dbError("update job: gpus", err)
	}
	return nil
}

// SetProgress stores the progress job id reported.
func (t *tx) SetProgress(ctx context.Context, id int64, p core.Progress) error {
	row := jobRow{ID: id, ProgressFrac: p.Fraction, ProgressStep: p.Step, ProgressTotal: p.Total,
		ProgressAt: stamp(p.At), ProgressRate: p.Rate}
	res, err := t.db.NewUpdate().Model(&row).
		Column("progress_fraction", "progress_step", "progress_total", "progress_at", "progress_rate").
		WherePK().
		Exec(ctx)
	if err != nil {
		return dbError("set progress", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return dbError("set progress", err)
	} else if n == 0 {
		return notFound("job %s", core.JobName(id))
	}
	return nil
}

// SetPredictions stores the predictions of the jobs in ps that are not
// finished, one statement per job, in ID order.
func (t *tx) SetPredictions(ctx context.Context, ps map[int64]core.Prediction) error {
	open := append([]string{string(core.JobQueued)}, holdingStates...)
	for _, id := range slices.Sorted(maps.Keys(ps)) {
		row, err := jobRowOf(core.Job{ID: id, Prediction: ps[id]})
		if err != nil {
			return err
		}
		_, err = t.db.NewUpdate().Model(&row).
			Column("planned_at", "position", "start_p50", "start_p90", "end_p50", "end_p90", "planned_gpus", "reason", "estimate", "drain").
			WherePK().
			Where("state IN (?)", bun.In(open)).
			Exec(ctx)
		if err != nil {
			return dbError("set prediction", err)
		}
	}
	return nil
}

// Usage returns the GPU use of every job that started and still held its
// GPUs at or after since: holding jobs, and finished ones that ended after
// since. GPUs counts the GPUs it was given.
func (t *tx) Usage(ctx context.Context, since time.Time) ([]core.UsageRecord, error) {
	var rows []struct {
		ID        int64  `bun:"id"`
		Project   string `bun:"project"`
		State     string `bun:"state"`
		StartedAt stamp  `bun:"started_at"`
		EndedAt   stamp  `bun:"ended_at"`
		GPUs      int    `bun:"gpus"`
	}
	err := t.db.NewSelect().
		TableExpr("jobs AS j").
		ColumnExpr("j.id, j.project, j.state, j.started_at, j.ended_at").
		ColumnExpr("(SELECT COUNT(*) FROM job_gpus AS jg WHERE jg.job_id = j.id) AS gpus").
		Where("j.started_at IS NOT NULL").
		WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("j.state IN (?)", bun.In(holdingStates)).WhereOr("j.ended_at > ?", stamp(since))
		}).
		OrderExpr("j.id").
		Scan(ctx, &rows)
	if err != nil {
		return nil, dbError("usage", err)
	}
	out := make([]core.UsageRecord, len(rows))
	for i, r := range rows {
		out[i] = core.UsageRecord{Job: r.ID, Project: r.Project, GPUs: r.GPUs, Start: r.StartedAt.Time()}
		if !slices.Contains(holdingStates, r.State) {
			out[i].End = r.EndedAt.Time()
		}
	}
	return out, nil
}

// LockGPUs locks the GPU rows until the transaction ends, in ID order so
// that two lockers cannot deadlock. Only Update on PostgreSQL locks: SQLite
// writers are serialised (BEGIN IMMEDIATE) and View changes nothing. NO KEY
// UPDATE leaves the foreign key checks of other inserts unblocked.
func (t *tx) LockGPUs(ctx context.Context, ids []int64) error {
	if !t.forUpdate || len(ids) == 0 {
		return nil
	}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	var got []int64
	err := t.db.NewSelect().Model((*gpuRow)(nil)).Column("id").
		Where("id IN (?)", bun.In(ids)).
		Order("id").
		For("NO KEY UPDATE").
		Scan(ctx, &got)
	return dbError("lock gpus", err)
}

// eventBatch bounds the rows of one INSERT into the outbox.
const eventBatch = 500

// InsertEvents appends es to the outbox; an event whose dedup key is
// already there is skipped.
func (t *tx) InsertEvents(ctx context.Context, es []core.Event) error {
	for chunk := range slices.Chunk(es, eventBatch) {
		rows := make([]eventRow, len(chunk))
		for i, e := range chunk {
			rows[i] = eventRow{Kind: string(e.Kind), Job: e.Job, User: e.User, At: stamp(e.At), Detail: e.Detail, Data: eventData(e.Data), DedupKey: e.DedupKey}
		}
		if _, err := t.db.NewInsert().Model(&rows).On("CONFLICT (dedup_key) DO NOTHING").Exec(ctx); err != nil {
			return dbError("insert events", err)
		}
	}
	return nil
}

// Events returns up to limit events with an ID above after, oldest first.
func (t *tx) Events(ctx context.Context, after int64, limit int) ([]core.Event, error) {
	var rows []eventRow
	q := t.db.NewSelect().Model(&rows).Where("id > ?", after).Order("id")
	if limit > 0 {
		q = q.Limit(int64(limit))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, dbError("events", err)
	}
	out := make([]core.Event, len(rows))
	for i, r := range rows {
		out[i] = r.event()
	}
	return out, nil
}

// eventData encodes an event's fields; none is "".
func eventData(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "" // a map of strings always encodes
	}
	return string(b)
}

func (r eventRow) event() core.Event {
	e := core.Event{ID: r.ID, Kind: core.EventKind(r.Kind), Job: r.Job, User: r.User, At: r.At.Time(), Detail: r.Detail, DedupKey: r.DedupKey}
	if r.Data != "" {
		// A row this version cannot read keeps its English detail.
		_ = json.Unmarshal([]byte(r.Data), &e.Data)
	}
	return e
}

// jobRowOf is j as the jobs table stores it.
func jobRowOf(j core.Job) (jobRow, error) {
	spec, err := json.Marshal(jobSpec{Command: j.Command, Env: j.Env, WorkDir: j.WorkDir, Hints: j.Hints, Checkpoint: j.Checkpoint})
	if err != nil {
		return jobRow{}, fmt.Errorf("store: job %s: spec: %w", core.JobName(j.ID), err)
	}
	p := j.Prediction
	planned := p.GPUs
	if planned == nil {
		planned = []int64{}
	}
	gpus, err := json.Marshal(planned)
	if err != nil {
		return jobRow{}, fmt.Errorf("store: job %s: planned gpus: %w", core.JobName(j.ID), err)
	}
	est, err := json.Marshal(p.Estimate)
	if err != nil {
		return jobRow{}, fmt.Errorf("store: job %s: estimate: %w", core.JobName(j.ID), err)
	}
	row := jobRow{
		ID: j.ID, Owner: j.Owner, Project: j.Project, Name: j.Name, Type: string(j.Type), GPUs: j.GPUs, Model: j.Model,
		Class: string(j.Class), Preemptible: j.Preemptible, Reservation: j.Reservation, Spec: string(spec), State: string(j.State),
		SubmittedAt: stamp(j.SubmittedAt), StartedAt: stamp(j.StartedAt), EndedAt: stamp(j.EndedAt),
		PlannedAt: stamp(p.PlannedAt), Position: p.Position, StartP50: stamp(p.StartP50), StartP90: stamp(p.StartP90),
		EndP50: stamp(p.EndP50), EndP90: stamp(p.EndP90), PlannedGPUs: string(gpus), Reason: p.Reason, Estimate: string(est),
		ProgressFrac: j.Progress.Fraction, ProgressStep: j.Progress.Step, ProgressTotal: j.Progress.Total,
		ProgressAt: stamp(j.Progress.At), ProgressRate: j.Progress.Rate,
	}
	if p.Drain != nil {
		d, err := json.Marshal(p.Drain)
		if err != nil {
			return jobRow{}, fmt.Errorf("store: job %s: drain: %w", core.JobName(j.ID), err)
		}
		row.Drain = string(d)
	}
	if j.Stop != nil {
		s, err := json.Marshal(j.Stop)
		if err != nil {
			return jobRow{}, fmt.Errorf("store: job %s: stop: %w", core.JobName(j.ID), err)
		}
		row.Stop = string(s)
	}
	runs := j.Runs
	if runs == nil {
		runs = []core.NodeRun{}
	}
	r, err := json.Marshal(runs)
	if err != nil {
		return jobRow{}, fmt.Errorf("store: job %s: runs: %w", core.JobName(j.ID), err)
	}
	row.Runs = string(r)
	return row, nil
}

// job converts a row back; Assigned is filled in by withAssigned.
func (r jobRow) job() (core.Job, error) {
	var spec jobSpec
	if err := json.Unmarshal([]byte(r.Spec), &spec); err != nil {
		return core.Job{}, fmt.Errorf("store: job %s: spec: %w", core.JobName(r.ID), err)
	}
	j := core.Job{
		ID: r.ID, Owner: r.Owner, Project: r.Project, Name: r.Name, Type: core.JobType(r.Type), GPUs: r.GPUs, Model: r.Model,
		Command: spec.Command, Env: spec.Env, WorkDir: spec.WorkDir, Checkpoint: spec.Checkpoint, Class: core.JobClass(r.Class), Preemptible: r.Preemptible,
		Reservation: r.Reservation, Hints: spec.Hints, State: core.JobState(r.State),
		SubmittedAt: r.SubmittedAt.Time(), StartedAt: r.StartedAt.Time(), EndedAt: r.EndedAt.Time(),
		Prediction: core.Prediction{PlannedAt: r.PlannedAt.Time(), Position: r.Position, StartP50: r.StartP50.Time(),
			StartP90: r.StartP90.Time(), EndP50: r.EndP50.Time(), EndP90: r.EndP90.Time(), Reason: r.Reason},
		Progress: core.Progress{Fraction: r.ProgressFrac, Step: r.ProgressStep, Total: r.ProgressTotal,
			At: r.ProgressAt.Time(), Rate: r.ProgressRate},
	}
	if err := json.Unmarshal([]byte(r.PlannedGPUs), &j.Prediction.GPUs); err != nil {
		return core.Job{}, fmt.Errorf("store: job %s: planned gpus: %w", core.JobName(r.ID), err)
	}
	if len(j.Prediction.GPUs) == 0 {
		j.Prediction.GPUs = nil
	}
	if err := json.Unmarshal([]byte(r.Estimate), &j.Prediction.Estimate); err != nil {
		return core.Job{}, fmt.Errorf("store: job %s: estimate: %w", core.JobName(r.ID), err)
	}
	if r.Drain != "" {
		j.Prediction.Drain = new(core.DrainOrder)
		if err := json.Unmarshal([]byte(r.Drain), j.Prediction.Drain); err != nil {
			return core.Job{}, fmt.Errorf("store: job %s: drain: %w", core.JobName(r.ID), err)
		}
	}
	if r.Stop != "" {
		j.Stop = new(core.StopRequest)
		if err := json.Unmarshal([]byte(r.Stop), j.Stop); err != nil {
			return core.Job{}, fmt.Errorf("store: job %s: stop: %w", core.JobName(r.ID), err)
		}
	}
	if err := json.Unmarshal([]byte(r.Runs), &j.Runs); err != nil {
		return core.Job{}, fmt.Errorf("store: job %s: runs: %w", core.JobName(r.ID), err)
	}
	if len(j.Runs) == 0 {
		j.Runs = nil
	}
	return j, nil
}
