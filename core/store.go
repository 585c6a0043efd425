package core

import (
	"context"
	"time"
)

// Store is what the Service needs from a database. The store package
// implements it on SQLite and PostgreSQL.
type Store interface {
	// View runs fn with read access. It takes no write lock.
	View(ctx context.Context, fn func(Tx) error) error
	// Update runs fn in one transaction and commits when fn returns nil.
	// When the database reports that a concurrent transaction won (an
	// exclusion violation or a serialization failure) Update runs fn again on
	// the new state; when that keeps happening it returns a CodeConflict error.
	// fn must therefore have no effects outside tx.
	Update(ctx context.Context, fn func(Tx) error) error
}

// Tx is the data access the Service uses inside View and Update.
// Methods that look one thing up return a CodeNotFound error when it is missing;
// inserts return CodeConflict when a unique name is taken.
type Tx interface {
	SessionTx // web sign-in links and browser sessions (websession.go)

	// Nodes returns every node by name, each with its GPUs by index.
	Nodes(ctx context.Context) ([]Node, error)
	// Node returns the node named name with its GPUs by index (a heartbeat
	// must not read the whole inventory).
	Node(ctx context.Context, name string) (Node, error)
	// InsertNode stores n and its GPUs and fills in their IDs.
	InsertNode(ctx context.Context, n *Node) error
	// UpdateNode stores n's State, LastSeen, Agent and NVML and, for each
	// of its GPUs, Index, UUID, Name, MemoryMiB, State, Fault and Telemetry; a GPU with
	// ID 0 is inserted and gets its ID. GPUs are never deleted.
	UpdateNode(ctx context.Context, n *Node) error
	// SetNodeCredential stores the hash of node id's credential, replacing
	// the one before.
	SetNodeCredential(ctx context.Context, id int64, hash string) error
	// NodeByCredential returns the node whose credential has this hash.
	NodeByCredential(ctx context.Context, hash string) (Node, error)
	// InsertJoinToken stores a join token; JoinToken finds one by hash.
	InsertJoinToken(ctx context.Context, t JoinToken) error
	JoinToken(ctx context.Context, hash string) (JoinToken, error)

	// Slots returns the slots of reservations that still hold their GPUs and
	// whose window touches [from, to]: Start <= to and End >= from, so that
	// slots ending exactly at from are included (best fit uses them).
	Slots(ctx context.Context, from, to time.Time) ([]Slot, error)
	Reservation(ctx context.Context, id int64) (Reservation, error)
	// ReservationByKey finds the reservation owner booked with an idempotency key.
	ReservationByKey(ctx context.Context, owner, key string) (Reservation, bool, error)
	Reservations(ctx context.Context, f ReservationFilter) ([]Reservation, error)
	// InsertReservation stores r with one slot per GPU and fills in r.ID.
	// It sorts r.GPUs by node name and index, the order reads return.
	InsertReservation(ctx context.Context, r *Reservation) error
	// UpdateReservation stores r's State, End, Note and UpdatedAt; its slots follow.
	UpdateReservation(ctx context.Context, r Reservation) error

	User(ctx context.Context, name string) (User, error)
	Users(ctx context.Context) ([]User, error)
	InsertUser(ctx context.Context, u User) error
	SetAdmin(ctx context.Context, user string, admin bool) error
	// SetEmail stores a user's email address ("" for none).
	SetEmail(ctx context.Context, user, email string) error
	Project(ctx context.Context, name string) (Project, error)
	Projects(ctx context.Context) ([]Project, error)
	// InsertProject stores the project itself; members are added with SetMember.
	InsertProject(ctx context.Context, p Project) error
	SetMember(ctx context.Context, project string, m Member) error
	// Roles returns the projects user belongs to, with the role in each.
	Roles(ctx context.Context, user string) (map[string]Role, error)

	InsertToken(ctx context.Context, t *Token) error
	// TokenUser returns the owner of the token with this hash.
	TokenUser(ctx context.Context, hash string) (User, error)

	Audit(ctx context.Context, e AuditEntry) error
	AuditLog(ctx context.Context, f AuditFilter) ([]AuditEntry, error)

	// InsertJob stores j, its spec and its state, and fills in j.ID. Its
	// Assigned GPUs and Prediction are stored by UpdateJob and SetPredictions.
	InsertJob(ctx context.Context, j *Job) error
	// Job returns job id with its assigned GPUs. Inside Update on PostgreSQL
	// it also locks the job until the transaction ends.
	Job(ctx context.Context, id int64) (Job, error)
	// Jobs returns the jobs that match f, newest (highest ID) first.
	Jobs(ctx context.Context, f JobFilter) ([]Job, error)
	// UpdateJob stores j's State, Assigned GPUs, StartedAt, EndedAt,
	// Prediction, Stop and Runs. A GPU may be held by one holding job at a time; a second
	// one is refused with a CodeConflict error.
	UpdateJob(ctx context.Context, j Job) error
	// AppendLog stores a chunk of job's log: n bytes at offset, of which
	// data (len(data) <= n) are kept; a chunk whose bytes are not kept
	// still counts in the size. It returns the log's size after it.
	// offset must be the size before; any other is refused with a
	// CodeConflict error and nothing is stored.
	AppendLog(ctx context.Context, job, offset, n int64, data []byte) (int64, error)
	// Log returns up to limit bytes of job's log from offset, the chunks
	// touching [offset, offset+limit) in order, and the log's size.
	Log(ctx context.Context, job, offset, limit int64) ([]LogChunk, int64, error)
	// PruneLogs deletes the logs of jobs that ended before endedBefore and
	// returns how many chunks went.
	PruneLogs(ctx context.Context, endedBefore time.Time) (int64, error)
	// PruneJoinTokens deletes the join tokens that expired before
	// expiredBefore and returns how many went.
	PruneJoinTokens(ctx context.Context, expiredBefore time.Time) (int64, error)
	// SetProgress stores the progress job id reported.
	SetProgress(ctx context.Context, id int64, p Progress) error
	// SetPredictions stores the prediction of each job in ps that is not
	// finished; finished jobs keep theirs.
	SetPredictions(ctx context.Context, ps map[int64]Prediction) error
	// Usage returns the GPU use of every job that started and still held its
	// GPUs at or after since, for fair share.
	Usage(ctx context.Context, since time.Time) ([]UsageRecord, error)
	// LockGPUs locks the rows of these GPUs until the transaction ends, so
	// that two transactions giving the same GPUs to a booking or a job
	// happen one after the other (PostgreSQL; SQLite writers are serialised
	// anyway). The second one then sees what the first one committed.
	LockGPUs(ctx context.Context, ids []int64) error

	// EnsureSetting stores value under name unless a value is there
	// already, and returns the value stored: the first writer wins.
	EnsureSetting(ctx context.Context, name, value string) (string, error)

	// ChatUser returns the link of a chat identity; InsertChatUser stores a
	// new one (CodeConflict when the identity is linked already).
	ChatUser(ctx context.Context, id ChatIdentity) (ChatUser, error)
	InsertChatUser(ctx context.Context, c ChatUser) error
	// SetChatUser points a linked identity at another user; SetChatZone
	// changes its zone.
	SetChatUser(ctx context.Context, id ChatIdentity, user string) error
	SetChatZone(ctx context.Context, id ChatIdentity, zone string) error
	SetChatLang(ctx context.Context, id ChatIdentity, lang string) error
	// ChatUsersOf returns the identities linked to user, by platform, team and ID.
	ChatUsersOf(ctx context.Context, user string) ([]ChatUser, error)

	// Setting returns the value stored under name, found false when there
	// is none; PutSetting stores or replaces it.
	Setting(ctx context.Context, name string) (string, bool, error)
	PutSetting(ctx context.Context, name, value string) error

	// ClaimLease takes the lease name for holder until until, in one
	// statement: it is holder's already (a renewal), or free (none, or
	// expired by now), or it stays another's. It returns the lease as it
	// is afterwards; Term grows by one each time the holder changes.
	ClaimLease(ctx context.Context, name, holder string, now, until time.Time) (Lease, error)
	// ReleaseLease ends holder's lease at now, if it is still theirs.
	ReleaseLease(ctx context.Context, name, holder string, now time.Time) error

	// NotifyPrefs returns a user's notification preferences, the defaults
	// (User set, Zone "UTC") when they set none; SetNotifyPrefs stores them.
	NotifyPrefs(ctx context.Context, user string) (NotifyPrefs, error)
	SetNotifyPrefs(ctx context.Context, p NotifyPrefs) error

	// EventsToFanOut returns up to limit events not yet fanned out, oldest
	// first; inside Update on PostgreSQL it locks them and skips events
	// another transaction holds. MarkFannedOut records that they were.
	EventsToFanOut(ctx context.Context, limit int) ([]Event, error)
	MarkFannedOut(ctx context.Context, ids []int64) error
	// InsertDeliveries stores new deliveries (their Event by ID); one whose
	// DedupKey is already there is skipped.
	InsertDeliveries(ctx context.Context, ds []Delivery) error
	// DueDeliveries returns up to limit deliveries over channels, with their
	// events, that are pending with AvailableAt <= now or sending with
	// ClaimedUntil <= now, earliest first. Inside Update on PostgreSQL it
	// locks them and skips rows another transaction holds.
	DueDeliveries(ctx context.Context, now time.Time, channels []string, limit int) ([]Delivery, error)
	// UpdateDelivery stores d's State, Attempts, AvailableAt, ClaimedUntil,
	// LastError, ProviderID and SentAt, if the stored delivery still has
	// attempts attempts; otherwise another sender claimed it since, and it
	// returns a CodeConflict error and stores nothing.
	UpdateDelivery(ctx context.Context, d Delivery, attempts int) error
	// PruneEvents deletes the events written before before that were
	// fanned out and whose deliveries are all sent or dead, with those
	// deliveries, and returns how many events went.
	PruneEvents(ctx context.Context, before time.Time) (int64, error)
	// Deliveries returns up to limit deliveries with an ID above after, with their events, by ID.
	Deliveries(ctx context.Context, after int64, limit int) ([]Delivery, error)

	// InsertEvents appends events to the outbox; one whose DedupKey is
	// already there is skipped.
	InsertEvents(ctx context.Context, es []Event) error
	// Events returns up to limit events with an ID above after, oldest first.
	Events(ctx context.Context, after int64, limit int) ([]Event, error)
}

// UsageRecord is one job's use of GPUs: GPUs held over [Start, End), where
// End is zero while the job still holds them.
type UsageRecord struct {
	Job     int64
	Project string // "" for none
	GPUs    int
	Start   time.Time
	End     time.Time
}

// AuditFilter selects audit entries, newest first.
type AuditFilter struct {
	Actor  string
	Object string
	Limit  int
}

// IdempotencyRecord is the stored outcome of a request sent with an
// Idempotency-Key: a retry with the same key and the same request gets the
// same response. Status 0 means the first request is still being handled.
type IdempotencyRecord struct {
	User        string
	Key         string
	Fingerprint string // a hash of method, path and body
	Status      int
	Body        []byte
	CreatedAt   time.Time
}

// JoinToken lets agents join the cluster until it expires; only its hash is kept.
type JoinToken struct {
	Hash      string
	CreatedBy string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// LogChunk is a stretch of a job's log: N bytes from Offset, of which Data
// (the first len(Data)) were kept.
type LogChunk struct {
	Offset int64
	N      int64
	Data   []byte
}
