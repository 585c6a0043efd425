package coretest

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/gpucal/gpucal/core"
)

// The node agent half of memTx: node updates, credentials and join tokens.

// node returns the index of node id in tx.d.nodes, -1 when there is none.
func (tx *memTx) node(id int64) int {
	return slices.IndexFunc(tx.d.nodes, func(n core.Node) bool { return n.ID == id })
}

// UpdateNode stores n's agent fields and its GPUs' Name, MemoryMiB, State,
// Fault and Telemetry; a GPU with ID 0 is added, with the store's unique
// UUID and (node, index) rules.
func (tx *memTx) UpdateNode(ctx context.Context, n *core.Node) error {
	if err := tx.writable(); err != nil {
		return err
	}
	if err := n.CheckStates(); err != nil {
		return err
	}
	i := tx.node(n.ID)
	if i < 0 {
		if n.Name == "" {
			return core.Errorf(core.CodeNotFound, "node #%d not found", n.ID)
		}
		return core.Errorf(core.CodeNotFound, "node %s not found", n.Name)
	}
	stored := &tx.d.nodes[i]
	stored.State, stored.LastSeen, stored.Agent, stored.NVML = n.State, n.LastSeen, n.Agent, n.NVML
	for k := range n.GPUs {
		g := &n.GPUs[k]
		if g.ID == 0 {
			if err := tx.addGPU(stored, g); err != nil {
				return err
			}
			continue
		}
		j := slices.IndexFunc(stored.GPUs, func(o core.GPU) bool { return o.ID == g.ID })
		if j < 0 {
			return core.Errorf(core.CodeNotFound, "GPU %d of node %s not found", g.ID, stored.Name)
		}
		for _, other := range tx.d.nodes {
			for _, og := range other.GPUs {
				if og.ID != g.ID && (og.UUID == g.UUID || other.ID == stored.ID && og.Index == g.Index) {
					return core.Errorf(core.CodeConflict, "GPU %s/%d (%s) already exists", other.Name, og.Index, og.UUID)
				}
			}
		}
		o := &stored.GPUs[j]
		o.Index, o.UUID, o.Name, o.MemoryMiB, o.State, o.Fault, o.Telemetry = g.Index, g.UUID, g.Name, g.MemoryMiB, g.State, g.Fault, g.Telemetry
	}
	slices.SortFunc(stored.GPUs, func(a, b core.GPU) int { return a.Index - b.Index })
	return nil
}

// addGPU adds g to node, filling in its ID, NodeID, Node and State.
func (tx *memTx) addGPU(node *core.Node, g *core.GPU) error {
	for _, o := range tx.d.nodes {
		for _, og := range o.GPUs {
			if og.UUID == g.UUID {
				return core.Errorf(core.CodeConflict, "GPU UUID %s already exists", g.UUID)
			}
		}
	}
	if slices.ContainsFunc(node.GPUs, func(o core.GPU) bool { return o.Index == g.Index }) {
		return core.Errorf(core.CodeConflict, "GPU %s/%d already exists", node.Name, g.Index)
	}
	if g.State == "" {
		g.State = core.GPUUp
	}
	tx.d.lastGPU++
	g.ID, g.NodeID, g.Node = tx.d.lastGPU, node.ID, node.Name
	node.GPUs = append(node.GPUs, *g)
	slices.SortFunc(node.GPUs, func(a, b core.GPU) int { return cmp.Compare(a.Index, b.Index) })
	return nil
}

// SetNodeCredential replaces node id's credential hash; "" removes it.
func (tx *memTx) SetNodeCredential(ctx context.Context, id int64, hash string) error {
	if err := tx.writable(); err != nil {
		return err
	}
	if tx.node(id) < 0 {
		return core.Errorf(core.CodeNotFound, "node #%d not found", id)
	}
	for other, h := range tx.d.credentials {
		if other != id && h == hash && hash != "" {
			return core.Errorf(core.CodeConflict, "that credential already belongs to another node")
		}
	}
	if hash == "" {
		delete(tx.d.credentials, id)
	} else {
		tx.d.credentials[id] = hash
	}
	return nil
}

func (tx *memTx) NodeByCredential(ctx context.Context, hash string) (core.Node, error) {
	for id, h := range tx.d.credentials {
		if h == hash {
			return cloneNode(tx.d.nodes[tx.node(id)]), nil
		}
	}
	return core.Node{}, core.Errorf(core.CodeNotFound, "node credential not found")
}

func (tx *memTx) InsertJoinToken(ctx context.Context, t core.JoinToken) error {
	if err := tx.writable(); err != nil {
		return err
	}
	if _, ok := tx.d.users[t.CreatedBy]; !ok {
		return core.Errorf(core.CodeNotFound, "user %s not found", t.CreatedBy)
	}
	if _, ok := tx.d.joinTokens[t.Hash]; ok {
		return core.Errorf(core.CodeConflict, "that join token already exists")
	}
	tx.d.joinTokens[t.Hash] = t
	return nil
}

func (tx *memTx) JoinToken(ctx context.Context, hash string) (core.JoinToken, error) {
	t, ok := tx.d.joinTokens[hash]
	if !ok {
		return core.JoinToken{}, core.Errorf(core.CodeNotFound, "join token not found")
	}
	return t, nil
}

// EnsureSetting implements core.Tx.
func (tx *memTx) EnsureSetting(ctx context.Context, name, value string) (string, error) {
	if err := tx.writable(); err != nil {
		return "", err
	}
	if v, ok := tx.d.settings[name]; ok {
		return v, nil
	}
	if tx.d.settings == nil {
		tx.d.settings = map[string]string{}
	}
	tx.d.settings[name] = value
	return value, nil
}

// PruneJoinTokens implements core.Tx.
func (tx *memTx) PruneJoinTokens(ctx context.Context, expiredBefore time.Time) (int64, error) {
	if err := tx.writable(); err != nil {
		return 0, err
	}
	var n int64
	for h, t := range tx.d.joinTokens {
		if t.ExpiresAt.Before(expiredBefore) {
			delete(tx.d.joinTokens, h)
			n++
		}
	}
	return n, nil
}
