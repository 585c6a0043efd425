package core

import (
	"strconv"
	"strings"
	"time"
)

// JobClass is a job's priority class. Classes are strict: every queued job
// of a higher class is planned before any job of a lower one.
type JobClass string

const (
	ClassReserved JobClass = "reserved" // runs inside its owner's reservation
	ClassHigh     JobClass = "high"
	ClassNormal   JobClass = "normal"
	ClassLow      JobClass = "low" // always preemptible
)

// rank orders classes, highest first.
func (c JobClass) rank() int {
	switch c {
	case ClassReserved:
		return 0
	case ClassHigh:
		return 1
	case ClassNormal:
		return 2
	}
	return 3
}

// JobState is where a job is in its life.
type JobState string

const (
	JobQueued    JobState = "queued"
	JobStarting  JobState = "starting" // GPUs assigned, waiting for the agent to launch it
	JobRunning   JobState = "running"
	JobDraining  JobState = "draining" // being stopped before a reservation
	JobSucceeded JobState = "succeeded"
	JobFailed    JobState = "failed"
	JobPreempted JobState = "preempted"
	JobCancelled JobState = "cancelled"
)

// Holding reports whether a job in state s holds GPUs.
func (s JobState) Holding() bool { return s == JobStarting || s == JobRunning || s == JobDraining }

// Finished reports whether s is final.
func (s JobState) Finished() bool {
	return s == JobSucceeded || s == JobFailed || s == JobPreempted || s == JobCancelled
}

// JobType says what kind of work a job is; shown and filterable everywhere.
type JobType string

// The job types.
const (
	TypeTrain     JobType = "train"
	TypeFinetune  JobType = "finetune"
	TypeEval      JobType = "eval"
	TypeInference JobType = "inference"
	TypeNotebook  JobType = "notebook"
	TypeOther     JobType = "other"
)

// JobTypes lists the valid job types.
var JobTypes = []JobType{TypeTrain, TypeFinetune, TypeEval, TypeInference, TypeNotebook, TypeOther}

// Hints are what a submitter says about a job's size; the estimator turns
// them into a runtime distribution.
type Hints struct {
	Framework string        `json:"framework,omitempty"` // pytorch, jax, …
	Params    float64       `json:"params,omitempty"`    // model parameters
	Tokens    float64       `json:"tokens,omitempty"`    // training tokens
	Dataset   int64         `json:"dataset,omitempty"`   // dataset size in samples
	Epochs    int64         `json:"epochs,omitempty"`
	BatchSize int64         `json:"batch_size,omitempty"`
	Steps     int64         `json:"steps,omitempty"`
	Guess     time.Duration `json:"guess,omitempty"` // the submitter's own estimate
}

// Job is work that runs on GPUs.
type Job struct {
	ID          int64
	Owner       string
	Project     string
	Name        string // normalised job name: history groups runs by owner and name
	Type        JobType
	GPUs        int
	Model       string // normalised requested model; "" for any
	Command     []string
	Env         map[string]string
	WorkDir     string
	Class       JobClass
	Preemptible bool
	Reservation int64 // the owner's reservation it runs in, or 0
	Hints       Hints
	State       JobState
	SubmittedAt time.Time
	StartedAt   time.Time // zero until it starts
	EndedAt     time.Time // zero until it ends
	Assigned    []GPURef  // the GPUs it holds once starting
	Progress    Progress  // what it last reported about how far it is, once running
	Prediction  Prediction
	// Checkpoint is the signal that asks it to save its state before it
	// is stopped ("SIGUSR1" unless the submitter chose another).
	Checkpoint string
	// Stop is set once gpucal decided to stop it while it runs: a
	// cancellation or a drain. The agents then stop it and the job ends
	// when all its processes are gone.
	Stop *StopRequest
	// Runs are its parts on each node, as their agents report them.
	Runs []NodeRun
}

// StopRequest is why and from when a running job is being stopped.
type StopRequest struct {
	Reason      string    `json:"reason"` // StopCancelled or StopDrain
	At          time.Time `json:"at"`     // when it was decided
	Reservation int64     `json:"reservation,omitempty"`
	Deadline    time.Time `json:"deadline"` // when no process may be left
}

// NodeRun is a job's part on one node as its agent last reported it.
type NodeRun struct {
	Node string `json:"node"`
	JobReport
}

// Final reports whether the part has ended (or never started).
func (r NodeRun) Final() bool { return r.State == RunExited || r.State == RunRefused }

// Name returns the job's public ID, "j42".
func JobName(id int64) string { return "j" + strconv.FormatInt(id, 10) }

// ParseJobID reads "j42", "J42" or "42".
func ParseJobID(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if len(t) > 0 && (t[0] == 'j' || t[0] == 'J') {
		t = t[1:]
	}
	id, err := strconv.ParseInt(t, 10, 64)
	if err != nil || id <= 0 || t[0] == '+' {
		return 0, Errorf(CodeInvalid, "%q is not a job ID; they look like j42", s)
	}
	return id, nil
}

// Prediction is what the latest plan says about a job: when it will start
// and end (median and 90th percentile), on which GPUs, and why it waits.
type Prediction struct {
	PlannedAt time.Time
	Position  int // 1-based place in the queue; 0 once running
	StartP50  time.Time
	StartP90  time.Time
	EndP50    time.Time
	EndP90    time.Time
	GPUs      []int64
	Reason    string
	Estimate  Estimate
	Drain     *DrainOrder // set when it will be stopped for a reservation
}

// Estimate is a runtime distribution for a job and where it came from.
type Estimate struct {
	P50     time.Duration `json:"p50"`
	P90     time.Duration `json:"p90"`
	Source  string        `json:"source"`  // "guess", "default", "history:user+name", …
	Samples int           `json:"samples"` // past runs behind it
}

// Estimator turns a job into a runtime estimate. Implementations are pure:
// the planner and the simulator call them with the same inputs and must get
// the same answers.
type Estimator interface {
	Estimate(j Job, now time.Time) Estimate
}

// DefaultEstimator is the estimator used until history is available: the
// submitter's guess when there is one (P90 half again as long), otherwise a
// fixed default.
type DefaultEstimator struct {
	P50, P90 time.Duration // the default when a job has no guess
}

// Estimate implements Estimator.
func (d DefaultEstimator) Estimate(j Job, now time.Time) Estimate {
	if j.Hints.Guess > 0 {
		return Estimate{P50: j.Hints.Guess, P90: j.Hints.Guess * 3 / 2, Source: "guess"}
	}
	p50, p90 := d.P50, d.P90
	if p50 <= 0 {
		p50, p90 = 4*time.Hour, 12*time.Hour
	}
	return Estimate{P50: p50, P90: max(p90, p50), Source: "default"}
}
