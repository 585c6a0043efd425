package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpucal/gpucal/agent/gpu"
	"github.com/gpucal/gpucal/core"
	"github.com/prometheus/client_golang/prometheus"
)

// DefaultInterval is the heartbeat interval until the server says another.
const DefaultInterval = 5 * time.Second

// minInterval keeps a server's mistaken interval from spinning the loop.
const minInterval = 10 * time.Millisecond

// Config is what an Agent needs; cmd/gpucal fills it in.
type Config struct {
	Name    string // the node's name, Heartbeat.Node
	Version string // the agent's version, Heartbeat.Agent
	Conn    Conn
	// Sampler reads the GPUs. The caller runs it (Sampler.Run, which also
	// feeds the GPU exporter) after a first Refresh; the agent reads its
	// Latest sample for each heartbeat and calls Refresh itself only to
	// check that a stopped job's processes are off its GPUs.
	Sampler *gpu.Sampler
	// StateDir holds the persisted state (made 0700, 0711 as ProgressDir
	// says; the file is 0600), e.g. /var/lib/gpucal-agent. Two agents must
	// not share one.
	StateDir string
	LogDir   string // the jobs' logs, j<ID>.log; StateDir/logs when ""
	// ProgressDir holds the jobs' progress files, j<ID>
	// (GPUCAL_PROGRESS_FILE); StateDir/progress when "". It is made 0711:
	// a job reaches its own file by name but lists no other. A root agent
	// that runs jobs as their owners makes StateDir 0711 too when it holds
	// ProgressDir; the directories above are the operator's to open.
	ProgressDir string
	Interval    time.Duration // between heartbeats until the server says; DefaultInterval when 0
	Server      string        // the server's URL, GPUCAL_SERVER in jobs
	// CgroupRoot is the cgroup v2 directory under which each job gets a
	// cgroup of its own, <CgroupRoot>/<Name>/j<ID>, so that a stop reaches the
	// processes that left the job's process group and the job's resource
	// use counts all of its processes; DefaultCgroupRoot finds one. ""
	// gives jobs process groups only, as does a root that cannot be used
	// (the agent says so once, at start).
	CgroupRoot string
	// RunAsSelf runs every job as the agent's own user instead of its
	// owner: an agent that is not root cannot switch users, and the demo
	// runs jobs of many users on one machine.
	RunAsSelf bool
	// MinUID is the lowest user ID a root agent runs a job as (run.DefaultMinUID
	// when 0): a job whose owner maps to root or a system account is refused.
	MinUID int
	Logger *slog.Logger // discarded when nil
	// Registerer, when set, gets the gpucal_agent_* metrics.
	Registerer prometheus.Registerer
	// Busy, when set, is told when a job's process group starts holding a
	// GPU (busy) and when it is gone (not busy), with the job's PID.
	// cmd/gpucal points it at simulated GPUs (FakeReader.SetBusy and
	// SetIdle), so that their readings move while jobs run.
	Busy func(uuid string, pid int, busy bool)
	// Now is the clock for reports and ladders; time.Now when nil. Ladders
	// run on the real clock (run.Stop), so a test may shift it only
	// slightly.
	Now func() time.Time
}

