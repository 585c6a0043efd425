package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/gpucal/gpucal/core"
)

const (
	// maxChunk is the most one AppendLog carries.
	maxChunk = 256 << 10
	// maxRound is the most of one log shipped per round, so that a job
	// printing fast does not hold up the others' logs.
	maxRound = 16 * maxChunk
	// appendTimeout bounds one AppendLog.
	appendTimeout = 30 * time.Second
)

// shipLogs ships the jobs' logs every logEvery until ctx ends.
func (a *Agent) shipLogs(ctx context.Context) {
	t := time.NewTicker(a.logEvery)
	defer t.Stop()
	buf := make([]byte, maxChunk)
	for {
		a.shipRound(ctx, buf)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// shipRound ships what each job appended to its log since the last
// round. A job that has exited is shipped to the end of its log and then
// done; one the server acknowledged meanwhile is forgotten once done.
func (a *Agent) shipRound(ctx context.Context, buf []byte) {
	type pending struct {
		id    int64
		from  int64
		ended bool // the job has exited: its log grows no more
	}
	a.mu.Lock()
	var logs []pending
	for _, id := range a.jobIDsLocked() {
		r := a.jobs[id].rec
		if r.LogDone || r.Phase == phaseStarting || r.Phase == phaseRefused {
			continue
		}
		logs = append(logs, pending{id, r.LogShipped, r.Phase == phaseExited})
	}
	a.mu.Unlock()

	changed := false
	for _, l := range logs {
		off, done, err := a.shipLog(ctx, l.id, l.from, l.ended, buf)
		if err != nil && ctx.Err() == nil {
			a.mu.Lock()
			level := slog.LevelWarn
			if a.offline { // the heartbeats say so already
				level = slog.LevelDebug
			}
			a.mu.Unlock()
			a.log.Log(ctx, level, "could not ship a job's log; retrying", "job", core.JobName(l.id), "offset", off, "error", err)
		}
		if off == l.from && !done {
			continue
		}
		changed = true
		a.mu.Lock()
		if j, ok := a.jobs[l.id]; ok {
			j.rec.LogShipped, j.rec.LogDone = off, done
			if done && j.rec.Acked {
				a.forgetLocked(l.id)
			}
		}
		a.dirty = true
		a.mu.Unlock()
		if done {
			a.wakeUp() // report the log size
		}
	}
	if changed {
		a.persistIfDirty()
	}
}

// shipLog appends job id's log from offset from to the server, up to
// maxRound bytes, in chunks read from the file, never the whole log at
// once. It returns the server's size and whether the log is all shipped
// (only once the job has ended).
func (a *Agent) shipLog(ctx context.Context, id, from int64, ended bool, buf []byte) (off int64, done bool, err error) {
	f, err := os.Open(a.logPath(id))
	if errors.Is(err, os.ErrNotExist) {
		return from, ended, nil // a job whose log is gone has nothing more to ship
	}
	if err != nil {
		return from, false, err
	}
	defer f.Close()
	off = from
	mismatches := 0
	for shipped := 0; shipped < maxRound; {
		fi, err := f.Stat()
		if err != nil {
			return off, false, err
		}
		if off >= fi.Size() {
			// The server may have more than the file: a log truncated
			// under the agent. Nothing of it can be shipped again.
			return off, ended, nil
		}
		n, err := f.ReadAt(buf[:min(int64(len(buf)), fi.Size()-off)], off)
		if n == 0 {
			if err == nil || err == io.EOF {
				err = fmt.Errorf("log %s shrank while read", f.Name())
			}
			return off, false, err
		}
		actx, cancel := context.WithTimeout(ctx, appendTimeout)
		size, err := a.conn.AppendLog(actx, id, off, buf[:n])
		cancel()
		if s, ok := LogSize(err); ok && mismatches < 3 {
			mismatches++
			a.log.Info("resuming a job's log from the server's size", "job", core.JobName(id), "agent_offset", off, "server_size", s)
			off = max(s, 0)
			continue
		}
		if err != nil {
			return off, false, err
		}
		off = size
		shipped += n
	}
	return off, false, nil
}
