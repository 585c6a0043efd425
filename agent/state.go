package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gpucal/gpucal/core"
)

// stateFile is the agent's persisted state, in Config.StateDir.
const stateFile = "state.json"

// stateVersion is the version of the state file this agent writes; it
// reads no later one.
const stateVersion = 1

// maxAcked is how many acknowledged job IDs the agent remembers, so that a
// server that lists a finished job again does not get it started twice.
const maxAcked = 4096

// maxGPUPIDs bounds the GPU processes remembered per job.
const maxGPUPIDs = 64

// phase is where a job is in the agent's hands.
type phase string

const (
	// phaseStarting is written down before run.Start, so that an agent
	// that dies while starting a job does not start it again.
	phaseStarting phase = "starting"
	phaseRunning  phase = "running"
	// phaseChecking: the process group is gone; the agent is checking
	// that no process of the job is left on its GPUs.
	phaseChecking phase = "checking"
	phaseExited   phase = "exited"
	phaseRefused  phase = "refused"
)

// record is what the agent knows about one job, as it persists it.
type record struct {
	Order      core.JobOrder `json:"order"`
	Phase      phase         `json:"phase"`
	PID        int           `json:"pid,omitempty"`
	StartTicks uint64        `json:"start_ticks,omitempty"` // tells the PID from a reused one
	Cgroup     string        `json:"cgroup,omitempty"`      // its cgroup directory; "" when it has none
	StartedAt  time.Time     `json:"started_at,omitzero"`
	EndedAt    time.Time     `json:"ended_at,omitzero"`
	ExitCode   int           `json:"exit_code"`
	Signal     string        `json:"signal,omitempty"`
	Error      string        `json:"error,omitempty"`

	// Stop is the stop order in force, with absolute times: the earliest
	// of the server's and the cached windows'. Begun says its ladder has
	// begun (the job is draining), Fired which of its steps were taken
	// (checkpoint, TERM, KILL), so that a restarted agent resumes it with
	// the same times and does not send a step twice.
	Stop    *core.StopOrder `json:"stop,omitempty"`
	Begun   bool            `json:"begun,omitempty"`
	Fired   [3]bool         `json:"fired"`
	Stopped string          `json:"stopped,omitempty"`
	Margin  *time.Duration  `json:"margin_ns,omitempty"`

	CPUSeconds  float64              `json:"cpu_seconds,omitempty"`
	MaxRSS      int64                `json:"max_rss,omitempty"`
	UtilSum     float64              `json:"util_sum,omitempty"` // GPU utilisation summed over samples
	UtilSamples int                  `json:"util_samples,omitempty"`
	GPUMemMiB   int64                `json:"gpu_mem_mib,omitempty"`
	GPUPIDs     []int                `json:"gpu_pids,omitempty"` // its processes seen on its GPUs
	Progress    *core.ProgressReport `json:"progress,omitempty"`
	// ProgressFile is the job's GPUCAL_PROGRESS_FILE, "" for a job started
	// before the agent gave one. FileProgress says Progress came from it:
	// from then on, bars in the log no longer count.
	ProgressFile string `json:"progress_file,omitempty"`
	FileProgress bool   `json:"file_progress,omitempty"`

	LogShipped int64 `json:"log_shipped"`        // bytes of its log the server has
	LogDone    bool  `json:"log_done,omitempty"` // the job has ended and all its log is shipped
	Acked      bool  `json:"acked,omitempty"`    // the server recorded its end; kept only to ship the rest of its log
}

// fault is a process found on a GPU after the job it belonged to was gone.
type fault struct {
	PID  int    `json:"pid"`
	Job  int64  `json:"job"`
	Text string `json:"text"`
}

// savedState is the state file.
type savedState struct {
	Version int              `json:"version"`
	Node    string           `json:"node"`
	Jobs    []record         `json:"jobs"`
	Acked   []int64          `json:"acked,omitempty"` // oldest first
	Windows []core.Window    `json:"windows,omitempty"`
	Timing  core.DrainTiming `json:"timing"`
	Faults  map[string]fault `json:"faults,omitempty"` // by GPU UUID
	// KillForeign is the server's policy on processes gpucal did not
	// start in an open window (core.DesiredState.KillForeign).
	KillForeign bool `json:"kill_foreign,omitempty"`
}