// Agent is the node agent's main loop: heartbeats, jobs, enforcement.
type Agent struct {
	name, version    string
	conn             Conn
	sampler          *gpu.Sampler
	stateDir, logDir string
	progressDir      string
	cgroupRoot       string // "" for process groups only
	cgroupMount      string // the cgroup v2 mount cgroupRoot is in
	cgroupWarned     atomic.Bool
	server           string
	runAsSelf        bool
	minUID           int
	log              *slog.Logger
	busy             func(uuid string, pid int, busy bool)
	now              func() time.Time
	metrics          *metrics

	// Pacing, shortened by tests.
	logEvery      time.Duration // between log shipping rounds
	progressEvery time.Duration // between reads of the progress files
	gpuCheckFor   time.Duration // how long a stopped job's processes may linger on its GPUs
	gpuCheckEvery time.Duration
	leftoverKill  time.Duration // TERM to KILL for processes a job's first process left behind

	started atomic.Bool
	wake    chan struct{} // an early heartbeat: a job ended
	saveMu  sync.Mutex    // one state write at a time; taken before mu
	wg      sync.WaitGroup

	mu       sync.Mutex
	jobs     map[int64]*job
	acked    []int64 // recently acknowledged jobs, oldest first
	ackedSet map[int64]bool
	windows  []core.Window
	// killForeign and foreignTerm: the policy on foreign processes in open
	// windows, and when each one got its SIGTERM (foreign.go).
	killForeign bool
	foreignTerm map[foreignKey]time.Time
	timing      core.DrainTiming
	faults      map[string]fault // by GPU UUID
	interval    time.Duration
	latency     time.Duration // of the last answered heartbeat
	sampleAt    time.Time     // the last sample counted into the jobs' GPU use
	offline     bool          // the last heartbeat got no answer
	dirty       bool          // state changed since the last write
}

// New checks cfg, makes the agent's directories and reads its persisted
// state. Jobs an earlier agent left running are taken over by Run.
func New(cfg Config) (*Agent, error) {
	switch {
	case cfg.Name == "":
		return nil, errors.New("agent: the node needs a name")
	case cfg.Conn == nil:
		return nil, errors.New("agent: no connection to the server")
	case cfg.Sampler == nil:
		return nil, errors.New("agent: no GPU sampler")
	case cfg.StateDir == "":
		return nil, errors.New("agent: no state directory")
	}
	if cfg.LogDir == "" {
		cfg.LogDir = filepath.Join(cfg.StateDir, "logs")
	}
	if cfg.ProgressDir == "" {
		cfg.ProgressDir = filepath.Join(cfg.StateDir, "progress")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("agent: making the state directory: %w", err)
	}
	if err := os.MkdirAll(cfg.LogDir, 0o750); err != nil {
		return nil, fmt.Errorf("agent: making the log directory: %w", err)
	}
	if err := makeProgressDir(cfg.ProgressDir); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if os.Geteuid() == 0 && !cfg.RunAsSelf && within(cfg.StateDir, cfg.ProgressDir) {
		// The jobs' users pass through to their progress files; they
		// can list nothing, and state.json and the logs stay closed.
		if err := os.Chmod(cfg.StateDir, 0o711); err != nil {
			return nil, fmt.Errorf("agent: opening the state directory to the jobs' progress files: %w", err)
		}
	}
	st, err := loadState(cfg.StateDir)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	a := &Agent{
		name: cfg.Name, version: cfg.Version, conn: cfg.Conn, sampler: cfg.Sampler,
		stateDir: cfg.StateDir, logDir: cfg.LogDir, progressDir: cfg.ProgressDir,
		server: cfg.Server, runAsSelf: cfg.RunAsSelf, minUID: cfg.MinUID,
		log:  cfg.Logger.With("node", cfg.Name),
		busy: cfg.Busy, now: cfg.Now, metrics: m,

		logEvery: time.Second, progressEvery: time.Second, gpuCheckFor: 10 * time.Second, gpuCheckEvery: 500 * time.Millisecond,
		leftoverKill: 10 * time.Second,

		wake:     make(chan struct{}, 1),
		jobs:     map[int64]*job{},
		ackedSet: map[int64]bool{},
		windows:  st.Windows,
		timing:   st.Timing,

		killForeign: st.KillForeign,
		foreignTerm: map[foreignKey]time.Time{},
		faults:      st.Faults,
		interval:    cfg.Interval,
	}
	if a.timing == (core.DrainTiming{}) {
		a.timing = core.DefaultDrainTiming
	}
	if cfg.CgroupRoot != "" {
		// One level per node: agents that share a host (the demo, tests)
		// and so a cgroup root never share a job's cgroup.
		a.useCgroupRoot(filepath.Join(cfg.CgroupRoot, cfg.Name))
	} else {
		a.useCgroupRoot("")
	}
	if a.faults == nil {
		a.faults = map[string]fault{}
	}
	if st.Node != "" && st.Node != cfg.Name {
		a.log.Warn("the state directory was written by an agent with another node name; keeping its jobs", "was", st.Node)
	}
	for _, id := range st.Acked {
		a.ackLocked(id)
	}
	for _, r := range st.Jobs {
		a.jobs[r.Order.Job] = newJob(r)
	}
	return a, nil
}

