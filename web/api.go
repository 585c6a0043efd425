package web

import (
	"time"

	"github.com/gpucal/gpucal/core"
)

// The wire types of the JSON API, shared by the server and Client. Times are
// RFC 3339 in UTC. docs/api.md documents every field.

// GPU is a GPU as the API shows it.
type GPU struct {
	ID     int64  `json:"id"`
	Node   string `json:"node"`
	Index  int    `json:"index"`
	UUID   string `json:"uuid"`
	Model  string `json:"model"`          // normalised: "a100-80gb"
	Name   string `json:"name,omitempty"` // as NVML reports it
	Memory int64  `json:"memory_mib,omitempty"`
	State  string `json:"state,omitempty"` // up or down (administrative)
	// Status is what the GPU is doing now: idle, reserved or down.
	Status      string               `json:"status,omitempty"`
	Reservation *core.ReservationRef `json:"reservation,omitempty"` // holding it now
	Next        *core.ReservationRef `json:"next,omitempty"`        // the next booking on it
	Job         *core.JobRef         `json:"job,omitempty"`         // the job running on it
	// Fault says why it is out of service, "" when it is not.
	Fault string `json:"fault,omitempty"`
	// The agent's latest reading (absent without an agent).
	Telemetry *Telemetry `json:"telemetry,omitempty"`
}

// Telemetry is a GPU's latest reading by its agent.
type Telemetry struct {
	At      time.Time `json:"at"`
	Util    float64   `json:"util"` // percent
	UsedMiB int64     `json:"used_mib"`
	TempC   float64   `json:"temp_c"`
	PowerW  float64   `json:"power_w"`
}

// Node is a node with its GPUs.
type Node struct {
	Name      string    `json:"name"`
	GPUs      []GPU     `json:"gpus"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	// State is ready, suspect or down for a node with an agent, absent for
	// one added by hand.
	State    string    `json:"state,omitempty"`
	LastSeen time.Time `json:"last_seen,omitzero"`
	Agent    string    `json:"agent,omitempty"`
	NVML     string    `json:"nvml,omitempty"` // why its GPUs cannot be read, if they cannot
}

// NewGPU is a GPU in a POST /api/v1/nodes request.
type NewGPU struct {
	Index  int    `json:"index"`
	Name   string `json:"model"` // as NVML reports it, e.g. "NVIDIA A100-SXM4-80GB"
	Memory int64  `json:"memory_mib"`
	UUID   string `json:"uuid"`
	State  string `json:"state,omitempty"`
}

// NewNode is the body of POST /api/v1/nodes.
type NewNode struct {
	Name string   `json:"name"`
	GPUs []NewGPU `json:"gpus"`
}

// BookRequest is the body of POST /api/v1/reservations.
type BookRequest struct {
	GPUs     int    `json:"gpus"`
	Model    string `json:"model,omitempty"`
	Node     string `json:"node,omitempty"`
	SameNode bool   `json:"same_node,omitempty"`
	Start    string `json:"start"` // RFC 3339
	End      string `json:"end"`   // RFC 3339
	Note     string `json:"note,omitempty"`
	Project  string `json:"project,omitempty"`
	Owner    string `json:"owner,omitempty"` // admins may book for someone else
}

// ExtendRequest is the body of POST /api/v1/reservations/{id}/extend: one of
// By (a Go duration such as "1h30m", or "2d") or End (RFC 3339).
type ExtendRequest struct {
	By  string `json:"by,omitempty"`
	End string `json:"end,omitempty"`
}

// Reservation is a reservation as the API shows it.
type Reservation struct {
	ID        string    `json:"id"`
	Owner     string    `json:"owner"`
	Project   string    `json:"project,omitempty"`
	State     string    `json:"state"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Model     string    `json:"model,omitempty"`
	Note      string    `json:"note,omitempty"`
	GPUs      []GPU     `json:"gpus"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Calendar is the answer to GET /api/v1/calendar.
type Calendar struct {
	From  time.Time      `json:"from"`
	To    time.Time      `json:"to"`
	GPUs  []GPU          `json:"gpus"`
	Items []CalendarItem `json:"items"`
}

// CalendarItem is one thing on the calendar: a reservation, a job holding
// GPUs (start to predicted end) or a queued job at its planned place
// (planned: true). A job starts between start and start_p90 and ends
// between end and end_p90; its note is its name.
type CalendarItem struct {
	Kind     string    `json:"kind"` // reservation or job
	ID       string    `json:"id"`
	GPUs     []int64   `json:"gpus"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Owner    string    `json:"owner"`
	Project  string    `json:"project,omitempty"`
	State    string    `json:"state"`
	Note     string    `json:"note,omitempty"`
	Type     string    `json:"type,omitempty"` // jobs: train, finetune, …
	Planned  bool      `json:"planned,omitempty"`
	StartP90 time.Time `json:"start_p90,omitzero"`
	EndP90   time.Time `json:"end_p90,omitzero"`
}

