package store

import (
	"github.com/uptrace/bun"

	"github.com/gpucal/gpucal/core"
)

// The row types mirror the tables of migrations/; they never leave store.

type userRow struct {
	bun.BaseModel `bun:"table:users,alias:u"`
	Name          string `bun:"name,pk"`
	Admin         bool   `bun:"admin"`
	Email         string `bun:"email"`
	CreatedAt     stamp  `bun:"created_at"`
}

func (r userRow) user() core.User {
	return core.User{Name: r.Name, Admin: r.Admin, Email: r.Email, CreatedAt: r.CreatedAt.Time()}
}

type projectRow struct {
	bun.BaseModel `bun:"table:projects"`
	Name          string `bun:"name,pk"`
	CreatedAt     stamp  `bun:"created_at"`
}

type memberRow struct {
	bun.BaseModel `bun:"table:project_members"`
	Project       string `bun:"project,pk"`
	User          string `bun:"user_name,pk"`
	Role          string `bun:"role"`
}

type tokenRow struct {
	bun.BaseModel `bun:"table:tokens"`
	ID            int64  `bun:"id,pk,autoincrement"`
	User          string `bun:"user_name"`
	Name          string `bun:"name"`
	Hash          string `bun:"hash"`
	CreatedAt     stamp  `bun:"created_at"`
}

// nodeRow leaves out credential_hash: only SetNodeCredential and
// NodeByCredential touch it, so a hash is never read by accident.
type nodeRow struct {
	bun.BaseModel `bun:"table:nodes"`
	ID            int64  `bun:"id,pk,autoincrement"`
	Name          string `bun:"name"`
	CreatedAt     stamp  `bun:"created_at"`
	State         string `bun:"state"`
	LastSeen      stamp  `bun:"last_seen,nullzero"`
	Agent         string `bun:"agent"`
	NVML          string `bun:"nvml"`
}

type gpuRow struct {
	bun.BaseModel `bun:"table:gpus"`
	ID            int64   `bun:"id,pk,autoincrement"`
	NodeID        int64   `bun:"node_id"`
	Index         int     `bun:"idx"`
	Name          string  `bun:"name"`
	MemoryMiB     int64   `bun:"memory_mib"`
	UUID          string  `bun:"uuid"`
	State         string  `bun:"state"`
	Fault         string  `bun:"fault"`
	Util          float64 `bun:"util"`
	UsedMiB       int64   `bun:"used_mib"`
	TempC         float64 `bun:"temp_c"`
	PowerW        float64 `bun:"power_w"`
	TelemetryAt   stamp   `bun:"telemetry_at,nullzero"`
	LastXID       int64   `bun:"last_xid"`
	AgentFault    string  `bun:"agent_fault"`
	IdleSince     stamp   `bun:"idle_since,nullzero"`
}

// gpuRowOf is g, a GPU of node nodeID, as the gpus table stores it.
func gpuRowOf(nodeID int64, g core.GPU) gpuRow {
	t := g.Telemetry
	return gpuRow{ID: g.ID, NodeID: nodeID, Index: g.Index, Name: g.Name, MemoryMiB: g.MemoryMiB, UUID: g.UUID,
		State: string(g.State), Fault: g.Fault, Util: t.Util, UsedMiB: t.UsedMiB, TempC: t.TempC, PowerW: t.PowerW,
		TelemetryAt: stamp(t.At), LastXID: int64(t.XID), AgentFault: t.AgentFault, IdleSince: stamp(t.IdleSince)}
}

func (r gpuRow) gpu(node string) core.GPU {
	return core.GPU{
		ID: r.ID, NodeID: r.NodeID, Node: node, Index: r.Index, Name: r.Name, MemoryMiB: r.MemoryMiB, UUID: r.UUID,
		State: core.GPUState(r.State), Fault: r.Fault,
		Telemetry: core.Telemetry{At: r.TelemetryAt.Time(), Util: r.Util, UsedMiB: r.UsedMiB, TempC: r.TempC, PowerW: r.PowerW,
			XID: uint64(r.LastXID), AgentFault: r.AgentFault, IdleSince: r.IdleSince.Time()},
	}
}

