package core

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// SubmitRequest asks for a job to be queued. docs/jobs.md states the rules.
type SubmitRequest struct {
	GPUs        int
	Model       string // "a100", "a100-80gb", "" for any
	Name        string // "" derives one from the command
	Type        JobType
	Command     []string
	Env         map[string]string
	WorkDir     string
	Class       JobClass // "" for normal
	Preemptible bool
	Reservation int64 // run inside this reservation of the submitter's (class reserved)
	Project     string
	Hints       Hints
	// Checkpoint is the signal asking the job to save its state before it
	// is stopped: "SIGUSR1" (the default), "SIGUSR2", "SIGINT", "SIGTERM", …
	Checkpoint string
}

// JobFilter selects jobs; zero fields match everything.
type JobFilter struct {
	Owner   string
	Project string
	States  []JobState // empty: every state
	Types   []JobType  // empty: every type
	// EndedSince keeps the jobs that ended at or after it (zero: no bound).
	EndedSince time.Time
	Limit      int
}

// JobStates lists every job state.
var JobStates = []JobState{JobQueued, JobStarting, JobRunning, JobDraining, JobSucceeded, JobFailed, JobPreempted, JobCancelled}

// holdingStates are the states of jobs that hold GPUs; openStates adds the queue.
var (
	holdingStates = []JobState{JobStarting, JobRunning, JobDraining}
	openStates    = []JobState{JobQueued, JobStarting, JobRunning, JobDraining}
)

// Limits on what a submission may carry. They bound what the database and
// the agents must hold, far above what real jobs need.
const (
	maxCommandArgs  = 1000
	maxCommandBytes = 32 << 10
	maxEnvVars      = 200
	maxEnvValue     = 8 << 10
	maxEnvBytes     = 64 << 10
	maxWorkDir      = 4096
	maxJobName      = 100
	maxFramework    = 50
	maxJobsListed   = 1000
)

var (
	envKey     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	jobNameRe  = regexp.MustCompile(`^[a-z0-9][a-z0-9._+-]*$`)
	nameSpaces = regexp.MustCompile(`[\s/]+`)
)

// agentEnv are environment variables the agent sets for every job; a
// submission may not set them.
var agentEnv = map[string]bool{"CUDA_VISIBLE_DEVICES": true, "NVIDIA_VISIBLE_DEVICES": true}

// Submit queues a job for a. It checks the request against the inventory
// and, for a job that names a reservation, against that reservation; the
// replan loop gives it a predicted start and starts it.
func (s *Service) Submit(ctx context.Context, a Actor, req SubmitRequest) (Job, error) {
	now := s.Now()
	j, model, err := s.newJob(a, req, now)
	if err != nil {
		return Job{}, err
	}
	err = s.store.Update(ctx, func(tx Tx) error {
		if j.Reservation != 0 {
			if err := s.checkJobReservation(ctx, tx, &j, model, now); err != nil {
				return err
			}
		}
		if err := s.checkOwnerProject(ctx, tx, a, j.Owner, j.Project); err != nil {
			return err
		}
		if j.Class == ClassHigh && !a.Admin && (j.Project == "" || a.Roles[j.Project] != RoleAdmin) {
			return Errorf(CodeForbidden, "only site admins, and project admins for their project's jobs, may submit with class high")
		}
		nodes, err := tx.Nodes(ctx)
		if err != nil {
			return err
		}
		if err := checkDemand(nodes, demand{count: j.GPUs, model: model}); err != nil {
			return err
		}
		if err := tx.InsertJob(ctx, &j); err != nil {
			return err
		}
		return tx.Audit(ctx, AuditEntry{At: now, Actor: a.User, Action: "job.submit", Object: JobName(j.ID),
			Detail: fmt.Sprintf("%d×%s %s %s, class %s", j.GPUs, modelWord(model), j.Type, j.Name, j.Class)})
	})
	if err != nil {
		return Job{}, err
	}
	return j, nil
}