// User is a user as the API shows it.
type User struct {
	Name      string            `json:"name"`
	Admin     bool              `json:"admin"`
	Projects  map[string]string `json:"projects,omitempty"` // project → role (on /me)
	CreatedAt time.Time         `json:"created_at,omitzero"`
}

// ChatLink is a person on a chat platform acting as a gpucal user.
type ChatLink struct {
	Platform  string    `json:"platform"` // "slack" or "discord"
	Team      string    `json:"team"`     // the Slack workspace or Discord server ID
	ID        string    `json:"id"`       // the platform's user ID
	User      string    `json:"user,omitempty"`
	Zone      string    `json:"zone,omitempty"`
	CreatedAt time.Time `json:"created_at,omitzero"`
}

func chatLinkJSON(c core.ChatUser) ChatLink {
	return ChatLink{Platform: c.Platform, Team: c.Team, ID: c.ID, User: c.User, Zone: c.Zone, CreatedAt: c.CreatedAt}
}

// Project is a project with its members.
type Project struct {
	Name    string   `json:"name"`
	Members []Member `json:"members"`
}

// Member is a user's role in a project.
type Member struct {
	User string `json:"user"`
	Role string `json:"role,omitempty"`
}

// TokenRequest is the body of POST /api/v1/tokens.
type TokenRequest struct {
	User  string `json:"user,omitempty"` // default: the caller
	Name  string `json:"name,omitempty"`
	Admin bool   `json:"admin,omitempty"` // make the user a site admin
}

// TokenResponse carries a new token; it is shown once and stored hashed.
type TokenResponse struct {
	User  string `json:"user"`
	Token string `json:"token"`
}

