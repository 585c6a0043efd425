package core

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// NodeStatus is a node with what each of its GPUs is doing now.
type NodeStatus struct {
	Node
	GPUs []GPUStatus
}

// GPUStatus is a GPU's state at one instant: down, idle, reserved, or
// running (a job holds it, inside a reservation or not).
type GPUStatus struct {
	GPU
	Status      string          // "idle", "reserved" or "down"
	Reservation *ReservationRef // the reservation holding it now, if any
	Next        *ReservationRef // the next reservation on it, if any
	Job         *JobRef         // the job running on it, if any
}

// JobRef names a job holding a GPU.
type JobRef struct {
	ID    string    `json:"id"`
	Owner string    `json:"owner"`
	Name  string    `json:"name,omitempty"`
	Since time.Time `json:"since"`
}

// Nodes lists the inventory with every GPU's state now.
func (s *Service) Nodes(ctx context.Context, a Actor) ([]NodeStatus, error) {
	now := s.Now()
	var nodes []Node
	var slots []Slot
	var jobs []Job
	err := s.store.View(ctx, func(tx Tx) (err error) {
		if nodes, err = tx.Nodes(ctx); err != nil {
			return err
		}
		if jobs, err = tx.Jobs(ctx, JobFilter{States: holdingStates}); err != nil {
			return err
		}
		slots, err = tx.Slots(ctx, now, now.Add(s.policy.Horizon))
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(slots, func(a, b Slot) int {
		return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.Reservation, b.Reservation))
	})
	byGPU := map[int64][]Slot{}
	for _, sl := range slots {
		byGPU[sl.GPUID] = append(byGPU[sl.GPUID], sl)
	}
	holder := map[int64]*JobRef{}
	for _, j := range jobs {
		for _, g := range j.Assigned {
			holder[g.ID] = &JobRef{ID: JobName(j.ID), Owner: j.Owner, Name: j.Name, Since: j.StartedAt}
		}
	}
	out := make([]NodeStatus, 0, len(nodes))
	for _, n := range nodes {
		ns := NodeStatus{Node: n}
		for _, g := range n.GPUs {
			st := GPUStatus{GPU: g, Status: "idle"}
			for _, sl := range byGPU[g.ID] {
				ref := &ReservationRef{ID: ReservationName(sl.Reservation), Owner: sl.Owner, Project: sl.Project, Start: sl.Start, End: sl.End}
				if sl.Overlaps(now, now.Add(time.Second)) && st.Reservation == nil {
					st.Reservation, st.Status = ref, "reserved"
				} else if sl.Start.After(now) && st.Next == nil {
					st.Next = ref
				}
			}
			if st.Job = holder[g.ID]; st.Job != nil {
				st.Status = "running"
			}
			if g.State == GPUDown || g.Fault != "" || n.State == NodeDown {
				st.Status = "down"
			}
			ns.GPUs = append(ns.GPUs, st)
		}
		out = append(out, ns)
	}
	return out, nil
}

// GPURefs returns every GPU by ID, so that the edges can name the GPUs a
// prediction plans (predictions carry GPU IDs only).
func (s *Service) GPURefs(ctx context.Context, a Actor) (map[int64]GPURef, error) {
	var nodes []Node
	if err := s.store.View(ctx, func(tx Tx) (err error) { nodes, err = tx.Nodes(ctx); return err }); err != nil {
		return nil, err
	}
	out := map[int64]GPURef{}
	for _, g := range allGPUs(nodes) {
		out[g.ID] = g.Ref()
	}
	return out, nil
}

// AddNode adds a node with its GPUs to the inventory (admins only).
func (s *Service) AddNode(ctx context.Context, a Actor, n Node) (Node, error) {
	if !a.Admin {
		return Node{}, Errorf(CodeForbidden, "only admins may add nodes")
	}
	if err := n.Validate(); err != nil {
		return Node{}, err
	}
	now := s.Now()
	n.CreatedAt = now
	slices.SortFunc(n.GPUs, func(x, y GPU) int { return cmp.Compare(x.Index, y.Index) })
	err := s.store.Update(ctx, func(tx Tx) error {
		if err := tx.InsertNode(ctx, &n); err != nil {
			return err
		}
		return tx.Audit(ctx, AuditEntry{At: now, Actor: a.User, Action: "node.add", Object: "node/" + n.Name,
			Detail: fmt.Sprintf("%d GPU(s) %s", len(n.GPUs), n.GPUs[0].Model())})
	})
	return n, err
}