// newJob validates what can be checked without the database and returns
// the job to store with its requested model.
func (s *Service) newJob(a Actor, req SubmitRequest, now time.Time) (Job, Model, error) {
	model, ok := ParseModel(req.Model)
	if !ok {
		return Job{}, Model{}, Errorf(CodeInvalid, "%q is not a GPU model; try a100, h100 or a100-80gb", req.Model)
	}
	if req.GPUs < 1 {
		return Job{}, Model{}, Errorf(CodeInvalid, "a job needs at least 1 GPU, got %d", req.GPUs)
	}
	if err := checkCommand(req.Command); err != nil {
		return Job{}, Model{}, err
	}
	if err := checkEnv(req.Env); err != nil {
		return Job{}, Model{}, err
	}
	if err := checkWorkDir(req.WorkDir); err != nil {
		return Job{}, Model{}, err
	}
	if err := s.checkHints(req.Hints); err != nil {
		return Job{}, Model{}, err
	}
	name, err := jobName(req.Name, req.Command)
	if err != nil {
		return Job{}, Model{}, err
	}
	typ := req.Type
	if typ == "" {
		typ = TypeOther
	}
	if !slices.Contains(JobTypes, typ) {
		return Job{}, Model{}, Errorf(CodeInvalid, "job type %q must be one of %s", typ, joinTypes(JobTypes))
	}
	class := req.Class
	switch {
	case req.Reservation != 0 && class != "" && class != ClassReserved:
		return Job{}, Model{}, Errorf(CodeInvalid, "a job that runs in a reservation has class reserved; leave the class out")
	case req.Reservation != 0:
		class = ClassReserved
	case class == "":
		class = ClassNormal
	case class != ClassHigh && class != ClassNormal && class != ClassLow:
		return Job{}, Model{}, Errorf(CodeInvalid, "class %q must be high, normal or low (reserved comes with a reservation)", class)
	}
	checkpoint, err := CheckpointSignal(req.Checkpoint)
	if err != nil {
		return Job{}, Model{}, err
	}
	j := Job{
		Checkpoint: checkpoint,
		Owner:      a.User, Project: req.Project, Name: name, Type: typ, GPUs: req.GPUs, Model: model.String(),
		Command: slices.Clone(req.Command), Env: cloneEnv(req.Env), WorkDir: req.WorkDir,
		Class: class, Preemptible: req.Preemptible || class == ClassLow, Reservation: req.Reservation,
		Hints: req.Hints, State: JobQueued, SubmittedAt: now,
	}
	return j, model, nil
}

// checkJobReservation checks that j may run in the reservation it names:
// one of its owner's, still to come or running, with enough GPUs of the
// requested model. A job without a project takes the reservation's.
func (s *Service) checkJobReservation(ctx context.Context, tx Tx, j *Job, model Model, now time.Time) error {
	r, err := tx.Reservation(ctx, j.Reservation)
	if ErrorCode(err) == CodeNotFound {
		return Errorf(CodeInvalid, "there is no reservation %s", ReservationName(j.Reservation))
	}
	if err != nil {
		return err
	}
	switch st := r.StateAt(now); {
	case r.Owner != j.Owner:
		return Errorf(CodeForbidden, "%s belongs to %s; a job may run only in its owner's reservations", r.Name(), r.Owner)
	case st != Confirmed && st != Active:
		return Errorf(CodeInvalid, "%s is %s; a job can run only in a reservation that is confirmed or active", r.Name(), st)
	case j.GPUs > len(r.GPUs):
		return Errorf(CodeInvalid, "%s holds %d GPU(s); the job asks for %d", r.Name(), len(r.GPUs), j.GPUs)
	case j.Project != "" && j.Project != r.Project:
		return Errorf(CodeInvalid, "%s is booked for project %q; the job names project %q", r.Name(), r.Project, j.Project)
	}
	matching := 0
	for _, g := range r.GPUs {
		if m, _ := ParseModel(g.Model); model.Matches(m) {
			matching++
		}
	}
	if matching < j.GPUs {
		return Errorf(CodeInvalid, "%s holds %d %s GPU(s); the job asks for %d", r.Name(), matching, modelWord(model), j.GPUs)
	}
	j.Project = r.Project
	return nil
}