// AuditEntry is one line of the audit log.
type AuditEntry struct {
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`
	Action string    `json:"action"`
	Object string    `json:"object"`
	Detail string    `json:"detail,omitempty"`
}

// ErrorBody is the body of every error response.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong; conflicts name what they clashed with
// and what could be booked instead.
type ErrorDetail struct {
	Code         string                `json:"code"`
	Message      string                `json:"message"`
	With         []core.ReservationRef `json:"with,omitempty"`
	Alternatives []core.Alternative    `json:"alternatives,omitempty"`
}

func gpuRefJSON(g core.GPURef) GPU {
	return GPU{ID: g.ID, Node: g.Node, Index: g.Index, UUID: g.UUID, Model: g.Model}
}

func reservationJSON(r core.Reservation, now time.Time) Reservation {
	out := Reservation{
		ID: r.Name(), Owner: r.Owner, Project: r.Project, State: string(r.StateAt(now)),
		Start: r.Start, End: r.End, Model: r.Model, Note: r.Note, GPUs: []GPU{},
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	for _, g := range r.GPUs {
		out.GPUs = append(out.GPUs, gpuRefJSON(g))
	}
	return out
}

func nodeStatusJSON(n core.NodeStatus) Node {
	out := Node{Name: n.Name, CreatedAt: n.CreatedAt, GPUs: []GPU{}, State: string(n.State), LastSeen: n.LastSeen, Agent: n.Agent, NVML: n.NVML}
	for _, g := range n.GPUs {
		out.GPUs = append(out.GPUs, GPU{
			ID: g.ID, Node: g.Node, Index: g.Index, UUID: g.UUID, Model: g.Model().String(),
			Name: g.Name, Memory: g.MemoryMiB, State: string(g.State),
			Status: g.Status, Reservation: g.Reservation, Next: g.Next, Job: g.Job,
			Fault: g.Fault, Telemetry: telemetryJSON(g.Telemetry),
		})
	}
	return out
}

func telemetryJSON(t core.Telemetry) *Telemetry {
	if t.At.IsZero() {
		return nil
	}
	return &Telemetry{At: t.At, Util: t.Util, UsedMiB: t.UsedMiB, TempC: t.TempC, PowerW: t.PowerW}
}

func nodeJSON(n core.Node) Node {
	out := Node{Name: n.Name, CreatedAt: n.CreatedAt, GPUs: []GPU{}, State: string(n.State), LastSeen: n.LastSeen, Agent: n.Agent}
	for _, g := range n.GPUs {
		out.GPUs = append(out.GPUs, gpuJSON(g))
	}
	return out
}

// gpuJSON is a GPU of the inventory, without what it is doing now.
func gpuJSON(g core.GPU) GPU {
	return GPU{ID: g.ID, Node: g.Node, Index: g.Index, UUID: g.UUID, Model: g.Model().String(), Name: g.Name,
		Memory: g.MemoryMiB, State: string(g.State), Fault: g.Fault}
}

func calendarJSON(c core.Calendar) Calendar {
	out := Calendar{From: c.From, To: c.To, GPUs: []GPU{}, Items: []CalendarItem{}}
	for _, g := range c.GPUs {
		out.GPUs = append(out.GPUs, gpuRefJSON(g))
	}
	for _, it := range c.Items {
		item := CalendarItem{Kind: it.Kind, ID: it.ID, GPUs: it.GPUs, Start: it.Start, End: it.End,
			Owner: it.Owner, Project: it.Project, State: string(it.State), Note: it.Note}
		if it.Kind == "job" {
			item.State, item.Type, item.Planned, item.StartP90, item.EndP90 = string(it.JobState), string(it.JobType), it.Planned, it.StartP90, it.EndP90
		}
		out.Items = append(out.Items, item)
	}
	return out
}

// Hints are what a submitter says about a job's size; guess is a duration
// such as "3h" or "90m".
type Hints struct {
	Framework string  `json:"framework,omitempty"`
	Params    float64 `json:"params,omitempty"`
	Tokens    float64 `json:"tokens,omitempty"`
	Dataset   int64   `json:"dataset,omitempty"`
	Epochs    int64   `json:"epochs,omitempty"`
	BatchSize int64   `json:"batch_size,omitempty"`
	Steps     int64   `json:"steps,omitempty"`
	Guess     string  `json:"guess,omitempty"`
}

// SubmitRequest is the body of POST /api/v1/jobs.
type SubmitRequest struct {
	GPUs        int               `json:"gpus"`
	Model       string            `json:"model,omitempty"`
	Name        string            `json:"name,omitempty"`
	Type        string            `json:"type,omitempty"` // train, finetune, eval, inference, notebook, other (default)
	Command     []string          `json:"command"`
	Env         map[string]string `json:"env,omitempty"`
	WorkDir     string            `json:"workdir,omitempty"`
	Class       string            `json:"class,omitempty"` // high, normal (default), low
	Preemptible bool              `json:"preemptible,omitempty"`
	Reservation string            `json:"reservation,omitempty"` // "r42": run inside it
	Project     string            `json:"project,omitempty"`
	Hints       *Hints            `json:"hints,omitempty"`
	// Checkpoint is the signal asking it to save its state before a stop:
	// SIGUSR1 (default), SIGUSR2, SIGINT, SIGTERM, SIGHUP or SIGQUIT.
	Checkpoint string `json:"checkpoint,omitempty"`
}

// Job is a job as the API shows it. Command and env are shown only to
// its owner, its project's admins and site admins.
type Job struct {
	ID          string            `json:"id"`
	Owner       string            `json:"owner"`
	Project     string            `json:"project,omitempty"`
	Name        string            `json:"name"`
	Type        string            `json:"type"`
	GPUs        int               `json:"gpus"`
	Model       string            `json:"model,omitempty"`
	Command     []string          `json:"command,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	WorkDir     string            `json:"workdir,omitempty"`
	Class       string            `json:"class"`
	Preemptible bool              `json:"preemptible"`
	Reservation string            `json:"reservation,omitempty"`
	Hints       *Hints            `json:"hints,omitempty"`
	State       string            `json:"state"`
	SubmittedAt time.Time         `json:"submitted_at"`
	StartedAt   time.Time         `json:"started_at,omitzero"`
	EndedAt     time.Time         `json:"ended_at,omitzero"`
	Assigned    []GPU             `json:"assigned,omitempty"` // the GPUs it holds (or held) once started
	Progress    *Progress         `json:"progress,omitempty"` // what it last reported, once it has
	Prediction  *Prediction       `json:"prediction,omitempty"`
	Checkpoint  string            `json:"checkpoint,omitempty"`
	// Stop says why and by when it is being stopped, once gpucal decided to.
	Stop *core.StopRequest `json:"stop,omitempty"`
	// Runs are its parts on each node as their agents reported them: exit
	// code, signal, resource use, how far ahead of a drain deadline it was gone.
	Runs []core.NodeRun `json:"runs,omitempty"`
}