// AddUser creates a user (admins only).
func (s *Service) AddUser(ctx context.Context, a Actor, u User) (User, error) {
	if !a.Admin {
		return User{}, Errorf(CodeForbidden, "only admins may add users")
	}
	if err := ValidName("user", u.Name); err != nil {
		return User{}, err
	}
	now := s.Now()
	u.CreatedAt = now
	err := s.store.Update(ctx, func(tx Tx) error {
		if err := tx.InsertUser(ctx, u); err != nil {
			return err
		}
		return tx.Audit(ctx, AuditEntry{At: now, Actor: a.User, Action: "user.add", Object: "user/" + u.Name, Detail: fmt.Sprintf("admin=%t", u.Admin)})
	})
	return u, err
}

// Users lists the users.
func (s *Service) Users(ctx context.Context, a Actor) ([]User, error) {
	var us []User
	err := s.store.View(ctx, func(tx Tx) (err error) { us, err = tx.Users(ctx); return err })
	return us, err
}

// AddProject creates a project with its members (admins only).
func (s *Service) AddProject(ctx context.Context, a Actor, p Project) (Project, error) {
	if !a.Admin {
		return Project{}, Errorf(CodeForbidden, "only admins may add projects")
	}
	if err := ValidName("project", p.Name); err != nil {
		return Project{}, err
	}
	for i, m := range p.Members {
		if m.Role == "" {
			p.Members[i].Role = RoleMember
		} else if m.Role != RoleMember && m.Role != RoleAdmin {
			return Project{}, Errorf(CodeInvalid, "role %q must be %q or %q", m.Role, RoleMember, RoleAdmin)
		}
	}
	now := s.Now()
	p.CreatedAt = now
	err := s.store.Update(ctx, func(tx Tx) error {
		if err := tx.InsertProject(ctx, p); err != nil {
			return err
		}
		for _, m := range p.Members {
			if _, err := tx.User(ctx, m.User); err != nil {
				if ErrorCode(err) == CodeNotFound {
					return Errorf(CodeInvalid, "user %q does not exist", m.User)
				}
				return err
			}
			if err := tx.SetMember(ctx, p.Name, m); err != nil {
				return err
			}
		}
		return tx.Audit(ctx, AuditEntry{At: now, Actor: a.User, Action: "project.add", Object: "project/" + p.Name,
			Detail: fmt.Sprintf("%d member(s)", len(p.Members))})
	})
	return p, err
}

// SetMember adds a user to a project or changes their role: site admins and
// the project's admins may.
func (s *Service) SetMember(ctx context.Context, a Actor, project string, m Member) error {
	if m.Role == "" {
		m.Role = RoleMember
	}
	if m.Role != RoleMember && m.Role != RoleAdmin {
		return Errorf(CodeInvalid, "role %q must be %q or %q", m.Role, RoleMember, RoleAdmin)
	}
	if !a.Admin && a.Roles[project] != RoleAdmin {
		return Errorf(CodeForbidden, "only admins of project %s may change its members", project)
	}
	now := s.Now()
	return s.store.Update(ctx, func(tx Tx) error {
		if _, err := tx.Project(ctx, project); err != nil {
			return err
		}
		if _, err := tx.User(ctx, m.User); err != nil {
			return err
		}
		if err := tx.SetMember(ctx, project, m); err != nil {
			return err
		}
		return tx.Audit(ctx, AuditEntry{At: now, Actor: a.User, Action: "project.member", Object: "project/" + project, Detail: m.User + " " + string(m.Role)})
	})
}

// Projects lists the projects with their members.
func (s *Service) Projects(ctx context.Context, a Actor) ([]Project, error) {
	var ps []Project
	err := s.store.View(ctx, func(tx Tx) (err error) { ps, err = tx.Projects(ctx); return err })
	return ps, err
}