type joinTokenRow struct {
	bun.BaseModel `bun:"table:join_tokens"`
	Hash          string `bun:"hash,pk"`
	CreatedBy     string `bun:"created_by"`
	CreatedAt     stamp  `bun:"created_at"`
	ExpiresAt     stamp  `bun:"expires_at"`
}

// logRow is one chunk of a job's log.
type logRow struct {
	bun.BaseModel `bun:"table:job_logs"`
	Job           int64  `bun:"job_id,pk"`
	Offset        int64  `bun:"off,pk"`
	N             int64  `bun:"n"`
	Data          []byte `bun:"data"`
}

type reservationRow struct {
	bun.BaseModel `bun:"table:reservations"`
	ID            int64  `bun:"id,pk,autoincrement"`
	Owner         string `bun:"owner"`
	Project       string `bun:"project,nullzero"` // NULL for none, so that it can reference projects
	Start         stamp  `bun:"starts_at"`
	End           stamp  `bun:"ends_at"`
	State         string `bun:"state"`
	Model         string `bun:"model"`
	Note          string `bun:"note"`
	RequestKey    string `bun:"request_key"`
	CreatedAt     stamp  `bun:"created_at"`
	UpdatedAt     stamp  `bun:"updated_at"`
}

func (r reservationRow) reservation() core.Reservation {
	return core.Reservation{
		ID: r.ID, Owner: r.Owner, Project: r.Project, Start: r.Start.Time(), End: r.End.Time(),
		State: core.ReservationState(r.State), Model: r.Model, Note: r.Note,
		CreatedAt: r.CreatedAt.Time(), UpdatedAt: r.UpdatedAt.Time(), RequestKey: r.RequestKey,
	}
}

// slotRow is one GPU of one reservation, with the reservation's window.
type slotRow struct {
	bun.BaseModel `bun:"table:reservation_gpus"`
	Reservation   int64 `bun:"reservation_id,pk"`
	GPUID         int64 `bun:"gpu_id,pk"`
	Start         stamp `bun:"starts_at"`
	End           stamp `bun:"ends_at"`
	Holds         bool  `bun:"holds"`
}

type auditRow struct {
	bun.BaseModel `bun:"table:audit"`
	ID            int64  `bun:"id,pk,autoincrement"`
	At            stamp  `bun:"at"`
	Actor         string `bun:"actor"`
	Action        string `bun:"action"`
	Object        string `bun:"object"`
	Detail        string `bun:"detail"`
}

type keyRow struct {
	bun.BaseModel `bun:"table:idempotency_keys"`
	User          string `bun:"user_name,pk"`
	Key           string `bun:"key,pk"`
	Fingerprint   string `bun:"fingerprint"`
	Status        int    `bun:"status"`
	Body          []byte `bun:"body"`
	CreatedAt     stamp  `bun:"created_at"`
}

func (r keyRow) record() core.IdempotencyRecord {
	return core.IdempotencyRecord{User: r.User, Key: r.Key, Fingerprint: r.Fingerprint,
		Status: r.Status, Body: r.Body, CreatedAt: r.CreatedAt.Time()}
}

type migrationRow struct {
	bun.BaseModel `bun:"table:schema_migrations"`
	Version       int    `bun:"version,pk"`
	Name          string `bun:"name"`
	AppliedAt     stamp  `bun:"applied_at"`
}