func checkCommand(cmd []string) error {
	if len(cmd) == 0 || strings.TrimSpace(cmd[0]) == "" {
		return Errorf(CodeInvalid, "a job needs a command, like [\"python\", \"train.py\"]")
	}
	if len(cmd) > maxCommandArgs {
		return Errorf(CodeInvalid, "the command has %d arguments; at most %d are allowed", len(cmd), maxCommandArgs)
	}
	total := 0
	for _, arg := range cmd {
		total += len(arg)
		if !utf8.ValidString(arg) || strings.ContainsRune(arg, 0) {
			return Errorf(CodeInvalid, "the command must be valid UTF-8 without NUL characters")
		}
	}
	if total > maxCommandBytes {
		return Errorf(CodeInvalid, "the command is %d bytes long; at most %d are allowed", total, maxCommandBytes)
	}
	return nil
}

func checkEnv(env map[string]string) error {
	if len(env) > maxEnvVars {
		return Errorf(CodeInvalid, "the job sets %d environment variables; at most %d are allowed", len(env), maxEnvVars)
	}
	total := 0
	for _, k := range sortedEnvKeys(env) {
		v := env[k]
		total += len(k) + len(v)
		switch {
		case !envKey.MatchString(k):
			return Errorf(CodeInvalid, "environment variable %q must be letters, digits and '_', not starting with a digit, at most 128 characters", k)
		case agentEnv[k] || strings.HasPrefix(k, "GPUCAL_"):
			return Errorf(CodeInvalid, "environment variable %s is set by gpucal's agent; a job may not set it", k)
		case len(v) > maxEnvValue:
			return Errorf(CodeInvalid, "environment variable %s is %d bytes long; at most %d are allowed", k, len(v), maxEnvValue)
		case !utf8.ValidString(v) || strings.ContainsRune(v, 0):
			return Errorf(CodeInvalid, "environment variable %s must be valid UTF-8 without NUL characters", k)
		}
	}
	if total > maxEnvBytes {
		return Errorf(CodeInvalid, "the environment is %d bytes long; at most %d are allowed", total, maxEnvBytes)
	}
	return nil
}

func checkWorkDir(dir string) error {
	switch {
	case dir == "":
		return nil
	case len(dir) > maxWorkDir:
		return Errorf(CodeInvalid, "the working directory is longer than %d bytes", maxWorkDir)
	case !utf8.ValidString(dir) || strings.ContainsRune(dir, 0):
		return Errorf(CodeInvalid, "the working directory must be valid UTF-8 without NUL characters")
	case !strings.HasPrefix(dir, "/"):
		return Errorf(CodeInvalid, "the working directory %q must be an absolute path: it is used on the node that runs the job", dir)
	}
	return nil
}

// checkHints refuses estimate hints that no real job has: negative or
// non-finite sizes, or a guess longer than the longest booking.
func (s *Service) checkHints(h Hints) error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"params", h.Params}, {"tokens", h.Tokens}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 || f.v > 1e18 {
			return Errorf(CodeInvalid, "hint %s must be a number between 0 and 1e18", f.name)
		}
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"dataset", h.Dataset}, {"epochs", h.Epochs}, {"batch_size", h.BatchSize}, {"steps", h.Steps}} {
		if f.v < 0 {
			return Errorf(CodeInvalid, "hint %s must not be negative, got %d", f.name, f.v)
		}
	}
	switch {
	case h.Guess < 0:
		return Errorf(CodeInvalid, "the guessed duration must not be negative")
	case h.Guess > s.policy.MaxDuration:
		return Errorf(CodeInvalid, "the guessed duration %s is longer than the longest allowed, %s", fmtDuration(h.Guess), fmtDuration(s.policy.MaxDuration))
	case utf8.RuneCountInString(h.Framework) > maxFramework || !utf8.ValidString(h.Framework):
		return Errorf(CodeInvalid, "the framework hint must be valid UTF-8, at most %d characters", maxFramework)
	}
	return nil
}

