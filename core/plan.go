package core

import "time"

// Snapshot is everything the planner looks at: the inventory, the holding
// reservations, the jobs holding GPUs and the queue. The planner never
// changes it.
type Snapshot struct {
	Nodes        []Node
	Reservations []Reservation // holding reservations that end after now
	Running      []Job         // starting, running or draining, with Assigned GPUs and StartedAt
	Queued       []Job
	// Estimates holds a runtime estimate per job ID, running and queued; a
	// job without one gets DefaultEstimator's.
	Estimates map[int64]Estimate
	// Usage is each project's recent GPU usage in GPU-seconds with
	// exponential decay (fair share); Shares its share weight (default 1).
	Usage  map[string]float64
	Shares map[string]float64
}

// PlanConfig tunes the planner.
type PlanConfig struct {
	// DrainLead is how long before a drain deadline the checkpoint signal is sent.
	DrainLead time.Duration
	// AgingHalfLife: a job's ordering score halves for every AgingHalfLife it has
	// waited, so long-waiting large jobs overtake new small ones (no starvation).
	AgingHalfLife time.Duration
	// FairShareWeight scales how strongly a project's usage above its share
	// pushes its jobs back within a class (0 turns fair share off).
	FairShareWeight float64
	// Horizon bounds how far ahead the planner looks; a job that cannot
	// start within it is reported as unplaceable.
	Horizon time.Duration
	// Protect is how many jobs at the head of the queue keep their planned
	// starts against later jobs (0: every job, conservative backfill). A
	// job behind them starts now when it fits around the protected ones and
	// the jobs already running, even if that delays another unprotected
	// job's planned start (EASY backfilling protects one).
	Protect int
	// Hold is how long the plan holds a running job's GPUs when it places
	// the queue: from the job's median end (0) to its P90 end (1), in log
	// space: the job holds them for P50^(1−Hold) × P90^Hold. A plan made on
	// medians keeps breaking its own promises as half the running jobs
	// outrun them, and it puts queued jobs behind the holders most likely
	// to run on; held longer, a queued job goes where the GPUs are surely
	// free soonest. Predictions do not change with it: StartP50 and EndP50
	// always take the median ends (see PlannedJob.Slot). Values outside
	// [0, 1] count as the nearer end.
	Hold float64
	// ProtectShared keeps the slots of the first ProtectShared queued jobs
	// (in queue order) that need several GPUs of one node clear of
	// backfill: a job placed before such a start on its GPUs must end
	// before it by its P90, as it must before a foreign reservation
	// window. Such a start is otherwise lost as soon as a job backfilled in
	// front of it outruns its median, and a multi-GPU job waits for a node
	// whose GPUs are all free at once. Further back in a long queue the
	// protection costs searches and buys little: those slots move with
	// every replan anyway. 0 protects none.
	ProtectShared int
	// SharedHead places the first queued job (after reserved ones) that
	// needs several GPUs of one node before every other job, as EASY
	// backfilling reserves the head of its queue: jobs ordered ahead of it
	// are placed around its start. With ProtectShared its start is
	// protected too. Not with Protect.
	SharedHead bool

	// NoReasons, NoBands and NoRunning leave out parts of the plan that a
	// caller may not read, for speed; the rest of the plan is the same
	// either way. The server sets none of them: people read reasons, bands
	// and running jobs' predicted ends. A replay (gpucal sim) reads only
	// the queued jobs' starts, and their bands where it records a first
	// prediction; the rest was a third of its plans' cost.
	//
	// NoReasons leaves Reason empty except for jobs that cannot be planned.
	NoReasons bool
	// NoBands skips the P50 and P90 stages: StartP50 to EndP90 are the
	// slot's times (PlannedJob.Slot).
	NoBands bool
	// NoRunning leaves Plan.Running empty (running jobs' drain orders are
	// still in Drains).
	NoRunning bool
}

// DefaultPlanConfig is the planner's configuration unless a site sets another.
var DefaultPlanConfig = PlanConfig{
	DrainLead:       10 * time.Minute,
	AgingHalfLife:   6 * time.Hour,
	FairShareWeight: 1,
	Horizon:         365 * 24 * time.Hour,
	Hold:            0.75,
	ProtectShared:   256,
}

// Plan is the planner's output for one instant.
type Plan struct {
	Now     time.Time
	Queued  []PlannedJob // in queue order
	Running []PlannedJob // running jobs with their predicted ends
	Drains  []DrainOrder // every drain order, by deadline
}

// PlannedJob is one job's place in a plan.
type PlannedJob struct {
	Job      int64
	Position int     // 1-based queue position (0 for running jobs)
	GPUs     []int64 // the GPUs it is planned on (nil when unplaceable)
	StartP50 time.Time
	StartP90 time.Time
	EndP50   time.Time
	EndP90   time.Time
	// Slot is the start the plan holds the GPUs from: if nothing changes,
	// the job starts then. StartP50 may be earlier, as the plan holds
	// running jobs' GPUs past their median ends (PlanConfig.Hold) and
	// keeps jobs clear of windows by their P90 runs, while StartP50 is
	// the start if every job runs for its median.
	Slot     time.Time
	Reason   string      // why it is not running yet, in words a user understands
	Drain    *DrainOrder // set when it will be stopped for a reservation
	StartNow bool        // its planned start has come: the server should start it
	Estimate Estimate
}

// DrainOrder stops a preemptible job before a reservation needs its GPUs:
// the checkpoint signal at SignalAt, SIGTERM and then SIGKILL by Deadline.
type DrainOrder struct {
	Job         int64     `json:"job"`
	Reservation int64     `json:"reservation,omitempty"` // the window it makes room for (0: a reserved job)
	SignalAt    time.Time `json:"signal_at"`
	Deadline    time.Time `json:"deadline"`
}