type jobRow struct {
	bun.BaseModel `bun:"table:jobs,alias:j"`
	ID            int64   `bun:"id,pk,autoincrement"`
	Owner         string  `bun:"owner"`
	Project       string  `bun:"project,nullzero"`
	Name          string  `bun:"name"`
	Type          string  `bun:"type"`
	GPUs          int     `bun:"gpus"`
	Model         string  `bun:"model"`
	Class         string  `bun:"class"`
	Preemptible   bool    `bun:"preemptible"`
	Reservation   int64   `bun:"reservation_id,nullzero"`
	Spec          string  `bun:"spec"`
	State         string  `bun:"state"`
	SubmittedAt   stamp   `bun:"submitted_at"`
	StartedAt     stamp   `bun:"started_at,nullzero"`
	EndedAt       stamp   `bun:"ended_at,nullzero"`
	PlannedAt     stamp   `bun:"planned_at,nullzero"`
	Position      int     `bun:"position"`
	StartP50      stamp   `bun:"start_p50,nullzero"`
	StartP90      stamp   `bun:"start_p90,nullzero"`
	EndP50        stamp   `bun:"end_p50,nullzero"`
	EndP90        stamp   `bun:"end_p90,nullzero"`
	PlannedGPUs   string  `bun:"planned_gpus"`
	Reason        string  `bun:"reason"`
	Estimate      string  `bun:"estimate"`
	Drain         string  `bun:"drain,nullzero"`
	ProgressFrac  float64 `bun:"progress_fraction"`
	ProgressStep  int64   `bun:"progress_step"`
	ProgressTotal int64   `bun:"progress_total"`
	ProgressAt    stamp   `bun:"progress_at,nullzero"`
	ProgressRate  float64 `bun:"progress_rate"`
	Stop          string  `bun:"stop,nullzero"` // JSON core.StopRequest; NULL for none
	Runs          string  `bun:"runs"`          // JSON []core.NodeRun
}

// jobSpec is the spec column: what the agent needs to run a job and what
// the estimator reads.
type jobSpec struct {
	Command []string          `json:"command"`
	Env     map[string]string `json:"env,omitempty"`
	WorkDir string            `json:"workdir,omitempty"`
	Hints   core.Hints        `json:"hints"`
	// Checkpoint is absent from specs stored before it existed: "".
	Checkpoint string `json:"checkpoint,omitempty"`
}

type jobGPURow struct {
	bun.BaseModel `bun:"table:job_gpus"`
	Job           int64 `bun:"job_id,pk"`
	GPUID         int64 `bun:"gpu_id,pk"`
	Holds         bool  `bun:"holds"`
}

type eventRow struct {
	bun.BaseModel `bun:"table:events"`
	ID            int64  `bun:"id,pk,autoincrement"`
	Kind          string `bun:"kind"`
	Job           int64  `bun:"job_id,nullzero"`
	User          string `bun:"user_name"`
	At            stamp  `bun:"at"`
	Detail        string `bun:"detail"`
	Data          string `bun:"data"` // JSON of core.Event.Data, "" for none
	DedupKey      string `bun:"dedup_key"`
	FannedOut     bool   `bun:"fanned_out"`
}

// chatRow links a person on a chat platform to a gpucal user.
type chatRow struct {
	bun.BaseModel `bun:"table:chat_identities"`
	Platform      string `bun:"platform,pk"`
	Team          string `bun:"team,pk"`
	ExternalID    string `bun:"external_id,pk"`
	User          string `bun:"user_name"`
	Zone          string `bun:"tz"`
	Lang          string `bun:"lang"`
	CreatedAt     stamp  `bun:"created_at"`
}

// deliveryRow is one event on its way to one person over one channel.
type deliveryRow struct {
	bun.BaseModel `bun:"table:deliveries"`
	ID            int64  `bun:"id,pk,autoincrement"`
	Event         int64  `bun:"event_id"`
	User          string `bun:"user_name"`
	Channel       string `bun:"channel"`
	DedupKey      string `bun:"dedup_key"`
	State         string `bun:"state"`
	Attempts      int    `bun:"attempts"`
	AvailableAt   stamp  `bun:"available_at"`
	ClaimedUntil  stamp  `bun:"claimed_until,nullzero"`
	LastError     string `bun:"last_error"`
	ProviderID    string `bun:"provider_id"`
	CreatedAt     stamp  `bun:"created_at"`
	SentAt        stamp  `bun:"sent_at,nullzero"`
}
