package core

import (
	"fmt"
	"slices"
	"time"
)

// The agent protocol (DESIGN §3, decision 4): level-triggered. Every
// interval an agent sends a Heartbeat, the whole state of its node; the
// server answers with the DesiredState, the whole state the node should be
// in. Neither side replays history: a restarted agent or server converges
// at the next exchange. These types are the wire format (JSON) as well;
// the agent package imports them from here.

// Heartbeat is what an agent reports about its node.
type Heartbeat struct {
	Node  string `json:"node"`
	Agent string `json:"agent,omitempty"` // the agent's version
	// NVML is "" while the GPUs read fine, else why they do not.
	NVML string      `json:"nvml,omitempty"`
	GPUs []GPUReport `json:"gpus"`
	Jobs []JobReport `json:"jobs"`
	// Latency is the round trip of the previous heartbeat (0 for the first).
	Latency time.Duration `json:"latency_ns,omitempty"`
}

// GPUReport is one GPU as the agent last read it.
type GPUReport struct {
	Index     int     `json:"index"`
	UUID      string  `json:"uuid"`
	Name      string  `json:"name"` // as NVML reports it
	MemoryMiB int64   `json:"memory_mib"`
	UsedMiB   int64   `json:"used_mib"`
	Util      float64 `json:"util"` // percent
	TempC     float64 `json:"temp_c"`
	PowerW    float64 `json:"power_w"`
	// XID is the last critical XID error the GPU raised since the agent
	// started, 0 for none; the server then takes the GPU out of service.
	XID uint64 `json:"xid,omitempty"`
	// Fault is a fault the agent itself found, "" for none: a process
	// that outlived a drain's SIGKILL on this GPU, say. The server takes
	// the GPU out of service too.
	Fault     string          `json:"fault,omitempty"`
	Processes []ProcessReport `json:"processes,omitempty"`
}

// ProcessReport is one process NVML lists on a GPU.
type ProcessReport struct {
	PID     int    `json:"pid"`
	User    string `json:"user,omitempty"` // who runs it, "" when unknown
	UsedMiB int64  `json:"used_mib"`
	Job     int64  `json:"job,omitempty"` // the gpucal job it belongs to; 0: gpucal did not start it
}

// RunState is where a job is on its node, as the agent sees it.
type RunState string

const (
	RunRunning  RunState = "running"  // its process group is alive
	RunDraining RunState = "draining" // alive, and the agent has begun stopping it
	RunExited   RunState = "exited"   // its process group is gone
	// RunRefused: the agent could not start it (no such program, no such
	// user, a GPU it was given is not on this node); Error says why.
	RunRefused RunState = "refused"
)

// JobReport is one job the agent runs or ran on its node. The agent keeps
// reporting a job that ended until the server acknowledges it (Ack).
type JobReport struct {
	Job       int64     `json:"job"`
	State     RunState  `json:"state"`
	PID       int       `json:"pid,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// ExitCode is the exit status once exited: -1 when a signal ended it
	// or when the agent could not learn it (it was restarted meanwhile).
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"` // the signal that ended it: "SIGKILL"
	Error    string `json:"error,omitempty"`  // why it was refused, or what the agent could not learn
	// Stopped says why the agent stopped it, "" when it ended by itself:
	// the reason of the StopOrder. While it drains, Deadline and
	// Reservation are those of the order it is being stopped by (the
	// agent may have begun on its own, by a cached window).
	Stopped     string    `json:"stopped,omitempty"`
	Deadline    time.Time `json:"deadline,omitzero"`
	Reservation int64     `json:"reservation,omitempty"`
	// Margin is how long before its deadline the last process of a
	// stopped job was gone (negative: late); set once a drain finished.
	Margin *time.Duration `json:"margin_ns,omitempty"`
	// Resource use: CPU time of the job's processes, peak resident memory,
	// mean GPU utilisation over the agent's samples and peak GPU memory.
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
	MaxRSS     int64   `json:"max_rss,omitempty"`
	GPUUtil    float64 `json:"gpu_util,omitempty"`
	GPUMemMiB  int64   `json:"gpu_mem_mib,omitempty"`
	// Progress is the latest progress line read from its log, if any.
	Progress *ProgressReport `json:"progress,omitempty"`
	// LogDone is set once the job has ended and the agent has shipped all
	// of its log, LogSize bytes. The server acknowledges an ended job only
	// then, so the agent keeps reporting it until its log is complete.
	LogDone bool  `json:"log_done,omitempty"`
	LogSize int64 `json:"log_size,omitempty"`
}