// ProgressRequest is the body of POST /api/v1/jobs/{id}/progress: either
// {"fraction": 0.42} or {"step": 120, "total": 1000}.
type ProgressRequest struct {
	Fraction *float64 `json:"fraction,omitempty"`
	Step     *int64   `json:"step,omitempty"`
	Total    *int64   `json:"total,omitempty"`
}

// Progress is what a running job last reported about how far it is.
type Progress struct {
	Fraction float64   `json:"fraction"`
	Step     int64     `json:"step,omitempty"`
	Total    int64     `json:"total,omitempty"`
	At       time.Time `json:"at"`
	// Rate is the share of the work done per second over the recent part of
	// the run; steps per second are Rate × Total.
	Rate float64 `json:"rate"`
}

// Prediction is what the latest plan says about a job: its place in the
// queue, when it starts and ends (median and 90th percentile), on which
// GPUs, and why it is not running yet.
type Prediction struct {
	PlannedAt time.Time `json:"planned_at"`
	Position  int       `json:"position,omitempty"`
	StartP50  time.Time `json:"start_p50,omitzero"`
	StartP90  time.Time `json:"start_p90,omitzero"`
	EndP50    time.Time `json:"end_p50,omitzero"`
	EndP90    time.Time `json:"end_p90,omitzero"`
	GPUs      []GPU     `json:"gpus,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Estimate  Estimate  `json:"estimate"`
	Drain     *Drain    `json:"drain,omitempty"`
}

// Estimate is a runtime distribution in seconds and where it came from.
type Estimate struct {
	P50     int64  `json:"p50_s"`
	P90     int64  `json:"p90_s"`
	Source  string `json:"source,omitempty"`
	Samples int    `json:"samples"`
}

// Drain says when a preemptible job will be stopped for a reservation.
type Drain struct {
	Reservation string    `json:"reservation,omitempty"`
	SignalAt    time.Time `json:"signal_at"`
	Deadline    time.Time `json:"deadline"`
}

// Queue is the answer to GET /api/v1/queue: queued jobs by position,
// running ones by predicted end.
type Queue struct {
	PlannedAt time.Time `json:"planned_at,omitzero"`
	Queued    []Job     `json:"queued"`
	Running   []Job     `json:"running"`
}

// WhatIfRequest is the body of POST /api/v1/whatif.
type WhatIfRequest struct {
	GPUs        int    `json:"gpus"`
	Model       string `json:"model,omitempty"`
	Duration    string `json:"duration,omitempty"` // "12h"; empty: the default estimate
	Class       string `json:"class,omitempty"`
	Preemptible bool   `json:"preemptible,omitempty"`
}

// WhatIfOption is one answer of a what-if.
type WhatIfOption struct {
	Kind     string    `json:"kind"` // asked, fewer, model
	GPUs     int       `json:"gpus"`
	Model    string    `json:"model,omitempty"`
	StartP50 time.Time `json:"start_p50,omitzero"`
	StartP90 time.Time `json:"start_p90,omitzero"`
	EndP50   time.Time `json:"end_p50,omitzero"`
	EndP90   time.Time `json:"end_p90,omitzero"`
	Assigned []GPU     `json:"assigned"`
	Reason   string    `json:"reason,omitempty"`
	Estimate Estimate  `json:"estimate"`
}

// WhatIfAnswer is the answer to POST /api/v1/whatif.
type WhatIfAnswer struct {
	PlannedAt    time.Time      `json:"planned_at"`
	Asked        WhatIfOption   `json:"asked"`
	Alternatives []WhatIfOption `json:"alternatives"`
}
