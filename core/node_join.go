package core

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
)

// NodePolicy is how the server hears from agents.
type NodePolicy struct {
	// Interval is how often agents send heartbeats.
	Interval time.Duration
	// SuspectAfter missed heartbeats make a node suspect: nothing new
	// starts there.
	SuspectAfter int
	// DownAfter without a heartbeat makes a node down: its jobs fail and
	// nothing is planned there until it is heard from again.
	DownAfter time.Duration
	// Drain spaces the steps of every drain and stop.
	Drain DrainTiming
	// MaxLog is how many bytes of each job's log the server keeps; the
	// rest is counted, not kept (the node keeps the whole file).
	MaxLog int64
	// KillForeign: agents stop processes gpucal did not start on GPUs a
	// window holds, at the window's start (DesiredState.KillForeign).
	KillForeign bool
	// LogRetention is how long the server keeps a job's log after the job
	// ended (Prune); 0 keeps logs for ever.
	LogRetention time.Duration
}

// DefaultNodePolicy is what a site gets unless it configures otherwise.
var DefaultNodePolicy = NodePolicy{
	Interval:     5 * time.Second,
	SuspectAfter: 3,
	DownAfter:    5 * time.Minute,
	Drain:        DefaultDrainTiming,
	MaxLog:       64 << 20,
	LogRetention: 30 * 24 * time.Hour,
}

// Check refuses a policy that cannot work.
func (p NodePolicy) Check() error {
	switch {
	case p.Interval < 100*time.Millisecond:
		return Errorf(CodeInvalid, "the heartbeat interval must be at least 100ms, not %s", p.Interval)
	case p.SuspectAfter < 1:
		return Errorf(CodeInvalid, "a node is suspect after at least one missed heartbeat")
	case p.DownAfter <= time.Duration(p.SuspectAfter)*p.Interval:
		return Errorf(CodeInvalid, "a node must be suspect (after %s) before it is down (after %s)",
			time.Duration(p.SuspectAfter)*p.Interval, p.DownAfter)
	case p.MaxLog < 0:
		return Errorf(CodeInvalid, "the log limit must not be negative")
	case p.LogRetention < 0:
		return Errorf(CodeInvalid, "the log retention must not be negative")
	}
	return p.Drain.Check()
}

// Health is the state a node with an agent should be in at now, given its
// last heartbeat. since is when this server started: a node is never
// counted silent for longer than the server has been listening, so a
// restarted server does not mark the fleet down.
func (p NodePolicy) Health(lastSeen, since, now time.Time) NodeState {
	heard := lastSeen
	if since.After(heard) {
		heard = since
	}
	// Instants are kept to the second (Service.Now): a node heard at
	// 12:00:00.9 reads 12:00:00. Only silence longer than that rounding
	// counts, so a fast heartbeat never flaps to suspect.
	silent := now.Sub(heard) - time.Second
	switch {
	case silent >= p.DownAfter:
		return NodeDown
	case silent >= time.Duration(p.SuspectAfter)*p.Interval:
		return NodeSuspect
	}
	return NodeReady
}

// The prefixes of the secrets agents hold, so that secret scanners can
// tell them from API tokens.
const (
	joinTokenPrefix  = "gpucal_join_"
	credentialPrefix = "gpucal_node_"
)

func newSecret(prefix string) (plain, hash string) {
	b := make([]byte, 24)
	rand.Read(b) // never fails on supported platforms (crypto/rand docs)
	plain = prefix + hex.EncodeToString(b)
	return plain, HashToken(plain)
}

// Join token lifetimes.
const (
	DefaultJoinTTL = 24 * time.Hour
	maxJoinTTL     = 30 * 24 * time.Hour
)