// Run takes over the jobs an earlier agent left running, then heartbeats
// every interval and ships logs until ctx ends. The jobs keep running
// after it returns (the next agent takes them over); so do ladders, in
// that their persisted times are kept. It may be called once.
func (a *Agent) Run(ctx context.Context) error {
	if !a.started.CompareAndSwap(false, true) {
		return errors.New("agent: Run called twice")
	}
	a.resume(ctx)
	a.wg.Go(func() { a.shipLogs(ctx) })
	a.wg.Go(func() { a.watchProgress(ctx) })
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			a.wg.Wait()
			a.persist()
			a.log.Info("agent stopped; its jobs keep running")
			return nil
		case <-timer.C:
		case <-a.wake:
		}
		a.round(ctx)
		a.mu.Lock()
		next := a.interval
		a.mu.Unlock()
		timer.Reset(next)
	}
}

// round is one heartbeat: report, then apply the answer, or enforce the
// cached windows when there is none.
func (a *Agent) round(ctx context.Context) {
	defer a.persistIfDirty()
	hb := a.heartbeat()
	hctx, cancel := context.WithTimeout(ctx, a.heartbeatTimeout())
	start := time.Now()
	ds, err := a.conn.Heartbeat(hctx, hb)
	took := time.Since(start)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			a.lostServer(err)
			a.enforceCached()
		}
		return
	}
	a.metrics.heartbeat.Observe(took.Seconds())
	a.mu.Lock()
	a.latency = took
	was := a.offline
	a.offline = false
	a.mu.Unlock()
	if was {
		a.log.Info("the server answers again")
	}
	if err := a.apply(ctx, ds); err != nil {
		a.log.Error("ignoring the server's answer; enforcing the cached windows", "error", err)
		a.enforceCached()
	}
}

// lostServer counts and logs a heartbeat without an answer: a warning when
// the server stops answering, not at every interval after.
func (a *Agent) lostServer(err error) {
	a.metrics.failures.Inc()
	a.mu.Lock()
	was := a.offline
	a.offline = true
	a.mu.Unlock()
	if was {
		a.log.Debug("the server still does not answer", "error", err)
		return
	}
	a.log.Warn("the server does not answer; enforcing the cached windows, retrying every interval", "error", err)
}

// heartbeatTimeout is how long a heartbeat may take: two intervals, within
// 2 to 30 seconds.
func (a *Agent) heartbeatTimeout() time.Duration {
	a.mu.Lock()
	d := 2 * a.interval
	a.mu.Unlock()
	return min(max(d, 2*time.Second), 30*time.Second)
}

// wakeUp asks for an early heartbeat.
func (a *Agent) wakeUp() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Labels says which job holds the GPU with this UUID, for the GPU
// exporter's job, user and project labels: empty while none does.
func (a *Agent) Labels(uuid string) gpu.JobLabels {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, j := range a.jobs {
		if (j.rec.Phase == phaseRunning || j.rec.Phase == phaseChecking) && slices.Contains(j.rec.Order.GPUs, uuid) {
			o := j.rec.Order
			return gpu.JobLabels{Job: core.JobName(o.Job), User: o.User, Project: o.Project}
		}
	}
	return gpu.JobLabels{}
}

// logPath is where job id's output goes.
func (a *Agent) logPath(id int64) string {
	return filepath.Join(a.logDir, core.JobName(id)+".log")
}
