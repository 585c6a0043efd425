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
}

// Adopt takes over a job an earlier agent started: it returns a Process
// that Stop can take down its ladder like one Start returned. The agent
// is not its parent, so its exit status is lost: Wait polls /proc until the
// first process is gone (or a zombie, left to whoever reaps it now) and
// returns ExitCode -1, no Signal, no resource use and a zero Started.
//
// The first process counts as the job's only while its PID still has
// o.StartTicks: a process with the same PID and another start time is one
// the kernel gave the PID to later, which it can do only once the job's
// whole group is gone. If neither the first process nor any other process
// of its group is alive, Adopt returns ErrGone.
func Adopt(o Orphan) (*Process, error) {
	st, err := ReadStat(o.PID)
	switch {
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("reading process %d: %w", o.PID, err)
	case err == nil && st.StartTicks != o.StartTicks:
		return nil, ErrGone // the PID was reused, so the group is long gone
	}
	leader := err == nil && st.Live()
	if !leader && !liveInGroup(o.PID) {
		return nil, ErrGone
	}
	p := &Process{pid: o.PID, startTicks: o.StartTicks, done: make(chan struct{})}
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
// nothing but when.
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
	p.result = Result{ExitCode: -1, Ended: time.Now().UTC()}
	close(p.done)
}
