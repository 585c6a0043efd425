package run

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gpucal/gpucal/agent/progress"
)

// ErrGone is Adopt's answer when no process of the job is left to adopt.
var ErrGone = errors.New("no process of the job is left")

// Orphan is a job an earlier agent started (and wrote down) that a
// restarted agent takes over.
type Orphan struct {
	PID        int    // the job's first process, also its process group ID
	StartTicks uint64 // Process.StartTicks as the earlier agent read it
	// LogPath and OnProgress, when set, keep reading the job's log for
	// progress from where it is now, as Start does.
	LogPath    string
	OnProgress func(progress.Report)
	// Cgroup is the job's cgroup directory, Process.Cgroup as the earlier
	// agent had it; "" for a job without one.
	Cgroup string
}

// Adopt takes over a job an earlier agent started: it returns a Process
// that Stop can take down its ladder like one Start returned, cgroup
// included. The agent is not its parent, so its exit status is lost: Wait
// polls /proc until the first process is gone (or a zombie, left to
// whoever reaps it now) and returns ExitCode -1, no Signal and a zero
// Started; its resource use is the cgroup's at that moment, none without
// a cgroup.
//
// The first process counts as the job's only while its PID still has
// o.StartTicks: a process with the same PID and another start time is one
// the kernel gave the PID to later, which it can do only once the job's
// whole group is gone; the group is then not signalled, and only the
// cgroup may hold what is left of the job. If neither the first process
// nor any other process of its group or its cgroup is alive, Adopt
// removes the cgroup and returns ErrGone.
func Adopt(o Orphan) (*Process, error) {
	st, err := ReadStat(o.PID)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading process %d: %w", o.PID, err)
	}
	reused := err == nil && st.StartTicks != o.StartTicks
	leader := err == nil && !reused && st.Live()
	groupEmpty := reused || (!leader && !liveInGroup(o.PID))
	cgroup := o.Cgroup
	if cgroup != "" && !IsCgroup(cgroup) {
		cgroup = "" // gone, or never one
	}
	if groupEmpty && (cgroup == "" || cgroupEmpty(cgroup)) {
		if cgroup != "" {
			_ = removeCgroup(cgroup) // best effort: the agent reports the job ended either way
		}
		return nil, ErrGone
	}
	p := &Process{pid: o.PID, startTicks: o.StartTicks, cgroup: cgroup, groupEmpty: groupEmpty, done: make(chan struct{})}
	f := &follower{parser: progress.NewParser(o.OnProgress), stop: make(chan struct{}), stopped: make(chan struct{})}
	if o.LogPath != "" && o.OnProgress != nil {
		if r, err := os.Open(o.LogPath); err == nil {
			f.r = r
			f.off, _ = r.Seek(0, io.SeekEnd)
		}
	}
	if f.r != nil {
		go f.run()
	} else {
		close(f.stopped)
	}
	go p.poll(leader, f)
	return p, nil
}

// poll waits until the adopted job's first process is gone, then lets the
// follower read the last of the log and publishes a Result that says
// when, and what the cgroup counted.
func (p *Process) poll(alive bool, f *follower) {
	if alive {
		t := time.NewTicker(pollEvery)
		for range t.C {
			st, err := ReadStat(p.pid)
			if err != nil || !st.Live() || st.StartTicks != p.startTicks {
				break
			}
		}
		t.Stop()
	}
	close(f.stop)
	<-f.stopped
	p.result = p.withCgroupUsage(Result{ExitCode: -1, Ended: time.Now().UTC()})
	close(p.done)
}
