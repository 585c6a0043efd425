package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/gpucal/gpucal/core"
)

// Job logs are stored as the agents ship them, one row per chunk, without
// gaps: a chunk goes at exactly the size of the log before it. The size
// is therefore the end of the chunk with the highest offset, which the
// primary key (job_id, off) finds without reading the others.

// AppendLog stores a chunk of job's log: n bytes at offset, of which data
// (len(data) <= n) are kept, and returns the log's size after it. offset
// must be the size before; any other is refused with a CodeConflict error
// that states the size, and nothing is stored. An empty chunk (n = 0)
// stores nothing and returns the size.
//
// Two appends to one log at once: on SQLite writers are serialised; on
// PostgreSQL, inside Update, the job's row is locked first, so the second
// append waits and then sees the first one's chunk. The primary key refuses
// a second chunk at one offset in any case.
func (t *tx) AppendLog(ctx context.Context, job, offset, n int64, data []byte) (int64, error) {
	switch {
	case offset < 0 || n < 0:
		return 0, core.Errorf(core.CodeInvalid, "a log chunk needs an offset and a length of at least 0, got %d bytes at %d", n, offset)
	case int64(len(data)) > n:
		return 0, core.Errorf(core.CodeInvalid, "a log chunk of %d bytes cannot keep %d", n, len(data))
	}
	if err := t.logJob(ctx, job, t.forUpdate); err != nil {
		return 0, err
	}
	size, err := t.logSize(ctx, job)
	if err != nil {
		return 0, err
	}
	if offset != size {
		return 0, logConflict(job, size, offset)
	}
	if n == 0 {
		return size, nil
	}
	if data == nil {
		data = []byte{} // the column is NOT NULL; bun writes a nil slice as NULL
	}
	row := logRow{Job: job, Offset: offset, N: n, Data: data}
	if _, err := t.db.NewInsert().Model(&row).Exec(ctx); err != nil {
		if isUnique(err) {
			return 0, core.Errorf(core.CodeConflict, "the log of %s grew past %d bytes meanwhile", core.JobName(job), offset)
		}
		return 0, dbError("append log", err)
	}
	return offset + n, nil
}

// logConflict is AppendLog's answer to a chunk that does not start at the
// log's size.
func logConflict(job, size, offset int64) error {
	return core.Errorf(core.CodeConflict, "the log of %s has %d bytes, not %d", core.JobName(job), size, offset)
}

// Log returns the chunks of job's log that touch [offset, offset+limit),
// in order, whole (the caller trims them), and the log's size. A job with
// no log returns no chunks and size 0.
func (t *tx) Log(ctx context.Context, job, offset, limit int64) ([]core.LogChunk, int64, error) {
	if offset < 0 || limit < 0 {
		return nil, 0, core.Errorf(core.CodeInvalid, "a log range needs an offset and a limit of at least 0, got %d bytes from %d", limit, offset)
	}
	if err := t.logJob(ctx, job, false); err != nil {
		return nil, 0, err
	}
	size, err := t.logSize(ctx, job)
	if err != nil {
		return nil, 0, err
	}
	if offset >= size || limit == 0 {
		return nil, size, nil
	}
	end := offset + min(limit, size-offset)
	var rows []logRow
	// The first chunk touching offset is the last one starting at or
	// before it: bounding off from below keeps the scan to the range read.
	first := t.db.NewSelect().TableExpr("job_logs").ColumnExpr("COALESCE(MAX(off), 0)").
		Where("job_id = ?", job).Where("off <= ?", offset)
	err = t.db.NewSelect().Model(&rows).
		Where("job_id = ?", job).
		Where("off >= (?)", first).
		Where("off < ?", end).
		Where("off + n > ?", offset).
		Order("off").
		Scan(ctx)
	if err != nil {
		return nil, 0, dbError("log", err)
	}
	out := make([]core.LogChunk, len(rows))
	for i, r := range rows {
		out[i] = core.LogChunk{Offset: r.Offset, N: r.N, Data: r.Data}
		if len(r.Data) == 0 {
			out[i].Data = nil
		}
	}
	return out, size, nil
}

// logJob checks that job exists and, when lock is set, locks its row
// until the transaction ends (NO KEY UPDATE: inserts that reference the
// job are not blocked).
func (t *tx) logJob(ctx context.Context, job int64, lock bool) error {
	q := t.db.NewSelect().Model((*jobRow)(nil)).Column("id").Where("id = ?", job)
	if lock {
		q = q.For("NO KEY UPDATE")
	}
	var id int64
	if err := q.Scan(ctx, &id); errors.Is(err, sql.ErrNoRows) {
		return notFound("job %s", core.JobName(job))
	} else if err != nil {
		return dbError("log: job", err)
	}
	return nil
}

// logSize returns the size of job's log: the end of its last chunk, 0
// when it has none.
func (t *tx) logSize(ctx context.Context, job int64) (int64, error) {
	var size int64
	err := t.db.NewSelect().Model((*logRow)(nil)).ColumnExpr("off + n").
		Where("job_id = ?", job).
		OrderExpr("off DESC").
		Limit(1).
		Scan(ctx, &size)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, dbError("log size", err)
	}
	return size, nil
}

// PruneLogs implements core.Tx: the logs of jobs that ended before
// endedBefore go, in one statement.
func (t *tx) PruneLogs(ctx context.Context, endedBefore time.Time) (int64, error) {
	res, err := t.db.NewDelete().TableExpr("job_logs").
		Where("job_id IN (SELECT id FROM jobs WHERE ended_at IS NOT NULL AND ended_at < ?)", stamp(endedBefore)).
		Exec(ctx)
	if err != nil {
		return 0, dbError("prune job logs", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}