// DesiredState is the server's answer to a heartbeat.
type DesiredState struct {
	Node string `json:"node"`
	// Interval is how often the server wants heartbeats.
	Interval time.Duration `json:"interval_ns"`
	// Run lists every job that should be running on this node. One the
	// agent has no record of is started; one it has finished is reported,
	// never started again.
	Run []JobOrder `json:"run"`
	// Stop lists jobs to stop, each by its ladder. A job the agent runs
	// that is in neither Run nor Stop is stopped as StopUnknown.
	Stop []StopOrder `json:"stop"`
	// Windows are the reservation windows on this node's GPUs that are
	// open or open within WindowsAhead. The agent caches them and keeps
	// them free of preemptible jobs even when the server is unreachable.
	Windows []Window `json:"windows"`
	// Ack lists ended jobs whose end, and whole log, the server has
	// recorded: the agent may stop reporting them.
	Ack []int64 `json:"ack,omitempty"`
	// Timing is the drain ladder the agent applies to cached windows.
	Timing DrainTiming `json:"timing"`
	// KillForeign asks the agent to stop, at each window's start, the
	// processes gpucal did not start that sit on the window's GPUs and do
	// not belong to the window's owner: SIGTERM, then SIGKILL Timing.Term
	// later. An admin policy, off by default (the server's
	// --kill-foreign-processes); without it such processes are reported
	// only.
	KillForeign bool `json:"kill_foreign,omitempty"`
}

// JobOrder is one job to run on the node: its part of the job, for a gang
// spread over nodes.
type JobOrder struct {
	Job     int64             `json:"job"`
	User    string            `json:"user"` // the owner, whom it runs as
	Project string            `json:"project,omitempty"`
	Name    string            `json:"name,omitempty"`
	Command []string          `json:"command"`
	Env     map[string]string `json:"env,omitempty"`
	WorkDir string            `json:"workdir,omitempty"`
	GPUs    []string          `json:"gpus"` // UUIDs of its GPUs on this node, in order
	// Preemptible jobs are stopped before windows that are not theirs.
	Preemptible bool  `json:"preemptible,omitempty"`
	Reservation int64 `json:"reservation,omitempty"` // the reservation it runs in, 0 for none
	// Checkpoint is the signal that asks it to save its state, "SIGUSR1"
	// unless the submitter chose another.
	Checkpoint string `json:"checkpoint,omitempty"`
	// Token lets the job report its own progress (GPUCAL_JOB_TOKEN): it
	// may call POST /api/v1/jobs/{job}/progress for this job and nothing
	// else, while the job holds GPUs.
	Token string `json:"token,omitempty"`
	// Epochs is the job's epochs hint (0: none): a progress bar that
	// counts within an epoch only, as PyTorch Lightning's does, is placed
	// in the whole job with it.
	Epochs int64 `json:"epochs,omitempty"`
	// Nodes are the nodes of a gang in rank order; Rank is this node's.
	Nodes []string `json:"nodes,omitempty"`
	Rank  int      `json:"rank,omitempty"`
}

// StopOrder is one job to stop and the ladder to stop it by. Zero times
// are skipped; past times fire at once.
type StopOrder struct {
	Job          int64     `json:"job"`
	Reason       string    `json:"reason"` // one of the Stop* reasons
	Reservation  int64     `json:"reservation,omitempty"`
	CheckpointAt time.Time `json:"checkpoint_at,omitzero"`
	TermAt       time.Time `json:"term_at,omitzero"`
	KillAt       time.Time `json:"kill_at"`
	// Deadline is when no process of the job may be left: the start of
	// the window a drain makes room for.
	Deadline time.Time `json:"deadline"`
}

// The reasons a job is stopped.
const (
	StopDrain     = "drain"     // a reservation needs its GPUs
	StopCancelled = "cancelled" // its owner or an admin cancelled it
	StopUnknown   = "unknown"   // the server does not know it for this node (it failed over, or was never started here)
	StopFailed    = "failed"    // another part of its gang failed, or that part's node went down
)

// Window is a reservation's time on some of this node's GPUs.
type Window struct {
	Reservation int64     `json:"reservation"`
	Owner       string    `json:"owner"`
	GPUs        []string  `json:"gpus"` // UUIDs
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
}

// WindowsAhead is how far ahead the windows a node caches reach.
const WindowsAhead = 24 * time.Hour