// CreateJoinToken issues a join token valid for ttl (admins only). Any
// number of agents may join with it until it expires; each exchanges it
// once for a credential of its own.
func (s *Service) CreateJoinToken(ctx context.Context, a Actor, ttl time.Duration) (string, time.Time, error) {
	if !a.Admin {
		return "", time.Time{}, Errorf(CodeForbidden, "only admins may create join tokens")
	}
	if ttl == 0 {
		ttl = DefaultJoinTTL
	}
	if ttl < time.Minute || ttl > maxJoinTTL {
		return "", time.Time{}, Errorf(CodeInvalid, "a join token lives between 1 minute and %s, not %s", fmtDuration(maxJoinTTL), ttl)
	}
	now := s.Now()
	plain, hash := newSecret(joinTokenPrefix)
	t := JoinToken{Hash: hash, CreatedBy: a.User, CreatedAt: now, ExpiresAt: now.Add(ttl)}
	err := s.store.Update(ctx, func(tx Tx) error {
		if err := tx.InsertJoinToken(ctx, t); err != nil {
			return err
		}
		return tx.Audit(ctx, AuditEntry{At: now, Actor: a.User, Action: "node.join_token", Object: "join-token/" + hash[:8],
			Detail: "expires " + fmtTime(t.ExpiresAt)})
	})
	if err != nil {
		return "", time.Time{}, err
	}
	return plain, t.ExpiresAt, nil
}

// Join exchanges a join token for a node credential: the node hb names
// enters the inventory with the GPUs hb lists (or, when it is there
// already, its GPUs are brought in line: new UUIDs are added, missing ones
// taken out of service), and any credential it had before stops working.
// Only the credential's hash is kept; the agent stores the credential.
func (s *Service) Join(ctx context.Context, joinToken string, hb Heartbeat) (Node, string, error) {
	if !strings.HasPrefix(joinToken, joinTokenPrefix) {
		return Node{}, "", Errorf(CodeUnauthorized, "that is not a join token; `gpucal node join-token` makes one")
	}
	if err := hb.Check(hb.Node); err != nil {
		return Node{}, "", err
	}
	now := s.Now()
	fresh := Node{Name: hb.Node}
	for _, g := range hb.GPUs {
		fresh.GPUs = append(fresh.GPUs, GPU{Index: g.Index, Name: g.Name, MemoryMiB: g.MemoryMiB, UUID: g.UUID})
	}
	if err := fresh.Validate(); err != nil {
		return Node{}, "", err
	}
	plain, hash := newSecret(credentialPrefix)
	var out Node
	err := s.store.Update(ctx, func(tx Tx) error {
		t, err := tx.JoinToken(ctx, HashToken(joinToken))
		if ErrorCode(err) == CodeNotFound {
			return Errorf(CodeUnauthorized, "the join token is not valid")
		}
		if err != nil {
			return err
		}
		if !now.Before(t.ExpiresAt) {
			return Errorf(CodeUnauthorized, "the join token expired at %s; ask an admin for a new one", fmtTime(t.ExpiresAt))
		}
		n, found, err := nodeNamed(ctx, tx, hb.Node)
		if err != nil {
			return err
		}
		action := "node.join"
		if found {
			if n, err = lockedNode(ctx, tx, hb.Node); err != nil {
				return err
			}
			if err := s.mayRejoin(ctx, tx, n, now); err != nil {
				return err
			}
			action = "node.rejoin"
		} else {
			n = fresh
			n.CreatedAt = now
			if err := tx.InsertNode(ctx, &n); err != nil {
				return err
			}
		}
		before := n
		n.GPUs = syncGPUs(n.GPUs, fresh.GPUs)
		n.State, n.LastSeen, n.Agent, n.NVML = NodeReady, now, hb.Agent, hb.NVML
		if err := renumber(ctx, tx, &before, &n); err != nil {
			return err
		}
		if err := tx.SetNodeCredential(ctx, n.ID, hash); err != nil {
			return err
		}
		out = n
		return tx.Audit(ctx, AuditEntry{At: now, Actor: "node/" + n.Name, Action: action, Object: "node/" + n.Name,
			Detail: fmt.Sprintf("%d GPU(s), agent %s, join token %s", len(hb.GPUs), hb.Agent, t.Hash[:8])})
	})
	if err != nil {
		return Node{}, "", err
	}
	return out, plain, nil
}