// jobName normalises a job name: lower case, spaces and slashes as '-'.
// Without one it derives one from the command: the first argument that
// looks like a script or a path, else the program, without its extension
// ("python train.py" → "train").
func jobName(name string, cmd []string) (string, error) {
	given := name != ""
	if !given {
		name = derivedName(cmd)
	}
	n := strings.Trim(nameSpaces.ReplaceAllString(strings.ToLower(strings.TrimSpace(name)), "-"), "-")
	if len(n) > maxJobName || (!jobNameRe.MatchString(n) && given) {
		return "", Errorf(CodeInvalid, "job name %q must be at most %d letters, digits, '.', '_', '+' or '-'", name, maxJobName)
	}
	if !jobNameRe.MatchString(n) {
		return "job", nil
	}
	return n, nil
}

func derivedName(cmd []string) string {
	if len(cmd) == 0 {
		return ""
	}
	pick := cmd[0]
	for _, arg := range cmd {
		if !strings.HasPrefix(arg, "-") && strings.ContainsAny(arg, "./") {
			pick = arg
			break
		}
	}
	base := path.Base(pick)
	if ext := path.Ext(base); ext != "" && ext != base {
		base = strings.TrimSuffix(base, ext)
	}
	return base
}

// Job returns one job. Every authenticated user may see the queue; the
// command and environment only its owner, its project's admins and site admins.
func (s *Service) Job(ctx context.Context, a Actor, id int64) (Job, error) {
	var j Job
	err := s.store.View(ctx, func(tx Tx) (err error) {
		j, err = tx.Job(ctx, id)
		return err
	})
	if err != nil {
		return Job{}, err
	}
	return a.visible(j), nil
}

// Jobs lists the jobs matching f, newest first.
func (s *Service) Jobs(ctx context.Context, a Actor, f JobFilter) ([]Job, error) {
	for _, st := range f.States {
		if !slices.Contains(JobStates, st) {
			return nil, Errorf(CodeInvalid, "job state %q: filter by %s", st, joinStates(JobStates))
		}
	}
	for _, t := range f.Types {
		if !slices.Contains(JobTypes, t) {
			return nil, Errorf(CodeInvalid, "job type %q: filter by %s", t, joinTypes(JobTypes))
		}
	}
	if f.Limit <= 0 || f.Limit > maxJobsListed {
		f.Limit = maxJobsListed
	}
	var js []Job
	err := s.store.View(ctx, func(tx Tx) (err error) {
		js, err = tx.Jobs(ctx, f)
		return err
	})
	for i := range js {
		js[i] = a.visible(js[i])
	}
	return js, err
}

// CancelJob cancels a job. A queued job simply leaves the queue. One that
// runs on nodes with agents is stopped by them (checkpoint signal, SIGTERM,
// then SIGKILL within the drain grace): it is draining until they report
// its processes gone, and then cancelled. One on nodes without an agent is
// cancelled at once and its GPUs are free.
func (s *Service) CancelJob(ctx context.Context, a Actor, id int64) (Job, error) {
	now := s.Now()
	var out Job
	err := s.store.Update(ctx, func(tx Tx) error {
		j, err := jobToChange(ctx, tx, a, id, "cancel it")
		if err != nil {
			return err
		}
		if j.State.Finished() {
			return Errorf(CodeInvalid, "%s is already %s", JobName(j.ID), j.State)
		}
		was := j.State
		managed, err := onManagedNode(ctx, tx, j)
		if err != nil {
			return err
		}
		switch {
		case j.State == JobDraining && j.Stop != nil && j.Stop.Reason == StopCancelled:
			return Errorf(CodeInvalid, "%s is already being cancelled; its processes are gone by %s", JobName(j.ID), fmtTime(j.Stop.Deadline))
		case managed:
			// Its agents stop it; it ends, and its GPUs are free, once
			// they report its processes gone.
			j.State = JobDraining
			j.Stop = &StopRequest{Reason: StopCancelled, At: now, Deadline: now.Add(s.nodes.Drain.Grace)}
		default:
			j.State, j.EndedAt = JobCancelled, now
		}
		if err := tx.UpdateJob(ctx, j); err != nil {
			return err
		}
		out = j
		return tx.Audit(ctx, AuditEntry{At: now, Actor: a.User, Action: "job.cancel", Object: JobName(j.ID), Detail: fmt.Sprintf("%s → %s", was, j.State)})
	})
	return out, err
}

