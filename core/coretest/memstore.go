package coretest

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/gpucal/gpucal/core"
)

// MemStore is an in-memory core.Store. It keeps the rules a real database
// keeps (unique names, no two holding slots overlapping on one GPU, no GPU
// held by two holding jobs, unique event dedup keys) and
// answers with the error codes core/store.go documents, so that core's
// Service can be tested without one. It is safe for concurrent use: Update
// transactions run one at a time, Views alongside each other.
//
// Update runs fn on a copy of the data and keeps the copy only when fn
// returns nil, so a failing fn changes nothing. Since transactions never
// race here, an overlap the Service did not catch is reported at once as a
// CodeConflict error, the answer a real store gives once its retries are spent.
//
// Values go in and come out as copies: a caller changing a returned slice
// does not change the store.
type MemStore struct {
	mu sync.RWMutex
	d  *memData
}

type memData struct {
	nodes        []core.Node // sorted by name
	reservations map[int64]core.Reservation
	users        map[string]core.User
	projects     map[string]core.Project // without Members
	members      map[string]map[string]core.Role
	tokens       map[string]core.Token // by hash
	audit        []core.AuditEntry     // oldest first
	jobs         map[int64]core.Job
	events       []core.Event // oldest first
	settings     map[string]string
	credentials  map[int64]string // node ID → the hash of its credential
	joinTokens   map[string]core.JoinToken
	logs         map[int64][]core.LogChunk // by job, in offset order, without gaps
	chat         map[core.ChatIdentity]core.ChatUser
	deliveries   []core.Delivery // by ID
	lastDelivery int64
	fannedOut    map[int64]bool // events the notifier handled
	prefs        map[string]core.NotifyPrefs
	leases       map[string]core.Lease
	webSessions  map[string]core.WebSession // by hash

	lastNode, lastGPU, lastReservation, lastToken, lastAudit, lastJob, lastEvent int64
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore {
	return &MemStore{d: &memData{
		reservations: map[int64]core.Reservation{},
		users:        map[string]core.User{},
		projects:     map[string]core.Project{},
		members:      map[string]map[string]core.Role{},
		tokens:       map[string]core.Token{},
		jobs:         map[int64]core.Job{},
		credentials:  map[int64]string{},
		joinTokens:   map[string]core.JoinToken{},
		logs:         map[int64][]core.LogChunk{},
	}}
}

// View runs fn with read access; writes inside it fail.
func (s *MemStore) View(ctx context.Context, fn func(core.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return fn(&memTx{d: s.d, readOnly: true})
}

// Update runs fn on a copy of the data and commits the copy when fn returns nil.
func (s *MemStore) Update(ctx context.Context, fn func(core.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	work := s.d.clone()
	if err := fn(&memTx{d: work}); err != nil {
		return err
	}
	s.d = work
	return nil
}

// AllSlots returns every slot of every reservation that holds its GPUs,
// ordered by GPU, then start: what tests check invariants on.
func (s *MemStore) AllSlots() []core.Slot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []core.Slot
	for _, r := range s.d.reservations {
		out = append(out, slotsOf(r)...)
	}
	slices.SortFunc(out, func(a, b core.Slot) int {
		return cmp.Or(cmp.Compare(a.GPUID, b.GPUID), a.Start.Compare(b.Start), cmp.Compare(a.Reservation, b.Reservation))
	})
	return out
}

func (d *memData) clone() *memData {
	c := *d
	c.nodes = make([]core.Node, len(d.nodes))
	for i, n := range d.nodes {
		c.nodes[i] = cloneNode(n)
	}
	c.reservations = make(map[int64]core.Reservation, len(d.reservations))
	for id, r := range d.reservations {
		c.reservations[id] = cloneReservation(r)
	}
	c.users = maps.Clone(d.users)
	c.projects = maps.Clone(d.projects)
	c.members = make(map[string]map[string]core.Role, len(d.members))
	for p, m := range d.members {
		c.members[p] = maps.Clone(m)
	}
	c.tokens = maps.Clone(d.tokens)
	c.audit = slices.Clone(d.audit)
	c.jobs = make(map[int64]core.Job, len(d.jobs))
	for id, j := range d.jobs {
		c.jobs[id] = cloneJob(j)
	}
	c.events = slices.Clone(d.events)
	c.credentials = maps.Clone(d.credentials)
	c.joinTokens = maps.Clone(d.joinTokens)
	c.settings = maps.Clone(d.settings)
	c.chat = maps.Clone(d.chat)
	c.deliveries = slices.Clone(d.deliveries)
	c.fannedOut = maps.Clone(d.fannedOut)
	c.prefs = maps.Clone(d.prefs)
	c.leases = maps.Clone(d.leases)
	c.webSessions = maps.Clone(d.webSessions)
	// Chunks are never changed once stored, so their Data may be shared.
	c.logs = make(map[int64][]core.LogChunk, len(d.logs))
	for id, l := range d.logs {
		c.logs[id] = slices.Clone(l)
	}
	return &c
}

func cloneNode(n core.Node) core.Node {
	n.GPUs = slices.Clone(n.GPUs)
	return n
}

func cloneReservation(r core.Reservation) core.Reservation {
	r.GPUs = slices.Clone(r.GPUs)
	return r
}

// slotsOf returns r's slots, none when it no longer holds its GPUs.
func slotsOf(r core.Reservation) []core.Slot {
	if !r.State.Holds() {
		return nil
	}
	out := make([]core.Slot, 0, len(r.GPUs))
	for _, g := range r.GPUs {
		out = append(out, core.Slot{GPUID: g.ID, Reservation: r.ID, Owner: r.Owner, Project: r.Project, Start: r.Start, End: r.End})
	}
	return out
}

// memTx is one View or Update over d.
type memTx struct {
	d        *memData
	readOnly bool
}

var _ core.Store = (*MemStore)(nil)

func (tx *memTx) writable() error {
	if tx.readOnly {
		return fmt.Errorf("coretest: write inside View")
	}
	return nil
}

func (tx *memTx) Nodes(ctx context.Context) ([]core.Node, error) {
	out := make([]core.Node, len(tx.d.nodes))
	for i, n := range tx.d.nodes {
		out[i] = cloneNode(n)
	}
	return out, nil
}

func (tx *memTx) Node(ctx context.Context, name string) (core.Node, error) {
	for _, n := range tx.d.nodes {
		if n.Name == name {
			return cloneNode(n), nil
		}
	}
	return core.Node{}, core.Errorf(core.CodeNotFound, "node %s not found", name)
}

func (tx *memTx) InsertNode(ctx context.Context, n *core.Node) error {
	if err := tx.writable(); err != nil {
		return err
	}
	if err := n.CheckStates(); err != nil {
		return err
	}
	uuids := map[string]bool{}
	for _, o := range tx.d.nodes {
		if o.Name == n.Name {
			return core.Errorf(core.CodeConflict, "node %s already exists", n.Name)
		}
		for _, g := range o.GPUs {
			uuids[g.UUID] = true
		}
	}
	for _, g := range n.GPUs {
		if uuids[g.UUID] {
			return core.Errorf(core.CodeConflict, "GPU %s already belongs to another node", g.UUID)
		}
	}
	tx.d.lastNode++
	n.ID = tx.d.lastNode
	for i := range n.GPUs {
		tx.d.lastGPU++
		n.GPUs[i].ID, n.GPUs[i].NodeID, n.GPUs[i].Node = tx.d.lastGPU, n.ID, n.Name
		if n.GPUs[i].State == "" {
			n.GPUs[i].State = core.GPUUp
		}
	}
	tx.d.nodes = append(tx.d.nodes, cloneNode(*n))
	slices.SortFunc(tx.d.nodes, func(a, b core.Node) int { return cmp.Compare(a.Name, b.Name) })
	return nil
}

func (tx *memTx) Slots(ctx context.Context, from, to time.Time) ([]core.Slot, error) {
	var out []core.Slot
	for _, r := range tx.d.reservations {
		for _, s := range slotsOf(r) {
			if !s.Start.After(to) && !s.End.Before(from) {
				out = append(out, s)
			}
		}
	}
	// Map order must not leak: sort like a database with ORDER BY would.
	slices.SortFunc(out, func(a, b core.Slot) int {
		return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.Reservation, b.Reservation), cmp.Compare(a.GPUID, b.GPUID))
	})
	return out, nil
}