// mayRejoin refuses a join under the name of a node whose agent is alive
// (heard from within DownAfter) or that runs jobs: a second host with the
// same name, or a rogue one, would take over its credential and be sent
// its jobs. A node added by hand, or one down with nothing on it, may be
// joined (a re-installed agent waits until its old self is down).
func (s *Service) mayRejoin(ctx context.Context, tx Tx, n Node, now time.Time) error {
	if n.Managed() && n.State != NodeDown && now.Sub(n.LastSeen) < s.nodes.DownAfter {
		return Errorf(CodeConflict, "node %s has an agent that answered %s ago; a second host cannot join under its name (stop that agent, or choose another --name; a re-installed node may join once %s is down)",
			n.Name, now.Sub(n.LastSeen).Round(time.Second), n.Name)
	}
	holding, err := tx.Jobs(ctx, JobFilter{States: holdingStates})
	if err != nil {
		return err
	}
	for _, j := range holding {
		if slicesContainsNode(j.Assigned, n.Name) {
			return Errorf(CodeConflict, "node %s still has %s on it; it may join again once that has ended", n.Name, JobName(j.ID))
		}
	}
	return nil
}

// syncGPUs brings a known node's GPUs in line with what its agent found:
// a GPU whose UUID the agent lists keeps its ID (and service state) with
// the agent's index, name and memory; a GPU an admin added by hand (with a
// placeholder UUID), or one replaced since, takes the UUID the agent finds
// at its index; any other UUID is a new GPU (ID 0); a known GPU the agent
// no longer lists is taken out of service.
func syncGPUs(known, found []GPU) []GPU {
	byUUID, byIndex := map[string]int{}, map[int]int{}
	for i, g := range known {
		byUUID[g.UUID], byIndex[g.Index] = i, i
	}
	foundUUID := map[string]bool{}
	for _, f := range found {
		foundUUID[f.UUID] = true
	}
	used := map[int]bool{}
	out := make([]GPU, 0, len(known)+len(found))
	for _, f := range found {
		i, ok := byUUID[f.UUID]
		if !ok {
			i, ok = byIndex[f.Index]
			ok = ok && !foundUUID[known[i].UUID] && !used[i]
		}
		if !ok {
			out = append(out, f)
			continue
		}
		used[i] = true
		g := known[i]
		g.Index, g.Name, g.MemoryMiB, g.UUID = f.Index, f.Name, f.MemoryMiB, f.UUID
		out = append(out, g)
	}
	taken := map[int]bool{}
	for _, g := range out {
		taken[g.Index] = true
	}
	spare := maxGPUsPerNode // GPUs that are gone keep their rows, at indexes past any real one
	for i, g := range known {
		if !used[i] {
			if g.Fault == "" {
				g.Fault = "its agent no longer finds it"
			}
			if taken[g.Index] {
				for taken[spare] {
					spare++
				}
				g.Index = spare
			}
			taken[g.Index] = true
			out = append(out, g)
		}
	}
	return out
}

// renumber stores n, whose known GPUs may have changed indexes among
// themselves (a card removed, the rest shifted): first every GPU whose
// index changes is moved out of the way, then all take their new ones, so
// that no two GPUs hold one index in between.
func renumber(ctx context.Context, tx Tx, before, n *Node) error {
	was := map[int64]int{}
	for _, g := range before.GPUs {
		was[g.ID] = g.Index
	}
	moved := *n
	moved.GPUs = slices.Clone(n.GPUs)
	changed := false
	for i, g := range moved.GPUs {
		if idx, ok := was[g.ID]; ok && idx != g.Index {
			moved.GPUs[i].Index = 1<<20 + i
			changed = true
		}
	}
	if changed {
		moved.GPUs = slices.DeleteFunc(moved.GPUs, func(g GPU) bool { return g.ID == 0 })
		if err := tx.UpdateNode(ctx, &moved); err != nil {
			return err
		}
	}
	return tx.UpdateNode(ctx, n)
}