// CreateToken issues an API token for user and returns it; only its hash is
// kept. Admins may issue tokens for anyone, creating the user when missing
// and making them an admin when admin is set; users only for themselves.
func (s *Service) CreateToken(ctx context.Context, a Actor, user, name string, admin bool) (string, error) {
	if user == "" {
		user = a.User
	}
	if (user != a.User || admin) && !a.Admin {
		return "", Errorf(CodeForbidden, "only admins may create tokens for other users or admin tokens")
	}
	if err := ValidName("user", user); err != nil {
		return "", err
	}
	if len(name) > 100 {
		return "", Errorf(CodeInvalid, "the token name is longer than 100 characters")
	}
	plain, hash := NewToken()
	now := s.Now()
	err := s.store.Update(ctx, func(tx Tx) error {
		if err := s.ensureUser(ctx, tx, a, user, admin, now); err != nil {
			return err
		}
		if err := tx.InsertToken(ctx, &Token{User: user, Name: name, Hash: hash, CreatedAt: now}); err != nil {
			return err
		}
		return tx.Audit(ctx, AuditEntry{At: now, Actor: a.User, Action: "token.create", Object: "user/" + user, Detail: name})
	})
	if err != nil {
		return "", err
	}
	return plain, nil
}

// ensureUser creates user if missing and grants admin when asked.
func (s *Service) ensureUser(ctx context.Context, tx Tx, a Actor, user string, admin bool, now time.Time) error {
	u, err := tx.User(ctx, user)
	switch {
	case ErrorCode(err) == CodeNotFound:
		if err := tx.InsertUser(ctx, User{Name: user, Admin: admin, CreatedAt: now}); err != nil {
			return err
		}
		return tx.Audit(ctx, AuditEntry{At: now, Actor: a.User, Action: "user.add", Object: "user/" + user, Detail: fmt.Sprintf("admin=%t", admin)})
	case err != nil:
		return err
	case admin && !u.Admin:
		if err := tx.SetAdmin(ctx, user, true); err != nil {
			return err
		}
		return tx.Audit(ctx, AuditEntry{At: now, Actor: a.User, Action: "user.admin", Object: "user/" + user, Detail: "admin=true"})
	}
	return nil
}

// InstallToken makes plain a valid token of admin user "admin" (creating
// the user when missing). It is how GPUCAL_BOOTSTRAP_TOKEN and the first
// start give automation and the operator a way in. Installing the same
// token again changes nothing.
func (s *Service) InstallToken(ctx context.Context, user, plain string) error {
	if len(plain) < 2 {
		return Errorf(CodeInvalid, "a bootstrap token must not be empty")
	}
	if err := ValidName("user", user); err != nil {
		return err
	}
	now := s.Now()
	return s.store.Update(ctx, func(tx Tx) error {
		if err := s.ensureUser(ctx, tx, System, user, true, now); err != nil {
			return err
		}
		if u, err := tx.TokenUser(ctx, HashToken(plain)); err == nil {
			if u.Name != user {
				return Errorf(CodeConflict, "that token already belongs to %s", u.Name)
			}
			return nil
		} else if ErrorCode(err) != CodeNotFound {
			return err
		}
		if err := tx.InsertToken(ctx, &Token{User: user, Name: "bootstrap", Hash: HashToken(plain), CreatedAt: now}); err != nil {
			return err
		}
		return tx.Audit(ctx, AuditEntry{At: now, Actor: System.User, Action: "token.install", Object: "user/" + user})
	})
}

// HasAdmin reports whether any admin user exists (first start creates one).
func (s *Service) HasAdmin(ctx context.Context) (bool, error) {
	var found bool
	err := s.store.View(ctx, func(tx Tx) error {
		us, err := tx.Users(ctx)
		found = slices.ContainsFunc(us, func(u User) bool { return u.Admin })
		return err
	})
	return found, err
}

// Authenticate returns the actor a token stands for.
func (s *Service) Authenticate(ctx context.Context, token string) (Actor, error) {
	if token == "" {
		return Actor{}, Errorf(CodeUnauthorized, "an API token is required (Authorization: Bearer …)")
	}
	var a Actor
	err := s.store.View(ctx, func(tx Tx) error {
		u, err := tx.TokenUser(ctx, HashToken(token))
		if ErrorCode(err) == CodeNotFound {
			return Errorf(CodeUnauthorized, "the API token is not valid")
		}
		if err != nil {
			return err
		}
		roles, err := tx.Roles(ctx, u.Name)
		a = Actor{User: u.Name, Admin: u.Admin, Roles: roles}
		return err
	})
	return a, err
}

// AuditLog lists recent changes (admins only), newest first.
func (s *Service) AuditLog(ctx context.Context, a Actor, f AuditFilter) ([]AuditEntry, error) {
	if !a.Admin {
		return nil, Errorf(CodeForbidden, "only admins may read the audit log")
	}
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 100
	}
	var es []AuditEntry
	err := s.store.View(ctx, func(tx Tx) (err error) { es, err = tx.AuditLog(ctx, f); return err })
	return es, err
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