func (tx *memTx) Reservation(ctx context.Context, id int64) (core.Reservation, error) {
	r, ok := tx.d.reservations[id]
	if !ok {
		return core.Reservation{}, core.Errorf(core.CodeNotFound, "reservation %s does not exist", core.ReservationName(id))
	}
	return cloneReservation(r), nil
}

func (tx *memTx) ReservationByKey(ctx context.Context, owner, key string) (core.Reservation, bool, error) {
	for _, r := range tx.d.reservations {
		if r.Owner == owner && r.RequestKey == key && key != "" {
			return cloneReservation(r), true, nil
		}
	}
	return core.Reservation{}, false, nil
}

func (tx *memTx) Reservations(ctx context.Context, f core.ReservationFilter) ([]core.Reservation, error) {
	var out []core.Reservation
	for _, r := range tx.d.reservations {
		switch {
		case f.Owner != "" && r.Owner != f.Owner,
			f.Project != "" && r.Project != f.Project,
			!f.To.IsZero() && !r.Start.Before(f.To),
			!f.From.IsZero() && !r.End.After(f.From),
			len(f.States) > 0 && !slices.Contains(f.States, r.State):
			continue
		}
		out = append(out, cloneReservation(r))
	}
	slices.SortFunc(out, func(a, b core.Reservation) int { return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.ID, b.ID)) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

func (tx *memTx) InsertReservation(ctx context.Context, r *core.Reservation) error {
	if err := tx.writable(); err != nil {
		return err
	}
	if r.RequestKey != "" {
		if _, found, _ := tx.ReservationByKey(ctx, r.Owner, r.RequestKey); found {
			return core.Errorf(core.CodeConflict, "%s already booked with key %q", r.Owner, r.RequestKey)
		}
	}
	if err := tx.checkGPUs(*r); err != nil {
		return err
	}
	tx.d.lastReservation++
	r.ID = tx.d.lastReservation
	if err := tx.checkOverlap(*r); err != nil {
		tx.d.lastReservation--
		r.ID = 0
		return err
	}
	tx.d.reservations[r.ID] = cloneReservation(*r)
	return nil
}

func (tx *memTx) UpdateReservation(ctx context.Context, r core.Reservation) error {
	if err := tx.writable(); err != nil {
		return err
	}
	old, ok := tx.d.reservations[r.ID]
	if !ok {
		return core.Errorf(core.CodeNotFound, "reservation %s does not exist", r.Name())
	}
	old.State, old.End, old.Note, old.UpdatedAt = r.State, r.End, r.Note, r.UpdatedAt
	if !old.End.After(old.Start) {
		return fmt.Errorf("coretest: %s would end (%s) at or before its start (%s)", r.Name(), old.End, old.Start)
	}
	if err := tx.checkOverlap(old); err != nil {
		return err
	}
	tx.d.reservations[r.ID] = old
	return nil
}

// checkGPUs plays the foreign key from slots to GPUs.
func (tx *memTx) checkGPUs(r core.Reservation) error {
	if len(r.GPUs) == 0 {
		return fmt.Errorf("coretest: reservation without GPUs")
	}
	if !r.End.After(r.Start) {
		return fmt.Errorf("coretest: reservation ends (%s) at or before its start (%s)", r.End, r.Start)
	}
	known := map[int64]bool{}
	for _, n := range tx.d.nodes {
		for _, g := range n.GPUs {
			known[g.ID] = true
		}
	}
	for _, g := range r.GPUs {
		if !known[g.ID] {
			return fmt.Errorf("coretest: reservation names GPU %d, which does not exist", g.ID)
		}
	}
	return nil
}

// checkOverlap plays PostgreSQL's exclusion constraint: no two holding slots
// on one GPU may intersect.
func (tx *memTx) checkOverlap(r core.Reservation) error {
	mine := slotsOf(r)
	seen := map[int64]bool{}
	for _, s := range mine {
		if seen[s.GPUID] {
			return core.Errorf(core.CodeConflict, "%s holds GPU %d twice", r.Name(), s.GPUID)
		}
		seen[s.GPUID] = true
	}
	for id, o := range tx.d.reservations {
		if id == r.ID {
			continue
		}
		for _, os := range slotsOf(o) {
			if seen[os.GPUID] && os.Overlaps(r.Start, r.End) {
				return core.Errorf(core.CodeConflict, "GPU %d is already held by %s during %s–%s; try again", os.GPUID, o.Name(), os.Start, os.End)
			}
		}
	}
	return nil
}

func (tx *memTx) User(ctx context.Context, name string) (core.User, error) {
	u, ok := tx.d.users[name]
	if !ok {
		return core.User{}, core.Errorf(core.CodeNotFound, "user %q does not exist", name)
	}
	return u, nil
}

func (tx *memTx) Users(ctx context.Context) ([]core.User, error) {
	out := slices.Collect(maps.Values(tx.d.users))
	slices.SortFunc(out, func(a, b core.User) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

func (tx *memTx) InsertUser(ctx context.Context, u core.User) error {
	if err := tx.writable(); err != nil {
		return err
	}
	if _, ok := tx.d.users[u.Name]; ok {
		return core.Errorf(core.CodeConflict, "user %q already exists", u.Name)
	}
	tx.d.users[u.Name] = u
	return nil
}

// SetEmail implements core.Tx.
func (tx *memTx) SetEmail(ctx context.Context, user, email string) error {
	if err := tx.writable(); err != nil {
		return err
	}
	u, ok := tx.d.users[user]
	if !ok {
		return core.Errorf(core.CodeNotFound, "user %s not found", user)
	}
	u.Email = email
	tx.d.users[user] = u
	return nil
}

func (tx *memTx) SetAdmin(ctx context.Context, user string, admin bool) error {
	if err := tx.writable(); err != nil {
		return err
	}
	u, err := tx.User(ctx, user)
	if err != nil {
		return err
	}
	u.Admin = admin
	tx.d.users[user] = u
	return nil
}

func (tx *memTx) Project(ctx context.Context, name string) (core.Project, error) {
	p, ok := tx.d.projects[name]
	if !ok {
		return core.Project{}, core.Errorf(core.CodeNotFound, "project %q does not exist", name)
	}
	p.Members = tx.membersOf(name)
	return p, nil
}

func (tx *memTx) membersOf(project string) []core.Member {
	var ms []core.Member
	for u, role := range tx.d.members[project] {
		ms = append(ms, core.Member{User: u, Role: role})
	}
	slices.SortFunc(ms, func(a, b core.Member) int { return cmp.Compare(a.User, b.User) })
	return ms
}

func (tx *memTx) Projects(ctx context.Context) ([]core.Project, error) {
	var out []core.Project
	for _, name := range slices.Sorted(maps.Keys(tx.d.projects)) {
		p, _ := tx.Project(ctx, name)
		out = append(out, p)
	}
	return out, nil
}

// InsertProject stores the project alone; members join with SetMember, the
// way Service.AddProject adds them (it checks each user first).
func (tx *memTx) InsertProject(ctx context.Context, p core.Project) error {
	if err := tx.writable(); err != nil {
		return err
	}
	if _, ok := tx.d.projects[p.Name]; ok {
		return core.Errorf(core.CodeConflict, "project %q already exists", p.Name)
	}
	p.Members = nil
	tx.d.projects[p.Name] = p
	return nil
}

func (tx *memTx) SetMember(ctx context.Context, project string, m core.Member) error {
	if err := tx.writable(); err != nil {
		return err
	}
	if _, err := tx.Project(ctx, project); err != nil {
		return err
	}
	if _, err := tx.User(ctx, m.User); err != nil {
		return err
	}
	if tx.d.members[project] == nil {
		tx.d.members[project] = map[string]core.Role{}
	}
	tx.d.members[project][m.User] = m.Role
	return nil
}

func (tx *memTx) Roles(ctx context.Context, user string) (map[string]core.Role, error) {
	roles := map[string]core.Role{}
	for p, ms := range tx.d.members {
		if role, ok := ms[user]; ok {
			roles[p] = role
		}
	}
	return roles, nil
}

func (tx *memTx) InsertToken(ctx context.Context, t *core.Token) error {
	if err := tx.writable(); err != nil {
		return err
	}
	if _, err := tx.User(ctx, t.User); err != nil {
		return err
	}
	if _, ok := tx.d.tokens[t.Hash]; ok {
		return core.Errorf(core.CodeConflict, "that token already exists")
	}
	tx.d.lastToken++
	t.ID = tx.d.lastToken
	tx.d.tokens[t.Hash] = *t
	return nil
}

func (tx *memTx) TokenUser(ctx context.Context, hash string) (core.User, error) {
	t, ok := tx.d.tokens[hash]
	if !ok {
		return core.User{}, core.Errorf(core.CodeNotFound, "no such token")
	}
	return tx.User(ctx, t.User)
}

func (tx *memTx) Audit(ctx context.Context, e core.AuditEntry) error {
	if err := tx.writable(); err != nil {
		return err
	}
	tx.d.lastAudit++
	e.ID = tx.d.lastAudit
	tx.d.audit = append(tx.d.audit, e)
	return nil
}

func (tx *memTx) AuditLog(ctx context.Context, f core.AuditFilter) ([]core.AuditEntry, error) {
	var out []core.AuditEntry
	for _, e := range slices.Backward(tx.d.audit) {
		if (f.Actor == "" || e.Actor == f.Actor) && (f.Object == "" || e.Object == f.Object) {
			out = append(out, e)
			if f.Limit > 0 && len(out) == f.Limit {
				break
			}
		}
	}
	return out, nil
}

var _ core.Tx = (*memTx)(nil)