func nodeNamed(ctx context.Context, tx Tx, name string) (Node, bool, error) {
	n, err := tx.Node(ctx, name)
	switch {
	case ErrorCode(err) == CodeNotFound:
		return Node{}, false, nil
	case err != nil:
		return Node{}, false, err
	}
	return n, true, nil
}

// AuthenticateNode returns the name of the node a credential belongs to.
func (s *Service) AuthenticateNode(ctx context.Context, credential string) (string, error) {
	if !strings.HasPrefix(credential, credentialPrefix) {
		return "", Errorf(CodeUnauthorized, "a node credential is required (Authorization: Bearer gpucal_node_…)")
	}
	var name string
	err := s.store.View(ctx, func(tx Tx) error {
		n, err := tx.NodeByCredential(ctx, HashToken(credential))
		if ErrorCode(err) == CodeNotFound {
			return Errorf(CodeUnauthorized, "the node credential is not valid; join again with a join token")
		}
		name = n.Name
		return err
	})
	return name, err
}

// NodeCheck says what one CheckNodes did.
type NodeCheck struct {
	Suspect, Down, Ready []string // nodes that changed to each state
	Failed               []int64  // jobs failed because their node went down
}

// CheckNodes moves nodes whose agents fell silent to suspect and then down
// (and back is the heartbeat's business), failing the jobs of a node that
// went down. since is when this server started listening (see
// NodePolicy.Health). Admins hear of every node that goes down.
func (s *Service) CheckNodes(ctx context.Context, since time.Time) (NodeCheck, error) {
	now := s.Now()
	var out NodeCheck
	// It runs every heartbeat interval: look first without a write
	// transaction, which is all it takes while every agent answers.
	changes := false
	err := s.store.View(ctx, func(tx Tx) error {
		nodes, err := tx.Nodes(ctx)
		changes = slices.ContainsFunc(nodes, func(n Node) bool { return n.Managed() && s.nodeChanges(n, since, now) })
		return err
	})
	if err != nil || !changes {
		return out, err
	}
	err = s.store.Update(ctx, func(tx Tx) error {
		out = NodeCheck{}
		nodes, err := tx.Nodes(ctx)
		if err != nil {
			return err
		}
		var events []Event
		for _, n := range nodes {
			if !n.Managed() || !s.nodeChanges(n, since, now) {
				continue
			}
			if n, err = lockedNode(ctx, tx, n.Name); err != nil {
				return err
			}
			if !s.nodeChanges(n, since, now) { // a heartbeat came meanwhile
				continue
			}
			h := s.nodes.Health(n.LastSeen, since, now)
			was := n.State
			n.State = h
			if err := tx.UpdateNode(ctx, &n); err != nil {
				return err
			}
			detail := fmt.Sprintf("%s → %s: no heartbeat since %s", was, h, fmtTime(n.LastSeen))
			if err := tx.Audit(ctx, AuditEntry{At: now, Actor: System.User, Action: "node." + string(h), Object: "node/" + n.Name, Detail: detail}); err != nil {
				return err
			}
			if h == NodeSuspect {
				out.Suspect = append(out.Suspect, n.Name)
				continue
			}
			out.Down = append(out.Down, n.Name)
			events = append(events, Event{Kind: EventNodeDown, User: Admins, At: now,
				Detail:   fmt.Sprintf("Node %s is down: no heartbeat since %s. Its jobs are marked failed.", n.Name, fmtTime(n.LastSeen)),
				Data:     map[string]string{DataNode: n.Name, DataSince: stampData(n.LastSeen)},
				DedupKey: fmt.Sprintf("node_down:%s:%d", n.Name, n.LastSeen.Unix())})
			failed, evs, err := failJobsOn(ctx, tx, n.Name, now, s.nodes.Drain.Grace, fmt.Sprintf("node %s stopped answering (last heartbeat %s)", n.Name, fmtTime(n.LastSeen)))
			if err != nil {
				return err
			}
			out.Failed = append(out.Failed, failed...)
			events = append(events, evs...)
		}
		return tx.InsertEvents(ctx, events)
	})
	return out, err
}