// QueueView is the queue as the latest plan sees it: queued jobs by
// position, running jobs by predicted end.
type QueueView struct {
	PlannedAt time.Time // when the newest prediction was made; zero before the first plan
	Queued    []Job
	Running   []Job
}

// Queue returns every queued and running job with its persisted prediction.
// Queued jobs that no plan has seen yet come last, oldest first.
func (s *Service) Queue(ctx context.Context, a Actor) (QueueView, error) {
	var js []Job
	err := s.store.View(ctx, func(tx Tx) (err error) {
		js, err = tx.Jobs(ctx, JobFilter{States: openStates})
		return err
	})
	if err != nil {
		return QueueView{}, err
	}
	q := QueueView{Queued: []Job{}, Running: []Job{}}
	for _, j := range js {
		if j.Prediction.PlannedAt.After(q.PlannedAt) {
			q.PlannedAt = j.Prediction.PlannedAt
		}
		if j.State == JobQueued {
			q.Queued = append(q.Queued, a.visible(j))
		} else {
			q.Running = append(q.Running, a.visible(j))
		}
	}
	unplanned := func(j Job) int {
		if j.Prediction.Position == 0 {
			return 1
		}
		return 0
	}
	slices.SortFunc(q.Queued, func(x, y Job) int {
		return cmp.Or(cmp.Compare(unplanned(x), unplanned(y)), cmp.Compare(x.Prediction.Position, y.Prediction.Position), cmp.Compare(x.ID, y.ID))
	})
	slices.SortFunc(q.Running, func(x, y Job) int {
		return cmp.Or(x.Prediction.EndP50.Compare(y.Prediction.EndP50), cmp.Compare(x.ID, y.ID))
	})
	return q, nil
}

// jobToChange reads job id for a to change (to do what says what, for the
// refusal): only its owner, an admin of its project or a site admin may.
func jobToChange(ctx context.Context, tx Tx, a Actor, id int64, what string) (Job, error) {
	j, err := tx.Job(ctx, id)
	if err != nil {
		return Job{}, err
	}
	if !a.canChangeJob(j) {
		return Job{}, Errorf(CodeForbidden, "%s belongs to %s; only its owner, an admin of its project or a site admin may %s", JobName(j.ID), j.Owner, what)
	}
	return j, nil
}

// canChangeJob reports whether a may change j: its owner, an admin of its
// project, or a site admin.
func (a Actor) canChangeJob(j Job) bool {
	return a.Admin || a.User == j.Owner || (j.Project != "" && a.Roles[j.Project] == RoleAdmin)
}

// visible returns j as a may see it: without the command and environment
// (which may hold secrets) unless a may change it.
func (a Actor) visible(j Job) Job {
	if !a.canChangeJob(j) {
		j.Command, j.Env = nil, nil
	}
	return j
}

func cloneEnv(env map[string]string) map[string]string {
	if len(env) == 0 {
		return nil
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		out[k] = v
	}
	return out
}

func sortedEnvKeys(env map[string]string) []string {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func joinTypes(ts []JobType) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = string(t)
	}
	return strings.Join(parts, ", ")
}

func joinStates(ss []JobState) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = string(s)
	}
	return strings.Join(parts, ", ")
}

// onManagedNode reports whether every node j holds GPUs on has an agent
// to stop it. A part on a node without one would never report its end, so
// such a job is cancelled at once (its agents then stop their parts as
// jobs they no longer run).
func onManagedNode(ctx context.Context, tx Tx, j Job) (bool, error) {
	if len(j.Assigned) == 0 {
		return false, nil
	}
	nodes, err := tx.Nodes(ctx)
	if err != nil {
		return false, err
	}
	for _, n := range nodes {
		if !n.Managed() && slicesContainsNode(j.Assigned, n.Name) {
			return false, nil
		}
	}
	return true, nil
}
