package coretest

import (
	"context"
	"slices"
	"time"

	"github.com/gpucal/gpucal/core"
)

// The job log half of memTx, with the store's rules: a chunk goes at
// exactly the log's size, and the size counts bytes that were not kept.

func (tx *memTx) AppendLog(ctx context.Context, job, offset, n int64, data []byte) (int64, error) {
	if err := tx.writable(); err != nil {
		return 0, err
	}
	switch {
	case offset < 0 || n < 0:
		return 0, core.Errorf(core.CodeInvalid, "a log chunk needs an offset and a length of at least 0, got %d bytes at %d", n, offset)
	case int64(len(data)) > n:
		return 0, core.Errorf(core.CodeInvalid, "a log chunk of %d bytes cannot keep %d", n, len(data))
	}
	if _, ok := tx.d.jobs[job]; !ok {
		return 0, core.Errorf(core.CodeNotFound, "job %s not found", core.JobName(job))
	}
	size := tx.logSize(job)
	if offset != size {
		return 0, core.Errorf(core.CodeConflict, "the log of %s has %d bytes, not %d", core.JobName(job), size, offset)
	}
	if n == 0 {
		return size, nil
	}
	c := core.LogChunk{Offset: offset, N: n}
	if len(data) > 0 {
		c.Data = slices.Clone(data)
	}
	tx.d.logs[job] = append(tx.d.logs[job], c)
	return offset + n, nil
}

func (tx *memTx) Log(ctx context.Context, job, offset, limit int64) ([]core.LogChunk, int64, error) {
	if offset < 0 || limit < 0 {
		return nil, 0, core.Errorf(core.CodeInvalid, "a log range needs an offset and a limit of at least 0, got %d bytes from %d", limit, offset)
	}
	if _, ok := tx.d.jobs[job]; !ok {
		return nil, 0, core.Errorf(core.CodeNotFound, "job %s not found", core.JobName(job))
	}
	size := tx.logSize(job)
	if offset >= size || limit == 0 {
		return nil, size, nil
	}
	end := offset + min(limit, size-offset)
	var out []core.LogChunk
	for _, c := range tx.d.logs[job] {
		if c.Offset < end && c.Offset+c.N > offset {
			c.Data = slices.Clone(c.Data)
			out = append(out, c)
		}
	}
	return out, size, nil
}

// logSize is the end of job's last chunk, 0 without one.
func (tx *memTx) logSize(job int64) int64 {
	l := tx.d.logs[job]
	if len(l) == 0 {
		return 0
	}
	last := l[len(l)-1]
	return last.Offset + last.N
}

// PruneLogs implements core.Tx.
func (tx *memTx) PruneLogs(ctx context.Context, endedBefore time.Time) (int64, error) {
	if err := tx.writable(); err != nil {
		return 0, err
	}
	var n int64
	for id, chunks := range tx.d.logs {
		if j, ok := tx.d.jobs[id]; ok && !j.EndedAt.IsZero() && j.EndedAt.Before(endedBefore) {
			n += int64(len(chunks))
			delete(tx.d.logs, id)
		}
	}
	return n, nil
}