// nodeChanges reports whether CheckNodes would move n to another state.
func (s *Service) nodeChanges(n Node, since, now time.Time) bool {
	h := s.nodes.Health(n.LastSeen, since, now)
	return h != n.State && h != NodeReady && !(h == NodeSuspect && n.State == NodeDown)
}

// failJobsOn ends each job's part on node, which went down: a job with no
// other part ends failed (or cancelled, if it was being cancelled); the
// other parts of a gang are stopped first, and it ends once they have.
// It returns the jobs it changed.
func failJobsOn(ctx context.Context, tx Tx, node string, now time.Time, grace time.Duration, why string) ([]int64, []Event, error) {
	holding, err := tx.Jobs(ctx, JobFilter{States: holdingStates})
	if err != nil {
		return nil, nil, err
	}
	var ids []int64
	var events []Event
	for _, h := range holding {
		if !slicesContainsNode(h.Assigned, node) {
			continue
		}
		// Read again: Job locks the row on PostgreSQL, so a heartbeat that
		// committed meanwhile is not written over.
		j, err := tx.Job(ctx, h.ID)
		if err != nil {
			return nil, nil, err
		}
		if !j.State.Holding() {
			continue
		}
		// LogDone: no more of its log is coming from a node that is gone.
		part := NodeRun{Node: node, JobReport: JobReport{Job: j.ID, State: RunExited, ExitCode: -1, EndedAt: now, Error: why, LogDone: true}}
		j.Runs = setRun(j.Runs, part)
		partEnded(&j, part, now, grace)
		if err := tx.UpdateJob(ctx, j); err != nil {
			return nil, nil, err
		}
		action := "job.stop"
		if j.State.Finished() {
			action = "job." + string(j.State)
			events = append(events, finishedEvent(j, now, why))
		}
		if err := tx.Audit(ctx, AuditEntry{At: now, Actor: System.User, Action: action, Object: JobName(j.ID), Detail: why}); err != nil {
			return nil, nil, err
		}
		ids = append(ids, j.ID)
	}
	return ids, events, nil
}

func slicesContainsNode(gpus []GPURef, node string) bool {
	for _, g := range gpus {
		if g.Node == node {
			return true
		}
	}
	return false
}

// setRun replaces node's run in runs, or adds it.
func setRun(runs []NodeRun, r NodeRun) []NodeRun {
	for i := range runs {
		if runs[i].Node == r.Node {
			runs[i] = r
			return runs
		}
	}
	return append(runs, r)
}

// ClearFault puts GPU index of node back in service (admins only), once
// the cause of its fault is dealt with: the node rebooted after an XID, a
// stray process is gone. The agent repeating the fault it already
// reported does not take the GPU out again; a new one does.
func (s *Service) ClearFault(ctx context.Context, a Actor, node string, index int) (GPU, error) {
	if !a.Admin {
		return GPU{}, Errorf(CodeForbidden, "only admins may put a GPU back in service")
	}
	now := s.Now()
	var out GPU
	err := s.store.Update(ctx, func(tx Tx) error {
		n, err := lockedNode(ctx, tx, node)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(n.GPUs, func(g GPU) bool { return g.Index == index })
		if i < 0 {
			return Errorf(CodeNotFound, "node %s has no GPU %d", node, index)
		}
		g := &n.GPUs[i]
		if g.Fault == "" {
			return Errorf(CodeInvalid, "GPU %s is in service already", g.Label())
		}
		was := g.Fault
		g.Fault = ""
		if err := tx.UpdateNode(ctx, &n); err != nil {
			return err
		}
		out = *g
		return tx.Audit(ctx, AuditEntry{At: now, Actor: a.User, Action: "gpu.clear_fault", Object: "gpu/" + g.Label(), Detail: "was: " + was})
	})
	return out, err
}