// loadState reads the state file in dir; a missing file is a fresh agent.
// A file that cannot be read is an error, not a fresh start: the agent
// would forget the jobs it runs and could start one twice.
func loadState(dir string) (savedState, error) {
	path := filepath.Join(dir, stateFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return savedState{Version: stateVersion}, nil
	}
	if err != nil {
		return savedState{}, fmt.Errorf("reading the agent's state: %w", err)
	}
	var st savedState
	if err := json.Unmarshal(b, &st); err != nil {
		return savedState{}, fmt.Errorf("the agent's state %s is not valid (%w); move it away to start afresh, forgetting the jobs it lists", path, err)
	}
	if st.Version > stateVersion {
		return savedState{}, fmt.Errorf("the agent's state %s has version %d, newer than this agent's %d", path, st.Version, stateVersion)
	}
	return st, nil
}

// writeState writes st to dir atomically: a reader, or an agent killed
// half-way, sees the old file or the new one, never a mix.
func writeState(dir string, st []byte) error {
	tmp, err := os.CreateTemp(dir, "."+stateFile+".*") // 0600
	if err != nil {
		return fmt.Errorf("writing the agent's state: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails once renamed
	_, err = tmp.Write(st)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, stateFile))
	}
	if err != nil {
		return fmt.Errorf("writing the agent's state: %w", err)
	}
	if d, err := os.Open(dir); err == nil { // make the rename durable
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// encodeStateLocked encodes the state to persist. a.mu is held.
func (a *Agent) encodeStateLocked() ([]byte, error) {
	st := savedState{
		Version: stateVersion,
		Node:    a.name,
		Jobs:    make([]record, 0, len(a.jobs)),
		Acked:   a.acked,
		Windows: a.windows,
		Timing:  a.timing,
		Faults:  a.faults,

		KillForeign: a.killForeign,
	}
	for _, id := range a.jobIDsLocked() {
		st.Jobs = append(st.Jobs, a.jobs[id].rec)
	}
	return json.MarshalIndent(st, "", "\t")
}

// persist writes the state now. A failure is logged: the agent goes on
// enforcing what it knows, and the next change tries again.
func (a *Agent) persist() {
	a.saveMu.Lock() // taken before a.mu, so that saves land in order
	defer a.saveMu.Unlock()
	a.mu.Lock()
	b, err := a.encodeStateLocked()
	a.dirty = false
	a.mu.Unlock()
	if err == nil {
		err = writeState(a.stateDir, b)
	}
	if err != nil {
		a.mu.Lock()
		a.dirty = true
		a.mu.Unlock()
		a.log.Error("could not persist the agent's state; a restart now would lose track of recent changes", "error", err)
	}
}

// persistIfDirty writes the state if something changed since the last
// write: progress, resource use and shipped log bytes, which are not worth
// a write each.
func (a *Agent) persistIfDirty() {
	a.mu.Lock()
	dirty := a.dirty
	a.mu.Unlock()
	if dirty {
		a.persist()
	}
}

// jobIDsLocked returns the IDs of the agent's jobs in order. a.mu is held.
func (a *Agent) jobIDsLocked() []int64 {
	ids := make([]int64, 0, len(a.jobs))
	for id := range a.jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// forgetLocked drops job id's record, and removes its progress file: the
// server has acknowledged its end, or it was never started. a.mu is held.
func (a *Agent) forgetLocked(id int64) {
	j, ok := a.jobs[id]
	if !ok {
		return
	}
	delete(a.jobs, id)
	a.dirty = true
	if path := j.rec.ProgressFile; path != "" {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			a.log.Warn("could not remove a forgotten job's progress file", "job", core.JobName(id), "error", err)
		}
	}
}

// ackLocked remembers that the server recorded the end of job id. a.mu is
// held.
func (a *Agent) ackLocked(id int64) {
	if a.ackedSet[id] {
		return
	}
	a.acked = append(a.acked, id)
	a.ackedSet[id] = true
	if len(a.acked) > maxAcked {
		delete(a.ackedSet, a.acked[0])
		a.acked = slices.Delete(a.acked, 0, 1)
	}
}