// DrainTiming spaces the steps of a drain ladder before its deadline.
type DrainTiming struct {
	// Grace: the checkpoint signal goes Grace before the deadline (or when
	// the plan says, if earlier, but never before the job was warned).
	Grace time.Duration `json:"grace_ns"`
	// Term: SIGTERM goes Term before the deadline.
	Term time.Duration `json:"term_ns"`
	// Kill: SIGKILL goes to the process group Kill before the deadline,
	// so the kernel has reaped it and the driver freed the GPUs at the
	// minute the window opens.
	Kill time.Duration `json:"kill_ns"`
}

// DefaultDrainTiming is the ladder unless a site sets another.
var DefaultDrainTiming = DrainTiming{Grace: 2 * time.Minute, Term: 30 * time.Second, Kill: 5 * time.Second}

// Check refuses timings whose steps are out of order.
func (t DrainTiming) Check() error {
	if t.Kill < 0 || t.Term < t.Kill || t.Grace < t.Term {
		return Errorf(CodeInvalid, "a drain needs grace ≥ term ≥ kill ≥ 0, got grace %s, term %s, kill %s", t.Grace, t.Term, t.Kill)
	}
	return nil
}

// Ladder returns the stop order for job that must be gone by deadline.
// Every step lies at or after from (when the job started, or when the stop
// was decided) except that a step already due stays due: nothing is
// granted more time than the deadline leaves.
func (t DrainTiming) Ladder(job int64, reason string, deadline, from time.Time) StopOrder {
	at := func(before time.Duration) time.Time {
		s := deadline.Add(-before)
		if s.Before(from) {
			s = from
		}
		if s.After(deadline) {
			s = deadline
		}
		return s
	}
	return StopOrder{Job: job, Reason: reason, CheckpointAt: at(t.Grace), TermAt: at(t.Term), KillAt: at(t.Kill), Deadline: deadline}
}

// Signals a job may ask to be checkpointed with.
var checkpointSignals = []string{"SIGUSR1", "SIGUSR2", "SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"}

// CheckpointSignal normalises a checkpoint signal name ("usr2", "SIGUSR2")
// and refuses one gpucal does not send. "" is SIGUSR1.
func CheckpointSignal(name string) (string, error) {
	if name == "" {
		return "SIGUSR1", nil
	}
	n := name
	if len(n) < 3 || (n[:3] != "SIG" && n[:3] != "sig") {
		n = "SIG" + n
	}
	n = upperASCII(n)
	if !slices.Contains(checkpointSignals, n) {
		return "", Errorf(CodeInvalid, "checkpoint signal %q is not one of %v", name, checkpointSignals)
	}
	return n, nil
}

func upperASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// Check refuses a heartbeat no agent sends: for another node, GPUs
// without UUIDs or twice, jobs twice or in no known state.
func (h Heartbeat) Check(node string) error {
	if h.Node != node {
		return Errorf(CodeForbidden, "this credential belongs to node %s; it cannot report for %q", node, h.Node)
	}
	if len(h.GPUs) > maxGPUsPerNode {
		return Errorf(CodeInvalid, "a heartbeat may list at most %d GPUs, got %d", maxGPUsPerNode, len(h.GPUs))
	}
	uuids, indexes := map[string]bool{}, map[int]bool{}
	for _, g := range h.GPUs {
		switch {
		case g.UUID == "" || len(g.UUID) > 100:
			return Errorf(CodeInvalid, "GPU %d has no UUID", g.Index)
		case uuids[g.UUID] || indexes[g.Index]:
			return Errorf(CodeInvalid, "GPU %d (%s) is listed twice", g.Index, g.UUID)
		case g.Index < 0 || g.Index >= maxGPUsPerNode:
			return Errorf(CodeInvalid, "GPU index %d is out of range", g.Index)
		}
		uuids[g.UUID], indexes[g.Index] = true, true
	}
	jobs := map[int64]bool{}
	for _, j := range h.Jobs {
		switch {
		case j.Job <= 0:
			return Errorf(CodeInvalid, "job ID %d is not valid", j.Job)
		case jobs[j.Job]:
			return Errorf(CodeInvalid, "job %s is reported twice", JobName(j.Job))
		case j.State != RunRunning && j.State != RunDraining && j.State != RunExited && j.State != RunRefused:
			return Errorf(CodeInvalid, "job %s has no known state %q", JobName(j.Job), j.State)
		}
		if j.Progress != nil {
			if err := j.Progress.Check(); err != nil {
				return fmt.Errorf("job %s: %w", JobName(j.Job), err)
			}
		}
		jobs[j.Job] = true
	}
	return nil
}
