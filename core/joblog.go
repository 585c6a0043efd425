package core

import (
	"context"
	"fmt"
	"time"
)

// maxLogChunk bounds one append and one read of a job's log.
const maxLogChunk = 1 << 20

// AppendLog stores the next stretch of a job's log, sent by the agent of
// node, which must be running part of it; offset is how many bytes the
// server had. The server keeps the log of a gang's first node only. Past the policy's MaxLog the bytes are counted but not kept.
// It returns the log's size after the append; a wrong offset is refused
// with a CodeConflict error, and the size returned is then the one the
// server has, for the agent to resume from.
func (s *Service) AppendLog(ctx context.Context, node string, job, offset int64, data []byte) (int64, error) {
	if len(data) > maxLogChunk {
		return 0, Errorf(CodeInvalid, "a log chunk may hold at most %d bytes, got %d", maxLogChunk, len(data))
	}
	if offset < 0 {
		return 0, Errorf(CodeInvalid, "a log offset must not be negative")
	}
	var size int64
	err := s.store.Update(ctx, func(tx Tx) error {
		j, err := tx.Job(ctx, job)
		if err != nil {
			return err
		}
		if !slicesContainsNode(j.Assigned, node) {
			return Errorf(CodeForbidden, "%s does not run on node %s", JobName(job), node)
		}
		if nodesOf(j.Assigned)[0] != node {
			// A gang's log is its first node's (rank 0); the others keep
			// theirs on the node. Their agents are told all is well.
			size = offset + int64(len(data))
			return nil
		}
		if _, size, err = tx.Log(ctx, job, 0, 0); err != nil {
			return err
		}
		if offset != size {
			return Errorf(CodeConflict, "the server has %d bytes of the log of %s, not %d", size, JobName(job), offset)
		}
		kept := data
		if room := s.nodes.MaxLog - offset; room < int64(len(kept)) {
			kept = kept[:max(room, 0)]
		}
		size, err = tx.AppendLog(ctx, job, offset, int64(len(data)), kept)
		return err
	})
	return size, err
}

// LogPart is a stretch of a job's log.
type LogPart struct {
	Offset int64  // where Data starts
	Data   []byte // the bytes kept from Offset on
	// Size is how long the log is on the server so far.
	Size int64
	// Dropped counts bytes in [Offset, Offset+len(Data)+Dropped) that were
	// not kept (past the server's limit); they follow Data.
	Dropped int64
	// Done: the job has ended and Offset+len(Data)+Dropped is the end of
	// its log as far as its agents reported it.
	Done  bool
	State JobState
}

// Log returns up to limit bytes of job id's log from offset, for its owner,
// an admin of its project or a site admin: logs may hold what the command
// line does.
func (s *Service) Log(ctx context.Context, a Actor, id, offset, limit int64) (LogPart, error) {
	if offset < 0 {
		return LogPart{}, Errorf(CodeInvalid, "a log offset must not be negative")
	}
	if limit <= 0 || limit > maxLogChunk {
		limit = maxLogChunk
	}
	var out LogPart
	err := s.store.View(ctx, func(tx Tx) error {
		j, err := tx.Job(ctx, id)
		if err != nil {
			return err
		}
		if !a.canChangeJob(j) {
			return Errorf(CodeForbidden, "%s belongs to %s; only its owner, an admin of its project or a site admin may read its log", JobName(j.ID), j.Owner)
		}
		if keep := s.nodes.LogRetention; keep > 0 && j.State.Finished() && !j.EndedAt.IsZero() && s.Now().Sub(j.EndedAt) >= keep {
			return Errorf(CodeNotFound, "the log of %s is gone: the server keeps logs for %s after a job ends (%s ended %s)",
				JobName(id), fmtDuration(keep), JobName(id), fmtTime(j.EndedAt))
		}
		chunks, size, err := tx.Log(ctx, id, offset, limit)
		if err != nil {
			return err
		}
		out = LogPart{Offset: offset, Size: size, State: j.State}
		if offset > size {
			return Errorf(CodeInvalid, "the log of %s has %d bytes; offset %d is past its end", JobName(id), size, offset)
		}
		end := min(offset+limit, size)
		at := offset
		for _, c := range chunks {
			if c.Offset+c.N <= at || c.Offset >= end {
				continue
			}
			if c.Offset > at {
				return fmt.Errorf("the log of %s has a gap at %d", JobName(id), at)
			}
			from := at - c.Offset
			to := min(c.N, end-c.Offset)
			if out.Dropped == 0 && from < int64(len(c.Data)) {
				out.Data = append(out.Data, c.Data[from:min(to, int64(len(c.Data)))]...)
			}
			if to > int64(len(c.Data)) {
				out.Dropped += to - max(from, int64(len(c.Data)))
			}
			at = c.Offset + to
		}
		out.Done = j.State.Finished() && at == size && logsShipped(j, size)
		return nil
	})
	return out, err
}

// logsShipped reports whether the server has all of j's log: each part
// has ended, and the first node's agent said its log is complete
// (JobReport.LogDone) at a size that size covers.
func logsShipped(j Job, size int64) bool {
	first := ""
	if nodes := nodesOf(j.Assigned); len(nodes) > 0 {
		first = nodes[0]
	}
	for _, r := range j.Runs {
		if !r.Final() {
			return false
		}
		if r.Node == first && r.State == RunExited && (!r.LogDone || size < r.LogSize) {
			return false
		}
	}
	return true
}

// PruneResult says what Prune removed.
type PruneResult struct {
	LogChunks, JoinTokens, Events int64
}

// EventRetention is how long the outbox keeps an event and its deliveries
// once every delivery was settled (sent or given up).
const EventRetention = 30 * 24 * time.Hour

// Prune removes what the server no longer needs: the logs of jobs that
// ended more than LogRetention ago (the nodes keep their own copies until
// their admins clean up), join tokens that expired a day ago or more, and
// outbox events older than EventRetention with all their deliveries
// settled.
func (s *Service) Prune(ctx context.Context) (PruneResult, error) {
	now := s.Now()
	var out PruneResult
	err := s.store.Update(ctx, func(tx Tx) (err error) {
		if s.nodes.LogRetention > 0 {
			if out.LogChunks, err = tx.PruneLogs(ctx, now.Add(-s.nodes.LogRetention)); err != nil {
				return err
			}
		}
		if out.JoinTokens, err = tx.PruneJoinTokens(ctx, now.Add(-24*time.Hour)); err != nil {
			return err
		}
		out.Events, err = tx.PruneEvents(ctx, now.Add(-EventRetention))
		return err
	})
	return out, err
}
